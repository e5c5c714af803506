"""What a policy needs to see before it merges a group: which tasks the group's entries are about.

``merge`` folds a group into one entry by majority rules (:mod:`dreamer_gym.envs.op_rules`): on a group of
one task's procedures it is a good compression; on a group that mixes tasks (a ``window:A-B`` region mixes
the families the agent met, and a family can hold sibling goals) it keeps the majority task's steps and loses
the others'. A kind, tags, a count and a preview (all a policy saw before issue 31) cannot tell those apart;
the goals can. This module reads them off the writer's own sentences (:func:`dreamer_gym.acquisition.write_entries`)
and computes, per group and per entry, what GRPO's ``ops`` listing and the op-level features show.

Pure functions over ``info["region"]`` items and a group index per entry (``entry_classes``); no env, no text
generation. ``family`` is read with ``entry.get("family", "")``: an item without it counts no family.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from dreamer_gym.envs.op_rules import parse_procedure

# The writer's sentences that name a goal (acquisition.write_entries), anchored at both ends: goals hold
# commas, quotes and "which is located around ..." clauses, so the goal is what lies between the fixed words.
_GOAL_SENTENCES: tuple[re.Pattern[str], ...] = (
    re.compile(r"^While trying to (.+), '.*' raised the score from \S+ to \S+?\.?$", re.S),
    re.compile(r"^Do not .+? when trying to (.+): the score dropped to \S+?\.?$", re.S),
    re.compile(r"^An attempt to (.+) failed after \d+ steps \(score \S+\)\.?$", re.S),
)
# Any other sentence that still says what it was for (a writer that words it differently)
_GOAL_CLAUSE = re.compile(r"\b(?:when trying to|while trying to|trying to)\s+(.+?)(?:[:;]|, '|$)", re.S | re.I)


def normal_goal(goal: str) -> str:
    """One spelling per goal: lower case, single spaces, no trailing full stop."""
    return " ".join(goal.lower().split()).rstrip(".")


def entry_goal(entry: dict[str, Any]) -> str | None:
    """The goal an entry was written for: a procedure's ``To GOAL:``, an insight's or pitfall's "trying to
    GOAL" / "An attempt to GOAL failed"; ``None`` for entries that name none (location facts)."""
    return _goal(entry["kind"], entry["text"])


@lru_cache(maxsize=65_536)
def _goal(kind: str, text: str) -> str | None:
    """Cached by text: a training run meets the same entries again, and parsing a long procedure costs ~0.2 ms."""
    procedure = parse_procedure({"id": "", "kind": kind, "text": text}) if kind == "procedure" else None
    if procedure is not None:
        return normal_goal(procedure.goal)
    text = text.strip()
    for pattern in _GOAL_SENTENCES:
        found = pattern.match(text)
        if found:
            return normal_goal(found.group(1))
    found = _GOAL_CLAUSE.search(text)
    return normal_goal(found.group(1)) if found else None


@dataclass(frozen=True)
class GroupEvidence:
    """One group's evidence. ``goals``: each distinct goal and how many of the group's entries name it, most
    common first; ``support``: the share of the group's procedures whose goal is the procedures' majority goal
    (what ``merge`` keeps: 1.0 loses no task), ``None`` for a group without procedures."""

    entries: int
    goals: tuple[tuple[str, int], ...]
    families: int
    procedures: int
    support: float | None

    @property
    def tasks(self) -> int:
        """How many distinct tasks (goals) the group holds."""
        return len(self.goals)


def group_evidence(region: Sequence[dict[str, Any]], groups: Sequence[int],
                   goals: Sequence[str | None] | None = None) -> list[GroupEvidence]:
    """Per group (in group order ``0..max(groups)``), its :class:`GroupEvidence` (``goals``: each entry's
    :func:`entry_goal`, where the caller has them)."""
    goals = [entry_goal(e) for e in region] if goals is None else goals
    out = []
    for c in range(max(groups, default=-1) + 1):
        members = [i for i, g in enumerate(groups) if g == c]
        named = Counter(goals[i] for i in members if goals[i] is not None)
        procedures = Counter(goals[i] for i in members if region[i]["kind"] == "procedure" and goals[i] is not None)
        n_procedures = sum(procedures.values())
        support = procedures.most_common(1)[0][1] / n_procedures if n_procedures else None
        families = {region[i].get("family", "") for i in members} - {""}
        ranked = tuple(sorted(named.items(), key=lambda item: (-item[1], item[0])))
        out.append(GroupEvidence(len(members), ranked, len(families), n_procedures, support))
    return out


@dataclass(frozen=True)
class EntryEvidence:
    """One entry's view of its group: the group's distinct goals, the share of the group's goal-naming
    entries that name this entry's goal (0 where it names none), the group's merge support (1.0 for a
    group without procedures: majority merging drops no task there) and the region's distinct families."""

    group_goals: int
    goal_share: float
    group_support: float
    region_families: int


def entry_evidence(region: Sequence[dict[str, Any]], groups: Sequence[int]) -> list[EntryEvidence]:
    """Per entry, its :class:`EntryEvidence` (the op-level features' group columns)."""
    goals = [entry_goal(e) for e in region]
    evidence = group_evidence(region, groups, goals)
    families = len({e.get("family", "") for e in region} - {""})
    out = []
    for goal, c in zip(goals, groups):
        group = evidence[c]
        named = sum(n for _, n in group.goals)
        share = dict(group.goals).get(goal, 0) / named if goal is not None and named else 0.0
        support = 1.0 if group.support is None else group.support
        out.append(EntryEvidence(group.tasks, share, support, families))
    return out
