"""The learnability study: does the best consolidation depend on the region, beyond selection noise?

For each region (family x bank) of an env id, every rule of a family of fixed, whole-region rules (:data:`RULES`:
keep-all, empty, dedupe, consensus, merge-all, ...) is committed under ``draws`` independent episode draws (the
same region reset with different seeds: different evaluation episodes; every rule of one draw shares the reset
seed, so rules are compared on the same episodes). The unit is the commit reward ``info["return"]``, what a
learner is paid. Then, **cross-fitted** (choose on some draws, score on the draw left out, average over folds):

* the **best constant**: the one rule with the highest mean over regions (on the other draws: the best fixed
  rule, :mod:`dreamer_gym.studies.fixed_referee`);
* the **family switch** (family pools): per family, the rule with the highest mean over that family's regions,
  a reference row with its paired CI against the best constant (``family_switch``);
* the **best choice**: per region, the rule with the highest mean on that region (a lookup table, the most
  input-dependent policy the rule family allows);
* the **gap** (choice - constant), paired over regions, with a 95% bootstrap CI that resamples regions within
  each family and redoes both selections on every resample (so the constant's own selection noise counts too).

Choosing and scoring on the same episodes would count selection noise as learnability: with rules whose true
rewards are equal, the in-sample per-region maximum still beats every constant. The in-sample ("hindsight")
values are reported beside the cross-fitted ones to show how much that is.

Also: the share of regions per best rule, the share where each merging rule hurts or helps against keep-all,
and which region features predict the best rule (a one-split stump per feature and a depth-2 tree on all,
fitted on the selection draws' best rules and scored on the held-out draw, like the choice itself).

``summarise`` adds ``best_fixed`` and ``family_switch`` (:func:`~dreamer_gym.studies.fixed_referee.referee`) to the
summary.
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dreamer_gym.consolidators import run_episode
from dreamer_gym.consolidators.op_rule import OP_RULES, make_rule
from dreamer_gym.consolidators.rule_selector import FEATURES, predict_tree, region_features
from dreamer_gym.errors import ConfigError
from dreamer_gym.memory.regions import parse_window
from dreamer_gym.stats import interval, stratified_indices
from dreamer_gym.studies.fixed_referee import TIE, best_fixed_other_fold, describe_switch, other_folds, referee
from dreamer_gym.studies.fixed_referee import argmax_first as _argmax
from dreamer_gym.studies.validity import make_study_env

# Registered deterministic consolidators that are whole-region rules too (dreamer_gym.consolidators.fixed)
REGISTERED_RULES: dict[str, str] = {
    "keep-all": "every entry kept verbatim (reward 0 before the size term)",
    "empty": "nothing kept (the floor)",
    "dedupe": "near-duplicates (token Jaccard >= 0.8) dropped, the latest copy kept",
    "consensus": "the procedures merged into their consensus, everything else dropped",
}
RULES: tuple[str, ...] = (*REGISTERED_RULES, *OP_RULES)
MERGING_RULES: tuple[str, ...] = ("merge-all", "consensus", "merge-procedures", "merge-procedures-keep-facts",
                                  "abstract-procedures")


@dataclass(frozen=True)
class LearnabilityConfig:
    """The study's settings; ``dreamer-gym learnability`` generates its flags from these fields."""

    env_id: str = field(default="MemoryConsolidation-ScienceWorld-v1", metadata={"help": "env id"})
    families: tuple[str, ...] | None = field(default=None, metadata={"help": "None: every family in the pool"})
    banks: tuple[int, ...] | None = field(default=None, metadata={"help": "None: every bank in the pool"})
    rules: tuple[str, ...] = field(default=RULES, metadata={
        "help": "the rule family: op rules of the study or registered deterministic consolidators (a trained "
                "policy too, e.g. oplevel:runs/x/checkpoint-20, to see where it stands among the rules)"})
    draws: int = field(default=2, metadata={
        "help": "episode draws per region (each region and draw its own reset seed); at least 2 to cross-fit"})
    seed: int = field(default=0, metadata={"help": "the reset seeds' base and the bootstrap's seed"})
    bootstrap_resamples: int = field(default=2000, metadata={"help": "resamples of the gap's bootstrap CI"})
    workers: int = field(default=0, metadata={"help": "evaluation worker processes (0 = in-process)"})
    env_kwargs: dict[str, Any] = field(default_factory=dict, metadata={
        "help": "env settings over the id's (e.g. a pool with window regions: {\"pool\": \"scienceworld-windows-v0\", "
                "\"pool_hash\": null}); one that changes the reward makes the study not comparable to the id"})
    max_regions: int | None = field(default=None, metadata={
        "help": "study a seeded sample of this many regions (None: every region the config names)"})

    def __post_init__(self) -> None:
        if self.max_regions is not None and self.max_regions < 2:
            raise ConfigError(f"Expected `max_regions` >= 2 or None, got {self.max_regions}")
        if self.draws < 2:
            raise ConfigError(f"Expected `draws` >= 2 (one draw chooses, another scores), got {self.draws}")
        if len(self.rules) < 2 or len(set(self.rules)) != len(self.rules):
            raise ConfigError(f"Expected `rules` to be at least 2 distinct names, got {list(self.rules)}")
        if self.bootstrap_resamples < 1:
            raise ConfigError(f"Expected `bootstrap_resamples` to be a positive int, got {self.bootstrap_resamples}")
        from dreamer_gym.consolidators import consolidator_names
        from dreamer_gym.consolidators.registry import split_name

        known = set(OP_RULES) | set(consolidator_names())
        unknown = [r for r in self.rules if split_name(r)[0] not in known]  # "oplevel:CHECKPOINT": a trained policy
        if unknown:
            raise ConfigError(f"Unknown rule(s) {unknown} in `rules`; the study's rules are {list(RULES)} (any "
                              "registered deterministic consolidator works too)")

    def reset_seed(self, draw: int, bank: int) -> int:
        """The reset seed of one draw on one bank's regions: every rule of the draw shares it (paired), and
        each bank gets its own, so regions of a family do not share their evaluation episodes."""
        return int(np.random.SeedSequence([self.seed, draw, bank]).generate_state(1)[0])


