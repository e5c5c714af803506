"""Where the referee runs: the :class:`RewardService` protocol, its two implementations and
:func:`make_reward_service`, which builds one by name (``ConsolidationConfig.service``) from the registry
:data:`SERVICES` (:mod:`dreamer_gym.contract.registry`; add yours with :func:`dreamer_gym.service.register_service`
or a ``dreamer_gym.services`` entry point).

* ``"process"`` (the default): :class:`ProcessRewardService` hosts the referee in its own process (a fresh
  interpreter started with ``subprocess``, so it also starts inside the daemonic workers of Gymnasium's
  ``AsyncVectorEnv``, which ``multiprocessing`` children cannot).
  The policy's process then holds the banks and TRAIN trajectories only: no evaluation task text, no
  gold path, no evaluator to preview a candidate bank with. The process is sealed: its loop (:func:`serve`)
  answers only :data:`~dreamer_gym.service.messages.SERVICE_OPERATIONS` (and the pid diagnostics), reads
  requests with an unpickler that builds nothing but the request classes, and scores a commit only with a
  live ticket (:mod:`~dreamer_gym.service.tickets`). A dead service (OOM killer, say) is restarted with
  its live tickets and the request replayed, except in a track, where results would be lost: there it raises.
* ``"inprocess"``: :class:`InProcessRewardService`, the same referee in this process: for debugging,
  profiling, training and the toy suites of tests. It gives the same rewards; it isolates nothing.

Both are context managers; ``close()`` stops the referee's simulators (and the service process).
"""
from __future__ import annotations

import atexit
import logging
import os
import pickle
import signal
import subprocess
import sys
import traceback
from collections import OrderedDict
from multiprocessing.connection import Connection
from typing import Any, Protocol, runtime_checkable

from dreamer_gym.contract.config import ConsolidationConfig
from dreamer_gym.contract.registry import SERVICES
from dreamer_gym.errors import ConfigError, RewardServiceError
from dreamer_gym.interrupts import started_ignoring_sigint
from dreamer_gym.service.messages import (
    PROCESS_DIAGNOSTICS,
    SERVICE_OPERATIONS,
    CommitRequest,
    CommitResult,
    EpisodeTicket,
    PublicPool,
    RequestTooLarge,
    encode,
    read_request,
    receive,
    request_cap,
    split_to_fit,
)
from dreamer_gym.service.pipes import Duplex as _Duplex
from dreamer_gym.service.pipes import stop as _stop
from dreamer_gym.service.referee import Referee
from dreamer_gym.service.tickets import MAX_LIVE_TICKETS
from dreamer_gym.suites import SuiteSpec, get_suite_spec, register_suite

logger = logging.getLogger(__name__)
_PROCESS_OPS = (*SERVICE_OPERATIONS, *PROCESS_DIAGNOSTICS)
_COMMITS = ("commit", "commit_many", "commit_joint")
_STOP_TIMEOUT_S = 30.0


@runtime_checkable
class RewardService(Protocol):
    """Scores commits for one reward definition. ``withhold``: a track service, which pays nothing per
    commit and hands its ledger out once through :meth:`finish`."""

    config: ConsolidationConfig
    withhold: bool

    def public_pool(self) -> PublicPool:
        """The banks and the TRAIN trajectories (what the policy's process may hold)."""
        ...

    def open(self, bank_index: int, family: str, seed: int) -> EpisodeTicket:
        """Start an episode (the env's reset): a ticket whose token its one commit carries; the evaluation
        draw is derived in the service from ``seed``. A track opens each region once."""
        ...

    def commit(self, request: CommitRequest) -> CommitResult:
        """Score one commit (its token live, then spent)."""
        ...

    def commit_many(self, requests: list[CommitRequest]) -> list[CommitResult]:
        """Score several commits in one evaluation run (a GRPO batch); the same results as one by one."""
        ...

    def commit_joint(self, requests: list[CommitRequest]) -> list[CommitResult]:
        """Several agents' commits on disjoint regions of one bank, scored as one bank (the PettingZoo env)."""
        ...

    def finish(self) -> list[dict[str, Any]]:
        """A track's ledger (one record per commit), once; no commits afterwards."""
        ...

    def stats(self) -> dict[str, int]:
        """Evaluation-cache hits and misses, worker restarts and failures."""
        ...

    def close(self) -> None:
        """Stop the referee's simulators (and its process)."""
        ...


