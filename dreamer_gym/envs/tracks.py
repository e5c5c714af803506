"""Registered ids and their keyword arguments. The pool hash is pinned: a different pool is a new -vN."""
from __future__ import annotations

from typing import Any

from dreamer_gym.envs.config import DEFAULT_FAMILIES

SCIENCEWORLD_POOL_HASH = "p3f95ce9c9b3fb053"

# What defines an id is frozen: gym.make may not override these (FrozenParameterError). Everything
# else (evaluation sizes, budgets, workers, store) stays a free keyword argument for training runs;
# leaderboard tracks freeze more.
FROZEN_FIELDS: tuple[str, ...] = ("suite", "pool", "pool_hash", "split", "reward_agent")

_SCIENCEWORLD = {
    "suite": "scienceworld",
    "pool": "scienceworld-v0",
    "pool_hash": SCIENCEWORLD_POOL_HASH,
    "split": "dev",
    "reward_agent": "memory",
}

# The paper's setting: an LLM agent's score is the reward. `llm` (backend, model) stays free so a GPU user
# points it at their own model or server; results are comparable only under the same `llm`, which
# every commit's info records. 30 agent steps: enough for the gold paths, affordable for a CPU model.
_SCIENCEWORLD_LLM = {**_SCIENCEWORLD, "reward_agent": "llm"}

REGISTERED: dict[str, dict[str, Any]] = {
    "MemoryConsolidation-ScienceWorld-v0": {**_SCIENCEWORLD, "frozen": dict(_SCIENCEWORLD)},
    "MemoryConsolidation-ScienceWorld-LLM-v0": {**_SCIENCEWORLD_LLM, "agent_max_steps": 30,
                                                "frozen": dict(_SCIENCEWORLD_LLM)},
}

# the LLM-agent variant of each id (the CLI's --reward-agent llm picks it)
LLM_VARIANTS: dict[str, str] = {"MemoryConsolidation-ScienceWorld-v0": "MemoryConsolidation-ScienceWorld-LLM-v0"}

__all__ = ["DEFAULT_FAMILIES", "FROZEN_FIELDS", "LLM_VARIANTS", "REGISTERED", "SCIENCEWORLD_POOL_HASH"]
