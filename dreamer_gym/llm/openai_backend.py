"""Any OpenAI-compatible chat server (a vLLM server, llama.cpp, hosted APIs) behind the LLMBackend protocol.

The API key is read once from the environment variable the config names and handed to the ``openai``
client; it is never stored on this object, logged, or put into a message or exception. Errors from
the client are re-raised as :class:`LLMError` / :class:`LLMTimeout` built *outside* the ``except``
block, so they carry no reference to the failed request (whose headers hold the key).

``count_tokens`` is exact on servers with vLLM's ``/tokenize`` endpoint (it applies the served model's
chat template); elsewhere it is an estimate of ~4 characters per token plus a few per message.

Each request gets the batch's deadline (:mod:`dreamer_gym.llm.deadline`, priced on the estimate: no
extra round trip to a server that may be hung) as its HTTP timeout, and each retry gets it again. A
server that keeps the connection alive without finishing (trickling bytes defeats an HTTP read timeout)
is caught by a wall-clock wait on the whole batch: ``generate`` returns or raises ``LLMTimeout`` within
``(retries + 1) * deadline`` plus the client's back-off between tries.
"""
from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Self

from dreamer_gym.errors import LLMError, LLMTimeout
from dreamer_gym.llm.base import Completion, Conversation, SamplingConfig
from dreamer_gym.llm.config import LLMConfig
from dreamer_gym.llm.deadline import Deadline

log = logging.getLogger(__name__)

PLACEHOLDER_KEY = "EMPTY"  # local servers ignore the key, but the client insists on one
_CHARS_PER_TOKEN = 4
_TOKENS_PER_MESSAGE = 4  # role markers and separators of a typical chat template
_MAX_BACKOFF_S = 8.0  # the openai client's longest wait between two tries (openai._constants.MAX_RETRY_DELAY)


