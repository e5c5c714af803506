"""Reader-level similarity: how close what the downstream agent takes from a bank is to a reference's (a board
column, never a rejection).

The copy check (:func:`~dreamer_gym.leaderboard.copy_check.check_not_a_reference_copy`) compares words, so a
paraphrase of the oracle with little word overlap passes it, although the memory-following agent reads the
very same steps out of it. This column compares banks as that agent reads them: each region's emitted
entries go through the track's suite reader (its :class:`~dreamer_gym.suites.spec.SuiteSpec`
``follower``, ``reads``), giving a set of claims (``action:``/``avoid:`` steps, normalised, ``<slots>``
kept; ``slot:`` names; ``fact:`` items), and the set is compared with each reference's region by Jaccard
(shared / either). A region's similarity is its maximum over references; the submission's ``mean`` is the
mean over regions where either side reads anything. An honest consolidator may well extract the oracle's
steps, so a high value is for the reader of the board to weigh, not a verdict.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dreamer_gym.agents.base import Reading
from dreamer_gym.leaderboard.grounding import normalise, reader_of
from dreamer_gym.memory import MemoryEntry


def claims(reading: Reading) -> frozenset[str]:
    """A reading as a set of tagged, normalised claims (order and repeats do not count)."""
    return frozenset([*(f"action:{normalise(a)}" for a in reading.actions),
                      *(f"avoid:{normalise(a)}" for a in reading.avoided),
                      *(f"slot:{normalise(s)}" for s in reading.slots),
                      *(f"fact:{normalise(f)}" for f in reading.facts)])


def jaccard(a: frozenset[str], b: frozenset[str]) -> float | None:
    """Shared over either; ``None`` when both are empty (nothing to compare)."""
    union = a | b
    return len(a & b) / len(union) if union else None


def reader_similarity(regions: Sequence[dict[str, Any]], references: Sequence[tuple[str, Sequence[dict[str, Any]]]],
                      suite: str) -> dict[str, Any]:
    """The column for one track block. ``references``: ``(name, regions)`` of each reference block on the same
    track. Returns ``mean`` (over regions), ``max`` (the closest region), ``nearest`` (the reference closest
    on most regions) and ``per_region`` (each region's maximum); ``None`` values without references."""
    reads = reader_of(suite)

    def read(region: dict[str, Any]) -> frozenset[str]:
        return claims(reads([MemoryEntry.from_dict(e) for e in region["emitted"]]))

    refs = [(name, {(r["bank"], r["family"]): read(r) for r in ref_regions}) for name, ref_regions in references]
    per_region: list[float | None] = []
    nearest: dict[str, int] = {}
    for region in regions:
        mine = read(region)
        scored = [(s, name) for name, by_region in refs
                  if (s := jaccard(mine, by_region.get((region["bank"], region["family"]), frozenset()))) is not None]
        if not scored:
            per_region.append(None)
            continue
        best, name = max(scored)
        per_region.append(round(best, 4))
        nearest[name] = nearest.get(name, 0) + 1
    values = [s for s in per_region if s is not None]
    return {"mean": round(sum(values) / len(values), 4) if values else None, "max": max(values) if values else None,
            "nearest": max(sorted(nearest), key=nearest.__getitem__) if nearest else None,
            "references": [name for name, _ in references], "per_region": per_region}


def reference_blocks(track: str, references: Sequence[dict[str, Any]], submission: dict[str, Any] | None = None,
                     ) -> list[tuple[str, Sequence[dict[str, Any]]]]:
    """``(name, regions)`` of each reference submission's block on ``track``; ``submission`` itself (when a
    reference is the one being scored) is left out."""
    out = []
    for ref in references:
        block = next((b for b in ref["tracks"] if b["track"] == track), None)
        if block is not None and ref != submission:
            out.append((str(ref["consolidator"]["name"]), block["regions"]))
    return out
