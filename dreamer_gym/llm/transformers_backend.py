"""The in-process Hugging Face transformers backend: any hub id, local folder or GGUF file.

Guided JSON uses xgrammar's logits processor (the grammar engine vLLM uses), so a small model emits
well-formed tool calls here too. Sampling seeds use a forked torch RNG: no global state changes.

Each call's deadline (:mod:`dreamer_gym.llm.deadline`) is enforced by transformers' ``max_time``
stopping criterion, checked after every new token: the prefill of a prompt (at most ``max_context``
tokens) runs to its end, then decoding stops at the deadline and the call raises ``LLMTimeout``. A
generation that finished (end of sequence, a stop string, ``max_tokens``) is never thrown away, even late.

On a busy CPU, torch's OpenMP threads spin-wait for each other by default, and a descheduled thread
stalls the rest: SmolLM2-135M decoded 2.4 tok/s on 2 threads at load 4.8 and 21 tok/s with
``OMP_WAIT_POLICY=PASSIVE`` at load 5.2. So the backend sets that (if unset) before torch loads; it
changes no result, only how idle threads wait. It must come before ``import torch`` anywhere in the process.
"""
from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dreamer_gym.errors import ConfigError, LLMError
from dreamer_gym.llm.base import Completion, Conversation, SamplingConfig
from dreamer_gym.llm.config import LLMConfig
from dreamer_gym.llm.deadline import Deadline
from dreamer_gym.llm.models import resolve_model

log = logging.getLogger(__name__)


def _cut_at_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """Text up to the earliest stop string (excluded), and whether one was found."""
    cuts = [i for i in (text.find(s) for s in stop if s) if i >= 0]
    return (text[: min(cuts)], True) if cuts else (text, False)


def prefer_passive_omp_waits() -> None:
    """Set ``OMP_WAIT_POLICY=PASSIVE`` unless the caller chose a policy; say so when torch came first."""
    if "OMP_WAIT_POLICY" in os.environ:
        return
    if "torch" in sys.modules:
        log.info("torch was imported before the transformers backend: set OMP_WAIT_POLICY=PASSIVE in the "
                 "environment for ~10x faster generation on a busy CPU")
        return
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"


