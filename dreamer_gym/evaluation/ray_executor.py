"""The Ray executor: ``actors`` Ray actors, each holding one warm simulator and agent, fed batches of tasks.

Why actors and not Ray tasks: a simulator (a JVM, a browser) costs seconds to start and must stay warm across
episodes, which is what an actor is. Why batches: one remote call per episode costs a round trip that a
latency-bound simulator cannot hide; each actor gets up to :data:`IN_FLIGHT` batches at a time, so it never
waits for the driver. Results come back by task index, so they are identical to the in-process executor's,
in order, whatever actor played them.

A dead actor (its process or node gone) is replaced and every batch it held is re-queued, at most
``max_restarts`` times per call; a batch is accepted once, from the actor that finished it, so an episode is
neither lost nor counted twice. Ray's own actor restarts and task retries are off: this class does the
bookkeeping, as the local process pool does.

Where Ray runs: ``address`` (``ray://`` or ``HOST:PORT`` of a running cluster; every node needs
``dreamer-gym`` and the suite's simulator installed) or, when None and Ray is not initialised yet, a local
instance this executor starts (localhost only). docs/env.md, "Executors".
"""
from __future__ import annotations

import logging
import math
import os
import pickle
import socket
import sys
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dreamer_gym.agents import AgentConfig, DownstreamAgent, EpisodeResult, make_agent
from dreamer_gym.errors import ConfigError, SuiteError
from dreamer_gym.evaluation.episodes import EvalTask
from dreamer_gym.evaluation.executors import Executor, OnResult
from dreamer_gym.evaluation.play import Simulator, play_guarded
from dreamer_gym.evaluation.process_executor import worker_payload
from dreamer_gym.suites import SuiteSpec, register_suite

logger = logging.getLogger(__name__)
IN_FLIGHT = 2  # batches queued per actor
LOCAL_OBJECT_STORE_BYTES = 256 * 1024**2  # episodes are small; Ray's default (30% of RAM) is not needed


def _import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise ConfigError("executor='ray' needs Ray: pip install 'dreamer-gym[ray]' (ray==2.60.0), "
                          "or use executor='process'") from exc
    return ray


class EpisodeActor:
    """The body of one Ray actor (made remote by :class:`RayExecutor`): one simulator, one agent."""

    def __init__(self, payload: bytes) -> None:
        self.failure: str | None = None
        try:
            spec, suite_kwargs, agent_config = pickle.loads(payload)
            register_suite(spec, replace=True)  # the agent looks its suite up by name
            self.agent = make_agent(agent_config)
            self.simulator = Simulator(spec, suite_kwargs)
        except Exception as exc:  # noqa: BLE001 - reported to the driver, which raises it
            self.failure = (f"setting up the suite and agent raised {type(exc).__name__}: {exc}; the suite spec's "
                            "pieces must be importable on every Ray node (not defined in __main__)")

    def where(self) -> tuple[str, int] | str:
        """``(hostname, pid)``, or the set-up failure."""
        return self.failure or (socket.gethostname(), os.getpid())

    def warm(self) -> tuple[str, int] | str:
        if self.failure is None:
            self.simulator.warm()
        return self.where()

    def play(self, tasks: list[EvalTask]) -> list[EpisodeResult] | str:
        if self.failure is not None:
            return self.failure
        return [play_guarded(self.simulator, self.agent, t.task, t.entries, t.seed) for t in tasks]

    def close(self) -> None:
        if self.failure is None:
            self.simulator.close()


@dataclass(eq=False)  # identity: two actors are never the same one
class _Actor:
    handle: Any
    host: str
    pid: int
    batches: list[Any] = field(default_factory=list)  # object refs of the batches it holds


def _attach_local_auth_token() -> None:
    """Send this machine's Ray token (``~/.ray/auth_token``) when connecting to a cluster by address, as ``ray start
    --head`` does when it starts one. Since Ray 2.59 a head started where that token exists requires it, while
    ``ray.init(address=...)`` leaves the client's auth mode unset and sends none (InvalidAuthToken), unless an
    earlier ``ray.init()`` in the process happened to turn token mode on. ``RAY_AUTH_MODE``, when set, wins."""
    try:
        from ray._private.authentication.authentication_token_setup import (
            maybe_enable_token_auth_if_token_available,
        )
    except ImportError:  # a Ray without token authentication
        return
    maybe_enable_token_auth_if_token_available(warn_if_disabled=False)


