"""The cross-fitted reading of a rule-reward table: a ``(regions, rules, folds)`` array of commit rewards.

Shared by the env study (:mod:`dreamer_gym.studies.learnability`, which runs the commits) and the track study
(:mod:`dreamer_gym.studies.track_learnability`, which reads a track's committed rows): the best constant and the
per-region choice chosen on the other folds (:func:`crossfit`), the gap's bootstrap CI, the feature stumps and
trees, each rule's shares, and the two ways to make folds: episode draws (:func:`draw_noise` says how far apart
they are) or disjoint halves of each region's variations (:func:`variation_folds`)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dreamer_gym.consolidators.rule_selector import predict_tree
from dreamer_gym.errors import ConfigError
from dreamer_gym.stats import interval, stratified_indices
from dreamer_gym.studies.fixed_referee import TIE, best_fixed_other_fold, other_folds
from dreamer_gym.studies.fixed_referee import argmax_first as _argmax
from dreamer_gym.studies.folds import episode_reward, fold_map, fold_rewards

MERGING_RULES: tuple[str, ...] = ("merge-all", "consensus", "merge-procedures", "merge-procedures-keep-facts",
                                  "abstract-procedures")


def score_table(records: Sequence[Mapping[str, Any]], regions: Sequence[tuple[str, int]],
                rules: Sequence[str], draws: int) -> np.ndarray:
    """``(regions, rules, draws)`` array of commit rewards from the records."""
    index = {(r["family"], r["bank"], r["rule"], r["draw"]): r["reward"] for r in records}
    return np.array([[[index[(f, b, rule, d)] for d in range(draws)] for rule in rules] for f, b in regions],
                    dtype=float)


def crossfit(scores: np.ndarray) -> dict[str, Any]:
    """Cross-fitted best constant and best per-region choice of a ``(regions, rules, draws)`` score table.

    Fold k chooses on the mean of every draw but k and scores on draw k; values are averaged over folds. Returns
    the per-region values (``constant``, ``choice``, ``gap``), their means, the rules chosen per fold, and the
    in-sample (hindsight) values for contrast."""
    n_regions, _, n_draws = scores.shape
    constant, choice, agree_constant, agree_choice = (np.zeros(n_regions) for _ in range(4))
    constants, choices = [], []
    for _, select, held in other_folds(scores):  # (regions, rules) each
        c = int(_argmax(select.mean(axis=0)))
        per_region = _argmax(select)
        rows = np.arange(n_regions)
        constant += held[:, c] / n_draws
        choice += held[rows, per_region] / n_draws
        best = held.max(axis=1)
        agree_constant += (held[:, c] >= best - TIE) / n_draws
        agree_choice += (held[rows, per_region] >= best - TIE) / n_draws
        constants.append(c)
        choices.append(per_region.tolist())
    mean = scores.mean(axis=2)
    return {"constant": constant, "choice": choice, "gap": choice - constant,
            "constant_mean": float(constant.mean()), "choice_mean": float(choice.mean()),
            "gap_mean": float((choice - constant).mean()), "constant_per_fold": constants,
            "choice_per_fold": choices, "agreement_constant": float(agree_constant.mean()),
            "agreement_choice": float(agree_choice.mean()),
            "hindsight_constant": float(mean.mean(axis=0).max()), "hindsight_choice": float(mean.max(axis=1).mean()),
            "hindsight_gap": float(mean.max(axis=1).mean() - mean.mean(axis=0).max())}


def bootstrap_gap(scores: np.ndarray, strata: Sequence[str], resamples: int, seed: int = 0) -> tuple[float, float]:
    """95% percentile CI of the cross-fitted gap, resampling regions with replacement within each stratum
    (family: :func:`dreamer_gym.stats.stratified_indices`) and redoing both selections on each resample."""
    gaps = np.array([crossfit(scores[idx])["gap_mean"] for idx in stratified_indices(strata, resamples, seed)])
    return interval(gaps, float("nan"), len(gaps), 1, kind="percentile")


def fit_tree(x: np.ndarray, labels: np.ndarray, depth: int) -> dict[str, Any]:
    """A classification tree of at most ``depth`` splits (Gini; thresholds at midpoints; ties: the first
    feature and the lowest threshold, the smallest label), deterministic and small enough to read."""
    values, counts = np.unique(labels, return_counts=True)
    leaf = {"label": int(values[np.argmax(counts)])}
    if depth == 0 or len(values) == 1:
        return leaf

    def gini(part: np.ndarray) -> float:
        _, c = np.unique(part, return_counts=True)
        return float(len(part) * (1 - ((c / len(part)) ** 2).sum()))

    best = (gini(labels) - 1e-12, None, None)
    for j in range(x.shape[1]):
        cuts = np.unique(x[:, j])
        for t in (cuts[:-1] + cuts[1:]) / 2:
            left = x[:, j] <= t
            impurity = gini(labels[left]) + gini(labels[~left])
            if impurity < best[0]:
                best = (impurity, j, float(t))
    if best[1] is None:
        return leaf
    _, j, t = best
    left = x[:, j] <= t
    sides = fit_tree(x[left], labels[left], depth - 1), fit_tree(x[~left], labels[~left], depth - 1)
    if all("label" in side for side in sides) and sides[0]["label"] == sides[1]["label"]:
        return leaf  # a split whose sides play the same rule changes no choice
    return {"feature": j, "threshold": t, "left": sides[0], "right": sides[1]}


def describe_tree(tree: dict[str, Any], features: Sequence[str], rules: Sequence[str]) -> str:
    if "label" in tree:
        return rules[tree["label"]]
    name = features[tree["feature"]]
    return (f"if {name} <= {tree['threshold']:g}: ({describe_tree(tree['left'], features, rules)}) else: "
            f"({describe_tree(tree['right'], features, rules)})")


def feature_policies(scores: np.ndarray, x: np.ndarray, features: Sequence[str],
                     rules: Sequence[str]) -> list[dict[str, Any]]:
    """Cross-fitted policies that read features: a stump per feature and a depth-2 tree on all. Each fold fits
    on the per-region best rules of the other draws (folds) and plays its prediction on the held-out one, the
    same folds as the best fixed rule (:func:`~dreamer_gym.studies.fixed_referee.best_fixed_other_fold`), so
    ``vs_best_fixed`` (value minus that rule's held-out value) compares two out-of-sample choices (a point
    estimate: refitting the trees on every bootstrap resample costs too much for a CI)."""
    n_draws = scores.shape[2]
    fixed = float(best_fixed_other_fold(scores)[0].mean())
    models = [(f, [j], 1) for j, f in enumerate(features)]
    models.append(("tree (all features, depth 2)", list(range(len(features))), 2))
    out = []
    for name, cols, depth in models:
        value, agree, trees = 0.0, 0.0, []
        for _, select, held in other_folds(scores):
            tree = fit_tree(x[:, cols], _argmax(select), depth)
            played = predict_tree(tree, x[:, cols])
            rows = np.arange(len(held))
            value += float(held[rows, played].mean()) / n_draws
            agree += float((held[rows, played] >= held.max(axis=1) - TIE).mean()) / n_draws
            trees.append(describe_tree(tree, [features[c] for c in cols], rules))
        out.append({"model": name, "value": value, "vs_best_fixed": value - fixed, "agreement": agree,
                    "trees": trees})
    return out


def describe_rules(scores: np.ndarray, rules: Sequence[str], strata: Sequence[str]) -> dict[str, Any]:
    """What a ``(regions, rules, draws)`` table says rule by rule, shared by the env study and the track study:
    each rule's mean and its share of regions where it is best (on the mean of all draws); for each merging rule
    (bare or ``rule:NAME``), the share of regions where it hurts or helps against keep-all; and item 2's yardstick,
    one commit's noise (SD of one rule on one region between draws 0 and 1) against the gap a learner must see
    (per region, the best rule's draw-mean over the runner-up's), both in reward units."""
    mean = scores.mean(axis=2)
    best = _argmax(mean)
    families = list(dict.fromkeys(strata))
    per_rule = {rule: {"mean": float(mean[:, i].mean()), "best_share": float(np.mean(best == i)),
                       "per_family": {f: float(mean[[s == f for s in strata], i].mean()) for f in families}}
                for i, rule in enumerate(rules)}
    merging = {}
    if "keep-all" in rules:
        keep = mean[:, list(rules).index("keep-all")]
        for rule in (r for m in MERGING_RULES for r in (m, f"rule:{m}") if r in rules):
            d = mean[:, list(rules).index(rule)] - keep
            merging[rule] = {"hurts": float(np.mean(d < -TIE)), "helps": float(np.mean(d > TIE)),
                             "equal": float(np.mean(np.abs(d) <= TIE)), "worst": float(d.min()),
                             "best": float(d.max())}
    ranked = np.sort(mean, axis=1)
    return {"per_rule": per_rule, "merging_vs_keep_all": merging,
            "commit_sd": float(np.std(scores[:, :, 0] - scores[:, :, 1]) / np.sqrt(2)),
            "runner_up_gap": float(np.mean(ranked[:, -1] - ranked[:, -2]))}


EPISODE_FIELDS: tuple[str, ...] = ("family", "variation", "in_family", "before", "after")  # a record's episode


def variation_folds(records: Sequence[Mapping[str, Any]], regions: Sequence[tuple[str, int]], rules: Sequence[str],
                    draws: int, seed: int) -> tuple[np.ndarray, dict[str, Any]]:
    """``(regions, rules, 2)`` table of fold rewards: each region's episodes (those of every draw) split into 2
    disjoint halves by variation (:func:`~dreamer_gym.studies.folds.fold_map`: per family, the variations in a
    seeded order dealt round-robin; one split per region, the same for every rule), and a fold's reward the id's
    formula on the fold's episodes of every draw (:func:`~dreamer_gym.studies.folds.episode_reward`), plus the
    record's region-level terms (invalid-call penalties) as they are. Each record's episodes must reproduce its
    commit reward (``score_delta + size``), which :func:`~dreamer_gym.studies.folds.fold_rewards` checks.

    Also returns what the split holds: the mean number of episodes and of distinct variations per fold."""
    index = {(r["family"], int(r["bank"]), int(r["draw"]), r["rule"]): r for r in records}
    table, episodes, variations = np.zeros((len(regions), len(rules), 2)), np.zeros(2), np.zeros(2)
    for i, (family, bank) in enumerate(regions):
        recs = {(rule, d): index[(family, bank, d, rule)] for rule in rules for d in range(draws)}
        if any(len(e) < len(EPISODE_FIELDS) for r in recs.values() for e in r["episodes"]):
            raise ConfigError(f"region {bank}/{family}: its records lack the episodes' scores (a study written before "
                              "they were recorded); `fold_by` variation needs them: rerun the study")
        folds = fold_map([(e[0], int(e[1])) for r in recs.values() for e in r["episodes"]], 2, seed, carry=True)
        for j, rule in enumerate(rules):
            pooled, sizes, terms = [], [], []
            for d in range(draws):
                r = recs[(rule, d)]
                eps = [dict(zip(EPISODE_FIELDS, e)) for e in r["episodes"]]
                commit = r["score_delta"] + r["size"]
                fold_rewards({**r, "episodes": eps, "reward": commit, "reward_components": {"size": r["size"]}},
                             folds, 2)  # the id's formula reproduces the commit reward
                pooled += eps
                sizes.append(r["size"])
                terms.append(r["reward"] - commit)
            table[i, j] = [episode_reward([e for e in pooled if folds[(e["family"], int(e["variation"]))] == k],
                                          float(np.mean(sizes))) + float(np.mean(terms)) for k in range(2)]
        if np.isnan(table[i]).any():
            raise ConfigError(f"region {bank}/{family}: its episodes hold a single variation, so one fold is empty; "
                              "`fold_by` variation needs more episodes a commit (eval_in_family) or more draws")
        counts = [sum(folds[(e[0], int(e[1]))] == k for d in range(draws) for e in recs[(rules[0], d)]["episodes"])
                  for k in range(2)]
        episodes += np.array(counts) / len(regions)
        variations += np.bincount(list(folds.values()), minlength=2) / len(regions)
    return table, {"episodes_per_fold": episodes.tolist(), "variations_per_fold": variations.tolist()}


def draw_noise(records: Sequence[Mapping[str, Any]], regions: Sequence[tuple[str, int]], rules: Sequence[str],
               draws: int) -> dict[str, Any]:
    """How far two draws are from independent: the mean |draw 0 - draw 1| of one rule on one region, and the share
    of draw 0's in-family episodes also in draw 1 (None with one draw)."""
    if draws < 2:
        return {"draw_noise": None, "draw_overlap": None}
    scores = score_table(records, regions, rules, draws)
    episodes = {(r["family"], r["bank"], r["draw"]): [tuple(e[:2]) for e in r["episodes"]
                                                        if (e[2] if len(e) > 2 else e[0] == r["family"])]
                for r in records if r["rule"] == rules[0]}
    overlap = [len(set(episodes[(f, b, 0)]) & set(episodes[(f, b, 1)])) / max(len(episodes[(f, b, 0)]), 1)
               for f, b in regions]
    return {"draw_noise": float(np.mean(np.abs(scores[:, :, 0] - scores[:, :, 1]))),
            "draw_overlap": float(np.mean(overlap))}
