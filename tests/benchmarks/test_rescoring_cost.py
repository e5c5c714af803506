"""Re-scoring cost per region and its growth with the number of regions: ``validate`` of the ``dedupe`` row (the
board re-runs the rule, replays it through the env and scores it in the withholding service) with a cold cache,
with the before side cached (by validating ``keep-all`` first, whose banks are bank v0), and fully warm (the same
submission again), each against the raw evaluation of the same episodes in the same run (an in-process
:class:`~dreamer_gym.evaluation.Evaluator` on bank v0 and v1 of every region, empty in-memory cache: the
episodes and nothing else).

Tracks: the shipped ``scienceworld`` track's episodes per region (8 in-family + 4 other) on its held-out pool,
2 banks x 1, 2 or 4 families = 2, 4 or 8 regions. CI runs the 2-region track on 1 + 0 episodes a region with
the service in-process, cold then warm, and checks that the warm re-score plays nothing and gives the same
records; measured, every cache state's records also equal the raw evaluation episode by episode. 4 and 8
regions are ``heavy``. Measured::

    .venv/bin/python -m pytest tests/benchmarks/test_rescoring_cost.py -m "heavy or not heavy" --benchmark-enable

Results: docs/performance.md, "Re-scoring a track".
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from dreamer_gym.consolidators import make_consolidator
from dreamer_gym.evaluation import EvalEpisode, Evaluator
from dreamer_gym.leaderboard import Track, load_track
from dreamer_gym.leaderboard.submission import build_submission, consolidator_block, dumps, run_for_submission
from dreamer_gym.leaderboard.validate import validate
from dreamer_gym.memory import MemoryEntry
from dreamer_gym.pool import load_or_build_pool
from dreamer_gym.store import Store
from dreamer_gym.suites.base import EpisodeTask

pytestmark = [pytest.mark.jvm]

REGIONS = [pytest.param(2, id="2-regions"), pytest.param(4, id="4-regions", marks=pytest.mark.heavy),
           pytest.param(8, id="8-regions", marks=pytest.mark.heavy)]
STATES = ("cold", "before cached", "warm")


def bench_track(regions: int, measuring: bool) -> Track:
    """``regions`` regions of the shipped track; in CI (not measuring) one in-family episode a region."""
    shipped = load_track("scienceworld")
    data = {**shipped.__dict__, "name": f"rescore-{regions}", "families": shipped.families[:regions // 2],
            "banks": (0, 1), **({} if measuring else {"eval_in_family": 1, "eval_other": 0})}
    return Track(**data)


def submission(track: Track, rule: str) -> dict[str, Any]:
    result = run_for_submission(track, make_consolidator(rule), progress=False, service="inprocess")  # setup
    data = build_submission(consolidator_block(rule, kind="fixed", config={"consolidator": rule}), [(track, result)])
    return json.loads(dumps(data))


def raw_evaluation(track: Track, data: dict[str, Any], records: list[dict[str, Any]]) -> tuple[float, list[Any]]:
    """Seconds to play every region's before and after episodes in this process (empty cache), and the scores."""
    config = track.config()
    pool = load_or_build_pool(config.pool, config.suite, config.pool_hash, progress=False)
    jobs = []
    for region, record in zip(data["tracks"][0]["regions"], records):
        old = pool.banks[region["bank"]]
        ids = pool.region_scheme.select(old, region["family"], pool.trajectories, config.max_region_entries).entry_ids
        new = old.replace(ids, tuple(MemoryEntry.from_dict(e) for e in region["emitted"]))
        tasks = [EpisodeTask(e["family"], e["variation"]) for e in record["episodes"]]
        episodes = [EvalEpisode(t, pool.description(t, config.split)) for t in tasks]
        jobs += [(old, episodes), (new, episodes)]
    evaluator = Evaluator(config.suite, config.agent_config(), Store(), workers=0)
    try:
        evaluator.warm_up()  # the JVM start is not an episode
        start = time.perf_counter()
        played = evaluator.evaluate_many(jobs)
        seconds = time.perf_counter() - start
    finally:
        evaluator.close()
    return seconds, [[r.score for r in results] for results in played]


