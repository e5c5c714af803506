"""The downstream-agent protocol shared by the memory-following agent and LLM agents."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from dreamer_gym.agents.registry import AGENTS
from dreamer_gym.llm.config import LLMConfig
from dreamer_gym.memory import MemoryEntry
from dreamer_gym.memory.hashing import content_hash
from dreamer_gym.suites.base import EpisodeTask, TaskSuite


@dataclass(frozen=True)
class AgentConfig:
    """What defines a downstream agent's behaviour; its hash is part of every evaluation-cache key."""

    name: str = field(default="memory-following", metadata={"help": "a registered downstream agent: memory-following, llm or your own (register_agent)"})
    top_k: int = field(default=6, metadata={"help": "entries retrieved into the agent's context"})
    max_steps: int = field(default=80, metadata={"help": "simulator steps per episode"})
    llm: LLMConfig | None = field(default=None, metadata={"help": "llm agent: backend and model (None = default)"})
    history: int = field(default=4, metadata={"help": "llm agent: past (action, observation) pairs in the prompt"})
    max_action_tokens: int = field(default=24, metadata={"help": "llm agent: tokens per generated action"})

    def __post_init__(self) -> None:
        AGENTS.validate(self.name)  # the live table: an agent registered after import works
        if self.name == "llm":
            object.__setattr__(self, "llm", LLMConfig.coerce(self.llm))
        elif self.llm is not None:
            raise ValueError("`llm` is only used by the llm agent; set name='llm' or drop `llm`")
        if self.top_k < 1:
            raise ValueError(f"Expected `top_k` to be a positive int, got {self.top_k}")
        if self.max_steps < 1:
            raise ValueError(f"Expected `max_steps` to be a positive int, got {self.max_steps}")

    @property
    def key(self) -> str:
        return content_hash(asdict(self))


@dataclass(frozen=True)
class EpisodeResult:
    task: EpisodeTask
    score: float  # clipped to [0, 100]
    raw_score: float  # as the suite reported it
    steps: int
    success: bool
    actions: tuple[str, ...] = ()
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "family": self.task.family,
            "variation": self.task.variation,
            "score": self.score,
            "raw_score": self.raw_score,
            "steps": self.steps,
            "success": self.success,
            "actions": list(self.actions),
            "error": self.error,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EpisodeResult:
        return cls(
            task=EpisodeTask(data["family"], int(data["variation"])),
            score=float(data["score"]),
            raw_score=float(data["raw_score"]),
            steps=int(data["steps"]),
            success=bool(data["success"]),
            actions=tuple(data.get("actions", ())),
            error=data.get("error"),
        )


@dataclass(frozen=True)
class Reading:
    """What a suite's reader takes from memory entries, without playing: the steps it would act on (in
    order), the steps pitfalls forbid, the ``<slot>`` names and quoted parameters it binds, and the facts it
    looks up (``"category: item"`` pairs). Board columns compare banks by it (leaderboard/similarity.py), so
    two banks that read the same compare equal however they are worded."""

    actions: tuple[str, ...] = ()
    avoided: tuple[str, ...] = ()
    slots: tuple[str, ...] = ()
    facts: tuple[str, ...] = ()


def play_steps(suite: TaskSuite, task: EpisodeTask, steps: Sequence[str], max_steps: int) -> EpisodeResult:
    """Send ``steps`` to the started ``suite`` in order until the episode ends or ``max_steps`` are spent;
    the score is clipped to [0, 100] (a reader that plans its whole episode up front ends with this)."""
    actions: list[str] = []
    score, done = 0.0, False
    for action in steps:
        if done or len(actions) >= max_steps:
            break
        outcome = suite.step(action)
        actions.append(action)
        score, done = outcome.score, outcome.done
    return EpisodeResult(task, min(max(score, 0.0), 100.0), score, len(actions), score >= 100.0, tuple(actions))


class DownstreamAgent(Protocol):
    """Plays one episode given the entries retrieved for it. Must be deterministic given its inputs
    (the evaluation cache relies on it)."""

    config: AgentConfig

    @property
    def cache_key(self) -> str:
        """Everything that changes its episodes (config, prompts): the evaluation cache keys on it."""
        ...

    def retrieve(self, description: str, entries: Sequence[MemoryEntry], index_key: str | None = None) -> list[MemoryEntry]:
        ...

    def play(self, suite: TaskSuite, task: EpisodeTask, entries: Sequence[MemoryEntry], seed: int) -> EpisodeResult: ...
