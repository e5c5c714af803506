"""The reward service: out of the policy's process, robust to deaths, and withholding in tracks (real
ScienceWorld)."""
from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import gymnasium as gym
import psutil
import pytest

import dreamer_gym  # noqa: F401 - registers the ids
from dreamer_gym.envs.consolidation import ConsolidationEnv
from dreamer_gym.contract.ids import SCIENCEWORLD_POOL_HASH
from dreamer_gym.errors import RewardServiceError
from dreamer_gym.leaderboard import Track, load_track, run_track
from dreamer_gym.pool import load_pool
from dreamer_gym.service import CommitRequest, InProcessRewardService

from helpers import call, make_env

ENV_ID = "MemoryConsolidation-ScienceWorld-v0"

_SCAN = textwrap.dedent(
    """
    import gc, hashlib, json, sys
    import gymnasium as gym
    import dreamer_gym
    from dreamer_gym.envs.consolidation import ConsolidationEnv
    # the id's settings on one in-family and one other episode a commit: what the policy's process holds does not
    # depend on how many episodes the service plays for it
    env = gym.wrappers.OrderEnforcing(ConsolidationEnv.experiment(sys.argv[1], eval_in_family=1, eval_other=1))
    seen = set()
    def scan(tag):
        for obj in gc.get_objects():
            for ref in gc.get_referents(obj):
                if isinstance(ref, str) and len(ref) > 20:
                    seen.add(hashlib.sha1(ref.encode()).hexdigest())
    for seed in (0, 1, 2):
        obs, info = env.reset(seed=seed)
        scan("reset")
        obs, reward, terminated, truncated, info = env.step(json.dumps({"tool": "commit"}))
        scan("commit")
        seen.update(hashlib.sha1(s.encode()).hexdigest() for s in (obs["region"], obs["result"], json.dumps(info)))
    print(json.dumps(sorted(seen)))
    env.close()
    """
)


