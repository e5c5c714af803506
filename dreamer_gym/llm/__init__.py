"""LLM backends behind one protocol (transformers, in-process vLLM, OpenAI-compatible servers, and any backend
registered by name: :mod:`dreamer_gym.llm.registry`)."""
from __future__ import annotations

from dreamer_gym.llm.base import Completion, Conversation, LLMBackend, Message, SamplingConfig
from dreamer_gym.llm.config import LLMConfig
from dreamer_gym.llm.models import SMOLLM2_ALIAS, resolve_model, smollm2_135m_instruct
from dreamer_gym.llm.registry import BACKENDS, backend_names, register_backend


def make_backend(config: LLMConfig | dict | None = None) -> LLMBackend:
    """Build the backend ``config`` names, from the registry. Heavy imports (torch, vllm, openai) happen only
    here, when a built-in backend is first built."""
    config = LLMConfig.coerce(config)
    return BACKENDS.get(config.backend)(config)


__all__ = [
    "BACKENDS", "SMOLLM2_ALIAS", "Completion", "Conversation", "LLMBackend", "LLMConfig", "Message",
    "SamplingConfig", "backend_names", "make_backend", "register_backend", "resolve_model", "smollm2_135m_instruct",
]
