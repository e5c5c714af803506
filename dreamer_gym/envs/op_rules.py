"""What the op-level action space's ``merge`` and ``abstract`` write: documented rules, no LLM.

A region holds several verbatim procedures of one family, each from one noisy episode: the expert's
detours, wrong steps and skipped steps are in them, and each names its own variation's objects. The
rules read the region as evidence (never the env's internals, never a gold path):

* a step's **template** is the step with every *variable* word masked, a variable word being one that
  does not occur in the steps of every procedure of the region ("focus on blue jay" and "focus on
  counter" share the template "focus on *");
* a template is **supported** when a strict majority of the region's procedures contain it (both of
  two; all of one). Detours and wrong steps are random, so they are rarely supported; the steps of
  the task are in every episode that reached a score;
* :func:`consensus_steps` keeps the reference procedure's supported steps and inserts, after their
  predecessor, supported steps the reference skipped; with ``slots=True``, a run of variable words that
  does not occur in the reference's goal becomes a ``<slot>`` named by the word after it (``<box 1>``),
  so the reader fills it from the task text or what it sees; goal words stay concrete, since a reader
  maps them from the goal (:mod:`dreamer_gym.agents.analogy`).

``abstract`` rewrites one procedure that way; ``merge`` writes one entry from every merged entry: the
consensus of the merged procedures (of the region's, when one is merged; reference: the latest session's), then the distinct sentences of
the merged facts, insights and pitfalls, cut to the entry token limit at a whole step or sentence.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import lru_cache
from typing import Any

from dreamer_gym.memory.tokens import count_tokens

_WORD = re.compile(r"[a-z0-9]+(?:['-][a-z0-9]+)*")
_PROCEDURE = re.compile(r"^To (.+?): (.+?)\.?\s*$", re.S)


@dataclass(frozen=True)
class Procedure:
    """A procedure entry read as a goal and its comma-separated steps."""

    entry_id: str
    session: int
    goal: str
    steps: tuple[str, ...]


def parse_procedure(entry: dict[str, Any]) -> Procedure | None:
    """``"To GOAL: s1, s2, ..., sn."`` as a :class:`Procedure`; ``None`` for any other text."""
    found = _PROCEDURE.match(entry["text"].strip())
    if entry["kind"] != "procedure" or not found:
        return None
    steps = tuple(s.strip() for s in found.group(2).split(",") if s.strip())
    return Procedure(entry["id"], int(entry.get("session", 0)), found.group(1).strip(), steps) if steps else None


@lru_cache(maxsize=65_536)
def _words(text: str) -> tuple[str, ...]:
    return tuple(_WORD.findall(text.lower()))


def common_words(procedures: Sequence[Procedure]) -> frozenset[str]:
    """Words in the steps of every procedure (the rest are variable)."""
    sets = [{w for s in p.steps for w in _words(s)} for p in procedures]
    return frozenset(set.intersection(*sets)) if sets else frozenset()


@lru_cache(maxsize=65_536)
def template(step: str, common: frozenset[str]) -> str:
    """The step with each run of variable words masked as ``*``."""
    out: list[str] = []
    for word in _words(step):
        token = word if word in common else "*"
        if not (token == "*" and out and out[-1] == "*"):
            out.append(token)
    return " ".join(out)


@lru_cache(maxsize=4_096)
def goal_renaming(goal: str, reference_goal: str) -> tuple[tuple[str, str], ...]:
    """``(phrase, replacement)`` where ``goal`` differs from ``reference_goal`` by a replaced phrase."""
    a, b = _words(goal), _words(reference_goal)
    pairs = []
    for op, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "replace":
            pairs.append((" ".join(a[i1:i2]), " ".join(b[j1:j2])))
    return tuple(pairs)


@lru_cache(maxsize=4_096)
def renamed(procedure: Procedure, reference: Procedure) -> Procedure:
    """``procedure`` with its goal's variation-specific phrases replaced by the reference's."""
    steps = [" ".join(_words(s)) for s in procedure.steps]
    for phrase, replacement in goal_renaming(procedure.goal, reference.goal):
        pattern = re.compile(r"(?<![\w-])" + re.escape(phrase) + r"(?![\w-])")
        steps = [pattern.sub(replacement, s) for s in steps]
    return Procedure(procedure.entry_id, procedure.session, reference.goal, tuple(steps))


def _multiplicity(evidence: Sequence[Procedure], key: Callable[[str], str], need: int) -> dict[str, int]:
    """How many times a strict majority of the procedures hold each key (0 where fewer than ``need`` do)."""
    counts: dict[str, list[int]] = {}
    for p in evidence:
        for k, n in Counter(key(s) for s in p.steps).items():
            counts.setdefault(k, []).append(n)
    return {k: sorted(ns, reverse=True)[need - 1] for k, ns in counts.items() if len(ns) >= need}


def cleanest(procedures: Sequence[Procedure], evidence: Sequence[Procedure]) -> Procedure:
    """The procedure whose steps the evidence supports most often (share of steps), then the latest."""
    def share(p: Procedure) -> float:
        others = [renamed(q, p) for q in evidence]
        need = len(others) // 2 + 1 if len(others) >= 2 else 1
        exact = _multiplicity(others, lambda s: s, need)
        return sum(1 for s in renamed(p, p).steps if exact.get(s, 0)) / len(p.steps)
    return max(procedures, key=lambda p: (share(p), p.session, p.entry_id))


def consensus_steps(reference: Procedure, evidence: Sequence[Procedure], slots: bool = False,
                    need: int | None = None) -> list[str]:
    """The reference's supported steps, plus supported steps it skipped (see the module docstring). ``need``:
    how many procedures must hold a step for it to be supported (default: a strict majority; ``synthesize``
    passes its ``min_support``'s, :mod:`dreamer_gym.envs.synthesis`)."""
    evidence = [renamed(p, reference) for p in (list(evidence) or [reference])]
    if reference.entry_id not in {p.entry_id for p in evidence}:
        evidence.append(renamed(reference, reference))
    ref = next(p for p in evidence if p.entry_id == reference.entry_id)
    common = common_words(evidence)
    if need is None:
        need = len(evidence) // 2 + 1 if len(evidence) >= 2 else 1
    exact = _multiplicity(evidence, lambda s: s, need)
    shape = _multiplicity(evidence, lambda s: template(s, common), need)
    result: list[str] = []
    used_steps: Counter[str] = Counter()
    used_shapes: Counter[str] = Counter()
    for step, original in zip(ref.steps, reference.steps):
        tpl = template(step, common)
        if used_steps[step] < exact.get(step, 0) or used_shapes[tpl] < shape.get(tpl, 0):
            result.append(original)
            used_steps[step] += 1
            used_shapes[tpl] += 1
    for other in evidence:
        if other.entry_id == reference.entry_id:
            continue
        position = 0
        for step in other.steps:
            tpl = template(step, common)
            if not exact.get(step):
                continue
            match = next((k for k in range(position, len(result)) if template(" ".join(_words(result[k])), common) == tpl), None)
            if match is not None:
                position = match + 1
            elif all(template(" ".join(_words(s)), common) != tpl for s in result):
                result.insert(position, step)
                position += 1
    return slot_form(result, common, reference.goal) if slots else result


def slot_form(steps: Sequence[str], common: frozenset[str], goal: str) -> list[str]:
    """Runs of variable words that are not goal words become ``<slot>``s named by the word after them."""
    goal_words = set(_words(goal))
    names: dict[str, str] = {}
    per_head: Counter[str] = Counter()
    out = []
    for step in steps:
        words = step.split()
        rewritten: list[str] = []
        i = 0
        while i < len(words):
            j = i
            while j < len(words) and _variable(words[j], common, goal_words):
                j += 1
            if j == i:
                rewritten.append(words[i])
                i += 1
                continue
            phrase = " ".join(words[i:j])
            if phrase not in names:
                head = words[j] if j < len(words) and words[j].isalpha() else "object"
                per_head[head] += 1
                names[phrase] = f"{head} {per_head[head]}"
            rewritten.append(f"<{names[phrase]}>")
            i = j
        out.append(" ".join(rewritten))
    return out


def _variable(word: str, common: frozenset[str], goal_words: set[str]) -> bool:
    tokens = _words(word)
    return bool(tokens) and all(t not in common and t not in goal_words for t in tokens)


def fit(parts: Sequence[str], joiner: str, max_tokens: int, head: str = "", tail: str = "") -> str:
    """``head + joiner.join(parts) + tail`` with as many leading parts as fit in ``max_tokens``."""
    kept: list[str] = []
    for part in parts:
        candidate = head + joiner.join([*kept, part]) + tail
        if count_tokens(candidate) > max_tokens:
            break
        kept.append(part)
    return head + joiner.join(kept) + tail


def abstract_text(entry: dict[str, Any], region: Sequence[dict[str, Any]], max_tokens: int,
                  slots: bool = False) -> str | None:
    """One procedure rewritten as the consensus of the region's procedures; ``None`` for other entries."""
    reference = parse_procedure(entry)
    if reference is None:
        return None
    evidence = [p for p in map(parse_procedure, region) if p is not None]
    steps = consensus_steps(reference, evidence, slots=slots)
    return fit(steps, ", ", max_tokens, head=f"To {reference.goal}: ", tail=".") if steps else None


def merge_text(entries: Sequence[dict[str, Any]], region: Sequence[dict[str, Any]], max_tokens: int,
               slots: bool = False) -> tuple[str, str] | None:
    """``(kind, text)`` of the one entry that ``entries`` merge into, or ``None`` when they hold no text."""
    procedures = [p for p in map(parse_procedure, entries) if p is not None]
    sentences = list(dict.fromkeys(e["text"].strip() for e in entries if parse_procedure(e) is None))
    if procedures:
        evidence = [p for p in map(parse_procedure, region) if p is not None]
        reference = cleanest(procedures, procedures if len(procedures) > 1 else evidence)
        steps = consensus_steps(reference, procedures if len(procedures) > 1 else evidence, slots=slots)
        body = fit(steps, ", ", max_tokens, head=f"To {reference.goal}: ", tail=".")
        return "procedure", fit(sentences, " ", max_tokens, head=body + (" " if sentences else ""))
    if not sentences:
        return None
    kind = Counter(e["kind"] for e in entries).most_common(1)[0][0]
    return kind, fit(sentences, " ", max_tokens)
