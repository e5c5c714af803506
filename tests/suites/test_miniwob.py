"""The MiniWoB++ adapter on real MiniWoB++ pages in a real headless Chromium (Debian's), through BrowserGym."""

from __future__ import annotations

import inspect
import os
import re
import time
from pathlib import Path

import psutil
import pytest

from dreamer_gym.errors import SuiteError
from dreamer_gym.suites import SUITES, make_suite
from dreamer_gym.suites.base import SPLITS, EpisodeTask, StepOutcome, TaskSuite
from dreamer_gym.suites.miniwob import FAMILIES, SPLIT_RANGES, MiniWoBSuite
from dreamer_gym.suites.web import (
    Command,
    Target,
    chromium_wrapper,
    parse_command,
    playwright_chromium_revision,
    translate,
)

from helpers import play_actions

pytestmark = pytest.mark.browser

DEV = SPLIT_RANGES["dev"]
LOGIN = EpisodeTask("login-user", DEV[0])


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("miniwob-cache")


@pytest.fixture(scope="module")
def suite(cache: Path):
    s = MiniWoBSuite(cache_dir=cache)
    yield s
    s.close()


def play(suite: MiniWoBSuite, task: EpisodeTask, actions: tuple[str, ...]) -> StepOutcome:
    return play_actions(suite, task, actions)


def live_children() -> set[int]:
    return {
        p.pid
        for p in psutil.Process().children(recursive=True)
        if p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    }


# --- the scripted solutions ----------------------------------------------------------------------------------
@pytest.mark.parametrize("family", FAMILIES)
def test_gold_path_solves_seeded_dev_tasks(suite, family):
    # one seeded task per family (issue 39: CI time), the first two dev seeds taken in turn across the families
    variation = DEV[FAMILIES.index(family) % 2]
    task = EpisodeTask(family, variation)
    assert variation in suite.variations(family, "dev")
    path = suite.gold_path(task)
    assert path and all(parse_command(a) is not None for a in path), path  # semantic actions, no bids
    first = suite.start(task)
    assert first.startswith("page: ") and "\n" in first
    assert suite.task_description() and suite.task_description() not in first  # the goal is not on the page
    outcome = play(suite, task, path)
    assert outcome == StepOutcome(outcome.observation, 100.0, True), (task, path, outcome.observation)
    assert suite.num_moves() == len(path)
    assert suite.step('click "Submit"') == StepOutcome(
        "The episode is over; call start() for the next one.", 100.0, True
    )


def test_same_seed_same_task(suite):
    task = EpisodeTask("click-checkboxes", DEV[3])
    first = suite.start(task)
    goal = suite.task_description()
    suite.step('check "nothing-here"')  # touch the page in between
    assert suite.start(task) == first and suite.task_description() == goal
    assert suite.gold_path(task) == suite.gold_path(task)
    other = EpisodeTask("click-checkboxes", DEV[4])
    suite.start(other)
    assert (suite.task_description(), suite.start(other)) != (goal, first)


def test_a_wrong_submit_ends_with_zero(suite):
    task = EpisodeTask("click-button", DEV[0])
    right = suite.gold_path(task)[0]
    page = suite.start(task)
    wrong = next(ln for ln in page.splitlines() if " button " in ln and f"button {right.split(' ', 1)[1]}" not in ln)
    outcome = suite.step("click " + wrong.split(" button ", 1)[1])
    assert outcome.score == 0.0 and outcome.done


# --- bad actions are observations ----------------------------------------------------------------------------
def test_bad_actions_are_explained_and_change_nothing(suite):
    path = suite.gold_path(LOGIN)
    page = suite.start(LOGIN)
    bad = {
        "fly to the moon": "Unknown action",
        "": "Unknown action",
        "click": "Unknown action",
        'click "Nope"': "No known action matches",
        'type "x" into textbox 9': "No known action matches",
        'check "Login"': "No known action matches",
        "click('99999')": "Action failed",
    }
    for action, prefix in bad.items():
        outcome = suite.step(action)
        assert outcome.observation.startswith(prefix), (action, outcome.observation)
        assert outcome.score == 0.0 and not outcome.done, action
        if prefix != "Action failed":
            assert "Accepted forms" in outcome.observation and outcome.observation.endswith(page), action
    assert suite.num_moves() == len(bad)  # each counts as a step
    for action in path:  # the page is untouched: the gold path still wins
        outcome = suite.step(action)
    assert outcome.score == 100.0 and outcome.done


def test_step_limit_and_close_leave_no_browser(cache):
    before = live_children()
    with MiniWoBSuite(cache_dir=cache, step_limit=2) as short:
        short.start(LOGIN)
        running = live_children() - before
        names = {psutil.Process(pid).name() for pid in running}
        assert "chromium" in names, names
        outcomes = [short.step("garbage"), short.step('type "kenda" into "Username"')]
        assert [o.done for o in outcomes] == [False, True] and all(o.score == 0.0 for o in outcomes)
    assert live_children() <= before, live_children() - before
    with pytest.raises(RuntimeError, match="start"):
        short.step("click 'x'")
    short.close()  # closing twice is fine


