"""The local process pool: ``workers`` "spawn" processes, each running :func:`_worker_loop` with one warm
suite and agent, fed one task at a time over its own pipe.

Why not ``concurrent.futures.ProcessPoolExecutor``: a function submitted to it can reach state set up by
its initializer only through a module global of the worker process. Here the worker's suite and agent are
local variables of its own loop, and the parent knows which task each worker holds, so a dead worker's one
task is re-run on a fresh worker while the others keep playing.
"""
from __future__ import annotations

import atexit
import logging
import multiprocessing as mp
import multiprocessing.util  # noqa: F401 - its atexit hook is registered first, so ours (close) runs before it
import os
import pickle
import signal
import traceback
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Any

from dreamer_gym.agents import AgentConfig, DownstreamAgent, EpisodeResult, make_agent
from dreamer_gym.errors import ConfigError, SuiteError
from dreamer_gym.evaluation.episodes import EvalTask
from dreamer_gym.evaluation.executors import Executor, OnResult
from dreamer_gym.evaluation.play import Simulator, play_guarded
from dreamer_gym.interrupts import started_ignoring_sigint
from dreamer_gym.suites import SuiteSpec, register_suite

logger = logging.getLogger(__name__)
_WARM = "warm"  # request: start the simulator; reply: the worker's pid
_STOP_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class _WorkerFailed:
    """A worker's reply when it could not set up or serve a request (not an episode failure)."""

    message: str


def worker_payload(spec: SuiteSpec, suite_kwargs: Mapping[str, Any] | None, agent_config: AgentConfig | None) -> bytes:
    """What a worker anywhere (a local process, a Ray actor) is built from: the spec, the suite's kwargs and
    the agent config, pickled here so that a spec that cannot travel fails at once, naming the fix."""
    try:
        return pickle.dumps((spec, dict(suite_kwargs or {}), agent_config or AgentConfig()))
    except (pickle.PicklingError, TypeError, AttributeError) as exc:
        raise ConfigError(f"worker processes receive the suite spec, its kwargs and the agent config pickled, "
                          f"and pickling them raised {type(exc).__name__}: {exc}; use module-level functions "
                          "and classes in the spec (no lambdas), or executor='inprocess'") from exc


def _exit_on_sigterm(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)  # unwinds the loop, so its `finally` closes the simulator


def _worker_loop(payload: bytes, conn: Connection) -> None:
    """A worker: build the suite and agent from ``payload`` (pickled spec, suite kwargs, agent config),
    then answer requests until told to stop (``None``) or the parent is gone."""
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    simulator: Simulator | None = None
    try:
        try:
            spec, suite_kwargs, agent_config = pickle.loads(payload)
            register_suite(spec, replace=True)  # the agent looks its suite up by name
            agent = make_agent(agent_config)
            simulator = Simulator(spec, suite_kwargs)
        except Exception as exc:  # noqa: BLE001 - reported to the parent, which raises it
            conn.send(_WorkerFailed(f"setting up the suite and agent raised {type(exc).__name__}: {exc}; a suite "
                                    "spec's pieces must be importable in a fresh process (not defined in __main__)"))
            return
        while True:
            try:
                request = conn.recv()
            except EOFError:
                return  # the parent died
            if request is None:
                return
            try:
                if request == _WARM:
                    simulator.warm()
                    conn.send(os.getpid())
                else:
                    conn.send(play_guarded(simulator, agent, request.task, request.entries, request.seed))
            except Exception:  # noqa: BLE001 - play_guarded records episode failures; this is anything else
                conn.send(_WorkerFailed(traceback.format_exc(limit=8)))
    finally:
        if simulator is not None:
            simulator.close()
        conn.close()


@dataclass
class _Worker:
    process: BaseProcess
    conn: Connection
    job: int | None = None  # index of the request it is serving


