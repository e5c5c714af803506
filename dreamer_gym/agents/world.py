"""What the agent knows of the house from observations alone: rooms, doors, visible objects."""
from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field

_ROOM = re.compile(r"(?:This room is called the|This outside location is called the) ([a-z ]+?)\.")
_DOOR = re.compile(r"A door to the ([a-z ]+?) \(that is (open|closed)\)")
_ITEM = re.compile(r"^\t(?:an? |the )?(.+?)(?: \(containing .*\))?(?:\. .*|, which .*)?$", re.M)
_CONTAINED = re.compile(r"containing (?:an? )?(.+?)(?:, |\)|$)")


@dataclass
class WorldModel:
    """Room graph and object sightings learned during one episode (never shared across episodes)."""

    room: str | None = None
    doors: dict[str, set[str]] = field(default_factory=dict)
    visited: set[str] = field(default_factory=set)
    objects: list[str] = field(default_factory=list)

    def observe_look(self, text: str) -> None:
        room = _ROOM.search(text)
        if room:
            self.room = room.group(1).strip()
            self.visited.add(self.room)
            neighbours = {m.group(1).strip() for m in _DOOR.finditer(text)}
            self.doors.setdefault(self.room, set()).update(neighbours)
            for n in neighbours:
                self.doors.setdefault(n, set()).add(self.room)
        self.objects = objects_in(text)

    def path_to(self, target: str) -> list[str] | None:
        """Shortest known room path from the current room to ``target`` (excluding the start)."""
        if self.room is None:
            return None
        queue: deque[tuple[str, list[str]]] = deque([(self.room, [])])
        seen = {self.room}
        while queue:
            room, path = queue.popleft()
            if room == target:
                return path
            for nxt in sorted(self.doors.get(room, ())):
                if nxt not in seen:
                    seen.add(nxt)
                    queue.append((nxt, [*path, nxt]))
        return None

    def frontier_path(self) -> list[str] | None:
        """Path to the nearest known-but-unvisited room (for exploring towards an unknown target)."""
        best: list[str] | None = None
        for room in sorted(self.doors):
            if room in self.visited:
                continue
            path = self.path_to(room)
            if path and (best is None or len(path) < len(best)):
                best = path
        return best


def objects_in(text: str) -> list[str]:
    """Object names in a look/inventory listing, contents of containers included."""
    names: list[str] = []
    for line in text.split("\n"):
        if not line.startswith("\t") or line.startswith("\tA door to"):
            continue
        match = _ITEM.match(line)
        if match:
            names.append(match.group(1).split(", ")[0].strip(" )"))
        surface = re.search(r"(?:On|In) the [a-z ]+ is: (.*?)\.?\s*$", line)
        if surface:
            for part in surface.group(1).split(", "):
                part = re.sub(r"^(?:an?|the) ", "", part.strip())
                if part and part != "nothing" and not part.startswith("which "):
                    names.append(re.sub(r" \(containing .*$", "", part).strip(" )"))
        for inner in _CONTAINED.findall(line):
            inner = re.sub(r" in the \w+ stage.*$", "", inner).strip()
            inner = inner.strip(" )")
            if inner and inner != "nothing":
                names.append(inner)
    return names


ROOMS: tuple[str, ...] = (
    "art studio", "bathroom", "bedroom", "foundry", "greenhouse", "hallway", "kitchen", "living room",
    "outside", "workshop",
)
