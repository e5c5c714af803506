"""Tracks of window regions (issue 40, item 5): a track file lists its windows (`regions`), required where the
pool cuts windows and forbidden where it cuts families; `regions()` returns them; a next-protocol draft loads only
when asked for; the runner resets each listed window and its ledger is normalised per episode family.

Cheap (no simulator; ~25 s together, most of it one pass over the draft's 497 windows) bar one real run, heavy: a
2-window track through the board's runner and reward service (ScienceWorld episodes played; 48-211 s on the loaded
2-core machine), whose records the window normaliser reads.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import yaml

from dreamer_gym.errors import ConfigError
from dreamer_gym.leaderboard.aggregate import Normaliser, is_window_result
from dreamer_gym.leaderboard.tracks import PROTOCOL_VERSION, Track, load_track, write_track_file
from dreamer_gym.memory.regions import parse_window
from dreamer_gym.pool import load_pool

ROOT = Path(__file__).resolve().parents[2]
DRAFT = ROOT / "research" / "tracks" / "scienceworld-windows.yaml"


def draft_data() -> dict:
    return yaml.safe_load(DRAFT.read_text())


def write(tmp_path: Path, data: dict, name: str = "t.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_the_draft_windows_track_lists_its_windows_and_loads_only_as_a_draft() -> None:
    with pytest.raises(ConfigError, match=r"protocol_version 4; this package scores protocol 3 .*draft=True"):
        load_track(DRAFT)
    track = load_track(DRAFT, draft=True)
    assert isinstance(track, Track) and track.windows and track.draft
    assert track.protocol_version == PROTOCOL_VERSION + 1
    listed = [(b, k) for b, k in draft_data()["regions"]]
    assert track.regions() == listed and len(set(listed)) == len(listed)
    assert all(parse_window(k) for _, k in listed)
    assert sorted({b for b, _ in listed}) == list(track.banks) == list(range(40))  # every bank represented
    assert track.reset_options(*listed[0]) == {"bank": listed[0][0], "region": listed[0][1]}
    track.check_pool(load_pool(track.pool))  # every window is the pool's; they hold exactly the track's families


def test_the_shipped_family_tracks_are_unchanged_by_the_optional_field() -> None:
    track = load_track("scienceworld")
    assert isinstance(track, Track) and not track.windows and "regions" not in track.data()
    assert track.regions()[:2] == [(0, track.families[0]), (1, track.families[0])]
    assert track.reset_options(0, track.families[0]) == {"bank": 0, "family": track.families[0]}


def test_regions_are_required_on_windows_and_forbidden_on_families(tmp_path: Path) -> None:
    data = draft_data()
    no_list = {k: v for k, v in data.items() if k != "regions"}
    with pytest.raises(ConfigError, match=r"cuts its banks into time windows.*list the regions as `regions"):
        load_track(write(tmp_path, no_list), draft=True)
    family = yaml.safe_load((ROOT / "dreamer_gym" / "data" / "tracks" / "scienceworld.yaml").read_text())
    family["regions"] = [[0, "window:0-3"]]
    with pytest.raises(ConfigError, match=r"is cut by family: its regions are `families` x `banks`; drop `regions`"):
        load_track(write(tmp_path, family))


@pytest.mark.parametrize("regions, match", [
    ([[0, "lifespan-longest-lived"]], r"must be a non-empty list of \[bank, \"window:A-B\"\] pairs"),
    ([[0, "window:0-3"], [0, "window:0-3"]], r"at least one region, none twice"),
    ([[0, "window:0-3"]], r"`banks` must be the banks `regions` lists \(\[0\]\)"),
])
def test_a_bad_region_list_names_the_field(tmp_path: Path, regions: list, match: str) -> None:
    data = {**draft_data(), "regions": regions}
    with pytest.raises(ConfigError, match=match):
        load_track(write(tmp_path, data), draft=True)


def test_check_pool_refuses_a_window_the_bank_does_not_have_and_unlisted_families(tmp_path: Path) -> None:
    full = load_track(DRAFT, draft=True)
    assert isinstance(full, Track)
    pool = load_pool(full.pool)
    bad = replace(full, region_list=((0, "window:400-403"), *full.regions()[1:]))
    with pytest.raises(ConfigError, match=r"region \(0, 'window:400-403'\) is not a window of pool"):
        bad.check_pool(pool)
    track = replace(full, region_list=tuple(full.regions()[:3]), banks=(0,))  # the first bank's windows: cheap
    narrow = replace(track, families=tuple(f for f in full.families if f not in track.window_families(pool))
                     or full.families[:1])
    with pytest.raises(ConfigError, match=r"its windows hold families .*`families` must list exactly those"):
        narrow.check_pool(pool)


def test_a_window_track_file_round_trips(tmp_path: Path) -> None:
    track = load_track(DRAFT, draft=True)
    assert isinstance(track, Track)
    again = load_track(write_track_file(track, tmp_path / "again.yaml"), draft=True)
    assert again == track and again.regions() == track.regions()


@pytest.mark.heavy
def test_a_two_window_track_runs_end_to_end_and_normalises_per_episode_family() -> None:
    """The board's runner on 2 listed windows (real ScienceWorld episodes, in-process service): each window is reset
    by its key, its ledger record names it, and empty scores 0 in every episode family, oracle 1 over all episodes."""
    from dreamer_gym.consolidators import make_consolidator
    from dreamer_gym.leaderboard.runner import run_track

    full = load_track(DRAFT, draft=True)
    assert isinstance(full, Track)
    two = full.regions()[:2]
    track = replace(full, name="windows-2", region_list=tuple(two), banks=tuple(sorted({b for b, _ in two})),
                    recorded=tuple({**dict(full.recorded), "eval_in_family": 4, "eval_other": 0}.items()))
    track = replace(track, families=tuple(sorted(track.window_families(load_pool(track.pool)))))
    rows = {name: run_track(track, make_consolidator(name), service="inprocess", progress=False).to_dict()
            for name in ("empty", "oracle", "keep-all")}
    assert [(r["bank_index"], r["family"]) for r in rows["keep-all"]["records"]] == two
    assert all(is_window_result(r) for r in rows.values())
    norm = Normaliser.from_results(rows["empty"], rows["oracle"])
    assert norm.windows
    assert all(v is None or v == pytest.approx(0.0) for v in norm.per_family(rows["empty"]).values())
    oracle = norm.cells(rows["oracle"])  # oracle is 1 on the track's episodes as a whole (one denominator)
    assert float(np.nansum(oracle.values[0] * oracle.weights[0]) / oracle.weights[0].sum()) == pytest.approx(1.0)
    cells = {name: norm.cells(r) for name, r in rows.items()}
    assert {c.layout for c in cells.values()} == {cells["empty"].layout}  # every row plays the same TEST episodes
    assert cells["keep-all"].matrix().shape == (2, 1)
    assert np.array_equal(norm.matrix(rows["keep-all"])[0], cells["keep-all"].matrix(), equal_nan=True)


def test_validate_checks_a_window_submission_against_the_window_and_its_filing_rule() -> None:
    """The board's data check selects a window as the env does (the bank when it closed, the retrieved entries) and
    files a new entry only under a family the window's own sessions played (ScienceWorldWindows-v1's rule)."""
    from dataclasses import replace as dc_replace

    from dreamer_gym.contract.filing import filing_families
    from dreamer_gym.leaderboard.validate import SubmissionError, check_regions
    from dreamer_gym.memory import MemoryEntry, bank_at

    full = load_track(DRAFT, draft=True)
    assert isinstance(full, Track)
    pool = load_pool(full.pool)
    bank_index, key = full.regions()[0]
    bank = bank_at(pool.banks[bank_index], key)
    selected = pool.region_scheme.select(bank, key, pool.trajectories, full.max_region_entries)
    entries = [bank.get(i) for i in selected.entry_ids]
    region = {"bank": bank_index, "family": key, "calls": [], "tool_calls": 0, "invalid_calls": 0,
              "emitted": [e.to_dict() for e in entries]}  # keep-all
    assert check_regions(0, full, {"regions": [region]}) == [frozenset(selected.entry_ids)]
    own = filing_families(bank, key, selected, own_sessions_only=True)
    foreign = next(f for f in full.families if f not in own) if set(full.families) - own else "find-plant"
    base = next(e for e in entries if e.provenance)
    new = dc_replace(base, family=foreign, text=base.text + " (filed elsewhere)")
    assert isinstance(new, MemoryEntry)
    bad = {**region, "emitted": [new.to_dict()]}
    with pytest.raises(SubmissionError, match=rf"`tracks\[0\].regions\[0\].emitted\[0\].family`: '{foreign}'"):
        check_regions(0, full, {"regions": [bad]})


def test_the_pilots_rows_normalise_per_episode_family_with_one_denominator() -> None:
    """On the committed pilot (real commits on TEST of 20 held-out windows): empty is 0 in every family, oracle 1 over
    the track's episodes, every row has the same cells (the same windows and TEST episodes), one per window."""
    import json

    pilot = ROOT / "research" / "results" / "issue40" / "windows-track-pilot"
    rows = {p.stem: json.loads(p.read_text()) for p in sorted(pilot.glob("*.json")) if p.stem != "sizing"}
    assert {"empty", "oracle", "keep-all"} <= set(rows) and all(is_window_result(r) for r in rows.values())
    norm = Normaliser.from_results(rows["empty"], rows["oracle"])
    assert norm.windows and norm.gap is not None and norm.gap > 0
    assert all(v == pytest.approx(0.0) for v in norm.per_family(rows["empty"]).values())
    oracle = norm.cells(rows["oracle"])
    assert float(np.nansum(oracle.values[0] * oracle.weights[0]) / oracle.weights[0].sum()) == pytest.approx(1.0)
    cells = {name: norm.cells(r) for name, r in rows.items()}
    assert len({c.layout for c in cells.values()}) == 1
    windows = len(rows["empty"]["records"])
    assert cells["keep-all"].matrix().shape == (windows, 1)
    assert (cells["keep-all"].weights[0].sum(axis=1) == 20).all()  # 20 in-family episodes a window


