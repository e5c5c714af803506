"""Failures are fast, typed and named: unreachable server, a server that never answers (or trickles bytes
forever), an unknown model (on the real vLLM server), a missing model folder, and an API key that never
leaks. A hung server fails within its deadline, and the deadline follows the work asked.
"""
from __future__ import annotations

import logging
import socket
import threading
import time
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dreamer_gym.errors import ConfigError, LLMError, LLMTimeout
from dreamer_gym.llm import LLMConfig, SamplingConfig, make_backend
from dreamer_gym.llm.deadline import Deadline
from dreamer_gym.llm.openai_backend import OpenAIBackend
from dreamer_gym.llm.vllm_server import VLLMServer, free_port
from dreamer_gym.llm.vllm_backend import VLLMBackend

from llm_helpers import SERVED_NAME, HeavyEngines, alive

HELLO = [{"role": "user", "content": "Say hello."}]
SECRET = "sk-test-DO-NOT-LEAK-4b1d9c7e2f"
KEY_ENV = "DREAMER_TEST_SECRET_KEY"
INSTANT = {"min_prefill_tok_s": 1e6, "min_decode_tok_s": 1e6}  # deadline = timeout_s, for the hung-server tests


@pytest.fixture
def silent_server() -> Iterator[str]:
    """An HTTP 'server' that accepts connections and never answers; yields its base_url."""
    sock = socket.create_server(("127.0.0.1", 0))
    sock.settimeout(0.2)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
                held.append(conn)
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    stop.set()
    thread.join(timeout=2)
    for conn in held:
        conn.close()
    sock.close()


@pytest.fixture
def trickle_server() -> Iterator[str]:
    """An HTTP server that answers 200 with a chunked body and sends one space every 0.2 s, never
    finishing: an HTTP read timeout never fires on it. Yields its base_url."""
    sock = socket.create_server(("127.0.0.1", 0))
    sock.settimeout(0.2)
    stop = threading.Event()

    def serve(conn: socket.socket) -> None:
        with conn:
            try:
                conn.recv(65536)  # the request (headers and a small JSON body)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             b"Transfer-Encoding: chunked\r\n\r\n")
                while not stop.wait(0.2):
                    conn.sendall(b"1\r\n \r\n")
            except OSError:  # the client gave up and closed the connection
                return

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                continue
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    stop.set()
    thread.join(timeout=2)
    sock.close()


# --- openai backend: no server, a silent server --------------------------------------------------------
@pytest.mark.timeout(30)
def test_unreachable_server_is_llm_error_fast() -> None:
    base_url = f"http://127.0.0.1:{free_port()}/v1"
    backend = OpenAIBackend(base_url, "some-model", timeout_s=5, retries=2)
    start = time.monotonic()
    with pytest.raises(LLMError) as info:
        backend.generate([HELLO], SamplingConfig())
    assert time.monotonic() - start < 10
    assert not isinstance(info.value, LLMTimeout)
    assert base_url in str(info.value) and "some-model" in str(info.value)
    backend.close()
    with pytest.raises(LLMError, match="closed"):
        backend.generate([HELLO], SamplingConfig())


@pytest.mark.timeout(30)
def test_silent_server_times_out(silent_server: str) -> None:
    backend = OpenAIBackend(silent_server, "m", timeout_s=1.0, retries=0, **INSTANT)
    start = time.monotonic()
    with pytest.raises(LLMTimeout, match=r"up to 64 tokens after a \d+-token prompt took [\d.]+ s .*deadline 1\.0 s "
                                         r"= timeout_s 1 \+ .*; raise `timeout_s`"):
        backend.generate([HELLO], SamplingConfig())
    assert time.monotonic() - start < 1.0 + 10.0  # generous: holds on a busy machine
    backend.close()


@pytest.mark.timeout(60)
def test_a_server_that_never_finishes_its_answer_is_cut_by_the_wall_clock(trickle_server: str) -> None:
    """Bytes every 0.2 s keep an HTTP read timeout from firing; the wait on the batch still ends."""
    backend = OpenAIBackend(trickle_server, "m", timeout_s=1.0, retries=0, **INSTANT)
    start = time.monotonic()
    with pytest.raises(LLMTimeout, match=r"deadline 1\.0 s .*never finished it"):
        backend.generate([HELLO], SamplingConfig())
    assert time.monotonic() - start < 1.0 + 10.0
    backend.close()


