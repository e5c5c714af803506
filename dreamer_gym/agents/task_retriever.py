"""Task-conditioned retrieval shared by every downstream agent, so that swapping the agent changes how
memory is *used*, never which entries it sees."""
from __future__ import annotations

from collections.abc import Sequence

from dreamer_gym.memory import BM25Retriever, MemoryEntry


class TaskRetriever:
    """Top-k BM25 entries for a task text; the goal sentence counts three times (it names the family).

    ``index_key`` (a bank hash) lets repeated queries on one immutable bank share one BM25 index.
    """

    def __init__(self, top_k: int, max_indexes: int = 8) -> None:
        self.top_k = top_k
        self.max_indexes = max_indexes
        self._indexes: dict[str, BM25Retriever] = {}

    def __call__(self, description: str, entries: Sequence[MemoryEntry], index_key: str | None = None) -> list[MemoryEntry]:
        goal = description.split(".")[0]
        if index_key is None:
            retriever = BM25Retriever(entries)
        else:
            retriever = self._indexes.get(index_key)
            if retriever is None:
                if len(self._indexes) >= self.max_indexes:
                    self._indexes.pop(next(iter(self._indexes)))
                retriever = self._indexes[index_key] = BM25Retriever(entries)
        return retriever.top_k(f"{description} {goal} {goal}", self.top_k)
