"""Fixtures for the LLM backend tests: the real SmolLM2-135M-Instruct on every backend.

Heavy things (an in-process vLLM engine, a vLLM server) go through one :class:`HeavyEngines` registry that
keeps at most ONE alive: this machine has 2 cores, and each vLLM engine start costs ~30-60 s of both. The
``backend_kind`` fixture is session-scoped and parametrized, so pytest groups the tests by backend
(transformers, then vllm, then the server) and each engine starts once; the registry closes the previous one
before it builds the next. The transformers battery runs on the session's ``smollm2_backend`` (tests/conftest.py),
the model the agent, consolidator and CLI tests already load.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dreamer_gym.llm import LLMBackend, smollm2_135m_instruct

from llm_helpers import BACKEND_KINDS, HeavyEngines


@pytest.fixture(scope="session")
def smollm2_folder() -> Path:
    """The real SmolLM2-135M-Instruct as a local safetensors folder (converted once, then cached)."""
    return smollm2_135m_instruct()


@pytest.fixture(scope="session")
def engines(smollm2_folder: Path) -> Iterator[HeavyEngines]:
    registry = HeavyEngines(smollm2_folder)
    yield registry
    registry.close()


@pytest.fixture(scope="session", params=BACKEND_KINDS)
def backend_kind(request: pytest.FixtureRequest) -> str:
    """Session-scoped so that pytest runs all tests of one backend before starting the next."""
    return request.param


@pytest.fixture
def backend(backend_kind: str, engines: HeavyEngines, request: pytest.FixtureRequest) -> LLMBackend:
    if backend_kind == "transformers":  # the session's loaded model (tests/conftest.py): no second load
        return request.getfixturevalue("smollm2_backend")
    return engines.get(backend_kind).backend


@pytest.fixture
def vllm_server(engines: HeavyEngines) -> Any:
    """The real vLLM OpenAI-compatible server (shared with the ``openai-server`` backend)."""
    return engines.get("openai-server").server
