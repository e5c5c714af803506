"""The random consolidator: every call it makes is valid, on 100 regions; its calls are reproducible."""
from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator

import gymnasium as gym
import pytest

import dreamer_gym  # noqa: F401 - registers the ids
from dreamer_gym.consolidators import RandomConsolidator, make_consolidator, run_episode
from dreamer_gym.envs.tools import TOOLS

from helpers import make_env

ENV_ID = "MemoryConsolidation-ScienceWorld-v0"


@pytest.fixture(scope="module")
def env() -> Iterator[gym.Env]:
    env = make_env(ENV_ID, eval_in_family=1, eval_other=0)
    yield env
    env.close()


def _play_until_commit(env: gym.Env, policy: RandomConsolidator, seed: int) -> list[str]:
    """Reset and send every call but the commit, checking each is valid; the calls sent."""
    obs, info = env.reset(seed=seed)
    calls = policy.actions(env, obs, info)
    sent: list[str] = []
    action = next(calls)
    while json.loads(action)["tool"] != "commit":
        obs, _, terminated, truncated, info = env.step(action)
        assert info["last_error"] is None, (seed, action, info["last_error"])
        assert info["invalid_calls"] == 0 and not (terminated or truncated), (seed, action)
        sent.append(action)
        action = calls.send((obs, info))
    return sent


def test_every_call_is_valid_on_100_resets(env: gym.Env) -> None:
    """Up to the commit (whose evaluation is what costs; a few commits run in the next test)."""
    policy = RandomConsolidator(seed=0)
    tools: Counter[str] = Counter()
    lengths = []
    for seed in range(100):
        sent = _play_until_commit(env, policy, seed)
        tools.update(json.loads(a)["tool"] for a in sent)
        lengths.append(len(sent))
    assert set(tools) == set(TOOLS) - {"commit"}, tools  # every tool but commit was drawn, and was valid
    assert min(lengths) < 10 and max(lengths) > 30  # a random number of calls within the 40-call budget


def test_calls_are_reproducible_from_the_seed_and_the_region(env: gym.Env) -> None:
    first = _play_until_commit(env, RandomConsolidator(seed=7), seed=3)
    assert _play_until_commit(env, RandomConsolidator(seed=7), seed=3) == first
    assert _play_until_commit(env, RandomConsolidator(seed=8), seed=3) != first


@pytest.mark.jvm
def test_it_commits_with_only_valid_calls(env: gym.Env) -> None:
    policy = make_consolidator("random", seed=0)
    for seed in range(3):
        info = run_episode(env, policy, seed=seed)
        assert info["invalid_calls"] == 0 and info["last_error"] is None
        assert "score_after" in info and info["tool_calls_left"] >= 0


def test_max_calls_caps_the_calls_before_the_commit(env: gym.Env) -> None:
    assert all(len(_play_until_commit(env, RandomConsolidator(seed=0, max_calls=2), s)) <= 2 for s in range(5))
