"""A pure-Python suite for the executor protocol's tests (tests/test_evaluation.py, tests/test_ray_executor.py):
some variations crash the simulator, fail like an LLM backend, or kill the process playing them. Registered by
the tests at run time, never at import: a worker process or Ray actor knows the suite only from its spec."""
from __future__ import annotations

import os
from pathlib import Path

from dreamer_gym.agents import AgentConfig
from dreamer_gym.errors import LLMError
from dreamer_gym.memory import MemoryBank, MemoryEntry
from dreamer_gym.suites import StepOutcome, SuiteSpec
from dreamer_gym.suites.base import EpisodeTask

CRASH, LLM_DOWN, KILLS_WORKER = 150, 151, 152  # dev variations that fail in the ways evaluation must survive


class EchoSuite:
    """Say the task's word. Some variations crash the simulator, fail like an LLM backend, or kill the process
    playing them (always, or once when ``die_once`` names a file that does not exist yet)."""

    name = "echo-eval"
    families = ("say",)

    def __init__(self, die_once: str | None = None) -> None:
        self.die_once = die_once
        self._task: EpisodeTask | None = None
        self._steps = 0

    def variations(self, family: str, split: str) -> tuple[int, ...]:
        start = {"train": 0, "dev": 100, "test": 200}[split]
        return tuple(range(start, start + 60))

    def start(self, task: EpisodeTask) -> str:
        if task.variation == CRASH:
            raise RuntimeError("the simulator crashed")
        if task.variation == LLM_DOWN:
            raise LLMError("the LLM server is unreachable")
        if task.variation == KILLS_WORKER or (self.die_once and not os.path.exists(self.die_once)):
            if self.die_once:
                Path(self.die_once).touch()
            os._exit(3)
        self._task, self._steps = task, 0
        return "You are here."

    def task_description(self) -> str:
        return f"Your task is to: say w{self._task.variation}."  # type: ignore[union-attr]

    def step(self, action: str) -> StepOutcome:
        self._steps += 1
        won = self._task is not None and action == f"say w{self._task.variation}"
        return StepOutcome("Well said." if won else "Nothing happens.", 100.0 if won else 0.0, won or self._steps >= 3)

    def close(self) -> None:
        self._task = None


ECHO = SuiteSpec(name="echo-eval", adapter=EchoSuite, families=("say",), agent_max_steps=4)
ECHO_AGENT = AgentConfig(max_steps=4)
ECHO_BANK = MemoryBank([MemoryEntry("procedure", "To say <word>: say <word>.", "say"),
                        MemoryEntry("fact", "The room is quiet.", "say"), MemoryEntry("fact", "Words echo here.", "say")])
