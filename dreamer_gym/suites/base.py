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
    """A warm simulator. One instance per worker; episodes are started with :meth:`start`."""

    name: str

    def variations(self, family: str, split: str) -> tuple[int, ...]:
        """Variation ids of ``family`` in ``split`` (one of :data:`SPLITS`)."""
        ...

    def start(self, task: EpisodeTask) -> str:
        """Load ``task`` and return its first observation (what `look around` shows)."""
        ...

    def task_description(self) -> str: ...

    def step(self, action: str) -> StepOutcome: ...

    def inventory(self) -> str: ...

    def valid_actions(self) -> tuple[str, ...]:
        """Actions the simulator accepts in the current state (LLM agents snap free text onto them)."""
        ...

    def gold_path(self, task: EpisodeTask) -> tuple[str, ...]:
        """The suite's oracle action sequence for ``task`` (the adapter's `cheat`)."""
        ...

    def close(self) -> None: ...
