"""A trained policy against the fixed rules on the same held-out regions and episode draws (issue 31, item 4).

Reads two ``dreamer-gym learnability`` records run with the same ``--seed``, ``--banks``, ``--max-regions`` and
``--env-kwargs`` (so region r, draw d has the same evaluation episodes in both): one with the fixed rules, one
with the policies (``oplevel:CHECKPOINT``) among its rules. Prints, per policy, its mean reward, the paired
differences to the best constant and to dedupe with 95% bootstrap CIs over regions, and its agreement with the
cross-fitted best rule (chosen on one draw, scored on the other) against the best constant's.

    python -m research.policy_vs_rules RULES/learnability.json POLICIES/learnability.json
"""
from __future__ import annotations

import argparse
import json

import numpy as np

TIE = 1e-9


def _ci(diffs: np.ndarray, rng: np.random.Generator, resamples: int = 4000) -> tuple[float, float, float]:
    boots = [rng.choice(diffs, len(diffs)).mean() for _ in range(resamples)]
    return float(diffs.mean()), float(np.percentile(boots, 2.5)), float(np.percentile(boots, 97.5))


def compare(rules: dict, policies: dict, seed: int = 0) -> list[dict]:
    """One row per policy (see the module docstring)."""
    recs = rules["records"] + [r for r in policies["records"] if r["rule"] not in rules["config"]["rules"]]
    index = {(r["family"], r["bank"], r["draw"], r["rule"]): r["reward"] for r in recs}
    regions = [(r["family"], r["bank"]) for r in rules["regions"]]
    fixed = list(rules["config"]["rules"])
    scores = np.array([[[index[(k, b, d, r)] for d in (0, 1)] for r in fixed] for k, b in regions])
    const = int(np.argmax(scores.mean(axis=(0, 2))))
    rng = np.random.default_rng(seed)
    rows = []
    for policy in (p for p in policies["config"]["rules"] if p not in fixed):
        own = np.array([[index[(k, b, d, policy)] for d in (0, 1)] for k, b in regions])
        row = {"policy": policy, "mean": float(own.mean()), "regions": len(regions)}
        for name, j in (("best_constant", const), ("dedupe", fixed.index("dedupe") if "dedupe" in fixed else None)):
            if j is not None:
                row[f"minus_{name}"] = _ci((own - scores[:, j, :]).mean(axis=1), rng)
        agree_p, agree_c = [], []
        for d in (0, 1):
            best = np.argmax(scores[:, :, 1 - d], axis=1)
            target = scores[np.arange(len(regions)), best, d]
            agree_p.append(np.abs(own[:, d] - target) <= TIE)
            agree_c.append(np.abs(scores[:, const, d] - target) <= TIE)
        row.update(best_constant=fixed[const], agreement=float(np.mean(agree_p)),
                   agreement_constant=float(np.mean(agree_c)))
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("rules", help="learnability.json of the fixed rules")
    parser.add_argument("policies", help="learnability.json with the policies among its rules")
    args = parser.parse_args()
    rows = compare(json.load(open(args.rules)), json.load(open(args.policies)))
    print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
