"""Fast, online memory acquisition: a noisy expert plays TRAIN variations session by session and a
rule-based writer records typed entries with provenance after each episode.

The result looks like a real fast-written memory: verbatim, variation-specific procedures (with the
detours the expert took), duplicates across sessions, conflicting location facts, stale entries from
early, noisier sessions, and pitfalls written before score drops. Everything is a pure function of
the seed and the simulator, so rebuilding a bank reproduces its hash.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from dreamer_gym.memory import MemoryBank, MemoryEntry, Provenance, Step, Trajectory
from dreamer_gym.suites.base import EpisodeTask, TaskSuite
from dreamer_gym.suites.registry import get_suite_spec
from dreamer_gym.suites.spec import AcquisitionProfile

# the label of a trajectory's first step (the start observation). Kept for every suite, whatever its look
# action: it is part of every stored trajectory's id, so changing it would move every pinned pool hash.
START_LABEL = "look around"


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


def profile_for(suite_name: str) -> AcquisitionProfile:
    """The acquisition profile of a registered suite (its :class:`~dreamer_gym.suites.spec.SuiteSpec`)."""
    return get_suite_spec(suite_name).profile


def noisy_expert_actions(
    gold: Sequence[str], rng: np.random.Generator, noise: float, config: AcquisitionConfig,
    profile: AcquisitionProfile,
) -> list[str]:
    """Perturb a gold path: detours, skipped steps and wrong steps, more of them when ``noise`` is high."""
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
    steps = [Step(START_LABEL, first, 0.0)]
    for action in actions:
        outcome = suite.step(action)
        steps.append(Step(action, outcome.observation, outcome.score))
        if outcome.done:
            break
    return Trajectory(task.family, task.variation, description, tuple(steps), steps[-1].score, session)


def write_entries(traj: Trajectory, profile: AcquisitionProfile) -> list[MemoryEntry]:
    """The rule-based writer: what a fast per-session memory writer records from one trajectory; ``profile``
    (the suite's, :func:`profile_for`) says where it reads locations and what a goal clause is."""
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
        if step.score > previous and step.action != START_LABEL:
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
