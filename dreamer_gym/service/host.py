"""One reward service shared by clients in other processes: the sub-envs of an async vector env.

:class:`ServiceHost` lives in the process that owns the service (the vector env's). It listens on a local
address (a Unix socket in a fresh temporary directory, or ``("127.0.0.1", 0)``) with a random ``authkey``;
each client connection gets a thread. Commits from all clients go to one queue, and a batcher thread
scores whatever arrived within ``batch_window_s`` of the first with ONE ``commit_many`` (one evaluation run,
shared before-scores); every other call is forwarded under the same lock (a service is not thread-safe).
The host is sealed like the service process: it reads requests with
:func:`~dreamer_gym.service.messages.read_request` and answers only
:data:`~dreamer_gym.service.messages.SERVICE_OPERATIONS` (commits still need their tickets' tokens). A request
whose length is over :func:`~dreamer_gym.service.messages.request_cap` is refused from its header: that client
gets the error and its connection is closed; the host goes on serving the others.

:class:`RemoteRewardService` is the client: a :class:`~dreamer_gym.service.services.RewardService` that
pickles to ``(address, authkey, config)`` and connects on first use, so an env built in another process
reaches the host by its address. Starting and stopping: the host's owner (the vector env) starts it
before the sub-envs and closes it after them; a client's ``close`` only drops its connection.
"""
from __future__ import annotations

import logging
import queue
import secrets
import threading
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Client, Connection, Listener
from typing import Any

from dreamer_gym.contract.config import ConsolidationConfig
from dreamer_gym.errors import RewardServiceError
from dreamer_gym.service.messages import (
    CommitRequest,
    CommitResult,
    PublicPool,
    RequestTooLarge,
    encode,
    read_request,
    receive,
    request_cap,
)
from dreamer_gym.service.services import ForwardingService, RewardService

logger = logging.getLogger(__name__)
_COMMIT_OPS = ("commit", "commit_many")


@dataclass
class _Batched:
    requests: list[CommitRequest]
    done: threading.Event = field(default_factory=threading.Event)
    results: list[CommitResult] | None = None
    error: BaseException | None = None


