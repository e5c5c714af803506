"""Wrappers: one prompt string for LLM policies."""
from __future__ import annotations

from typing import Any

import gymnasium as gym

from dreamer_gym.envs.spaces import text_space
from dreamer_gym.envs.tools import TOOLS

PROMPT_CHARS = 65_536

_HEADER = """You consolidate one region of an agent's memory bank. The region below is read-only evidence:
entries (procedure, insight, fact, pitfall) with the trajectories they came from. Use tool calls to
inspect it, then write a fresh, compact replacement set (keep or emit), and commit. A downstream agent
will use the new region on held-out tasks; your reward is its score change minus a size term.
Reply with exactly one JSON object per turn. Tools:
"""


class PromptObservation(gym.ObservationWrapper):
    """Render the dict observation as one prompt string (tool schema, region, last result, budget)."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.observation_space = text_space(PROMPT_CHARS)

    def observation(self, observation: dict[str, Any]) -> str:
        tools = "\n".join(f"- {spec}" for spec in TOOLS.values())
        calls, emits, emitted, size = (int(x) for x in observation["budget"])
        text = (
            f"{_HEADER}{tools}\n\n{observation['region']}\n\nLast result: {observation['result']}\n"
            f"Budget: {calls} tool calls left, {emits} new entries left, {emitted} in the new region, "
            f"{size} entries in the region.\n"
        )
        return text[:PROMPT_CHARS]
