"""An op-level episode (reset + ops + commit through :class:`OpLevelWrapper`) against the raw env's same
episode (reset + keep + commit), both with the evaluation cached (the second time a commit is scored),
so what is left is the wrapper's own cost: entry features, the mask and the rules that write the text.
Target: an op-level keep-all episode within 1.1x of the raw one; floor 1.5x, a ``gate`` (it runs in CI:
raw and op-level episodes interleaved in one test). A cold commit (seconds: the simulator plays the
evaluation episodes) dwarfs both; its share is reported from the training logs in docs/performance.md.
"""
from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

import dreamer_gym  # noqa: F401 - registers the env ids
from dreamer_gym.envs.ops import DROP, KEEP, MERGE, plan_calls
from dreamer_gym.envs.wrappers import ENTRY_FEATURES, entry_features
from dreamer_gym.methods.oplevel.wrapper import OpLevelWrapper
from paired import gate, interleaved

pytestmark = pytest.mark.jvm
ENV_ID = "MemoryConsolidation-ScienceWorld-v0"
SEED = 3  # a 39-entry chemistry-mix region with four procedures
GROUP = "op-level episode, evaluation cached"
PAIRS = 100  # ~3 ms an episode each side: ~1 s quiet, ~10 s at load average 9


@pytest.fixture(scope="module")
def env():
    env = OpLevelWrapper(gym.make(ENV_ID))
    yield env
    env.close()


def _raw_keep_all(env: OpLevelWrapper) -> float:
    raw = env.env
    _, info = raw.reset(seed=SEED)
    raw.step(json.dumps({"tool": "keep", "ids": [e["id"] for e in info["region"]]}))
    return raw.step(json.dumps({"tool": "commit"}))[1]


def _ops_episode(env: OpLevelWrapper, merge: bool) -> tuple[float, dict]:
    _, info = env.reset(seed=SEED)
    action = np.full(env.max_entries, DROP)
    for i, entry in enumerate(info["region"]):
        action[i] = (MERGE if entry["kind"] == "procedure" else DROP) if merge else KEEP
    _, reward, _, _, info = env.step(action)
    return reward, info


def test_rules_and_features(benchmark, env, perf):
    """The wrapper's own work on one region: features, and the tool calls that merge the procedures."""
    benchmark.group = GROUP
    _, info = env.reset(seed=SEED)
    region = info["region"]
    ops = [MERGE if e["kind"] == "procedure" else DROP for e in region]

    def work():
        return entry_features(region, 50), plan_calls(ops, region, 320, 12)

    features, (calls, played) = benchmark(work)
    perf.record(benchmark, "op-level features + rules (39 entries)", unit="region")
    assert features.shape == (50, len(ENTRY_FEATURES)) and len(calls) == 1 and calls[0]["tool"] == "emit"
    assert played == {"merge": 4, "drop": len(region) - 4}


def test_raw_keep_all_episode(benchmark, env, perf):
    benchmark.group = GROUP
    _raw_keep_all(env)  # the first commit evaluates (cold); the measured ones hit the cache
    reward = benchmark(_raw_keep_all, env)
    perf.record(benchmark, "raw env keep-all episode (cached)", unit="episode")
    assert reward == 0.0


def test_oplevel_keep_all_episode(benchmark, env, perf):
    benchmark.group = GROUP
    reward, info = benchmark(_ops_episode, env, False)
    perf.record(benchmark, "op-level keep-all episode (cached)", unit="episode")
    assert reward == 0.0 and info["ops_played"] == {"keep": info["n_entries"]}  # the same episode as the raw one


def test_oplevel_merge_episode(benchmark, env, perf):
    benchmark.group = GROUP
    _ops_episode(env, True)
    reward, info = benchmark(_ops_episode, env, True)
    perf.record(benchmark, "op-level merge-procedures episode (cached)", unit="episode")
    assert info["emitted"] and info["score_after"] > info["score_before"]
    assert reward > 0


def test_features_are_computed_once_per_region_and_stay_correct(env):
    """The wrapper remembers each region's features and mask: what it returns equals a fresh computation,
    for regions seen once and again, and a caller writing into an observation changes nothing later."""
    fresh = {}
    for seed in (SEED, 0, SEED, 0):
        obs, info = env.reset(seed=seed)
        region = info["region"]
        assert np.array_equal(obs, entry_features(region, env.max_entries))
        assert obs.flags.writeable and info["action_mask"].flags.writeable
        assert np.array_equal(env.action_masks(), info["action_mask"].reshape(-1))
        fresh.setdefault(seed, obs.copy())
        assert np.array_equal(obs, fresh[seed])
        obs[:] = -1.0  # must not reach the next reset of the same region
        info["action_mask"][:] = False
    assert len(env._seen) >= 2 and not np.array_equal(fresh[SEED], fresh[0])


@pytest.mark.gate
def test_oplevel_overhead_ratio(env, perf):
    """Gate: an op-level keep-all episode against the raw env's, interleaved in one run."""
    _raw_keep_all(env)  # the first commit of this region evaluates (cold); the timed ones hit the cache
    _ops_episode(env, False)
    paired = interleaved(lambda: _raw_keep_all(env), lambda: _ops_episode(env, False), PAIRS, warmup=10)
    gate(perf, "op-level / raw keep-all episode (cached, interleaved)", paired, 1.1, 1.5,
         ("raw keep-all episode, interleaved", "op-level keep-all episode, interleaved"), unit="episode")
