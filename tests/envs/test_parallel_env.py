"""The PettingZoo env `MemoryConsolidationParallel-ScienceWorld-v1` on real ScienceWorld: PettingZoo's own API and
seed tests, the joint commit (independent keep-all agents give exactly the keep-all bank), the shared reward,
the board, and bad input as observations."""
from __future__ import annotations

import json

import pytest
from pettingzoo.test import parallel_api_test, parallel_seed_test

from dreamer_gym.consolidators.cooperative import BoardDedupeConsolidator, run_parallel_episode
from dreamer_gym.consolidators.fixed import DedupeConsolidator, KeepAllConsolidator
from dreamer_gym.envs.parallel import PARALLEL_IDS, ConsolidationParallelEnv, parallel_env
from dreamer_gym.errors import ConfigError, FrozenParameterError, RewardServiceError
from dreamer_gym.service import CommitRequest

from helpers import SMALL

pytestmark = pytest.mark.jvm
ENV_ID = "MemoryConsolidationParallel-ScienceWorld-v1"


def small_env(**kwargs) -> ConsolidationParallelEnv:
    """The id's settings on the small evaluation config (one in-family and one other episode a region): an
    experiment, as tests/helpers.py's make_env is (issue 40: CI time). The id itself is made by ``parallel_env``
    in the seed test and the frozen-field check."""
    from dreamer_gym.contract.ids import REGISTERED

    settings = {k: v for k, v in REGISTERED[PARALLEL_IDS[ENV_ID]].items() if k != "frozen"}
    return ConsolidationParallelEnv(n_agents=2, **{**settings, **SMALL, **kwargs})


@pytest.fixture(scope="module")
def env():
    """On the default service, its own process: every joint commit of the module crosses the pipe (one service
    and simulator start for the module, issue 40: CI time)."""
    e = small_env()
    assert e.config.service == "process"
    yield e
    e.close()


@pytest.mark.timeout(600)
def test_pettingzoo_parallel_api_test_passes(env):
    """On the module's env (one simulator for the module, issue 39: CI time). Random tool calls never commit, and 8
    cycles stay under the 40-call budget: no episode ends, so nothing is scored (each end used to play a joint commit
    of two agents, issue 40: CI time). An episode's end (every agent terminated, `agents` empty, a step after it
    refused) is checked by test_a_committed_agent_waits_with_its_actions_ignored."""
    assert env.agent_env("consolidator_0").config.max_tool_calls > 8
    parallel_api_test(env, num_cycles=8)


def test_pettingzoo_parallel_seed_test_passes():
    parallel_seed_test(lambda: parallel_env(ENV_ID, n_agents=2, service="inprocess"))


def test_independent_keep_all_agents_give_exactly_the_keep_all_bank(env):
    # seed 0, as the next test: the same regions, so their before-scores are played once (issue 39: CI time)
    out = run_parallel_episode(env, KeepAllConsolidator(), seed=0)
    bank_hash = env.agent_env("consolidator_0").pool.banks[out["consolidator_0"]["bank"]].hash
    for info in out.values():
        assert info["bank_before"] == info["bank_after"] == bank_hash
        assert info["reward_components"] == {"shared_score_delta": 0.0, "size": 0.0} and info["return"] == 0.0
    assert len({i["family"] for i in out.values()}) == 2  # disjoint regions


def test_the_joint_reward_is_shared_plus_each_agent_s_own_size_term(env):
    out = run_parallel_episode(env, DedupeConsolidator(), seed=0)
    shared = {i["reward_components"]["shared_score_delta"] for i in out.values()}
    assert len(shared) == 1 and len({i["bank_after"] for i in out.values()}) == 1
    for info in out.values():
        parts = info["reward_components"]
        assert info["return"] == pytest.approx(parts["shared_score_delta"] + parts["size"])
        before, after = info["size_before"]["tokens"], info["size_after"]["tokens"]
        assert parts["size"] == pytest.approx(-0.02 * (after - before) / before)
    assert out["consolidator_0"]["score_after"] != out["consolidator_0"]["score_before"]  # the score really moved


