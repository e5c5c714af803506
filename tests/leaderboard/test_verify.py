"""The verified tier: fresh seeds, real acquisition, the consolidator in its own process, then the re-score."""
from __future__ import annotations

import math
from pathlib import Path

import pytest
from test_submissions import FAMILY

from dreamer_gym.errors import ConfigError
from dreamer_gym.leaderboard import Track, load_track
from dreamer_gym.leaderboard.verify import SEED_LOW, draw_seeds, verification_track, verify


def test_seeds_are_fresh_each_time_and_far_from_every_shipped_pool() -> None:
    a, b = draw_seeds(3), draw_seeds(3)
    assert a != b and len(set(a)) == 3 and min(a + b) >= SEED_LOW


def test_only_held_out_tracks_have_a_verified_tier(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="only held-out tracks have a verified tier"):
        verification_track(load_track("alfworld-gen"), tmp_path / "pool.json.gz", "p0")


@pytest.mark.jvm
def test_verify_runs_the_consolidator_out_of_process_on_fresh_banks(tmp_path: Path,
                                                                     capfd: pytest.CaptureFixture[str]) -> None:
    data = {**load_track("scienceworld").__dict__, "name": "tiny-verify", "families": (FAMILY,), "banks": (0,),
            "eval_in_family": 2, "eval_other": 0}
    track = Track(**data)
    timings: dict[str, float] = {}
    record = verify(track, "dedupe", tmp_path, eval_variations=3, gold_variations=3, progress=True, timings=timings)
    said = capfd.readouterr().err  # every stage is named as it starts and ends, never minutes of silence
    for i, stage in enumerate(("acquire", "oracle", "consolidator", "re-score"), start=1):
        assert f"[{i}/4] {stage}: " in said and f"[{i}/4] {stage}: done in" in said
    assert "consolidator 'dedupe' in its own process" in said  # the child's wait ticks a bar
    assert set(timings) == {"acquire_s", "oracle_s", "consolidator_s", "rescore_s"}
    assert record["tier"] == "verified" and record["track"] == "tiny-verify"
    [seed] = record["verification"]["bank_seeds"]
    assert seed >= SEED_LOW and record["verification"]["seed_source"].startswith("drawn at verification")
    assert record["verification"]["pool_hash"] != track.pool_hash  # fresh banks, not the shipped pool
    [region] = record["records"]
    assert region["family"] == FAMILY and len(region["episodes"]) == 2
    assert (tmp_path / "submission.json").exists()  # what the consolidator's own process wrote
    assert math.isfinite(record["verification"]["oracle_score"])  # the oracle ran on the same fresh banks


@pytest.mark.jvm
def test_a_consolidator_that_reads_the_fresh_pool_like_the_oracle_is_refused(tmp_path: Path) -> None:
    """The fresh pool file is on the machine: the oracle itself, submitted as a contender, reads its gold paths.
    Verification refuses banks that are the oracle's texts."""
    from dreamer_gym.leaderboard.submission import SubmissionError

    data = {**load_track("scienceworld").__dict__, "name": "tiny-verify", "families": (FAMILY,), "banks": (0,),
            "eval_in_family": 2, "eval_other": 0}
    with pytest.raises(SubmissionError, match="are the texts of reference 'oracle'"):
        verify(Track(**data), "oracle", tmp_path, kind="contender", eval_variations=3, gold_variations=3)
