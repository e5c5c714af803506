"""Trajectories: what the acquiring agent did, the evidence that memory entries point back to."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dreamer_gym.memory.hashing import content_hash


@dataclass(frozen=True)
class Step:
    action: str
    observation: str
    score: float


@dataclass(frozen=True)
class Trajectory:
    """One played episode; ``id`` is a content hash so rebuilding acquisition gives equal ids."""

    family: str
    variation: int
    task_description: str
    steps: tuple[Step, ...]
    final_score: float
    session: int = 0
    id: str = field(init=False, compare=False)

    def __post_init__(self) -> None:
        payload = [self.family, self.variation, self.session, [[s.action, s.score] for s in self.steps]]
        object.__setattr__(self, "id", "t" + content_hash(payload))

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "family": self.family,
            "variation": self.variation,
            "task_description": self.task_description,
            "steps": [[s.action, s.observation, s.score] for s in self.steps],
            "final_score": self.final_score,
            "session": self.session,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Trajectory:
        return cls(
            family=data["family"],
            variation=int(data["variation"]),
            task_description=data["task_description"],
            steps=tuple(Step(a, o, float(s)) for a, o, s in data["steps"]),
            final_score=float(data["final_score"]),
            session=int(data.get("session", 0)),
        )
