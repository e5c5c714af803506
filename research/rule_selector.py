"""A learned rule selector: fit on training windows, play on held-out windows (issue 31, item 4's "what would a
learner need").

The simplest learner that conditions on a region: a classification tree (depth 1 or 2, the learnability study's
``fit_tree``) from visible window features to the rule that scored best on that *training* window, then played
greedily on *held-out* windows. Because the rules are deterministic and the held-out record holds every rule's
reward on every held-out window and draw, the selector's held-out reward is exact, not re-simulated. Paired with
the best constant (chosen on the training windows) and dedupe on the same held-out windows and draws.

    python -m research.rule_selector TRAIN/learnability.json HELDOUT/learnability.json --pool scienceworld-windows-r3-v0
"""
from __future__ import annotations

import argparse
import json
from typing import Any

import numpy as np

from dreamer_gym.pool import BankPool, load_pool
from dreamer_gym.studies.learnability import FEATURES, fit_tree, predict_tree, score_table, describe_tree
from research.window_evidence import EVIDENCE, HIDDEN, window_evidence


def features(record: dict[str, Any], pool: BankPool) -> tuple[np.ndarray, list[str]]:
    """Visible features of every studied window: the study's region features and the visible window evidence."""
    regions = [(r["family"], r["bank"]) for r in record["regions"]]
    visible = [i for i, name in enumerate(EVIDENCE) if name not in HIDDEN]
    base = np.array([[r[f] for f in FEATURES] for r in record["regions"]], dtype=float)
    ev = np.array([window_evidence(pool, k, b) for k, b in regions], dtype=float)
    return np.hstack([base, ev[:, visible]]), [*FEATURES, *(EVIDENCE[i] for i in visible)]


def _ci(d: np.ndarray, rng: np.random.Generator, n: int = 4000) -> list[float]:
    boots = d[rng.integers(len(d), size=(n, len(d)))].mean(axis=1)
    return [float(d.mean()), float(np.percentile(boots, 2.5)), float(np.percentile(boots, 97.5))]


def evaluate(train: dict[str, Any], heldout: dict[str, Any], pool: BankPool, seed: int = 0) -> list[dict[str, Any]]:
    rules = list(train["config"]["rules"])
    if list(heldout["config"]["rules"]) != rules:
        raise ValueError("the two records must study the same rules in the same order")
    x_train, names = features(train, pool)
    x_held, _ = features(heldout, pool)
    s_train = score_table(train["records"], [(r["family"], r["bank"]) for r in train["regions"]], rules,
                          train["config"]["draws"]).mean(axis=2)
    s_held = score_table(heldout["records"], [(r["family"], r["bank"]) for r in heldout["regions"]], rules,
                         heldout["config"]["draws"])  # (regions, rules, draws)
    constant = int(np.argmax(s_train.mean(axis=0)))
    dedupe = rules.index("dedupe")
    best = s_held.max(axis=1)  # per region and draw
    rng = np.random.default_rng(seed)
    out = []
    models = [(f"stump on {n}", [j], 1) for j, n in enumerate(names)] + [("tree, depth 2", list(range(len(names))), 2)]
    for name, cols, depth in models:
        tree = fit_tree(x_train[:, cols], np.argmax(s_train, axis=1), depth)
        played = predict_tree(tree, x_held[:, cols])
        own = s_held[np.arange(len(played)), played, :]  # (regions, draws)
        out.append({
            "model": name, "rule": describe_tree(tree, [names[c] for c in cols], rules),
            "heldout": float(own.mean()), "constant": rules[constant], "constant_heldout": float(s_held[:, constant].mean()),
            "minus_constant": _ci((own - s_held[:, constant, :]).mean(axis=1), rng),
            "minus_dedupe": _ci((own - s_held[:, dedupe, :]).mean(axis=1), rng),
            "agreement": float((own >= best - 1e-9).mean()),
            "agreement_constant": float((s_held[:, constant, :] >= best - 1e-9).mean()),
            "distinct_rules_played": len(set(played.tolist())),
        })
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("train")
    parser.add_argument("heldout")
    parser.add_argument("--pool", default="scienceworld-windows-r3-v0")
    args = parser.parse_args()
    rows = evaluate(json.load(open(args.train)), json.load(open(args.heldout)), load_pool(args.pool))
    for r in sorted(rows, key=lambda r: -r["heldout"]):
        m, d = r["minus_constant"], r["minus_dedupe"]
        print(f"{r['model']:>32} {r['heldout']:+.4f}  - {r['constant']} {m[0]:+.4f} [{m[1]:+.4f}, {m[2]:+.4f}]"
              f"  - dedupe {d[0]:+.4f} [{d[1]:+.4f}, {d[2]:+.4f}]  agreement {r['agreement']:.2f}"
              f" (constant {r['agreement_constant']:.2f})  rules {r['distinct_rules_played']}  {r['rule']}")


if __name__ == "__main__":
    main()
