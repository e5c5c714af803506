"""The op vocabulary: one operation per region entry, more than keep/drop.

``0`` drop, ``1`` keep (verbatim), ``2`` merge (every merged entry goes into one new entry), ``3`` abstract
(this procedure rewritten as the region's consensus); the texts come from the documented rules of
:mod:`dreamer_gym.envs.op_rules`. Three methods speak it, so it lives in the env room below all of them: the
``consensus`` rule (:mod:`dreamer_gym.consolidators.fixed`), GRPO's ``ops`` grammar
(:mod:`dreamer_gym.methods.grpo.commands`) and the op-level policy (:mod:`dreamer_gym.methods.oplevel`, whose
:class:`~dreamer_gym.methods.oplevel.wrapper.OpLevelWrapper` gives it fixed-size spaces for RL libraries).
:func:`plan_calls` turns one op per entry into the env's own tool calls (``keep``, ``emit`` with the entries
as provenance), so a reward earned through ops is the env's commit reward, unchanged.
"""
from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from dreamer_gym.envs.op_rules import abstract_text, merge_text, parse_procedure
# its home is the wrappers (the group features read it); its callers import it from here, with the ops
from dreamer_gym.envs.wrappers import entry_classes as entry_classes

OPS: tuple[str, ...] = ("drop", "keep", "merge", "abstract")
DROP, KEEP, MERGE, ABSTRACT = range(len(OPS))


def region_key(region: list[dict[str, Any]]) -> tuple[Any, ...]:
    """Everything :func:`~dreamer_gym.envs.wrappers.entry_features` and :func:`op_mask` read from a region, as a hashable key: a training
    run draws its regions from a fixed pool, so the same region comes back and its features need not be
    recomputed (they were ~40% of a cached op-level episode). ~16 us for 39 entries."""
    return tuple(
        (e["id"], e["kind"], e["text"], e.get("session", 0), e.get("family", ""), tuple(e.get("tags", ())),
         tuple(tuple(sorted(p.items())) for p in e["provenance"]))
        for e in region
    )


def op_mask(region: list[dict[str, Any]], max_entries: int) -> np.ndarray:
    """``(max_entries, len(OPS))`` bool: which ops each row allows."""
    mask = np.zeros((max_entries, len(OPS)), dtype=bool)
    mask[:, DROP] = True
    for i, entry in enumerate(region[:max_entries]):
        mask[i, KEEP] = mask[i, MERGE] = True
        mask[i, ABSTRACT] = parse_procedure(entry) is not None
    return mask


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


def as_op(value: Any) -> int:
    """An op index, or -1 for anything that is not an integral number."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return -1
    return int(number) if number.is_integer() else -1
