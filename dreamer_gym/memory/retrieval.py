"""BM25 retrieval over entries (rank-bm25), with deterministic tie-breaks by entry id."""
from __future__ import annotations

from collections.abc import Sequence

from rank_bm25 import BM25Okapi

from dreamer_gym.memory.entry import MemoryEntry
from dreamer_gym.memory.tokens import tokenize

_STOP = frozenset(
    "a an the of to in on and or is are be it its this that then first for with your you at by as".split()
)


def _terms(text: str) -> list[str]:
    """Unigrams plus adjacent bigrams, so "a(n) living thing" is told apart from "a(n) non-living thing"."""
    words = [t for t in tokenize(text) if t.isalnum() and t not in _STOP]
    return words + [f"{a}_{b}" for a, b in zip(words, words[1:])]


class BM25Retriever:
    """Rank entries for a query. Equal scores are ordered by entry id, so results never depend on
    insertion order or hash seeds."""

    def __init__(self, entries: Sequence[MemoryEntry]) -> None:
        self.entries = tuple(sorted(entries, key=lambda e: e.id))
        corpus = [_terms(f"{e.kind} {e.family} {e.text}") or ["_"] for e in self.entries]
        self._bm25 = BM25Okapi(corpus) if self.entries else None

    def scores(self, query: str) -> list[tuple[MemoryEntry, float]]:
        if self._bm25 is None:
            return []
        raw = self._bm25.get_scores(_terms(query) or ["_"])
        ranked = sorted(zip(self.entries, raw), key=lambda pair: (-round(float(pair[1]), 9), pair[0].id))
        return [(e, float(s)) for e, s in ranked]

    def top_k(self, query: str, k: int) -> list[MemoryEntry]:
        """The ``k`` best entries with a positive score."""
        return [e for e, s in self.scores(query)[: max(k, 0)] if s > 0]
