"""research.policy_vs_rules on hand-made records: a policy that plays the per-region best rule agrees with it
everywhere and beats the constant; one that copies the constant agrees where the constant does."""
from __future__ import annotations

import pytest

from research.policy_vs_rules import compare


def _records(rewards: dict[str, list[list[float]]]) -> list[dict]:
    return [{"family": f"window:{i}-{i + 3}", "bank": 0, "draw": d, "rule": rule, "reward": values[i][d]}
            for rule, values in rewards.items() for i in range(len(values)) for d in (0, 1)]


def test_a_policy_that_plays_each_regions_best_rule_agrees_and_wins() -> None:
    fixed = {"keep-all": [[0.0, 0.0]] * 4, "dedupe": [[0.1, 0.1], [0.0, 0.0], [0.1, 0.1], [0.0, 0.0]],
             "empty": [[0.0, 0.0], [0.2, 0.2], [0.0, 0.0], [0.2, 0.2]]}
    regions = [{"family": f"window:{i}-{i + 3}", "bank": 0} for i in range(4)]
    rules = {"config": {"rules": list(fixed)}, "regions": regions, "records": _records(fixed)}
    policies = {"config": {"rules": ["keep-all", "oplevel:best", "oplevel:const"]}, "regions": regions,
                "records": _records({"oplevel:best": [[0.1, 0.1], [0.2, 0.2], [0.1, 0.1], [0.2, 0.2]],
                                     "oplevel:const": fixed["empty"]})}
    rows = {r["policy"]: r for r in compare(rules, policies)}
    best, const = rows["oplevel:best"], rows["oplevel:const"]
    assert best["best_constant"] == "empty" and best["agreement"] == 1.0 and best["agreement_constant"] == 0.5
    assert best["minus_best_constant"][0] == pytest.approx(0.05) and best["minus_best_constant"][1] >= 0.0
    assert const["agreement"] == 0.5 and const["minus_best_constant"][0] == 0.0
