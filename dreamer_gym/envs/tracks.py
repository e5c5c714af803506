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

REGISTERED: dict[str, dict[str, Any]] = {
    "MemoryConsolidation-ScienceWorld-v0": {**_SCIENCEWORLD, "frozen": dict(_SCIENCEWORLD)},
}

__all__ = ["DEFAULT_FAMILIES", "FROZEN_FIELDS", "REGISTERED", "SCIENCEWORLD_POOL_HASH"]