class RayExecutor:
    """See the module docstring. ``actors`` is the number of warm simulators; ``batch_size`` the episodes per
    remote call (None: about four batches per actor per call, at most 16 episodes each); ``cpus_per_actor``
    the CPUs Ray reserves for each (a latency-bound suite can share: 0.25 puts 8 actors on 2 cores). Actors that
    cannot be placed within ``start_timeout_s`` (the cluster is full) raise :class:`SuiteError` saying so."""

    def __init__(self, spec: SuiteSpec, suite_kwargs: Mapping[str, Any] | None = None,
                 agent_config: AgentConfig | None = None, *, actors: int = 1, address: str | None = None,
                 max_restarts: int = 3, batch_size: int | None = None, cpus_per_actor: float = 1.0,
                 start_timeout_s: float = 120.0) -> None:
        if actors < 1:
            raise ConfigError(f"Expected `workers` (Ray actors) to be >= 1, got {actors}")
        if batch_size is not None and batch_size < 1:
            raise ConfigError(f"Expected `batch_size` to be >= 1 or None, got {batch_size}")
        if cpus_per_actor < 0:
            raise ConfigError(f"Expected `cpus_per_actor` to be >= 0, got {cpus_per_actor}")
        self._ray = _import_ray()
        self.spec, self.actors, self.address = spec, actors, address
        self.max_restarts, self.batch_size, self.cpus_per_actor = max_restarts, batch_size, cpus_per_actor
        self.start_timeout_s = start_timeout_s
        self._payload = worker_payload(spec, suite_kwargs, agent_config)
        self._pool: list[_Actor] = []
        self.restarts = 0
        self.started_ray = False  # whether this executor started the local Ray instance

    # --- the protocol ------------------------------------------------------------------------------------------
    def run(self, tasks: Sequence[EvalTask], on_result: OnResult | None = None) -> list[EpisodeResult]:
        tasks = list(tasks)
        results: list[EpisodeResult | None] = [None] * len(tasks)
        if not tasks:
            return []
        size = self.batch_size or min(16, max(1, math.ceil(len(tasks) / (4 * self.actors))))
        todo = deque(range(start, min(start + size, len(tasks))) for start in range(0, len(tasks), size))
        owner: dict[Any, tuple[_Actor, range]] = {}  # batch ref -> (actor, task indices)
        restarts = 0
        try:
            self._fill_pool()
            while todo or owner:
                for actor in self._pool:
                    while todo and len(actor.batches) < IN_FLIGHT:
                        batch = todo.popleft()
                        ref = actor.handle.play.remote([tasks[i] for i in batch])
                        actor.batches.append(ref)
                        owner[ref] = (actor, batch)
                [ref], _ = self._ray.wait(list(owner), num_returns=1)
                actor, batch = owner.pop(ref)
                actor.batches.remove(ref)
                try:
                    played = self._ray.get(ref)
                except self._ray.exceptions.RayActorError:  # died: re-queue all it held, on a fresh actor
                    todo.appendleft(batch)
                    for other in list(actor.batches):
                        todo.appendleft(owner.pop(other)[1])
                    restarts += 1
                    self._replace(actor, restarts)
                    continue
                if isinstance(played, str):
                    raise SuiteError(f"Ray actor {actor.pid}@{actor.host} ({self.spec.name}): {played}")
                for i, result in zip(batch, played):
                    if results[i] is None:  # accepted once, from the batch that came back
                        results[i] = result
                        if on_result is not None:
                            on_result(tasks[i], result)
        except BaseException:
            # actors still playing this call's batches are dropped, so none delays the next call
            for actor in {id(a): a for a, _ in owner.values()}.values():
                self._drop(actor)
            raise
        return results  # type: ignore[return-value] - every slot is filled when nothing is left in flight

    def warm_up(self) -> None:
        self._fill_pool()
        for actor, where in zip(self._pool, self._ray.get([a.handle.warm.remote() for a in self._pool])):
            self._check(actor, where)

    def worker_pids(self) -> list[int]:
        """PIDs of the actors on this host (actors on other nodes are not local processes)."""
        here = socket.gethostname()
        return [a.pid for a in self._pool if a.host == here]

    def close(self) -> None:
        """Each actor closes its simulator, then is killed. A Ray instance this executor started stays up
        until the process exits (another executor may be using it); ``ray.shutdown()`` ends it earlier."""
        pool, self._pool = self._pool, []
        if not pool:
            return
        try:
            self._ray.get([a.handle.close.remote() for a in pool], timeout=30)
        except Exception:  # noqa: BLE001 - a dead or stuck actor is killed below all the same
            logger.warning("a Ray actor did not close its simulator in 30 s; killing it")
        for actor in pool:
            self._ray.kill(actor.handle)

    # --- actors ------------------------------------------------------------------------------------------------
    def _init_ray(self) -> None:
        ray = self._ray
        if ray.is_initialized():
            return
        if self.address:
            _attach_local_auth_token()
            ray.init(address=self.address, log_to_driver=False, logging_level=logging.WARNING)
            return
        # a new local instance ("local": never the last `ray start` cluster Ray would otherwise look for), with as
        # many logical CPUs as the actors reserve (at least the machine's), and this process's import path for the
        # actors (a suite registered from a test module or a notebook's folder)
        paths = [p for p in sys.path if p and os.path.isdir(p)]
        ray.init(address="local", num_cpus=max(os.cpu_count() or 1, math.ceil(self.actors * self.cpus_per_actor)),
                 include_dashboard=False, object_store_memory=LOCAL_OBJECT_STORE_BYTES, log_to_driver=False,
                 logging_level=logging.WARNING, job_config=ray.job_config.JobConfig(code_search_path=paths))
        self.started_ray = True

    def _fill_pool(self) -> None:
        if len(self._pool) >= self.actors:
            return
        self._init_ray()
        remote = self._ray.remote(EpisodeActor).options(num_cpus=self.cpus_per_actor, max_restarts=0,
                                                        max_task_retries=0)
        handles = [remote.remote(self._payload) for _ in range(self.actors - len(self._pool))]
        try:
            places = self._ray.get([h.where.remote() for h in handles], timeout=self.start_timeout_s)
        except self._ray.exceptions.GetTimeoutError:
            for handle in handles:
                self._ray.kill(handle)
            raise SuiteError(
                f"{len(handles)} Ray actors of {self.cpus_per_actor} CPU each did not start in {self.start_timeout_s} s; "
                f"the cluster has {self._ray.available_resources().get('CPU', 0)} CPUs free of "
                f"{self._ray.cluster_resources().get('CPU', 0)}: lower `cpus_per_actor` or `workers`, or add nodes"
            ) from None
        for handle, where in zip(handles, places):
            actor = _Actor(handle, "", 0)
            self._pool.append(actor)
            self._check(actor, where)

    def _check(self, actor: _Actor, where: tuple[str, int] | str) -> None:
        if isinstance(where, str):
            raise SuiteError(f"Ray actor ({self.spec.name}): {where}")
        actor.host, actor.pid = where

    def _replace(self, actor: _Actor, restarts: int) -> None:
        self.restarts += 1
        logger.warning("a Ray actor died; starting a fresh one (%d/%d)", restarts, self.max_restarts)
        self._drop(actor)
        if restarts > self.max_restarts:
            raise SuiteError(f"Ray actors of suite {self.spec.name!r} died {restarts} times in one call "
                             f"(max_restarts={self.max_restarts}); see the Ray logs for the simulator's errors")
        self._fill_pool()

    def _drop(self, actor: _Actor) -> None:
        if actor in self._pool:
            self._pool.remove(actor)
        try:
            self._ray.kill(actor.handle)
        except Exception:  # noqa: BLE001 - already gone
            pass


def ray_actors(spec: SuiteSpec, suite_kwargs: Mapping[str, Any], agent_config: AgentConfig, *, workers: int,
               max_restarts: int, agent: DownstreamAgent | None, **options: Any) -> Executor:
    """The ``ray`` executor's builder (:data:`~dreamer_gym.evaluation.executors.EXECUTORS`): ``workers`` actors."""
    return RayExecutor(spec, suite_kwargs, agent_config, actors=workers, max_restarts=max_restarts, **options)
