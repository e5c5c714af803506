"""Vector envs whose sub-envs share one reward service: gym.make_vec, in this process or in sub-processes.

Run: python docs/examples/vector_env.py   (a test runs this file)
"""
import json

import gymnasium as gym
import numpy as np

import dreamer_gym  # noqa: F401 - registers the ids

if __name__ == "__main__":  # async sub-envs start processes: keep the guard
    # vector_mode="async": each sub-env in its own process (gymnasium's AsyncVectorEnv), all reaching one reward
    # host; "sync" (the default) keeps them in this process. Both score a step's commits in one evaluation run.
    envs = gym.make_vec("MemoryConsolidation-ScienceWorld-v1", num_envs=2, vector_mode="async")
    try:
        observations, infos = envs.reset(seed=[0, 1])
        # each sub-env keeps its whole region (its reward is 0 before the size term), then commits
        keep = [json.dumps({"tool": "keep", "ids": [e["id"] for e in region]}) for region in infos["region"]]
        envs.step(np.array(keep, dtype=object))
        observations, rewards, terminated, truncated, infos = envs.step(
            np.array([json.dumps({"tool": "commit"})] * 2, dtype=object))
        print(f"committed: {terminated.tolist()}, score before {infos['score_before'].tolist()}, "
              f"score after {infos['score_after'].tolist()}, rewards {rewards.round(4).tolist()}")
    finally:
        envs.close()