class ServiceHost:
    """Serve ``service`` to clients at :attr:`address`. ``batch_window_s``: how long the batcher waits after
    a first commit for others (the sub-envs of one vector step commit within milliseconds of each other)."""

    def __init__(self, service: RewardService, *, batch_window_s: float = 0.05, family: str = "AF_UNIX",
                 start: bool = True) -> None:
        self.service = service
        self.batch_window_s = batch_window_s
        self.request_cap = request_cap(service.config)
        self.authkey = secrets.token_bytes(32)
        self._listener = Listener(address=("127.0.0.1", 0) if family == "AF_INET" else None, family=family,
                                  authkey=self.authkey)
        self.address = self._listener.address
        self.batch_sizes: list[int] = []  # commits per commit_many call (what batching achieved)
        self._lock = threading.Lock()
        self._queue: queue.Queue[_Batched | None] = queue.Queue()
        self._closed = False
        self._connections: list[Connection] = []
        self._threads = [threading.Thread(target=self._accept, name="reward-host-accept", daemon=True),
                         threading.Thread(target=self._batch, name="reward-host-batcher", daemon=True)]
        if start:
            self.start()

    def start(self) -> None:
        """Start serving. The address exists from construction, so an owner that forks its clients first
        (an async vector env) starts the threads after the fork: no thread is copied into a child."""
        for thread in self._threads:
            if not thread.is_alive():
                thread.start()

    def client(self) -> RemoteRewardService:
        """A client for this host (picklable: build envs in other processes with it)."""
        return RemoteRewardService(self.address, self.authkey, self.service.config, self.service.withhold)

    # --- threads ----------------------------------------------------------------------------------------------
    def _accept(self) -> None:
        while not self._closed:
            try:
                conn = self._listener.accept()
            except (OSError, EOFError):
                return  # closed
            except Exception:  # noqa: BLE001 - a client with the wrong key: refuse it, keep serving
                logger.warning("a client failed the reward host's authentication")
                continue
            self._connections.append(conn)
            threading.Thread(target=self._serve, args=(conn,), name="reward-host-client", daemon=True).start()

    def _serve(self, conn: Connection) -> None:
        while True:
            try:
                data = receive(conn, self.request_cap)
            except RequestTooLarge as exc:  # the rest of it is unread: this connection is done
                try:
                    conn.send(("error", exc))
                except OSError:
                    pass  # the client is gone already
                conn.close()
                return
            except (EOFError, OSError):
                return
            try:
                request = read_request(data)
                if request is None:
                    return
                op, args = request
                if op in _COMMIT_OPS:
                    job = _Batched(_batch_of(op, args))
                    self._queue.put(job)
                    job.done.wait()
                    if job.error is not None:
                        raise job.error
                    value: Any = job.results[0] if op == "commit" else job.results  # type: ignore[index]
                else:  # read_request lets only SERVICE_OPERATIONS through
                    with self._lock:
                        value = getattr(self.service, op)(*args)
                conn.send(("ok", value))
            except Exception as exc:  # noqa: BLE001 - the client raises it
                try:
                    conn.send(("error", exc))
                except OSError:
                    return

    def _batch(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            jobs, deadline = [first], time.monotonic() + self.batch_window_s
            while (left := deadline - time.monotonic()) > 0:
                try:
                    job = self._queue.get(timeout=left)
                except queue.Empty:
                    break
                if job is None:
                    self._queue.put(None)  # stop after this batch
                    break
                jobs.append(job)
            requests = [r for job in jobs for r in job.requests]
            try:
                with self._lock:
                    results = self.service.commit_many(requests)
                self.batch_sizes.append(len(requests))
                i = 0
                for job in jobs:
                    job.results, i = results[i:i + len(job.requests)], i + len(job.requests)
            except Exception as exc:  # noqa: BLE001 - every waiting client gets it
                for job in jobs:
                    job.error = exc
            for job in jobs:
                job.done.set()

    def close(self) -> None:
        """Stop serving (the service itself belongs to the caller, who closes it)."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(None)
        self._listener.close()
        for conn in self._connections:
            conn.close()


def _batch_of(op: str, args: tuple[Any, ...]) -> list[CommitRequest]:
    """The requests of a ``commit`` or ``commit_many`` (checked: they are batched with other clients')."""
    if len(args) == 1:
        requests = [args[0]] if op == "commit" else args[0]
        if isinstance(requests, (list, tuple)) and all(isinstance(r, CommitRequest) for r in requests):
            return list(requests)
    raise RewardServiceError(f"{op}: expected {'one CommitRequest' if op == 'commit' else 'a list of CommitRequest'}")


class RemoteRewardService(ForwardingService):
    """A :class:`RewardService` that forwards every call to a :class:`ServiceHost` at ``address``."""

    def __init__(self, address: Any, authkey: bytes, config: ConsolidationConfig, withhold: bool = False) -> None:
        self.address, self.config, self.withhold = address, config, withhold
        self._authkey = authkey
        self._conn: Connection | None = None
        self._public: PublicPool | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_conn": None, "_public": None}

    def _call(self, op: str, *args: Any) -> Any:
        payload = encode(op, args, self.request_cap)
        if self._conn is None:
            try:
                self._conn = Client(self.address, authkey=self._authkey)
            except OSError as exc:
                raise RewardServiceError(f"cannot reach the reward host at {self.address!r} ({exc}); it is started "
                                         "by the vector env that owns it and stops when that env closes") from exc
        self._conn.send_bytes(payload)
        status, value = self._conn.recv()
        if status == "error":
            raise value
        return value

    def close(self) -> None:
        """Drop this client's connection; the host and its service stay up (their owner closes them)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None
