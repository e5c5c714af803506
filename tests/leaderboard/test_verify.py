"""The verified tier: fresh seeds, TEST variations and episode secret, real acquisition, the consolidator in its
bubblewrap sandbox, then the re-score (attacks on the sandbox: tests/red_team/test_sandbox_attacks.py)."""
from __future__ import annotations

import math
from pathlib import Path

import pytest
from test_submissions import FAMILY

from dreamer_gym.errors import ConfigError
from dreamer_gym.leaderboard import Track, load_track
from dreamer_gym.leaderboard.verify import (
    CACHE_FILE,
    DEFAULT_REGIONS,
    SEED_LOW,
    draw_seeds,
    draw_test_variations,
    verification_banks,
    verification_track,
    verify,
)


def test_seeds_are_fresh_each_time_and_far_from_every_shipped_pool() -> None:
    a, b = draw_seeds(3), draw_seeds(3)
    assert a != b and len(set(a)) == 3 and min(a + b) >= SEED_LOW


def test_test_variations_are_redrawn_where_the_suite_has_more_than_the_track_uses() -> None:
    lifespan = range(32)  # a lifespan family's TEST split (docs/leaderboard.md, "What verification redraws")
    a, b = draw_test_variations(lifespan, 20), draw_test_variations(lifespan, 20)
    assert len(a) == len(set(a)) == 20 and set(a) <= set(lifespan) and a != b
    assert draw_test_variations(range(5), 20) == list(range(5))  # identify-life-stages-1: all five, nothing to draw


def test_only_held_out_tracks_have_a_verified_tier(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="only held-out tracks have a verified tier"):
        verification_track(load_track("miniwob"), tmp_path / "pool.json.gz", "p0")  # scored on its id's pool


def test_a_verification_visits_a_fresh_subset_of_whole_banks() -> None:
    """4 families x 40 banks: the regions asked for, rounded up to whole banks (a bank's families share its
    acquisition), never more than the track has; by default DEFAULT_REGIONS (10 banks, a quarter of the track)."""
    track = load_track("scienceworld")
    assert len(track.families) == 4 and len(track.banks) == 40
    assert [verification_banks(track, n) for n in (1, 4, 5, 8, 12, 100, 1000)] == [1, 1, 2, 2, 3, 25, 40]
    assert verification_banks(track, None) == 40 and DEFAULT_REGIONS == 40
    assert verification_banks(track, DEFAULT_REGIONS) == 10
    small = Track(**{**track.__dict__, "name": "small", "banks": (0, 1, 2)})  # 12 regions: all of them
    assert verification_banks(small, DEFAULT_REGIONS) == 3
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ConfigError, match=r"`regions` must be a positive int .* got"):
            verification_banks(track, bad)  # type: ignore[arg-type]


def test_the_verification_track_holds_the_drawn_banks_only(tmp_path: Path) -> None:
    fresh = verification_track(load_track("scienceworld"), tmp_path / "pool.json.gz", "pfresh", banks=2)
    assert fresh.banks == (0, 1) and len(fresh.regions()) == 8 and fresh.pool_hash == "pfresh"


def test_too_many_or_repeated_seeds_are_refused_before_any_work(tmp_path: Path) -> None:
    for seeds in (list(range(10_001, 10_042)), [10_001, 10_001], []):
        with pytest.raises(ConfigError, match="give 1 to 40 distinct bank seeds"):
            verify(load_track("scienceworld"), "dedupe", tmp_path, seeds=seeds)


@pytest.mark.jvm
def test_verify_runs_the_consolidator_in_its_sandbox_on_a_fresh_draw(tmp_path: Path,
                                                                     capfd: pytest.CaptureFixture[str]) -> None:
    data = {**load_track("scienceworld").__dict__, "name": "tiny-verify", "families": (FAMILY,), "banks": (0,),
            "eval_in_family": 1, "eval_other": 0}
    track = Track(**data)
    timings: dict[str, float] = {}
    record = verify(track, "dedupe", tmp_path, kind="fixed", eval_variations=1, gold_variations=1, progress=True,
                    timings=timings)
    said = capfd.readouterr().err  # every stage is named as it starts and ends, never minutes of silence
    for i, stage in enumerate(("acquire", "oracle", "consolidator", "re-score"), start=1):
        assert f"[{i}/4] {stage}: " in said and f"[{i}/4] {stage}: done in" in said
    assert "'dedupe' in the bubblewrap sandbox" in said
    assert set(timings) == {"acquire_s", "oracle_s", "consolidator_s", "rescore_s", "rescore_episodes_played"}
    # the stages share one cache: the re-score replays the consolidator's banks on its episodes, playing nothing
    assert timings["rescore_episodes_played"] == 0 and (tmp_path / CACHE_FILE).is_file()
    assert record["tier"] == "verified" and record["track"] == "tiny-verify"
    assert record["verification"]["regions"] == record["verification"]["track_regions"] == 1
    [seed] = record["verification"]["bank_seeds"]
    assert seed >= SEED_LOW and record["verification"]["seed_source"].startswith("drawn at verification")
    assert len(record["verification"]["episode_secret"]) == 32 and record["verification"]["sandbox"] == "bubblewrap"
    [drawn] = record["verification"]["test_variations"][FAMILY]  # 1 of the family's 32 TEST variations
    assert record["verification"]["pool_hash"] != track.pool_hash  # fresh banks, not the shipped pool
    [region] = record["records"]
    assert region["family"] == FAMILY and len(region["episodes"]) == 1
    assert (tmp_path / "submission.json").exists()  # what the board built from the env's record, kept
    assert math.isfinite(record["verification"]["oracle_score"])  # the oracle ran on the same fresh banks


@pytest.mark.jvm
def test_the_oracle_submitted_as_a_contender_cannot_read_the_fresh_pool(tmp_path: Path) -> None:
    """Before the sandbox the oracle, submitted as a contender, read the fresh pool's gold paths (and was refused
    only as a copy). In the sandbox the pool and the suite's procedures are hidden: a sandbox failure, no score."""
    from dreamer_gym.leaderboard.sandbox import SandboxViolation

    data = {**load_track("scienceworld").__dict__, "name": "tiny-verify", "families": (FAMILY,), "banks": (0,),
            "eval_in_family": 1, "eval_other": 0}
    with pytest.raises(SandboxViolation, match="failed inside the verify sandbox: .*hidden"):
        verify(Track(**data), "oracle", tmp_path, kind="contender", eval_variations=1, gold_variations=1)
