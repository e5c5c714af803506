"""Red-team consolidators: policies that never read their region, built to game the commit reward.

Both are **privileged references, not baselines**: they write the oracle's evidence (the suite spec's
hand-abstracted procedures and the facts mined from TRAIN gold paths, see
:mod:`dreamer_gym.consolidators.oracle`) for *every* family of the pool, whatever region they are shown.
They exist to check that the reward pays for consolidating the region at hand and not for content that
helps other families' evaluation episodes (docs/reward-validity.md):

* ``constant``: the same text at every commit, the oracle's entries for all families;
* ``bait``: ``constant`` plus, in each family's procedure, the words of that family's task as the
  downstream agent sees them (TRAIN ``task_description``), stripped of every command verb so the
  memory-following agent's action reader skips them while BM25 retrieval counts them.

Under the reward rule "other-family episodes can only cost" (``reward_from_results(..., in_family=...)``)
neither may earn anything from other families' episodes; the tests in tests/envs/test_reward_gaming.py
check that on real ScienceWorld.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import gymnasium as gym

from dreamer_gym.agents.reading import VERBS, extract_actions
from dreamer_gym.consolidators.base import call
from dreamer_gym.consolidators.oracle import OracleConsolidator, _anchor
from dreamer_gym.envs.tools import CHARS_PER_TOKEN
from dreamer_gym.memory import count_tokens

_WORD = re.compile(r"[a-z0-9][a-z0-9'()-]*")
# every word of a command verb ("focus", "on", "move", "look", ...): a bait sentence holds none of them
_VERB_WORDS = frozenset(w for v in VERBS for w in v.split())
_STOP = frozenset({"your", "is", "to", "the", "a", "an", "it", "of", "in", "and", "then", "first", "next",
                   "when", "you", "are", "be", "can", "that", "which", "if", "until"})


def _limits(env: gym.Env) -> tuple[int, int]:
    """``(max_emitted, max_entry_tokens)`` of the env (the registered defaults where it has no config)."""
    config = getattr(env.unwrapped, "config", None)
    return int(getattr(config, "max_emitted", 12)), int(getattr(config, "max_entry_tokens", 320))


def _fits(text: str, max_tokens: int) -> bool:
    return count_tokens(text) <= max_tokens and len(text) <= max_tokens * CHARS_PER_TOKEN


def _clip(text: str, max_tokens: int) -> str:
    """``text`` cut at a word boundary so that ``emit`` accepts it."""
    words = text.split()
    while words and not _fits(" ".join(words), max_tokens):
        words = words[: max(len(words) - max(len(words) // 8, 1), 0)]
    return " ".join(words)


def pack(items: list[tuple[str, str]], max_entries: int, max_tokens: int) -> list[tuple[str, str]]:
    """``(kind, text)`` items as at most ``max_entries`` entries of at most ``max_tokens`` tokens each:
    each text clipped to fit; when there are too many, facts of the same kind are merged (in order) into
    as few entries as fit, then the tail is dropped."""
    items = [(k, _clip(t, max_tokens)) for k, t in items]
    items = [(k, t) for k, t in items if t]
    if len(items) <= max_entries:
        return items
    merged: list[tuple[str, str]] = []
    for kind, text in items:
        if merged and kind != "procedure" and merged[-1][0] == kind and _fits(f"{merged[-1][1]} {text}", max_tokens):
            merged[-1] = (kind, f"{merged[-1][1]} {text}")
        else:
            merged.append((kind, text))
    return merged[:max_entries]


class ConstantConsolidator:
    """RED TEAM, privileged reference (it writes the oracle's evidence): never reads its region and emits
    the same entries at every commit, the oracle's texts for every family of the pool
    (``OracleConsolidator().texts(env, f)`` for each ``f`` in ``env.unwrapped.pool.families``), packed
    within ``max_emitted`` / ``max_entry_tokens``; provenance: the region's first entry ids. An empty
    region is committed empty."""

    name = "constant"

    def __init__(self) -> None:
        # the texts are a function of the env's pool and limits, not of the region: built once per env (each
        # build reads every family's gold paths)
        self._texts: dict[tuple[int, str, tuple[int, int]], list[tuple[str, str]]] = {}

    def cached_texts(self, env: gym.Env) -> list[tuple[str, str]]:
        key = (id(env.unwrapped), str(env.unwrapped.pool.hash), _limits(env))
        if key not in self._texts:
            self._texts[key] = self.texts(env)
        return self._texts[key]

    def texts(self, env: gym.Env) -> list[tuple[str, str]]:
        """``(kind, text)`` of every entry it writes, whatever the region."""
        oracle = OracleConsolidator()
        out: list[tuple[str, str]] = []
        for family in env.unwrapped.pool.families:
            out += oracle.texts(env, family)
        return out

    def actions(self, env: gym.Env, obs: dict[str, Any], info: dict[str, Any]) -> Iterator[str]:
        if not info["region"]:
            yield call("commit")
            return
        max_entries, max_tokens = _limits(env)
        for kind, text in pack(self.cached_texts(env), max_entries, max_tokens):
            yield call("emit", kind=kind, text=text, provenance=_anchor(info))
        yield call("commit")


def task_words(env: gym.Env, family: str) -> str:
    """The words of ``family``'s TRAIN task descriptions (what the downstream agent retrieves with), in
    order of first use, without command-verb words or stop words: the action reader finds no step in it."""
    seen: dict[str, None] = {}
    for traj in sorted(env.unwrapped.pool.trajectories.values(), key=lambda t: t.id):
        if traj.family != family:
            continue
        for word in _WORD.findall(traj.task_description.lower()):
            word = word.strip("'()-")
            if word and word not in _VERB_WORDS and word not in _STOP and not word.isdigit():
                seen.setdefault(word)
    text = " ".join(seen)
    return text if not extract_actions(text) else ""


class BaitConsolidator(ConstantConsolidator):
    """RED TEAM, privileged reference (it writes the oracle's evidence): ``constant`` with retrieval bait.

    Each family's procedure gets a last sentence made of that family's task words (see :func:`task_words`),
    which BM25 counts (so the procedure out-ranks the bank's own entries on that family's tasks) and the
    memory-following agent's action reader skips (no command verb). Aimed at the other-family evaluation
    episodes, where the reward pays nothing but losses."""

    name = "bait"

    def texts(self, env: gym.Env) -> list[tuple[str, str]]:
        oracle = OracleConsolidator()
        _, max_tokens = _limits(env)
        out: list[tuple[str, str]] = []
        for family in env.unwrapped.pool.families:
            bait = task_words(env, family)
            for kind, text in oracle.texts(env, family):
                if kind == "procedure" and bait:
                    baited = f"{text} Task words: {bait}."
                    text = baited if _fits(baited, max_tokens) else text
                out.append((kind, text))
        return out
