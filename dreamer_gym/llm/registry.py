"""The LLM backend registry: name -> factory ``(LLMConfig) -> LLMBackend``.

Built in: ``transformers``, ``vllm`` and ``openai`` (named by strings, so listing them imports neither torch nor
vllm). Add your own with :func:`register_backend` or an entry point in the ``dreamer_gym.llm_backends`` group::

    [project.entry-points."dreamer_gym.llm_backends"]
    mine = "my_pkg.backend:MyBackend.from_config"

``LLMConfig(backend="mine")`` then validates against the live table, and every flag that takes a backend
(``--backend``, ``--consolidator-backend``, ``--agent-backend``) accepts it. The factory receives the whole
:class:`~dreamer_gym.llm.config.LLMConfig` (model, deadline, ...) and returns an object implementing
:class:`~dreamer_gym.llm.base.LLMBackend`; :func:`dreamer_gym.testing.check_backend` checks one.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dreamer_gym.registry import Registry, callable_as

ENTRY_POINT_GROUP = "dreamer_gym.llm_backends"


BACKENDS: Registry[Callable[..., Any]] = Registry(
    "LLM backend", ENTRY_POINT_GROUP, {
        "transformers": "dreamer_gym.llm.transformers_backend:TransformersBackend.from_config",
        "vllm": "dreamer_gym.llm.vllm_backend:VLLMBackend.from_config",
        "openai": "dreamer_gym.llm.openai_backend:OpenAIBackend.from_config",
    }, option="backend", check=callable_as("a factory taking an LLMConfig"),
    how="dreamer_gym.llm.register_backend(name, factory) or an entry point in the 'dreamer_gym.llm_backends' "
        "group (mine = \"my_pkg.backend:MyBackend.from_config\")")


def register_backend(name: str, factory: str | Callable[..., Any], *, replace: bool = False) -> None:
    """Make ``factory`` (``(LLMConfig) -> LLMBackend``, or a ``"module:attr"`` string naming it) the backend
    ``name``."""
    BACKENDS.register(name, factory, replace=replace)


def backend_names() -> tuple[str, ...]:
    """Every LLM backend this process can build: built-in, registered and installed as entry points."""
    return BACKENDS.names()