def study_regions(pool: Any, config: LearnabilityConfig) -> list[tuple[str, int]]:
    """``(region key, bank)`` of every region the config names that the pool holds: on a pool cut by family
    the key is the family; on a window pool every ``window:A-B`` of the banks (``families`` does not apply).
    With ``max_regions``, a sample drawn from ``seed``, in pool order."""
    banks = config.banks if config.banks is not None else tuple(range(len(pool.banks)))
    if pool.region_scheme.kind == "window":
        if config.families:
            raise ConfigError("`families` selects regions of a pool cut by family; this pool's regions are time "
                              "windows: drop `families` (or use `banks`, `max_regions`)")
        regions = [(key, b) for b in banks for key in pool.region_keys(b)]
    else:
        families = config.families or pool.families
        regions = [(f, b) for f in families for b in banks if any(e.family == f for e in pool.banks[b])]
    if not regions:
        raise ConfigError(f"No region: no bank of {list(banks)} holds a region the config names; check "
                          "`families` and `banks` against the pool")
    if config.max_regions is not None and len(regions) > config.max_regions:
        picked = np.random.default_rng(config.seed).choice(len(regions), size=config.max_regions, replace=False)
        regions = [regions[i] for i in sorted(picked)]
    return regions


def collect(config: LearnabilityConfig, progress: bool = True) -> dict[str, Any]:
    """Every rule on every region under every draw: one record per (family, bank, draw, rule)."""
    from tqdm.auto import tqdm

    env, comparable = make_study_env(config.env_id, config.workers, dict(config.env_kwargs))
    try:
        pool = env.unwrapped.pool
        regions = study_regions(pool, config)
        jobs = [(f, b, d, r) for f, b in regions for d in range(config.draws) for r in config.rules]
        records, features = [], {}
        for family, bank, draw, rule in tqdm(jobs, desc="learnability", disable=not progress):
            options = {"region": family, "bank": bank}  # a family pool's key is its family
            info = run_episode(env, make_rule(rule), seed=config.reset_seed(draw, bank), options=options)
            if (family, bank) not in features:
                features[(family, bank)] = region_features(env.reset(seed=0, options=options)[1]["region"])
            records.append({"family": family, "bank": bank, "draw": draw, "rule": rule, "reward": info["return"],
                            "in_family": info["score_delta_parts"]["in_family"],
                            "size": info["reward_components"]["size"], "tokens": info["size_after"]["tokens"],
                            "episodes": [[e["family"], e["variation"], e["in_family"]] for e in info["episodes"]]})
        cfg = env.unwrapped.config
        setting = {"env_id": config.env_id, "comparable": comparable, "split": cfg.split, "pool_hash": pool.hash,
                   "banks": len(pool.banks), "eval_in_family": int(cfg.eval_in_family),
                   "eval_other": int(cfg.eval_other), "size_coef": float(cfg.size_coef)}
        return {"records": records, "setting": setting,
                "regions": [{"family": f, "bank": b, **features[(f, b)]} for f, b in regions]}
    finally:
        env.close()


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


