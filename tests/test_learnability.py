"""The learnability study: its cross-fitting on synthetic score tables (a constant that is best everywhere, a
per-region best that repeats across draws, pure noise), its small tree, its config errors, and one tiny real run
on ScienceWorld through the command line."""
from __future__ import annotations

import json

import numpy as np
import pytest

from dreamer_gym.errors import ConfigError
from dreamer_gym.studies.fixed_referee import (
    PairedReferee,
    best_fixed_other_fold,
    constant_selection,
    describe_switch,
    family_switch,
    referee,
)
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


def test_a_rule_that_wins_the_scored_fold_by_luck_is_never_scored_there() -> None:
    scores = np.zeros((10, 2, 2))
    scores[:, 0, :] = 0.5  # rule 0: 0.5 on both folds
    scores[:, 1, 1] = 2.0  # rule 1: 0 on fold 0, a fluke of 2.0 on fold 1 (best in sample: mean 1.0)
    values, chosen = best_fixed_other_fold(scores)
    assert chosen == [1, 0]  # fold 1 is scored with the rule fold 0 chose
    assert values[:, 1].tolist() == [0.5] * 10 and values[:, 0].tolist() == [0.0] * 10
    r = referee(scores, ["steady", "fluke"], None, FAMILIES[:10], resamples=50)
    assert r["best_fixed"]["in_sample"] == {"rule": "fluke", "value": 1.0}
    assert r["best_fixed"]["value"] == 0.25 and r["family_switch"] is None


def test_the_in_sample_best_of_equal_rules_is_biased_up_and_the_other_fold_one_is_not() -> None:
    scores = table(np.zeros((40, 20)), 1.0, seed=5)  # 20 rules equal in truth
    r = referee(scores, [f"r{i}" for i in range(20)], FAMILIES, FAMILIES, resamples=300)
    assert r["best_fixed"]["in_sample"]["value"] > 0.15  # a maximum over 20 noisy means
    assert abs(r["best_fixed"]["value"]) < 0.15
    switch = r["family_switch"]
    assert switch["in_sample"] > 0.3  # a maximum per family over fewer regions: larger still
    lo, hi = switch["vs_best_fixed"]["ci95"]
    assert lo < 0 < hi  # no family differs in truth: the switch is no better out of sample


def test_a_family_switch_that_truly_differs_is_found() -> None:
    true = np.zeros((40, 4))
    true[:, 0] = 0.5  # the best constant
    groups = np.array(FAMILIES)
    for f in range(3):  # families 0-2 each have a rule of their own worth 1.0; family 3 is best with rule 0
        true[groups == f"family-{f}", f + 1] = 1.0
    scores = table(true, 0.05, seed=2)
    values, chosen = family_switch(scores, FAMILIES)
    expected = {"family-0": 1, "family-1": 2, "family-2": 3, "family-3": 0}
    assert chosen == [expected, expected]
    r = referee(scores, ["base", "a", "b", "c"], FAMILIES, FAMILIES, resamples=300)
    assert r["best_fixed"]["per_fold"] == ["base", "base"]
    assert r["family_switch"]["value"] == pytest.approx(0.875, abs=0.02)
    d = r["family_switch"]["vs_best_fixed"]
    assert d["difference"] == pytest.approx(0.375, abs=0.02) and d["ci95"][0] > 0.25 and d["excludes_0"]
    assert describe_switch(r["family_switch"]["per_fold"][0], "base") == \
        "a on family-0, b on family-1, c on family-2, base elsewhere"


def test_a_contender_is_paired_with_the_reference_on_the_same_regions_and_folds() -> None:
    true = np.zeros((40, 3))
    true[:, 2] = 1.0  # rule 2 best everywhere: chosen on every fold and every resample
    scores = table(true, 0.1, seed=4)
    ref = PairedReferee(constant_selection(scores), FAMILIES, resamples=200)
    same = ref.against(scores[:, 2, :])
    assert same == {"difference": 0.0, "ci95": [0.0, 0.0], "excludes_0": False}
    gain = np.random.default_rng(0).uniform(0.0, 0.2, 40)  # a region-level gain over the best fixed rule
    better = ref.against(scores[:, 2, :] + gain[:, None])
    assert better["difference"] == pytest.approx(gain.mean())
    assert 0.05 < better["ci95"][0] < gain.mean() < better["ci95"][1] < 0.15 and better["excludes_0"]


def test_feature_policies_are_read_against_the_best_fixed_rule_of_the_same_folds() -> None:
    x = np.arange(40, dtype=float)[:, None]
    true = np.zeros((40, 2))
    true[:20, 0] = true[20:, 1] = 1.0  # the best rule flips at x = 19.5; either constant gets 0.5
    by_name = {p["model"]: p for p in feature_policies(table(true, 0.01, seed=6), x, ["x"], ["a", "b"])}
    assert by_name["x"]["vs_best_fixed"] == pytest.approx(0.5, abs=0.02)


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
    # each commit scored on 1 in-family episode and 1 of another family, not the id's 3 + 2: a reward field, so the
    # study says it is not comparable to the id (whether a setting is: tests/test_validity.py, make_study_env)
    code = main(["learnability", "--families", "use-thermometer", "--banks", "0", "1", "--rules", "keep-all", "empty",
                 "consensus", "--bootstrap-resamples", "200", "--env-kwargs", '{"eval_in_family": 1, "eval_other": 1}',
                 "--out", str(out), "--quiet"])
    assert code == 0 and "best constant" in capsys.readouterr().out
    record = json.loads((out / "learnability.json").read_text())
    summary = record["summary"]
    assert record["config"]["rules"] == ["keep-all", "empty", "consensus"] and len(record["records"]) == 2 * 3 * 2
    assert not summary["setting"]["comparable"] and summary["regions"] == 2 and summary["draws"] == 2
    assert "**not comparable**" in (out / "learnability.md").read_text()
    assert all(r["reward"] == 0.0 for r in record["records"] if r["rule"] == "keep-all")  # bank v0 given back
    assert summary["per_rule"]["empty"]["mean"] < summary["per_rule"]["keep-all"]["mean"]
    lo, hi = summary["gap_ci95"]
    assert lo <= summary["gap"] <= hi and summary["best_constant"] in summary["rules"]
    assert summary["choice"] == pytest.approx(summary["constant"] + summary["gap"])
    assert set(summary["merging_vs_keep_all"]) == {"consensus"}
    assert summary["best_fixed"]["per_fold"][0] in summary["rules"]  # chosen on the other draw
    assert summary["family_switch"]["per_fold"][0] == {"use-thermometer": summary["best_fixed"]["per_fold"][0]}
    assert all(r["entries"] > 0 and r["family"] == "use-thermometer" for r in record["regions"])
    assert "| **gap** (choice - constant) |" in (out / "learnability.md").read_text()
