"""Which backend and model to build: one frozen dataclass that travels to worker processes and into
cache keys. It never holds an API key, only the *name* of the environment variable that does."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from dreamer_gym.errors import ConfigError
from dreamer_gym.llm.deadline import Deadline
from dreamer_gym.llm.models import SMOLLM2_ALIAS
from dreamer_gym.llm.registry import BACKENDS


@dataclass(frozen=True)
class LLMConfig:
    backend: str = field(default="transformers", metadata={
        "help": "transformers | vllm | openai, or a registered backend (dreamer_gym.llm.register_backend)",
        "choices": BACKENDS})  # the live registry: the CLI's choices are what is registered when it parses
    model: str = field(default=SMOLLM2_ALIAS, metadata={
        "help": "hub id, local folder, served model name, or 'smollm2-135m' (the bundled CPU default)"})
    gguf_file: str | None = field(default=None, metadata={"help": "transformers: a GGUF file inside `model`"})
    base_url: str | None = field(default=None, metadata={"help": "openai: e.g. http://127.0.0.1:8000/v1"})
    api_key_env: str = field(default="OPENAI_API_KEY", metadata={
        "help": "openai: environment variable holding the API key (the key itself is never stored)"})
    max_context: int = field(default=4096, metadata={"help": "prompt + completion tokens (vLLM: max_model_len)"})
    dtype: str = field(default="auto", metadata={"help": "auto = float32 on CPU (deterministic across batches), the engine's choice on GPUs"})
    timeout_s: float = field(default=Deadline.timeout_s, metadata={
        "help": "fixed part of every call's deadline, in seconds (start-up, grammar compile, queueing); the "
                "deadline adds the work asked: prompt tokens / min_prefill_tok_s + max_tokens / min_decode_tok_s"})
    min_prefill_tok_s: float = field(default=Deadline.min_prefill_tok_s, metadata={
        "help": "prompt tokens per second the slowest machine you run on still reads (a floor, not a "
                "measurement: lower it on a slower or busier machine)"})
    min_decode_tok_s: float = field(default=Deadline.min_decode_tok_s, metadata={
        "help": "new tokens per second the slowest machine you run on still writes, per sequence (a floor: "
                "lower it on a slower or busier machine)"})
    retries: int = field(default=2, metadata={"help": "retries after a failed request (openai); each try gets the deadline"})
    engine_kwargs: tuple[tuple[str, Any], ...] = field(default=(), metadata={
        "help": "extra keyword arguments for vllm.LLM (e.g. (('tensor_parallel_size', 4),))"})

    def __post_init__(self) -> None:
        BACKENDS.validate(self.backend)  # the live table: a backend registered after import works
        if self.backend == "openai" and not self.base_url:
            raise ConfigError("The openai backend needs `base_url`, e.g. http://127.0.0.1:8000/v1")
        if self.max_context < 256:
            raise ConfigError(f"Expected `max_context` >= 256, got {self.max_context}")
        if self.retries < 0:
            raise ConfigError(f"Expected `retries` >= 0, got {self.retries}")
        self.deadline()  # checks timeout_s and the two rates, naming the field
        if isinstance(self.engine_kwargs, dict):  # accept a dict, store a hashable tuple
            object.__setattr__(self, "engine_kwargs", tuple(sorted(self.engine_kwargs.items())))

    @classmethod
    def coerce(cls, value: LLMConfig | dict[str, Any] | None) -> LLMConfig:
        """Accept a config, a plain dict (from ``gym.make`` kwargs or JSON) or None (the default)."""
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if isinstance(value, dict):
            unknown = set(value) - set(cls.__dataclass_fields__)
            if unknown:
                raise ConfigError(f"Unknown LLM config field(s) {sorted(unknown)}; known: {sorted(cls.__dataclass_fields__)}")
            return cls(**value)
        raise ConfigError(f"Expected an LLMConfig or a dict for `llm`, got {type(value).__name__}")

    def deadline(self) -> Deadline:
        """How long a call may take, from the work it asks (see :mod:`dreamer_gym.llm.deadline`)."""
        return Deadline(self.timeout_s, self.min_prefill_tok_s, self.min_decode_tok_s)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