def test_the_board_reaches_every_agent_and_bad_posts_are_observations(env):
    obs, infos = env.reset(seed=1)
    obs, rewards, _, _, infos = env.step({"consolidator_0": json.dumps({"tool": "post", "text": "look first"}),
                                          "consolidator_1": json.dumps({"tool": "post", "text": ""})})
    assert "[consolidator_0] look first" in obs["consolidator_1"]["board"]
    assert infos["consolidator_1"]["board_posts"] == [{"agent": "consolidator_0", "text": "look first"}]
    assert infos["consolidator_1"]["invalid_calls"] == 1 and "`text` must be a non-empty string" in obs["consolidator_1"]["result"]
    assert rewards == {"consolidator_0": 0.0, "consolidator_1": -0.01}
    obs, *_ = env.step({"consolidator_0": '{"tool": "read_board"}', "consolidator_1": '{"tool": "post", "text": "' + "x" * 321 + '"}'})
    assert "look first" in obs["consolidator_0"]["result"] and "at most 320 characters" in obs["consolidator_1"]["result"]


def test_a_committed_agent_waits_with_its_actions_ignored(env):
    _, infos = env.reset(seed=2)
    ids = [e["id"] for e in infos["consolidator_1"]["region"]]
    obs, rewards, terms, truncs, infos = env.step({"consolidator_0": '{"tool": "commit"}',
                                                   "consolidator_1": json.dumps({"tool": "keep", "ids": ids})})
    assert infos["consolidator_0"]["waiting"] and not terms["consolidator_0"] and env.agents == env.possible_agents
    assert "waiting for 1 other agent" in obs["consolidator_0"]["result"]
    calls_left = infos["consolidator_0"]["tool_calls_left"]
    obs, rewards, terms, truncs, infos = env.step({"consolidator_0": "not json", "consolidator_1": '{"tool": "commit"}'})
    assert env.agents == [] and all(terms.values()) and not any(truncs.values())
    assert infos["consolidator_0"]["invalid_calls"] == 0 and infos["consolidator_0"]["tool_calls_left"] == calls_left
    assert infos["consolidator_0"]["size_after"]["entries"] == 0  # agent 0 committed an empty region
    with pytest.raises(RuntimeError, match="call reset"):
        env.step({})


def test_bad_options_and_frozen_fields_raise_naming_the_fix(env):
    with pytest.raises(ConfigError, match="2 distinct families of bank 0"):
        env.reset(seed=0, options={"bank": 0, "families": ["grow-plant", "grow-plant"]})
    crowded = ConsolidationParallelEnv(n_agents=9, service="inprocess")  # 7 families per bank on this id
    try:
        with pytest.raises(ConfigError, match="lower `n_agents`"):
            crowded.reset(seed=0)
    finally:
        crowded.close()
    with pytest.raises(FrozenParameterError, match="eval_in_family"):
        parallel_env(ENV_ID, eval_in_family=1)
    request = CommitRequest(0, "grow-plant", env.service.open(0, "grow-plant", 0).token, ())
    with pytest.raises(RewardServiceError, match="must be disjoint"):  # the service process's referee refuses it
        env.service.commit_joint([request, request])


@pytest.mark.timeout(600)
def test_board_dedupe_runs_through_the_reward_service_process(env):
    """The default service (its own process, the module's env): the joint commit crosses the pipe; board-dedupe
    posts and commits. (Two agents: the second drops what the first posted; it was three, issue 39: CI time.)"""
    out = run_parallel_episode(env, BoardDedupeConsolidator(max_posts=4), seed=5)
    assert len(out) == 2 and len({i["bank_after"] for i in out.values()}) == 1
    assert all(len(i["board_posts"]) >= 1 for i in out.values())
    assert all(i["return"] == pytest.approx(sum(i["reward_components"].values())) for i in out.values())
