"""The env's configuration: a dataclass is the schema, checked in ``__post_init__``."""
from __future__ import annotations

from dataclasses import dataclass, field

from dreamer_gym.agents.base import AgentConfig
from dreamer_gym.errors import ConfigError
from dreamer_gym.llm.config import LLMConfig

REWARD_AGENTS = {"memory": "memory-following", "llm": "llm"}  # env config name -> agent name

DEFAULT_FAMILIES: tuple[str, ...] = (
    "chemistry-mix", "find-living-thing", "find-non-living-thing", "grow-plant", "power-component", "use-thermometer",
)


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
    reward_agent: str = field(default="memory", metadata={
        "help": "downstream agent: memory (deterministic, CPU) or llm (ReAct prompt on `llm`)"})
    llm: LLMConfig | None = field(default=None, metadata={
        "help": "reward_agent='llm': backend and model, an LLMConfig or a dict (None = SmolLM2-135M, transformers)"})
    agent_top_k: int = 6
    agent_max_steps: int = 80
    workers: int = field(default=0, metadata={"help": "evaluation worker processes (0 = in-process)"})
    store_path: str = field(default=":memory:", metadata={"help": "SQLite store for banks and the eval cache"})

    def __post_init__(self) -> None:
        if self.split not in ("dev", "test"):
            raise ConfigError(f"Expected `split` to be 'dev' or 'test', got {self.split!r}; TRAIN is for acquisition")
        for name in ("eval_in_family", "max_tool_calls", "max_emitted", "max_entry_tokens", "max_region_entries"):
            if int(getattr(self, name)) < 1:
                raise ConfigError(f"Expected `{name}` to be a positive int, got {getattr(self, name)}")
        if self.eval_other < 0 or self.workers < 0:
            raise ConfigError("Expected `eval_other` and `workers` to be >= 0")
        if self.size_coef < 0 or self.invalid_penalty < 0:
            raise ConfigError("Expected `size_coef` and `invalid_penalty` to be >= 0")
        if self.reward_agent not in REWARD_AGENTS:
            raise ConfigError(f"Expected `reward_agent` to be one of {tuple(REWARD_AGENTS)}, got {self.reward_agent!r}")
        if self.reward_agent == "llm":
            object.__setattr__(self, "llm", LLMConfig.coerce(self.llm))
        elif self.llm is not None:
            raise ConfigError("`llm` configures the LLM reward agent; set reward_agent='llm' or drop `llm`")

    def agent_config(self) -> AgentConfig:
        """The downstream agent this config asks for."""
        return AgentConfig(name=REWARD_AGENTS[self.reward_agent], top_k=self.agent_top_k,
                           max_steps=self.agent_max_steps, llm=self.llm)