class _ServiceBase:
    config: ConsolidationConfig
    withhold: bool

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError


class InProcessRewardService(_ServiceBase):
    """The referee in this process (isolates nothing: a policy in this process can read the referee, so it
    is for debugging and training; same rewards as the process service)."""

    def __init__(self, config: ConsolidationConfig, *, withhold: bool = False, spec: SuiteSpec | None = None,
                 episode_secret: str | bytes | None = None) -> None:
        if spec is not None:
            register_suite(spec)
        self.config, self.withhold = config, withhold
        self.referee = Referee(config, withhold, episode_secret)
        self.restarts = 0

    def public_pool(self) -> PublicPool:
        return self.referee.public_pool()

    def open(self, bank_index: int, family: str, seed: int) -> EpisodeTicket:
        return self.referee.open(bank_index, family, seed)

    def commit(self, request: CommitRequest) -> CommitResult:
        return self.referee.commit(request)

    def commit_many(self, requests: list[CommitRequest]) -> list[CommitResult]:
        return self.referee.commit_many(list(requests))

    def commit_joint(self, requests: list[CommitRequest]) -> list[CommitResult]:
        return self.referee.commit_joint(list(requests))

    def finish(self) -> list[dict[str, Any]]:
        return self.referee.finish()

    def stats(self) -> dict[str, int]:
        return self.referee.stats()

    def worker_pids(self) -> list[int]:
        return self.referee.worker_pids()

    @property
    def pid(self) -> int:
        return os.getpid()

    def close(self) -> None:
        self.referee.close()


# --- the service process ---------------------------------------------------------------------------------------
class _Failed:
    """A request raised in the service; carries the exception (or its text, if it does not pickle)."""

    def __init__(self, exc: BaseException) -> None:
        try:
            pickle.dumps(exc)
            self.exc: BaseException = exc
        except Exception:  # noqa: BLE001 - an exception that does not pickle travels as text
            self.exc = RewardServiceError(f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=8)}")


def _exit_on_sigterm(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)  # unwinds the loop, so its `finally` closes the simulators


def serve(conn: Connection) -> None:
    """The service process: read the pickled (config, spec, withhold, episode secret, live tickets) from its
    starter, build the referee, then answer ``(op, args)`` requests until ``None`` or EOF (the client is gone).

    Sealed: a request is read by :func:`~dreamer_gym.service.messages.read_request` (plain data and the
    request classes only), and only :data:`_PROCESS_OPS` are answered; anything else is a
    :class:`RewardServiceError` sent back, and the loop goes on. A request whose length is over
    :func:`~dreamer_gym.service.messages.request_cap` is refused from its length header alone: the error is sent
    back and the process exits (its one connection can no longer be read; a client that pays per commit starts
    a fresh service, a track's run is void)."""
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    referee: Referee | None = None
    try:
        try:
            config, spec, withhold, secret, tickets = pickle.loads(conn.recv_bytes())
            register_suite(spec, replace=True)
            referee = Referee(config, withhold, secret)
            if tickets:
                referee.reopen(tickets)
        except Exception as exc:  # noqa: BLE001 - the client raises it
            conn.send(_Failed(exc))
            return
        conn.send(os.getpid())
        cap = request_cap(config)
        while True:
            try:
                data = receive(conn, cap)
            except RequestTooLarge as exc:
                conn.send(_Failed(exc))
                return
            except (EOFError, OSError):  # the client is gone, or died mid-request
                return
            try:
                request = read_request(data, _PROCESS_OPS)
                if request is None:
                    return
                conn.send(_answer(referee, *request))
            except Exception as exc:  # noqa: BLE001 - reported to the client, which raises it
                conn.send(_Failed(exc))
    except (BrokenPipeError, EOFError):  # the client is gone (interrupted, or closed mid-request): nobody to answer
        return
    finally:
        if referee is not None:
            referee.close()
        conn.close()


def _answer(referee: Referee, op: str, args: tuple[Any, ...]) -> Any:
    """One checked operation (``op`` is in :data:`_PROCESS_OPS`)."""
    if op == "pid":
        return os.getpid()
    try:
        return getattr(referee, op)(*args)
    except TypeError as exc:  # wrong arity: the client's mistake, named
        raise RewardServiceError(f"{op}: {exc}") from None


