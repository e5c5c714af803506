"""The LLM backend protocol: batched chat completion with ``n`` samples, stop strings, seeds,
logprobs where the backend has them, guided JSON where it has it, timeouts and retries.

Every backend (transformers, in-process vLLM, any OpenAI-compatible server) takes the same
:class:`SamplingConfig` and returns the same :class:`Completion` objects, so agents and consolidators
never know which one they talk to.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

from dreamer_gym.errors import ConfigError

Message = dict[str, str]  # {"role": "system" | "user" | "assistant", "content": "..."}
Conversation = Sequence[Message]


@dataclass(frozen=True)
class SamplingConfig:
    """How to sample; part of every cache key that depends on model output."""

    max_tokens: int = field(default=64, metadata={"help": "new tokens per completion"})
    temperature: float = field(default=0.0, metadata={"help": "0 = greedy (deterministic)"})
    top_p: float = 1.0
    n: int = field(default=1, metadata={"help": "samples per conversation"})
    stop: tuple[str, ...] = field(default=(), metadata={"help": "stop strings (not included in the text)"})
    seed: int | None = field(default=0, metadata={"help": "sampling seed; None = unseeded"})
    logprobs: bool = field(default=False, metadata={"help": "return per-token logprobs of the sampled text"})
    json_schema: dict[str, Any] | None = field(
        default=None, metadata={"help": "guided decoding: constrain output to this JSON schema"})

    def __post_init__(self) -> None:
        if self.max_tokens < 1:
            raise ConfigError(f"Expected `max_tokens` to be a positive int, got {self.max_tokens}")
        if self.n < 1:
            raise ConfigError(f"Expected `n` to be a positive int, got {self.n}")
        if self.temperature < 0:
            raise ConfigError(f"Expected `temperature` >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ConfigError(f"Expected `top_p` in (0, 1], got {self.top_p}")
        if isinstance(self.stop, str):
            raise ConfigError("Expected `stop` to be a tuple of strings, got a single string; wrap it: (stop,)")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Completion:
    """One sampled completion."""

    text: str
    finish_reason: str = "stop"  # "stop" | "length" | "error"
    token_logprobs: tuple[float, ...] | None = None  # logprob of each generated token, when asked for
    prompt_tokens: int = 0
    completion_tokens: int = 0


@runtime_checkable
class LLMBackend(Protocol):
    """A chat model. ``generate`` takes a batch of conversations and returns ``n`` completions for each.

    Implementations raise :class:`~dreamer_gym.errors.LLMError` (or its subclass ``LLMTimeout``) when
    they cannot answer; they never hang past their timeout.
    """

    name: str  # "transformers" | "vllm" | "openai"
    model: str  # what identifies the weights (folder, hub id, or served model name)
    max_context: int  # prompt + completion tokens the backend accepts

    def generate(self, conversations: Sequence[Conversation], sampling: SamplingConfig) -> list[list[Completion]]: ...

    def count_tokens(self, conversation: Conversation) -> int:
        """Prompt tokens of ``conversation`` after the chat template (an estimate for remote servers)."""
        ...

    def close(self) -> None: ...
