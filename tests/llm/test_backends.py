"""The same battery against every backend: the real SmolLM2-135M-Instruct, a real engine or server.

The first test of each backend also pays for its start (transformers ~5 s, vLLM ~30-60 s, server
~40-60 s on 2 cores), hence the generous timeouts.
"""
from __future__ import annotations

import json
import time

import jsonschema
import pytest

from dreamer_gym.errors import LLMError, LLMTimeout
from dreamer_gym.llm import LLMBackend, SamplingConfig
from dreamer_gym.llm.deadline import Deadline

from llm_helpers import HeavyEngines, alive, descendants

pytestmark = pytest.mark.timeout(300)

HELLO = [{"role": "user", "content": "Say hello in one short sentence."}]
STORY = [{"role": "user", "content": "Write a long story about a cat who learns to sail."}]
LIST = [{"role": "user", "content": "List five fruits, one per line."}]
TOOL_SCHEMA = {
    "type": "object",
    "properties": {"tool": {"enum": ["keep", "drop", "commit"]}, "id": {"type": "string"}},
    "required": ["tool"],
}
TOOL_PROMPT = [
    {"role": "system", "content": "Answer with a JSON object choosing a memory tool: keep, drop or commit."},
    {"role": "user", "content": "Memory m3 says 'the key is in the drawer'. It is useful. What do you do?"},
]


def test_greedy_is_deterministic_and_non_empty(backend: LLMBackend) -> None:
    sampling = SamplingConfig(max_tokens=24, temperature=0.0)
    first = backend.generate([HELLO], sampling)
    second = backend.generate([HELLO], sampling)
    assert len(first) == 1 and len(first[0]) == 1
    assert first[0][0].text.strip()
    assert first[0][0].text == second[0][0].text
    assert first[0][0].prompt_tokens > 0 and first[0][0].completion_tokens > 0


def test_n_samples_with_seed(backend: LLMBackend) -> None:
    out = backend.generate([HELLO], SamplingConfig(max_tokens=16, temperature=1.0, n=3, seed=7))
    assert len(out) == 1 and len(out[0]) == 3
    assert all(c.text for c in out[0])
    assert len({c.text for c in out[0]}) > 1, "three samples at temperature 1.0 should not all be equal"


def test_greedy_n_gives_n_equal_completions(backend: LLMBackend) -> None:
    out = backend.generate([HELLO], SamplingConfig(max_tokens=8, temperature=0.0, n=2))
    assert [c.text for c in out[0]] == [out[0][0].text] * 2


def test_stop_string_truncates(backend: LLMBackend) -> None:
    full = backend.generate([LIST], SamplingConfig(max_tokens=32))[0][0].text
    words = full.split()
    assert len(words) >= 3, f"need a few words to pick a stop string from: {full!r}"
    stop = words[2]
    cut = backend.generate([LIST], SamplingConfig(max_tokens=32, stop=(stop,)))[0][0]
    assert cut.text == full[: full.index(stop)]
    assert cut.finish_reason == "stop"
    assert stop not in cut.text


def test_max_tokens_gives_length(backend: LLMBackend) -> None:
    out = backend.generate([STORY], SamplingConfig(max_tokens=5))[0][0]
    assert out.finish_reason == "length"
    assert out.completion_tokens == 5
    assert out.text


def test_a_missed_deadline_stops_the_generation_and_says_why(backend: LLMBackend,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A 0.05 s deadline on a story of up to 1,000 tokens (75 s idle): the backend stops at the deadline
    (transformers' max_time, vLLM's aborted requests, the server's HTTP timeout), not after the story,
    raises LLMTimeout naming the work and the deadline, and still answers the next call."""
    monkeypatch.setattr(backend, "deadline", Deadline(timeout_s=0.05, min_prefill_tok_s=1e6, min_decode_tok_s=1e6))
    start = time.monotonic()
    with pytest.raises(LLMTimeout, match=r"up to 1000 tokens after a \d+-token prompt took [\d.]+ s .*"
                                         r"deadline 0\.1 s = timeout_s 0\.05 \+ .*min_decode_tok_s") as info:
        backend.generate([STORY], SamplingConfig(max_tokens=1000))
    assert time.monotonic() - start < 30  # a prompt and a token or two: seconds even on a loaded machine
    assert "raise `timeout_s`" in str(info.value)
    monkeypatch.undo()
    assert backend.generate([HELLO], SamplingConfig(max_tokens=8))[0][0].text  # still usable


def test_logprobs_of_sampled_tokens(backend: LLMBackend) -> None:
    out = backend.generate([HELLO], SamplingConfig(max_tokens=12, temperature=0.8, seed=3, logprobs=True))[0][0]
    assert out.token_logprobs is not None
    assert len(out.token_logprobs) == out.completion_tokens > 0
    assert all(isinstance(lp, float) and lp <= 1e-6 for lp in out.token_logprobs)
    plain = backend.generate([HELLO], SamplingConfig(max_tokens=4))[0][0]
    assert plain.token_logprobs is None


def test_guided_json_satisfies_schema(backend: LLMBackend) -> None:
    for sampling in (SamplingConfig(max_tokens=64, json_schema=TOOL_SCHEMA),
                     SamplingConfig(max_tokens=64, json_schema=TOOL_SCHEMA, temperature=1.0, n=2, seed=1)):
        for completion in backend.generate([TOOL_PROMPT], sampling)[0]:
            value = json.loads(completion.text)
            jsonschema.validate(value, TOOL_SCHEMA)


def test_batch_returns_one_list_per_conversation(backend: LLMBackend) -> None:
    sampling = SamplingConfig(max_tokens=8, temperature=0.8, n=2, seed=0)
    out = backend.generate([HELLO, STORY, LIST], sampling)
    assert len(out) == 3 and all(len(c) == 2 for c in out)
    assert all(c.text for row in out for c in row)
    # the batch answers each conversation on its own: greedy batch == greedy one by one
    greedy = SamplingConfig(max_tokens=8)
    batch = [row[0].text for row in backend.generate([HELLO, LIST], greedy)]
    alone = [backend.generate([conv], greedy)[0][0].text for conv in (HELLO, LIST)]
    assert batch == alone
    assert backend.generate([], sampling) == []


def test_count_tokens(backend: LLMBackend) -> None:
    short = backend.count_tokens(HELLO)
    longer = backend.count_tokens(HELLO + [{"role": "assistant", "content": "Hello there, friend!"}] + STORY)
    assert 0 < short < longer
    prompt_tokens = backend.generate([HELLO], SamplingConfig(max_tokens=2))[0][0].prompt_tokens
    assert short == prompt_tokens  # every backend here counts exactly (the server through /tokenize)


@pytest.mark.vllm
@pytest.mark.parametrize("backend_kind", [pytest.param("vllm", id="vllm")], indirect=True)
def test_vllm_close_reaps_engine_processes(backend_kind: str, engines: HeavyEngines) -> None:
    held = engines.get(backend_kind)
    assert held.spawned, "the vLLM engine core runs in child processes"
    assert held.backend.generate([HELLO], SamplingConfig(max_tokens=2))[0][0].completion_tokens > 0
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
