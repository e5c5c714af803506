"""Registered ids and their keyword arguments. The pool hash is pinned: a different pool is a new -vN."""
from __future__ import annotations

from typing import Any

from dreamer_gym.envs.config import DEFAULT_FAMILIES

SCIENCEWORLD_POOL_HASH = "p57e204ac3446ab61"

REGISTERED: dict[str, dict[str, Any]] = {
    "MemoryConsolidation-ScienceWorld-v0": {
        "suite": "scienceworld",
        "pool": "scienceworld-v0",
        "pool_hash": SCIENCEWORLD_POOL_HASH,
    },
}

__all__ = ["DEFAULT_FAMILIES", "REGISTERED", "SCIENCEWORLD_POOL_HASH"]
