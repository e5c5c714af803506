"""The bank context of a region: what the rest of the bank already knows of the region's tasks (issue 40, item 2).

A consolidator that sees only its region cannot tell a window whose tasks the bank already covers (dropping it
costs little) from one that brought a task the bank never saw (dropping it loses the only lesson): the audit's best
predictor of a window's best rule, ``novel_tasks`` (``research/window_evidence.py``), lived outside the region.
This module puts it, and what surrounds it, in front of the policy: per task the region's own entries were
written for, the older entries of that task (inside the region as retrieved entries, or outside it), their kinds,
how old the newest is, and whether the task is covered at all.

"Own" entries are those written inside the region's span: for ``window:A-B``, sessions ``A..B``; for a family
region, every entry of the region. "Older" means a session before the region's first own session: ``A`` for a
window, the oldest session among a family region's entries (so a family region holding every entry of its
family has nothing older, and its context says so: it is informative only where the region was capped).

Pure functions, no env: the env computes :func:`bank_context` once per reset and shows :func:`render_context`
in the observation and :func:`context_dicts` in ``info["bank_context"]``; op-level policies read
:func:`context_features`, one row per entry, appended after the entry features.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from dreamer_gym.memory import KINDS, MemoryBank, MemoryEntry, Region, Trajectory, parse_window

HEADER = "Bank context (outside this region; read_entry/search reach it, read-only):"
# procedures first: the kind whose loss costs most, and the one the bank-context rule keeps
_RENDER_KINDS: tuple[str, ...] = ("procedure", "fact", "insight", "pitfall")

CONTEXT_FEATURES: tuple[str, ...] = (
    "own_entry", "task_covered", "task_older_outside_div_10", "task_older_procedures", "task_age_div_10",
    "task_retrieved_div_10", "task_own_share",
)


@dataclass(frozen=True)
class TaskContext:
    """What the bank knows of one task (family) the region's own entries were written for."""

    task: str                 # a family the region's own entries were written for
    own_entries: int          # region entries of this task written inside the region's span
    retrieved: int            # region entries of this task from older sessions (window regions' retrieved part)
    retrieved_sessions: tuple[int, ...]   # the sessions those retrieved entries were written in (sorted, distinct)
    older_outside: dict[str, int]   # older entries of this task OUTSIDE the region, by kind (all KINDS, 0s kept)
    newest_older_session: int | None   # newest older entry of this task anywhere in the bank (in or out)
    age: int | None           # region start session - newest_older_session
    covered: bool             # the bank held an older entry of this task before the region's span


def _own_span(region_entries: Sequence[MemoryEntry], key: str) -> tuple[int, int]:
    """``(first, last)`` sessions of the region's own span (inclusive): a window's ``A..B``; a family region's
    oldest session to its newest."""
    window = parse_window(key)
    if window is not None:
        return window
    sessions = [e.session for e in region_entries]
    return min(sessions), max(sessions)


def bank_context(bank: MemoryBank, region: Region, key: str,
                 trajectories: Mapping[str, Trajectory]) -> tuple[TaskContext, ...]:
    """One :class:`TaskContext` per task the region's own entries were written for, sorted by task.

    Args:
        bank: bank v0, the bank the region was selected from (for a window, :func:`~dreamer_gym.memory.bank_at`'s
            bank at the window's close; a bank holding later sessions gives the same context, since only sessions
            before the region's span count as older).
        region: the region, with a window's retrieved entries where the pool's scheme adds them.
        key: the region key (``window:A-B`` or a family name): it fixes the own span.
        trajectories: the pool's trajectories. Accepted so the env passes what it passes to
            ``RegionScheme.select``; the tasks are read off the entries' families, which equal their
            trajectories' families in every shipped pool, so none is looked up today.

    Returns:
        ``()`` for an empty region.
    """
    del trajectories  # see Args: tasks come from entry families
    entries = []
    for entry_id in region.entry_ids:
        entry = bank.get(entry_id)
        if entry is None:
            raise ValueError(f"Region {region.name!r} names entry {entry_id!r}, which `bank` does not hold: pass the "
                             "bank the region was selected from (for a window, bank_at(bank, key))")
        entries.append(entry)
    if not entries:
        return ()
    first, last = _own_span(entries, key)
    own = Counter(e.family for e in entries if first <= e.session <= last)
    retrieved: dict[str, list[int]] = defaultdict(list)
    for e in entries:
        if e.session < first:
            retrieved[e.family].append(e.session)
    in_region = set(region.entry_ids)
    outside: dict[str, Counter[str]] = defaultdict(Counter)
    newest: dict[str, int] = {}
    for e in bank:  # one pass over the bank: the older entries of the region's own tasks
        if e.session >= first or e.family not in own:
            continue
        newest[e.family] = max(newest.get(e.family, e.session), e.session)
        if e.id not in in_region:
            outside[e.family][e.kind] += 1
    out = []
    for task in sorted(own):
        sessions = retrieved.get(task, [])
        newest_older = newest.get(task)
        out.append(TaskContext(
            task=task, own_entries=own[task], retrieved=len(sessions), retrieved_sessions=tuple(sorted(set(sessions))),
            older_outside={kind: outside[task][kind] for kind in KINDS}, newest_older_session=newest_older,
            age=None if newest_older is None else first - newest_older, covered=newest_older is not None))
    return tuple(out)


def context_dicts(ctx: Sequence[TaskContext]) -> list[dict[str, Any]]:
    """``info["bank_context"]``: one plain JSON-able dict per task, the :class:`TaskContext` fields by name."""
    out = []
    for task in ctx:
        item = asdict(task)
        item["retrieved_sessions"] = list(task.retrieved_sessions)
        item["older_outside"] = dict(task.older_outside)
        out.append(item)
    return out


