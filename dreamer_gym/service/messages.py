"""What crosses between the policy's process and the reward service: plain, picklable data.

The policy's side sees a :class:`PublicPool` (the banks and the TRAIN trajectories their entries cite:
the evidence a consolidator may read), opens each episode (``open(bank_index, family, seed)``, answered
with an :class:`EpisodeTicket`) and sends a :class:`CommitRequest` (which region, the ticket's token, the
new region). It gets a :class:`CommitResult` back: the reward and the infos the id's rules allow. No
evaluation task text, gold path or TEST variation id ever crosses.

The far side answers only :data:`SERVICE_OPERATIONS`, and reads a request with :func:`read_request`: an
unpickler that builds only the request classes below (plain pickle would run whatever a request names).
"""
from __future__ import annotations

import io
import pickle
from dataclasses import dataclass, field
from typing import Any

from dreamer_gym.errors import RewardServiceError
from dreamer_gym.memory import MemoryBank, MemoryEntry, RegionScheme, Trajectory

SERVICE_OPERATIONS: tuple[str, ...] = ("public_pool", "open", "commit", "commit_many", "commit_joint", "finish",
                                       "stats")
"""Every operation a reward service answers, checked on its side; any other request is refused."""
PROCESS_DIAGNOSTICS: tuple[str, ...] = ("pid", "worker_pids")
"""Also answered by the service process (no task content): its pid and its evaluation workers' pids."""
_REQUEST_CLASSES = frozenset({("dreamer_gym.service.messages", "CommitRequest"),
                              ("dreamer_gym.memory.entry", "MemoryEntry"), ("dreamer_gym.memory.entry", "Provenance")})


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
    region_scheme: RegionScheme = field(default_factory=RegionScheme)  # how banks are cut into regions

    def region_keys(self, bank_index: int) -> tuple[str, ...]:
        """The region keys of one bank (families, or ``window:A-B`` on a window pool)."""
        return self.region_scheme.keys(self.banks[bank_index])


@dataclass(frozen=True)
class EpisodeTicket:
    """The answer to ``open``: the token a commit of this episode carries (once), and the region it binds.
    The evaluation seed the service derived for it stays in the service."""

    token: str
    bank_index: int
    family: str


@dataclass(frozen=True)
class CommitRequest:
    """One commit: bank v0 is ``banks[bank_index]``, the region is ``family``'s (the service selects it again
    from its own copy, so a tampered region cannot be scored), ``token`` is the :class:`EpisodeTicket`'s of
    this episode (it binds the region and the evaluation draw; it commits once), and ``emitted`` is the new
    region."""

    bank_index: int
    family: str
    token: str
    emitted: tuple[MemoryEntry, ...]
    invalid_calls: int = 0


@dataclass(frozen=True)
class CommitResult:
    """The service's answer. ``reward`` is None when the service withholds it (a track on TEST);
    ``info`` holds only what the id's rules allow the policy to see."""

    bank_after: str
    reward: float | None
    info: dict[str, Any] = field(default_factory=dict)


class _RequestUnpickler(pickle.Unpickler):
    """Builds plain data and the request classes only: a pickle naming any other global is refused."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in _REQUEST_CLASSES:
            raise RewardServiceError(f"request refused: it names {module}.{name}; a request carries only plain data, "
                                     "CommitRequest, MemoryEntry and Provenance")
        return super().find_class(module, name)


def read_request(data: bytes, allowed: tuple[str, ...] = SERVICE_OPERATIONS) -> tuple[str, tuple[Any, ...]] | None:
    """The ``(op, args)`` in one request's bytes (``None``: the client says stop); raises
    :class:`RewardServiceError` for anything else, and for an operation not in ``allowed``."""
    try:
        request = _RequestUnpickler(io.BytesIO(data)).load()
    except RewardServiceError:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever a malformed pickle raises
        raise RewardServiceError(f"request refused: it does not unpickle ({type(exc).__name__})") from None
    if request is None:
        return None
    if not (isinstance(request, tuple) and len(request) == 2 and isinstance(request[1], tuple)):
        raise RewardServiceError(f"request refused: expected (operation, args tuple), got {type(request).__name__}")
    op, args = request
    if not isinstance(op, str) or op not in allowed:
        raise RewardServiceError(f"request refused: {op!r} is not a reward-service operation; the service answers "
                                 f"only {list(allowed)}")
    return op, args