@pytest.mark.jvm
def test_the_policy_process_holds_no_evaluation_task_text():
    """After resets and commits, no string reachable in the policy's process is a DEV or TEST task text
    (those that are also TRAIN texts, which the trajectories carry as evidence, excepted)."""
    out = subprocess.run([sys.executable, "-c", _SCAN, ENV_ID], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    held = set(json.loads(out.stdout.strip().splitlines()[-1]))
    pool = load_pool("scienceworld-v0")
    train = {t.task_description for t in pool.trajectories.values()}
    secret = {text for split in ("dev", "test") for fam in pool.task_texts[split].values() for text in fam.values()}
    secret -= train
    assert len(secret) > 50  # the check has something to find
    digests = {hashlib.sha1(t.encode()).hexdigest(): t for t in secret}
    leaked = [digests[d] for d in held & set(digests)]
    assert leaked == []
    assert len(held) > 1000  # the scan saw the process's strings (banks, trajectories, modules)


@pytest.fixture(scope="module")
def process_env():
    """One env of the id on the process service (the default), small evaluation config: both process-service
    tests commit through it (one service and JVM start for the module)."""
    env = make_env(ENV_ID)
    yield env
    env.close()


def _commit(env: gym.Env, seed: int) -> tuple[float, list, list]:
    env.reset(seed=seed)
    _, reward, _, _, info = env.step(call("commit"))
    return reward, info["episodes"], info["bank_after"]


@pytest.mark.jvm
def test_a_killed_service_or_simulator_is_replaced_and_the_reward_is_unchanged(process_env):
    env = process_env
    first = _commit(env, 5)
    service = env.unwrapped.service
    pid, restarts = service.pid, service.restarts
    jvms = [p for p in psutil.Process(pid).children(recursive=True) if "java" in p.name()]
    assert jvms, "the service plays on a JVM of its own"
    for p in jvms:
        p.kill()  # the simulator dies between commits
    assert _commit(env, 5) == first
    os.kill(pid, signal.SIGKILL)  # now the service itself
    time.sleep(0.2)
    assert _commit(env, 5) == first
    assert service.restarts == restarts + 1 and service.pid != pid
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


@pytest.mark.jvm
def test_process_and_in_process_services_give_the_same_rewards(process_env):
    inprocess = make_env(ENV_ID, service="inprocess")
    try:
        assert process_env.unwrapped.config.service == "process"
        assert _commit(process_env, 11) == _commit(inprocess, 11)
    finally:
        inprocess.close()


def _tiny_track() -> Track:
    data = {**load_track("scienceworld").__dict__, "name": "tiny", "families": ("lifespan-longest-lived",),
            "banks": (0,), "eval_in_family": 1, "eval_other": 1}
    return Track(**data)


@pytest.mark.jvm
def test_a_track_withholds_every_score_and_hands_its_ledger_out_once():
    track = _tiny_track()
    config = track.config()
    service = InProcessRewardService(config, withhold=True)
    env = ConsolidationEnv(**track.env_kwargs(), reward_service=service)
    try:
        obs, info = env.reset(seed=track.seed, options={"bank": 0, "family": "lifespan-longest-lived"})
        env.step(call("keep", ids=[info["region"][0]["id"]]))
        obs, reward, terminated, truncated, info = env.step(call("commit"))
        assert terminated and reward == 0.0 and info["reward_withheld"] is True
        for key in ("score_before", "score_after", "episodes", "reward_components", "score_delta_parts"):
            assert key not in info
        assert "withheld" in obs["result"] and "Score" not in obs["result"]
        with pytest.raises(RewardServiceError, match="opened already"):  # a track opens each region once
            env.reset(seed=track.seed, options={"bank": 0, "family": "lifespan-longest-lived"})
        [record] = service.finish()
        assert record["family"] == "lifespan-longest-lived" and len(record["episodes"]) == 2
        assert {e["variation"] for e in record["episodes"][:1]} <= set(load_pool(track.pool, track.pool_hash).variations(
            "lifespan-longest-lived", "test"))
        with pytest.raises(RewardServiceError, match="once"):
            service.finish()
        with pytest.raises(RewardServiceError, match="no more commits"):
            env.reset(seed=1)
    finally:
        env.close()
        service.close()


@pytest.mark.jvm
def test_run_track_scores_keep_all_at_zero_and_the_oracle_above_it(tmp_path):
    from dreamer_gym.consolidators import make_consolidator

    track = _tiny_track()
    # the oracle's before side is keep-all's, played once; in-process services (no service process to start: issue
    # 40, CI time): run_track's default, the process service, is played by tests/leaderboard/test_submissions.py
    free = {"store_path": str(tmp_path / "cache.sqlite"), "service": "inprocess"}
    keep = run_track(track, make_consolidator("keep-all"), progress=False, **free)
    oracle = run_track(track, make_consolidator("oracle"), progress=False, **free)
    assert keep.summary["score"] == 0.0 and not keep.reference
    assert oracle.reference and oracle.summary["score"] > 0.0
    assert [r["episodes"] for r in keep.records][0][0]["variation"] == oracle.records[0]["episodes"][0]["variation"]


def test_the_referee_rechecks_what_it_is_asked_to_score():
    """A request that did not come through the env's tools (over the limits) is refused, not scored."""
    from dreamer_gym.envs.config import ConsolidationConfig
    from dreamer_gym.memory import MemoryEntry

    service = InProcessRewardService(ConsolidationConfig(pool_hash=SCIENCEWORLD_POOL_HASH, max_emitted=1))
    try:
        pool = service.public_pool()
        assert not hasattr(pool, "task_texts") and not hasattr(pool, "train_gold")
        family = pool.families[0]
        token = service.open(0, family, 0).token
        new = tuple(MemoryEntry("insight", f"tip {i}", family, (), ()) for i in range(2))
        with pytest.raises(RewardServiceError, match="max_emitted"):
            service.commit(CommitRequest(0, family, token, new))
        alien = (MemoryEntry("insight", "tip", "not-" + family, (), ()),)
        with pytest.raises(RewardServiceError, match="family"):
            service.commit(CommitRequest(0, family, token, alien))
        with pytest.raises(RewardServiceError, match="bank_index"):
            service.commit(CommitRequest(7, family, token, ()))
    finally:
        service.close()
