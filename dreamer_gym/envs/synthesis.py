"""What the env tool ``synthesize`` writes: one candidate entry aligned from the region's own trajectories.

No op of the op-level space writes anything the region's entries do not already say, and reading every
trajectory through ``read_trajectory`` would spend a policy's call budget. ``synthesize`` reads the region's
linked trajectories of one task (a family) for it and returns one candidate the policy emits, edits or drops.
Pure text over the public trajectories: no simulator, no gold path, no randomness (same input, same output,
whatever the input's order).

Which trajectories (``which``):

* ``"success"``: the task's trajectories that reached a final score of 100. Where none did, the ones with the
  highest positive final score (a partial run still shows the steps that raised it); where none scored above 0,
  there is nothing to align and the result is ``None``;
* ``"all"``: every trajectory of the task, failed runs included.

Support (``min_support`` in (0, 1]): a step or fact is kept when **more than** a ``min_support`` share of the
``n`` chosen trajectories hold it, or all of them (:func:`support_needed`: ``min(n, floor(min_support * n) + 1)``).
The default 0.5 is the op rules' strict majority (:mod:`dreamer_gym.envs.op_rules`: both of two, two of three,
three of four; all of one); 1.0 asks every chosen trajectory.

What it writes (``kind``):

* ``"procedure"``: each chosen trajectory read as the writer's verbatim procedure would read it (its actions
  after the start step; goal: the suite profile's goal clause of its task text,
  :func:`dreamer_gym.acquisition.write_entries`); the reference is the one the others support most
  (:func:`~dreamer_gym.envs.op_rules.cleanest`), its supported steps kept in order and supported steps it
  skipped inserted (:func:`~dreamer_gym.envs.op_rules.consensus_steps`, ``slots=True``): words that differ
  between variations become ``<slot>``s, goal words stay concrete; a step that is nothing but slots (the runs
  did different things there) is left out. Written ``"To GOAL: s1, s2, ..., sn."``;
* ``"fact"``: the writer's location facts ("The X can be found in the Y.") held by enough of the chosen
  trajectories, most supported first, joined as one entry.

The text is cut at a whole step or fact to ``max_tokens`` (:func:`~dreamer_gym.memory.tokens.count_tokens`) and
``max_tokens * CHARS_PER_TOKEN`` characters, the limits ``emit`` checks. The candidate cites every trajectory it
was aligned from, whole (``Provenance(id, 0, len(steps) - 1)``): the support a step or fact had is a share of them.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from dreamer_gym.acquisition import profile_for, write_entries
from dreamer_gym.contract.definition import CHARS_PER_TOKEN
from dreamer_gym.envs.op_rules import Procedure, cleanest, consensus_steps, fit, parse_procedure
from dreamer_gym.memory import Provenance, Trajectory

WHICH: tuple[str, ...] = ("success", "all")
SYNTHESIS_KINDS: tuple[str, ...] = ("procedure", "fact")
SUCCESS_SCORE = 100.0  # a ScienceWorld run that reached this final score completed its task
# a step that is nothing but slots ("<object 2>": the runs did different things there) tells a reader nothing to do
_SLOT = re.compile(r"<[^<>]*>")
_NUMBERED_SLOT = re.compile(r"<([^<>]*) \d+>")  # as op_rules.slot_form names them: <object 1>, <box 2>


@dataclass(frozen=True)
class Candidate:
    """One synthesized entry, not yet filed: ``emit`` files it as is (:meth:`emit_call`)."""

    kind: str  # "procedure" | "fact"
    text: str  # within max_tokens (count_tokens) and max_tokens * CHARS_PER_TOKEN characters
    provenance: tuple[Provenance, ...]  # whole-trajectory ranges of the trajectories it came from, sorted
    support: int  # trajectories the candidate was aligned from
    task: str

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "text": self.text, "provenance": [p.to_dict() for p in self.provenance],
                "support": self.support, "task": self.task}

    def emit_call(self) -> dict[str, Any]:
        """The tool call that files this candidate unchanged."""
        return {"tool": "emit", "kind": self.kind, "text": self.text,
                "provenance": [p.to_dict() for p in self.provenance]}


def synthesis_tasks(trajectories: Iterable[Trajectory]) -> tuple[str, ...]:
    """The tasks (families) the region's linked trajectories were played for, sorted: what ``task`` may name."""
    return tuple(sorted({t.family for t in trajectories}))


def support_needed(n: int, min_support: float) -> int:
    """How many of ``n`` trajectories must hold a step or fact: more than a ``min_support`` share, or all ``n``
    (0.5 of 2 is 2, of 3 is 2, of 4 is 3; 1.0 of n is n). The 1e-9 absorbs float error (0.29 * 100)."""
    return max(1, min(n, math.floor(min_support * n + 1e-9) + 1))


def chosen_trajectories(trajectories: Iterable[Trajectory], task: str, which: str = "success") -> list[Trajectory]:
    """The trajectories of ``task`` a candidate is aligned from (see the module docstring), by (session, id)."""
    if which not in WHICH:
        raise ValueError(f"Expected `which` to be one of {WHICH}, got {which!r}")
    runs = sorted({t.id: t for t in trajectories if t.family == task}.values(), key=lambda t: (t.session, t.id))
    if which == "all":
        return runs
    done = [t for t in runs if t.final_score >= SUCCESS_SCORE]
    if done:
        return done
    best = max((t.final_score for t in runs), default=0.0)
    return [t for t in runs if t.final_score == best] if best > 0 else []


