"""The learnability study: its cross-fitting on synthetic score tables (a constant that is best everywhere, a
per-region best that repeats across draws, pure noise), its small tree, its config errors, and one tiny real run
on ScienceWorld through the command line."""
from __future__ import annotations

import json

import numpy as np
import pytest

from dreamer_gym.errors import ConfigError
from dreamer_gym.studies.learnability import (
    LearnabilityConfig,
    bootstrap_gap,
    crossfit,
    feature_policies,
    fit_tree,
    predict_tree,
)

FAMILIES = [f"family-{i % 4}" for i in range(40)]  # 40 regions, 4 families of 10


def table(true: np.ndarray, noise: float, draws: int = 2, seed: int = 0) -> np.ndarray:
    """``(regions, rules, draws)``: each region's true reward per rule plus independent noise per draw."""
    rng = np.random.default_rng(seed)
    return true[:, :, None] + rng.normal(0.0, noise, (*true.shape, draws))


def test_one_constant_best_everywhere_gives_no_gap() -> None:
    true = np.zeros((40, 4))
    true[:, 2] = 1.0  # rule 2 wins every region by far more than the noise
    fit = crossfit(table(true, 0.01))
    assert fit["constant_per_fold"] == [2, 2]
    assert all(c == [2] * 40 for c in fit["choice_per_fold"])
    assert fit["gap_mean"] == pytest.approx(0.0, abs=1e-12)
    assert fit["agreement_constant"] == fit["agreement_choice"] == 1.0


def test_a_per_region_best_that_repeats_across_draws_gives_a_positive_gap() -> None:
    true = np.zeros((40, 3))
    true[np.arange(40), np.arange(40) % 3] = 1.0  # each region has its own best rule, the same on every draw
    scores = table(true, 0.01)
    fit = crossfit(scores)
    assert fit["choice_mean"] == pytest.approx(1.0, abs=0.01)
    assert fit["constant_mean"] == pytest.approx(14 / 40, abs=0.01)  # the constant wins 14 of 40 regions
    lo, hi = bootstrap_gap(scores, FAMILIES, resamples=500, seed=0)
    assert 0.4 < lo <= fit["gap_mean"] <= hi
    assert fit["agreement_choice"] == 1.0 and fit["agreement_constant"] < 0.4


def test_pure_noise_is_not_learnability_once_cross_fitted() -> None:
    scores = table(np.zeros((40, 5)), 1.0, seed=3)  # every rule equal in truth; draws differ by noise alone
    fit = crossfit(scores)
    lo, hi = bootstrap_gap(scores, FAMILIES, resamples=500, seed=0)
    assert lo < 0 < hi
    # chosen and scored on the same draws, the same noise looks like a large gain: what cross-fitting removes
    assert fit["hindsight_gap"] > 0.5
    assert bootstrap_gap(scores, FAMILIES, resamples=500, seed=0) == (lo, hi)  # a fixed seed, one answer


def test_ties_go_to_the_first_listed_rule() -> None:
    scores = np.zeros((6, 3, 2))  # every rule scores the same: the constant and the choice are rule 0
    fit = crossfit(scores)
    assert fit["constant_per_fold"] == [0, 0] and fit["choice_per_fold"] == [[0] * 6, [0] * 6]


def test_the_tree_finds_a_threshold_and_a_feature_policy_reads_it() -> None:
    x = np.array([[0.1, 5.0], [0.2, 1.0], [0.3, 4.0], [0.7, 2.0], [0.8, 3.0], [0.9, 6.0]])
    labels = np.array([0, 0, 0, 1, 1, 1])
    tree = fit_tree(x, labels, depth=2)
    assert tree["feature"] == 0 and 0.3 < tree["threshold"] < 0.7
    assert predict_tree(tree, x).tolist() == labels.tolist()
    true = np.zeros((6, 2))
    true[np.arange(6), labels] = 1.0  # the best rule is the label: a policy reading feature 0 plays it
    by_name = {p["model"]: p for p in feature_policies(table(true, 0.01, seed=1), x, ["share", "noise"], ["a", "b"])}
    assert by_name["share"]["agreement"] == 1.0 and by_name["share"]["value"] == pytest.approx(1.0, abs=0.02)
    assert "if share <= 0.5: (a) else: (b)" in by_name["share"]["trees"]


@pytest.mark.parametrize("kwargs, match", [
    ({"draws": 1}, "Expected `draws` >= 2"),
    ({"rules": ("keep-all", "magic")}, r"Unknown rule\(s\) \['magic'\] in `rules`"),
    ({"rules": ("keep-all",)}, "Expected `rules` to be at least 2 distinct names"),
    ({"bootstrap_resamples": 0}, "Expected `bootstrap_resamples`"),
])
def test_config_errors_name_the_field(kwargs: dict, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        LearnabilityConfig(**kwargs)


@pytest.mark.jvm
def test_learnability_command_on_real_scienceworld(tmp_path, capsys) -> None:
    from dreamer_gym.cli import main

    out = tmp_path / "study"
    code = main(["learnability", "--families", "use-thermometer", "--banks", "0", "1", "--rules", "keep-all", "empty",
                 "consensus", "--bootstrap-resamples", "200", "--out", str(out), "--quiet"])
    assert code == 0 and "best constant" in capsys.readouterr().out
    record = json.loads((out / "learnability.json").read_text())
    summary = record["summary"]
    assert record["config"]["rules"] == ["keep-all", "empty", "consensus"] and len(record["records"]) == 2 * 3 * 2
    assert summary["setting"]["comparable"] and summary["regions"] == 2 and summary["draws"] == 2
    assert all(r["reward"] == 0.0 for r in record["records"] if r["rule"] == "keep-all")  # bank v0 given back
    assert summary["per_rule"]["empty"]["mean"] < summary["per_rule"]["keep-all"]["mean"]
    lo, hi = summary["gap_ci95"]
    assert lo <= summary["gap"] <= hi and summary["best_constant"] in summary["rules"]
    assert summary["choice"] == pytest.approx(summary["constant"] + summary["gap"])
    assert set(summary["merging_vs_keep_all"]) == {"consensus"}
    assert all(r["entries"] > 0 and r["family"] == "use-thermometer" for r in record["regions"])
    assert "| **gap** (choice - constant) |" in (out / "learnability.md").read_text()