class LocalProcessExecutor:
    """``workers`` local worker processes, started on first use. A worker that dies (its simulator with it)
    is replaced and its task re-run, at most ``max_restarts`` times per call; then :class:`SuiteError`."""

    def __init__(self, spec: SuiteSpec, suite_kwargs: Mapping[str, Any] | None = None,
                 agent_config: AgentConfig | None = None, *, workers: int = 1, max_restarts: int = 3) -> None:
        if workers < 1:
            raise ValueError(f"Expected `workers` to be >= 1, got {workers}")
        self.spec, self.workers, self.max_restarts = spec, workers, max_restarts
        self._payload = worker_payload(spec, suite_kwargs, agent_config)
        self._context = mp.get_context("spawn")
        self._pool: list[_Worker] = []
        self.restarts = 0

    # --- the protocol ----------------------------------------------------------------------------------------
    def run(self, tasks: Sequence[EvalTask], on_result: OnResult | None = None) -> list[EpisodeResult]:
        def reply(i: int, result: Any) -> None:
            if on_result is not None:
                on_result(tasks[i], result)

        return self._serve(list(tasks), reply)

    def warm_up(self) -> None:
        """Every worker starts its simulator: one request each (a busy worker takes no second one)."""
        self._serve([_WARM] * self.workers)

    def worker_pids(self) -> list[int]:
        return [w.process.pid for w in self._pool if w.process.pid is not None and w.process.is_alive()]

    def close(self) -> None:
        """Ask every worker to stop (each closes its simulator), then make sure it has."""
        pool, self._pool = self._pool, []
        for w in pool:
            try:
                w.conn.send(None)
            except OSError:
                pass  # already dead
        for w in pool:
            self._stop(w, _STOP_TIMEOUT_S)
        atexit.unregister(self.close)

    # --- the parent's loop -------------------------------------------------------------------------------------
    def _serve(self, requests: list[Any], on_reply: Callable[[int, Any], None] | None = None) -> list[Any]:
        """Send each request to an idle worker, one at a time per worker; replies in request order."""
        replies: list[Any] = [None] * len(requests)
        todo, left, restarts = deque(range(len(requests))), len(requests), 0
        try:
            while left:
                self._fill_pool()
                for w in self._pool:
                    if w.job is None and todo:
                        w.job = todo.popleft()
                        try:
                            w.conn.send(requests[w.job])
                        except OSError:
                            pass  # a dead worker: its sentinel says so below
                busy = [w for w in self._pool if w.job is not None]
                ready = set(wait([w.conn for w in busy] + [w.process.sentinel for w in busy]))
                for w in busy:
                    if w.conn not in ready and w.process.sentinel not in ready:
                        continue
                    try:
                        reply = w.conn.recv()
                    except (EOFError, OSError):  # died with the request: re-run it on a fresh worker
                        todo.appendleft(w.job)  # type: ignore[arg-type]
                        restarts += 1
                        self._replace(w, restarts)
                        continue
                    if isinstance(reply, _WorkerFailed):
                        raise SuiteError(f"evaluation worker {w.process.pid} ({self.spec.name}): {reply.message}")
                    i, w.job = w.job, None
                    replies[i] = reply  # type: ignore[index]
                    left -= 1
                    if on_reply is not None:
                        on_reply(i, reply)  # type: ignore[arg-type]
        except BaseException:
            # stop the workers still playing, so no stale reply meets the next call
            for w in [w for w in self._pool if w.job is not None]:
                self._pool.remove(w)
                self._stop(w, 0.0)
            raise
        return replies

    def _fill_pool(self) -> None:
        if not self._pool:
            atexit.register(self.close)  # a pool never closed is still stopped at exit, before multiprocessing's join
        while len(self._pool) < self.workers:
            self._pool.append(self._start())

    def _start(self) -> _Worker:
        parent, child = self._context.Pipe()
        process = self._context.Process(target=_worker_loop, args=(self._payload, child),
                                        name=f"dreamer-eval-{self.spec.name}")
        with started_ignoring_sigint():  # Ctrl-C is the parent's: it stops its busy workers (interrupts.py)
            process.start()
        child.close()
        return _Worker(process, parent)

    def _replace(self, worker: _Worker, restarts: int) -> None:
        self.restarts += 1
        logger.warning("an evaluation worker died; starting a fresh one (%d/%d)", restarts, self.max_restarts)
        self._pool.remove(worker)
        self._stop(worker, 0.0)
        if restarts > self.max_restarts:
            raise SuiteError(f"evaluation workers of suite {self.spec.name!r} died {restarts} times in one call "
                             f"(max_restarts={self.max_restarts}); see the log for the simulator's errors")

    @staticmethod
    def _stop(worker: _Worker, timeout: float) -> None:
        """Wait up to ``timeout`` s for ``worker`` to exit, then terminate it (its simulator closes on SIGTERM),
        then kill it."""
        process = worker.process
        process.join(timeout)
        if process.is_alive():
            process.terminate()
            process.join(10)
        if process.is_alive():
            process.kill()
            process.join(5)
        worker.conn.close()


def local_processes(spec: SuiteSpec, suite_kwargs: Mapping[str, Any], agent_config: AgentConfig, *,
                    workers: int, max_restarts: int, agent: DownstreamAgent | None, **options: Any) -> Executor:
    """The ``process`` executor's builder (:data:`~dreamer_gym.evaluation.executors.EXECUTORS`)."""
    return LocalProcessExecutor(spec, suite_kwargs, agent_config, workers=workers, max_restarts=max_restarts)
