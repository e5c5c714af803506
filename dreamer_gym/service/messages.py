"""What crosses between the policy's process and the reward service: plain, picklable data.

The policy's side sees a :class:`PublicPool` (the banks and the TRAIN trajectories their entries cite:
the evidence a consolidator may read), opens each episode (``open(bank_index, family, seed)``, answered
with an :class:`EpisodeTicket`) and sends a :class:`CommitRequest` (which region, the ticket's token, the
new region). It gets a :class:`CommitResult` back: the reward and the infos the id's rules allow. No
evaluation task text, gold path or TEST variation id ever crosses.

The far side answers only :data:`SERVICE_OPERATIONS`, and reads a request with :func:`read_request`: an
unpickler that builds only the request classes below (plain pickle would run whatever a request names).
Before that it reads the request's length and refuses one over :func:`request_cap` (:func:`receive`): the cap
is sized from the env's budgets, so no commit the env's tools accept is near it, and a 200 MB request costs
the service nothing but its connection. Clients check the cap before sending and split a ``commit_many``
that is over it (:func:`split_to_fit`).
"""
from __future__ import annotations

import io
import pickle
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from dreamer_gym.contract.definition import CHARS_PER_TOKEN
from dreamer_gym.errors import RewardServiceError
from dreamer_gym.memory import MemoryBank, MemoryEntry, RegionScheme, Trajectory

if TYPE_CHECKING:
    from dreamer_gym.contract.config import ConsolidationConfig

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


# --- the byte cap: what the largest request the env's tools can produce weighs, pickled -----------------------
UTF8_MAX_BYTES = 4  # an entry's character cap (max_entry_tokens * CHARS_PER_TOKEN) at UTF-8's widest character
CITED_RANGES = 256  # provenance items an emit may cite (= envs.toolspec.MAX_PROVENANCE; the service sits below envs)
RANGE_BYTES = 64  # one cited range pickled (measured: 35-40 bytes with the pools' 13-character trajectory ids)
ID_BYTES = 32  # one entry id an emitted entry supersedes, pickled (measured: 15 bytes)
ENTRY_BYTES = 1024  # an entry's id, kind, family, tags, session and pickle framing (measured: under 300 bytes)
COMMITS_PER_REQUEST = 16  # worst-case commits one request holds: a joint commit of every family of a bank (11 at most)


def commit_bytes(config: ConsolidationConfig) -> int:
    """An upper bound on one commit the env's tools accept, pickled: ``max_emitted`` new entries (each its text at
    4 bytes a character, 256 cited ranges and the region's ids it supersedes) and ``max_region_entries`` kept
    ones (each bounded like a new entry's text: the shipped pools' longest entry is 2,574 bytes)."""
    text = config.max_entry_tokens * CHARS_PER_TOKEN * UTF8_MAX_BYTES
    new = text + CITED_RANGES * RANGE_BYTES + config.max_region_entries * ID_BYTES + ENTRY_BYTES
    return config.max_emitted * new + config.max_region_entries * (text + ENTRY_BYTES)


def request_cap(config: ConsolidationConfig) -> int:
    """The most bytes one request to a reward service of ``config`` may hold (:data:`COMMITS_PER_REQUEST` worst-case
    commits; 19.7 MB at the default budgets). A ``commit_many`` over it is split by the client
    (:func:`split_to_fit`); results do not change, since ``commit_many`` equals commits one by one."""
    return COMMITS_PER_REQUEST * commit_bytes(config)


class RequestTooLarge(RewardServiceError):
    """A request whose length is over the service's cap: refused from its length alone, never read."""


def receive(conn: Connection, cap: int) -> bytes:
    """The next request's bytes from ``conn``, or :class:`RequestTooLarge` when its length header says more than
    ``cap`` (``Connection.recv_bytes(maxlength)`` reads the header first and nothing after it; the connection can
    no longer be read, so the caller answers with the error and closes it). ``EOFError`` when the client is gone."""
    try:
        return conn.recv_bytes(cap)
    except OSError as exc:
        if str(exc) != "bad message length":  # CPython's words for a header over maxlength
            raise
    raise RequestTooLarge(f"request refused: it is over the reward service's cap of {cap} bytes (sized from the "
                          "env's budgets: docs/env.md, \"The sealed service\"); nothing of it was read or unpickled, "
                          "and this connection is closed")


def encode(op: str, args: tuple[Any, ...], cap: int) -> bytes:
    """One request pickled, checked against ``cap`` before it is sent: an honest client never has its connection
    closed for a request the service would refuse."""
    data = pickle.dumps((op, args))
    if len(data) > cap:
        raise RequestTooLarge(f"request refused before sending: {op} is {len(data)} bytes pickled, over the reward "
                              f"service's cap of {cap} bytes (sized from the env's budgets: docs/env.md, \"The sealed "
                              "service\"); no commit the env's tools accept comes near it")
    return data


def split_to_fit(requests: list[CommitRequest], cap: int) -> list[list[CommitRequest]]:
    """``requests`` in consecutive batches whose ``commit_many`` request fits ``cap`` (one batch when it fits, as
    almost always; a single request over the cap stays alone, and :func:`encode` refuses it)."""
    if len(requests) <= 1 or len(pickle.dumps(("commit_many", (requests,)))) <= cap:
        return [requests]
    half = len(requests) // 2
    return split_to_fit(requests[:half], cap) + split_to_fit(requests[half:], cap)
