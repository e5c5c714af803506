"""`check_backend`: does an LLM backend keep the contract the agents, consolidators and trainers rely on?

The battery the built-in backends (transformers, in-process vLLM, an OpenAI-compatible server) pass in
tests/llm/test_backends.py, shipped so that whoever writes a backend (registered by name, or behind an entry
point) can run it first. Each property is checked on a real model: greedy decoding is deterministic, ``n``
seeded samples differ, stop strings cut, ``max_tokens`` stops with ``"length"``, a missed deadline raises
``LLMTimeout`` with the work and the fix and leaves the backend usable, logprobs come when asked (only
then), guided JSON satisfies its schema, a batch answers each conversation as if alone, token counts are
exact, and a closed backend refuses work. A failure raises :class:`BackendCheckError` naming the property
and what came.
"""
from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import jsonschema

from dreamer_gym.errors import DreamerGymError, LLMError, LLMTimeout
from dreamer_gym.llm import LLMBackend, LLMConfig, SamplingConfig, make_backend
from dreamer_gym.llm.deadline import Deadline

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
# a 0.05 s deadline on a story of up to 1,000 tokens: the backend must stop at it (a prompt and a token or two),
# not after the story; DEADLINE_GRACE_S is generous so that a busy machine never fails a good backend
SHORT_DEADLINE = Deadline(timeout_s=0.05, min_prefill_tok_s=1e6, min_decode_tok_s=1e6)
DEADLINE_GRACE_S = 30.0
DEADLINE_MESSAGE = (r"up to 1000 tokens after a \d+-token prompt took [\d.]+ s .*deadline 0\.1 s = timeout_s 0\.05 \+ "
                    r".*min_decode_tok_s")


class BackendCheckError(DreamerGymError, AssertionError):
    """A backend breaks the contract; the message names the backend, the property and what came."""


class _Breach(Exception):
    """Raised inside one property's check; :func:`check_backend` adds the backend and the property."""


@dataclass
class BackendReport:
    """What :func:`check_backend` checked: ``passed`` property names, ``skipped`` name -> why."""

    name: str
    model: str
    passed: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)


def _expect(ok: bool, message: str) -> None:
    if not ok:
        raise _Breach(message)


def _one(backend: LLMBackend, conversation: list[dict[str, str]], sampling: SamplingConfig) -> Any:
    out = backend.generate([conversation], sampling)
    _expect(isinstance(out, list) and len(out) == 1 and isinstance(out[0], list) and len(out[0]) == sampling.n,
            f"generate([1 conversation], n={sampling.n}) must return [[{sampling.n} Completion]], got {out!r:.300}")
    return out[0]


# --- the properties, in the order they run (cheap and basic first) -----------------------------------------
def _greedy(backend: LLMBackend) -> None:
    sampling = SamplingConfig(max_tokens=24, temperature=0.0)
    first, second = _one(backend, HELLO, sampling)[0], _one(backend, HELLO, sampling)[0]
    _expect(bool(first.text.strip()), f"greedy decoding returned an empty text: {first!r}")
    _expect(first.text == second.text, f"two greedy calls differ: {first.text!r} vs {second.text!r}")
    _expect(first.prompt_tokens > 0 and first.completion_tokens > 0,
            f"expected prompt_tokens and completion_tokens > 0, got {first.prompt_tokens} and {first.completion_tokens}")


def _samples(backend: LLMBackend) -> None:
    out = _one(backend, HELLO, SamplingConfig(max_tokens=16, temperature=1.0, n=3, seed=7))
    _expect(all(c.text for c in out), f"an empty sample among {[c.text for c in out]}")
    _expect(len({c.text for c in out}) > 1, f"three samples at temperature 1.0 are all equal: {out[0].text!r}")


def _greedy_n(backend: LLMBackend) -> None:
    texts = [c.text for c in _one(backend, HELLO, SamplingConfig(max_tokens=8, temperature=0.0, n=2))]
    _expect(texts[0] == texts[1], f"n=2 greedy completions differ: {texts}")


