"""The env's configuration: a dataclass is the schema, checked in ``__post_init__``."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dreamer_gym.agents.base import AgentConfig
from dreamer_gym.envs.toolspec import CONTRACTS, LATEST_CONTRACT
from dreamer_gym.errors import ConfigError
from dreamer_gym.llm.config import LLMConfig
from dreamer_gym.suites.registry import get_suite_spec
from dreamer_gym.suites.scienceworld import FAMILIES as SCIENCEWORLD_FAMILIES

REWARD_AGENTS = {"memory": "memory-following", "llm": "llm"}  # env config name -> agent name

DEFAULT_FAMILIES: tuple[str, ...] = SCIENCEWORLD_FAMILIES  # the default pool's (kept for older imports)


@dataclass(frozen=True)
class ConsolidationConfig:
    suite: str = field(default="scienceworld", metadata={"help": "task suite the bank was acquired on"})
    pool: str = field(default="scienceworld-v0", metadata={"help": "frozen bank pool (package data name or path)"})
    pool_hash: str | None = field(default=None, metadata={"help": "pinned pool hash; None skips the check"})
    split: str = field(default="dev", metadata={"help": "evaluation split: dev (training) or test (tracks only)"})
    eval_in_family: int = field(default=3, metadata={"help": "evaluation episodes from the region's family"})
    eval_other: int = field(default=2, metadata={"help": "evaluation episodes from other families"})
    max_tool_calls: int = field(default=40, metadata={"help": "tool calls per episode; running out commits"})
    max_emitted: int = field(default=12, metadata={"help": "new entries `emit` may write (`keep` is free)"})
    max_entry_tokens: int = field(default=320, metadata={"help": "tokens per emitted entry"})
    max_region_entries: int = field(default=50, metadata={"help": "largest working region shown"})
    size_coef: float = field(default=0.02, metadata={"help": "reward per relative change of region tokens"})
    invalid_penalty: float = field(default=0.01, metadata={"help": "reward cost of one invalid tool call"})
    tool_contract: int = field(default=LATEST_CONTRACT, metadata={
        "help": "what a well-formed tool call is (dreamer_gym.envs.toolspec): 1 strict (the -v1 ids), 0 lenient "
                "(the superseded -v0 ids)", "choices": CONTRACTS})
    reward_agent: str = field(default="memory", metadata={
        "help": "downstream agent: memory (deterministic, CPU) or llm (ReAct prompt on `llm`)"})
    llm: LLMConfig | None = field(default=None, metadata={
        "help": "reward_agent='llm': backend and model, an LLMConfig or a dict (None = SmolLM2-135M, transformers)"})
    agent_top_k: int | None = field(default=None, metadata={
        "help": "entries retrieved into the downstream agent's context (None = the suite's default)"})
    agent_max_steps: int | None = field(default=None, metadata={
        "help": "downstream agent steps per episode (None = the suite's default)"})
    workers: int = field(default=0, metadata={"help": "evaluation worker processes (0 = in-process)"})
    executor: str = field(default="auto", metadata={
        "help": "where evaluation episodes play: auto (in-process for workers=0, else process), inprocess, process, "
                "ray (`workers` Ray actors; the `ray` extra)"})
    ray_address: str | None = field(default=None, metadata={
        "help": "executor='ray': a running cluster (HOST:PORT or ray://...); None starts a local Ray instance"})
    service: str = field(default="process", metadata={
        "help": "where the reward is computed: process (its own process: the policy's holds no evaluation "
                "task text) or inprocess (this process; debugging and profiling)", "choices": ("process", "inprocess")})
    store_path: str = field(default=":memory:", metadata={"help": "SQLite store for banks and the eval cache"})
    progress: bool = field(default=False, metadata={
        "help": "a bar (stderr) over a commit's evaluation episodes, shown once a commit runs past a few seconds"})

    def __post_init__(self) -> None:
        from dreamer_gym.evaluation.executors import resolve_executor

        spec = get_suite_spec(self.suite)  # an unknown suite fails here, listing the known ones
        resolve_executor(self.executor, self.workers)  # an unknown name fails here, listing the valid ones
        if self.ray_address is not None and self.executor != "ray":
            raise ConfigError(f"`ray_address` is for executor='ray', got executor={self.executor!r}; "
                              "set executor='ray' or drop ray_address")
        if self.agent_top_k is None:
            object.__setattr__(self, "agent_top_k", spec.agent_top_k)
        if self.agent_max_steps is None:
            object.__setattr__(self, "agent_max_steps", spec.agent_max_steps)
        for name in ("agent_top_k", "agent_max_steps"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ConfigError(f"Expected `{name}` to be a positive int or None (the suite's default), "
                                  f"got {getattr(self, name)!r}")
        if self.service not in ("process", "inprocess"):
            raise ConfigError(f"Expected `service` to be 'process' or 'inprocess', got {self.service!r}")
        if self.split not in ("dev", "test"):
            raise ConfigError(f"Expected `split` to be 'dev' or 'test', got {self.split!r}; TRAIN is for acquisition")
        for name in ("eval_in_family", "max_tool_calls", "max_emitted", "max_entry_tokens", "max_region_entries"):
            if int(getattr(self, name)) < 1:
                raise ConfigError(f"Expected `{name}` to be a positive int, got {getattr(self, name)}")
        if self.eval_other < 0 or self.workers < 0:
            raise ConfigError("Expected `eval_other` and `workers` to be >= 0")
        if isinstance(self.tool_contract, bool) or self.tool_contract not in CONTRACTS:
            raise ConfigError(f"Expected `tool_contract` to be one of {list(CONTRACTS)} (1: the -v1 ids' strict tool "
                              f"calls, 0: the -v0 ids'), got {self.tool_contract!r}")
        if self.size_coef < 0 or self.invalid_penalty < 0:
            raise ConfigError("Expected `size_coef` and `invalid_penalty` to be >= 0")
        if self.reward_agent not in REWARD_AGENTS:
            raise ConfigError(f"Expected `reward_agent` to be one of {tuple(REWARD_AGENTS)}, got {self.reward_agent!r}")
        if self.reward_agent == "llm":
            object.__setattr__(self, "llm", LLMConfig.coerce(self.llm))
        elif self.llm is not None:
            raise ConfigError("`llm` configures the LLM reward agent; set reward_agent='llm' or drop `llm`")

    def executor_options(self) -> dict[str, Any]:
        """What the configured executor takes beyond ``workers`` (ray: the cluster's address)."""
        return {"address": self.ray_address} if self.executor == "ray" else {}

    def agent_config(self) -> AgentConfig:
        """The downstream agent this config asks for."""
        return AgentConfig(name=REWARD_AGENTS[self.reward_agent], top_k=int(self.agent_top_k),  # type: ignore[arg-type]
                           max_steps=int(self.agent_max_steps), llm=self.llm)  # type: ignore[arg-type]
