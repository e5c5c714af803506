"""The backend battery (dreamer_gym.testing.check_backend) against every backend: the real
SmolLM2-135M-Instruct on transformers, an in-process vLLM engine and a vLLM server.

The first test of each backend also pays for its start (transformers ~5 s, vLLM ~30-60 s, server
~40-60 s on 2 cores), hence the generous timeouts.
"""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence

import pytest

from dreamer_gym.errors import LLMError
from dreamer_gym.llm import Completion, Conversation, LLMBackend, LLMConfig, SamplingConfig
from dreamer_gym.testing import BackendCheckError, check_backend
from dreamer_gym.testing.backend_check import HELLO, PROPERTIES

from llm_helpers import MAX_CONTEXT, HeavyEngines, alive, descendants

pytestmark = pytest.mark.timeout(300)


# heavy (CI time, 52 s: a second vLLM engine start): CI keeps the in-process battery below, the same VLLMBackend
# code and engine with every property (deadline included); this checks the engine's child processes on demand
@pytest.mark.heavy
@pytest.mark.vllm
def test_vllm_backend_with_engine_processes_aborts_and_close_reaps(engines: HeavyEngines) -> None:
    """VLLMBackend as users get it: the engine core and its worker in child processes (the battery below runs on
    the engine core in this process). It answers, a missed deadline aborts its requests across the processes and
    the engine answers after it, and close() reaps the processes. First in the module: the server the battery
    starts last stays up for tests/llm/test_llm_errors.py (HeavyEngines keeps one engine alive)."""
    held = engines.get("vllm-processes")
    assert held.spawned, "the vLLM engine core runs in child processes"
    only = ("max-tokens", "deadline")
    report = check_backend(held.backend, skip=[p for p in PROPERTIES if p not in only])
    assert report.passed == list(only)
    spawned = held.spawned
    engines.close()
    deadline = time.monotonic() + 10
    while alive(spawned) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alive(spawned), f"vLLM processes left after close(): {alive(spawned)}"
    assert not [p for p in descendants() if "VLLM" in p.name()]
    with pytest.raises(LLMError, match="closed"):
        held.backend.generate([HELLO], SamplingConfig(max_tokens=2))
    held.backend.close()  # idempotent


def test_backend_passes_check_backend(backend: LLMBackend) -> None:
    """Every property: greedy determinism, seeded samples, stop strings, max_tokens, a missed deadline,
    logprobs, guided JSON, batches, exact token counts (the server's through /tokenize)."""
    report = check_backend(backend)
    assert report.passed == list(PROPERTIES)
    assert report.skipped == {"close": "the caller owns the backend (pass an LLMConfig to check close)"}


def test_a_backend_built_from_its_config_is_closed_and_refuses_work() -> None:
    only_greedy = [p for p in PROPERTIES if p != "greedy"]
    report = check_backend(LLMConfig(backend="transformers", max_context=MAX_CONTEXT), skip=only_greedy)
    assert report.passed == ["greedy", "close"] and set(report.skipped) == set(only_greedy)


class IgnoresStop:
    """The real transformers backend with one defect: it drops the stop strings it is given."""

    def __init__(self, inner: LLMBackend) -> None:
        self.inner, self.name, self.model, self.max_context = inner, "ignores-stop", inner.model, inner.max_context

    def generate(self, conversations: Sequence[Conversation], sampling: SamplingConfig) -> list[list[Completion]]:
        return self.inner.generate(conversations, dataclasses.replace(sampling, stop=()))

    def count_tokens(self, conversation: Conversation) -> int:
        return self.inner.count_tokens(conversation)

    def close(self) -> None:
        self.inner.close()


def test_check_backend_names_the_property_a_backend_breaks(smollm2_backend: LLMBackend) -> None:
    with pytest.raises(BackendCheckError, match=r"backend 'ignores-stop' .*'stop': stop=\(.*must cut the greedy text"):
        check_backend(IgnoresStop(smollm2_backend), skip=("greedy", "samples", "greedy-n"))
    with pytest.raises(ValueError, match=r"`skip` to name properties .* got \['stopp'\]"):
        check_backend(smollm2_backend, skip=("stopp",))