def summarise(data: Mapping[str, Any], config: LearnabilityConfig) -> dict[str, Any]:
    regions = [(r["family"], r["bank"]) for r in data["regions"]]
    rules = list(config.rules)
    scores = score_table(data["records"], regions, rules, config.draws)
    fit = crossfit(scores)
    # the bootstrap's strata: a family pool's regions by family; a window pool's by bank (keys repeat across banks)
    windows = any(parse_window(f) is not None for f, _ in regions)
    strata = [f if parse_window(f) is None else f"bank {b}" for f, b in regions]
    lo, hi = bootstrap_gap(scores, strata, config.bootstrap_resamples, config.seed)
    table = describe_rules(scores, rules, strata)
    best = _argmax(scores.mean(axis=2))  # per region, on every draw: the share table's label
    x = np.array([[r[f] for f in FEATURES] for r in data["regions"]], dtype=float)
    noise = float(np.mean(np.abs(scores[:, :, 0] - scores[:, :, 1])))
    episodes = {(r["family"], r["bank"], r["draw"]): [tuple(e[:2]) for e in r["episodes"]
                                                        if (e[2] if len(e) > 2 else e[0] == r["family"])]
                for r in data["records"] if r["rule"] == rules[0]}
    overlap = float(np.mean([len(set(episodes[(f, b, 0)]) & set(episodes[(f, b, 1)])) / max(len(episodes[(f, b, 0)]), 1)
                             for f, b in regions]))
    return {
        "setting": data["setting"], "regions": len(regions), "families": list(dict.fromkeys(strata)), "rules": rules,
        "draws": config.draws, "best_constant": rules[fit["constant_per_fold"][0]],
        "constant_per_fold": [rules[c] for c in fit["constant_per_fold"]],
        "constant": fit["constant_mean"], "choice": fit["choice_mean"], "gap": fit["gap_mean"], "gap_ci95": [lo, hi],
        "gap_ci_excludes_0": bool(lo > 0 or hi < 0),
        "agreement": {"constant": fit["agreement_constant"], "choice": fit["agreement_choice"]},
        "hindsight": {"constant": fit["hindsight_constant"], "choice": fit["hindsight_choice"],
                      "gap": fit["hindsight_gap"]},
        "draw_noise": noise, "draw_overlap": overlap, **table,
        "feature_policies": feature_policies(scores, x, FEATURES, rules),  # cross-fitted on the same draws
        # the fixed reference rows chosen on other draws; a window pool's regions have no one family to switch on
        **referee(scores, rules, None if windows else [f for f, _ in regions], strata, config.bootstrap_resamples,
                  config.seed),
        "per_region": [{"family": f, "bank": b, "best": rules[int(best[i])], "constant": float(fit["constant"][i]),
                        "choice": float(fit["choice"][i]), "gap": float(fit["gap"][i]),
                        "choice_per_fold": [rules[c[i]] for c in fit["choice_per_fold"]]}
                       for i, (f, b) in enumerate(regions)],
    }


