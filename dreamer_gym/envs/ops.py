"""The op vocabulary: one operation per region entry, more than keep/drop.

``0`` drop, ``1`` keep (verbatim), ``2`` merge (every merged entry goes into one new entry), ``3`` abstract
(this procedure rewritten as the region's consensus); the texts come from the documented rules of
:mod:`dreamer_gym.envs.op_rules`. On a tool-contract-2 env (:func:`op_names`) a fifth op, ``4`` synthesize,
replaces an entry by the procedure the env's ``synthesize`` tool aligns from the region's trajectories of its
task (one tool call per task, :func:`play_ops`): the only op whose text comes from the trajectories, not from
the region's entries. Three methods speak it, so it lives in the env room below all of them: the
``consensus`` rule (:mod:`dreamer_gym.consolidators.fixed`), GRPO's ``ops`` grammar
(:mod:`dreamer_gym.methods.grpo.commands`) and the op-level policy (:mod:`dreamer_gym.methods.oplevel`, whose
:class:`~dreamer_gym.methods.oplevel.wrapper.OpLevelWrapper` gives it fixed-size spaces for RL libraries).
:func:`plan_calls` turns one op per entry into the env's own tool calls (``keep``, ``emit`` with the entries
as provenance), so a reward earned through ops is the env's commit reward, unchanged.
"""
from __future__ import annotations

import json
from collections import Counter
from collections.abc import Collection, Generator
from typing import Any

import numpy as np

from dreamer_gym.envs.op_rules import abstract_text, merge_text, parse_procedure
from dreamer_gym.envs.tools import BANK_CONTEXT_CONTRACT
from dreamer_gym.envs.toolspec import SYNTHESIS_SOURCES  # ("success", "all"): the order the op asks in
# its home is the wrappers (the group features read it); its callers import it from here, with the ops
from dreamer_gym.envs.wrappers import entry_classes as entry_classes

OPS: tuple[str, ...] = ("drop", "keep", "merge", "abstract")
DROP, KEEP, MERGE, ABSTRACT = range(len(OPS))
SYNTHESIS_CONTRACT = BANK_CONTEXT_CONTRACT  # the tool contract that has the `synthesize` tool
OPS_V2: tuple[str, ...] = (*OPS, "synthesize")  # appended: a contract-2 policy's first four ops mean what they did
SYNTHESIZE = len(OPS)


def op_names(contract: int) -> tuple[str, ...]:
    """The ops of an env of tool contract ``contract``: :data:`OPS` before contract 2 (exactly as trained and
    recorded so far), :data:`OPS_V2` from it on (its ``synthesize`` tool exists there only)."""
    return OPS_V2 if contract >= SYNTHESIS_CONTRACT else OPS


def info_contract(info: dict[str, Any]) -> int:
    """The op-space version an env's ``info`` implies: contract 2 where it carries ``bank_context`` (only a
    contract-2 env's does), else 1 (contracts 0 and 1 share the four ops and the entry features). For callers that
    hold an info but not the env (a consolidator's ``ops(info)``)."""
    return SYNTHESIS_CONTRACT if "bank_context" in info else 1


def synthesis_tasks(region: list[dict[str, Any]], context: list[dict[str, Any]]) -> frozenset[str]:
    """The tasks ``synthesize`` may be played for: the region's own tasks (``info["bank_context"]``'s, so on a
    window with ``window_own_families`` every one its own sessions played, the only ones a new entry may be filed
    under) that some region entry links a trajectory of (the tool aligns the region's linked trajectories; an
    entry's family is its trajectories' in every shipped pool). Conservative on a window without
    ``window_own_families``: a retrieved-only task is not offered, though the tool would accept it."""
    linked = {e.get("family", "") for e in region if e.get("provenance")}
    return frozenset(c["task"] for c in context) & linked


def region_key(region: list[dict[str, Any]]) -> tuple[Any, ...]:
    """Everything :func:`~dreamer_gym.envs.wrappers.entry_features` and :func:`op_mask` read from a region, as a hashable key: a training
    run draws its regions from a fixed pool, so the same region comes back and its features need not be
    recomputed (they were ~40% of a cached op-level episode). ~16 us for 39 entries."""
    return tuple(
        (e["id"], e["kind"], e["text"], e.get("session", 0), e.get("family", ""), tuple(e.get("tags", ())),
         tuple(tuple(sorted(p.items())) for p in e["provenance"]))
        for e in region
    )


def op_mask(region: list[dict[str, Any]], max_entries: int,
            synthesizable: Collection[str] | None = None) -> np.ndarray:
    """``(max_entries, len(OPS))`` bool: which ops each row allows. With ``synthesizable`` (a contract-2 env's
    :func:`synthesis_tasks`, possibly empty) ``(max_entries, len(OPS_V2))``: ``synthesize`` on the entries of
    those tasks."""
    mask = np.zeros((max_entries, len(OPS) if synthesizable is None else len(OPS_V2)), dtype=bool)
    mask[:, DROP] = True
    for i, entry in enumerate(region[:max_entries]):
        mask[i, KEEP] = mask[i, MERGE] = True
        mask[i, ABSTRACT] = parse_procedure(entry) is not None
        if synthesizable is not None:
            mask[i, SYNTHESIZE] = entry.get("family", "") in synthesizable
    return mask


