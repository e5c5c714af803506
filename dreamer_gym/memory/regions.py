"""Working-region selectors: which part of the bank one consolidation episode rewrites.

Two schemes name a region by a key string (what the env's reset, the reward service's tickets and a commit
carry):

- ``family`` (the -v0/-v1 pools): the key is a task family, the region every entry written for it. Regions of one
  family look alike, so a constant rule ("merge everything") is as good as any policy there (issue 31).
- ``window`` (the paper's definition): the key is ``window:A-B``, the entries the task agent wrote over its
  sessions A..B. A window mixes tasks in the proportions the agent met them, so merging everything can lose a
  task's only procedure in one window and be exactly right in the next.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from dreamer_gym.memory.bank import MemoryBank
from dreamer_gym.memory.retrieval import BM25Retriever
from dreamer_gym.memory.trajectory import Trajectory

REGION_KINDS: tuple[str, ...] = ("family", "window")
_WINDOW = re.compile(r"window:(\d+)-(\d+)")


@dataclass(frozen=True)
class Region:
    """A named subset of a bank's entry ids (sorted, so equal regions compare equal)."""

    name: str
    entry_ids: tuple[str, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "entry_ids", tuple(sorted(set(self.entry_ids))))


@dataclass(frozen=True)
class RegionScheme:
    """How a pool cuts its banks into working regions. ``window``: ``sessions`` consecutive sessions per
    region, a new region every ``stride`` sessions (overlapping windows are distinct regions). ``retrieved``:
    a window also holds, per episode of the window, the ``retrieved`` entries of older sessions that best match
    the episode's task (what the agent read back while it played): the paper's region is what the agent wrote
    *or retrieved* over a window, and only the retrieved part shows a consolidator what the bank already knows
    of the window's tasks (a window whose tasks the bank covers can be dropped; one with a new task cannot)."""

    kind: str = "family"
    sessions: int = 4
    stride: int = 2
    retrieved: int = 0

    def __post_init__(self) -> None:
        if self.kind not in REGION_KINDS:
            raise ValueError(f"Expected `kind` to be one of {REGION_KINDS}, got {self.kind!r}")
        for name in ("sessions", "stride"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"Expected `{name}` to be a positive int, got {value!r}")
        if isinstance(self.retrieved, bool) or not isinstance(self.retrieved, int) or self.retrieved < 0:
            raise ValueError(f"Expected `retrieved` to be an int >= 0, got {self.retrieved!r}")
        if self.retrieved and self.kind != "window":
            raise ValueError("`retrieved` is for window regions (a family region already holds every entry of its "
                             "family); set kind='window' or retrieved=0")

    def keys(self, bank: MemoryBank) -> tuple[str, ...]:
        """Every region key of ``bank`` under this scheme (sorted families; windows in time order)."""
        if self.kind == "family":
            return tuple(sorted({e.family for e in bank}))
        last = max((e.session for e in bank), default=-1)
        starts = range(0, max(last - self.sessions + 2, 1), self.stride)
        keys = (f"window:{s}-{s + self.sessions - 1}" for s in starts)
        return tuple(k for k in keys if select_region(bank, k).entry_ids)

    def select(self, bank: MemoryBank, key: str, trajectories: Mapping[str, Trajectory],
               max_entries: int | None = None) -> Region:
        """The region ``key`` names in ``bank`` (a window's bank is :func:`bank_at`'s), with the retrieved
        entries where the scheme asks for them."""
        window = parse_window(key)
        if window is None or not self.retrieved:
            return select_region(bank, key, max_entries)
        return select_window_with_retrieved(bank, *window, trajectories, self.retrieved, max_entries)

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"kind": self.kind, "sessions": self.sessions, "stride": self.stride}
        if self.retrieved:  # only when set: the pools built before it keep their hashes
            out["retrieved"] = self.retrieved
        return out


def select_by_family(bank: MemoryBank, family: str, max_entries: int | None = None) -> Region:
    """Every entry written for one task family (the -v0/-v1 pools' working region).

    With ``max_entries``, the most recent sessions win: the oldest entries drop out first.
    """
    entries = [e for e in bank if e.family == family]
    if max_entries is not None and len(entries) > max_entries:
        entries = sorted(entries, key=lambda e: (-e.session, e.id))[:max_entries]
    return Region(f"family:{family}", tuple(e.id for e in entries))


