"""Helpers for the LLM backend tests (a module of its own: two conftest.py files cannot be imported by name).

:class:`HeavyEngines` keeps at most ONE heavy thing alive (a loaded model, an in-process vLLM engine, a
vLLM server): this machine has 2 cores, and each vLLM start costs ~30-60 s of both.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest

from dreamer_gym.llm import LLMBackend, LLMConfig, make_backend

SERVED_NAME = "smollm2"
MAX_CONTEXT = 2048

# The battery runs on each backend. The in-process vLLM backend's runs with vLLM's engine core in this process
# (VLLM_ENABLE_V1_MULTIPROCESSING=0, KIND "vllm"): the same VLLMBackend code and engine, without the two child
# processes that the default starts (each imports torch and vLLM) and polls on every step; measured on this
# machine, ~20 vs ~50 CPU-s to start and ~20 vs ~80 CPU-s for the battery (issue 39: CI time). The default, with
# its processes ("vllm-processes"), is checked by test_vllm_backend_with_engine_processes_aborts_and_close_reaps.
BACKEND_KINDS = [
    pytest.param("transformers", id="transformers"),
    pytest.param("vllm", id="vllm", marks=pytest.mark.vllm),
    pytest.param("openai-server", id="openai-server", marks=pytest.mark.vllm),
]


@dataclass
class Held:
    kind: str
    backend: LLMBackend
    server: Any = None  # VLLMServer for "openai-server"
    spawned: tuple[int, ...] = ()  # pids of the processes building it started


def _is_resource_tracker(proc: psutil.Process) -> bool:
    """multiprocessing's tracker: one per test process, lives as long as it, is not an engine."""
    try:
        return any("resource_tracker" in a for a in proc.cmdline())
    except psutil.Error:
        return False


def descendants() -> list[psutil.Process]:
    """Live (non-zombie) descendants of this test process, without multiprocessing's resource tracker."""
    out = []
    for proc in psutil.Process().children(recursive=True):
        try:
            if proc.status() == psutil.STATUS_ZOMBIE or _is_resource_tracker(proc):
                continue
            out.append(proc)
        except psutil.Error:
            continue
    return out


def alive(pids: tuple[int, ...] | list[int]) -> list[int]:
    """Which of ``pids`` still run (zombies count as gone: they hold no memory)."""
    left = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                left.append(pid)
        except psutil.Error:
            continue
    return left


class HeavyEngines:
    """Builds backends on demand and keeps at most one alive."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.held: Held | None = None

    def get(self, kind: str) -> Held:
        if self.held is not None and self.held.kind == kind:
            return self.held
        self.close()
        before = {p.pid for p in psutil.Process().children(recursive=True)}
        self.held = self._build(kind)
        after = psutil.Process().children(recursive=True)
        if self.held.server is not None:  # the server's own group, as seen now
            after += [psutil.Process(self.held.server.pid)]
            after += psutil.Process(self.held.server.pid).children(recursive=True)
        self.held.spawned = tuple(sorted({p.pid for p in after if not _is_resource_tracker(p)} - before))
        return self.held

    def close(self) -> None:
        held, self.held = self.held, None
        if held is None:
            return
        held.backend.close()
        if held.server is not None:
            held.server.stop()

    def _build(self, kind: str) -> Held:
        if kind == "transformers":
            return Held(kind, make_backend(LLMConfig(backend="transformers", max_context=MAX_CONTEXT)))
        if kind in ("vllm", "vllm-processes"):
            from dreamer_gym.llm.vllm_backend import VLLMBackend

            with pytest.MonkeyPatch.context() as env:
                if kind == "vllm":  # read when the engine is built: the engine core runs in this process
                    env.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
                return Held(kind, VLLMBackend(str(self.folder), max_context=MAX_CONTEXT))
        if kind == "openai-server":
            from dreamer_gym.llm.openai_backend import OpenAIBackend
            from dreamer_gym.llm.vllm_server import VLLMServer

            server = VLLMServer(self.folder, SERVED_NAME, max_model_len=MAX_CONTEXT, startup_timeout_s=300).start()
            backend = OpenAIBackend(server.base_url, SERVED_NAME, max_context=MAX_CONTEXT, timeout_s=120, retries=0)
            return Held(kind, backend, server=server)
        raise ValueError(f"unknown backend kind {kind!r}")
