"""Rows a board lists apart and never ranks: the try-out track's and those of tracks the package does not ship.

Why a section of their own, rather than a board: a try-out track (4 regions) or a track file is validated like a
shipped track, so its rows are real re-scored results that the submitter wants to see on their page. But its
few regions separate nothing, and a track file's definition is the submitter's own, so neither may sit beside
the ranked boards with a rank, a CI or a comparison. One table, one row a results file, each marked why it is
not ranked (:func:`why`), is all they get.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dreamer_gym.leaderboard.tracks import TRYOUT_TRACKS

TITLE = "Not ranked: the try-out track and tracks from files"
LINE = ("Validated and re-scored like any row, never ranked: the try-out track's 4 regions separate nothing, and a "
        "track the package does not ship is the submitter's own definition (docs/leaderboard.md, \"Try-out track\")")
HEADER = ["track", "consolidator", "kind", "tier", "track score", "in-family score", "bank tokens", "regions", "note"]


def why(track: str) -> str:
    """Why ``track``'s rows are listed apart, in a few words (the note column, and `validate`'s accepted line)."""
    return "try-out, not ranked" if track in TRYOUT_TRACKS else "not a shipped track: validated, never ranked"


def unranked_rows(results: Mapping[str, Sequence[dict[str, Any]]]) -> list[list[str]]:
    """One row per results file of the tracks no board ranks (``results``: such a track -> its results files; the
    caller picks them, by default with :func:`is_ranked_track`), by track, then track score (highest first: a reader
    compares with the reference, there is no rank)."""
    cells = []
    for track in sorted(results):
        for r in sorted(results[track], key=lambda r: -r["summary"]["score"]):
            s = r["summary"]
            cells.append([track, r["consolidator"]["name"], r["consolidator"]["kind"], r["tier"], f"{s['score']:+.4f}",
                          f"{s['in_family_after']:.1f}", f"{s['tokens_after']:.0f}", str(s["regions"]), why(track)])
    return cells