def _stop(backend: LLMBackend) -> None:
    full = _one(backend, LIST, SamplingConfig(max_tokens=32))[0].text
    words = full.split()
    _expect(len(words) >= 3, f"need a few words to pick a stop string from, got {full!r}")
    stop = words[2]
    cut = _one(backend, LIST, SamplingConfig(max_tokens=32, stop=(stop,)))[0]
    _expect(cut.text == full[: full.index(stop)] and stop not in cut.text,
            f"stop=({stop!r},) must cut the greedy text before it: expected {full[: full.index(stop)]!r}, got {cut.text!r}")
    _expect(cut.finish_reason == "stop", f"a stop string must end with finish_reason 'stop', got {cut.finish_reason!r}")


def _max_tokens(backend: LLMBackend) -> None:
    out = _one(backend, STORY, SamplingConfig(max_tokens=5))[0]
    _expect(out.finish_reason == "length" and out.completion_tokens == 5 and bool(out.text),
            f"max_tokens=5 on a long story must give 5 tokens, finish_reason 'length' and a text, got {out!r}")


def _deadline(backend: LLMBackend) -> None:
    original = backend.deadline  # type: ignore[attr-defined]
    backend.deadline = SHORT_DEADLINE  # type: ignore[attr-defined]
    start = time.monotonic()
    try:
        backend.generate([STORY], SamplingConfig(max_tokens=1000))
    except LLMTimeout as exc:
        elapsed, message = time.monotonic() - start, str(exc)
    else:
        raise _Breach(f"{SHORT_DEADLINE} on up to 1,000 tokens did not raise LLMTimeout")
    finally:
        backend.deadline = original  # type: ignore[attr-defined]
    _expect(re.search(DEADLINE_MESSAGE, message) is not None and "raise `timeout_s`" in message,
            f"LLMTimeout must name the work, the time taken, the deadline's terms and the fix, got {message!r}")
    _expect(elapsed < DEADLINE_GRACE_S, f"the backend stopped {elapsed:.1f} s after the call, not at its 0.1 s deadline")
    _expect(bool(_one(backend, HELLO, SamplingConfig(max_tokens=8))[0].text), "the backend answers nothing after a timeout")


def _logprobs(backend: LLMBackend) -> None:
    out = _one(backend, HELLO, SamplingConfig(max_tokens=12, temperature=0.8, seed=3, logprobs=True))[0]
    lps = out.token_logprobs
    _expect(lps is not None and len(lps) == out.completion_tokens > 0,
            f"logprobs=True must give one logprob per completion token ({out.completion_tokens}), got {lps!r}")
    _expect(all(isinstance(lp, float) and lp <= 1e-6 for lp in lps), f"logprobs must be floats <= 0, got {lps!r}")
    plain = _one(backend, HELLO, SamplingConfig(max_tokens=4))[0]
    _expect(plain.token_logprobs is None, f"logprobs=False must give token_logprobs None, got {plain.token_logprobs!r}")


def _json_schema(backend: LLMBackend) -> None:
    for sampling in (SamplingConfig(max_tokens=64, json_schema=TOOL_SCHEMA),
                     SamplingConfig(max_tokens=64, json_schema=TOOL_SCHEMA, temperature=1.0, n=2, seed=1)):
        for completion in _one(backend, TOOL_PROMPT, sampling):
            try:
                jsonschema.validate(json.loads(completion.text), TOOL_SCHEMA)
            except (ValueError, jsonschema.ValidationError) as exc:
                raise _Breach(f"guided output {completion.text!r} does not satisfy the schema: {exc}") from exc


def _batch(backend: LLMBackend) -> None:
    sampling = SamplingConfig(max_tokens=8, temperature=0.8, n=2, seed=0)
    out = backend.generate([HELLO, STORY, LIST], sampling)
    _expect(len(out) == 3 and all(len(row) == 2 and all(c.text for c in row) for row in out),
            f"3 conversations x n=2 must give 3 lists of 2 non-empty completions, got {out!r:.300}")
    greedy = SamplingConfig(max_tokens=8)
    batch = [row[0].text for row in backend.generate([HELLO, LIST], greedy)]
    alone = [_one(backend, conv, greedy)[0].text for conv in (HELLO, LIST)]
    _expect(batch == alone, f"a greedy batch must answer each conversation as if alone: {batch} vs {alone}")
    empty = backend.generate([], sampling)
    _expect(empty == [], f"an empty batch must give [], got {empty!r}")


