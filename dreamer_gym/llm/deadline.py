"""How long one LLM call may take: a deadline that follows the work asked, not one fixed number.

A generation costs a prefill (the prompt) and a decode (each new token). One fixed timeout either fails
a long prompt on a busy machine (a 4,096-token SmolLM2 call took 136 s on a loaded 2-core CPU against
a flat 120 s) or waits minutes on a hung server for a one-line answer. So every backend gives a call

    deadline = timeout_s + rows * (prompt_tokens / min_prefill_tok_s + max_tokens / min_decode_tok_s)

where the two rates are *floors*: speeds the slowest machine you run on still beats, with a margin
(the defaults are a loaded 2-core CPU running SmolLM2-135M, divided by ~3; see docs/llm.md). ``rows``
is how many sequences the call decodes (samples x conversations), each counted as if run alone, so a
server that queues requests instead of batching them still finishes in time. The deadline is finite for
every call (prompt and new tokens are bounded by ``max_context``), so a hung backend fails in bounded
time too.
"""
from __future__ import annotations

from dataclasses import dataclass

from dreamer_gym.errors import ConfigError, LLMTimeout

FIX = ("raise `timeout_s` or lower `min_prefill_tok_s` / `min_decode_tok_s` (LLMConfig fields; CLI "
       "--timeout-s, --min-prefill-tok-s, --min-decode-tok-s) if the machine is just slow or busy")


@dataclass(frozen=True)
class Deadline:
    """The deadline model of one backend; :meth:`seconds` prices a call, :meth:`error` explains a miss."""

    timeout_s: float = 30.0
    min_prefill_tok_s: float = 10.0
    min_decode_tok_s: float = 1.0

    def __post_init__(self) -> None:
        for name in ("timeout_s", "min_prefill_tok_s", "min_decode_tok_s"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or value <= 0:
                raise ConfigError(f"Expected `{name}` to be a positive number, got {value!r}")

    def seconds(self, prompt_tokens: int, max_tokens: int, rows: int = 1) -> float:
        """The wall-clock seconds a call of ``rows`` sequences may take."""
        work = prompt_tokens / self.min_prefill_tok_s + max_tokens / self.min_decode_tok_s
        return self.timeout_s + max(rows, 1) * work

    def explain(self, prompt_tokens: int, max_tokens: int, rows: int = 1) -> str:
        """The deadline with its terms, e.g. for an error message or a log line."""
        rows_text = f"{rows} x (" if rows > 1 else "("
        return (f"deadline {self.seconds(prompt_tokens, max_tokens, rows):.1f} s = timeout_s {self.timeout_s:g} + "
                f"{rows_text}{prompt_tokens} prompt tokens / min_prefill_tok_s {self.min_prefill_tok_s:g} + "
                f"{max_tokens} max_tokens / min_decode_tok_s {self.min_decode_tok_s:g})")

    def error(self, where: str, prompt_tokens: int, max_tokens: int, elapsed_s: float, rows: int = 1,
              note: str = "") -> LLMTimeout:
        """The timeout a backend raises: the work asked, the time taken, the deadline and the fix."""
        rows_text = f" x {rows} sequences" if rows > 1 else ""
        return LLMTimeout(
            f"{where}: generating up to {max_tokens} tokens after a {prompt_tokens}-token prompt{rows_text} "
            f"took {elapsed_s:.1f} s and was stopped at its {self.explain(prompt_tokens, max_tokens, rows)}"
            f"{note}; {FIX}")
