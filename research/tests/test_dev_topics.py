"""research/dev_topics.py's pure parts: topics from ScienceWorld's own task table, the (a)-(c) verdict, the
summary and the table (no JVM: the task table ships as JSON with the scienceworld package)."""
from __future__ import annotations

import pytest

pytest.importorskip("scienceworld", reason="the task table ships with the scienceworld extra")

from research.dev_topics import (  # noqa: E402 - after the extra's check
    CANDIDATES,
    Thresholds,
    excluded_topics,
    markdown,
    summarize,
    sw_tasks,
    topic_of,
    verdict,
)


def test_every_task_gets_a_topic_and_only_matter_forces_genetics_stay_open() -> None:
    """Siblings of a known family share its topic (grow-fruit is grow); the three topics no pool holds are left."""
    tasks = sw_tasks()
    assert len(tasks) == 30
    topics = {t["task_name"]: topic_of(t["task_id"], t["task_name"], tasks) for t in tasks}
    assert topics["grow-fruit"] == "grow" and topics["test-conductivity"] == "electricity"
    assert topics["chemistry-mix-paint-secondary-color"] == "chemistry" and topics["boil"] == "matter"
    out = excluded_topics()
    assert out["lifespan"] == "test track" and out["measurement"] == "training"
    assert {topics[n] for n in topics if topics[n] not in out} == {"matter", "forces", "genetics"}
    assert all(topics[f] not in out for f in CANDIDATES)
    assert topic_of("11-1", "new-task", tasks, known={}) == "topic 11"


def test_verdict_names_each_failed_condition() -> None:
    counts = {"train": 14, "dev": 7, "test": 9}
    scores = {"keep-all": 10.0, "empty": 9.0, "oracle": 12.0, "dedupe": 10.0}
    fails = verdict(counts, {"train": 145, "dev": 60}, scores)
    assert fails[0] == "TRAIN gold path 145 steps > the agent's 80"
    assert any(f.startswith("(a) oracle - keep-all +2.0") for f in fails)
    assert any(f.startswith("(b) keep-all - empty +1.0") for f in fails)
    assert fails[-1] == "(c) 7 DEV, 9 TEST < 10"
    good = {"keep-all": 30.0, "empty": 10.0, "oracle": 70.0, "dedupe": 30.0}
    assert verdict({"train": 84, "dev": 42, "test": 42}, {"train": 55}, good) == []
    assert verdict({"train": 84, "dev": 42, "test": 42}, {"train": 55}, None) == []  # not played: (a), (b) open
    assert verdict(counts, {}, good, Thresholds(min_variations=7)) == []


def test_summary_and_table_pair_consolidators_per_family() -> None:
    rows = [{"family": "boil", "bank": b, "consolidator": c, "score_after": s + b, "reward": r, "episodes": 6}
            for b in (0, 1) for c, s, r in (("keep-all", 20.0, 0.0), ("empty", 5.0, -0.1),
                                            ("oracle", 70.0, 0.5), ("dedupe", 21.0, 0.01))]
    summary = summarize(rows)
    assert summary["boil"]["oracle"] == {"score": 70.5, "reward": 0.5, "n": 2, "episodes": 12}
    listing = [{"task": "boil", "topic": "matter", "excluded": None, "train": 14, "dev": 7, "test": 9,
                "gold_train": 39, "gold_dev": 43, "gold_test": 90},
               {"task": "use-thermometer", "topic": "measurement", "excluded": "training", "train": 1, "dev": 1,
                "test": 1}]
    table = markdown(listing, summary).splitlines()
    assert len(table) == 3 and table[2].startswith("| boil | matter | 14/7/9 | 39/43/90 | 20.5 / +0.000 |")
    assert "70.5 / +0.500" in table[2] and "2 (12 ep)" in table[2]
    assert table[2].endswith("| (c) 7 DEV, 9 TEST < 10 |")  # a TEST path's search steps are no failure
