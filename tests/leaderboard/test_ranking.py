"""Ranks on the committed boards: identical banks are one row, rows the paired bootstrap cannot separate share a
rank, and every row says what stands behind it."""
from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest

from dreamer_gym.leaderboard.board import build_board, comparison_rows, load_results, table_rows
from dreamer_gym.leaderboard.ranking import Comparison, bank_fingerprint, rank_labels
from dreamer_gym.leaderboard.rows import slug
from dreamer_gym.leaderboard.tracks import PROTOCOL_VERSION, load_track

RESULTS = Path(__file__).parent.parent.parent / "leaderboards" / "results"


@pytest.fixture(scope="module")
def results() -> dict[str, list[dict]]:
    return load_results(RESULTS)


def test_rows_with_identical_banks_collapse_into_one_row_listing_its_submitters(results: dict) -> None:
    """On the committed protocol-3 rows: every group of results with one bank fingerprint is one row, named by its
    built-in member where it has one, listing every submitter; no name is on the board twice."""
    rows = [r for r in results["scienceworld"] if r["tier"] == "re-scored"]
    board = build_board("scienceworld", rows)
    groups: dict[str, list[str]] = {}
    for r in rows:
        groups.setdefault(bank_fingerprint(r), []).append(r["consolidator"]["name"])
    shared = [sorted(g) for g in groups.values() if len(g) > 1]
    assert len(board.rows) == len(groups) and shared  # at least one bank is committed by two rows
    for names in shared:
        (row,) = [w for w in board.rows if set(w.submitters) == set(names)]
        assert f"same banks from {len(names)} submitters" in row.note
        builtin = [r["consolidator"]["name"] for r in rows if r["consolidator"]["name"] in names and r.get("builtin")]
        assert row.name == (builtin[0] if builtin else row.submitters[0])
    names = [w.name for w in board.rows]
    assert len(names) == len(set(names))


def test_the_fingerprint_sees_one_episode_change(results: dict) -> None:
    dedupe = next(r for r in results["scienceworld"] if r["consolidator"]["name"] == "dedupe" and r["tier"] ==
                  "re-scored")
    changed = copy.deepcopy(dedupe)
    changed["records"][5]["episodes"][2]["after"] += 1.0
    assert bank_fingerprint(dedupe) == bank_fingerprint(copy.deepcopy(dedupe)) != bank_fingerprint(changed)


def test_rank_labels_share_a_rank_where_the_ci_against_the_row_above_holds_zero() -> None:
    def c(shares: bool) -> Comparison:
        return Comparison("x", "y", 0.1, (-0.1, 0.2) if shares else (0.05, 0.2), shares)

    assert rank_labels([c(False), c(True), c(False), c(False)], 5) == ["1", "2=", "2=", "4", "5"]
    assert rank_labels([c(True), c(True)], 3) == ["1=", "1=", "1="]
    assert rank_labels([], 1) == ["1"] and rank_labels([], 0) == []


@pytest.mark.parametrize("track", ["scienceworld", "alfworld-gen", "miniwob"])
def test_each_ranked_row_is_compared_with_the_row_above_and_ties_share_its_rank(results: dict, track: str) -> None:
    board = build_board(track, results[track])
    ranked = [r for r in board.rows if r.ranked]
    assert [(c.name, c.above) for c in board.comparisons] == [(b.name, a.name) for a, b in zip(ranked, ranked[1:])]
    for above, row, comp in zip(ranked, ranked[1:], board.comparisons):
        lo, hi = comp.ci
        assert lo <= comp.difference <= hi and comp.shares_rank == (lo <= 0 <= hi)
        assert (row.rank.rstrip("=") == above.rank.rstrip("=")) == comp.shares_rank
        if comp.shares_rank:
            assert row.rank.endswith("=") and above.rank.endswith("=")
    header, cells = comparison_rows(board)
    assert header[:2] == ["row", "row above"] and len(cells) == len(ranked) - 1
    assert all(c[3] in ("yes", "no") for c in cells)


def test_rows_far_apart_get_their_own_ranks() -> None:
    """Three rows a whole normalised unit apart on every region: no paired CI holds 0."""
    def result(name: str, after: float, builtin: str | None = None) -> dict:
        records = [{"bank_index": b, "family": f, "reward": after / 100, "size_after": {"tokens": 5, "entries": 1},
                    "episodes": [{"family": f, "variation": v, "in_family": True, "before": 0.0,
                                  "after": after + b + v} for v in range(2)]}
                   for b in range(3) for f in ("a", "b")]
        out = {"consolidator": {"name": name, "kind": "fixed" if builtin else "contender", "trained_on": [],
                                "config": {}}, "tier": "re-scored", "protocol_version": PROTOCOL_VERSION,
               "records": records,
               "summary": {"score": after / 100, "tokens_after": 5.0}}
        return {**out, "builtin": builtin} if builtin else out

    rows = [result("empty", 0.0, "empty"), result("oracle", 90.0, "oracle"), result("good", 60.0),
            result("fair", 30.0)]
    rows[1]["consolidator"]["kind"] = "reference"
    board = build_board("scienceworld", rows)
    assert [(r.name, r.rank) for r in board.rows if r.ranked] == [("good", "1"), ("fair", "2"), ("empty", "3")]
    assert not any(c.shares_rank for c in board.comparisons)


def test_each_row_shows_n_and_links_to_its_per_family_line(results: dict) -> None:
    board = build_board("scienceworld", results["scienceworld"])
    header, cells = table_rows(board)
    n, link = header.index("N: regions, in-family episodes (distinct)"), header.index("per family")
    dedupe = next(c for c in cells if c[1] == "dedupe")
    record = next(r for r in results["scienceworld"] if r["consolidator"]["name"] == "dedupe")
    in_family = [e for rec in record["records"] for e in rec["episodes"] if e["in_family"]]
    distinct = {(e["family"], e["variation"]) for e in in_family}
    assert dedupe[n] == f"{len(record['records'])}, {len(in_family)} ({len(distinct)})"
    assert dedupe[link] == f"#family-scienceworld-{slug('dedupe')}"
    assert all(len(c) == len(header) for c in cells)
    iqm = header.index("IQM (normalised)")
    assert np.isfinite([float(c[iqm].split()[0]) for c in cells if c[0] != "-"]).all()
    # the protocol each row ran, and the env id the current protocol's track measures
    assert dedupe[header.index("ran on (protocol, env id)")] == f"{PROTOCOL_VERSION} ({load_track('scienceworld').env_id})"
