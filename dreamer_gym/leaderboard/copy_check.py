"""The copy check: no new entry of a submission is a reference's new entry for that region (validate runs it).

The oracle's banks are public data (the oracle ships with the package), so a submission could replay them as its
own; this check refuses a text copy, and the reader-level similarity column shows a paraphrase
(docs/leaderboard.md, "The copy check")."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dreamer_gym.leaderboard.submission import SubmissionError
from dreamer_gym.leaderboard.tracks import Track

# word-set Jaccard at or above which a new entry counts as a reference entry's text. The honest built-ins'
# closest new entry to an oracle entry on the committed scienceworld submissions is consensus's at 0.514
# (random 0.429, oplevel 0.429, grpo 0.281, blind 0.107; dedupe, keep-all, empty and prompted emit none):
# margin 0.19 (docs/leaderboard.md, "The copy check")
NEAR_COPY = 0.7


def _words(text: str) -> frozenset[str]:
    return frozenset(text.lower().split())


def _overlap(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / max(len(a | b), 1)


def check_not_a_reference_copy(i: int, track: Track, block: dict[str, Any], references: Sequence[dict[str, Any]],
                               region_ids: Sequence[frozenset[str]]) -> None:
    """No new entry of any region is a reference's new entry for that region, exactly or within
    :data:`NEAR_COPY` word overlap (the oracle's banks are public data, and the oracle ships with the package).
    Every entry that is not one of the region's own counts, whatever its tags, and whatever the submission
    says its kind is: one copied entry flags its region, and one flagged region rejects the submission.
    A paraphrase gets past this (text, not meaning: the reader-level similarity column shows it)."""
    index = {(r["bank"], r["family"]): j for j, r in enumerate(block["regions"])}
    for ref in references:
        ref_block = next((b for b in ref["tracks"] if b["track"] == track.name), None)
        if ref_block is None:
            continue
        theirs: dict[int, list[tuple[str, frozenset[str]]]] = {}
        for r in ref_block["regions"]:
            j = index.get((r["bank"], r["family"]))
            if j is not None:
                theirs[j] = [(e["id"], _words(e["text"])) for e in r["emitted"] if e["id"] not in region_ids[j]]
        flagged = []
        for j, region in enumerate(block["regions"]):
            for k, entry in enumerate(region["emitted"]):
                if entry["id"] in region_ids[j]:
                    continue
                words = _words(entry["text"])
                hit = max(((_overlap(words, w), rid) for rid, w in theirs.get(j, ())), default=(0.0, ""))
                if hit[0] >= NEAR_COPY:
                    flagged.append((j, k, hit))
                    break
        if flagged:
            j, k, (overlap, rid) = flagged[0]
            region = block["regions"][j]
            raise SubmissionError(
                f"`tracks[{i}].regions[{j}].emitted[{k}]`: a copy of reference {ref['consolidator']['name']!r}'s entry "
                f"{rid} in region (bank {region['bank']}, family {region['family']!r}) (word overlap {overlap:.2f} >= "
                f"{NEAR_COPY}); flagged regions {[f[0] for f in flagged]}: a reference's banks (privileged: it reads "
                "gold paths) are listed apart, never submitted as another row's")
