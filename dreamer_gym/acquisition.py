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
_SW_ROOMS = ("hallway", "kitchen", "bathroom", "living room", "bedroom", "workshop", "greenhouse")


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


@dataclass(frozen=True)
class SuiteProfile:
    """What acquisition needs to know of one simulator's language: how its noisy expert strays, and which
    patterns the rule-based writer reads locations from. One per suite; see :data:`PROFILES`."""

    detour: Callable[[np.random.Generator, Sequence[str]], list[str]]
    wrong: Callable[[np.random.Generator, Sequence[str]], str]
    never_skip: tuple[str, ...]  # action prefixes the expert never drops
    location: re.Pattern[str]  # an observation saying where the agent now is (group 1: the place)
    picked: re.Pattern[str]  # an action that finds an object (group 1: object; group 2, if any: where)
    failed: tuple[str, ...]  # observations saying the action did nothing
    goal: Callable[[str], str] = field(default=lambda d: _short(d))  # the goal clause of a task text


def _sw_detour(rng: np.random.Generator, gold: Sequence[str]) -> list[str]:
    room = _SW_ROOMS[int(rng.integers(len(_SW_ROOMS)))]
    return [f"open door to {room}", "look around"]


def _sw_wrong(rng: np.random.Generator, gold: Sequence[str]) -> str:
    return _FATAL_FOCUS[int(rng.integers(len(_FATAL_FOCUS)))] if rng.random() < 0.3 else "pick up wall"


def _places(gold: Sequence[str]) -> list[str]:
    """The receptacles a gold path visits: known to exist in its game (ALFWorld detours go there)."""
    return sorted({a[len("go to "):] for a in gold if a.startswith("go to ")}) or ["countertop 1"]


def _alfworld_detour(rng: np.random.Generator, gold: Sequence[str]) -> list[str]:
    places = _places(gold)
    place = places[int(rng.integers(len(places)))]
    return [f"go to {place}", "look"] if rng.random() < 0.5 else [f"go to {place}", f"examine {place}"]


def _alfworld_wrong(rng: np.random.Generator, gold: Sequence[str]) -> str:
    places = _places(gold)
    place = places[int(rng.integers(len(places)))]
    return f"take {place} from {place}" if rng.random() < 0.5 else f"use {place}"


PROFILES: dict[str, SuiteProfile] = {
    "scienceworld": SuiteProfile(
        _sw_detour, _sw_wrong, ("go to", "focus on"),
        re.compile(r"You move to the ([a-z ]+)\."), re.compile(r"(?:pick up|focus on) (.+)$"),
        ("No known action",),
    ),
}
PROFILES["alfworld"] = PROFILES["alfworld-gen"] = SuiteProfile(
    _alfworld_detour, _alfworld_wrong, ("go to", "take", "move", "put", "open", "clean", "heat", "cool", "use"),
    re.compile(r"You arrive at ([a-z]+ \d+)\."), re.compile(r"take ([a-z]+ \d+) from ([a-z]+ \d+)$"),
    ("Nothing happens",),
)


def _miniwob_detour(rng: np.random.Generator, gold: Sequence[str]) -> list[str]:
    return ['press "Tab"'] if rng.random() < 0.5 else ["focus textbox 1"]


def _miniwob_wrong(rng: np.random.Generator, gold: Sequence[str]) -> str:
    return 'click "Submit"' if rng.random() < 0.5 else "click button 1"  # may submit too early: a failed episode


_NEVER = re.compile(r"(?!)")  # MiniWoB pages have no places to remember
PROFILES["miniwob"] = SuiteProfile(
    _miniwob_detour, _miniwob_wrong, tuple(f"{v} " for v in ("click", "type", "check", "uncheck", "select", "focus")),
    _NEVER, _NEVER, ("Unknown action", "No known action matches"),
    goal=lambda d: d.strip().rstrip(".").strip(),  # goals quote values that may hold a period
)


def profile_for(suite_name: str) -> SuiteProfile:
    if suite_name not in PROFILES:
        raise ValueError(f"No acquisition profile for suite {suite_name!r}; add one to PROFILES ({sorted(PROFILES)})")
    return PROFILES[suite_name]


def noisy_expert_actions(
    gold: Sequence[str], rng: np.random.Generator, noise: float, config: AcquisitionConfig,
    profile: SuiteProfile | None = None,
) -> list[str]:
    """Perturb a gold path: detours, skipped steps and wrong steps, more of them when ``noise`` is high."""
    profile = profile or PROFILES["scienceworld"]
    actions: list[str] = []
    for action in gold:
        if rng.random() < config.detour_prob * noise:
            actions += profile.detour(rng, gold)
        if rng.random() < config.skip_prob * noise and not action.startswith(profile.never_skip):
            continue
        if rng.random() < config.wrong_prob * noise:
            actions.append(profile.wrong(rng, gold))
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
    """The goal clause of a task text ("Your task is to: put a mug in shelf." -> "put a mug in shelf")."""
    return re.sub(r"^Your task is to:? ", "", description.split(".")[0]).strip()


def write_entries(traj: Trajectory, profile: SuiteProfile | None = None) -> list[MemoryEntry]:
    """The rule-based writer: what a fast per-session memory writer records from one trajectory."""
    profile = profile or PROFILES["scienceworld"]
    fam, task, session = traj.family, profile.goal(traj.task_description), traj.session
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
        moved = profile.location.match(step.observation)
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
        picked = profile.picked.match(step.action)
        where = picked and (picked.group(2) if picked.re.groups > 1 else room)
        if picked and where and not any(f in step.observation for f in profile.failed):
            entries.append(MemoryEntry(
                "fact", f"The {picked.group(1)} can be found in the {where}.", fam, ("location",), prov, session,
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
    profile = profile_for(suite.name)
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
        actions = noisy_expert_actions(gold_cache[task], rng, noise, config, profile)
        traj = play(suite, task, actions, session)
        trajectories.append(traj)
        entries.extend(write_entries(traj, profile))
    return MemoryBank(entries), trajectories
