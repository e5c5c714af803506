"""What went wrong in a run, in lines a person reads: each distinct failure reason once, with its count.

Why here: the CLI and the leaderboard's commands both print the reasons episodes failed, and the leaderboard
sits below the CLI; the summary lives beside the evaluation that produces the reasons, below both.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable


def one_line(text: str) -> str:
    """``text`` with every run of whitespace (newlines included) collapsed to one space."""
    return " ".join(text.split())


def failure_summary(reasons: Iterable[str], indent: str = "") -> str:
    """Each distinct failure reason once, most frequent first, with its count: the lines under a table that
    counts failures (``failed: 2 x LLMTimeout: generation took 135.9 s ...``). Empty when nothing failed."""
    counts = Counter(one_line(r) for r in reasons)
    return "\n".join(f"{indent}failed: {n} x {reason}" for reason, n in counts.most_common())