def info_mask(info: dict[str, Any], max_entries: int) -> np.ndarray:
    """:func:`op_mask` of ``info["region"]`` (its first ``max_entries``) for the env that gave ``info``."""
    region = info["region"][:max_entries]
    if info_contract(info) < SYNTHESIS_CONTRACT:
        return op_mask(region, max_entries)
    return op_mask(region, max_entries, synthesis_tasks(region, info["bank_context"]))


def first_members(classes: np.ndarray) -> np.ndarray:
    """The index of each class's first entry, in class order (an assignment's op of that class is there)."""
    return np.array([int(np.flatnonzero(classes == c)[0]) for c in range(int(classes.max()) + 1)], dtype=np.int64)


def plan_calls(ops: list[int], region: list[dict[str, Any]], max_entry_tokens: int, max_emitted: int,
               slots: bool = False) -> tuple[list[dict[str, Any]], Counter[str]]:
    """The tool calls (without ``commit``) that play one op per region entry, and what was played."""
    played: Counter[str] = Counter()
    keep: list[str] = []
    emits: list[dict[str, Any]] = []
    texts: set[str] = {e["text"] for e in region}
    merged = [e for e, op in zip(region, ops) if op == MERGE]
    if merged:
        written = merge_text(merged, region, max_entry_tokens, slots=slots)
        if written is not None and written[1] not in texts:
            emits.append({"tool": "emit", "kind": written[0], "text": written[1], "provenance": [e["id"] for e in merged]})
            texts.add(written[1])
            played["merge"] += len(merged)
        else:  # one merged entry, or nothing the rules could write: carried over as it was
            keep += [e["id"] for e in merged]
            played["keep"] += len(merged)
    for entry, op in zip(region, ops):
        if op == DROP:
            played["drop"] += 1
        elif op == KEEP:
            keep.append(entry["id"])
            played["keep"] += 1
        elif op == ABSTRACT:
            text = abstract_text(entry, region, max_entry_tokens, slots=slots)
            if text is None or text in texts or len(emits) >= max_emitted:
                keep.append(entry["id"])
                played["keep"] += 1
            else:
                emits.append({"tool": "emit", "kind": "procedure", "text": text, "provenance": [entry["id"]]})
                texts.add(text)
                played["abstract"] += 1
    calls = ([{"tool": "keep", "ids": keep}] if keep else []) + emits
    return calls, played


def play_ops(ops: list[int], region: list[dict[str, Any]], max_entry_tokens: int, max_emitted: int,
             slots: bool = False) -> Generator[dict[str, Any], str, Counter[str]]:
    """Every tool call (without ``commit``) that plays one op per region entry, one at a time: send each call's
    result (the observation's ``result``) back; returns what was played. Without ``synthesize`` ops the calls
    are exactly :func:`plan_calls`'s. Then, per task of the entries given ``synthesize`` (in region order), the
    env's ``synthesize`` call for a procedure (from the task's successful runs; where that has no candidate, a
    second call from all its runs), and the call its answer names (``emit`` of the candidate, or
    ``keep`` of the region entry it equals): those entries are replaced by it. Where the tool has no candidate,
    the emit budget is spent, or the ``emit`` fails, they are kept instead (played as ``keep``)."""
    calls, played = plan_calls(ops, region, max_entry_tokens, max_emitted, slots=slots)
    emitted = sum(c["tool"] == "emit" for c in calls)
    for c in calls:
        yield c
    tasks: dict[str, list[str]] = {}
    for entry, op in zip(region, ops):
        if op == SYNTHESIZE:
            tasks.setdefault(entry.get("family", ""), []).append(entry["id"])
    for task, ids in tasks.items():
        follow = None
        # the task's successful runs, then (where they share no procedure: about half the windows' tasks, one
        # success or runs that differ) every run of it, the tool's own hint
        for which in SYNTHESIS_SOURCES if emitted < max_emitted else ():
            follow = _candidate_call((yield {"tool": "synthesize", "task": task, "kind": "procedure",
                                             "trajectories": which}))
            if follow is not None:
                break
        if follow is not None and not str((yield follow)).startswith("ERROR"):
            emitted += follow["tool"] == "emit"
            played["synthesize"] += len(ids)
            continue
        yield {"tool": "keep", "ids": ids}
        played["keep"] += len(ids)
    return played


def _candidate_call(result: str) -> dict[str, Any] | None:
    """The call a ``synthesize`` answer names (its ``emit``, or ``keep`` where the candidate equals a region
    entry), or None for "no candidate", an error, or a result that is not the tool's JSON."""
    try:
        answer = json.loads(result)
        return json.loads(answer.get("emit") or answer["keep"])
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


def as_op(value: Any) -> int:
    """An op index, or -1 for anything that is not an integral number."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return -1
    return int(number) if number.is_integer() else -1