def test_a_held_out_pool_must_cut_the_regions_its_id_measures(tmp_path: Path) -> None:
    data = {**draft_data(), "env_id": "MemoryConsolidation-ScienceWorld-v2"}  # family regions, a window pool
    with pytest.raises(ConfigError, match=r"cuts window regions but MemoryConsolidation-ScienceWorld-v2's pool "
                                          r"'scienceworld-v0' cuts family regions"):
        load_track(write(tmp_path, data), draft=True)


def test_the_docs_sizing_table_is_the_pilots_sizing_record() -> None:
    """docs/leaderboard.md's windows-track sizing table is read off research/results/issue40/windows-track-pilot/
    sizing.json (IQM difference; MDD at 20 / 160 / 497 windows, TEST episodes fixed and resampled)."""
    import json

    root = ROOT
    sizing = json.loads((root / "research/results/issue40/windows-track-pilot/sizing.json").read_text())
    page = (root / "docs/leaderboard.md").read_text()
    for pair in sizing["pairs"]:
        name = pair["pair"]
        line = next((ln for ln in page.splitlines() if ln.strip().startswith(f"| {name} ")), None)
        if line is None:
            continue
        fixed = " / ".join(f"{pair['mdd_iqm_windows_alone_at'][n]:.3f}" for n in ("20", "160", "497"))
        resampled = " / ".join(f"{pair['mdd_iqm_at'][n]:.3f}" for n in ("20", "160", "497"))
        assert f"{pair['iqm_difference']:+.3f}".replace("+", "") in line.replace("+", ""), line
        assert fixed in line.replace("**", "") and resampled in line, (name, fixed, resampled, line)
    assert sum(f"| {p['pair']} " in page for p in sizing["pairs"]) >= 4
