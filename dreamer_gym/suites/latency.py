"""``latency``: a pure-Python safe-and-radio game whose every call waits ``latency_s``, the way a remote
simulator or a web server makes its caller wait.

Why it exists: ScienceWorld and ALFWorld are CPU-bound, so on a 2-core machine nothing scales past two
workers and an executor's overhead hides behind the simulator. Here a step costs ~0 CPU and ``latency_s``
of waiting, so the scaling of executors (local pool, Ray actors) and of shared evaluation is measured
where it matters: docs/performance.md, "Scaling". It is a full suite (acquisition, oracle, tracks), so the
env, vector envs and the PettingZoo env run on it too, in seconds.

The game: the task names a code. ``go to <device>``, then ``set <device> to <code>``. TRAIN, DEV and TEST
use disjoint codes, so only a procedure with the code abstracted (``<code>``) transfers.
"""
from __future__ import annotations

import time
from collections.abc import Sequence

from dreamer_gym.suites.base import EpisodeTask, StepOutcome
from dreamer_gym.suites.spec import AcquisitionProfile, OracleProcedure, SuiteSpec

DEVICES = {"open-safe": "safe", "tune-radio": "radio"}
SPLIT_START = {"train": 0, "dev": 100, "test": 200}
VARIATIONS_PER_SPLIT = 8


def code_of(variation: int) -> str:
    """A code per variation, different across splits (``variation`` ranges are disjoint per split)."""
    return str(101 + 37 * variation % 900)


class LatencySuite:
    """See the module docstring. ``latency_s`` is waited on every :meth:`start` and :meth:`step`."""

    name = "latency"
    families = tuple(DEVICES)

    def __init__(self, latency_s: float = 0.02, step_limit: int = 8) -> None:
        if latency_s < 0:
            raise ValueError(f"Expected `latency_s` >= 0, got {latency_s}")
        self.latency_s, self.step_limit = latency_s, step_limit
        self._task: EpisodeTask | None = None
        self._at_device = False
        self._steps = 0
        self._score = 0.0

    def variations(self, family: str, split: str) -> tuple[int, ...]:
        if family not in DEVICES:
            raise ValueError(f"Expected `family` to be one of {tuple(DEVICES)}, got {family!r}")
        if split not in SPLIT_START:
            raise ValueError(f"Expected `split` to be one of {tuple(SPLIT_START)}, got {split!r}")
        return tuple(range(SPLIT_START[split], SPLIT_START[split] + VARIATIONS_PER_SPLIT))

    def _device(self) -> str:
        assert self._task is not None, "call start() first"
        return DEVICES[self._task.family]

    def start(self, task: EpisodeTask) -> str:
        self.variations(task.family, "train")
        time.sleep(self.latency_s)
        self._task, self._at_device, self._steps, self._score = task, False, 0, 0.0
        return self.look()

    def task_description(self) -> str:
        assert self._task is not None, "call start() first"
        return f"Your task is to: set the {self._device()} to {code_of(self._task.variation)}."

    def look(self) -> str:
        where = f"at the {self._device()}" if self._at_device else "in the hall"
        return f"You are {where}. You see a safe and a radio."

    def inventory(self) -> str:
        return "You carry nothing."

    def step(self, action: str) -> StepOutcome:
        if self._task is None:
            raise RuntimeError("call start() before step()")
        time.sleep(self.latency_s)
        self._steps += 1
        device = self._device()
        if action in ("look", "look around"):
            text = self.look()
        elif action == f"go to {device}":
            self._at_device, text = True, f"You are at the {device}."
        elif action.startswith(f"set {device} to ") and self._at_device:
            right = action == f"set {device} to {code_of(self._task.variation)}"
            self._score = 100.0 if right else -100.0
            text = f"The {device} clicks." if right else f"The {device} buzzes: wrong code."
        else:
            text = f"Nothing happens ({action!r} is not understood here)."
        return StepOutcome(text, self._score, self._score != 0.0 or self._steps >= self.step_limit)

    def valid_actions(self) -> tuple[str, ...]:
        return ("go to radio", "go to safe", "look")

    def gold_path(self, task: EpisodeTask) -> tuple[str, ...]:
        device = DEVICES[task.family]
        return (f"go to {device}", f"set {device} to {code_of(task.variation)}")

    def close(self) -> None:
        self._task = None


def _detour(rng: object, gold: Sequence[str]) -> list[str]:
    return ["look"]


def _wrong(rng: object, gold: Sequence[str]) -> str:
    return "dance"


SPEC = SuiteSpec(
    name="latency",
    adapter="dreamer_gym.suites.latency:LatencySuite",
    families=tuple(DEVICES),
    description="a pure-Python game whose every step waits `latency_s` (scaling measurements; seconds per run)",
    profile=AcquisitionProfile(detour=_detour, wrong=_wrong, failed=("Nothing happens",)),
    agent_prompt_text="You play a text game. Answer with one action per turn.",
    procedures={
        "open-safe": OracleProcedure("go to safe, set safe to <code>", "set the safe to <code>"),
        "tune-radio": OracleProcedure("go to radio, set radio to <code>", "set the radio to <code>"),
    },
    warm_actions=("look",),
    agent_max_steps=6,
)
