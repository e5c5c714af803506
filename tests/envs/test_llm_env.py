"""The LLM-agent ids: the same env contract, rewarded by the LLM agent (real SmolLM2-135M on real
ScienceWorld, generated ALFWorld games and MiniWoB in Chromium)."""
from __future__ import annotations

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

from dreamer_gym.contract.ids import LATEST_IDS, REGISTERED
from dreamer_gym.errors import ConfigError, FrozenParameterError

from helpers import call, make_env

LLM_ENV_IDS = sorted(i for i, kw in REGISTERED.items() if kw["reward_agent"] == "llm" and i in LATEST_IDS)

# One family per suite that every bank of its pool holds (the option must name a family of the bank).
FAMILY = {"scienceworld": "use-thermometer", "alfworld-gen": "pick_and_place_simple", "miniwob": "click-button"}

# One episode of one step per bank, and the referee in this process (a service process would import torch and
# transformers again before loading the model); issue 39: CI time. The process service is tested in tests/service.
TINY = {"eval_in_family": 1, "eval_other": 0, "agent_max_steps": 1, "max_region_entries": 8, "service": "inprocess"}


@pytest.mark.parametrize("env_id", LLM_ENV_IDS)
@pytest.mark.jvm
def test_llm_env_passes_check_env_and_a_commit_is_rewarded_by_the_llm_agent(env_id: str) -> None:
    env = make_env(env_id, **TINY)  # a tiny experiment on the id: not comparable, and says so
    try:
        check_env(env.unwrapped, skip_render_check=True)
        obs, info = env.reset(seed=0, options={"family": FAMILY[REGISTERED[env_id]["suite"]]})
        first = info["region"][0]["id"]
        env.step(call("keep", ids=[first]))
        obs, reward, terminated, truncated, info = env.step(call("commit"))
        assert terminated and isinstance(reward, float)
        assert info["reward_agent"]["name"] == "llm" and info["reward_agent"]["max_steps"] == 1
        assert info["reward_agent"]["llm"]["model"] == "smollm2-135m"
        assert not info["episode_errors"]
        assert info["comparable"] is False and info["env_id"] is None
        for ep in info["episodes"]:
            assert 0.0 <= ep["before"] <= 100.0 and 0.0 <= ep["after"] <= 100.0
    finally:
        env.close()


@pytest.mark.parametrize("env_id", LLM_ENV_IDS)
def test_llm_env_freezes_the_model_but_not_where_it_runs(env_id: str) -> None:
    """The agent and its model define the reward; the backend and server only say where it runs."""
    with pytest.raises(FrozenParameterError, match="reward_agent"):
        gym.make(env_id, reward_agent="memory")
    with pytest.raises(FrozenParameterError, match="`llm.model` is frozen at 'smollm2-135m'"):
        gym.make(env_id, llm={"backend": "openai", "base_url": "http://127.0.0.1:8000/v1", "model": "served"})
    env = gym.make(env_id, llm={"backend": "openai", "base_url": "http://127.0.0.1:8000/v1", "model": "smollm2-135m"})
    assert env.unwrapped.config.llm.backend == "openai"  # nothing is loaded or contacted until a commit
    env.close()
    with pytest.raises(ConfigError, match="api_key"):
        gym.make(env_id, llm={"backend": "openai", "base_url": "http://x/v1", "api_key": "sk-inline"})


def test_memory_id_refuses_the_llm_agent() -> None:
    with pytest.raises(FrozenParameterError, match="reward_agent"):
        gym.make("MemoryConsolidation-ScienceWorld-v1", reward_agent="llm")
