"""What an evaluation plays: episodes (the caller's) and the work items handed to an executor."""
from __future__ import annotations

from dataclasses import dataclass

from dreamer_gym.memory import MemoryEntry
from dreamer_gym.pool import BankPool
from dreamer_gym.suites.base import EpisodeTask


@dataclass(frozen=True)
class EvalEpisode:
    """One evaluation episode. ``description`` is the task text, known without a simulator."""

    task: EpisodeTask
    description: str
    seed: int = 0


@dataclass(frozen=True)
class EvalTask:
    """One episode to play with the entries retrieved for it: the picklable work item an
    :class:`~dreamer_gym.evaluation.executors.Executor` receives. ``key`` is its evaluation-cache key
    (for logs and executors that deduplicate; the evaluator does the caching)."""

    key: str
    task: EpisodeTask
    entries: tuple[MemoryEntry, ...]
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
