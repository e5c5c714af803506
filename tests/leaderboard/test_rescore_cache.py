"""The re-scoring cache (dreamer_gym/leaderboard/rescore_cache.py): what it serves instead of playing is exactly
what playing gives, it is keyed so that nothing stale is read, and no submission changes what it holds."""
from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest
from test_submissions import FAMILY
from warm_executor import warm_executor

from dreamer_gym.agents import make_agent
from dreamer_gym.consolidators import make_consolidator
from dreamer_gym.evaluation.play import Simulator
from dreamer_gym.leaderboard import Track, load_track
from dreamer_gym.leaderboard.rescore_cache import cache_path, cached_free, code_fingerprint
from dreamer_gym.leaderboard.submission import run_for_submission
from dreamer_gym.memory import MemoryEntry
from dreamer_gym.pool import load_or_build_pool
from dreamer_gym.suites import get_suite_spec
from dreamer_gym.suites.base import EpisodeTask

# keep-all first: its run is the before side alone (its banks are bank v0), which the others then share
CONSOLIDATORS = ("keep-all", "dedupe", "oracle")


def small_track() -> Track:
    data = {**load_track("scienceworld").__dict__, "name": "cache-exact", "families": (FAMILY,), "banks": (0,),
            "eval_in_family": 2, "eval_other": 1}
    return Track(**data)


def test_each_track_pool_and_code_has_its_own_cache_file(tmp_path: Path) -> None:
    track = load_track("scienceworld")
    path = cache_path(track, tmp_path)
    assert path.parent == tmp_path and path == cache_path(track, tmp_path)  # stable: the same file every run
    assert track.name in path.name and str(track.pool_hash) in path.name and code_fingerprint() in path.name
    other_pool = replace(track, pool_hash="p0000000000000000")
    other_name = Track(**{**track.__dict__, "name": "scienceworld-next"})
    assert len({path, cache_path(other_pool, tmp_path), cache_path(other_name, tmp_path)}) == 3
    assert len(code_fingerprint()) == 16 and int(code_fingerprint(), 16) >= 0


def test_no_cache_folder_leaves_the_evaluation_where_it_was(tmp_path: Path) -> None:
    track = load_track("scienceworld")
    assert cached_free(track, None, {"workers": 2}) == {"workers": 2}  # in memory, empty: as before
    assert cached_free(track, tmp_path, {"store_path": "mine.sqlite"}) == {"store_path": "mine.sqlite"}
    assert cached_free(track, tmp_path / "c", {})["store_path"] == str(cache_path(track, tmp_path / "c"))
    assert (tmp_path / "c").is_dir()


def _rows(path: Path) -> dict[str, str]:
    with sqlite3.connect(path) as db:
        return dict(db.execute("SELECT key, body FROM eval_cache"))


@pytest.mark.jvm
def test_cached_scores_are_exactly_a_full_replay_of_every_episode(tmp_path: Path) -> None:
    """Three consolidators on one cache: every before and after score of every region equals the episode played
    afresh (no cache, no deduplication) on the bank it was scored on; the cache served episodes whose retrieval
    a consolidator left unchanged and played those it changed; no run changed a value an earlier run cached."""
    track = small_track()
    free = cached_free(track, tmp_path, {})
    results, counts, first_rows = {}, {}, {}
    with warm_executor() as executor:  # the three runs play their misses on one simulator; the replay has its own
        for name in CONSOLIDATORS:
            counts[name] = {}
            results[name] = run_for_submission(track, make_consolidator(name), progress=False,
                                               evaluation=counts[name], executor=executor,
                                               service="inprocess",  # the cache is under test here, not isolation
                                               **free)
            if not first_rows:
                first_rows = _rows(Path(free["store_path"]))
    after_rows = _rows(Path(free["store_path"]))
    # a submitter's banks add keys (their own retrievals); they never rewrite or drop one
    assert {k: after_rows.get(k) for k in first_rows} == first_rows and len(after_rows) > len(first_rows)
    slots = sum(2 * len(r["episodes"]) for r in results["keep-all"].records)
    for name in CONSOLIDATORS[1:]:  # the before side of every region came from keep-all's run
        assert counts[name]["hits"] >= slots // 2 and counts[name]["hits"] + counts[name]["misses"] == slots

    config = track.config()
    pool = load_or_build_pool(config.pool, config.suite, config.pool_hash, progress=False)
    agent = make_agent(config.agent_config())
    simulator = Simulator(get_suite_spec(config.suite))
    unchanged = changed = 0
    played: dict[tuple[str, ...], float] = {}  # (bank, task, retrieved ids) -> score, each played once, afresh

    def replay(bank: object, task: EpisodeTask, entries: list[MemoryEntry]) -> float:
        key = (bank, task.family, str(task.variation), *(e.id for e in entries))
        if key not in played:
            result = agent.play(simulator.get(), task, entries, 0)
            assert result.error is None
            played[key] = result.score
        return played[key]

    try:
        for name, result in results.items():
            for record, commit in zip(result.records, result.commits):
                old = pool.banks[record["bank_index"]]
                region = pool.region_scheme.select(old, record["family"], pool.trajectories, config.max_region_entries)
                new = old.replace(region.entry_ids, tuple(MemoryEntry.from_dict(e) for e in commit["emitted"]))
                for episode in record["episodes"]:
                    task = EpisodeTask(episode["family"], episode["variation"])
                    description = pool.description(task, config.split)
                    before, after = (agent.retrieve(description, bank.entries) for bank in (old, new))
                    # the after side is played on its own bank even where its retrieval equals the before side's
                    assert replay(old.hash, task, before) == episode["before"], (name, record["bank_index"], task)
                    assert replay(new.hash, task, after) == episode["after"], (name, record["bank_index"], task)
                    same = [e.id for e in before] == [e.id for e in after]
                    unchanged, changed = unchanged + same, changed + (not same)
    finally:
        simulator.close()
    assert unchanged > 0 and changed > 0  # both paths were taken: served from the cache, and played