def writer_procedure(traj: Trajectory, suite: str = "scienceworld") -> Procedure | None:
    """``traj`` as the writer's verbatim procedure entry reads (:func:`~dreamer_gym.acquisition.write_entries`:
    its actions after the start step, whatever its score), parsed as the op rules parse that entry; ``None`` for a
    run without an action."""
    text = f"To {profile_for(suite).goal(traj.task_description)}: " + ", ".join(s.action for s in traj.steps[1:]) + "."
    return parse_procedure({"id": traj.id, "kind": "procedure", "text": text, "session": traj.session})


def _cut(parts: Sequence[str], joiner: str, max_tokens: int, head: str = "", tail: str = "") -> str | None:
    """``fit`` within both limits ``emit`` checks; ``None`` when not even the first part fits."""
    cap = max_tokens * CHARS_PER_TOKEN
    room = 0
    while room < len(parts) and len(head + joiner.join(parts[: room + 1]) + tail) <= cap:
        room += 1
    text = fit(parts[:room], joiner, max_tokens, head=head, tail=tail)
    return text if room and text != head + tail else None


def _renumbered(steps: Sequence[str]) -> list[str]:
    """Slots numbered 1, 2, ... per name again in order of appearance (a left-out step leaves no gap)."""
    names: dict[str, str] = {}
    per_head: Counter[str] = Counter()

    def rename(found: re.Match[str]) -> str:
        if found.group(0) not in names:
            head = found.group(1)
            per_head[head] += 1
            names[found.group(0)] = f"<{head} {per_head[head]}>"
        return names[found.group(0)]
    return [_NUMBERED_SLOT.sub(rename, s) for s in steps]


def _procedure_text(procedures: Sequence[Procedure], need: int, max_tokens: int) -> str | None:
    reference = cleanest(procedures, procedures)
    steps = _renumbered([s for s in consensus_steps(reference, procedures, slots=True, need=need)
                         if _SLOT.sub("", s).strip()])
    return _cut(steps, ", ", max_tokens, head=f"To {reference.goal}: ", tail=".") if steps else None


def _fact_text(runs: Sequence[Trajectory], need: int, max_tokens: int, suite: str) -> str | None:
    profile = profile_for(suite)
    seen: Counter[str] = Counter()
    first: dict[str, int] = {}
    for t in runs:
        for text in dict.fromkeys(e.text for e in write_entries(t, profile) if e.kind == "fact"):
            seen[text] += 1
            first.setdefault(text, len(first))
    facts = sorted((f for f, n in seen.items() if n >= need), key=lambda f: (-seen[f], first[f]))
    return _cut(facts, " ", max_tokens) if facts else None


def synthesize(trajectories: Sequence[Trajectory], task: str, which: str = "success", min_support: float = 0.5,
               kind: str = "procedure", max_tokens: int = 320, suite: str = "scienceworld") -> Candidate | None:
    """One candidate entry of ``kind`` for ``task`` from ``trajectories`` (the region's linked ones); ``None``
    when there is nothing to synthesize: no chosen trajectory of the task, a procedure from one run alone (it
    would be that run's verbatim writer entry, the same entry, id included, as the region holds: ``keep`` files
    it, ``emit`` refuses it), or no step or fact with the support asked for (see the module docstring for
    ``which`` and ``min_support``). A fact entry from one run is written: it joins the run's facts into one.

    Example:
        >>> from dreamer_gym.pool import load_pool
        >>> runs = list(load_pool("scienceworld-v0").trajectories.values())
        >>> synthesize(runs, "find-living-thing").text[:40]
        'To find a(n) living thing: open door to '
    """
    if kind not in SYNTHESIS_KINDS:
        raise ValueError(f"Expected `kind` to be one of {SYNTHESIS_KINDS}, got {kind!r}")
    if isinstance(min_support, bool) or not isinstance(min_support, (int, float)) or not 0 < min_support <= 1:
        raise ValueError(f"Expected `min_support` in (0, 1], got {min_support!r}; pass e.g. min_support=0.5")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ValueError(f"Expected `max_tokens` to be a positive int, got {max_tokens!r}; pass e.g. max_tokens=320")
    runs = chosen_trajectories(trajectories, task, which)
    if kind == "procedure":
        procedures = {t.id: p for t in runs if (p := writer_procedure(t, suite)) is not None}
        runs = [t for t in runs if t.id in procedures]
    if not runs or (kind == "procedure" and len(runs) < 2):
        return None  # one run aligns with nothing: its procedure is the writer's own entry (see the docstring)
    need = support_needed(len(runs), min_support)
    if kind == "procedure":
        text = _procedure_text([procedures[t.id] for t in runs], need, max_tokens)
    else:
        text = _fact_text(runs, need, max_tokens, suite)
    if text is None:
        return None
    provenance = tuple(sorted(Provenance(t.id, 0, len(t.steps) - 1) for t in runs))
    return Candidate(kind, text, provenance, len(runs), task)


__all__ = ["SYNTHESIS_KINDS", "WHICH", "Candidate", "chosen_trajectories", "support_needed", "synthesis_tasks",
           "synthesize", "writer_procedure"]