def _sessions(sessions: tuple[int, ...]) -> str:
    """``session 3``, ``sessions 3, 5``, or for three or more the span ``sessions 3-9`` (a line stays short;
    ``info["bank_context"]`` lists them all)."""
    if len(sessions) == 1:
        return f"session {sessions[0]}"
    if len(sessions) == 2:
        return f"sessions {sessions[0]}, {sessions[1]}"
    return f"sessions {sessions[0]}-{sessions[-1]}"


def _render_task(task: TaskContext) -> str:
    """One line, e.g. ``boil: own 3; retrieved 2 (sessions 3, 5); older outside: procedure 1, fact 2, insight 1,
    pitfall 0; covered, age 2`` (age: sessions from the newest older entry of the task to the region's start)."""
    retrieved = f"retrieved {task.retrieved}" + (f" ({_sessions(task.retrieved_sessions)})" if task.retrieved else "")
    if not task.covered:
        return f"{task.task}: own {task.own_entries}; {retrieved}; older: none; NOT covered (new task)"
    kinds = ", ".join(f"{kind} {task.older_outside.get(kind, 0)}" for kind in _RENDER_KINDS)
    return f"{task.task}: own {task.own_entries}; {retrieved}; older outside: {kinds}; covered, age {task.age}"


def render_context(ctx: Sequence[TaskContext]) -> str:
    """The observation's "Bank context" block: the header, then one line per task (at most about 140 characters
    with ScienceWorld's longest family name and the r3 pool's largest counts, so ten tasks fit in 1,500)."""
    lines = [_render_task(task) for task in ctx] or ["(the region has no own entries)"]
    return "\n".join([HEADER, *lines])


def _foreign_row(retrieved: int) -> dict[str, float]:
    """The context columns of a task the region holds only retrieved entries of: what the region itself shows.
    The entry is older and in the bank, so the task is covered; the retrieved count is read off the region;
    older-outside, procedures and age need the bank, which the context holds for the region's own tasks only,
    so they stay 0."""
    return {"own_entry": 0.0, "task_covered": 1.0, "task_retrieved_div_10": retrieved / 10}


def context_features(region_dicts: Sequence[dict[str, Any]], ctx: Sequence[TaskContext],
                     max_entries: int) -> np.ndarray:
    """``(max_entries, len(CONTEXT_FEATURES))`` float32 columns of ``info["region"]`` items, zero-padded and
    clipped to ``[0, 1000]``: per entry, whether it is the region's own, and its task's context.

    An entry is own when its task has a context and its session is not one of that task's retrieved sessions
    (retrieved sessions precede the region's span, own ones lie in it, so the two never share a session). An
    entry of a task with no context (retrieved for a task the region's own entries were not written for) gets
    :func:`_foreign_row`: ``own_entry`` 0, ``task_covered`` 1, ``task_retrieved_div_10`` counted off the region,
    the rest 0.
    """
    col = {name: i for i, name in enumerate(CONTEXT_FEATURES)}
    feats = np.zeros((max_entries, len(CONTEXT_FEATURES)), dtype=np.float32)
    by_task = {task.task: task for task in ctx}
    own_total = sum(task.own_entries for task in ctx)
    families = Counter(entry.get("family", "") for entry in region_dicts)
    for i, entry in enumerate(region_dicts[:max_entries]):
        task = by_task.get(entry.get("family", ""))
        if task is None:
            row = _foreign_row(families[entry.get("family", "")])
        else:
            row = {"own_entry": float(entry.get("session", 0) not in task.retrieved_sessions),
                   "task_covered": float(task.covered),
                   "task_older_outside_div_10": sum(task.older_outside.values()) / 10,
                   "task_older_procedures": task.older_outside.get("procedure", 0),
                   "task_age_div_10": (task.age or 0) / 10, "task_retrieved_div_10": task.retrieved / 10,
                   "task_own_share": task.own_entries / own_total if own_total else 0.0}
        for name, value in row.items():
            feats[i, col[name]] = value
    return np.clip(feats, 0.0, 1_000.0)


# Region-level summaries of the context, for studies that ask whether the context predicts a region's best rule
# (issue 40's "how well the bank context predicts"): the table a rule-selector or a depth-2 tree reads.
REGION_CONTEXT_FEATURES: tuple[str, ...] = (
    "own_tasks", "uncovered_tasks", "covered_share", "older_outside_per_task", "older_procedures_per_task",
    "youngest_age", "retrieved_share",
)
NO_AGE = 1_000.0  # ``youngest_age`` of a region none of whose tasks the bank held before: older than any age seen


def region_context_features(ctx: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """:data:`REGION_CONTEXT_FEATURES` of one region from ``info["bank_context"]`` (:func:`context_dicts`):
    how many own tasks, how many the bank never saw (the bank-context rule's condition is ``uncovered_tasks == 0``),
    the older entries outside the region per task (all kinds, procedures), the age of the youngest covered task's
    newest older entry (:data:`NO_AGE` if none is covered), and the share of the region's entries that were
    retrieved from older sessions."""
    n = len(ctx)
    covered = [t for t in ctx if t["covered"]]
    own = sum(t["own_entries"] for t in ctx)
    retrieved = sum(t["retrieved"] for t in ctx)
    return {"own_tasks": float(n), "uncovered_tasks": float(n - len(covered)),
            "covered_share": len(covered) / n if n else 1.0,
            "older_outside_per_task": sum(sum(t["older_outside"].values()) for t in ctx) / n if n else 0.0,
            "older_procedures_per_task": sum(t["older_outside"].get("procedure", 0) for t in ctx) / n if n else 0.0,
            "youngest_age": float(min((t["age"] for t in covered), default=NO_AGE)),
            "retrieved_share": retrieved / (own + retrieved) if own + retrieved else 0.0}