@pytest.mark.timeout(60)
def test_the_deadline_follows_the_work_asked(silent_server: str) -> None:
    """Against a server that never answers, a call waits exactly its deadline: 0.2 s + max_tokens / 20
    tok/s, so 5 tokens give up after ~0.45 s and 25 tokens after ~1.45 s (timers never fire early)."""
    backend = OpenAIBackend(silent_server, "m", timeout_s=0.2, retries=0, min_prefill_tok_s=1e6, min_decode_tok_s=20)
    waited = {}
    for max_tokens in (5, 25):
        start = time.monotonic()
        with pytest.raises(LLMTimeout, match=f"up to {max_tokens} tokens .*{max_tokens} max_tokens / min_decode_tok_s 20"):
            backend.generate([HELLO], SamplingConfig(max_tokens=max_tokens))
        waited[max_tokens] = time.monotonic() - start
    assert 0.45 <= waited[5] < waited[25] and waited[25] >= 1.45, waited
    assert waited[25] < 1.45 + 10.0, waited
    backend.close()


def test_deadline_terms_and_config_fields() -> None:
    deadline = LLMConfig(timeout_s=10, min_prefill_tok_s=100, min_decode_tok_s=2).deadline()
    assert deadline.seconds(prompt_tokens=1000, max_tokens=40) == 10 + 1000 / 100 + 40 / 2
    assert deadline.seconds(1000, 40, rows=3) == 10 + 3 * (10 + 20)  # each sequence counted as if run alone
    assert "deadline 40.0 s = timeout_s 10 + (1000 prompt tokens / min_prefill_tok_s 100" in deadline.explain(1000, 40)
    assert LLMConfig.coerce({"timeout_s": 120, "retries": 1}).deadline() == Deadline(120, 10.0, 1.0)  # old YAML loads
    for name in ("timeout_s", "min_prefill_tok_s", "min_decode_tok_s"):
        assert "help" in LLMConfig.__dataclass_fields__[name].metadata
        with pytest.raises(ConfigError, match=f"Expected `{name}` to be a positive number, got 0"):
            LLMConfig(**{name: 0})


@pytest.mark.timeout(30)
def test_retries_are_honoured(silent_server: str) -> None:
    backend = OpenAIBackend(silent_server, "m", timeout_s=0.5, retries=1, **INSTANT)
    start = time.monotonic()
    with pytest.raises(LLMTimeout, match="any of 2 tries"):
        backend.generate([HELLO], SamplingConfig())
    elapsed = time.monotonic() - start
    assert 1.0 <= elapsed < 1.0 + 10.0  # two attempts of 0.5 s each, plus the client's backoff
    backend.close()


@pytest.mark.timeout(30)
def test_wait_until_ready_times_out(silent_server: str) -> None:
    backend = OpenAIBackend(silent_server, "m", timeout_s=1.0, retries=0, **INSTANT)
    start = time.monotonic()
    with pytest.raises(LLMTimeout, match="not ready"):
        backend.wait_until_ready(timeout_s=1.5, poll_s=0.1)
    assert time.monotonic() - start < 1.5 + 6.0
    backend.close()


