"""Registered ids and their keyword arguments. The pool hash is pinned: a different pool is a new -vN."""
from __future__ import annotations

from typing import Any

from dreamer_gym.envs.config import DEFAULT_FAMILIES

SCIENCEWORLD_POOL_HASH = "p3f95ce9c9b3fb053"
ALFWORLD_GEN_POOL_HASH = "p3a5243c94551d807"
MINIWOB_POOL_HASH = "pb3816741ee5a7b51"

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

# ALFWorld-engine games generated offline (NOT the official splits; see docs/alfworld.md). 50 agent steps:
# ALFWorld's usual episode limit, which the suite enforces too.
_ALFWORLD_GEN = {
    "suite": "alfworld-gen",
    "pool": "alfworld-gen-v0",
    "pool_hash": ALFWORLD_GEN_POOL_HASH,
    "split": "dev",
    "reward_agent": "memory",
}
# MiniWoB++ pages through BrowserGym in Debian's Chromium (offline). 10 agent steps: MiniWoB's tasks take 1-5.
# 10 retrieved entries: they are one line each (~24 tokens), and with 6 the other families' raw "Select ...
# and click Submit" entries crowded a consolidated click-option procedure out of the agent's context.
_MINIWOB = {
    "suite": "miniwob",
    "pool": "miniwob-v0",
    "pool_hash": MINIWOB_POOL_HASH,
    "split": "dev",
    "reward_agent": "memory",
}
# The official games (`alfworld-download`, $ALFWORLD_DATA): not shipped and not reachable from here, so
# the pool is built on the user's machine on first use and cannot be pinned; fails at once without data.
_ALFWORLD = {"suite": "alfworld", "pool": "alfworld-v0", "pool_hash": None, "split": "dev", "reward_agent": "memory"}
# WebArena through BrowserGym: needs the self-hosted sites named by the WA_* variables; fails at once.
_WEBARENA = {"suite": "webarena", "pool": "webarena-v0", "pool_hash": None, "split": "dev", "reward_agent": "memory"}


def _llm(spec: dict[str, Any]) -> dict[str, Any]:
    return {**spec, "reward_agent": "llm"}


REGISTERED: dict[str, dict[str, Any]] = {
    "MemoryConsolidation-ScienceWorld-v0": {**_SCIENCEWORLD, "frozen": dict(_SCIENCEWORLD)},
    "MemoryConsolidation-ScienceWorld-LLM-v0": {**_SCIENCEWORLD_LLM, "agent_max_steps": 30,
                                                "frozen": dict(_SCIENCEWORLD_LLM)},
    "MemoryConsolidation-ALFWorldGen-v0": {**_ALFWORLD_GEN, "agent_max_steps": 50, "frozen": dict(_ALFWORLD_GEN)},
    "MemoryConsolidation-ALFWorldGen-LLM-v0": {**_llm(_ALFWORLD_GEN), "agent_max_steps": 30,
                                               "frozen": _llm(_ALFWORLD_GEN)},
    "MemoryConsolidation-MiniWoB-v0": {**_MINIWOB, "agent_max_steps": 10, "agent_top_k": 10, "frozen": dict(_MINIWOB)},
    "MemoryConsolidation-MiniWoB-LLM-v0": {**_llm(_MINIWOB), "agent_max_steps": 10, "agent_top_k": 10,
                                           "frozen": _llm(_MINIWOB)},
    "MemoryConsolidation-ALFWorld-v0": {**_ALFWORLD, "agent_max_steps": 50, "frozen": dict(_ALFWORLD)},
    "MemoryConsolidation-WebArena-v0": {**_WEBARENA, "frozen": dict(_WEBARENA)},
}

# The transfer track: a consolidator trained on the first (ScienceWorld) is evaluated unchanged on the
# others. Ids that cannot run on a machine (no official ALFWorld data, no WebArena servers) say why.
TRANSFER_TRACK: tuple[tuple[str, str], ...] = (
    ("train suite", "MemoryConsolidation-ScienceWorld-v0"),
    ("held out, generated games", "MemoryConsolidation-ALFWorldGen-v0"),
    ("held out, web", "MemoryConsolidation-MiniWoB-v0"),
    ("held out", "MemoryConsolidation-ALFWorld-v0"),
    ("held out", "MemoryConsolidation-WebArena-v0"),
)

# the LLM-agent variant of each id (the CLI's --reward-agent llm picks it)
LLM_VARIANTS: dict[str, str] = {
    "MemoryConsolidation-ScienceWorld-v0": "MemoryConsolidation-ScienceWorld-LLM-v0",
    "MemoryConsolidation-ALFWorldGen-v0": "MemoryConsolidation-ALFWorldGen-LLM-v0",
    "MemoryConsolidation-MiniWoB-v0": "MemoryConsolidation-MiniWoB-LLM-v0",
}

__all__ = ["ALFWORLD_GEN_POOL_HASH", "MINIWOB_POOL_HASH", "DEFAULT_FAMILIES", "FROZEN_FIELDS", "LLM_VARIANTS", "REGISTERED", "SCIENCEWORLD_POOL_HASH", "TRANSFER_TRACK"]
