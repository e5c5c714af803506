"""Registered ids and their keyword arguments: each id is a :class:`RewardDefinition` plus free defaults.

Versions (docs/env.md, "Versions"): a change that moves any reward gives every id it touches a new ``-vN``; the
old version stays registered, unchanged, and is documented as superseded (gym.make of it warns). ``ScienceWorld-v2``
and ``ScienceWorldWindows-v1`` (issue 40): tool contract 2 and, on windows, filing under the window's own families;
``-v1`` (issue 27): the strict tool contract (:mod:`dreamer_gym.envs.toolspec`); ``-v0``: the lenient contract 0.

Every id is built by :func:`define_ids` from one base definition (the contract's defaults), so a changed
default moves every id, every env config, every track check and the referee together.
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from dreamer_gym.contract.config import DEFAULT_FAMILIES
from dreamer_gym.contract.definition import REWARD_FIELDS, RewardDefinition

SCIENCEWORLD_POOL_HASH = "pbb9b36a4f660a660"
ALFWORLD_GEN_POOL_HASH = "p3a5243c94551d807"
MINIWOB_POOL_HASH = "pb3816741ee5a7b51"
SCIENCEWORLD_WINDOWS_POOL_HASH = "p28d93d125475cebe"
# ScienceWorldWindows-v1's: the same cut of 28 banks (seeds 200-227: v0's 24 and 4 more), 355 windows (issue 40)
SCIENCEWORLD_WINDOWS_V1_POOL_HASH = "pf99cad561ba6dfec"


@dataclass(frozen=True)
class EnvIdSpec(RewardDefinition):
    """What defines one registered id: its :class:`RewardDefinition` (every field frozen: ``gym.make`` may
    not override it, see :mod:`dreamer_gym.contract.frozen`, which also freezes the LLM agent's model) and
    ``defaults``, free keyword arguments the id is registered with. Budgets (``max_tool_calls``,
    ``max_emitted``), workers, executor, service and store stay free for training runs; leaderboard tracks
    freeze the budgets too. :func:`env_kwargs` turns one into ``gym.spec(id).kwargs``."""

    defaults: tuple[tuple[str, Any], ...] = ()  # (name, value) pairs of free keyword arguments

    @classmethod
    def of(cls, base: RewardDefinition, **changes: Any) -> EnvIdSpec:
        """``base``'s definition with ``changes`` (and no free defaults)."""
        return cls(**{**{name: getattr(base, name) for name in REWARD_FIELDS}, **changes})

    def definition(self) -> RewardDefinition:
        """This id's reward definition alone (without the free defaults)."""
        return RewardDefinition(**{name: getattr(self, name) for name in REWARD_FIELDS})

    def llm(self, **frozen: Any) -> EnvIdSpec:
        """The same id with the LLM agent's score as the reward. Its model is frozen (the default SmolLM2-135M);
        the backend, server and timeouts stay free, so a GPU user serves the same model their own way."""
        return replace(self, reward_agent="llm", **frozen)


FROZEN_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(EnvIdSpec) if f.name != "defaults")  # = REWARD_FIELDS


def env_kwargs(spec: EnvIdSpec) -> dict[str, Any]:
    """``gym.spec(id).kwargs`` of one id: its frozen fields, its free defaults, and ``frozen`` (the
    frozen fields again, which :class:`~dreamer_gym.envs.consolidation.ConsolidationEnv` enforces)."""
    frozen = {name: getattr(spec, name) for name in FROZEN_FIELDS}
    return {**frozen, **dict(spec.defaults), "frozen": dict(frozen)}


