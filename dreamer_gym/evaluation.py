"""Evaluation: the downstream agent plays held-out episodes with a bank. The expensive part, so it is
cached (per episode, keyed by agent config, task, variation, seed and the retrieved entries),
parallel (local worker processes, each with one warm JVM) and resumable (each finished episode is
stored at once; a dead worker's episodes are re-run on a fresh one)."""
from __future__ import annotations

import atexit
import logging
import multiprocessing as mp
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any

from dreamer_gym.agents import AgentConfig, DownstreamAgent, EpisodeResult, make_agent
from dreamer_gym.errors import LLMError
from dreamer_gym.memory import MemoryBank, MemoryEntry
from dreamer_gym.memory.hashing import content_hash
from dreamer_gym.pool import BankPool
from dreamer_gym.store import Store
from dreamer_gym.suites import make_suite
from dreamer_gym.suites.base import EpisodeTask, TaskSuite

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class EvalEpisode:
    """One evaluation episode. ``description`` is the task text, known without a simulator."""

    task: EpisodeTask
    description: str
    seed: int = 0


def round_robin_episodes(pool: BankPool, n: int, split: str = "dev") -> list[EvalEpisode]:
    """``n`` episodes taking the pool's families in turn (first variation of each, then the second...),
    for benchmarks and studies that want a fixed, family-balanced episode set."""
    episodes: list[EvalEpisode] = []
    i = 0
    while len(episodes) < n:
        family = pool.families[i % len(pool.families)]
        task = EpisodeTask(family, pool.variations(family, split)[i // len(pool.families)])
        episodes.append(EvalEpisode(task, pool.description(task, split)))
        i += 1
    return episodes


@dataclass
class EvalStats:
    hits: int = 0
    misses: int = 0
    worker_restarts: int = 0
    failures: int = 0

    @property
    def hit_rate(self) -> float:
        total = self.hits + self.misses
        return self.hits / total if total else 0.0


# --- worker side (one warm suite + agent per process) ---------------------------------------------------
_WORKER: dict[str, Any] = {}


def warm_task(suite: TaskSuite) -> EpisodeTask:
    """A cheap task that starts the suite's simulator (its JVM, engine or browser)."""
    if suite.name == "scienceworld":
        return EpisodeTask("find-non-living-thing", 0)
    family = tuple(getattr(suite, "families", ()))[0]
    return EpisodeTask(family, suite.variations(family, "train")[0])


def _init_worker(suite_name: str, suite_kwargs: dict[str, Any], agent_config: AgentConfig) -> None:
    suite = make_suite(suite_name, **suite_kwargs)
    _WORKER.update(suite=suite, agent=make_agent(agent_config), suite_name=suite_name, suite_kwargs=suite_kwargs)
    atexit.register(lambda: _WORKER.get("suite") and _WORKER["suite"].close())


def play_guarded(
    holder: dict[str, Any], suite_name: str, suite_kwargs: dict[str, Any], agent: DownstreamAgent,
    task: EpisodeTask, entries: Sequence[MemoryEntry], seed: int,
) -> EpisodeResult:
    """Play one episode; if the simulator fails, restart it and try once more, then record the failure
    as a result with ``error`` set (score 0, never cached) so the evaluation goes on. An LLM failure
    (server down, timeout) is recorded at once: restarting the simulator would not help."""
    error = ""
    for _attempt in range(2):
        try:
            if holder.get("suite") is None:
                holder["suite"] = make_suite(suite_name, **suite_kwargs)
            return agent.play(holder["suite"], task, entries, seed)
        except LLMError as exc:
            logger.warning("episode %s failed in the LLM backend: %s", task, exc)
            return EpisodeResult(task, 0.0, 0.0, 0, False, (), error=f"{type(exc).__name__}: {exc}"[:500])
        except Exception as exc:  # noqa: BLE001 - a simulator crash must not end the sweep
            error = f"{type(exc).__name__}: {exc}"[:500]
            logger.warning("episode %s failed (%s); restarting the simulator", task, error)
            suite = holder.pop("suite", None)
            if suite is not None:
                try:
                    suite.close()
                except Exception:  # noqa: BLE001 - already dead
                    pass
    return EpisodeResult(task, 0.0, 0.0, 0, False, (), error=error)


def _play_in_worker(task: EpisodeTask, entries: list[dict[str, Any]], seed: int) -> dict[str, Any]:
    result = play_guarded(
        _WORKER, _WORKER["suite_name"], _WORKER["suite_kwargs"], _WORKER["agent"], task,
        [MemoryEntry.from_dict(e) for e in entries], seed,
    )
    return result.to_dict()


def worker_pids(evaluator: Evaluator) -> list[int]:
    """PIDs of the live worker processes (for tests that kill one)."""
    ex = evaluator._executor
    return [] if ex is None else [p.pid for p in getattr(ex, "_processes", {}).values()]


# --- parent side -------------------------------------------------------------------------------------------
@dataclass
class Evaluator:
    """Evaluates banks on episodes. ``workers=0`` plays in this process (one lazily started suite)."""

    suite_name: str = "scienceworld"
    agent_config: AgentConfig = field(default_factory=AgentConfig)
    store: Store = field(default_factory=Store)
    workers: int = 0
    suite_kwargs: dict[str, Any] = field(default_factory=dict)
    max_restarts: int = 3

    def __post_init__(self) -> None:
        if self.workers < 0:
            raise ValueError(f"Expected `workers` to be >= 0, got {self.workers}")
        self.agent = make_agent(self.agent_config)
        self.stats = EvalStats()
        # bank hash -> description -> retrieved entries; banks are immutable, so this never goes stale
        self._retrieved: OrderedDict[str, dict[str, list[MemoryEntry]]] = OrderedDict()
        self._suite: TaskSuite | None = None
        self._executor: ProcessPoolExecutor | None = None

    def episode_key(self, episode: EvalEpisode, retrieved: Sequence[MemoryEntry]) -> str:
        return content_hash(
            [self.agent.cache_key, self.suite_name, episode.task.family, episode.task.variation, episode.seed,
             [e.id for e in retrieved]],
            length=24,
        )

    def _retrieve(self, bank: MemoryBank, description: str) -> list[MemoryEntry]:
        """The agent's retrieval, memoised per (bank, task text): the cached path must not rebuild BM25."""
        per_bank = self._retrieved.get(bank.hash)
        if per_bank is None:
            per_bank = self._retrieved[bank.hash] = {}
            while len(self._retrieved) > 16:
                self._retrieved.popitem(last=False)
        else:
            self._retrieved.move_to_end(bank.hash)
        if description not in per_bank:
            per_bank[description] = self.agent.retrieve(description, bank.entries, index_key=bank.hash)
        return per_bank[description]

    def evaluate(self, bank: MemoryBank, episodes: Sequence[EvalEpisode]) -> list[EpisodeResult]:
        """Results in the order of ``episodes``."""
        retrieved = [self._retrieve(bank, ep.description) for ep in episodes]
        keys = [self.episode_key(ep, r) for ep, r in zip(episodes, retrieved)]
        cached = self.store.get_cached(set(keys))
        results: dict[str, EpisodeResult] = {k: EpisodeResult.from_dict(v) for k, v in cached.items()}
        todo = {k: (ep, r) for k, ep, r in zip(keys, episodes, retrieved) if k not in results}
        self.stats.hits += len(keys) - len(todo)
        self.stats.misses += len(todo)
        if todo:
            fresh = self._run_local(todo) if self.workers == 0 else self._run_pool(todo)
            results.update(fresh)
        return [results[k] for k in keys]

    def _record(self, key: str, result: EpisodeResult) -> None:
        if result.error is None:
            self.store.put_cached(key, result.to_dict())

    def _run_local(self, todo: dict[str, tuple[EvalEpisode, list[MemoryEntry]]]) -> dict[str, EpisodeResult]:
        holder: dict[str, Any] = {"suite": self._suite}
        out = {}
        for key, (ep, entries) in todo.items():
            result = play_guarded(holder, self.suite_name, self.suite_kwargs, self.agent, ep.task, entries, ep.seed)
            if result.error is not None:
                self.stats.failures += 1
            self._record(key, result)
            out[key] = result
        self._suite = holder.get("suite")
        return out

    def _ensure_executor(self) -> ProcessPoolExecutor:
        if self._executor is None:
            self._executor = ProcessPoolExecutor(
                max_workers=self.workers,
                mp_context=mp.get_context("spawn"),
                initializer=_init_worker,
                initargs=(self.suite_name, self.suite_kwargs, self.agent_config),
            )
        return self._executor

    def warm_up(self) -> None:
        """Start every worker (and its JVM) now rather than on the first evaluation."""
        if self.workers == 0:
            if self._suite is None:
                self._suite = make_suite(self.suite_name, **self.suite_kwargs)
            self._suite.start(warm_task(self._suite))  # starts the JVM / engine / browser
            return
        ex = self._ensure_executor()
        list(ex.map(_noop, range(self.workers * 2)))

    def _run_pool(self, todo: dict[str, tuple[EvalEpisode, list[MemoryEntry]]]) -> dict[str, EpisodeResult]:
        out: dict[str, EpisodeResult] = {}
        restarts = 0
        while len(out) < len(todo):
            futures: dict[Future[dict[str, Any]], str] = {}
            try:
                ex = self._ensure_executor()
                for key, (ep, entries) in todo.items():
                    if key not in out:
                        futures[ex.submit(_play_in_worker, ep.task, [e.to_dict() for e in entries], ep.seed)] = key
                pending = set(futures)
                while pending:
                    done, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for fut in done:
                        result = EpisodeResult.from_dict(fut.result())
                        if result.error is not None:
                            self.stats.failures += 1
                        self._record(futures[fut], result)
                        out[futures[fut]] = result
            except BrokenProcessPool:
                restarts += 1
                self.stats.worker_restarts += 1
                logger.warning("an evaluation worker died; restarting the pool (%d/%d)", restarts, self.max_restarts)
                self._shutdown_executor()
                if restarts > self.max_restarts:
                    raise
        return out

    def _shutdown_executor(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None

    def close(self) -> None:
        self._shutdown_executor()
        if self._suite is not None:
            self._suite.close()
            self._suite = None


def _noop(_: int) -> int:
    """Start the worker's JVM and play a few steps, so the first timed episode meets a warm JIT."""
    import os
    import time

    suite = _WORKER["suite"]
    suite.start(warm_task(suite))
    for action in ("look around", "inventory", "look around") if suite.name == "scienceworld" else ("look", "inventory"):
        suite.step(action)
    time.sleep(0.2)
    return os.getpid()
