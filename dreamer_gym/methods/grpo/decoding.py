"""Grammar-constrained sampling with one KV cache per rollout, kept across turns.

A rollout is one token sequence: the prompt, then for each turn the policy's command (ending in the
end-of-turn token) and the env's answer. The cache holds everything fed so far, so each turn costs only its
new tokens (re-running ``generate`` over the whole context each turn was the probe's main generation
cost). Forced tokens (one option left in the grammar) need no forward pass: they are queued and fed with
the next decision's context. Log-probabilities are those of the constrained policy, the distribution the
tokens were really drawn from: the softmax over the allowed tokens only (a forced token has log-prob 0
and carries no gradient).
"""
from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

Options = Callable[[list[str]], list[str | None]]  # segments chosen so far -> next options (None = end)


@dataclass
class TurnFormat:
    """How a chat template frames turns, read off the tokenizer with sentinel messages: the tokens that
    follow the policy's end-of-turn token up to the next user text, and those that follow the user text up
    to the next assistant text. Works for any template whose assistant turns end with the EOS token."""

    eos_id: int
    user_prefix: str
    user_suffix: str

    @classmethod
    def from_tokenizer(cls, tokenizer: Any) -> TurnFormat:
        chat = [{"role": "system", "content": "\x01S"}, {"role": "user", "content": "\x01U"},
                {"role": "assistant", "content": "\x01A"}, {"role": "user", "content": "\x01V"}]
        text = tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
        eos = tokenizer.eos_token
        after_a = text[text.index("\x01A") + 2:]
        if not after_a.startswith(eos):
            raise ValueError(f"the chat template does not end assistant turns with the EOS token {eos!r}; "
                             "text-action GRPO needs one that does (ChatML, Llama 3, ...)")
        between, after_v = after_a[len(eos):].split("\x01V")
        return cls(int(tokenizer.eos_token_id), between, after_v)

    def env_tokens(self, tokenizer: Any, message: str) -> list[int]:
        """The tokens after the policy's EOS: the user turn holding ``message``, then the assistant header."""
        return list(tokenizer.encode(self.user_prefix + message + self.user_suffix, add_special_tokens=False))


@dataclass
class Decision:
    """One sampled token of the policy: its id, the allowed ids, and its log-prob under the constrained policy."""

    token: int
    allowed: tuple[int, ...]
    logprob: float


@dataclass
class DecodeState:
    """A rollout's cache, the tokens queued for it, and the logits after the last fed token."""

    cache: Any = None
    queued: list[int] = field(default_factory=list)
    logits: torch.Tensor | None = None

    def fork(self) -> DecodeState:
        """A copy for another rollout of the same group (the prompt is fed once per group)."""
        return DecodeState(copy.deepcopy(self.cache), list(self.queued), None if self.logits is None else self.logits.clone())


class ConstrainedDecoder:
    """Samples commands token by token from ``model`` under a segment grammar (see :mod:`.commands`)."""

    def __init__(self, model: Any, tokenizer: Any, temperature: float = 1.0, greedy: bool = False) -> None:
        self.model, self.tokenizer = model, tokenizer
        self.temperature, self.greedy = temperature, greedy
        self.eos_id = int(tokenizer.eos_token_id)
        self._encoded: dict[str, tuple[int, ...]] = {}
        self.forward_tokens = 0  # tokens fed through the model (for the timing split)

    def encode(self, segment: str | None) -> tuple[int, ...]:
        if segment is None:
            return (self.eos_id,)
        if segment not in self._encoded:
            self._encoded[segment] = tuple(self.tokenizer.encode(segment, add_special_tokens=False))
        return self._encoded[segment]

    @torch.no_grad()
    def feed(self, state: DecodeState) -> None:
        """Run the queued tokens through the model (one forward pass), keeping the cache."""
        if not state.queued:
            return
        ids = torch.tensor([state.queued], dtype=torch.long)
        out = self.model(input_ids=ids, past_key_values=state.cache, use_cache=True)
        state.cache = out.past_key_values
        state.logits = out.logits[0, -1].float()
        self.forward_tokens += len(state.queued)
        state.queued = []

    def _pick(self, state: DecodeState, allowed: tuple[int, ...], generator: torch.Generator | None) -> Decision:
        self.feed(state)
        assert state.logits is not None  # noqa: S101 - the prompt was fed
        logits = state.logits[list(allowed)] / self.temperature
        logp = torch.log_softmax(logits, dim=-1)
        if self.greedy:
            index = int(torch.argmax(logp))
        else:
            index = int(torch.multinomial(logp.exp(), 1, generator=generator))
        return Decision(allowed[index], allowed, float(logp[index]))

    def command(self, state: DecodeState, options: Options,
                generator: torch.Generator | None) -> tuple[list[str], list[Decision]]:
        """One command: segments chosen until the grammar's end option; every token as a :class:`Decision`
        (forced ones with a single allowed id and log-prob 0)."""
        chosen: list[str] = []
        decisions: list[Decision] = []
        while True:
            opts = options(chosen)
            if not opts:
                raise ValueError(f"the grammar offers no option after {chosen}")
            seqs = {opt: self.encode(opt) for opt in opts}
            depth = 0
            alive = list(opts)
            while True:
                nexts = tuple(sorted({seqs[o][depth] for o in alive}))
                if len(nexts) == 1:
                    d = Decision(nexts[0], nexts, 0.0)
                else:
                    d = self._pick(state, nexts, generator)
                decisions.append(d)
                state.queued.append(d.token)
                alive = [o for o in alive if seqs[o][depth] == d.token]
                depth += 1
                done = [o for o in alive if len(seqs[o]) == depth]
                if done:  # segments are prefix-free, so the finished one is the only one left
                    if len(alive) != 1:
                        raise ValueError(f"grammar segments {alive} are not prefix-free under this tokenizer")
                    break
            segment = done[0]
            if segment is None:
                return chosen, decisions
            chosen.append(segment)
