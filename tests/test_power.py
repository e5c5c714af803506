"""The power study on real ScienceWorld, tiny: noise levels and sample sizes come out as the reward implies."""
from __future__ import annotations

import math

import numpy as np
import pytest

from dreamer_gym.studies.power import PowerConfig, n_normal, n_resampled, run, to_markdown


def test_sample_size_formulas() -> None:
    # ((1.96 + 0.84) * 1 / 0.5) ** 2 = 31.4
    assert n_normal(0.5, 1.0) == pytest.approx(31.40, abs=0.01)
    assert n_normal(0.3, 0.0) == 1.0 and math.isinf(n_normal(0.0, 1.0))
    d = np.random.default_rng(0).normal(0.5, 1.0, 20_000)
    n = n_resampled(lambda rng, shape: d[rng.integers(d.size, size=shape)], resamples=2000, max_n=200, sd=1.0)
    assert n is not None and 27 <= n <= 36  # normal differences: the resampled n is the formula's (31.4)


@pytest.mark.jvm
def test_power_study_on_a_tiny_setting() -> None:
    # one region (a family whose oracle reward varies across the reset seeds: the noise is not 0), two seeds (the
    # fewest with a spread; issue 40: CI time, it was three)
    config = PowerConfig(families=("find-non-living-thing",), banks=(0,), episode_seeds=(0, 1),
                         policies=("keep-all", "oracle"), resamples=300, max_n=64)
    summary = run(config, progress=False)
    assert summary["comparable"] and summary["regions"] == 1
    keep = summary["noise"]["keep-all"]
    # keep-all gives back bank v0: exactly 0 on every reset, and no noise at all
    assert keep["exactly_zero_share"] == 1.0 and keep["sd_across_resets"] == 0.0
    oracle = summary["noise"]["oracle"]
    assert oracle["mean"] > 0.1 and oracle["same_reset_replay_equal"] is True  # same reset, same reward
    assert oracle["sd_across_resets"] > 0
    (pair,) = [p for p in summary["pairs"] if (p["a"], p["b"]) == ("oracle", "keep-all")]
    q = pair["pooled"]
    assert q["mean_diff"] == pytest.approx(oracle["mean"])
    for key in ("n_crn", "n_independent", "n_crn_resampled"):
        assert q[key] is not None and 1 <= q[key] < 64, (key, q)
    # keep-all has no variance, so sharing the reset seed buys nothing against it
    assert q["sd_diff_crn"] == pytest.approx(q["sd_diff_independent"])
    assert "oracle vs keep-all" in to_markdown(summary)


def test_power_command_line_flags() -> None:
    from dreamer_gym.cli import parse_args

    args = vars(parse_args(["power", "--families", "grow-plant", "--banks", "0", "--episode-seeds", "0", "1"]))
    assert args["power.banks"] == [0] and args["power.episode_seeds"] == [0, 1] and args["families"] == "grow-plant"
