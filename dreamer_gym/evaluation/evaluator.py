"""The evaluator: retrieval (memoised per bank), the evaluation cache, and an executor for the misses."""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tqdm.auto import tqdm

from dreamer_gym.agents import AgentConfig, DownstreamAgent, EpisodeResult, check_agent_available, make_agent
from dreamer_gym.evaluation.episodes import EvalEpisode, EvalTask
from dreamer_gym.evaluation.executors import Executor, InProcessExecutor, make_executor
from dreamer_gym.memory import MemoryBank, MemoryEntry
from dreamer_gym.memory.hashing import content_hash
from dreamer_gym.store import Store
from dreamer_gym.suites import get_suite_spec


PROGRESS_DELAY_S = 3.0  # a commit shorter than this shows no bar at all


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


@dataclass
class Evaluator:
    """Evaluates banks on episodes: cached per episode, the misses played by an executor.

    ``executor`` is a registered name (see :data:`~dreamer_gym.evaluation.executors.EXECUTORS`; "auto":
    in this process for ``workers=0``, a local process pool of ``workers`` otherwise) or an
    :class:`~dreamer_gym.evaluation.executors.Executor` object, which must play suite ``suite_name`` with
    ``agent_config`` (the cache keys say so). The evaluator closes its executor.

    Example::

        ev = Evaluator("scienceworld", workers=2)  # or executor=MyExecutor(spec, {}, AgentConfig())
        results = ev.evaluate(bank, round_robin_episodes(pool, 8))
        ev.close()
    """

    suite_name: str = "scienceworld"
    agent_config: AgentConfig = field(default_factory=AgentConfig)
    store: Store = field(default_factory=Store)
    workers: int = 0
    suite_kwargs: dict[str, Any] = field(default_factory=dict)
    max_restarts: int = 3
    executor: Executor = "auto"  # type: ignore[assignment] - a registered name, built in __post_init__
    executor_options: dict[str, Any] = field(default_factory=dict)  # for a named executor (ray: address, ...)
    progress: bool = False  # a bar over the episodes played, shown once a run passes PROGRESS_DELAY_S

    def __post_init__(self) -> None:
        if self.workers < 0:
            raise ValueError(f"Expected `workers` to be >= 0, got {self.workers}")
        if isinstance(self.executor, str):  # a caller's own executor says itself what it needs
            get_suite_spec(self.suite_name).ensure_available()
        check_agent_available(self.agent_config)
        self._agent = make_agent(self.agent_config)
        self.stats = EvalStats()
        # bank hash -> description -> retrieved entries; banks are immutable, so this never goes stale
        self._retrieved: OrderedDict[str, dict[str, list[MemoryEntry]]] = OrderedDict()
        if isinstance(self.executor, str):
            self.executor = make_executor(
                self.executor, get_suite_spec(self.suite_name), self.suite_kwargs, self.agent_config,
                workers=self.workers, max_restarts=self.max_restarts, agent=self._agent, **self.executor_options,
            )

    @property
    def agent(self) -> DownstreamAgent:
        """The agent that retrieves, and the one an in-process executor plays with."""
        return self._agent

    @agent.setter
    def agent(self, agent: DownstreamAgent) -> None:
        # e.g. an LLM agent sharing an already loaded model: the in-process executor plays with it too
        if isinstance(self.executor, InProcessExecutor) and self.executor.agent is self._agent:
            self.executor.agent = agent
        self._agent = agent

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
        """Results in the order of ``episodes``. Each played episode is stored as soon as it finishes (unless
        it failed: a result with ``error`` is never cached), so an interrupted evaluation resumes."""
        return self.evaluate_many([(bank, episodes)])[0]

    def evaluate_many(self, jobs: Sequence[tuple[MemoryBank, Sequence[EvalEpisode]]]) -> list[list[EpisodeResult]]:
        """:meth:`evaluate` for several banks at once: the misses of all of them go to the executor in ONE
        run (a GRPO group's commits play side by side on the workers), and an episode two banks share
        (same retrieved entries) is played once."""
        keyed: list[list[str]] = []
        todo: dict[str, EvalTask] = {}
        for bank, episodes in jobs:
            retrieved = [self._retrieve(bank, ep.description) for ep in episodes]
            keys = [self.episode_key(ep, r) for ep, r in zip(episodes, retrieved)]
            keyed.append(keys)
            for k, ep, r in zip(keys, episodes, retrieved):
                todo.setdefault(k, EvalTask(k, ep.task, tuple(r), ep.seed))
        cached = self.store.get_cached(set(todo))
        results: dict[str, EpisodeResult] = {k: EpisodeResult.from_dict(v) for k, v in cached.items()}
        todo = {k: t for k, t in todo.items() if k not in results}
        asked = sum(len(keys) for keys in keyed)
        self.stats.hits += asked - len(todo)
        self.stats.misses += len(todo)
        if todo:
            restarts = self.executor.restarts
            with tqdm(total=len(todo), desc="evaluation episodes", unit="episode", delay=PROGRESS_DELAY_S, leave=False,
                      disable=not self.progress) as bar:
                def record(task: EvalTask, result: EpisodeResult) -> None:
                    self._record(task, result)
                    bar.update(1)

                try:
                    played = self.executor.run(list(todo.values()), on_result=record)
                finally:
                    self.stats.worker_restarts += self.executor.restarts - restarts
            results.update(zip(todo, played))
        return [[results[k] for k in keys] for keys in keyed]

    def _record(self, task: EvalTask, result: EpisodeResult) -> None:
        if result.error is not None:
            self.stats.failures += 1
        else:
            self.store.put_cached(task.key, result.to_dict())

    def warm_up(self) -> None:
        """Start every worker and its simulator now rather than on the first evaluation."""
        self.executor.warm_up()

    def worker_pids(self) -> list[int]:
        """PIDs of the executor's live local worker processes ([] in-process)."""
        return self.executor.worker_pids()

    def close(self) -> None:
        self.executor.close()
