"""Time-window regions (issue 31): a pool cut into ``window:A-B`` regions, each the entries the agent wrote
over sessions A..B whatever its task, through the env, the referee and the oracle, on the real latency suite
(no JVM)."""
from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from dreamer_gym.consolidators import make_consolidator, run_episode
from dreamer_gym.envs.consolidation import ConsolidationEnv
from dreamer_gym.errors import ConfigError, RewardServiceError
from dreamer_gym.memory import (
    MemoryEntry,
    Provenance,
    RegionScheme,
    bank_at,
    parse_window,
    region_task_mix,
    select_by_window,
    select_region,
)
from dreamer_gym.pool import BankPool, build_pool, load_pool
from dreamer_gym.service import CommitRequest
from dreamer_gym.service.referee import allocate
from dreamer_gym.suites import get_suite_spec, make_suite

from helpers import call


@pytest.fixture(scope="module")
def family_pool() -> BankPool:
    return build_pool(make_suite("latency", latency_s=0.0), get_suite_spec("latency").families, seeds=(0,),
                      eval_variations=4, gold_variations=2)


@pytest.fixture(scope="module")
def window_pool_path(family_pool: BankPool, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same bank cut into one-session windows: each window holds one episode of every family."""
    pool = dataclasses.replace(family_pool, region_scheme=RegionScheme("window", sessions=2, stride=1))
    pool.save(path := Path(tmp_path_factory.mktemp("windows")) / "latency-windows.json.gz")
    return path


def _env(path: Path) -> ConsolidationEnv:
    return ConsolidationEnv(suite="latency", pool=str(path), eval_in_family=3, eval_other=1, service="inprocess")


def test_a_window_holds_the_entries_of_its_sessions_whatever_their_family(family_pool: BankPool) -> None:
    bank = family_pool.banks[0]
    region = select_region(bank, "window:1-2")
    assert region == select_by_window(bank, 1, 2) and region.name == "window:1-2"
    assert {bank.get(i).session for i in region.entry_ids} == {1, 2}
    assert len({bank.get(i).family for i in region.entry_ids}) == len(family_pool.families)
    # the region's tasks in the proportions the agent met them: one episode per family per session
    assert region_task_mix(bank, region) == {f: 2 for f in sorted(family_pool.families)}
    assert parse_window("window:1-2") == (1, 2) and parse_window("microwave") is None


def test_window_keys_cover_the_bank_and_a_family_scheme_keeps_its_families(family_pool: BankPool) -> None:
    bank = family_pool.banks[0]
    assert RegionScheme("window", 2, 1).keys(bank) == ("window:0-1", "window:1-2", "window:2-3")
    assert RegionScheme("window", 2, 2).keys(bank) == ("window:0-1", "window:2-3")
    assert RegionScheme().keys(bank) == tuple(sorted({e.family for e in bank}))
    with pytest.raises(ValueError, match="`kind`"):
        RegionScheme("cluster")
    with pytest.raises(ValueError, match="`stride`"):
        RegionScheme("window", 2, 0)


def test_the_scheme_and_bank_meta_are_hashed_only_when_set(family_pool: BankPool) -> None:
    windows = dataclasses.replace(family_pool, region_scheme=RegionScheme("window"))
    meta = dataclasses.replace(family_pool, bank_meta=({"skill": 2.0},))
    assert len({family_pool.hash, windows.hash, meta.hash}) == 3
    assert BankPool.from_dict(windows.to_dict()) == windows
    assert "region_scheme" not in family_pool.to_dict()
    # the shipped pools hash as their ids pin them
    assert load_pool("scienceworld-v0").hash == "pbb9b36a4f660a660"


def test_allocate_gives_each_family_the_floor_or_ceiling_of_its_share() -> None:
    rng = np.random.default_rng(0)
    for _ in range(200):
        counts = Counter(allocate({"a": 3, "b": 1}, 4, rng))
        assert counts == {"a": 3, "b": 1}
    for _ in range(200):
        counts = Counter(allocate({"a": 1, "b": 1, "c": 1}, 2, rng))
        assert sum(counts.values()) == 2 and max(counts.values()) == 1


def test_an_env_on_a_window_pool_draws_windows_and_evaluates_the_windows_tasks(window_pool_path: Path) -> None:
    env = _env(window_pool_path)
    try:
        obs, info = env.reset(seed=0)
        assert info["family"] in env.pool.region_keys(info["bank"])
        assert parse_window(info["family"]) is not None
        families = {e["family"] for e in info["region"]}
        assert len(families) > 1
        out = run_episode(env, make_consolidator("keep-all"), seed=3, options={"bank": 0, "region": "window:1-2"})
        assert out["return"] == 0.0  # the bank is unchanged
        in_region = [e for e in out["episodes"] if e["in_family"]]
        assert len(in_region) == 3 and {e["family"] for e in in_region} <= families
        assert all(not e["in_family"] for e in out["episodes"][3:])
        with pytest.raises(ConfigError, match=r"time windows, not families: pass `options\['region'\]`"):
            env.reset(options={"family": sorted(families)[0]})
        with pytest.raises(ConfigError, match=r"options\['region'\].*window:9-10"):
            env.reset(options={"region": "window:9-10"})
    finally:
        env.close()


def test_the_oracle_writes_one_entry_per_family_of_a_window_filed_under_it(window_pool_path: Path) -> None:
    env = _env(window_pool_path)
    try:
        out = run_episode(env, make_consolidator("oracle"), seed=3, options={"bank": 0, "region": "window:1-2"})
        families = sorted({e["family"] for e in out["region"]})
        assert sorted(e["family"] for e in out["emitted"]) == families
        assert out["return"] > 0.0
    finally:
        env.close()


def test_an_emitted_entry_is_filed_under_the_family_its_evidence_was_written_for(window_pool_path: Path) -> None:
    env = _env(window_pool_path)
    try:
        obs, info = env.reset(seed=0, options={"bank": 0, "region": "window:1-2"})
        entry = next(e for e in info["region"] if e["kind"] == "procedure")
        env.step(call("emit", kind="procedure", text="To do it: press the button.", provenance=[entry["id"]]))
        obs, reward, terminated, truncated, info = env.step(call("commit"))
        assert terminated and info["emitted"][0]["family"] == entry["family"]
    finally:
        env.close()


def test_the_referee_refuses_a_family_the_window_does_not_hold_and_joint_windows(window_pool_path: Path) -> None:
    env = _env(window_pool_path)
    try:
        env.reset(seed=0, options={"bank": 0, "region": "window:1-2"})
        service, ticket = env.service, env._ticket  # noqa: SLF001 - the ticket this episode opened
        stray = MemoryEntry("insight", "A stray lesson.", "not-a-family", (), (Provenance("t0", 0, 0),))
        request = CommitRequest(0, "window:1-2", ticket.token, (stray,))
        with pytest.raises(RewardServiceError, match="not one of the families region 'window:1-2'"):
            service.commit(request)
        with pytest.raises(RewardServiceError, match="window regions overlap"):
            service.commit_joint([CommitRequest(0, "window:1-2", ticket.token, ())])
    finally:
        env.close()


def test_a_window_is_consolidated_in_the_bank_as_it_stood_when_the_window_closed(window_pool_path: Path) -> None:
    """Later sessions have not happened yet: bank v0 of window:0-1 holds sessions 0-1 only, so deleting
    the window costs the tasks it alone covers."""
    env = _env(window_pool_path)
    try:
        out = run_episode(env, make_consolidator("empty"), seed=3, options={"bank": 0, "region": "window:0-1"})
        pool = load_pool(str(window_pool_path))
        assert out["bank_before"] == bank_at(pool.banks[0], "window:0-1").hash != pool.banks[0].hash
        assert out["bank_hash"] == out["bank_before"]
        assert {e.session for e in bank_at(pool.banks[0], "window:0-1")} == {0, 1}
        assert bank_at(pool.banks[0], "microwave") is pool.banks[0]
        assert out["score_after"] <= out["score_before"]
    finally:
        env.close()


def test_a_window_with_retrieved_entries_shows_what_the_bank_already_knows(family_pool: BankPool) -> None:
    """RegionScheme(retrieved=k): each episode of the window adds the k older entries that best match its task;
    the task mix still counts the window's own episodes; retrieved=0 hashes as before."""
    scheme = RegionScheme("window", sessions=2, stride=1, retrieved=2)
    bank = bank_at(family_pool.banks[0], "window:2-3")
    plain = select_region(bank, "window:2-3")
    region = scheme.select(bank, "window:2-3", family_pool.trajectories)
    older = set(region.entry_ids) - set(plain.entry_ids)
    assert older and all(bank.get(i).session < 2 for i in older)
    assert set(plain.entry_ids) <= set(region.entry_ids)
    assert region_task_mix(bank, region) == region_task_mix(bank, plain)
    capped = scheme.select(bank, "window:2-3", family_pool.trajectories, max_entries=12)
    assert len(capped.entry_ids) <= 12
    assert RegionScheme("window", 2, 1).to_dict() == {"kind": "window", "sessions": 2, "stride": 1}
    assert scheme.to_dict()["retrieved"] == 2
    with pytest.raises(ValueError, match="`retrieved` is for window regions"):
        RegionScheme("family", retrieved=2)
    with pytest.raises(ValueError, match="`retrieved` to be an int >= 0"):
        RegionScheme("window", retrieved=-1)


def test_the_env_and_the_referee_agree_on_a_window_with_retrieved_entries(
        family_pool: BankPool, tmp_path: Path) -> None:
    pool = dataclasses.replace(family_pool, region_scheme=RegionScheme("window", 2, 1, retrieved=2))
    pool.save(path := tmp_path / "latency-windows-retrieved.json.gz")
    env = _env(path)
    try:
        out = run_episode(env, make_consolidator("keep-all"), seed=3, options={"bank": 0, "region": "window:2-3"})
        assert out["return"] == 0.0 and any(e["session"] < 2 for e in out["region"])
        out = run_episode(env, make_consolidator("empty"), seed=3, options={"bank": 0, "region": "window:2-3"})
        assert out["size_before"]["entries"] == len(out["region"])  # the referee replaced the same region
    finally:
        env.close()


def test_the_evidence_is_stored_once_and_every_window_can_read_it(window_pool_path: Path) -> None:
    """Each window is a bank of its own in the store; the pool's trajectories are written with the first."""
    env = _env(window_pool_path)
    try:
        for key in ("window:0-1", "window:2-3"):
            obs, info = env.reset(seed=0, options={"bank": 0, "region": key})
            tid = info["region"][0]["provenance"][0]["trajectory_id"]
            assert env.store.get_trajectory(tid) is not None and env.store.has_bank(info["bank_hash"])
        env.close()
        obs, info = env.reset(seed=0, options={"bank": 0, "region": "window:1-2"})  # a new store after close
        assert env.store.get_trajectory(info["region"][0]["provenance"][0]["trajectory_id"]) is not None
    finally:
        env.close()
