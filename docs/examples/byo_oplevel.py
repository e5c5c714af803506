"""Bring your own algorithm: the op-level action space by hand, then the fixed `consensus` rule and a
trained op-level checkpoint as consolidators.

Run: python docs/examples/byo_oplevel.py   (a test runs this file)
"""
import gymnasium as gym
import numpy as np

import dreamer_gym  # noqa: F401  (registers the ids)
from dreamer_gym.consolidators import make_consolidator, run_episode
from dreamer_gym.envs.ops import DROP, MERGE
from dreamer_gym.methods.oplevel.wrapper import OpLevelWrapper

env = OpLevelWrapper(gym.make("MemoryConsolidation-ScienceWorld-v1"))
obs, info = env.reset(seed=0)  # obs: (50, 15) entry features; info["action_mask"]: (50, 4)
ops = np.full(env.max_entries, DROP)
for i, entry in enumerate(info["region"]):
    if entry["kind"] == "procedure":
        ops[i] = MERGE  # every procedure into one consensus entry; everything else dropped
obs, reward, terminated, truncated, info = env.step(ops)
print(f"merge procedures: score {info['score_before']} -> {info['score_after']}, reward {reward:+.3f}")
print("wrote:", info["emitted"][0]["text"][:120], "...")

# the same rule as a named consolidator, through the plain env (tool calls)
final = run_episode(env.env, make_consolidator("consensus"), seed=0)
print(f"consensus consolidator: score {final['score_before']} -> {final['score_after']}")
env.close()
