"""A learned region-level consolidator: a small tree from what a region shows to one of the whole-region rules.

The simplest learner that conditions on its input (issue 31): fitted on a training study's records (for every
region, which rule scored best there), frozen into a JSON file, then played greedily: read the region's features
(:func:`region_features`, what any policy sees before acting), walk the tree, play the chosen rule's own tool calls.
``selector:PATH`` names one (``research/fit_selector.py`` fits it; docs/learnability.md, "A learned selector").
"""
from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from dreamer_gym.envs.op_rules import parse_procedure
from dreamer_gym.errors import ConfigError
from dreamer_gym.memory.tokens import count_tokens

FEATURES: tuple[str, ...] = ("entries", "tokens", "procedure_share", "insight_share", "distinct_goals",
                             "distinct_trajectories", "sessions", "families", "majority_family_share")


def region_features(region: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """What a policy could read off a region before acting (:data:`FEATURES`)."""
    n = len(region)
    goals = {p.goal.lower() for p in map(parse_procedure, region) if p is not None}
    trajectories = {p["trajectory_id"] for e in region for p in e["provenance"]}
    families = Counter(e.get("family", "") for e in region)
    return {"entries": float(n), "tokens": float(sum(count_tokens(e["text"]) for e in region)),
            "procedure_share": sum(e["kind"] == "procedure" for e in region) / max(n, 1),
            "insight_share": sum(e["kind"] == "insight" for e in region) / max(n, 1),
            "distinct_goals": float(len(goals)), "distinct_trajectories": float(len(trajectories)),
            "sessions": float(len({e.get("session", 0) for e in region})),
            "families": float(len(families)), "majority_family_share": max(families.values(), default=0) / max(n, 1)}


def predict_tree(tree: dict[str, Any], x: np.ndarray) -> np.ndarray:
    if "label" in tree:
        return np.full(len(x), tree["label"], dtype=int)
    left = x[:, tree["feature"]] <= tree["threshold"]
    out = np.empty(len(x), dtype=int)
    out[left] = predict_tree(tree["left"], x[left])
    out[~left] = predict_tree(tree["right"], x[~left])
    return out


class RuleSelectorConsolidator:
    """Plays, on each region, the rule its frozen tree picks from the region's features."""

    def __init__(self, checkpoint: str | None = None) -> None:
        if not checkpoint:
            raise ConfigError("`selector` needs its file: selector:PATH (a JSON tree from research/fit_selector.py)")
        try:
            data = json.loads(Path(checkpoint).read_text())
        except (OSError, ValueError) as e:
            raise ConfigError(f"selector:{checkpoint}: cannot read the selector file ({e})") from e
        missing = [k for k in ("features", "rules", "tree") if k not in data]
        unknown = [f for f in data.get("features", []) if f not in FEATURES]
        if missing or unknown:
            raise ConfigError(f"selector:{checkpoint}: missing {missing}, unknown features {unknown}; expected the "
                              f"keys features, rules, tree and features among {list(FEATURES)}")
        self.name, self.path = f"selector:{checkpoint}", checkpoint
        self.features, self.rules, self.tree = list(data["features"]), list(data["rules"]), data["tree"]
        self.last_rule: str | None = None  # the rule played on the last region (for studies and logs)

    def choose(self, region: Sequence[Mapping[str, Any]]) -> str:
        values = region_features(region)
        x = np.array([[values[f] for f in self.features]], dtype=float)
        return self.rules[int(predict_tree(self.tree, x)[0])]

    def actions(self, env: gym.Env, obs: dict[str, Any], info: dict[str, Any]) -> Iterator[str]:
        from dreamer_gym.consolidators.op_rule import make_rule

        self.last_rule = self.choose(info["region"])
        yield from make_rule(self.last_rule).actions(env, obs, info)
