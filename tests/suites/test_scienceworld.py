"""The ScienceWorld adapter on the real simulator: oracle replay, splits, step speed, JVM lifetime."""
from __future__ import annotations

import statistics
import time

import numpy as np
import pytest

from dreamer_gym.envs.config import DEFAULT_FAMILIES
from dreamer_gym.suites import make_suite
from dreamer_gym.suites.base import SPLITS, EpisodeTask, StepOutcome, TaskSuite
from dreamer_gym.suites.scienceworld import ScienceWorldSuite, java_available, sort_listings

from helpers import child_jvms, is_scienceworld_jvm, pid_alive, wait_gone

pytestmark = pytest.mark.jvm


def test_java_is_available():
    """ScienceWorld needs Java 17; without it every test here fails, loudly rather than skipped."""
    assert java_available()


@pytest.fixture(scope="module")
def sw():
    suite = ScienceWorldSuite()
    yield suite
    suite.close()


# three seeded (family, train variation index) picks
_RNG = np.random.default_rng(2024)
ORACLE_CASES = [(f, int(_RNG.integers(1_000))) for f in _RNG.choice(DEFAULT_FAMILIES, size=3, replace=False)]


@pytest.mark.parametrize("family,pick", ORACLE_CASES, ids=[f"{f}-{p}" for f, p in ORACLE_CASES])
def test_oracle_replay_solves_seeded_train_tasks(sw, family, pick):
    train = sw.variations(family, "train")
    task = EpisodeTask(family, train[pick % len(train)])
    path = sw.gold_path(task)
    assert path and all(isinstance(a, str) for a in path)
    first = sw.start(task)
    assert "This room is called" in first or "This outside location" in first
    assert sw.task_description().startswith("Your task is to")
    outcome = None
    for action in path:
        outcome = sw.step(action)
        assert isinstance(outcome, StepOutcome)
        if outcome.done:
            break
    assert outcome is not None and outcome.score == 100.0 and outcome.done
    assert sw.num_moves() <= len(path)


def test_is_a_task_suite(sw):
    assert isinstance(sw, TaskSuite)
    assert isinstance(make_suite("scienceworld"), ScienceWorldSuite)  # constructing one starts nothing
    with pytest.raises(ValueError, match="suite"):
        make_suite("nethack")


def test_splits_are_disjoint_and_come_from_scienceworld(sw, pool):
    for family in DEFAULT_FAMILIES:
        splits = {s: sw.variations(family, s) for s in SPLITS}
        assert all(splits.values()), family
        assert all(list(v) == sorted(set(v)) for v in splits.values())
        train, dev, test = (set(splits[s]) for s in SPLITS)
        assert not (train & dev) and not (train & test) and not (dev & test), family
        # together they are ScienceWorld's variations of the task, numbered from 0
        assert train | dev | test == set(range(len(train | dev | test))), family
        # the pool was built from the same splits
        assert set(pool.task_texts["dev"][family]) <= dev
        assert set(pool.task_texts["test"][family]) <= test
        assert set(pool.train_gold[family]) <= train
    with pytest.raises(ValueError, match="split"):
        sw.variations("find-animal", "validation")


def test_splits_match_the_stock_scienceworld_api(sw):
    from scienceworld import ScienceWorldEnv

    stock = ScienceWorldEnv("", envStepLimit=100)
    try:
        for family in ("find-animal", "power-component"):
            stock.load(family, 0)
            assert sw.variations(family, "train") == tuple(sorted(stock.get_variations_train()))
            assert sw.variations(family, "dev") == tuple(sorted(stock.get_variations_dev()))
            assert sw.variations(family, "test") == tuple(sorted(stock.get_variations_test()))
    finally:
        stock.close()


def test_step_is_fast_and_needs_start(sw):
    fresh = ScienceWorldSuite()
    with pytest.raises(RuntimeError, match="start"):
        fresh.step("look around")
    fresh.close()
    sw.start(EpisodeTask("find-non-living-thing", sw.variations("find-non-living-thing", "dev")[0]))
    times = []
    for action in ["look around", "open door to hallway", "inventory", "close door to hallway"] * 5:
        t0 = time.perf_counter()
        out = sw.step(action)
        times.append(time.perf_counter() - t0)
        assert isinstance(out, StepOutcome) and isinstance(out.observation, str) and not out.done
    assert statistics.median(times) < 0.5


def test_unknown_task_is_a_value_error(sw):
    with pytest.raises(ValueError, match="juggle"):
        sw.start(EpisodeTask("juggle", 0))


def test_observations_are_deterministic(sw):
    task = EpisodeTask("find-animal", sw.variations("find-animal", "dev")[0])
    runs = []
    for _ in range(2):
        obs = [sw.start(task)]
        for action in ("open door to hallway", "go to hallway", "look around"):
            out = sw.step(action)
            obs.append((out.observation, out.score, out.done))
        obs.append(sw.inventory())
        runs.append(obs)
    assert runs[0] == runs[1]


def test_sort_listings():
    text = ("Here you see: \n\tthe zebra\n\ta chair\n\tthe agent\n"
            "You also see:\n\tA door to the kitchen\n\tA door to the hallway")
    out = sort_listings(text)
    assert out == ("Here you see: \n\ta chair\n\tthe agent\n\tthe zebra\nYou also see:\n"
                   "\tA door to the hallway\n\tA door to the kitchen")
    assert sort_listings(out) == out


def test_close_leaves_no_jvm():
    suite = ScienceWorldSuite()
    assert suite.java_pid is None  # nothing starts before it is used
    suite.start(EpisodeTask("find-animal", 0))
    pid = suite.java_pid
    assert pid is not None and pid_alive(pid) and is_scienceworld_jvm(pid) and pid in child_jvms()
    suite.close()
    assert wait_gone({pid}, 10) == set()
    assert suite.java_pid is None
    suite.close()  # idempotent
