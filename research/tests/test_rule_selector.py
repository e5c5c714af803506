"""research.rule_selector on the committed held-out record: a selector's held-out reward is the recorded reward
of the rules it plays, and a constant selector is the constant."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np

from dreamer_gym.pool import load_pool
from dreamer_gym.studies.learnability import score_table
from research.rule_selector import evaluate

RECORD = Path(__file__).parents[1] / "results/before-after/issue31/learnability-windows-id-heldout-e20/learnability.json.gz"


def test_a_selector_fitted_and_played_on_one_record_replays_its_rewards() -> None:
    record = json.loads(gzip.open(RECORD).read())
    rows = {r["model"]: r for r in evaluate(record, record, load_pool("scienceworld-windows-r3-v0"))}
    rules = record["config"]["rules"]
    scores = score_table(record["records"], [(r["family"], r["bank"]) for r in record["regions"]], rules, 2)
    constant = rows["stump on families"]["constant"]
    assert rows["stump on families"]["constant_heldout"] == scores[:, rules.index(constant)].mean()
    # each selector plays recorded rules: its reward lies between the worst and best rule's per region
    for row in rows.values():
        assert scores.min(axis=1).mean() - 1e-12 <= row["heldout"] <= scores.max(axis=1).mean() + 1e-12
        assert 0.0 <= row["agreement"] <= 1.0 and row["distinct_rules_played"] >= 1
    assert np.isclose(rows["stump on families"]["minus_constant"][0],
                      rows["stump on families"]["heldout"] - rows["stump on families"]["constant_heldout"])
