"""The ``region`` text of the env's observation and the ``info["region"]`` dicts.

The region listing is rendered once per reset (the region is read-only); each step adds the new region
so far. When the whole does not fit the ``Text`` cap, whole entry lines are dropped from the end of the
*listing* and one line says how many are hidden and that ``read_entry``/``search`` reach them; the new
region so far is never shortened (unless it alone exceeds the cap: then its end is cut).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dreamer_gym.envs.spaces import sanitize
from dreamer_gym.memory import MemoryEntry

_UNCAPPED = 1 << 40  # sanitize() without a length cap


def entry_dict(entry: MemoryEntry) -> dict[str, Any]:
    """One ``info["region"]`` item: plain data for non-text policies."""
    return {"id": entry.id, "kind": entry.kind, "text": entry.text, "family": entry.family,
            "provenance": [p.to_dict() for p in entry.provenance], "session": entry.session,
            "tags": list(entry.tags)}


def hidden_note(hidden: int, total: int) -> str:
    return f"... {hidden} of {total} entries not shown (too long to list); read_entry or search reach them"


class RegionView:
    """The read-only listing of one region, fitted with the new region so far into ``cap`` characters."""

    def __init__(self, name: str, entries: Sequence[MemoryEntry], cap: int, context: str = "") -> None:
        """``context``: the bank context block (tool contract 2, :func:`~dreamer_gym.envs.bank_context.render_context`),
        shown under the head line and never hidden: it is what the region alone cannot say."""
        self.cap = cap
        # sanitised once here (it maps characters one by one, so parts sanitised apart join to the same text);
        # each step then sanitises only the new region so far
        head = f"Region {name}: {len(entries)} entries (read-only evidence)"
        self.head = sanitize(f"{head}\n{context}" if context else head, _UNCAPPED)
        self.lines: list[str] = []
        for entry in entries:
            prov = ", ".join(f"{p.trajectory_id}[{p.start}-{p.end}]" for p in entry.provenance)
            self.lines.append(sanitize(f"{entry.id} ({entry.kind}, session {entry.session}) {entry.text}  <- {prov}",
                                       _UNCAPPED))
        self.listing = "\n".join([self.head, *self.lines])

    def _fitted_listing(self, room: int) -> str:
        """The listing in at most ``room`` characters: a prefix of the entry lines and the hidden note."""
        total, used, shown = len(self.lines), len(self.head), 0
        for line in self.lines:  # the longest prefix that leaves room for the note
            if used + 1 + len(line) + 1 + len(hidden_note(total, total)) > room:
                break
            used += 1 + len(line)
            shown += 1
        return "\n".join([self.head, *self.lines[:shown], hidden_note(total - shown, total)])

    def text(self, emitted: Sequence[MemoryEntry]) -> str:
        """The listing, then the new region so far (``#i id (kind) text``), sanitised, in at most ``cap``
        characters."""
        tail = sanitize("\n".join([f"New region so far ({len(emitted)}):",
                                   *(f"  #{i} {e.id} ({e.kind}) {e.text}" for i, e in enumerate(emitted))]), _UNCAPPED)
        if len(self.listing) + 1 + len(tail) <= self.cap:
            return f"{self.listing}\n{tail}"
        listing = self._fitted_listing(self.cap - 1 - len(tail))
        return sanitize(f"{listing}\n{tail}", self.cap)  # cuts the tail's end only if it alone is over the cap
