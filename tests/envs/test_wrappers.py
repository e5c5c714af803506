"""Wrappers: one prompt string for LLM policies; fixed-size spaces for SB3-style libraries."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import dreamer_gym  # noqa: F401
from dreamer_gym.envs.tools import TOOLS
from dreamer_gym.envs.wrappers import ENTRY_FEATURES, EntryOpsWrapper, PromptObservation

ENV_ID = "MemoryConsolidation-ScienceWorld-v0"


def test_prompt_observation_holds_schema_region_and_budget() -> None:
    env = PromptObservation(gym.make(ENV_ID, eval_in_family=1, eval_other=0))
    obs, info = env.reset(seed=3)
    assert isinstance(obs, str) and env.observation_space.contains(obs)
    for name in TOOLS:
        assert name in obs
    assert info["region"][0]["id"] in obs
    assert "tool calls left" in obs
    obs, reward, *_ = env.step('{"tool": "search", "query": "kitchen", "k": 2}')
    assert "Last result:" in obs
    env.close()


@pytest.mark.jvm
def test_entry_ops_wrapper_passes_checker_and_keep_all_is_zero() -> None:
    env = EntryOpsWrapper(gym.make(ENV_ID, eval_in_family=1, eval_other=0))
    check_env(env, skip_render_check=True)
    obs, info = env.reset(seed=0)
    assert obs.shape == (50, len(ENTRY_FEATURES))
    n = info["n_entries"]
    assert obs[:n, :4].sum() == n and obs[n:].sum() == 0  # one kind per real entry, zero padding
    _, reward, terminated, truncated, info = env.step(np.ones(50, dtype=np.int64))
    assert terminated and not truncated
    assert info["reward_components"] == {"score_delta": 0.0, "size": 0.0}
    env.close()
