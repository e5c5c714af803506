"""Grounding: how much of what a bank says the trajectories it cites show (a board column, never a rejection).

Provenance is required of every new entry but only checked to lie inside its region; this column checks
that the cited evidence *holds* the text. Each emitted entry of a region is read by the track's suite
reader (its :class:`~dreamer_gym.suites.spec.SuiteSpec` ``follower``, ``reads``) into claims, and each
claim is checked against the trajectories its provenance cites (whole episodes of the public pool: TRAIN
acquisition evidence only, never gold paths):

* **goal**: the entry's goal clause ("To <goal>: ...", "While trying to <goal>, ..."): held when every
  content word of it (``<slots>`` aside) is a word of one cited trajectory's task text;
* **steps**: the actions the reader would take (procedure steps, steps of notes on what raised the score),
  in order: held when they align, in that order, with the actions of a cited trajectory (a longest common
  subsequence per cited trajectory, a ``<slot>`` matching any object; a step is held when some cited
  trajectory's alignment holds it, or when it only restates a cited task: "while trying to focus on the
  life stages of the wolf"). Steps a pitfall forbids are held when a cited trajectory took them;
* **facts**: the facts the reader looks up (list items, "<object> can be found in <place>"): held when
  their words appear in the actions and observations of a cited trajectory.

An entry's grounding is its held claims over its claims; a region's pools its entries' claims; a
submission's ``share`` is the mean over regions that make any claim. An entry is *flagged* when less than
:data:`FLAG_BELOW` of its claims are held. Pure text over the public pool: no simulator, no privileged data.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from dreamer_gym.agents.base import Reading
from dreamer_gym.memory import MemoryEntry
from dreamer_gym.memory.trajectory import Trajectory
from dreamer_gym.suites.registry import get_suite_spec

FLAG_BELOW = 0.5  # an entry less than half of whose claims its evidence holds is flagged
_ARTICLES = re.compile(r"\b(?:the|a|an)\b")
_NOISE = re.compile(r"[^a-z0-9<>@ ]+")
_SLOT = re.compile(r"<[^<>]{1,40}>")
_GOAL = re.compile(r"^\s*(?:to|while trying to|an attempt to) (.+?)(?::|,| failed)", re.IGNORECASE)
# a note on what worked read as one step ("'go to outside' raised the score from 25 to 50", reading._RAISED):
# the action is the claim the steps check; the score is the outcome's
_OUTCOME = re.compile(r"\s+raised score(?: from -?\d+(?: \d+)?(?: to -?\d+(?: \d+)?)?)?$")
_STOP = frozenset("a an the of to in on and or is are it its this that your you be with from by at as for "
                  "then first".split())


def normalise(text: str) -> str:
    """Lower case, no articles, no punctuation bar ``<slots>``: the form claims and evidence are compared in."""
    return " ".join(_NOISE.sub(" ", _ARTICLES.sub(" ", text.lower())).split())


@lru_cache(maxsize=4096)
def _pattern(step: str) -> re.Pattern[str]:
    """A normalised step as a pattern: each ``<slot>`` stands for one or more words."""
    parts = _SLOT.split(step)
    return re.compile(r"(?:\S.*?)".join(re.escape(p) for p in parts) + r"$")


def _aligned(steps: Sequence[str], actions: Sequence[str]) -> set[int]:
    """Indices of ``steps`` that a longest common subsequence with ``actions`` holds (slots match any object)."""
    n, m = len(steps), len(actions)
    if not n or not m:
        return set()
    patterns = [_pattern(s) for s in steps]
    hit = [[bool(p.match(a)) for a in actions] for p in patterns]
    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            table[i][j] = table[i + 1][j + 1] + 1 if hit[i][j] else max(table[i + 1][j], table[i][j + 1])
    held, i, j = set(), 0, 0
    while i < n and j < m:
        if hit[i][j] and table[i][j] == table[i + 1][j + 1] + 1:
            held.add(i)
            i, j = i + 1, j + 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    return held


@dataclass(frozen=True)
class Evidence:
    """What one entry cites: per cited trajectory (each once) its normalised actions and task words, and the
    text (actions and observations) of the cited trajectories for the facts. Whole episodes, not the cited
    step ranges: a merged procedure cites each source's pieces but its steps, in order, are the episode's,
    and a fact such as "<object> can be found in <place>" rests on where an earlier step was."""

    actions: tuple[tuple[str, ...], ...]
    task_words: tuple[frozenset[str], ...]
    text: str

    @classmethod
    def cited(cls, entry: MemoryEntry, trajectories: dict[str, Trajectory]) -> Evidence:
        runs = [trajectories[t] for t in dict.fromkeys(p.trajectory_id for p in entry.provenance) if t in trajectories]
        return cls(tuple(tuple(normalise(s.action) for s in t.steps) for t in runs),
                   tuple(frozenset(normalise(t.task_description).split()) for t in runs),
                   " ".join(normalise(f"{s.action} . {s.observation}") for t in runs for s in t.steps))


@dataclass(frozen=True)
class EntryGrounding:
    """One entry's claims and how many of them its cited evidence holds."""

    id: str
    held: int
    claims: int
    unheld: tuple[str, ...]  # the claims not held, as the reader took them (for the flag list)
    # each step, forbidden step and fact keyed as the reader-level similarity keys it (``action:...``,
    # ``avoid:...``, ``fact:...``, :func:`~dreamer_gym.leaderboard.similarity.claims`), with whether the cited
    # evidence shows it (a step: taken in any order): what the review rule asks of the claims a region shares with
    # a reference (leaderboard/review.py)
    checked: tuple[tuple[str, bool], ...] = ()

    @property
    def share(self) -> float:
        return self.held / self.claims if self.claims else 1.0


