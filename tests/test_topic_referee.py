"""Leave one training topic out (issue 40, item 6): the split, and the referee that fits on other topics."""
from __future__ import annotations

import numpy as np
import pytest

from dreamer_gym.errors import ConfigError
from dreamer_gym.studies.topic_referee import region_topics, study_topic_referee, topic_folds, topic_referee

RULES = ["keep-all", "empty"]


def test_a_window_is_held_out_by_every_topic_it_plays_and_trains_none_of_those_folds():
    topics = [["a", "b"], ["b"], ["c"], ["a", "c"], ["b", "c"]]
    folds = {f.topic: f for f in topic_folds(topics)}
    assert list(folds) == ["a", "b", "c"]
    assert folds["a"].held.tolist() == [0, 3] and folds["a"].train.tolist() == [1, 2, 4]
    assert folds["c"].held.tolist() == [2, 3, 4] and folds["c"].train.tolist() == [0, 1]
    assert [f.topic for f in topic_folds([["a", "b"], ["a"], ["a", "c"]])] == ["b", "c"]  # "a" leaves nothing
    with pytest.raises(ConfigError, match="topic"):
        topic_folds([[], []])


def _table(rng: np.random.Generator, n: int, readable: bool) -> tuple[np.ndarray, np.ndarray, list[list[str]]]:
    """Regions of 4 topics; keep-all is best where the feature is high. With ``readable`` the feature says so
    in every topic; without, it is noise."""
    good = rng.uniform(size=n) < 0.5
    x = (good.astype(float) if readable else rng.uniform(size=n))[:, None]
    scores = np.zeros((n, 2, 2))
    scores[:, 0, :] = np.where(good, 0.10, -0.10)[:, None] + rng.normal(0, 0.01, (n, 2))
    scores[:, 1, :] = rng.normal(0, 0.01, (n, 2))
    topics = [[f"t{i % 4}"] for i in range(n)]
    return scores, x, topics


def test_a_feature_that_predicts_in_every_topic_beats_the_constant_on_held_out_topics():
    rng = np.random.default_rng(0)
    scores, x, topics = _table(rng, 80, readable=True)
    out = topic_referee(scores, x, ["f"], RULES, topics, clusters=list(range(80)), resamples=500)
    assert len(out["folds"]) == 4 and out["pairs"] == 80
    assert out["gap"] > 0.03 and out["gap_ci95"][0] > 0
    assert all("if f <=" in f["fitted"] for f in out["folds"])


def test_a_noise_feature_earns_nothing_on_held_out_topics():
    rng = np.random.default_rng(1)
    scores, x, topics = _table(rng, 80, readable=False)
    out = topic_referee(scores, x, ["f"], RULES, topics, clusters=list(range(80)), resamples=500)
    assert out["gap_ci95"][0] < 0.01  # no better than the constant beyond noise
    assert out["gap"] < 0.03


def test_study_records_give_topics_by_family_or_by_window_tasks():
    assert region_topics([{"family": "boil", "bank": 0}]) == [["boil"]]
    assert region_topics([{"family": "window:0-3", "bank": 0, "tasks": ["boil", "melt"]}]) == [["boil", "melt"]]
    assert region_topics([{"family": "window:0-3", "bank": 0}]) is None  # not backfilled: no referee
    scores = np.zeros((2, 2, 2))
    one_topic = [{"family": "boil", "bank": b} for b in range(2)]
    assert study_topic_referee(scores, np.zeros((2, 1)), ["f"], RULES, one_topic, 10, 0) is None


def test_the_docs_topic_table_is_the_committed_track_rows_output():
    """docs/learnability.md's leave-one-family-out table on the `scienceworld` track is the study's output on the
    committed rows (regenerate: fill the block with ``topic_markdown(summary["topic_referee"])``)."""
    from pathlib import Path

    from dreamer_gym.studies import track_learnability as tl
    from dreamer_gym.studies.track_power import GENERATED
    from dreamer_gym.studies.topic_referee import topic_markdown

    root = Path(__file__).parent.parent
    config = tl.TrackLearnabilityConfig(track="scienceworld")
    referee = tl.topic_table(config, tl.rule_table(config, root / "leaderboards" / "results"))
    table = "\n".join(topic_markdown(referee)[1:]) + "\n"
    blocks = {m["name"]: m["body"] for m in GENERATED.finditer((root / "docs" / "learnability.md").read_text())}
    assert blocks["topic-referee-scienceworld"] == table
