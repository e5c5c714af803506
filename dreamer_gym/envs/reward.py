"""The commit reward as one pure function of evaluation results (no simulator, no env state).

``reward_from_results`` is the only place that turns the downstream agent's scores and the region's
sizes into a reward; :class:`~dreamer_gym.envs.consolidation.ConsolidationEnv` calls it at commit and
records its parts in ``info["reward_components"]``. See docs/env.md, "Reward".
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
    at each step, outside this)."""

    score_before: float  # mean clipped score with bank v0
    score_after: float  # mean clipped score with bank v1, same episodes
    score_delta: float  # (score_after - score_before) / 100
    size: float  # -size_coef * relative change of the region's tokens
    total: float

    def components(self) -> dict[str, float]:
        """``info["reward_components"]``."""
        return {"score_delta": self.score_delta, "size": self.size}


def reward_from_results(before: Sequence[EpisodeResult], after: Sequence[EpisodeResult], tokens_before: int,
                        tokens_after: int, size_coef: float) -> RewardBreakdown:
    """The commit reward from the same episodes played with bank v0 (``before``) and bank v1 (``after``).

    Args:
        before: results with the old bank.
        after: results with the new bank, on the same episodes (common random numbers).
        tokens_before: tokens of the region's entries.
        tokens_after: tokens of the new region's entries.
        size_coef: reward per relative change of region tokens (``ConsolidationConfig.size_coef``).

    Example:
        >>> reward_from_results([], [], tokens_before=100, tokens_after=50, size_coef=0.02).size
        0.01
    """
    score_before, score_after = mean_score(before), mean_score(after)
    score_delta = (score_after - score_before) / 100.0
    size = -size_coef * (tokens_after - tokens_before) / max(tokens_before, 1)
    return RewardBreakdown(score_before, score_after, score_delta, size, score_delta + size)