class TransformersBackend:
    name = "transformers"

    def __init__(self, model: str, gguf_file: str | None = None, dtype: str = "auto",
                 max_context: int = 4096, timeout_s: float = Deadline.timeout_s, *,
                 min_prefill_tok_s: float = Deadline.min_prefill_tok_s,
                 min_decode_tok_s: float = Deadline.min_decode_tok_s) -> None:
        prefer_passive_omp_waits()
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.model = model
        self.max_context = max_context
        self.deadline = Deadline(timeout_s, min_prefill_tok_s, min_decode_tok_s)
        path = resolve_model(model)
        if (path.startswith(("/", ".", "~")) or Path(path).exists()) and not Path(path).expanduser().exists():
            raise ConfigError(f"Model folder {path!r} does not exist; pass a local folder, a hub id, or 'smollm2-135m'")
        torch_dtype = torch.float32 if dtype == "auto" else getattr(torch, dtype, None)
        if torch_dtype is None:
            raise ConfigError(f"Unknown `dtype` {dtype!r}; use auto, float32, bfloat16 or float16")
        kwargs: dict[str, Any] = {"gguf_file": gguf_file} if gguf_file else {}
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(path, **kwargs)
            self._model = AutoModelForCausalLM.from_pretrained(path, dtype=torch_dtype, **kwargs).eval()
        except OSError as exc:  # hub ids fail here when no hub is reachable
            raise LLMError(f"Could not load model {model!r} with transformers: {exc}. Pass a local folder "
                           "(or 'smollm2-135m' for the bundled CPU model).") from exc
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self._grammar_compiler: Any = None
        self._grammars: dict[str, Any] = {}

    @classmethod
    def from_config(cls, config: LLMConfig) -> TransformersBackend:
        return cls(config.model, config.gguf_file, config.dtype, config.max_context, config.timeout_s,
                   min_prefill_tok_s=config.min_prefill_tok_s, min_decode_tok_s=config.min_decode_tok_s)

    # --- protocol --------------------------------------------------------------------------------------
    def count_tokens(self, conversation: Conversation) -> int:
        return len(self._prompt_ids(conversation))

    def generate(self, conversations: Sequence[Conversation], sampling: SamplingConfig) -> list[list[Completion]]:
        return [self._generate_one(conv, sampling) for conv in conversations]

    def close(self) -> None:
        self._model = None
        self._grammars.clear()

    # --- internals -------------------------------------------------------------------------------------
    def _prompt_ids(self, conversation: Conversation) -> list[int]:
        ids = self.tokenizer.apply_chat_template(list(conversation), add_generation_prompt=True, tokenize=True)
        if isinstance(ids, dict) or hasattr(ids, "input_ids"):
            ids = ids["input_ids"]
        return list(ids)

    def _grammar(self, schema: dict[str, Any]) -> Any:
        import xgrammar as xgr

        key = json.dumps(schema, sort_keys=True)
        if key not in self._grammars:
            if self._grammar_compiler is None:
                info = xgr.TokenizerInfo.from_huggingface(self.tokenizer, vocab_size=self._model.config.vocab_size)
                self._grammar_compiler = xgr.GrammarCompiler(info)
            self._grammars[key] = self._grammar_compiler.compile_json_schema(key, any_whitespace=False)
        return self._grammars[key]

    def _generate_one(self, conversation: Conversation, sampling: SamplingConfig) -> list[Completion]:
        """One conversation, ``n`` samples in one ``generate`` call (greedy: one sample, repeated)."""
        import torch

        if self._model is None:
            raise LLMError("The transformers backend is closed")
        prompt = self._prompt_ids(conversation)
        if len(prompt) + sampling.max_tokens > self.max_context:
            raise LLMError(f"Prompt of {len(prompt)} tokens + max_tokens {sampling.max_tokens} exceeds "
                           f"max_context {self.max_context}; raise `max_context` or shorten the prompt")
        greedy = sampling.temperature == 0
        samples = 1 if greedy else sampling.n
        deadline_s = self.deadline.seconds(len(prompt), sampling.max_tokens, rows=samples)
        kwargs: dict[str, Any] = dict(
            max_new_tokens=sampling.max_tokens, do_sample=not greedy, num_return_sequences=samples,
            return_dict_in_generate=True, output_logits=sampling.logprobs, max_time=deadline_s,
            pad_token_id=self.tokenizer.pad_token_id,
        )
        if not greedy:
            kwargs.update(temperature=sampling.temperature, top_p=sampling.top_p, top_k=0)
        else:
            kwargs.update(temperature=None, top_p=None, top_k=None)
        if sampling.stop:
            kwargs.update(stop_strings=list(sampling.stop), tokenizer=self.tokenizer)
        if sampling.json_schema is not None:
            import xgrammar as xgr

            kwargs["logits_processor"] = [xgr.contrib.hf.LogitsProcessor(self._grammar(sampling.json_schema))]
        input_ids = torch.tensor([prompt])
        started = time.monotonic()
        with torch.random.fork_rng(devices=[]), torch.inference_mode():
            if sampling.seed is not None:
                torch.manual_seed(sampling.seed)
            try:
                out = self._model.generate(input_ids=input_ids, attention_mask=torch.ones_like(input_ids), **kwargs)
            except RuntimeError as exc:
                raise LLMError(f"transformers generate failed for {self.model!r}: {exc}") from exc
        elapsed = time.monotonic() - started
        new = out.sequences[:, len(prompt):]
        logprobs = None
        if sampling.logprobs:
            steps = torch.stack(out.logits, dim=1).float().log_softmax(-1)  # (samples, new, vocab)
            logprobs = steps.gather(-1, new.unsqueeze(-1)).squeeze(-1)
        eos = set(self._eos_ids())
        completions = []
        for row in range(new.shape[0]):
            ids = new[row].tolist()
            length = next((i for i, t in enumerate(ids) if t in eos or t == self.tokenizer.pad_token_id), len(ids))
            hit_eos = length < len(ids)
            text, hit_stop = _cut_at_stop(self.tokenizer.decode(ids[:length], skip_special_tokens=True), sampling.stop)
            if not (hit_eos or hit_stop) and length < sampling.max_tokens:  # cut by max_time, not finished
                raise self.deadline.error(f"transformers model {self.model!r}", len(prompt), sampling.max_tokens,
                                          elapsed, rows=samples, note=f" after {length} new tokens")
            finish = "stop" if hit_eos or hit_stop else "length"
            lps = tuple(float(x) for x in logprobs[row, :length]) if logprobs is not None else None
            completions.append(Completion(text, finish, lps, len(prompt), length))
        return completions * sampling.n if greedy else completions

    def _eos_ids(self) -> list[int]:
        eos = self._model.generation_config.eos_token_id
        ids = eos if isinstance(eos, list) else [eos]
        return [i for i in ids if i is not None] + [self.tokenizer.eos_token_id]

    def __repr__(self) -> str:
        return f"TransformersBackend(model={self.model!r})"
