"""The commit reward as one pure function of evaluation results (no simulator, no env state).

``reward_from_results`` is the only place that turns the downstream agent's scores and the region's
sizes into a reward, and :func:`size_term` the only place that prices a region's size (the joint commit of
the multi-agent env pays each agent its own region's size term with it); the reward service calls them at
commit and the env records the parts in ``info["reward_components"]`` and ``info["score_delta_parts"]``.
See docs/env.md, "Reward".

Other-family episodes can only cost. They are there to punish a new region that hijacks the retrieval of
tasks it was not written for; an improvement on one of them earns nothing (per episode: ``min(0, after -
before)``), so content unrelated to the region (a constant text with good procedures for every family,
retrieval bait) cannot be paid through them. Per episode rather than per commit, so a gain on one
other-family episode cannot buy back a hijack on another.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dreamer_gym.agents import EpisodeResult


def mean_score(results: Sequence[EpisodeResult]) -> float:
    """Mean clipped score of ``results`` (0.0 for none)."""
    return float(np.mean([r.score for r in results])) if results else 0.0


@dataclass(frozen=True)
class RewardBreakdown:
    """The commit reward and its parts (``total = score_delta + size``; invalid-call penalties are paid
    at each step, outside this). ``score_delta = in_family + other_family``."""

    score_before: float  # mean clipped score with bank v0, every episode
    score_after: float  # mean clipped score with bank v1, same episodes
    score_delta: float  # what the reward pays for scores: in_family + other_family
    size: float  # -size_coef * relative change of the region's tokens
    total: float
    in_family: float = 0.0  # sum of (after - before) over the region's own episodes / (100 n)
    other_family: float = 0.0  # sum of min(0, after - before) over other families' episodes / (100 n); <= 0
    other_family_unpaid: float = 0.0  # the other-family gains the rule did not pay, same scale; >= 0

    def components(self) -> dict[str, float]:
        """``info["reward_components"]``: the summands of ``total``."""
        return {"score_delta": self.score_delta, "size": self.size}

    def score_delta_parts(self) -> dict[str, float]:
        """``info["score_delta_parts"]``: where ``score_delta`` came from, and what it declined to pay."""
        return {"in_family": self.in_family, "other_family": self.other_family,
                "other_family_unpaid": self.other_family_unpaid}


def size_term(tokens_before: int, tokens_after: int, size_coef: float) -> float:
    """The size part of a commit's reward: ``-size_coef`` times the relative change of the region's tokens
    (shrinking pays, growing costs; an empty region counts as one token).

    Example:
        >>> size_term(100, 50, 0.02)
        0.01
    """
    return -size_coef * (tokens_after - tokens_before) / max(tokens_before, 1)


def reward_from_results(before: Sequence[EpisodeResult], after: Sequence[EpisodeResult], tokens_before: int,
                        tokens_after: int, size_coef: float,
                        in_family: Sequence[bool] | None = None) -> RewardBreakdown:
    """The commit reward from the same episodes played with bank v0 (``before``) and bank v1 (``after``).

    Args:
        before: results with the old bank.
        after: results with the new bank, on the same episodes (common random numbers).
        tokens_before: tokens of the region's entries.
        tokens_after: tokens of the new region's entries.
        size_coef: reward per relative change of region tokens (``RewardDefinition.size_coef``).
        in_family: per episode, whether it is of the region's family; ``None`` = all of them. An
            other-family episode pays ``min(0, after - before)``: it can only cost.

    Example:
        >>> reward_from_results([], [], tokens_before=100, tokens_after=50, size_coef=0.02).size
        0.01
    """
    if len(before) != len(after):
        raise ValueError(f"Expected as many results after as before, got {len(after)} and {len(before)}")
    own = [True] * len(before) if in_family is None else [bool(x) for x in in_family]
    if len(own) != len(before):
        raise ValueError(f"Expected one `in_family` flag per episode ({len(before)}), got {len(own)}")
    n = max(len(before), 1)
    deltas = [a.score - b.score for b, a in zip(before, after)]
    in_part = sum(d for d, o in zip(deltas, own) if o) / (100.0 * n)
    other_part = sum(min(0.0, d) for d, o in zip(deltas, own) if not o) / (100.0 * n)
    unpaid = sum(max(0.0, d) for d, o in zip(deltas, own) if not o) / (100.0 * n)
    score_delta = in_part + other_part
    size = size_term(tokens_before, tokens_after, size_coef)
    return RewardBreakdown(mean_score(before), mean_score(after), score_delta, size, score_delta + size,
                           in_part, other_part, unpaid)
