"""The env's configuration: the reward definition, the budgets and the free fields (where and how fast the
reward is computed). A dataclass is the schema, checked in ``__post_init__``.

The reward-defining fields and the budgets are declared once, in :mod:`dreamer_gym.contract.definition`
(:class:`RewardDefinition`, :class:`Budgets`); this class inherits them and adds only the free fields.
``dreamer_gym.envs.config`` re-exports it (the public path)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dreamer_gym.agents.base import AgentConfig
from dreamer_gym.agents.registry import resolve_reward_agent
from dreamer_gym.contract.definition import CONTRACTS, Budgets, RewardDefinition
from dreamer_gym.contract.registry import SERVICES
from dreamer_gym.errors import ConfigError
from dreamer_gym.llm.config import LLMConfig
from dreamer_gym.suites.registry import get_suite_spec
from dreamer_gym.suites.scienceworld import FAMILIES as SCIENCEWORLD_FAMILIES

REWARD_AGENTS = {"memory": "memory-following", "llm": "llm"}  # env config name -> agent name

DEFAULT_FAMILIES: tuple[str, ...] = SCIENCEWORLD_FAMILIES  # the default pool's (kept for older imports)


@dataclass(frozen=True)
class ConsolidationConfig(Budgets, RewardDefinition):
    """Every keyword argument of :class:`~dreamer_gym.envs.consolidation.ConsolidationEnv`: the
    :class:`RewardDefinition` fields, then the :class:`Budgets`, then these free ones."""

    llm: LLMConfig | None = field(default=None, metadata={
        "help": "reward_agent='llm': backend and model, an LLMConfig or a dict (None = SmolLM2-135M, transformers)"})
    workers: int = field(default=0, metadata={"help": "evaluation worker processes (0 = in-process)"})
    executor: str = field(default="auto", metadata={
        "help": "where evaluation episodes play: auto (in-process for workers=0, else process), inprocess, process, "
                "ray (`workers` Ray actors; the `ray` extra)"})
    ray_address: str | None = field(default=None, metadata={
        "help": "executor='ray': a running cluster (HOST:PORT or ray://...); None starts a local Ray instance"})
    service: str = field(default="process", metadata={
        "help": "where the reward is computed: process (its own process: the policy's holds no evaluation "
                "task text), inprocess (this process; debugging and profiling) or a registered service "
                "(dreamer_gym.service.register_service)"})
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
        SERVICES.validate(self.service)  # the live registry: a service registered after import works
        if self.split not in ("dev", "test"):
            raise ConfigError(f"Expected `split` to be 'dev' or 'test', got {self.split!r}; TRAIN is for acquisition")
        for name in ("eval_in_family", "max_tool_calls", "max_emitted", "max_entry_tokens", "max_region_entries"):
            if int(getattr(self, name)) < 1:
                raise ConfigError(f"Expected `{name}` to be a positive int, got {getattr(self, name)}")
        if self.eval_other < 0 or self.workers < 0:
            raise ConfigError("Expected `eval_other` and `workers` to be >= 0")
        if isinstance(self.tool_contract, bool) or self.tool_contract not in CONTRACTS:
            raise ConfigError(f"Expected `tool_contract` to be one of {list(CONTRACTS)} (2: the whole bank read-only "
                              f"and `synthesize`, ScienceWorld-v2; 1: the -v1 ids' strict tool calls; 0: the -v0 "
                              f"ids'), got {self.tool_contract!r}")
        if not isinstance(self.window_own_families, bool):
            raise ConfigError(f"Expected `window_own_families` to be a bool, got {self.window_own_families!r}")
        if self.size_coef < 0 or self.invalid_penalty < 0:
            raise ConfigError("Expected `size_coef` and `invalid_penalty` to be >= 0")
        resolve_reward_agent(self.reward_agent)  # memory, llm or a registered agent (the live registry)
        if self.reward_agent == "llm":
            object.__setattr__(self, "llm", LLMConfig.coerce(self.llm))
        elif self.llm is not None:
            raise ConfigError("`llm` configures the LLM reward agent; set reward_agent='llm' or drop `llm`")

    def executor_options(self) -> dict[str, Any]:
        """What the configured executor takes beyond ``workers`` (ray: the cluster's address)."""
        return {"address": self.ray_address} if self.executor == "ray" else {}

    def agent_config(self) -> AgentConfig:
        """The downstream agent this config asks for."""
        return AgentConfig(name=resolve_reward_agent(self.reward_agent), top_k=int(self.agent_top_k),  # type: ignore[arg-type]
                           max_steps=int(self.agent_max_steps), llm=self.llm)  # type: ignore[arg-type]