class ForwardingService(_ServiceBase):
    """A service whose every request is ``self._call(op, *args)`` to a referee elsewhere (its own process, or a
    :class:`~dreamer_gym.service.host.ServiceHost`); the public pool is fetched once. Requests are checked against
    the far side's byte cap before they are sent (:attr:`request_cap`)."""

    _public: PublicPool | None

    @property
    def request_cap(self) -> int:
        """The far side's byte cap on one request (:func:`~dreamer_gym.service.messages.request_cap`)."""
        return request_cap(self.config)

    def _call(self, op: str, *args: Any) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError

    def public_pool(self) -> PublicPool:
        if self._public is None:
            self._public = self._call("public_pool")
        return self._public

    def open(self, bank_index: int, family: str, seed: int) -> EpisodeTicket:
        return self._call("open", bank_index, family, seed)

    def commit(self, request: CommitRequest) -> CommitResult:
        return self._call("commit", request)

    def commit_many(self, requests: list[CommitRequest]) -> list[CommitResult]:
        """One request, or consecutive ones where the batch is over the byte cap (the same results)."""
        return [r for batch in split_to_fit(list(requests), self.request_cap) for r in self._call("commit_many", batch)]

    def commit_joint(self, requests: list[CommitRequest]) -> list[CommitResult]:
        return self._call("commit_joint", list(requests))

    def finish(self) -> list[dict[str, Any]]:
        return self._call("finish")

    def stats(self) -> dict[str, int]:
        return self._call("stats")


