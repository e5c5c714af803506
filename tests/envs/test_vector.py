"""Async vector envs work with text spaces when shared memory is off."""
from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

import dreamer_gym  # noqa: F401


# ~10 s, two simulators (issue 39: CI time). In CI, tests/envs/test_vector_env.py's async case runs the same
# gymnasium AsyncVectorEnv (SharedAsyncVectorEnv subclasses it, shared memory off) over these text spaces through
# a reset, a keep and a commit, and checks the batched observations, rewards and infos.
@pytest.mark.heavy
@pytest.mark.jvm
def test_async_vector_env_with_text_spaces() -> None:
    envs = gym.make_vec(
        "MemoryConsolidation-ScienceWorld-v1", num_envs=2, vectorization_mode="async",
        vector_kwargs={"shared_memory": False},
    )
    try:
        obs, info = envs.reset(seed=[0, 1])
        assert obs["budget"].shape == (2, 4) and len(obs["region"]) == 2
        assert obs["region"][0] != obs["region"][1]  # different seeds, different regions
        # keep each whole region, then commit: the bank is unchanged, so each commit plays its episodes once (the
        # after-scores come from the evaluation cache; issue 39: CI time)
        envs.step([json.dumps({"tool": "keep", "ids": [e["id"] for e in region]}) for region in info["region"]])
        obs, reward, terminated, truncated, info = envs.step([json.dumps({"tool": "commit"})] * 2)
        assert terminated.all() and not truncated.any()
        assert np.all(np.isfinite(reward))
        assert "score_after" in info and len(info["score_after"]) == 2
    finally:
        envs.close()
