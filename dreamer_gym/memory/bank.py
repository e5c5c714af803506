"""An immutable, content-hashed memory bank."""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from dreamer_gym.memory.entry import MemoryEntry
from dreamer_gym.memory.hashing import content_hash
from dreamer_gym.memory.tokens import count_tokens


class MemoryBank:
    """A set of entries, ordered by id, identified by the hash of its entry ids.

    Banks are never modified in place: :meth:`replace` returns a new bank, which is what makes a
    consolidation a new *version* rather than an edit of the evidence it read.
    """

    __slots__ = ("_entries", "_by_id", "hash")

    def __init__(self, entries: Iterable[MemoryEntry] = ()) -> None:
        by_id: dict[str, MemoryEntry] = {}
        for entry in entries:
            by_id.setdefault(entry.id, entry)
        self._entries: tuple[MemoryEntry, ...] = tuple(by_id[k] for k in sorted(by_id))
        self._by_id = by_id
        self.hash: str = "b" + content_hash([e.id for e in self._entries], length=16)

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[MemoryEntry]:
        return iter(self._entries)

    def __contains__(self, entry_id: object) -> bool:
        return entry_id in self._by_id

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MemoryBank) and other.hash == self.hash

    def __hash__(self) -> int:
        return hash(self.hash)

    def __repr__(self) -> str:
        return f"MemoryBank({len(self)} entries, {self.hash})"

    @property
    def entries(self) -> tuple[MemoryEntry, ...]:
        return self._entries

    def get(self, entry_id: str) -> MemoryEntry | None:
        return self._by_id.get(entry_id)

    def tokens(self) -> int:
        """Total size in benchmark tokens."""
        return sum(count_tokens(e.text) for e in self._entries)

    def replace(self, region_ids: Iterable[str], new_entries: Iterable[MemoryEntry]) -> MemoryBank:
        """Return ``(self minus region) ∪ new_entries``; unknown region ids are a programmer error."""
        region = set(region_ids)
        missing = region - self._by_id.keys()
        if missing:
            raise KeyError(f"region ids not in bank {self.hash}: {sorted(missing)[:5]}")
        kept = (e for e in self._entries if e.id not in region)
        return MemoryBank([*kept, *new_entries])

    def to_dict(self) -> dict[str, Any]:
        return {"hash": self.hash, "entries": [e.to_dict() for e in self._entries]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MemoryBank:
        bank = cls(MemoryEntry.from_dict(e) for e in data["entries"])
        if "hash" in data and data["hash"] != bank.hash:
            raise ValueError(f"bank hash mismatch: stored {data['hash']}, recomputed {bank.hash}")
        return bank
