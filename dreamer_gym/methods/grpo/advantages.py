"""Advantage estimators: one advantage per turn of every rollout of a batch (a turn's tokens share it).

* ``grpo``: the group-normalised outcome, ``(R - mean_g R) / std`` (Shao et al. 2024), the same for every
  turn of a rollout.
* ``gigpo``: GiGPO's two levels (Feng et al. 2025, "Group-in-Group Policy Optimization"): the episode-level
  GRPO advantage plus ``step_weight`` times a step-level one. Turns of one group that act on the same
  env state (the anchor: what is kept so far, at the same turn index) form a step group; a turn's
  step-level advantage is its discounted return minus its step group's mean (scaled like the episode
  level). Turns alone in their state get no step term. Where the policy's second command is the only
  difference between two rollouts, only that command is credited.

An estimator is any callable ``(rollouts, groups, scale) -> list[list[float]]`` registered in
:data:`ESTIMATORS`; ``rollouts`` carry ``reward``, ``turn_rewards`` and ``turn_keys``.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

EPS = 1e-4


class Scored(Protocol):
    reward: float
    turn_keys: list[str]  # per turn: the env state the command acted on
    turn_rewards: list[float]  # per turn: the reward the env paid for it (the commit's on the last)


def _normalise(values: np.ndarray, groups: np.ndarray, scale: str) -> np.ndarray:
    """Subtract each group's mean; divide by the group's std, the batch's, or nothing."""
    out = values.astype(np.float64).copy()
    for g in np.unique(groups):
        out[groups == g] -= values[groups == g].mean()
    if scale == "group":
        for g in np.unique(groups):
            out[groups == g] /= values[groups == g].std() + EPS
    elif scale == "batch":
        out /= values.std() + EPS
    return out


def grpo_advantages(rollouts: Sequence[Scored], groups: Sequence[int], scale: str = "group",
                    **_: Any) -> list[list[float]]:
    rewards = np.array([r.reward for r in rollouts], dtype=np.float64)
    adv = _normalise(rewards, np.asarray(groups), scale)
    return [[float(a)] * max(len(r.turn_keys), 1) for a, r in zip(adv, rollouts)]


def returns_to_go(turn_rewards: Sequence[float], gamma: float) -> list[float]:
    out, running = [0.0] * len(turn_rewards), 0.0
    for t in range(len(turn_rewards) - 1, -1, -1):
        running = turn_rewards[t] + gamma * running
        out[t] = running
    return out


def gigpo_advantages(rollouts: Sequence[Scored], groups: Sequence[int], scale: str = "group",
                     step_weight: float = 1.0, gamma: float = 1.0, **_: Any) -> list[list[float]]:
    episode = grpo_advantages(rollouts, groups, scale)
    steps: dict[tuple[int, int, str], list[tuple[int, int, float]]] = defaultdict(list)
    for i, (r, g) in enumerate(zip(rollouts, groups)):
        for t, (key, ret) in enumerate(zip(r.turn_keys, returns_to_go(r.turn_rewards, gamma))):
            steps[(g, t, key)].append((i, t, ret))
    out = [list(a) for a in episode]
    for members in steps.values():
        if len(members) < 2:
            continue
        rets = np.array([m[2] for m in members])
        centred = rets - rets.mean()
        if scale != "none":
            centred = centred / (rets.std() + EPS) if scale == "group" else centred
        for (i, t, _), a in zip(members, centred):
            out[i][t] += step_weight * float(a)
    return out


Estimator = Callable[..., list[list[float]]]
ESTIMATORS: dict[str, Estimator] = {"grpo": grpo_advantages, "gigpo": gigpo_advantages}
