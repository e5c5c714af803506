"""Quickstart: consolidate one region of a real ScienceWorld memory bank through tool calls.

Run: python docs/examples/quickstart.py   (a test runs this file)
"""
import json

import gymnasium as gym

import dreamer_gym  # noqa: F401  (registers the ids; `gym.make("dreamer_gym:...")` works without it)

env = gym.make("MemoryConsolidation-ScienceWorld-v1")  # reward-defining fields are frozen; budgets are free
obs, info = env.reset(seed=0, options={"family": "power-component"})
print(obs["region"].splitlines()[0])  # "Region family:power-component: N entries (read-only evidence)"

# Inspect: read the first procedure and the trajectory it was written from.
procedure = next(e for e in info["region"] if e["kind"] == "procedure")
obs, reward, terminated, truncated, info = env.step(json.dumps({"tool": "read_entry", "id": procedure["id"]}))
trajectory = procedure["provenance"][0]["trajectory_id"]
obs, *_ = env.step(json.dumps({"tool": "read_trajectory", "id": trajectory, "start": 0, "end": 5}))

# A bad call is an observation, not an exception.
obs, reward, terminated, truncated, info = env.step('{"tool": "keep", "ids": ["no-such-id"]}')
print("error:", info["last_error"], "reward:", reward)

# Write one abstract procedure (slots are filled by the downstream agent) and commit.
text = (
    "To turn on the light bulb: go to workshop, look around, focus on <color> light bulb, "
    "connect battery anode to <wire 1> terminal 1, connect battery cathode to <wire 2> terminal 1, "
    "connect <wire 1> terminal 2 to cathode in <color> light bulb, "
    "connect <wire 2> terminal 2 to anode in <color> light bulb, wait1"
)
env.step(json.dumps({"tool": "emit", "kind": "procedure", "text": text, "provenance": [procedure["id"]]}))
obs, reward, terminated, truncated, info = env.step(json.dumps({"tool": "commit"}))
print(f"score {info['score_before']:.1f} -> {info['score_after']:.1f}, "
      f"tokens {info['size_before']['tokens']} -> {info['size_after']['tokens']}, reward {reward:+.3f}")
print("other families' episodes:", info["score_delta_parts"], "comparable:", info["comparable"])
env.close()
