"""Fixed (non-learned) consolidators."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import gymnasium as gym

from dreamer_gym.consolidators.base import call
from dreamer_gym.memory.tokens import tokenize


class KeepAllConsolidator:
    """Carries the whole region over verbatim: reward exactly 0 before the size term."""

    name = "keep-all"

    def actions(self, env: gym.Env, obs: dict[str, Any], info: dict[str, Any]) -> Iterator[str]:
        yield call("keep", ids=[e["id"] for e in info["region"]])
        yield call("commit")


class EmptyConsolidator:
    """Commits an empty region: the floor."""

    name = "empty"

    def actions(self, env: gym.Env, obs: dict[str, Any], info: dict[str, Any]) -> Iterator[str]:
        yield call("commit")


def _jaccard(a: str, b: str) -> float:
    sa, sb = set(tokenize(a)), set(tokenize(b))
    return len(sa & sb) / max(len(sa | sb), 1)


class DedupeConsolidator:
    """Drops near-duplicates (token Jaccard >= ``threshold``), keeping the most recent session's copy."""

    name = "dedupe"

    def __init__(self, threshold: float = 0.8) -> None:
        self.threshold = threshold

    def actions(self, env: gym.Env, obs: dict[str, Any], info: dict[str, Any]) -> Iterator[str]:
        entries = sorted(info["region"], key=lambda e: (-e["session"], e["id"]))
        kept: list[dict[str, Any]] = []
        for entry in entries:
            if all(e["kind"] != entry["kind"] or _jaccard(e["text"], entry["text"]) < self.threshold for e in kept):
                kept.append(entry)
        yield call("keep", ids=[e["id"] for e in kept])
        yield call("commit")


class BlindConsolidator:
    """Red-team reference: replaces the region with generic advice without reading it.

    It only looks at entry ids (to cite provenance, which the env requires), never at their text.
    """

    name = "blind"
    TEXTS = (
        ("procedure", "Look around, then examine every object you see, then wait1, then look around again."),
        ("insight", "Read the task description carefully and explore the house room by room."),
        ("pitfall", "Do not wait for too long without acting."),
    )

    def actions(self, env: gym.Env, obs: dict[str, Any], info: dict[str, Any]) -> Iterator[str]:
        anchor = [info["region"][0]["id"]] if info["region"] else []
        for kind, text in self.TEXTS:
            yield call("emit", kind=kind, text=text, provenance=anchor)
        yield call("commit")


class ConsensusConsolidator:
    """Merges the region's procedures into their consensus and drops the rest: the op-level rules
    (:mod:`dreamer_gym.envs.op_rules`) with one fixed op per kind, no learning. Detours and wrong steps
    fall out because no majority of episodes took them; a region without a procedure commits empty."""

    name = "consensus"

    def actions(self, env: gym.Env, obs: dict[str, Any], info: dict[str, Any]) -> Iterator[str]:
        from dreamer_gym.envs.ops import DROP, MERGE, plan_calls

        region = info["region"]
        config = env.unwrapped.config
        ops = [MERGE if e["kind"] == "procedure" else DROP for e in region]
        calls, _ = plan_calls(ops, region, config.max_entry_tokens, config.max_emitted)
        for c in calls:
            yield call(c.pop("tool"), **c)
        yield call("commit")