def _count_tokens(backend: LLMBackend) -> None:
    short = backend.count_tokens(HELLO)
    longer = backend.count_tokens(HELLO + [{"role": "assistant", "content": "Hello there, friend!"}] + STORY)
    _expect(isinstance(short, int) and 0 < short < longer, f"expected 0 < count(short) < count(longer), got {short}, {longer}")
    prompt_tokens = _one(backend, HELLO, SamplingConfig(max_tokens=2))[0].prompt_tokens
    _expect(short == prompt_tokens, f"count_tokens gave {short}, generate reported {prompt_tokens} prompt tokens "
                                    "(skip 'count-tokens' for a backend that only estimates)")


PROPERTIES: dict[str, Callable[[LLMBackend], None]] = {
    "greedy": _greedy, "samples": _samples, "greedy-n": _greedy_n, "stop": _stop, "max-tokens": _max_tokens,
    "deadline": _deadline, "logprobs": _logprobs, "json-schema": _json_schema, "batch": _batch,
    "count-tokens": _count_tokens,
}


def _closed(backend: LLMBackend) -> None:
    backend.close()
    try:
        backend.generate([HELLO], SamplingConfig(max_tokens=2))
    except LLMError:
        pass
    else:
        raise _Breach("generate() after close() must raise LLMError")
    backend.close()  # idempotent


def _run(backend: LLMBackend, report: BackendReport, prop: str, check: Callable[[LLMBackend], None]) -> None:
    where = f"backend {report.name!r} ({report.model}), {prop!r}"
    try:
        check(backend)
    except _Breach as exc:
        raise BackendCheckError(f"{where}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - reported with the property that raised
        raise BackendCheckError(f"{where}: raised {type(exc).__name__}: {exc}") from exc
    report.passed.append(prop)


def check_backend(backend_or_config: LLMBackend | LLMConfig | Mapping[str, Any], *,
                  skip: Iterable[str] = ()) -> BackendReport:
    """Run every property of :data:`PROPERTIES` on a backend (or on the one an :class:`LLMConfig` builds),
    raise :class:`BackendCheckError` on the first breach, return a :class:`BackendReport` otherwise.

    ``skip`` names properties your backend does not promise (e.g. ``"logprobs"`` for a server without them,
    ``"count-tokens"`` for one that estimates). A backend built here from a config is closed at the end and
    checked to refuse work once closed; one you pass in stays open (you own it)."""
    skip = set(skip)
    unknown = sorted(skip - set(PROPERTIES) - {"close"})
    if unknown:
        raise ValueError(f"Expected `skip` to name properties among {[*PROPERTIES, 'close']}, got {unknown}")
    owned = isinstance(backend_or_config, LLMConfig | Mapping)
    backend = make_backend(backend_or_config) if owned else backend_or_config  # type: ignore[arg-type]
    missing = [m for m in ("name", "model", "max_context", "generate", "count_tokens", "close") if not hasattr(backend, m)]
    if missing:
        raise BackendCheckError(f"{type(backend).__name__}: expected the LLMBackend protocol's members, missing {missing}")
    report = BackendReport(str(backend.name), str(backend.model))
    try:
        for prop, check in PROPERTIES.items():
            if prop in skip:
                report.skipped[prop] = "skipped by the caller"
            elif prop == "deadline" and not isinstance(getattr(backend, "deadline", None), Deadline):
                report.skipped[prop] = "the backend has no `deadline` (a dreamer_gym.llm.deadline.Deadline) to shorten"
            else:
                _run(backend, report, prop, check)
    except BaseException:
        if owned:
            backend.close()
        raise
    if not owned:
        report.skipped["close"] = "the caller owns the backend (pass an LLMConfig to check close)"
    elif "close" in skip:
        report.skipped["close"] = "skipped by the caller"
        backend.close()
    else:
        _run(backend, report, "close", _closed)
    return report
