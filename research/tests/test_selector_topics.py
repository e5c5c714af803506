"""Leave-one-topic-out for the rule selector: the reward tree finds a split that pays, and the committed training
study gives the figures docs/learnability.md quotes."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from dreamer_gym.studies.learnability import predict_tree
from research.selector_topics import fit_reward_tree, leave_one_topic_out

STUDY = Path(__file__).parent.parent / "results" / "issue31" / "learnability-train-e20" / "learnability.json.gz"


def test_the_reward_tree_splits_where_the_best_rule_changes() -> None:
    x = np.arange(10, dtype=float)[:, None]
    rewards = np.where(x < 5, [[1.0, 0.0]], [[0.0, 0.3]])  # rule 0 pays below 5, rule 1 (less) above
    tree = fit_reward_tree(x, rewards, depth=1)
    assert tree["threshold"] == 4.5 and predict_tree(tree, x).tolist() == [0] * 5 + [1] * 5


def test_leaving_one_topic_out_on_the_committed_study() -> None:
    out = leave_one_topic_out(json.loads(gzip.decompress(STUDY.read_bytes())))
    assert out["regions"] == 42 and len(out["topics"]) == 5 and out["constant"]["plays"] == {"merge-all": 1.0}
    label = out["label tree"]
    assert len(label["plays"]) > 1 and sum(label["plays"].values()) == pytest.approx(1.0)  # it reads its input
    assert label["ci95"][0] <= label["minus_constant"] <= label["ci95"][1]
