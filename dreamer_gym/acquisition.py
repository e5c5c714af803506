"""Fast, online memory acquisition: a noisy expert plays TRAIN variations session by session and a
rule-based writer records typed entries with provenance after each episode.

Two schedules (:data:`SCHEDULES`, :func:`plan_episodes`): ``rounds`` (the -v0 pools: each session plays every
family once, so a family's entries are alike across banks) and ``interleaved`` (each episode is its own
session and its family is drawn from the bank's own task mix, so a time window of sessions mixes the tasks
the agent met, in its proportions; issue 31). ``skill`` scales the expert's noise (a novice's detours, skips,
wrong steps and failed runs).

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

SCHEDULES: tuple[str, ...] = ("rounds", "interleaved")
# the plan's draws come from their own stream, so the rounds schedule's play stream (and its pinned hashes) is untouched
_PLAN_STREAM = 31

# the label of a trajectory's first step (the start observation). Kept for every suite, whatever its look
# action: it is part of every stored trajectory's id, so changing it would move every pinned pool hash.
START_LABEL = "look around"


@dataclass(frozen=True)
class AcquisitionConfig:
    """Who writes one bank and on what schedule. Defaults are the -v0 pools' (``rounds``, skill 1)."""

    families: tuple[str, ...]
    sessions: int = field(default=4, metadata={"help": "rounds: sessions; each plays every family once"})
    train_variations: int = field(default=6, metadata={"help": "first N train variations sampled from"})
    detour_prob: float = 0.15
    skip_prob: float = 0.08
    wrong_prob: float = 0.04
    step_limit: int = 100
    schedule: str = field(default="rounds", metadata={"help": f"one of {SCHEDULES}"})
    episodes: int = field(default=24, metadata={"help": "interleaved: episodes (= sessions) in the bank"})
    skill: float = field(default=1.0, metadata={"help": "noise multiplier: 2.0 a novice, 0.5 an expert"})
    mix_concentration: float = field(default=0.7, metadata={
        "help": "interleaved: Dirichlet concentration of the bank's task mix (small: a few tasks dominate)"})
    early_sessions: int | None = field(default=None, metadata={
        "help": "leading sessions played at double noise (stale entries); None: 1 for rounds, 4 for interleaved"})

    def __post_init__(self) -> None:
        if not self.families:
            raise ValueError("Expected `families` to name at least one task family, got ()")
        for name in ("detour_prob", "skip_prob", "wrong_prob"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"Expected `{name}` in [0, 1], got {value}")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"Expected `schedule` to be one of {SCHEDULES}, got {self.schedule!r}")
        for name in ("sessions", "train_variations", "episodes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"Expected `{name}` to be a positive int, got {value!r}; pass e.g. {name}=4")
        for name in ("skill", "mix_concentration"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 < value < float("inf"):
                raise ValueError(f"Expected `{name}` to be a positive number, got {value!r}; pass e.g. {name}=1.0")
        early = self.early_sessions
        if early is not None and (isinstance(early, bool) or not isinstance(early, int) or early < 0):
            raise ValueError(f"Expected `early_sessions` to be an int >= 0 or None, got {early!r}; "
                             "pass None for the schedule's default")

    @property
    def early(self) -> int:
        """How many leading sessions play at double noise."""
        if self.early_sessions is not None:
            return self.early_sessions
        return 1 if self.schedule == "rounds" else 4


@dataclass(frozen=True)
class AcquisitionPlan:
    """What one bank's agent plays, in order: ``(session, family)`` per episode, and the task mix it was drawn
    from (uniform for ``rounds``). Known before any simulator starts, so a pool records it as bank metadata."""

    jobs: tuple[tuple[int, str], ...]
    mix: dict[str, float]

    def meta(self, config: AcquisitionConfig) -> dict[str, object]:
        """The bank's JSON-able metadata (:attr:`~dreamer_gym.pool.BankPool.bank_meta`): who wrote it, how long
        it ran and which tasks it met."""
        return {"schedule": config.schedule, "episodes": len(self.jobs), "skill": float(config.skill),
                "mix": dict(self.mix)}


def plan_episodes(config: AcquisitionConfig, seed: int) -> AcquisitionPlan:
    """The episode order of one bank: a pure function of ``config`` and ``seed``.

    ``rounds``: every family once per session. ``interleaved``: episode ``i`` is session ``i``, its family drawn
    i.i.d. from a task mix ~ Dirichlet(``mix_concentration``) of the bank's own (a separate random stream from
    play's, so adding the schedule moved no rounds pool's hash).
    """
    families = config.families
    if config.schedule == "rounds":
        jobs = tuple((s, f) for s in range(config.sessions) for f in families)
        return AcquisitionPlan(jobs, {f: round(1.0 / len(families), 4) for f in families})
    rng = np.random.default_rng([seed, _PLAN_STREAM])
    mix = rng.dirichlet(np.full(len(families), float(config.mix_concentration)))
    drawn = rng.choice(len(families), size=config.episodes, p=mix)
    jobs = tuple((i, families[int(k)]) for i, k in enumerate(drawn))
    return AcquisitionPlan(jobs, {f: round(float(p), 4) for f, p in zip(families, mix)})


def bank_configs(
    families: tuple[str, ...], seeds: Sequence[int], episodes: tuple[int, int], skills: Sequence[float],
    **fields: object,
) -> tuple[AcquisitionConfig, ...]:
    """One ``interleaved`` config per bank seed: skills cycle through ``skills`` in seed order, and each bank's
    episode count is drawn from ``episodes`` (inclusive) by its seed, so writers differ in skill and run length."""
    low, high = episodes
    if isinstance(low, bool) or not isinstance(low, int) or not 1 <= low <= high:
        raise ValueError(f"Expected `episodes` to be (low, high) with 1 <= low <= high, got {episodes!r}; "
                         "pass e.g. (16, 32)")
    if not skills:
        raise ValueError("Expected `skills` to name at least one skill, got (); pass e.g. (0.5, 1.0, 2.0)")
    return tuple(
        AcquisitionConfig(families=families, schedule="interleaved", skill=float(skills[i % len(skills)]),
                          episodes=int(np.random.default_rng([seed, _PLAN_STREAM, 1]).integers(low, high + 1)),
                          **fields)  # type: ignore[arg-type]
        for i, seed in enumerate(seeds)
    )


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
    """Build bank v0 and its trajectory store by playing :func:`plan_episodes`'s episodes in order."""
    from tqdm.auto import tqdm

    rng = np.random.default_rng(seed)
    gold = gold or suite.gold_path
    profile = profile_for(suite.name)
    gold_cache: dict[EpisodeTask, tuple[str, ...]] = {}
    trajectories: list[Trajectory] = []
    entries: list[MemoryEntry] = []
    for session, family in tqdm(plan_episodes(config, seed).jobs, desc=f"acquire seed={seed}", disable=not progress):
        train = suite.variations(family, "train")[: config.train_variations]
        task = EpisodeTask(family, int(train[int(rng.integers(len(train)))]))
        if task not in gold_cache:
            gold_cache[task] = tuple(gold(task))
        noise = config.skill * (2.0 if session < config.early else 1.0)  # early sessions are sloppier: stale entries
        actions = noisy_expert_actions(gold_cache[task], rng, noise, config, profile)
        traj = play(suite, task, actions, session)
        trajectories.append(traj)
        entries.extend(write_entries(traj, profile))
    return MemoryBank(entries), trajectories
