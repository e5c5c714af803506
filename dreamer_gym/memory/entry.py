"""Typed memory entries with provenance to the trajectories they were written from."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dreamer_gym.memory.hashing import content_hash

KINDS: tuple[str, ...] = ("insight", "procedure", "fact", "pitfall")


@dataclass(frozen=True, order=True)
class Provenance:
    """A step range ``[start, end]`` (inclusive) of one stored trajectory."""

    trajectory_id: str
    start: int = 0
    end: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"trajectory_id": self.trajectory_id, "start": self.start, "end": self.end}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Provenance:
        return cls(str(data["trajectory_id"]), int(data.get("start", 0)), int(data.get("end", 0)))


@dataclass(frozen=True)
class MemoryEntry:
    """One memory entry. ``id`` is a content hash of kind, text, family and provenance.

    ``session`` and ``supersedes`` are bookkeeping and deliberately not part of the id: the same
    lesson written twice from the same evidence is the same entry.
    """

    kind: str
    text: str
    family: str = ""
    tags: tuple[str, ...] = ()
    provenance: tuple[Provenance, ...] = ()
    session: int = 0
    supersedes: tuple[str, ...] = ()
    id: str = field(init=False, compare=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"Expected `kind` to be one of {KINDS}, got {self.kind!r}")
        object.__setattr__(self, "tags", tuple(self.tags))
        object.__setattr__(self, "provenance", tuple(sorted(self.provenance)))
        object.__setattr__(self, "supersedes", tuple(sorted(self.supersedes)))
        payload = [self.kind, self.text, self.family, [p.to_dict() for p in self.provenance]]
        object.__setattr__(self, "id", "e" + content_hash(payload))

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "text": self.text,
            "family": self.family,
            "tags": list(self.tags),
            "provenance": [p.to_dict() for p in self.provenance],
            "session": self.session,
            "supersedes": list(self.supersedes),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MemoryEntry:
        return cls(
            kind=data["kind"],
            text=data["text"],
            family=data.get("family", ""),
            tags=tuple(data.get("tags", ())),
            provenance=tuple(Provenance.from_dict(p) for p in data.get("provenance", ())),
            session=int(data.get("session", 0)),
            supersedes=tuple(data.get("supersedes", ())),
        )
