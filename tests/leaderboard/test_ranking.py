"""Ranks on the committed boards: identical banks are one row, each ranked row shows the rank interval its paired
CIs against every row allow, and every row says what stands behind it (distinct TEST episodes, not replays)."""
from __future__ import annotations

import copy

import numpy as np
import pytest

from dreamer_gym.leaderboard.board import N_HEADER, build_board, comparison_rows, table_rows
from dreamer_gym.leaderboard.ranking import bank_fingerprint
from dreamer_gym.leaderboard.rows import slug
from dreamer_gym.leaderboard.tracks import PROTOCOL_VERSION, load_track
from dreamer_gym.stats import iqm, pairwise, rank_intervals


@pytest.fixture(scope="module")
def results(committed_results: dict) -> dict[str, list[dict]]:
    return committed_results


@pytest.fixture(scope="module")
def boards(committed_boards: dict) -> dict:
    """Each committed board, built once per session (tests/leaderboard/conftest.py: a board draws 10,000 replicates
    of every row)."""
    return committed_boards


def test_rows_with_identical_banks_collapse_into_one_row_listing_its_submitters(results: dict, boards: dict) -> None:
    """On the committed protocol-3 rows: every group of results with one bank fingerprint is one row, named by its
    built-in member where it has one, listing every submitter; no name is on the board twice."""
    rows = [r for r in results["scienceworld"] if r["tier"] == "re-scored"]
    board = boards["scienceworld"]  # verified files add no row: the board's rows are the re-scored ones
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


@pytest.mark.parametrize("track", ["scienceworld", "alfworld-gen", "miniwob"])
def test_each_ranked_row_shows_the_ranks_its_paired_cis_allow(boards: dict, track: str) -> None:
    """Rank intervals from every pair's paired CI (recomputed here on the rows' own cells), each holding the row's
    position; each ranked row is compared with the row above, with the pair's MDD."""
    board = boards[track]
    ranked = [r for r in board.rows if r.ranked]
    intervals = rank_intervals(pairwise([r.cells for r in ranked], iqm))
    assert [r.rank_interval for r in ranked] == intervals
    for i, (row, (best, worst)) in enumerate(zip(ranked, intervals), start=1):
        assert best <= i <= worst and row.rank == (str(best) if best == worst else f"{best}-{worst}")
    assert [(c.name, c.above) for c in board.comparisons] == [(b.name, a.name) for a, b in zip(ranked, ranked[1:])]
    for comp in board.comparisons:
        lo, hi = comp.ci
        assert lo <= comp.difference <= hi and comp.separated == (not lo <= 0 <= hi) and comp.mdd >= 0
    header, cells = comparison_rows(board)
    assert header[:2] == ["row", "row above"] and header[3] == "MDD (80% power)" and len(cells) == len(ranked) - 1
    assert all(c[4] in ("yes", "no") for c in cells)


def test_the_scienceworld_board_no_longer_chains_rows_that_separate(boards: dict) -> None:
    """The old board put nine rows in one shared rank `1=` by chaining neighbours; rule:merge-all and
    rule:procedures-only were in it though their own paired CI separates them (issue 38)."""
    board = boards["scienceworld"]
    rows = {r.name: r for r in board.rows if r.ranked}
    top, bottom = rows["rule:merge-all"].rank_interval, rows["rule:procedures-only"].rank_interval
    assert top is not None and bottom is not None and top[0] < bottom[0]
    ranked = [r for r in board.rows if r.ranked]
    assert ranked[0].rank_interval[1] < ranked[-1].rank_interval[0]


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
               "summary": {"score": after / 100, "tokens_after": 5.0},
               "review": {"needs_review": False, "regions": [], "reason": "judged clear (a ranking record)"}}
        return {**out, "builtin": builtin} if builtin else out

    rows = [result("empty", 0.0, "empty"), result("oracle", 90.0, "oracle"), result("good", 60.0),
            result("fair", 30.0)]
    rows[1]["consolidator"]["kind"] = "reference"
    board = build_board("scienceworld", rows)
    assert [(r.name, r.rank) for r in board.rows if r.ranked] == [("good", "1"), ("fair", "2"), ("empty", "3")]
    assert all(c.separated for c in board.comparisons)


def test_each_row_shows_n_and_links_to_its_per_family_line(results: dict, boards: dict) -> None:
    board = boards["scienceworld"]
    header, cells = table_rows(board)
    n, link = header.index(N_HEADER), header.index("per family")
    dedupe = next(c for c in cells if c[1] == "dedupe")
    record = next(r for r in results["scienceworld"] if r["consolidator"]["name"] == "dedupe")
    in_family = [e for rec in record["records"] for e in rec["episodes"] if e["in_family"]]
    distinct = {(e["family"], e["variation"]) for e in in_family}
    assert dedupe[n] == f"{len(record['records'])}, {len(distinct)} ({len(in_family)})" == "160, 65 (2600)"
    assert dedupe[link] == f"#family-scienceworld-{slug('dedupe')}"
    assert all(len(c) == len(header) for c in cells)
    iqm = header.index("IQM (normalised)")
    assert np.isfinite([float(c[iqm].split()[0]) for c in cells if c[0] != "-"]).all()
    # the protocol each row ran, and the env id the current protocol's track measures
    assert dedupe[header.index("ran on (protocol, env id)")] == f"{PROTOCOL_VERSION} ({load_track('scienceworld').env_id})"
