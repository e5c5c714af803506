"""What crosses between the policy's process and the reward service: plain, picklable data.

The policy's side sees a :class:`PublicPool` (the banks and the TRAIN trajectories their entries cite:
the evidence a consolidator may read) and sends a :class:`CommitRequest` (which region, the seed of the
evaluation draw, the new region). It gets a :class:`CommitResult` back: the reward and the infos the id's
rules allow. No evaluation task text, gold path or TEST variation id ever crosses.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dreamer_gym.memory import MemoryBank, MemoryEntry, Trajectory


@dataclass(frozen=True)
class PublicPool:
    """A bank pool as the policy's process holds it: no DEV/TEST task texts, no gold paths.

    ``hash`` is the full pool's pinned hash (the service checked it), so logs still name the pool exactly.
    """

    suite: str
    hash: str
    families: tuple[str, ...]
    banks: tuple[MemoryBank, ...]
    trajectories: dict[str, Trajectory]


@dataclass(frozen=True)
class CommitRequest:
    """One commit: bank v0 is ``banks[bank_index]``, the region is ``family``'s (the service selects it again
    from its own copy, so a tampered region cannot be scored), and ``emitted`` is the new region. The
    evaluation episodes are drawn in the service from ``episode_seed`` (drawn by the env from its own
    ``np_random``), so a restarted service replays the same draw."""

    bank_index: int
    family: str
    episode_seed: int
    emitted: tuple[MemoryEntry, ...]
    invalid_calls: int = 0


@dataclass(frozen=True)
class CommitResult:
    """The service's answer. ``reward`` is None when the service withholds it (a track on TEST);
    ``info`` holds only what the id's rules allow the policy to see."""

    bank_after: str
    reward: float | None
    info: dict[str, Any] = field(default_factory=dict)
