"""The reward definition: every field that decides what a commit's reward measures, declared once.

:class:`RewardDefinition` is the one place these fields and their defaults are written. The rest of the
house derives from it: an env id's frozen values are a ``RewardDefinition`` (:mod:`dreamer_gym.contract.ids`),
the env's :class:`~dreamer_gym.contract.config.ConsolidationConfig` subclasses it, the frozen-field checks
iterate :data:`REWARD_FIELDS` (:mod:`dreamer_gym.contract.frozen`), a leaderboard track's YAML values are
checked against it, and the referee scores with it. :class:`Budgets` are the two episode budgets a training
id leaves free and a track freezes.

Also here, because the referee checks them and an env id names them: the tool contracts (what a
well-formed tool call is; :mod:`dreamer_gym.envs.toolspec` spells each one out) and the character cap per
token of an emitted entry.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields

# 0: the lenient tool contract of the -v0 ids; 1: the strict one of the -v1 ids; 2: contract 1 plus the whole bank
# read-only (read_entry, search) and the `synthesize` tool, with the bank context in the observation (issue 40:
# ScienceWorld-v2, ScienceWorldWindows-v1)
CONTRACTS: tuple[int, ...] = (0, 1, 2)
LATEST_CONTRACT = 2
V1_CONTRACT = 1  # the default of RewardDefinition: every id registered before issue 40 was defined on it
CHARS_PER_TOKEN = 12  # character cap per emitted entry = max_entry_tokens * this


@dataclass(frozen=True)
class RewardDefinition:
    """What a reward measures. Every field is frozen by a registered id (``gym.make`` may not override it)
    and by a leaderboard track; an env built with another value labels its commits ``comparable: False``.

    Example:
        >>> RewardDefinition(suite="miniwob", pool="miniwob-v0").size_coef
        0.02
    """

    suite: str = field(default="scienceworld", metadata={"help": "task suite the bank was acquired on"})
    pool: str = field(default="scienceworld-v0", metadata={"help": "frozen bank pool (package data name or path)"})
    pool_hash: str | None = field(default=None, metadata={"help": "pinned pool hash; None skips the check"})
    split: str = field(default="dev", metadata={"help": "evaluation split: dev (training) or test (tracks only)"})
    eval_in_family: int = field(default=3, metadata={"help": "evaluation episodes from the region's family"})
    eval_other: int = field(default=2, metadata={"help": "evaluation episodes from other families"})
    size_coef: float = field(default=0.02, metadata={"help": "reward per relative change of region tokens"})
    invalid_penalty: float = field(default=0.01, metadata={"help": "reward cost of one invalid tool call"})
    tool_contract: int = field(default=V1_CONTRACT, metadata={
        "help": "which tools exist and what a well-formed call is (dreamer_gym.envs.toolspec): 2 the whole bank "
                "read-only, `synthesize` and the bank context (ScienceWorld-v2, ScienceWorldWindows-v1), 1 strict "
                "(the -v1 ids), 0 lenient (the superseded -v0 ids)", "choices": CONTRACTS})
    max_entry_tokens: int = field(default=320, metadata={"help": "tokens per emitted entry"})
    max_region_entries: int = field(default=50, metadata={"help": "largest working region shown"})
    reward_agent: str = field(default="memory", metadata={
        "help": "downstream agent: memory (deterministic, CPU) or llm (ReAct prompt on `llm`)"})
    agent_top_k: int | None = field(default=None, metadata={
        "help": "entries retrieved into the downstream agent's context (None = the suite's default)"})
    agent_max_steps: int | None = field(default=None, metadata={
        "help": "downstream agent steps per episode (None = the suite's default)"})
    window_own_families: bool = field(default=False, metadata={
        "help": "window regions: a new entry may be filed only under a family the window's own sessions played "
                "(the families its evaluation draws from; dreamer_gym.contract.filing). False: the rule of "
                "ScienceWorldWindows-v0, any family of the region's entries, an older retrieved one's included. "
                "It changes which commits are accepted: True from ScienceWorldWindows-v1 on (issue 40)"})


@dataclass(frozen=True)
class Budgets:
    """What one consolidation episode may spend: free on a training id, frozen on a track."""

    max_tool_calls: int = field(default=40, metadata={"help": "tool calls per episode; running out commits"})
    max_emitted: int = field(default=12, metadata={"help": "new entries `emit` may write (`keep` is free)"})


REWARD_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(RewardDefinition))
BUDGET_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Budgets))
# With reward_agent="llm", the LLM agent's model is reward-defining too: these fields of its LLMConfig (the
# model, not where or how fast it runs: backend, server and timeouts stay free).
LLM_REWARD_FIELDS: tuple[str, ...] = ("model", "gguf_file", "max_context")

__all__ = ["BUDGET_FIELDS", "CHARS_PER_TOKEN", "CONTRACTS", "LATEST_CONTRACT", "V1_CONTRACT", "LLM_REWARD_FIELDS", "REWARD_FIELDS",
           "Budgets", "RewardDefinition"]
