"""LLM backends behind one protocol (transformers, in-process vLLM, OpenAI-compatible servers)."""
from __future__ import annotations

from dreamer_gym.llm.base import Completion, Conversation, LLMBackend, Message, SamplingConfig
from dreamer_gym.llm.config import BACKENDS, LLMConfig
from dreamer_gym.llm.models import SMOLLM2_ALIAS, resolve_model, smollm2_135m_instruct


def make_backend(config: LLMConfig | dict | None = None) -> LLMBackend:
    """Build the backend ``config`` names. Heavy imports (torch, vllm, openai) happen only here."""
    config = LLMConfig.coerce(config)
    if config.backend == "transformers":
        from dreamer_gym.llm.transformers_backend import TransformersBackend

        return TransformersBackend.from_config(config)
    if config.backend == "vllm":
        from dreamer_gym.llm.vllm_backend import VLLMBackend

        return VLLMBackend.from_config(config)
    from dreamer_gym.llm.openai_backend import OpenAIBackend

    return OpenAIBackend.from_config(config)


__all__ = [
    "BACKENDS", "SMOLLM2_ALIAS", "Completion", "Conversation", "LLMBackend", "LLMConfig", "Message",
    "SamplingConfig", "make_backend", "resolve_model", "smollm2_135m_instruct",
]
