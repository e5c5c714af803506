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

A fixed seed and fixed variations make the acquisition's pool the same every time, so it is stored
(:data:`STORED`, ~8 KB, pinned by :data:`STORED_HASH`) and the fixture loads it instead of acquiring again (~25 s
of real ScienceWorld on 2 cores): ``acquire=True`` acquires it afresh, as
``tests/red_team/test_review.py::test_the_stored_fresh_draw_is_what_acquisition_makes`` (heavy) does to check the
stored file; verify's own acquisition runs in CI in tests/leaderboard/test_verify.py. To rewrite the file after a
change that moves the pool's hash: ``python tests/red_team/red_team_draw.py``.
"""
from __future__ import annotations

import shutil
import sys
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
EPISODES = {"eval_in_family": 2, "eval_other": 1}  # per region (the track plays 20 and 4)
EPISODE_SECRET = "red-team-fixture"
STORED = Path(__file__).resolve().parent / "data" / f"fresh-draw-{FRESH_SEED}.json.gz"
STORED_HASH = "pca5225ea50551ddd"


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


def acquire_fresh(out: Path) -> tuple[Path, str]:
    """The fresh bank acquired afresh (real acquisition on real ScienceWorld) into ``out``: ``(path, pool hash)``."""
    pool, pool_hash, _ = acquire_pool(load_track("scienceworld"), [FRESH_SEED], out,
                                      test_variations=fixed_test_variations(), gold_variations=GOLD_VARIATIONS)
    return pool, pool_hash


def make_fresh_draw(work: Path, acquire: bool = False) -> FreshDraw:
    """One fresh bank x the 4 held-out families in ``work`` (the stored acquisition, or ``acquire``d afresh), and the
    oracle's banks on it."""
    from dreamer_gym.pool import load_pool

    seconds: dict[str, float] = {}
    clock = time.perf_counter()
    shipped = load_track("scienceworld")
    if acquire:
        pool, pool_hash = acquire_fresh(work / "pool.json.gz")
    else:
        pool = Path(shutil.copy(STORED, work / "pool.json.gz"))
        pool_hash = load_pool(str(pool), STORED_HASH).hash
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


if __name__ == "__main__":  # rewrite the stored acquisition (then pin the hash it prints as STORED_HASH)
    STORED.parent.mkdir(exist_ok=True)
    print(acquire_fresh(STORED)[1], file=sys.stderr)
