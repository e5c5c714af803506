"""A toy suite written the way a user would write one: one module, public API only (no monkeypatching, no
private imports). It is the proof that a suite is one room: tests/suites/test_toy_suite.py runs it
through acquisition, the pool, the env and evaluation, and tests/suites/test_check_suite.py breaks it
on purpose.

The game: open a locked door. The task names a colour; the agent must take the key of that colour, go
to the door and unlock it with that key. TRAIN, DEV and TEST use different colours, so a verbatim
procedure from a TRAIN episode fails on DEV while an abstracted one (``<colour>``) transfers.
"""
from __future__ import annotations

from collections.abc import Sequence

from dreamer_gym.suites import AcquisitionProfile, EpisodeTask, OracleProcedure, StepOutcome, SuiteSpec

COLOURS = ("red", "blue", "green", "amber", "violet", "teal", "ochre", "pink", "grey")
# (first variation, colour offset) per split: disjoint variations and disjoint colours
SPLIT_VARIATIONS = {"train": range(0, 6), "dev": range(100, 106), "test": range(200, 206)}
FAMILIES = ("unlock-door", "light-lamp")


def colour_of(variation: int) -> str:
    base = {0: 0, 100: 3, 200: 6}[variation - variation % 100]
    return COLOURS[base + variation % 3]


class ToySuite:
    """A deterministic text game in pure Python (no simulator process to start or stop)."""

    name = "toy"
    families = FAMILIES

    def __init__(self, step_limit: int = 12) -> None:
        self.step_limit = step_limit
        self._task: EpisodeTask | None = None
        self._held: list[str] = []
        self._at_target = False
        self._steps = 0
        self._score = 0.0

    def variations(self, family: str, split: str) -> tuple[int, ...]:
        if family not in FAMILIES:
            raise ValueError(f"Expected `family` to be one of {FAMILIES}, got {family!r}")
        if split not in SPLIT_VARIATIONS:
            raise ValueError(f"Expected `split` to be one of {tuple(SPLIT_VARIATIONS)}, got {split!r}")
        return tuple(SPLIT_VARIATIONS[split])

    def _target(self) -> str:
        assert self._task is not None
        return "door" if self._task.family == "unlock-door" else "lamp"

    def _verb(self) -> str:
        assert self._task is not None
        return "unlock door with" if self._task.family == "unlock-door" else "light lamp with"

    def start(self, task: EpisodeTask) -> str:
        self.variations(task.family, "train")
        self._task, self._held, self._at_target, self._steps, self._score = task, [], False, 0, 0.0
        return self.look()

    def task_description(self) -> str:
        item = "key" if self._task and self._task.family == "unlock-door" else "match"
        return f"Your task is to: use the {colour_of(self._task.variation)} {item} on the {self._target()}."  # type: ignore[union-attr]

    def look(self) -> str:
        item = "key" if self._task and self._task.family == "unlock-door" else "match"
        things = ", ".join(f"a {c} {item}" for c in sorted(COLOURS) if f"{c} {item}" not in self._held)
        where = f"the {self._target()}" if self._at_target else "the table"
        return f"You are at {where}. On the table: {things}."

    def inventory(self) -> str:
        return "You carry: " + (", ".join(self._held) or "nothing") + "."

    def step(self, action: str) -> StepOutcome:
        if self._task is None:
            raise RuntimeError("call start() before step()")
        self._steps += 1
        item = "key" if self._task.family == "unlock-door" else "match"
        want = f"{colour_of(self._task.variation)} {item}"
        if action in ("look", "look around"):
            text = self.look()
        elif action.startswith("take ") and action[5:] in {f"{c} {item}" for c in COLOURS}:
            self._held.append(action[5:])
            text = f"You take the {action[5:]}."
        elif action == f"go to {self._target()}":
            self._at_target = True
            text = f"You arrive at the {self._target()}."
        elif action.startswith(self._verb() + " ") and self._at_target and action[len(self._verb()) + 1:] in self._held:
            used = action[len(self._verb()) + 1:]
            self._score = 100.0 if used == want else -100.0
            text = "It works!" if used == want else "Wrong one: it breaks."
        else:
            text = f"Nothing happens ({action!r} is not understood here)."
        done = self._score != 0.0 or self._steps >= self.step_limit
        return StepOutcome(text, self._score, done)

    def valid_actions(self) -> tuple[str, ...]:
        item = "key" if self._task and self._task.family == "unlock-door" else "match"
        return tuple(sorted([f"take {c} {item}" for c in COLOURS] + [f"go to {self._target()}", "look"]))

    def gold_path(self, task: EpisodeTask) -> tuple[str, ...]:
        item = "key" if task.family == "unlock-door" else "match"
        verb = "unlock door with" if task.family == "unlock-door" else "light lamp with"
        target = "door" if task.family == "unlock-door" else "lamp"
        colour = colour_of(task.variation)
        return (f"take {colour} {item}", f"go to {target}", f"{verb} {colour} {item}")

    def close(self) -> None:
        self._task = None


def detour(rng, gold: Sequence[str]) -> list[str]:  # noqa: ANN001 - numpy Generator
    return ["look"]


def wrong(rng, gold: Sequence[str]) -> str:  # noqa: ANN001
    return "dance"


SPEC = SuiteSpec(
    name="toy",
    adapter=ToySuite,
    families=FAMILIES,
    description="a pure-Python door-and-lamp game (tests only)",
    profile=AcquisitionProfile(detour=detour, wrong=wrong, failed=("Nothing happens",)),
    agent_prompt_text="You play a text game. Answer with one action per turn.",
    procedures={
        "unlock-door": OracleProcedure("take <colour> key, go to door, unlock door with <colour> key",
                                       "use the <colour> key on the door"),
        "light-lamp": OracleProcedure("take <colour> match, go to lamp, light lamp with <colour> match",
                                      "use the <colour> match on the lamp"),
    },
    agent_max_steps=8,
)