# --- the action language -------------------------------------------------------------------------------------
def test_action_language_parses_every_form():
    assert parse_command('click "Submit"') == Command("click", Target(name="Submit"))
    assert parse_command("CLICK 'Tab #2'") == Command("click", Target(name="Tab #2"))
    assert parse_command("click button 2") == Command("click", Target(role="button", index=2))
    assert parse_command('type "Bob" into "Username"') == Command("type", Target(name="Username"), "Bob")
    assert parse_command('type "a \\"b\\"" into field 1') == Command("type", Target(role="textbox", index=1), 'a "b"')
    assert parse_command('type "x"') == Command("type", None, "x")
    assert parse_command('select "Drona" in "Names"') == Command("select", Target(name="Names"), "Drona")
    assert parse_command('select "Drona"') == Command("select", None, "Drona")
    assert parse_command('uncheck "ab"') == Command("uncheck", Target(name="ab"))
    assert parse_command('press "Enter"') == Command("press", None, "Enter")
    for raw_or_bad in ("click('12')", "fill('14', 'x')", "click Submit", "type into x", "hello"):
        assert parse_command(raw_or_bad) is None, raw_or_bad


def test_valid_actions_inventory_and_labels(suite):
    page = suite.start(LOGIN)
    assert re.search(r'^\[\d+\] textbox 1 "Username" value=""$', page, flags=re.M), page
    assert suite.inventory() == ""
    actions = suite.valid_actions()
    assert {'focus "Username"', 'focus "Password"', 'click "Login"', 'press "Enter"'} <= set(actions)
    for action in actions:  # every listed action resolves on this page
        assert translate(parse_command(action), suite._page)[0] is not None, action
    suite.step('type "kenda" into "Username"')
    assert suite.inventory().startswith("focused: ") and '"Username" value="kenda"' in suite.inventory()
    suite.start(EpisodeTask("choose-list", DEV[0]))
    options = [a for a in suite.valid_actions() if a.startswith("select ")]
    assert len(options) >= 3 and "Drona" in " ".join(options)
    suite.start(EpisodeTask("click-checkboxes", DEV[1]))
    assert sum(a.startswith("check ") for a in suite.valid_actions()) >= 2


def test_lean_playwright_stacks_are_scoped(suite):
    from playwright._impl import _connection, _sync_base

    suite.start(EpisodeTask("focus-text", DEV[0]))
    suite.step("focus textbox 1")
    assert _connection.inspect is inspect and _sync_base.inspect is inspect


# --- protocol, splits, errors --------------------------------------------------------------------------------
def test_is_a_task_suite_with_disjoint_splits_and_checked_arguments(tmp_path: Path):
    before = live_children()
    made = make_suite("miniwob", cache_dir=tmp_path)
    assert "miniwob" in SUITES and isinstance(made, TaskSuite) and made.name == "miniwob"
    assert live_children() <= before  # constructing one starts nothing
    ids = {s: set(made.variations("click-button", s)) for s in SPLITS}
    assert [len(ids[s]) for s in SPLITS] == [1000, 100, 100]
    for a, b in (("train", "dev"), ("train", "test"), ("dev", "test")):
        assert not ids[a] & ids[b], (a, b)
    with pytest.raises(ValueError, match="family"):
        made.variations("drag-cube", "dev")
    with pytest.raises(ValueError, match="split"):
        made.variations("click-button", "validation")
    with pytest.raises(ValueError, match="step_limit"):
        MiniWoBSuite(step_limit=0)
    with pytest.raises(RuntimeError, match="start"):
        made.step('click "Submit"')
    made.close()


def test_missing_chromium_is_a_suite_error(tmp_path: Path):
    missing = tmp_path / "no-such-chromium"
    t0 = time.perf_counter()
    with pytest.raises(SuiteError, match="make setup") as err:
        MiniWoBSuite(chromium=missing, cache_dir=tmp_path)
    assert "chromium-driver" in str(err.value) and str(missing) in str(err.value)
    with pytest.raises(SuiteError, match="apt-get install"):
        make_suite("miniwob", chromium=missing)
    with pytest.raises(SuiteError, match="make setup"):
        chromium_wrapper(tmp_path, missing)
    assert time.perf_counter() - t0 < 1.0


def test_chromium_wrapper_is_where_playwright_looks(tmp_path: Path):
    script = chromium_wrapper(tmp_path)
    assert script == tmp_path / "playwright" / f"chromium-{playwright_chromium_revision()}" / "chrome-linux" / "chrome"
    text = script.read_text()
    assert text.startswith("#!/bin/sh\nexec '/usr/lib/chromium/chromium' --no-sandbox") and text.rstrip().endswith(
        '"$@"'
    )
    assert os.access(script, os.X_OK)
    assert chromium_wrapper(tmp_path) == script and script.read_text() == text  # idempotent