# --- vllm backend and server: bad models fail before any engine starts ---------------------------------
@pytest.mark.timeout(30)
def test_missing_model_folder_fails_fast(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cases = {
        str(tmp_path / "no-such-model"): "does not exist",
        str(tmp_path): "no config.json",
        "nobody/no-such-model-xyz": "HF_HUB_OFFLINE",
    }
    for model, reason in cases.items():
        start = time.monotonic()
        with pytest.raises(ConfigError, match=reason) as info:
            VLLMBackend(model)
        assert time.monotonic() - start < 5
        assert model in str(info.value) and "smollm2-135m" in str(info.value)  # names the model and the fix
    with pytest.raises(ConfigError, match="does not exist"):
        make_backend(LLMConfig(backend="vllm", model=str(tmp_path / "nope")))
    with pytest.raises(ConfigError, match="does not exist"):
        VLLMServer(tmp_path / "nope")


@pytest.mark.heavy  # starts its own vLLM server, ~24 s (issue 39: CI time)
@pytest.mark.vllm
@pytest.mark.timeout(120)
def test_server_that_dies_reports_its_log(smollm2_folder: Path, tmp_path: Path) -> None:
    server = VLLMServer(smollm2_folder, "x", extra_args=("--no-such-flag",), startup_timeout_s=100,
                        log_path=tmp_path / "server.log")
    with pytest.raises(LLMError, match="exited with code") as info:
        server.start()
    assert "no-such-flag" in str(info.value)  # the log tail says why
    assert str(tmp_path / "server.log") in str(info.value)
    assert not server.running


# --- the real vLLM server: unknown model, secrets -------------------------------------------------------
@pytest.mark.vllm
@pytest.mark.timeout(300)
def test_unknown_model_on_real_server_is_404(vllm_server: Any) -> None:
    backend = OpenAIBackend(vllm_server.base_url, "no-such-model", timeout_s=30, retries=0)
    with pytest.raises(LLMError, match="404") as info:
        backend.generate([HELLO], SamplingConfig(max_tokens=2))
    assert "no-such-model" in str(info.value) and SERVED_NAME in str(info.value)
    assert not isinstance(info.value, LLMTimeout)
    served = OpenAIBackend(vllm_server.base_url, SERVED_NAME, timeout_s=30)
    served.wait_until_ready(timeout_s=10)  # the real server is up: returns at once
    backend.close()
    served.close()


def _leaks(texts: list[str]) -> list[str]:
    return [t for t in texts if SECRET in t]


def _exception_texts(exc: BaseException) -> list[str]:
    return [str(exc), repr(exc), "".join(traceback.format_exception(exc)), repr(vars(exc))]


@pytest.mark.timeout(60)
def test_api_key_never_leaks_unreachable(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    caplog.set_level(logging.DEBUG)
    cfg = LLMConfig(backend="openai", model="m", base_url=f"http://127.0.0.1:{free_port()}/v1",
                    api_key_env=KEY_ENV, retries=1, timeout_s=5)
    assert SECRET not in repr(cfg)
    backend = make_backend(cfg)
    texts = [repr(backend), str(backend)]
    with pytest.raises(LLMError) as info:
        backend.generate([HELLO], SamplingConfig())
    assert info.value.__cause__ is None and info.value.__context__ is None  # no request (headers) attached
    texts += _exception_texts(info.value)
    backend.count_tokens(HELLO)  # falls back to the estimate, quietly
    texts += [r.getMessage() for r in caplog.records] + [caplog.text]
    assert caplog.records, "DEBUG logging should have captured the client's request logs"
    assert not _leaks(texts)
    backend.close()


@pytest.mark.vllm
@pytest.mark.timeout(300)
def test_api_key_never_leaks_real_server(vllm_server: Any, monkeypatch: pytest.MonkeyPatch,
                                         caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    caplog.set_level(logging.DEBUG)
    ok = OpenAIBackend(vllm_server.base_url, SERVED_NAME, api_key_env=KEY_ENV, timeout_s=60, retries=0)
    out = ok.generate([HELLO, HELLO], SamplingConfig(max_tokens=4, logprobs=True))
    texts = [repr(ok), str(ok), repr(out), str(ok.count_tokens(HELLO))]
    bad = OpenAIBackend(vllm_server.base_url, "no-such-model", api_key_env=KEY_ENV, timeout_s=60, retries=0)
    with pytest.raises(LLMError) as info:
        bad.generate([HELLO], SamplingConfig(max_tokens=2))
    texts += _exception_texts(info.value) + [r.getMessage() for r in caplog.records] + [caplog.text]
    assert not _leaks(texts)
    ok.close()
    bad.close()


@pytest.mark.vllm
@pytest.mark.timeout(120)
def test_server_stop_leaves_no_processes(engines: HeavyEngines) -> None:
    """Runs last: stopping the server takes its engine core and worker with it."""
    held = engines.get("openai-server")
    spawned, server = held.spawned, held.server
    assert server.running and len(spawned) >= 2
    engines.close()
    deadline = time.monotonic() + 10
    while alive(spawned) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alive(spawned), f"server processes left after stop(): {alive(spawned)}"
    assert not server.running
    server.stop()  # idempotent