def parse_window(key: str) -> tuple[int, int] | None:
    """``(A, B)`` of a ``window:A-B`` key, ``None`` for any other key."""
    match = _WINDOW.fullmatch(key) if isinstance(key, str) else None
    return None if match is None else (int(match.group(1)), int(match.group(2)))


def select_by_window(bank: MemoryBank, first: int, last: int, max_entries: int | None = None) -> Region:
    """Every entry the agent wrote over sessions ``first..last`` (inclusive), whatever its task. With
    ``max_entries``, the most recent sessions win, as in :func:`select_by_family`."""
    entries = [e for e in bank if first <= e.session <= last]
    if max_entries is not None and len(entries) > max_entries:
        entries = sorted(entries, key=lambda e: (-e.session, e.id))[:max_entries]
    return Region(f"window:{first}-{last}", tuple(e.id for e in entries))


def select_window_with_retrieved(bank: MemoryBank, first: int, last: int, trajectories: Mapping[str, Trajectory],
                                 per_episode: int, max_entries: int | None = None) -> Region:
    """Sessions ``first..last``'s entries plus, for each episode that wrote them, the ``per_episode`` older
    entries (sessions before ``first``) that best match its task (BM25 on the task text). With
    ``max_entries``, the retrieved part takes at most a quarter of the cap and the written part the rest,
    newest first."""
    written = select_by_window(bank, first, last).entry_ids
    episodes = sorted({p.trajectory_id for i in written for p in bank.get(i).provenance  # type: ignore[union-attr]
                       if p.trajectory_id in trajectories},
                      key=lambda t: (trajectories[t].session, t))
    older = [e for e in bank if e.session < first]
    retriever = BM25Retriever(older) if older and per_episode else None
    retrieved: list[str] = []
    for tid in episodes if retriever is not None else ():
        for entry in retriever.top_k(trajectories[tid].task_description, per_episode):
            if entry.id not in retrieved:
                retrieved.append(entry.id)
    if max_entries is not None:
        retrieved = retrieved[: max(max_entries // 4, 0)]
        room = max_entries - len(retrieved)
        if len(written) > room:
            written = tuple(e.id for e in sorted((bank.get(i) for i in written),  # type: ignore[union-attr]
                                                 key=lambda e: (-e.session, e.id))[:room])
    return Region(f"window:{first}-{last}", (*written, *retrieved))


def select_region(bank: MemoryBank, key: str, max_entries: int | None = None) -> Region:
    """The region a key names: ``window:A-B`` a time window, anything else a family."""
    window = parse_window(key)
    if window is not None:
        return select_by_window(bank, *window, max_entries=max_entries)
    return select_by_family(bank, key, max_entries)


def bank_at(bank: MemoryBank, key: str) -> MemoryBank:
    """The bank a region is consolidated in: the whole bank for a family region; for ``window:A-B`` the bank
    as it stood when the window closed (the entries of sessions up to B). Consolidation runs at the end of
    a window, when later sessions have not happened: with them in the bank, every task of the window is
    covered by later raw copies and deleting the window costs nothing (measured: ``empty`` was the best
    rule on 53% of windows of the whole bank)."""
    window = parse_window(key)
    if window is None:
        return bank
    return MemoryBank(e for e in bank if e.session <= window[1])


def region_task_mix(bank: MemoryBank, region: Region) -> dict[str, int]:
    """Per family, how many of the agent's episodes wrote the region's entries: the proportions in which the
    agent met the region's tasks (what a window region's evaluation episodes are drawn by)."""
    window = parse_window(region.name)  # a window's retrieved (older) entries are not episodes of the window
    episodes = {(e.family, p.trajectory_id) for i in region.entry_ids if (e := bank.get(i)) is not None
                and (window is None or window[0] <= e.session <= window[1]) for p in e.provenance}
    return dict(sorted(Counter(family for family, _ in episodes).items()))


def select_by_cluster(bank: MemoryBank, seed_entry_id: str, size: int) -> Region:
    """The ``size`` entries most similar (BM25) to a seed entry, the seed included."""
    seed = bank.get(seed_entry_id)
    if seed is None:
        raise KeyError(f"seed entry {seed_entry_id!r} not in bank {bank.hash}")
    ranked = [e.id for e, _ in BM25Retriever(bank.entries).scores(seed.text) if e.id != seed.id]
    return Region(f"cluster:{seed.id}", (seed.id, *ranked[: max(size - 1, 0)]))
