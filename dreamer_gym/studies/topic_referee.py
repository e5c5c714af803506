"""Leave one training topic out: the referee for model choice on the training regions (issue 40, item 6).

Cross-fitting on disjoint variation halves (:mod:`dreamer_gym.studies.folds`) scores a choice on other episodes of
the same regions, so a policy that memorised its regions' topics still looks good. A learner is scored on topics it
never saw (the held-out tracks), so its model choice and early stopping must be judged the same way: hold one
training topic out, fit on the regions that do not play it, score on the regions that do. On a family pool a
region's topic is its family; on a window pool a window plays several (the tasks its own entries were written for,
``tasks`` in the study's region records): it is held out by every topic it plays and trains none of those folds.

:func:`topic_folds` is the split (for any learner); :func:`topic_referee` plays it for the learnability tables: the
best constant and a depth-2 tree on the study's features, each chosen on the other topics, paired on the held-out
regions. Never TEST: the training pools' regions play DEV episodes only.
"""
from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dreamer_gym.consolidators.rule_selector import predict_tree
from dreamer_gym.errors import ConfigError
from dreamer_gym.stats import interval
from dreamer_gym.studies.fixed_referee import argmax_first
from dreamer_gym.studies.rule_tables import describe_tree, fit_tree


@dataclass(frozen=True)
class TopicFold:
    """One held-out topic: the regions that play it (``held``) and those that do not (``train``), as indices."""

    topic: str
    train: np.ndarray
    held: np.ndarray


def topic_folds(region_topics: Sequence[Collection[str]], min_train: int = 2) -> list[TopicFold]:
    """One fold per topic that some region plays, in sorted order. A topic every region plays (nothing left to
    train on, or fewer than ``min_train`` regions) has no fold: it cannot be held out."""
    topics = sorted({t for ts in region_topics for t in ts})
    if not topics:
        raise ConfigError("no region names a topic: pass each region's families (a window's `tasks`)")
    out = []
    for topic in topics:
        plays = np.array([topic in ts for ts in region_topics])
        if (~plays).sum() >= min_train:
            out.append(TopicFold(topic, np.flatnonzero(~plays), np.flatnonzero(plays)))
    return out


def topic_referee(scores: np.ndarray, x: np.ndarray, features: Sequence[str], rules: Sequence[str],
                  region_topics: Sequence[Collection[str]], clusters: Sequence[Any], resamples: int = 2000,
                  seed: int = 0) -> dict[str, Any]:
    """The best constant and a depth-2 tree, each fitted on the regions of the other topics (per region the rule
    with the highest mean over its draws or folds), played on the held-out topic's regions.

    Args:
        scores: ``(regions, rules, draws)`` rewards; a region's value is its mean over the last axis.
        x: ``(regions, features)``.
        region_topics: per region, the topics it plays.
        clusters: per region, the unit the CI resamples (a bank: a bank's windows share sessions).

    Returns:
        ``folds`` (per topic: regions held, the rule and tree chosen, both values), and pooled over every
        (topic, held region) pair: ``constant``, ``tree``, ``gap`` (tree - constant) with a 95% percentile CI that
        resamples clusters (the fits stay fixed: refitting per resample costs too much; the CI covers which regions
        were held, not the fit's own noise).
    """
    mean = scores.mean(axis=2)
    folds, pairs = [], []
    for fold in topic_folds(region_topics):
        c = int(argmax_first(mean[fold.train].mean(axis=0)))
        tree = fit_tree(x[fold.train], argmax_first(mean[fold.train]), 2)
        played = predict_tree(tree, x[fold.held])
        tree_values, constant_values = mean[fold.held, played], mean[fold.held, c]
        folds.append({"topic": fold.topic, "held": int(len(fold.held)), "constant_rule": rules[c],
                      "constant": float(constant_values.mean()), "tree": float(tree_values.mean()),
                      "fitted": describe_tree(tree, features, rules)})
        pairs += [(i, t, k) for i, t, k in zip(fold.held, tree_values, constant_values)]
    if not pairs:
        raise ConfigError("no topic could be held out (every region plays every topic)")
    region = np.array([p[0] for p in pairs])
    diff = np.array([p[1] - p[2] for p in pairs])
    keys = sorted({clusters[i] for i in region}, key=str)
    members = {k: np.flatnonzero(np.array([clusters[i] == k for i in region])) for k in keys}
    rng = np.random.default_rng(seed)
    gaps = []
    for _ in range(resamples):
        idx = np.concatenate([members[keys[j]] for j in rng.integers(0, len(keys), len(keys))])
        gaps.append(diff[idx].mean())
    lo, hi = interval(np.array(gaps), float("nan"), len(gaps), 1, kind="percentile")
    return {"folds": folds, "pairs": len(pairs), "constant": float(np.mean([p[2] for p in pairs])),
            "tree": float(np.mean([p[1] for p in pairs])), "gap": float(diff.mean()), "gap_ci95": [lo, hi]}


def region_topics(regions: Sequence[dict[str, Any]]) -> list[list[str]] | None:
    """Per study region record, its topics: a window's ``tasks`` (its context columns), a family region's family;
    None where a window's record lacks ``tasks`` (a log from before the context columns, not backfilled)."""
    out = []
    for r in regions:
        if str(r["family"]).startswith("window:"):
            if "tasks" not in r:
                return None
            out.append(list(r["tasks"]))
        else:
            out.append([r["family"]])
    return out


def study_topic_referee(scores: np.ndarray, x: np.ndarray, features: Sequence[str], rules: Sequence[str],
                        regions: Sequence[dict[str, Any]], resamples: int, seed: int) -> dict[str, Any] | None:
    """:func:`topic_referee` on a learnability study's region records, clustered by bank; None where the regions
    name fewer than 2 topics or a window lacks its ``tasks``."""
    topics = region_topics(regions)
    if topics is None or len({t for ts in topics for t in ts}) < 2:
        return None
    return topic_referee(scores, x, features, rules, topics, [int(r["bank"]) for r in regions], resamples, seed)


def topic_markdown(referee: dict[str, Any] | None) -> list[str]:
    """The referee's table for the study's markdown; empty when the summary has none."""
    if not referee:
        return []
    lo, hi = referee["gap_ci95"]
    lines = ["", "| held-out topic (fitted on the others) | regions | best constant | its reward | depth-2 tree | "
             "tree - constant |", "|---|---|---|---|---|---|"]
    for f in referee["folds"]:
        lines.append(f"| {f['topic']} | {f['held']} | {f['constant_rule']} | {f['constant']:+.4f} | "
                     f"{f['tree']:+.4f} | {f['tree'] - f['constant']:+.4f} |")
    lines.append(f"| **pooled** ({referee['pairs']} topic-region pairs) | | | {referee['constant']:+.4f} | "
                 f"{referee['tree']:+.4f} | **{referee['gap']:+.4f}** [{lo:+.4f}, {hi:+.4f}] |")
    return lines
