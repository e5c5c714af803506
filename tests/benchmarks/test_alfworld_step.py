"""ALFWorldSuite.step against the raw TextWorld step, in the same run.

"Raw" is what ALFWorld itself runs: stock TextWorld ``PddlEnv`` (asking for the win flag and the
admissible commands, as ``AlfredTWEnv`` does) behind ALFWorld's ``AlfredDemangler``. The adapter runs
the lean engine (each grounded command derived once per game, one translation per state). Target:
raw / adapter >= 3 (measured ~5x in the first slice's study).

Both replay the same cycle, the expert's search of one generated DEV game ("go to", "open", "close":
it leaves the world as it found it, so every round sees the same observations), on a game started once
and warmed by one cycle (the first steps of a game derive its commands; a game is started once per
episode, then stepped tens of times).
"""
from __future__ import annotations

import pytest

from dreamer_gym.suites.alfworld import ALFWorldSuite
from dreamer_gym.suites.base import EpisodeTask

pytestmark = [pytest.mark.alfworld]

TASK = EpisodeTask("pick_clean_then_place_in_recep", 1000)
ROUNDS = 12


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    s = ALFWorldSuite(source="generated", cache_dir=tmp_path_factory.mktemp("alfworld-gen"), step_limit=10**6)
    yield s
    s.close()


@pytest.fixture(scope="module")
def path(suite):
    gold = suite.gold_path(TASK)
    take = next(i for i, a in enumerate(gold) if a.startswith("take "))
    search = tuple(gold[1:take])  # the expert's search: go to / open / close, ends before anything changes
    assert sum(a.startswith("go to ") for a in search) >= 2  # a cycle that moves: "go to" never repeats
    return search


@pytest.fixture(scope="module")
def raw(suite, path):
    import textworld
    from alfworld.agents.environment.alfred_tw_env import AlfredDemangler
    from textworld.envs import PddlEnv

    env = AlfredDemangler(PddlEnv(textworld.EnvInfos(won=True, admissible_commands=True)), shuffle=False)
    env.load(str(suite.game_file(TASK)))
    env.reset()
    for action in path:
        env.step(action)
    return env


def test_raw_textworld_step(benchmark, raw, path, perf):
    benchmark.group = "alfworld step"
    out = benchmark.pedantic(lambda: [raw.step(a)[0] for a in path], rounds=ROUNDS, warmup_rounds=1)
    perf.record(benchmark, "raw TextWorld PddlEnv.step (ALFWorld infos)", per=len(path), unit="step")
    assert out[0]["feedback"].startswith("You arrive at")


def test_adapter_step(benchmark, suite, path, raw, perf):
    benchmark.group = "alfworld step"
    suite.start(TASK)
    for action in path:
        suite.step(action)
    out = benchmark.pedantic(lambda: [suite.step(a) for a in path], rounds=ROUNDS * 3, warmup_rounds=1)
    perf.record(benchmark, "adapter ALFWorldSuite.step", per=len(path), unit="step")
    # the adapter sees what the raw engine sees, cycle after cycle
    assert [o.observation for o in out] == [raw.step(a)[0]["feedback"] for a in path]
    assert not any(o.done for o in out)


def test_alfworld_ratio(require_measuring, perf):
    raw = perf.median("raw TextWorld PddlEnv.step (ALFWorld infos)")
    adapter = perf.median("adapter ALFWorldSuite.step")
    speedup = perf.ratio("raw TextWorld / ALFWorld adapter step", raw / adapter, ">= 3", raw / adapter >= 3,
                         ">= 2", raw / adapter >= 2)
    assert speedup.met_floor, f"the adapter step is only {speedup.value:.1f}x faster than raw TextWorld"