def scores(records: list[dict[str, Any]]) -> list[list[float]]:
    return [side for r in records for side in ([e["before"] for e in r["episodes"]], [e["after"] for e in r["episodes"]])]


@pytest.mark.parametrize("regions", REGIONS)
def test_rescoring_cost(benchmark, perf, measuring, regions: int, tmp_path: Path) -> None:
    benchmark.group = "re-score a track (dedupe)"
    track = bench_track(regions, measuring)
    extra = {track.name: track}
    # measured: the board's own path (the withholding service in its process); CI checks correctness in-process
    where = {} if measuring else {"service": "inprocess"}
    dedupe = submission(track, "dedupe")
    cold_dir, before_dir = tmp_path / "cold", tmp_path / "before"

    def rescore(cache: Path, data: dict[str, Any]) -> tuple[float, dict[str, float], list[dict[str, Any]]]:
        timings: dict[str, float] = {}
        start = time.perf_counter()
        [record] = validate(data, extra_tracks=extra, progress=False, timings=timings, cache=cache, **where)
        return time.perf_counter() - start, timings, record["records"]

    cold = benchmark.pedantic(rescore, args=(cold_dir, dedupe), rounds=1, iterations=1)
    runs = {"cold": cold, "warm": rescore(cold_dir, dedupe)}
    slots = sum(2 * len(r["episodes"]) for r in cold[2])
    assert runs["warm"][2] == cold[2]  # a cached episode is the episode played
    assert runs["warm"][1]["episodes_played"] == 0 and runs["warm"][1]["episodes_cached"] == slots
    if not measuring:  # CI: correctness only (the raw comparison: tests/leaderboard/test_rescore_cache.py)
        return
    rescore(before_dir, submission(track, "keep-all"))  # fills the before side (keep-all's banks are bank v0)
    runs = {"cold": cold, "before cached": rescore(before_dir, dedupe), "warm": runs["warm"]}
    raw_s, raw = raw_evaluation(track, dedupe, cold[2])
    for state, (_, _, records) in runs.items():
        assert records == cold[2] and scores(records) == raw, state
    assert runs["before cached"][1]["episodes_played"] <= slots // 2 < runs["cold"][1]["episodes_played"]
    for state, (seconds, timings, _) in runs.items():
        perf.medians[f"re-score {regions} regions, {state}"] = {
            "median_s": seconds / regions, "min_s": seconds / regions, "iqr_s": 0.0, "rounds": 1, "per": regions,
            "unit": "region"}
        perf.notes[f"{regions} regions, {state}: episodes played / from the cache"] = (
            f"{timings['episodes_played']:.0f} / {timings['episodes_cached']:.0f} of {slots}")
        ratio = seconds / raw_s  # cold and before-cached carry fixed start-up costs (service, JVM): no floor
        target = {"cold": "<= 1.5", "before cached": "<= 0.7", "warm": "<= 0.2"}[state]
        perf.ratio(f"re-score {regions} regions {state} / raw", ratio, target, ratio <= float(target[3:]),
                   "<= 1.0" if state == "warm" else "-", state != "warm" or ratio <= 1.0)
    perf.medians[f"raw evaluation {regions} regions"] = {
        "median_s": raw_s / regions, "min_s": raw_s / regions, "iqr_s": 0.0, "rounds": 1, "per": regions,
        "unit": "region"}
    assert runs["warm"][0] <= raw_s  # nothing played: lookups and the env's replay only


def test_cost_per_region_grows_linearly(require_measuring, perf) -> None:
    """Per-region cost at 8 regions vs 2, cold and with the before side cached: a constant (1.0) is linear growth."""
    for state in STATES[:2]:
        growth = perf.median(f"re-score 8 regions, {state}") / perf.median(f"re-score 2 regions, {state}")
        perf.ratio(f"per-region cost, 8 / 2 regions, {state}", growth, "<= 1.2", growth <= 1.2, "<= 2.0", growth <= 2.0)
        assert growth <= 2.0