def define_ids(base: RewardDefinition | None = None) -> dict[str, EnvIdSpec]:
    """Every registered id, superseded versions first, each ``base`` (default: the contract's
    :class:`RewardDefinition`) with its suite, pool and agent."""
    base = RewardDefinition() if base is None else base
    scienceworld = EnvIdSpec.of(base, suite="scienceworld", pool="scienceworld-v0", pool_hash=SCIENCEWORLD_POOL_HASH)
    # ALFWorld-engine games generated offline (NOT the official splits; see docs/alfworld.md)
    alfworld_gen = EnvIdSpec.of(base, suite="alfworld-gen", pool="alfworld-gen-v0", pool_hash=ALFWORLD_GEN_POOL_HASH)
    # MiniWoB++ pages through BrowserGym in Debian's Chromium (offline)
    miniwob = EnvIdSpec.of(base, suite="miniwob", pool="miniwob-v0", pool_hash=MINIWOB_POOL_HASH)
    # The official games (`alfworld-download`, $ALFWORLD_DATA): not shipped and not reachable from here, so
    # the pool is built on the user's machine on first use and cannot be pinned; fails at once without data.
    alfworld = EnvIdSpec.of(base, suite="alfworld", pool="alfworld-v0", pool_hash=None)
    # WebArena through BrowserGym: needs the self-hosted sites named by the WA_* variables; fails at once.
    webarena = EnvIdSpec.of(base, suite="webarena", pool="webarena-v0", pool_hash=None)
    # One line per id, at its latest version. The LLM ids: an LLM agent's score is the reward (the paper's
    # setting); `llm` stays free so a GPU user points it at their own model or server, and every commit's info
    # records it. 30 agent steps: enough for the gold paths, affordable for a CPU model (MiniWoB's suite
    # default, 10, is lower).
    latest = {
        "MemoryConsolidation-ScienceWorld-v1": scienceworld,
        # the LLM id keeps 6 entries: the 135M reference model's prompt stays within its short context
        "MemoryConsolidation-ScienceWorld-LLM-v1": scienceworld.llm(agent_max_steps=30, agent_top_k=6),
        "MemoryConsolidation-ALFWorldGen-v1": alfworld_gen,
        "MemoryConsolidation-ALFWorldGen-LLM-v1": alfworld_gen.llm(agent_max_steps=30),
        "MemoryConsolidation-MiniWoB-v1": miniwob,
        "MemoryConsolidation-MiniWoB-LLM-v1": miniwob.llm(),
        "MemoryConsolidation-ALFWorld-v1": alfworld,
        "MemoryConsolidation-WebArena-v1": webarena,
    }
    # The paper's regions (issue 31): time windows of the agent's episodes with the older entries they retrieved,
    # from writers of three skill levels (pool `scienceworld-windows-r3-v0`), and a reward a learner can read: 20
    # in-family episodes a commit (one commit's SD 0.006 against a 0.014 gap between a region's best rule and
    # its runner-up; at 3 episodes the SD is six times the gap: docs/learnability.md). Its own name, not
    # ScienceWorld-v2: the regions are a different task (no `family` option, no joint commits).
    windows = EnvIdSpec.of(base, suite="scienceworld", pool="scienceworld-windows-r3-v0",
                           pool_hash=SCIENCEWORLD_WINDOWS_POOL_HASH, eval_in_family=20)
    # Issue 40, one bump for both: tool contract 2 (the whole bank read-only through read_entry and search, the
    # `synthesize` tool, the bank context in the observation) and, on windows, a new entry filed only under a family
    # the window's own sessions played (dreamer_gym.contract.filing), on a pool of 355 training windows (v0's 24
    # banks and 4 more: the >= 300 training windows the learners need).
    v2 = {"MemoryConsolidation-ScienceWorld-v2": replace(scienceworld, tool_contract=2),
          "MemoryConsolidation-ScienceWorldWindows-v1": replace(
              windows, tool_contract=2, window_own_families=True, pool="scienceworld-windows-r3-v1",
              pool_hash=SCIENCEWORLD_WINDOWS_V1_POOL_HASH)}
    # -v0 differs from -v1 only in the tool contract (0: lenient)
    return {**{old: replace(latest[new], tool_contract=0) for old, new in _v0_of(latest).items()}, **latest,
            "MemoryConsolidation-ScienceWorldWindows-v0": windows, **v2}


def _v0_of(ids: dict[str, EnvIdSpec]) -> dict[str, str]:
    """``X-v0`` -> ``X-v1`` for each ``-v1`` id among ``ids``."""
    return {env_id.replace("-v1", "-v0"): env_id for env_id in ids if env_id.endswith("-v1")}


def _name_and_version(env_id: str) -> tuple[str, int]:
    name, _, version = env_id.rpartition("-v")
    return name, int(version)


def superseded(ids: dict[str, EnvIdSpec]) -> dict[str, str]:
    """Old id -> the newest id of the same name among ``ids`` (``ScienceWorld-v0`` and ``-v1`` -> ``-v2``)."""
    newest: dict[str, int] = {}
    for env_id in ids:
        name, version = _name_and_version(env_id)
        newest[name] = max(version, newest.get(name, version))
    out = {}
    for env_id in ids:
        name, version = _name_and_version(env_id)
        if version < newest[name]:
            out[env_id] = f"{name}-v{newest[name]}"
    return out


ENV_IDS: dict[str, EnvIdSpec] = define_ids()
# Superseded versions, still registered and unchanged (recorded runs and the leaderboard tracks use them)
SUPERSEDED: dict[str, str] = superseded(ENV_IDS)
# every id nothing supersedes (ScienceWorld-v2, ScienceWorldWindows-v1, the other suites' -v1 ids)
LATEST_IDS: dict[str, EnvIdSpec] = {env_id: spec for env_id, spec in ENV_IDS.items() if env_id not in SUPERSEDED}
# the ids the protocol-3 tracks, the demo and the recorded runs measure (ScienceWorld-v1: superseded by -v2, whose
# track is protocol 4's)
SCIENCEWORLD = ENV_IDS["MemoryConsolidation-ScienceWorld-v1"]
ALFWORLD_GEN = LATEST_IDS["MemoryConsolidation-ALFWorldGen-v1"]
MINIWOB = LATEST_IDS["MemoryConsolidation-MiniWoB-v1"]
ALFWORLD = LATEST_IDS["MemoryConsolidation-ALFWorld-v1"]
WEBARENA = LATEST_IDS["MemoryConsolidation-WebArena-v1"]
SCIENCEWORLD_WINDOWS = ENV_IDS["MemoryConsolidation-ScienceWorldWindows-v0"]
SCIENCEWORLD_V2 = LATEST_IDS["MemoryConsolidation-ScienceWorld-v2"]
SCIENCEWORLD_WINDOWS_V1 = LATEST_IDS["MemoryConsolidation-ScienceWorldWindows-v1"]

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

__all__ = ["ALFWORLD", "ALFWORLD_GEN", "ALFWORLD_GEN_POOL_HASH", "DEFAULT_FAMILIES", "ENV_IDS", "FROZEN_FIELDS",
           "LATEST_IDS", "LLM_VARIANTS", "MINIWOB", "MINIWOB_POOL_HASH", "REGISTERED", "SCIENCEWORLD",
           "SCIENCEWORLD_POOL_HASH", "SCIENCEWORLD_V2", "SCIENCEWORLD_WINDOWS", "SCIENCEWORLD_WINDOWS_V1", "SCIENCEWORLD_WINDOWS_POOL_HASH", "SCIENCEWORLD_WINDOWS_V1_POOL_HASH", "SUPERSEDED", "TRANSFER_TRACK", "WEBARENA", "EnvIdSpec", "define_ids",
           "env_kwargs"]