def _content(text: str) -> list[str]:
    return [w for w in normalise(_SLOT.sub(" ", text)).split() if w not in _STOP]


def ground_entry(entry: MemoryEntry, reading: Reading, evidence: Evidence) -> EntryGrounding:
    """Check ``entry``'s claims (``reading``: what the suite's reader takes from it) against ``evidence``.

    ``checked`` asks a weaker question of each step than the column does: whether some cited trajectory took it
    at all, in any order. The review rule asks where a claim came from, not whether the steps are in a good
    order: an honest merge of the region's episodes can list "go to outside" after the step it came before."""
    claims: list[tuple[str, str | None, bool, bool]] = []  # (as the flag list shows it, reader's key, held, shown)
    goal = _GOAL.match(entry.text)
    if goal and _content(goal.group(1)):
        words = _content(goal.group(1))
        ok = any(all(w in task for w in words) for task in evidence.task_words)
        claims.append((f"goal: {goal.group(1)}", None, ok, ok))
    steps = [_OUTCOME.sub("", normalise(a)) for a in reading.actions]
    held: set[int] = set()
    for actions in evidence.actions:
        held |= _aligned(steps, actions)
    taken = [a for actions in evidence.actions for a in actions]
    for i, (step, action) in enumerate(zip(steps, reading.actions)):
        ok = i in held or any(set(_content(step)) <= task for task in evidence.task_words)
        claims.append((f"step: {step}", f"action:{normalise(action)}", ok,
                       ok or any(_pattern(step).match(t) for t in taken)))
    for a in reading.avoided:
        ok = any(_pattern(normalise(a)).match(t) for t in taken)
        claims.append((f"avoid: {a}", f"avoid:{normalise(a)}", ok, ok))
    for fact in reading.facts:
        parts = [normalise(p) for p in fact.split(" @ ")]
        ok = all(re.search(rf"\b{re.escape(p)}\b", evidence.text) for p in parts if p)
        claims.append((f"fact: {fact}", f"fact:{normalise(fact)}", ok, ok))
    return EntryGrounding(entry.id, sum(ok for _, _, ok, _ in claims), len(claims),
                          tuple(c for c, _, ok, _ in claims if not ok),
                          tuple((key, shown) for _, key, _, shown in claims if key is not None))


