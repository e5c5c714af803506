"""The task-suite protocol: the only thing the agents, acquisition and evaluation know of a simulator."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

SPLITS = ("train", "dev", "test")


@dataclass(frozen=True, order=True)
class EpisodeTask:
    """One playable episode: a task family and a variation of it."""

    family: str
    variation: int


@dataclass(frozen=True)
class StepOutcome:
    observation: str
    score: float  # the suite's own score scale (ScienceWorld: -100..100)
    done: bool


@runtime_checkable
class TaskSuite(Protocol):
    """A warm simulator. One instance per worker; episodes are started with :meth:`start`.

    Everything else the package needs to know of a suite (acquisition profile, agent readers, oracle
    procedures, availability) is in its :class:`~dreamer_gym.suites.spec.SuiteSpec`;
    :func:`~dreamer_gym.testing.check_suite` checks an adapter against this protocol.
    """

    name: str
    families: tuple[str, ...]  # the task families this adapter can start

    def variations(self, family: str, split: str) -> tuple[int, ...]:
        """Variation ids of ``family`` in ``split`` (one of :data:`SPLITS`)."""
        ...

    def start(self, task: EpisodeTask) -> str:
        """Load ``task`` and return its first observation: the first look (what the suite's look action
        shows); the task text is :meth:`task_description`."""
        ...

    def task_description(self) -> str: ...

    def step(self, action: str) -> StepOutcome: ...

    def inventory(self) -> str:
        """What the agent holds (or has focused), without spending a move."""
        ...

    def look(self) -> str:
        """What the look action would show now, without spending a move."""
        ...

    def valid_actions(self) -> tuple[str, ...]:
        """Actions the simulator accepts in the current state (LLM agents snap free text onto them)."""
        ...

    def gold_path(self, task: EpisodeTask) -> tuple[str, ...]:
        """The suite's oracle action sequence for ``task`` (the adapter's `cheat`)."""
        ...

    def close(self) -> None:
        """Stop the simulator (no process outlives this); a closed suite can start again."""
        ...
