"""`reward_from_results`: the commit reward from evaluation results alone (no simulator)."""
from __future__ import annotations

import pytest

from dreamer_gym.agents import EpisodeResult
from dreamer_gym.contract.reward import RewardBreakdown, mean_score, reward_from_results
from dreamer_gym.suites.base import EpisodeTask


def results(*scores: float) -> list[EpisodeResult]:
    return [EpisodeResult(EpisodeTask("f", i), s, s, 3, s == 100) for i, s in enumerate(scores)]


def test_score_delta_is_the_mean_change_over_100():
    r = reward_from_results(results(0, 50, 100), results(100, 50, 100), 200, 200, size_coef=0.02)
    assert (r.score_before, r.score_after) == (50.0, pytest.approx(250 / 3))
    assert r.score_delta == pytest.approx((r.score_after - r.score_before) / 100.0)
    assert r.size == 0.0 and r.total == r.score_delta


def test_size_term_is_the_relative_token_change():
    r = reward_from_results(results(40), results(40), tokens_before=300, tokens_after=0, size_coef=0.02)
    assert r.score_delta == 0.0 and r.size == pytest.approx(0.02) and r.total == r.size
    grown = reward_from_results(results(40), results(40), 100, 150, size_coef=0.1)
    assert grown.size == pytest.approx(-0.05)
    assert reward_from_results([], [], 0, 10, size_coef=1.0).size == -10.0  # an empty region counts as 1 token


def test_keeping_everything_is_exactly_zero():
    same = results(12.5, 100, 0)
    r = reward_from_results(same, same, 321, 321, size_coef=0.02)
    assert r == RewardBreakdown(r.score_before, r.score_before, 0.0, 0.0, 0.0)
    assert r.components() == {"score_delta": 0.0, "size": 0.0}


def test_total_is_the_sum_the_env_pays():
    r = reward_from_results(results(10, 30), results(60, 0), 80, 50, size_coef=0.05)
    assert r.total == r.score_delta + r.size
    assert r.components() == {"score_delta": r.score_delta, "size": r.size}
    assert mean_score([]) == 0.0 and mean_score(results(10, 30)) == 20.0


def test_other_family_episodes_can_only_cost():
    """A gain on another family's episode earns nothing; a loss there costs as on the region's own."""
    before, after = results(20, 40, 40), results(50, 100, 0)  # own +30; other +60 (unpaid) and -40
    r = reward_from_results(before, after, 100, 100, size_coef=0.02, in_family=[True, False, False])
    assert r.in_family == pytest.approx(30 / 300)
    assert r.other_family == pytest.approx(-40 / 300)
    assert r.other_family_unpaid == pytest.approx(60 / 300)
    assert r.score_delta == pytest.approx(r.in_family + r.other_family)
    assert r.score_delta < (r.score_after - r.score_before) / 100  # the unclipped mean would pay the +60
    assert r.score_delta_parts() == {"in_family": r.in_family, "other_family": r.other_family,
                                     "other_family_unpaid": r.other_family_unpaid}


def test_an_all_other_family_gain_earns_exactly_nothing():
    r = reward_from_results(results(0, 0), results(100, 100), 50, 50, size_coef=0.0, in_family=[False, False])
    assert r.score_delta == 0.0 and r.other_family_unpaid == pytest.approx(1.0)


def test_flags_must_match_the_results():
    with pytest.raises(ValueError, match="in_family"):
        reward_from_results(results(1, 2), results(1, 2), 1, 1, 0.0, in_family=[True])
    with pytest.raises(ValueError, match="as many results"):
        reward_from_results(results(1, 2), results(1), 1, 1, 0.0)