def ground_region(emitted: Sequence[dict[str, Any]], trajectories: dict[str, Trajectory], reads: Any,
                  memo: dict[str, EntryGrounding] | None = None) -> list[EntryGrounding]:
    """Every emitted entry of one region (kept and new alike: a kept entry is checked as a new one is).
    ``memo``: entries already checked against these ``trajectories`` with this reader, by id (an entry's id is
    the hash of its content, provenance included), filled as it goes: the board checks the same kept entries
    in many rows, and a results record checks each entry for its column and for its review."""
    memo = {} if memo is None else memo
    out = []
    for raw in emitted:
        if raw["id"] not in memo:
            entry = MemoryEntry.from_dict(raw)
            memo[raw["id"]] = ground_entry(entry, reads([entry]), Evidence.cited(entry, trajectories))
        out.append(memo[raw["id"]])
    return out


def held_claims(emitted: Sequence[dict[str, Any]], trajectories: dict[str, Trajectory], reads: Any,
                memo: dict[str, EntryGrounding] | None = None) -> dict[str, bool]:
    """One region's steps, forbidden steps and facts, keyed as the reader-level similarity keys them, each with
    whether the trajectories cited by some entry that makes it show it (:class:`EntryGrounding` ``checked``; a
    claim two entries make is shown when either's evidence shows it: the region's trajectories do). What the
    needs-review rule (leaderboard/review.py) compares with a reference's claims."""
    out: dict[str, bool] = {}
    for entry in ground_region(emitted, trajectories, reads, memo):
        for key, ok in entry.checked:
            out[key] = out.get(key, False) or ok
    return out


def reader_of(suite: str) -> Any:
    """The suite's reader (``reads(entries) -> Reading``) of its memory-following agent."""
    follower = get_suite_spec(suite).follower_class()
    reads = getattr(follower, "reads", None)
    if reads is None:
        from dreamer_gym.agents.generic_following import GenericFollowing

        return GenericFollowing.reads  # a follower that declares no reading is read as the default reader is
    return reads


def grounding(regions: Sequence[dict[str, Any]], trajectories: dict[str, Trajectory], suite: str,
              memo: dict[str, EntryGrounding] | None = None) -> dict[str, Any]:
    """The column for one track block: ``share`` (mean over regions of held claims / claims), ``unsupported``
    (claims not held, summed), ``claims``, per-region shares and ``flagged`` entries (region index, entry id,
    share, up to three claims their evidence does not hold)."""
    reads = reader_of(suite)
    shares, flagged = [], []
    unsupported = claims = 0
    per_region: list[float | None] = []
    for j, region in enumerate(regions):
        entries = ground_region(region["emitted"], trajectories, reads, memo)
        held, made = sum(e.held for e in entries), sum(e.claims for e in entries)
        unsupported += made - held
        claims += made
        per_region.append(held / made if made else None)
        if made:
            shares.append(held / made)
        flagged += [{"region": j, "id": e.id, "share": round(e.share, 4), "unheld": list(e.unheld[:3])}
                    for e in entries if e.claims and e.share < FLAG_BELOW]
    return {"share": round(sum(shares) / len(shares), 4) if shares else None, "unsupported": unsupported,
            "claims": claims, "per_region": [None if s is None else round(s, 4) for s in per_region],
            "flagged": flagged}


def public_trajectories(track: Any) -> dict[str, Trajectory]:
    """The trajectories of ``track``'s pool (a verification track's is the fresh pool): what entries cite."""
    from dreamer_gym.pool import load_or_build_pool

    config = track.config()
    return load_or_build_pool(config.pool, config.suite, config.pool_hash, progress=False).trajectories


def track_grounding(track: Any, block: dict[str, Any], trajectories: dict[str, Trajectory] | None = None,
                    memo: dict[str, EntryGrounding] | None = None) -> dict[str, Any]:
    """:func:`grounding` of a submission's block on ``track``, against the track's public pool (``trajectories``:
    that pool's, when the caller has loaded it already; ``memo``: as for :func:`ground_region`)."""
    trajectories = public_trajectories(track) if trajectories is None else trajectories
    return grounding(block["regions"], trajectories, track.config().suite, memo)
