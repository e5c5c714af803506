"""Fast, online memory acquisition: a noisy expert plays TRAIN variations session by session and a
rule-based writer records typed entries with provenance after each episode.

The result looks like a real fast-written memory: verbatim, variation-specific procedures (with the
detours the expert took), duplicates across sessions, conflicting location facts, stale entries from
early, noisier sessions, and pitfalls written before score drops. Everything is a pure function of
the seed and the simulator, so rebuilding a bank reproduces its hash.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from dreamer_gym.memory import MemoryBank, MemoryEntry, Provenance, Step, Trajectory
from dreamer_gym.suites.base import EpisodeTask, TaskSuite

_FATAL_FOCUS = ("focus on wall", "focus on air", "focus on agent")


@dataclass(frozen=True)
class AcquisitionConfig:
    families: tuple[str, ...]
    sessions: int = field(default=4, metadata={"help": "sessions; each plays every family once"})
    train_variations: int = field(default=6, metadata={"help": "first N train variations sampled from"})
    detour_prob: float = 0.15
    skip_prob: float = 0.08
    wrong_prob: float = 0.04
    step_limit: int = 100

    def __post_init__(self) -> None:
        if not self.families:
            raise ValueError("Expected `families` to name at least one task family, got ()")
        for name in ("detour_prob", "skip_prob", "wrong_prob"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"Expected `{name}` in [0, 1], got {value}")


def noisy_expert_actions(gold: Sequence[str], rng: np.random.Generator, noise: float, config: AcquisitionConfig) -> list[str]:
    """Perturb a gold path: detours, skipped steps and wrong steps, more of them when ``noise`` is high."""
    rooms = ("hallway", "kitchen", "bathroom", "living room", "bedroom", "workshop", "greenhouse")
    actions: list[str] = []
    for action in gold:
        if rng.random() < config.detour_prob * noise:
            room = rooms[int(rng.integers(len(rooms)))]
            actions += [f"open door to {room}", "look around"]
        if rng.random() < config.skip_prob * noise and not action.startswith(("go to", "focus on")):
            continue
        if rng.random() < config.wrong_prob * noise:
            actions.append(_FATAL_FOCUS[int(rng.integers(len(_FATAL_FOCUS)))] if rng.random() < 0.3 else "pick up wall")
        actions.append(action)
    return actions


def play(suite: TaskSuite, task: EpisodeTask, actions: Sequence[str], session: int) -> Trajectory:
    first = suite.start(task)
    description = suite.task_description()
    steps = [Step("look around", first, 0.0)]
    for action in actions:
        outcome = suite.step(action)
        steps.append(Step(action, outcome.observation, outcome.score))
        if outcome.done:
            break
    return Trajectory(task.family, task.variation, description, tuple(steps), steps[-1].score, session)


def _short(description: str) -> str:
    return description.split(".")[0].replace("Your task is to ", "").strip()


def write_entries(traj: Trajectory) -> list[MemoryEntry]:
    """The rule-based writer: what a fast per-session memory writer records from one trajectory."""
    fam, task, session = traj.family, _short(traj.task_description), traj.session
    last = len(traj.steps) - 1
    whole = (Provenance(traj.id, 0, last),)
    entries: list[MemoryEntry] = []
    if traj.final_score > 0:
        actions = [s.action for s in traj.steps[1:]]
        entries.append(MemoryEntry(
            "procedure",
            f"To {task}: " + ", ".join(actions) + ".",
            fam, ("verbatim", f"variation:{traj.variation}"), whole, session,
        ))
    previous = 0.0
    room = None
    for i, step in enumerate(traj.steps):
        moved = re.match(r"You move to the ([a-z ]+)\.", step.observation)
        if moved:
            room = moved.group(1)
        prov = (Provenance(traj.id, max(i - 1, 0), i),)
        if step.score > previous and step.action not in ("look around",):
            entries.append(MemoryEntry(
                "insight", f"While trying to {task}, '{step.action}' raised the score from {previous:g} to {step.score:g}.",
                fam, ("score-jump",), prov, session,
            ))
        if step.score < previous or step.score < 0:
            entries.append(MemoryEntry(
                "pitfall", f"Do not {step.action} when trying to {task}: the score dropped to {step.score:g}.",
                fam, ("score-drop",), prov, session,
            ))
        picked = re.match(r"(?:pick up|focus on) (.+)$", step.action)
        if picked and room and "No known action" not in step.observation:
            entries.append(MemoryEntry(
                "fact", f"The {picked.group(1)} can be found in the {room}.", fam, ("location",), prov, session,
            ))
        previous = step.score
    if traj.final_score <= 0:
        entries.append(MemoryEntry(
            "insight", f"An attempt to {task} failed after {last} steps (score {traj.final_score:g}).",
            fam, ("failure",), whole, session,
        ))
    return entries


def acquire(
    suite: TaskSuite,
    config: AcquisitionConfig,
    seed: int,
    gold: Callable[[EpisodeTask], Sequence[str]] | None = None,
    progress: bool = False,
) -> tuple[MemoryBank, list[Trajectory]]:
    """Build bank v0 and its trajectory store from ``config.sessions`` sessions of play."""
    from tqdm.auto import tqdm

    rng = np.random.default_rng(seed)
    gold = gold or suite.gold_path
    gold_cache: dict[EpisodeTask, tuple[str, ...]] = {}
    trajectories: list[Trajectory] = []
    entries: list[MemoryEntry] = []
    jobs = [(s, f) for s in range(config.sessions) for f in config.families]
    for session, family in tqdm(jobs, desc=f"acquire seed={seed}", disable=not progress):
        train = suite.variations(family, "train")[: config.train_variations]
        task = EpisodeTask(family, int(train[int(rng.integers(len(train)))]))
        if task not in gold_cache:
            gold_cache[task] = tuple(gold(task))
        noise = 2.0 if session == 0 else 1.0  # early sessions are sloppier: stale entries
        actions = noisy_expert_actions(gold_cache[task], rng, noise, config)
        traj = play(suite, task, actions, session)
        trajectories.append(traj)
        entries.extend(write_entries(traj))
    return MemoryBank(entries), trajectories
