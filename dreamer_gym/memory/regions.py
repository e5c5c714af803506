"""Working-region selectors: which part of the bank one consolidation episode rewrites."""
from __future__ import annotations

from dataclasses import dataclass

from dreamer_gym.memory.bank import MemoryBank
from dreamer_gym.memory.retrieval import BM25Retriever


@dataclass(frozen=True)
class Region:
    """A named subset of a bank's entry ids (sorted, so equal regions compare equal)."""

    name: str
    entry_ids: tuple[str, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "entry_ids", tuple(sorted(set(self.entry_ids))))


def select_by_family(bank: MemoryBank, family: str, max_entries: int | None = None) -> Region:
    """Every entry written for one task family (the paper's default working region).

    With ``max_entries``, the most recent sessions win: the oldest entries drop out first.
    """
    entries = [e for e in bank if e.family == family]
    if max_entries is not None and len(entries) > max_entries:
        entries = sorted(entries, key=lambda e: (-e.session, e.id))[:max_entries]
    return Region(f"family:{family}", tuple(e.id for e in entries))


def select_by_cluster(bank: MemoryBank, seed_entry_id: str, size: int) -> Region:
    """The ``size`` entries most similar (BM25) to a seed entry, the seed included."""
    seed = bank.get(seed_entry_id)
    if seed is None:
        raise KeyError(f"seed entry {seed_entry_id!r} not in bank {bank.hash}")
    ranked = [e.id for e, _ in BM25Retriever(bank.entries).scores(seed.text) if e.id != seed.id]
    return Region(f"cluster:{seed.id}", (seed.id, *ranked[: max(size - 1, 0)]))
