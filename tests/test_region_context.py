"""The bank-context columns of the learnability study (issue 40): read off a real reset, backfilled into logs
written without them, and used by the tables only where every region carries them."""
from __future__ import annotations

import gymnasium as gym
import pytest

import dreamer_gym  # noqa: F401  (registers the ids)
from dreamer_gym.consolidators.rule_selector import FEATURES
from dreamer_gym.envs.bank_context import NO_AGE, REGION_CONTEXT_FEATURES, region_context_features
from dreamer_gym.studies.region_context import backfill, context_columns, has_context, study_features

WINDOWS = "MemoryConsolidation-ScienceWorldWindows-v1"


@pytest.fixture(scope="module")
def windows_env():
    env = gym.make(WINDOWS)
    yield env
    env.close()


def test_first_window_is_all_uncovered_and_a_later_one_is_covered_per_its_context(windows_env):
    info = windows_env.reset(seed=0, options={"region": "window:0-3", "bank": 0})[1]
    first = context_columns(info)
    assert set(first) == {*REGION_CONTEXT_FEATURES, "tasks"}
    assert first["tasks"] == sorted(t["task"] for t in info["bank_context"])
    assert first["own_tasks"] == len(info["bank_context"]) > 0
    assert first["uncovered_tasks"] == first["own_tasks"] and first["youngest_age"] == NO_AGE  # nothing older
    info = windows_env.reset(seed=0, options={"region": "window:8-11", "bank": 0})[1]
    later, ctx = context_columns(info), info["bank_context"]
    assert later["uncovered_tasks"] == sum(not t["covered"] for t in ctx) < later["own_tasks"]
    assert later["covered_share"] == pytest.approx(1 - later["uncovered_tasks"] / later["own_tasks"])
    assert later["youngest_age"] == min(t["age"] for t in ctx if t["covered"])


def test_the_columns_follow_the_context_they_summarise():
    task = {"task": "boil", "own_entries": 3, "retrieved": 1, "retrieved_sessions": [2],
            "older_outside": {"procedure": 2, "fact": 4, "insight": 0, "pitfall": 0},
            "newest_older_session": 2, "age": 5, "covered": True}
    novel = {**task, "task": "melt", "retrieved": 0, "retrieved_sessions": [], "newest_older_session": None,
             "age": None, "covered": False, "older_outside": {"procedure": 0, "fact": 0, "insight": 0, "pitfall": 0}}
    both = region_context_features([task, novel])
    assert both == {"own_tasks": 2.0, "uncovered_tasks": 1.0, "covered_share": 0.5, "older_outside_per_task": 3.0,
                    "older_procedures_per_task": 1.0, "youngest_age": 5.0, "retrieved_share": 1 / 7}
    assert region_context_features([novel])["youngest_age"] == NO_AGE
    assert region_context_features([])["own_tasks"] == 0.0


def test_backfill_fills_a_log_written_without_the_columns_with_what_collect_writes(windows_env):
    keys = [("window:0-3", 0), ("window:8-11", 1)]
    written = {}
    for family, bank in keys:
        info = windows_env.reset(seed=0, options={"region": family, "bank": bank})[1]
        written[(family, bank)] = {"family": family, "bank": bank, **context_columns(info)}
    bare = {key: {"family": key[0], "bank": key[1]} for key in keys}
    assert not has_context(list(bare.values())) and study_features(list(bare.values())) == FEATURES
    assert backfill(windows_env, bare) == 2
    assert bare == written
    assert study_features(list(bare.values())) == FEATURES + REGION_CONTEXT_FEATURES
    assert backfill(windows_env, bare) == 0  # nothing left to fill


def test_an_id_without_bank_context_gets_no_columns():
    env = gym.make("MemoryConsolidation-ScienceWorld-v1")
    try:
        info = env.reset(seed=0)[1]
        assert "bank_context" not in info and context_columns(info) == {}
        family = info["region"][0]["family"]
        assert backfill(env, {(family, 0): {"family": family, "bank": 0}}) == 0
    finally:
        env.close()