class OpenAIBackend:
    """:class:`~dreamer_gym.llm.base.LLMBackend` over the chat completions API; a batch runs concurrently."""

    name = "openai"

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str = "OPENAI_API_KEY",
        max_context: int = 4096,
        timeout_s: float = Deadline.timeout_s,
        retries: int = 2,
        max_concurrency: int = 16,
        min_prefill_tok_s: float = Deadline.min_prefill_tok_s,
        min_decode_tok_s: float = Deadline.min_decode_tok_s,
    ) -> None:
        try:
            import openai
        except ImportError as e:
            from dreamer_gym.errors import ConfigError

            raise ConfigError(f"The openai backend needs the `openai` package: pip install openai ({e})") from e
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key_env = api_key_env
        self.max_context = max_context
        self.deadline = Deadline(timeout_s, min_prefill_tok_s, min_decode_tok_s)
        self.retries = retries
        self._client: Any = openai.OpenAI(
            api_key=os.environ.get(api_key_env) or PLACEHOLDER_KEY,
            base_url=self.base_url,
            timeout=timeout_s,  # for the small calls (models, tokenize); a generation gets its deadline
            max_retries=retries,
        )
        self._pool = ThreadPoolExecutor(max_workers=max_concurrency, thread_name_prefix="openai-backend")
        self._tokenize_url: str | None = _server_root(self.base_url) + "/tokenize"  # None once it 404s
        self._closed = False

    @classmethod
    def from_config(cls, cfg: LLMConfig) -> OpenAIBackend:
        if not cfg.base_url:
            from dreamer_gym.errors import ConfigError

            raise ConfigError("The openai backend needs `base_url`, e.g. http://127.0.0.1:8000/v1")
        return cls(cfg.base_url, cfg.model, api_key_env=cfg.api_key_env, max_context=cfg.max_context,
                   timeout_s=cfg.timeout_s, retries=cfg.retries, min_prefill_tok_s=cfg.min_prefill_tok_s,
                   min_decode_tok_s=cfg.min_decode_tok_s)

    def __repr__(self) -> str:  # never the key
        return (f"OpenAIBackend(base_url={self.base_url!r}, model={self.model!r}, "
                f"api_key_env={self.api_key_env!r}, deadline={self.deadline}, retries={self.retries})")

    __str__ = __repr__

    # --- protocol ---------------------------------------------------------------------------------------
    def generate(self, conversations: Sequence[Conversation], sampling: SamplingConfig) -> list[list[Completion]]:
        """One request per conversation, sent concurrently so the server can batch them.

        Every request may take the whole batch's deadline (a server may queue them one after another);
        the batch returns or raises within its wall-clock bound either way.
        """
        if not conversations:
            return []
        if self._closed:
            raise LLMError(f"OpenAIBackend for {self.base_url} (model {self.model!r}) is closed; build a new one")
        prompt_tokens = max(_estimate_tokens(conv) for conv in conversations)
        rows = len(conversations) * (1 if sampling.temperature == 0 else sampling.n)
        deadline_s = self.deadline.seconds(prompt_tokens, sampling.max_tokens, rows)
        started = time.monotonic()
        futures = [self._pool.submit(self._one, list(conv), sampling, deadline_s) for conv in conversations]
        timeout = self._bounded(futures, started + (self.retries + 1) * deadline_s + self.retries * _MAX_BACKOFF_S)
        if timeout is None:
            return [f.result() for f in futures]
        elapsed = time.monotonic() - started
        if isinstance(timeout, LLMTimeout):  # the HTTP timeout fired inside the client
            note = f" (the server did not answer in time on any of {self.retries + 1} tries)"
        else:
            note = (f" (the server accepted the request but never finished it; waited for {self.retries + 1} "
                    f"tries and their back-off)")
        raise self.deadline.error(f"OpenAI-compatible server at {self.base_url} (model {self.model!r})",
                                  prompt_tokens, sampling.max_tokens, elapsed, rows, note=note)

    @staticmethod
    def _bounded(futures: list[Future[list[Completion]]], until: float) -> LLMTimeout | FutureTimeout | None:
        """Wait for every future until ``until`` (monotonic); the timeout that stopped the wait, or None.
        Errors other than timeouts propagate as they are."""
        for future in futures:
            try:
                future.result(timeout=max(until - time.monotonic(), 0.0))
            except LLMTimeout as e:
                return e
            except FutureTimeout as e:
                for other in futures:
                    other.cancel()
                return e
        return None

    def count_tokens(self, conversation: Conversation) -> int:
        if self._tokenize_url is not None:
            count = self._server_count(list(conversation))
            if count is not None:
                return count
        return _estimate_tokens(conversation)

    def close(self) -> None:
        self._closed = True
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def wait_until_ready(self, timeout_s: float = 120.0, poll_s: float = 0.5) -> None:
        """Poll ``/v1/models`` until the server answers and lists ``model``; LLMTimeout otherwise."""
        deadline = time.monotonic() + timeout_s
        quick = self._client.with_options(timeout=min(5.0, timeout_s), max_retries=0)
        served: list[str] | None = None
        while True:
            try:
                served = [m.id for m in quick.models.list()]
                if self.model in served:
                    return
            except Exception as e:  # noqa: BLE001 - not up yet; any failure means "poll again"
                log.debug("%s not ready yet: %s", self.base_url, type(e).__name__)
            if time.monotonic() > deadline:
                state = (f"it serves {served}, not {self.model!r}" if served is not None else "it never answered")
                raise LLMTimeout(f"OpenAI-compatible server at {self.base_url} not ready for model {self.model!r} "
                                 f"within {timeout_s:.0f} s: {state}")
            time.sleep(poll_s)

    # --- internals --------------------------------------------------------------------------------------
    def _one(self, messages: list[dict[str, str]], sampling: SamplingConfig, deadline_s: float) -> list[Completion]:
        greedy = sampling.temperature == 0
        n = 1 if greedy else sampling.n  # vLLM refuses n > 1 when greedy; greedy samples are all equal
        request: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "n": n,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "max_tokens": sampling.max_tokens,
        }
        if sampling.stop:
            request["stop"] = list(sampling.stop)
        if sampling.seed is not None:
            request["seed"] = sampling.seed
        if sampling.logprobs:
            request["logprobs"] = True
        if sampling.json_schema is not None:
            request["response_format"] = {
                "type": "json_schema",
                # strict=False: OpenAI's strict mode rejects schemas with optional properties (the tool-call
                # schema has some); vLLM and llama.cpp enforce the schema either way
                "json_schema": {"name": "action", "schema": sampling.json_schema, "strict": False},
            }
        log.debug("chat completion: base_url=%s model=%s n=%d max_tokens=%d", self.base_url, self.model, n,
                  sampling.max_tokens)
        failure: LLMError | None = None
        try:
            response = self._client.chat.completions.create(**request, timeout=deadline_s)
        except Exception as e:  # noqa: BLE001 - mapped below, outside this block (no chained request/headers)
            failure = self._map_error(e)
        if failure is not None:
            raise failure
        completions = _completions(response, n)
        return completions * sampling.n if greedy else completions

    def _map_error(self, e: Exception) -> LLMError:
        import openai

        where = f"OpenAI-compatible server at {self.base_url} (model {self.model!r})"
        if isinstance(e, openai.APITimeoutError):  # generate() words it with the deadline's terms
            return LLMTimeout(f"{where} did not answer within the deadline after {self.retries} retries")
        if isinstance(e, openai.APIConnectionError):
            return LLMError(f"cannot reach {where}: {_cause(e)}; is the server running and `base_url` right?")
        if isinstance(e, openai.NotFoundError):
            return LLMError(f"{where}: HTTP 404, model {self.model!r} not found ({_message(e)}); "
                            f"set `model` to one of the served models: {self._served_models()}")
        if isinstance(e, openai.AuthenticationError | openai.PermissionDeniedError):
            return LLMError(f"{where} rejected the API key (HTTP {e.status_code}); set the environment "
                            f"variable {self.api_key_env} (`api_key_env`) to a valid key")
        if isinstance(e, openai.APIStatusError):
            return LLMError(f"{where} answered HTTP {e.status_code}: {_message(e)}")
        return LLMError(f"{where} failed: {type(e).__name__}: {_message(e)}")

    def _served_models(self) -> list[str] | str:
        try:
            return [m.id for m in self._client.with_options(timeout=5.0, max_retries=0).models.list()]
        except Exception:  # noqa: BLE001 - best effort, for the error message only
            return "unknown (GET /models failed)"

    def _server_count(self, messages: list[dict[str, str]]) -> int | None:
        """Exact prompt tokens from vLLM's ``/tokenize``; None (and never again) where the server lacks it."""
        import openai

        try:
            data = self._client.with_options(timeout=min(10.0, self.deadline.timeout_s), max_retries=0).post(
                self._tokenize_url, cast_to=object,
                body={"model": self.model, "messages": messages, "add_generation_prompt": True})
            return int(data["count"])
        except (openai.NotFoundError, openai.UnprocessableEntityError, openai.BadRequestError,
                KeyError, TypeError, ValueError):
            self._tokenize_url = None
        except Exception as e:  # noqa: BLE001 - transient: estimate this time, try the server again next time
            log.debug("POST %s failed (%s); estimating tokens", self._tokenize_url, type(e).__name__)
        return None


