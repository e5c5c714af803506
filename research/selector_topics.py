"""Would the frozen selector have been expected to beat the constant on topics it never saw? Leave one training
topic out (issue 31, item 3's DEV check, on training data only).

The training id's families come from 5 ScienceWorld topics (measurement, electricity, classification, grow,
chemistry). For each topic: fit on the regions of the other topics, play on the held-out topic's regions, and
compare with the best constant of the other topics, on the held-out regions' rewards (the study's draws averaged).
Two learners, both depth-2 trees on the study's region features:

* ``label tree``: the frozen selector's method (``fit_tree``: Gini on each region's best rule, the majority label
  per leaf), which counts a region won by 0.001 like one won by 0.3;
* ``reward tree``: each leaf plays the rule with the highest summed reward over its regions, and splits are chosen
  to maximise that sum (a policy tree: what a contextual-bandit learner optimises).

No held-out track episode is read: this is the design-time check that should precede the single scoring.

    python -m research.selector_topics research/results/issue31/learnability-train-e20/learnability.json.gz
"""
from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np

from dreamer_gym.studies.learnability import FEATURES, _argmax, fit_tree, predict_tree, score_table
from dreamer_gym.suites.scienceworld import TOPICS


def fit_reward_tree(x: np.ndarray, rewards: np.ndarray, depth: int) -> dict[str, Any]:
    """A tree whose leaves play the rule with the highest summed reward and whose splits maximise that sum."""
    leaf = {"label": int(np.argmax(rewards.sum(axis=0)))}
    best = (float(rewards.sum(axis=0).max()) + 1e-12, None, None)
    if depth == 0 or len(x) < 2:
        return leaf
    for j in range(x.shape[1]):
        cuts = np.unique(x[:, j])
        for t in (cuts[:-1] + cuts[1:]) / 2:
            left = x[:, j] <= t
            value = _tree_value(x[left], rewards[left], depth - 1) + _tree_value(x[~left], rewards[~left], depth - 1)
            if value > best[0]:
                best = (value, j, float(t))
    if best[1] is None:
        return leaf
    _, j, t = best
    left = x[:, j] <= t
    return {"feature": j, "threshold": t, "left": fit_reward_tree(x[left], rewards[left], depth - 1),
            "right": fit_reward_tree(x[~left], rewards[~left], depth - 1)}


def _tree_value(x: np.ndarray, rewards: np.ndarray, depth: int) -> float:
    if len(x) == 0:
        return 0.0
    tree = fit_reward_tree(x, rewards, depth)
    return float(rewards[np.arange(len(x)), predict_tree(tree, x)].sum())


def leave_one_topic_out(study: dict[str, Any], depth: int = 2) -> dict[str, Any]:
    rules = list(study["config"]["rules"])
    regions = [(r["family"], r["bank"]) for r in study["regions"]]
    names = [f for f in FEATURES if f in study["regions"][0]]
    x = np.array([[r[f] for f in names] for r in study["regions"]], dtype=float)
    rewards = score_table(study["records"], regions, rules, study["config"]["draws"]).mean(axis=2)
    topics = np.array([TOPICS[f] for f, _ in regions])
    played = {"constant": np.zeros(len(regions), dtype=int), "label tree": np.zeros(len(regions), dtype=int),
              "reward tree": np.zeros(len(regions), dtype=int)}
    for topic in dict.fromkeys(topics):
        train, held = topics != topic, topics == topic
        played["constant"][held] = int(np.argmax(rewards[train].mean(axis=0)))
        played["label tree"][held] = predict_tree(fit_tree(x[train], _argmax(rewards[train]), depth), x[held])
        played["reward tree"][held] = predict_tree(fit_reward_tree(x[train], rewards[train], depth), x[held])
    rows = np.arange(len(regions))
    value = {k: rewards[rows, v] for k, v in played.items()}
    rng = np.random.default_rng(0)
    out = {"regions": len(regions), "topics": sorted(set(topics)), "rules": rules}
    for k in ("label tree", "reward tree"):
        d = value[k] - value["constant"]
        boots = [d[rng.integers(len(d), size=len(d))].mean() for _ in range(4000)]
        out[k] = {"value": float(value[k].mean()), "minus_constant": float(d.mean()),
                  "ci95": [float(np.percentile(boots, 2.5)), float(np.percentile(boots, 97.5))],
                  "plays": {rules[i]: float(np.mean(played[k] == i)) for i in np.unique(played[k])}}
    out["constant"] = {"value": float(value["constant"].mean()),
                       "plays": {rules[i]: float(np.mean(played["constant"] == i)) for i in np.unique(played["constant"])}}
    full_label = fit_tree(x, _argmax(rewards), depth)
    full_reward = fit_reward_tree(x, rewards, depth)
    from dreamer_gym.studies.learnability import describe_tree

    out["fitted_on_all"] = {"label tree": describe_tree(full_label, names, rules),
                            "reward tree": describe_tree(full_reward, names, rules)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("study", type=Path)
    parser.add_argument("--depth", type=int, default=2)
    args = parser.parse_args()
    raw = gzip.decompress(args.study.read_bytes()) if args.study.suffix == ".gz" else args.study.read_bytes()
    print(json.dumps(leave_one_topic_out(json.loads(raw), args.depth), indent=1))


if __name__ == "__main__":
    main()
