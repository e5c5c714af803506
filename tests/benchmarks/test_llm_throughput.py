"""Batched sampling throughput: in-process vLLM vs transformers, same prompts, same run.

8 prompts x n=4 samples x 32 new tokens at temperature 0.8 (seeded), on the real SmolLM2-135M-Instruct.
Figure: generated tokens per second (completion tokens actually produced / median wall time of a
round); target vLLM >= 3x transformers, floor 1.5x.

Each backend is built inside its own test and closed at its end (setup untimed), so only one model
is in memory at a time on this 2-core machine. Marked ``heavy`` (CI skips it: an engine start alone
is ~40 s); run it with

    pytest -m heavy tests/benchmarks/test_llm_throughput.py --benchmark-enable
"""
from __future__ import annotations

import pytest

from dreamer_gym.llm import LLMBackend, LLMConfig, SamplingConfig, make_backend

pytestmark = [pytest.mark.heavy, pytest.mark.vllm, pytest.mark.timeout(900)]

N_PROMPTS, N_SAMPLES, MAX_TOKENS = 8, 4, 32
ROUNDS, WARMUP_ROUNDS = 3, 1
GROUP = "sample 8 prompts x 4 x 32 tokens"
SAMPLING = SamplingConfig(max_tokens=MAX_TOKENS, temperature=0.8, n=N_SAMPLES, seed=0)
PROMPTS = [
    [{"role": "user", "content": f"Give me one short fact about {topic}."}]
    for topic in ("the sea", "owls", "volcanoes", "bread", "the moon", "chess", "rivers", "copper")
]
TARGET, FLOOR = 3.0, 1.5


@pytest.fixture(scope="module")
def tokens_per_round() -> dict[str, int]:
    return {}


def _build(kind: str) -> LLMBackend:
    return make_backend(LLMConfig(backend=kind, max_context=2048))


@pytest.mark.parametrize("kind", ["transformers", "vllm"])
def test_batched_sampling(benchmark, kind: str, perf, tokens_per_round: dict[str, int]) -> None:
    benchmark.group = GROUP
    backend = _build(kind)
    try:
        out = benchmark.pedantic(backend.generate, args=(PROMPTS, SAMPLING), rounds=ROUNDS,
                                 warmup_rounds=WARMUP_ROUNDS)
    finally:
        backend.close()
    assert len(out) == N_PROMPTS and all(len(row) == N_SAMPLES for row in out)
    assert all(0 < c.completion_tokens <= MAX_TOKENS and c.text for row in out for c in row)
    tokens = sum(c.completion_tokens for row in out for c in row)
    tokens_per_round[kind] = tokens
    benchmark.extra_info["completion_tokens_per_round"] = tokens
    median = perf.record(benchmark, f"llm batched sampling, {kind}", unit="round")
    if median is not None:
        benchmark.extra_info["tokens_per_s"] = tokens / median
        perf.notes[f"llm {kind} tokens/s"] = f"{tokens / median:.1f}"


def test_vllm_speedup(require_measuring, perf, tokens_per_round: dict[str, int]) -> None:
    """tokens/s of vLLM over tokens/s of transformers (token counts differ a little: EOS comes early)."""
    hf = tokens_per_round["transformers"] / perf.median("llm batched sampling, transformers")
    vl = tokens_per_round["vllm"] / perf.median("llm batched sampling, vllm")
    ratio = vl / hf
    r = perf.ratio("vLLM / transformers tokens/s", ratio, f">= {TARGET}x", ratio >= TARGET,
                   f">= {FLOOR}x", ratio >= FLOOR)
    assert r.met_floor, f"vLLM {vl:.1f} tok/s vs transformers {hf:.1f} tok/s: {ratio:.2f}x < {FLOOR}x"