def to_markdown(summary: Mapping[str, Any]) -> str:
    s = summary["setting"]
    lo, hi = summary["gap_ci95"]
    windows = any(str(f).startswith("bank ") for f in summary["families"])
    strata = f"{len(summary['families'])} {'banks of time windows' if windows else 'families'}"
    lines = [
        f"Env `{s['env_id']}` ({'the registered id as it runs' if s['comparable'] else '**not comparable**'}; pool "
        f"`{s['pool_hash']}`), {s['split'].upper()} split; {summary['regions']} regions ({strata}); {len(summary['rules'])} rules x {summary['draws']} episode draws; {s['eval_in_family']} "
        f"in-family + {s['eval_other']} other-family episodes per commit; unit: the commit reward.", "",
        "| | reward (cross-fitted) | in hindsight (same draws) |", "|---|---|---|",
        f"| best constant (`{summary['best_constant']}`) | {summary['constant']:+.4f} | "
        f"{summary['hindsight']['constant']:+.4f} |",
        f"| best per-region choice | {summary['choice']:+.4f} | {summary['hindsight']['choice']:+.4f} |",
        f"| **gap** (choice - constant) | **{summary['gap']:+.4f}** [{lo:+.4f}, {hi:+.4f}] | "
        f"{summary['hindsight']['gap']:+.4f} |", "",
        f"95% CI: regions resampled within {'banks' if windows else 'families'}, both selections redone "
        f"({'excludes' if summary['gap_ci_excludes_0'] else 'includes'} 0). "
        f"Mean |draw 0 - draw 1| of one rule on one region: {summary['draw_noise']:.4f}; in-family episodes of draw 0 "
        f"also in draw 1: {summary['draw_overlap']:.2f}. One commit's noise (SD between draws): "
        f"{summary.get('commit_sd', float('nan')):.4f}, against a mean gap of "
        f"{summary.get('runner_up_gap', float('nan')):.4f} between a region's best rule and its runner-up. "
        f"Agreement with the held-out "
        f"draw's best rule: constant {summary['agreement']['constant']:.2f}, "
        f"choice {summary['agreement']['choice']:.2f}.",
        "", "| rule | mean reward | share of regions where best |", "|---|---|---|",
    ]
    for rule, row in summary["per_rule"].items():
        lines.append(f"| {rule} | {row['mean']:+.4f} | {row['best_share']:.2f} |")
    if summary["merging_vs_keep_all"]:
        lines += ["", "| merging rule vs keep-all | hurts | helps | equal | worst | best |",
                  "|---|---|---|---|---|---|"]
        for rule, m in summary["merging_vs_keep_all"].items():
            lines.append(f"| {rule} | {m['hurts']:.2f} | {m['helps']:.2f} | {m['equal']:.2f} | {m['worst']:+.4f} | "
                         f"{m['best']:+.4f} |")
    lines += ["", *fixed_rows_markdown(summary), "",
              "| policy reading features (cross-fitted) | reward | - best fixed | agreement | fitted on fold 0 |",
              "|---|---|---|---|---|"]
    for p in summary["feature_policies"]:
        lines.append(f"| {p['model']} | {p['value']:+.4f} | {p.get('vs_best_fixed', float('nan')):+.4f} | "
                     f"{p['agreement']:.2f} | {p['trees'][0]} |")
    return "\n".join(lines) + "\n"


def fixed_rows_markdown(summary: Mapping[str, Any]) -> list[str]:
    """The reference rows chosen on other folds (best fixed rule, family switch) as a table, shared by the env
    study and the track study; empty for a summary written before they existed."""
    fixed, switch = summary.get("best_fixed"), summary.get("family_switch")
    if fixed is None:
        return []
    per_fold = ", ".join(dict.fromkeys(fixed["per_fold"]))
    lines = ["| fixed reference row (chosen on the other folds) | held-out reward | - best fixed [95% CI] | "
             "in sample |", "|---|---|---|---|",
             f"| best fixed rule (`{per_fold}`) | {fixed['value']:+.4f} | | {fixed['in_sample']['value']:+.4f} "
             f"(`{fixed['in_sample']['rule']}`) |"]
    if switch is not None:
        d = switch["vs_best_fixed"]
        lo, hi = d["ci95"]
        lines.append(f"| family switch (fold 0: {describe_switch(switch['per_fold'][0], fixed['per_fold'][0])}) | "
                     f"{switch['value']:+.4f} | {d['difference']:+.4f} [{lo:+.4f}, {hi:+.4f}] | "
                     f"{switch['in_sample']:+.4f} |")
    return lines


def run(config: LearnabilityConfig, out_dir: str | Path | None = None, progress: bool = True) -> dict[str, Any]:
    """Collect and summarise; with ``out_dir``, write ``learnability.json`` (config, summary, records) and
    ``learnability.md`` there."""
    data = collect(config, progress=progress)
    summary = summarise(data, config)
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        (out / "learnability.json").write_text(json.dumps(
            {"config": asdict(config), "summary": summary, "regions": data["regions"], "records": data["records"]},
            indent=1))
        (out / "learnability.md").write_text(to_markdown(summary))
    return summary
