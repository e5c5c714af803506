"""The red team's shared fresh draw (the ``fresh_draw`` fixture of tests/red_team/conftest.py): one fresh bank of
the ``scienceworld`` track's 4 held-out families, acquired by verify's own functions (real acquisition on real
ScienceWorld), with the oracle's banks on it (the reference a verified contender is judged against), computed once
per session.

It is what a verification of one bank is, cut to what an attack needs: one bank, few TEST and gold variations,
fewer evaluation episodes per region than the track's (an attack's verdict is read from its banks, not its score;
the score still comes from real episodes), and one evaluation cache that every stage shares (the oracle's run
plays the before side of each region once). Its bank seed is fixed, far from every shipped pool's seeds (verify
draws one from the OS's entropy; a test must be reproducible), and so are its TEST variations and its episode
secret. ``FreshDraw.seconds`` holds its cost.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dreamer_gym.leaderboard import Track, load_track
from dreamer_gym.leaderboard.verify import (
    CACHE_FILE,
    SEED_LOW,
    acquire_pool,
    reference_banks,
    verification_track,
)

FRESH_SEED = SEED_LOW + 7_919  # a verify-range seed: far from the shipped pools' 0-5, 100-102 and 300-339
EVAL_VARIATIONS = 3  # TEST variations per family: every region is scored on up to 3 distinct episodes of its own
GOLD_VARIATIONS = 5  # TRAIN gold paths per family: what the oracle's facts are mined from (its animal lists)
EPISODES = {"eval_in_family": 5, "eval_other": 2}  # per region (the track plays 20 and 4)
EPISODE_SECRET = "red-team-fixture"


@dataclass
class FreshDraw:
    """A verification track on one fresh bank, the oracle's submission on it, and where its stages share their
    evaluation episodes (``free``: pass to run_track, run_sandboxed, rescore or validate)."""

    track: Track
    references: list[dict[str, Any]]
    work_dir: Path
    episode_secret: str = EPISODE_SECRET
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def free(self) -> dict[str, Any]:
        return {"store_path": str(self.work_dir / CACHE_FILE)}


def make_fresh_draw(work: Path) -> FreshDraw:
    """One fresh bank x the 4 held-out families in ``work``, and the oracle's banks on it."""
    seconds: dict[str, float] = {}
    clock = time.perf_counter()
    shipped = load_track("scienceworld")
    pool, pool_hash, _ = acquire_pool(shipped, [FRESH_SEED], work / "pool.json.gz", test_variations=fixed_test_variations(),
                                      gold_variations=GOLD_VARIATIONS)
    seconds["acquire_s"] = round(time.perf_counter() - clock, 1)
    track = replace(verification_track(shipped, pool, pool_hash, banks=1), **EPISODES)
    draw = FreshDraw(track, [], work, seconds=seconds)
    clock = time.perf_counter()
    draw.references = reference_banks(track, episode_secret=EPISODE_SECRET, **draw.free)
    seconds["oracle_s"] = round(time.perf_counter() - clock, 1)
    return draw


def fixed_test_variations() -> dict[str, list[int]]:
    """The first :data:`EVAL_VARIATIONS` TEST variations of each family, as the shipped pool lists them (verify
    draws them from the OS's entropy; a test's must not change from run to run)."""
    from dreamer_gym.pool import load_or_build_pool

    config = load_track("scienceworld").config()
    texts = load_or_build_pool(config.pool, config.suite, config.pool_hash, progress=False).task_texts["test"]
    return {family: sorted(texts[family])[:EVAL_VARIATIONS] for family in load_track("scienceworld").families}
