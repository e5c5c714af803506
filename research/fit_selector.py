"""Fit and freeze a rule selector (``selector:PATH``) on a learnability study's records (issue 31, item 3).

The study records, for every region of its env id and every rule, the commit reward under two episode draws.
Here each region's label is the rule with the best mean over the draws, the inputs are the region features the
study recorded (what the consolidator recomputes at play time), and a depth-``--depth`` tree (the study's
``fit_tree``) is fitted on all of them and written as JSON. The selector is then frozen: scored once on a held-out
track with ``dreamer-gym leaderboard submit --consolidator selector:PATH``.

    python -m research.fit_selector research/results/issue31/learnability-train-e20/learnability.json.gz \
        --out baselines/rule-selector/scienceworld-v1-e20.json            # and --seed 0..4: bootstrap resamples
"""
from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np

from dreamer_gym.studies.learnability import FEATURES, _argmax, describe_tree, feature_policies, fit_tree, score_table


def fit(study: dict[str, Any], depth: int, features: list[str] | None = None, seed: int | None = None) -> dict[str, Any]:
    """The frozen selector of one study: the tree, what it was fitted on and its cross-fitted value there. With
    ``seed``, the tree is fitted on a bootstrap resample of the study's regions (drawn within families, seeded):
    the learner's seeds, to show how much the selector depends on which training regions it saw."""
    rules = list(study["config"]["rules"])
    names = features or [f for f in FEATURES if f in study["regions"][0]]  # an older study recorded fewer
    regions = [(r["family"], r["bank"]) for r in study["regions"]]
    scores = score_table(study["records"], regions, rules, study["config"]["draws"])
    x = np.array([[r[f] for f in names] for r in study["regions"]], dtype=float)
    labels = _argmax(scores.mean(axis=2))
    rows = np.arange(len(regions))
    if seed is not None:
        rng = np.random.default_rng(seed)
        families = [f for f, _ in regions]
        rows = np.concatenate([rng.choice(np.flatnonzero(np.asarray(families) == f), size=families.count(f))
                               for f in dict.fromkeys(families)])
    tree = fit_tree(x[rows], labels[rows], depth)
    crossfitted = next(p for p in feature_policies(scores, x, names, rules) if p["model"].startswith("tree"))
    s = study["summary"]
    return {"kind": "rule-selector", "features": names, "rules": rules, "tree": tree, "depth": depth,
            "reads": describe_tree(tree, names, rules),
            "fitted_on": {"env_id": study["config"]["env_id"], "env_kwargs": study["config"].get("env_kwargs", {}),
                          "pool_hash": s["setting"]["pool_hash"], "split": s["setting"]["split"],
                          "eval_in_family": s["setting"]["eval_in_family"], "regions": len(regions),
                          "draws": study["config"]["draws"], "bootstrap_seed": seed},
            "on_its_study": {"best_constant": s["best_constant"], "constant": s["constant"],
                             "choice": s["choice"], "gap": s["gap"], "gap_ci95": s["gap_ci95"],
                             "depth2_tree_crossfitted": crossfitted["value"]}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("study", type=Path, help="a learnability.json (or .json.gz)")
    parser.add_argument("--depth", type=int, default=2)
    parser.add_argument("--seed", type=int, default=None, help="fit on a bootstrap resample of the regions (a seed)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    raw = gzip.decompress(args.study.read_bytes()) if args.study.suffix == ".gz" else args.study.read_bytes()
    selector = fit(json.loads(raw), args.depth, seed=args.seed)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(selector, indent=1) + "\n")
    print(f"{selector['reads']}\non its study: {selector['on_its_study']}\nwrote {args.out}")


if __name__ == "__main__":
    main()
