"""Bring your own algorithm: sb3-contrib's MaskablePPO on the op-level wrapper, unchanged.

One step = one op per entry (drop, keep, merge, abstract) and one commit; the wrapper exposes
``action_masks()``, which MaskablePPO reads. Run: python docs/examples/byo_sb3.py   (a test runs this file)
"""
import gymnasium as gym
from sb3_contrib import MaskablePPO

import dreamer_gym  # noqa: F401  (registers the ids)
from dreamer_gym.envs.ops import OPS
from dreamer_gym.methods.oplevel.wrapper import OpLevelWrapper

env = OpLevelWrapper(gym.make("MemoryConsolidation-ScienceWorld-v1"))
# each step is a real commit (~1-5 s on 2 cores): keep n_steps small on a laptop
model = MaskablePPO("MlpPolicy", env, n_steps=4, batch_size=4, n_epochs=2, seed=0, device="cpu")
model.learn(total_timesteps=4)

obs, info = env.reset(seed=1)
action, _ = model.predict(obs, action_masks=env.action_masks(), deterministic=True)
obs, reward, terminated, truncated, info = env.step(action)
print(f"ops played: {info['ops_played']} (of {OPS}); masked ops: {info['invalid_ops']}")
print(f"score {info['score_before']} -> {info['score_after']}, reward {reward:+.3f}, "
      f"tokens {info['size_before']['tokens']} -> {info['size_after']['tokens']}")
env.close()
