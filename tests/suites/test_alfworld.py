"""The ALFWorld adapter and the offline game generator, on the real TextWorld engine with the real
hand-coded ALFWorld expert. Generated games are ALFWorld-engine games, not the official splits."""
from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from dreamer_gym.errors import SuiteError
from dreamer_gym.suites import alfworld_gen as gen
from dreamer_gym.suites import make_suite
from dreamer_gym.suites.alfworld import OFFICIAL_SPLITS, ALFWorldSuite
from dreamer_gym.suites.base import SPLITS, EpisodeTask, StepOutcome, TaskSuite

from helpers import play_actions

pytestmark = pytest.mark.alfworld

DEV_ID = gen.SPLIT_RANGES["dev"].start  # the first dev variation of each task type


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's cache of generated games, shared with tests/agents/test_alfworld_following.py (the same
    first dev games; generating one costs 1-7 s; issue 39: CI time)."""
    return tmp_path_factory.getbasetemp() / "alfworld-gen-dev"


@pytest.fixture(scope="module")
def suite(cache: Path):
    s = ALFWorldSuite(source="generated", cache_dir=cache)
    yield s
    s.close()


@pytest.fixture(scope="module")
def dev_games(cache: Path) -> dict[str, gen.GeneratedGame]:
    """One generated dev game per task type (expert-checked while generated)."""
    return {t: gen.generate(t, DEV_ID, cache) for t in gen.TASK_TYPES}


def play(suite: ALFWorldSuite, task: EpisodeTask, actions: tuple[str, ...]) -> StepOutcome:
    return play_actions(suite, task, actions)


# --- generator ----------------------------------------------------------------------------------------------
def test_generator_is_deterministic_across_processes(dev_games, tmp_path: Path):
    """The same game again in this process and in a fresh one with another hash seed. The type is the cheapest
    to generate (issue 39: CI time); the module's fixture made it after four other types, the fresh process
    first, so what one generation leaves behind (a global RNG, a cache) cannot change the next game either."""
    task_type = "pick_cool_then_place_in_recep"
    game = dev_games[task_type]
    again = gen.generate(task_type, DEV_ID, tmp_path / "same-process")
    other = tmp_path / "other-process"
    code = f"from dreamer_gym.suites import alfworld_gen as g; g.generate({task_type!r}, {DEV_ID}, {str(other)!r})"
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=300)
    for name in ("game.tw-pddl", "traj_data.json"):
        reference = (game.game_file.parent / name).read_bytes()
        assert (again.game_file.parent / name).read_bytes() == reference, name
        assert (gen.game_dir(task_type, DEV_ID, other) / name).read_bytes() == reference, name
    assert again.walkthrough == game.walkthrough


def test_generated_games_are_labelled_and_fit_their_split(dev_games):
    for task_type, game in dev_games.items():
        data = json.loads(game.game_file.read_text())
        traj = json.loads((game.game_file.parent / "traj_data.json").read_text())
        assert data["solvable"] is True and data["walkthrough"] == list(game.walkthrough)
        assert "NOT an official ALFWorld game" in data["dreamer_gym_generated"]
        assert traj["dreamer_gym"]["generated"] is True and traj["task_type"] == task_type
        assert game.scene in gen.split_scenes("dev"), (task_type, game.scene)
        assert 0 < len(game.walkthrough) <= gen.MAX_EXPERT_STEPS
        assert "UNKNOWN GOAL" not in data["grammar"]
        # the cache is complete: no temporary folders left behind
        assert not [p for p in game.game_file.parent.parent.iterdir() if p.name.startswith(".tmp-")]


def test_splits_are_disjoint_in_ids_and_layouts():
    ids = {s: set(gen.SPLIT_RANGES[s]) for s in SPLITS}
    scenes = {s: set(gen.split_scenes(s)) for s in SPLITS}
    for a, b in (("train", "dev"), ("train", "test"), ("dev", "test")):
        assert not ids[a] & ids[b] and not scenes[a] & scenes[b], (a, b)
    for task_type in gen.TASK_TYPES:  # every task type can be hosted by every split
        for split in SPLITS:
            assert gen.feasible_scenes(task_type, split), (task_type, split)
    with pytest.raises(ValueError, match="variation id"):
        gen.split_of(999_999)


# --- the suite on generated games ---------------------------------------------------------------------------
@pytest.mark.parametrize("task_type", gen.TASK_TYPES)
def test_real_expert_solves_a_dev_game_of_each_type(suite, dev_games, task_type):
    task = EpisodeTask(task_type, DEV_ID)
    assert DEV_ID in suite.variations(task_type, "dev")
    path = suite.gold_path(task)
    assert path == dev_games[task_type].walkthrough
    first = suite.start(task)
    assert "Looking quickly around you, you see" in first and "Welcome" not in first
    assert suite.task_description().startswith("Your task is to: ")
    outcome = play(suite, task, path)
    assert outcome.score == 100.0 and outcome.done
    assert suite.num_moves() == len(path)


def test_step_valid_actions_and_inventory(suite, dev_games):
    task = EpisodeTask("pick_and_place_simple", DEV_ID)
    path = suite.gold_path(task)
    suite.start(task)
    actions = suite.valid_actions()
    assert actions == tuple(sorted(set(actions))) and "look" in actions and "inventory" in actions
    assert any(a.startswith("go to ") for a in actions)
    assert suite.inventory() == "You are not carrying anything."
    assert suite.look().startswith("You are in the middle of a room")
    bad = suite.step("fly to the moon")
    assert bad == StepOutcome("Nothing happens.", 0.0, False)
    take = next(i for i, a in enumerate(path) if a.startswith("take "))
    for action in path[: take + 1]:
        assert action in suite.valid_actions()
        outcome = suite.step(action)
        assert outcome.score == 0.0 and not outcome.done
    held = path[take].split(" from ")[0].removeprefix("take ")
    assert outcome.observation.startswith(f"You pick up the {held}")
    assert suite.inventory() == f"You are carrying: a {held}."
    assert suite.num_moves() == take + 2  # the invalid command counted as a step too


def test_step_limit_ends_the_episode(cache, dev_games):
    with ALFWorldSuite(source="generated", cache_dir=cache, step_limit=3) as short:
        short.start(EpisodeTask("pick_and_place_simple", DEV_ID))
        outcomes = [short.step("look") for _ in range(3)]
    assert [o.done for o in outcomes] == [False, False, True] and all(o.score == 0.0 for o in outcomes)


def test_is_a_task_suite_with_checked_arguments(suite):
    assert isinstance(suite, TaskSuite) and suite.name == "alfworld-gen"
    made = make_suite("alfworld-gen")
    assert isinstance(made, ALFWorldSuite) and made.source == "generated"  # constructing one loads nothing
    with pytest.raises(ValueError, match="family"):
        suite.variations("make_coffee", "dev")
    with pytest.raises(ValueError, match="split"):
        suite.variations("pick_and_place_simple", "validation")
    with pytest.raises(ValueError, match="source"):
        ALFWorldSuite(source="thor")
    with pytest.raises(RuntimeError, match="start"):
        ALFWorldSuite(source="generated").step("look")


def test_lean_engine_says_what_stock_textworld_says_and_is_faster(suite, dev_games):
    """Stock ``PddlEnv`` (as ALFWorld wraps it) and the adapter's lean engine give the same observations,
    admissible commands and win flag at every step of a walkthrough; the adapter's step is cheaper. (The cool
    task: an appliance step like heat's, in 11 steps where heat's walkthrough takes 42; issue 39: CI time.)"""
    import textworld
    from alfworld.agents.environment.alfred_tw_env import AlfredDemangler
    from textworld.envs import PddlEnv

    task = EpisodeTask("pick_cool_then_place_in_recep", DEV_ID)
    path = suite.gold_path(task)
    raw = AlfredDemangler(PddlEnv(textworld.EnvInfos(won=True, admissible_commands=True)), shuffle=False)
    raw.load(str(suite.game_file(task)))
    state = raw.reset()
    intro = suite.start(task)
    assert intro in state["feedback"] and suite.valid_actions() == tuple(state["admissible_commands"])
    raw_times, adapter_times = [], []
    for action in path:
        t0 = time.perf_counter()
        state, _, _ = raw.step(action)
        raw_times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        outcome = suite.step(action)
        adapter_times.append(time.perf_counter() - t0)
        assert outcome.observation == state["feedback"], action
        assert suite.valid_actions() == tuple(state["admissible_commands"]), action
        assert (outcome.score == 100.0) == bool(state["won"]), action
    raw_ms, adapter_ms = 1e3 * statistics.median(raw_times), 1e3 * statistics.median(adapter_times)
    assert adapter_ms < raw_ms, (adapter_ms, raw_ms)


def test_close_leaves_no_child_processes(cache, dev_games):
    me = psutil.Process()
    before = {p.pid for p in me.children(recursive=True)}
    s = make_suite("alfworld-gen", cache_dir=cache)
    task = EpisodeTask("pick_cool_then_place_in_recep", DEV_ID)
    play(s, task, s.gold_path(task))
    s.close()
    after = {p.pid for p in me.children(recursive=True) if p.is_running() and p.status() != psutil.STATUS_ZOMBIE}
    assert after <= before, after - before
    with pytest.raises(RuntimeError, match="start"):
        s.step("look")
    s.close()  # closing twice is fine


def test_engines_belong_to_the_pool_a_suite_owns_or_is_given(cache, dev_games):
    """No process-wide engine pool: a suite takes its engine from its own pool or the one it is given, and
    gives it back on close, so suites sharing a pool reuse one engine."""
    pool = gen.EnginePool()
    task = EpisodeTask("pick_and_place_simple", DEV_ID)
    assert ALFWorldSuite(source="generated", cache_dir=cache).engine_pool is not pool
    with ALFWorldSuite(source="generated", cache_dir=cache, engine_pool=pool) as first:
        first.start(task)
        assert len(pool) == 0
    assert len(pool) == 1
    engine = pool.acquire()
    pool.release(engine)
    with ALFWorldSuite(source="generated", cache_dir=cache, engine_pool=pool) as second:
        second.start(task)
        assert len(pool) == 0  # it took the idle engine instead of making one
    assert len(pool) == 1 and pool.acquire() is engine
    pool.release(engine)
    pool.close()
    assert len(pool) == 0


# --- official games ------------------------------------------------------------------------------------------
def test_official_without_data_fails_fast(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("ALFWORLD_DATA", str(tmp_path))
    t0 = time.perf_counter()
    with pytest.raises(SuiteError, match="alfworld-download") as err:
        make_suite("alfworld")
    assert "ALFWORLD_DATA" in str(err.value) and "alfworld-gen" in str(err.value)
    with pytest.raises(SuiteError, match="alfworld-download"):
        ALFWorldSuite(source="official", data_dir=tmp_path / "nowhere")
    assert time.perf_counter() - t0 < 1.0


def test_official_mode_reads_the_alfworld_download_layout(dev_games, tmp_path: Path, monkeypatch):
    """A folder laid out like `alfworld-download`'s (filled here with generated games, since the official
    ones need GitHub) is indexed, split and played by the official mode, unsolvable games left out."""
    root = tmp_path / "alfworld"
    for i, folder in enumerate(OFFICIAL_SPLITS.values()):
        for task_type, game in dev_games.items():
            dest = root / "json_2.1.1" / folder / f"{task_type}-Thing-None-Place-{i}" / "trial_T0"
            shutil.copytree(game.game_file.parent, dest)
    broken = root / "json_2.1.1" / "valid_seen" / "pick_and_place_simple-Thing-None-Place-9" / "trial_T0"
    shutil.copytree(dev_games["pick_and_place_simple"].game_file.parent, broken)
    data = json.loads((broken / "game.tw-pddl").read_text())
    (broken / "game.tw-pddl").write_text(json.dumps({**data, "solvable": False}))
    monkeypatch.setenv("ALFWORLD_DATA", str(root))
    with make_suite("alfworld") as official:
        assert official.name == "alfworld"
        splits = {s: official.variations("pick_two_obj_and_place", s) for s in SPLITS}
        assert all(len(v) == 1 for v in splits.values()) and len(set().union(*splits.values())) == 3
        assert len(official.variations("pick_and_place_simple", "dev")) == 1  # the unsolvable one is skipped
        task = EpisodeTask("pick_two_obj_and_place", splits["test"][0])
        outcome = play(official, task, official.gold_path(task))
        assert outcome.score == 100.0 and outcome.done
        with pytest.raises(ValueError, match="official"):
            official.game_file(EpisodeTask("look_at_obj_in_light", splits["test"][0]))
