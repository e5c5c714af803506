"""Registered ids and their keyword arguments.

Versions (docs/env.md, "Versions"): a change that moves any reward gives every id it touches a new ``-vN``; the
old version stays registered, unchanged, and is documented as superseded (gym.make of it warns). ``-v1`` (issue
27): the strict tool contract (:mod:`dreamer_gym.envs.toolspec`); ``-v0``: the lenient contract 0."""
from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from dreamer_gym.envs.config import DEFAULT_FAMILIES
from dreamer_gym.envs.toolspec import LATEST_CONTRACT
from dreamer_gym.registration import env_kwargs

SCIENCEWORLD_POOL_HASH = "pbb9b36a4f660a660"
ALFWORLD_GEN_POOL_HASH = "p3a5243c94551d807"
MINIWOB_POOL_HASH = "pb3816741ee5a7b51"


@dataclass(frozen=True)
class EnvIdSpec:
    """What defines one registered id: every field but ``defaults`` is frozen (``gym.make`` may not override
    it, see :data:`FROZEN_FIELDS` and :mod:`dreamer_gym.envs.frozen`, which also freezes the LLM agent's
    model); ``defaults`` are free keyword arguments the id is registered with. Budgets (``max_tool_calls``,
    ``max_emitted``), workers, executor, service and store stay free for training runs; leaderboard tracks
    freeze the budgets too. :func:`dreamer_gym.registration.env_kwargs` turns one into ``gym.spec(id).kwargs``."""

    suite: str
    pool: str
    pool_hash: str | None
    split: str = "dev"
    reward_agent: str = "memory"
    eval_in_family: int = 3
    eval_other: int = 2
    size_coef: float = 0.02
    invalid_penalty: float = 0.01
    tool_contract: int = LATEST_CONTRACT  # what a well-formed tool call is (an invalid one costs invalid_penalty)
    max_entry_tokens: int = 320
    max_region_entries: int = 50
    agent_top_k: int | None = None  # None: the suite's SuiteSpec default (resolved before comparing)
    agent_max_steps: int | None = None
    defaults: tuple[tuple[str, Any], ...] = ()  # (name, value) pairs of free keyword arguments

    def llm(self, **frozen: Any) -> EnvIdSpec:
        """The same id with the LLM agent's score as the reward. Its model is frozen (the default SmolLM2-135M);
        the backend, server and timeouts stay free, so a GPU user serves the same model their own way."""
        return replace(self, reward_agent="llm", **frozen)


FROZEN_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(EnvIdSpec) if f.name != "defaults")

SCIENCEWORLD = EnvIdSpec("scienceworld", "scienceworld-v0", SCIENCEWORLD_POOL_HASH)
# ALFWorld-engine games generated offline (NOT the official splits; see docs/alfworld.md)
ALFWORLD_GEN = EnvIdSpec("alfworld-gen", "alfworld-gen-v0", ALFWORLD_GEN_POOL_HASH)
# MiniWoB++ pages through BrowserGym in Debian's Chromium (offline)
MINIWOB = EnvIdSpec("miniwob", "miniwob-v0", MINIWOB_POOL_HASH)
# The official games (`alfworld-download`, $ALFWORLD_DATA): not shipped and not reachable from here, so
# the pool is built on the user's machine on first use and cannot be pinned; fails at once without data.
ALFWORLD = EnvIdSpec("alfworld", "alfworld-v0", None)
# WebArena through BrowserGym: needs the self-hosted sites named by the WA_* variables; fails at once.
WEBARENA = EnvIdSpec("webarena", "webarena-v0", None)

# One line per id, at its latest version. The LLM ids: an LLM agent's score is the reward (the paper's setting);
# `llm` stays free so a GPU user points it at their own model or server, and every commit's info records it.
# 30 agent steps: enough for the gold paths, affordable for a CPU model (MiniWoB's suite default, 10, is lower).
LATEST_IDS: dict[str, EnvIdSpec] = {
    "MemoryConsolidation-ScienceWorld-v1": SCIENCEWORLD,
    # the LLM id keeps 6 entries: the 135M reference model's prompt stays within its short context
    "MemoryConsolidation-ScienceWorld-LLM-v1": SCIENCEWORLD.llm(agent_max_steps=30, agent_top_k=6),
    "MemoryConsolidation-ALFWorldGen-v1": ALFWORLD_GEN,
    "MemoryConsolidation-ALFWorldGen-LLM-v1": ALFWORLD_GEN.llm(agent_max_steps=30),
    "MemoryConsolidation-MiniWoB-v1": MINIWOB,
    "MemoryConsolidation-MiniWoB-LLM-v1": MINIWOB.llm(),
    "MemoryConsolidation-ALFWorld-v1": ALFWORLD,
    "MemoryConsolidation-WebArena-v1": WEBARENA,
}

# Superseded versions, still registered and unchanged (recorded runs and the leaderboard tracks use them):
# old id -> the id that supersedes it. -v0 differs from -v1 only in the tool contract (0: lenient).
SUPERSEDED: dict[str, str] = {env_id.replace("-v1", "-v0"): env_id for env_id in LATEST_IDS}
ENV_IDS: dict[str, EnvIdSpec] = {
    **{old: replace(LATEST_IDS[new], tool_contract=0) for old, new in SUPERSEDED.items()},
    **LATEST_IDS,
}

# what each id is registered with (`gym.spec(id).kwargs`): its frozen fields, its defaults and `frozen`
REGISTERED: dict[str, dict[str, Any]] = {env_id: env_kwargs(spec) for env_id, spec in ENV_IDS.items()}

# The transfer track: a consolidator trained on the first (ScienceWorld) is evaluated unchanged on the
# others. Ids that cannot run on a machine (no official ALFWorld data, no WebArena servers) say why.
TRANSFER_TRACK: tuple[tuple[str, str], ...] = (
    ("train suite", "MemoryConsolidation-ScienceWorld-v1"),
    ("held out, generated games", "MemoryConsolidation-ALFWorldGen-v1"),
    ("held out, web", "MemoryConsolidation-MiniWoB-v1"),
    ("held out", "MemoryConsolidation-ALFWorld-v1"),
    ("held out", "MemoryConsolidation-WebArena-v1"),
)

# the LLM-agent variant of each id, at each version (the CLI's --reward-agent llm picks it)
LLM_VARIANTS: dict[str, str] = {
    f"MemoryConsolidation-{suite}-{v}": f"MemoryConsolidation-{suite}-LLM-{v}"
    for suite in ("ScienceWorld", "ALFWorldGen", "MiniWoB") for v in ("v1", "v0")
}

__all__ = ["ALFWORLD_GEN_POOL_HASH", "MINIWOB_POOL_HASH", "DEFAULT_FAMILIES", "ENV_IDS", "FROZEN_FIELDS", "EnvIdSpec",
           "LATEST_IDS", "LLM_VARIANTS", "REGISTERED", "SCIENCEWORLD_POOL_HASH", "SUPERSEDED", "TRANSFER_TRACK"]
