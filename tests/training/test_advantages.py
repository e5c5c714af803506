"""The advantage estimators on hand-made rollouts: what each credits, and what it does not."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest

from dreamer_gym.methods.grpo.advantages import ESTIMATORS, gigpo_advantages, grpo_advantages, returns_to_go


@dataclass
class R:
    reward: float
    turn_keys: list[str]
    turn_rewards: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.turn_rewards:
            self.turn_rewards = [0.0] * (len(self.turn_keys) - 1) + [self.reward]


def test_grpo_normalises_within_each_group_and_gives_every_turn_the_same_value() -> None:
    rollouts = [R(1.0, ["", "a"]), R(0.0, ["", "b", "c"]), R(5.0, [""]), R(5.0, [""])]
    adv = grpo_advantages(rollouts, [0, 0, 1, 1], "group")
    assert adv[0] == pytest.approx([1.0, 1.0], abs=1e-3) and adv[1] == pytest.approx([-1.0] * 3, abs=1e-3)
    assert adv[2] == adv[3] == [0.0]  # a tied group teaches nothing
    none = grpo_advantages(rollouts, [0, 0, 1, 1], "none")
    assert none[0][0] == pytest.approx(0.5) and none[1][0] == pytest.approx(-0.5)


def test_gigpo_credits_the_turn_where_rollouts_that_shared_a_state_diverged() -> None:
    # all three start in the same state; after turn 0 two of them kept the same set ("1") and then diverged
    rollouts = [R(1.0, ["", "1"]), R(0.0, ["", "1"]), R(0.5, ["", "2"])]
    adv = gigpo_advantages(rollouts, [0, 0, 0], "none", step_weight=1.0)
    episode = grpo_advantages(rollouts, [0, 0, 0], "none")
    # turn 0: one step group of all three (same as the episode level); turn 1: "1" holds two, "2" one
    assert adv[0][0] == pytest.approx(episode[0][0] + (1.0 - 0.5))
    assert adv[0][1] == pytest.approx(episode[0][1] + 0.5) and adv[1][1] == pytest.approx(episode[1][1] - 0.5)
    assert adv[2][1] == pytest.approx(episode[2][1])  # alone in its state: no step term
    assert set(ESTIMATORS) == {"grpo", "gigpo"}


def test_gigpo_never_compares_across_groups_or_turn_indices() -> None:
    rollouts = [R(1.0, ["x"]), R(0.0, ["x"]), R(0.0, ["", "x"])]
    adv = gigpo_advantages(rollouts, [0, 1, 1], "none")
    assert adv == grpo_advantages(rollouts, [0, 1, 1], "none")  # no step group of two exists


def test_returns_to_go() -> None:
    assert returns_to_go([-0.01, 0.0, 1.0], 1.0) == pytest.approx([0.99, 1.0, 1.0])
    assert np.allclose(returns_to_go([0.0, 1.0], 0.5), [0.5, 1.0])