def _completions(response: Any, n: int) -> list[Completion]:
    usage = getattr(response, "usage", None)
    prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
    total_completion = int(getattr(usage, "completion_tokens", 0) or 0)
    choices = sorted(response.choices, key=lambda c: c.index)
    out = []
    for i, choice in enumerate(choices):
        content = getattr(choice.logprobs, "content", None) if choice.logprobs is not None else None
        token_logprobs = tuple(float(t.logprob) for t in content) if content is not None else None
        if token_logprobs is not None:
            completion_tokens = len(token_logprobs)
        else:  # usage only has the total over the n choices: split it evenly (exact for n = 1)
            completion_tokens = total_completion // n + (1 if i < total_completion % n else 0)
        reason = choice.finish_reason or "stop"
        out.append(Completion(
            text=choice.message.content or "",
            finish_reason="length" if reason == "length" else "stop" if reason in (
                "stop", "tool_calls", "function_call") else "error",
            token_logprobs=token_logprobs,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
        ))
    return out


def _estimate_tokens(conversation: Conversation) -> int:
    """~4 characters a token plus a few per message: prices a request without asking the server."""
    chars = sum(len(m.get("content") or "") for m in conversation)
    return math.ceil(chars / _CHARS_PER_TOKEN) + _TOKENS_PER_MESSAGE * len(conversation) + 1


def _server_root(base_url: str) -> str:
    return base_url.removesuffix("/v1")


def _message(e: Exception) -> str:
    body = getattr(e, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
        if body.get("message"):
            return str(body["message"])
    return str(getattr(e, "message", None) or e)


def _cause(e: Exception) -> str:
    cause = e.__cause__ or e.__context__
    return f"{type(cause).__name__}: {cause}" if cause is not None else str(e)