class ProcessRewardService(ForwardingService):
    """The referee in its own spawned process, started on first use. A service that dies is restarted with
    the tickets this client opened and has not committed, and the request replayed (requests are pure
    functions of the request, the ticket and the config), at most ``max_restarts`` times; a track service
    (``withhold``) raises instead, since its ledger died with it, and starts once only (its episode secret
    is dropped here once the process holds it)."""

    def __init__(self, config: ConsolidationConfig, *, withhold: bool = False, spec: SuiteSpec | None = None,
                 max_restarts: int = 3, episode_secret: str | bytes | None = None) -> None:
        self.config, self.withhold, self.max_restarts = config, withhold, max_restarts
        self._spec = spec or get_suite_spec(config.suite)
        self._secret = episode_secret
        try:
            pickle.dumps((config, self._spec))
        except (pickle.PicklingError, TypeError, AttributeError) as exc:
            raise ConfigError(f"the reward service receives the config and the suite spec pickled, and pickling "
                              f"raised {type(exc).__name__}: {exc}; use module-level pieces in the spec, or "
                              "service='inprocess'") from exc
        self._process: subprocess.Popen[bytes] | None = None
        self._conn: _Duplex | None = None
        self._public: PublicPool | None = None
        self._started = False
        self._busy = False  # a request sent whose reply is not read yet
        self._tickets: OrderedDict[str, tuple[str, int, str, int]] = OrderedDict()  # live ones, for a restart
        self.restarts = 0

    # --- requests ------------------------------------------------------------------------------------------------
    def worker_pids(self) -> list[int]:
        return self._call("worker_pids")

    @property
    def pid(self) -> int:
        """The service process's pid (it starts the process if needed)."""
        return self._call("pid")

    def close(self) -> None:
        """Stop the process: asked to, when it is idle; at once (SIGTERM: it still closes its simulators) when a
        request's reply was never read (an interrupt unwinding through here: its answer has no reader)."""
        process, conn, self._process, self._conn = self._process, self._conn, None, None
        busy, self._busy = self._busy, False
        if process is None or conn is None:
            return
        try:
            conn.send(None)
        except OSError:
            pass  # already dead
        _stop(process, conn, 0.0 if busy else _STOP_TIMEOUT_S)
        atexit.unregister(self.close)

    # --- the process ---------------------------------------------------------------------------------------------
    def _call(self, op: str, *args: Any) -> Any:
        payload = encode(op, args, self.request_cap)
        while True:
            conn = self._ensure()
            self._busy = True  # until the reply is read: a close() meanwhile (an interrupt) stops the process at once
            try:
                conn.send_bytes(payload)
                reply = conn.recv()
            except (EOFError, OSError) as exc:
                self._died(exc)
                continue
            self._busy = False
            self._remember(op, args, reply)
            if isinstance(reply, _Failed):
                raise reply.exc
            return reply

    def _remember(self, op: str, args: tuple[Any, ...], reply: Any) -> None:
        """Keep the live tickets a restarted process must re-open (a service that pays per commit only)."""
        if self.withhold:
            return
        if op == "open" and isinstance(reply, EpisodeTicket):
            self._tickets[reply.token] = (reply.token, reply.bank_index, reply.family, int(args[2]))
            while len(self._tickets) > MAX_LIVE_TICKETS:
                self._tickets.popitem(last=False)
        elif op in _COMMITS:
            for request in (args[0] if op != "commit" else [args[0]]):
                self._tickets.pop(getattr(request, "token", None), None)  # type: ignore[arg-type]

    def _ensure(self) -> _Duplex:
        if self._conn is not None:
            return self._conn
        if self.withhold and self._started:
            raise RewardServiceError("a track's reward service was closed or died; its ledger and tickets are gone, "
                                     "so the run is void: run the track again")
        payload = pickle.dumps((self.config, self._spec, self.withhold, self._secret, list(self._tickets.values())))
        to_child_r, to_child_w = os.pipe()
        to_parent_r, to_parent_w = os.pipe()
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}  # as "spawn" would
        with started_ignoring_sigint():  # Ctrl-C is this process's to handle; it stops the service (interrupts.py)
            process = subprocess.Popen(
                [sys.executable, "-m", "dreamer_gym.service.service_main", str(to_child_r), str(to_parent_w)],
                pass_fds=(to_child_r, to_parent_w), env=env, stdin=subprocess.DEVNULL,
            )
        os.close(to_child_r)
        os.close(to_parent_w)
        conn = _Duplex(to_parent_r, to_child_w)
        try:
            conn.send_bytes(payload)
            hello = conn.recv()
        except (EOFError, OSError) as exc:
            _stop(process, conn, 0.0)
            raise RewardServiceError(f"the reward service process exited while starting (code {process.poll()})") from exc
        except BaseException:  # interrupted while it starts: it is nobody's to close yet, so stop it here
            _stop(process, conn, 0.0)
            raise
        if isinstance(hello, _Failed):
            _stop(process, conn, _STOP_TIMEOUT_S)
            raise hello.exc
        if self.restarts == 0:
            atexit.register(self.close)  # a service never closed is still stopped at exit
        self._process, self._conn, self._started = process, conn, True
        if self.withhold:
            self._secret = None  # the process holds it; a track's service never restarts
        return conn

    def _died(self, exc: BaseException) -> None:
        process, conn, self._process, self._conn = self._process, self._conn, None, None
        if process is not None and conn is not None:
            _stop(process, conn, 0.0)
        if self.withhold:
            raise RewardServiceError("the reward service of a track died; its ledger is lost, so the run is void: "
                                     "run the track again") from exc
        self.restarts += 1
        logger.warning("the reward service died (%s); starting a fresh one (%d/%d)", exc, self.restarts,
                       self.max_restarts)
        if self.restarts > self.max_restarts:
            raise RewardServiceError(f"the reward service died {self.restarts} times (max_restarts="
                                     f"{self.max_restarts}); see the log for its errors") from exc


# --- the registry (dreamer_gym.contract.registry: the config checks its `service` against it) -----------------
def make_reward_service(name: str, config: ConsolidationConfig, *, withhold: bool = False,
                        spec: SuiteSpec | None = None, episode_secret: str | bytes | None = None) -> RewardService:
    """Build the reward service ``name`` (a name in :data:`SERVICES`: built-in, registered or an entry point)
    for ``config``. ``episode_secret``: derive the evaluation draws from the reset seeds under it (a
    verification run); passed only when given, so a registered service without the argument still builds."""
    if name not in SERVICES:
        raise ConfigError(f"Expected `service` to be one of {SERVICES.names()}, got {name!r}; register your own "
                          f"with {SERVICES.how_to()}")
    secret = {} if episode_secret is None else {"episode_secret": episode_secret}
    return SERVICES.get(name)(config, withhold=withhold, spec=spec, **secret)
