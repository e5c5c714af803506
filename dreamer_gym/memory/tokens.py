"""The one fixed tokenizer that all sizes are counted with.

A regex word/punctuation splitter: deterministic, dependency-free and identical on every machine,
so bank sizes in leaderboards never depend on which LLM tokenizer happens to be installed.
"""
from __future__ import annotations

import re

_TOKEN = re.compile(r"\w+|[^\w\s]", re.UNICODE)


def tokenize(text: str) -> list[str]:
    """Split ``text`` into lower-cased word and punctuation tokens."""
    return [t.lower() for t in _TOKEN.findall(text)]


def count_tokens(text: str) -> int:
    """Size of ``text`` in benchmark tokens."""
    return len(_TOKEN.findall(text))
