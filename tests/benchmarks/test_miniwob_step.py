"""MiniWoBSuite.start / step against stock BrowserGym (``gym.make("browsergym/miniwob.click-button")``).

Targets: stock reset >= 5x the adapter's start (floor 3x), stock step >= 4x the adapter's step (floor 2x).
Both sides play the same real page: click-button with the same seeds (the adapter's variation is
BrowserGym's seed), in the same headless Chromium build, in the same run. Stock runs with BrowserGym's
defaults (MiniWoB's ``slow_mo=100`` ms, ``pre_observation_delay=0.5`` s, two browsers relaunched every
reset, a screenshot per observation).

The step is a fill of the page's first text box ("abc"): it leaves the page as it found it after the
first time and never ends the episode (a click on a button would). The adapter speaks it in its action
language (``type "abc" into textbox 1``), stock as BrowserGym's ``fill(bid, "abc")``; the adapter is
restarted (untimed) before its step limit. Memory is measured in both modes: PSS of each env's browser
process tree (the browser and its renderers, zygotes and GPU/utility processes).
"""

from __future__ import annotations

import itertools

import gymnasium as gym
import psutil
import pytest

from dreamer_gym.suites.base import EpisodeTask
from dreamer_gym.suites.miniwob import SPLIT_RANGES, MiniWoBSuite
from dreamer_gym.suites.web import read_page

pytestmark = [pytest.mark.browser]

FAMILY = "click-button"
SEEDS = SPLIT_RANGES["dev"][:10]
STEP = 'type "abc" into textbox 1'
RESTART_AT = 8  # moves; the adapter's step limit is 10
ADAPTER_START_ROUNDS, STOCK_RESET_ROUNDS = 20, 5
ADAPTER_STEP_ROUNDS, STOCK_STEP_ROUNDS = 30, 8


@pytest.fixture(scope="module")
def suite():
    s = MiniWoBSuite()
    s.start(EpisodeTask(FAMILY, SEEDS[0]))  # launches the browser; sets MINIWOB_URL and the browsers path
    yield s
    s.close()


@pytest.fixture(scope="module")
def step_seed(suite) -> int:
    """A dev seed whose click-button page has a text box (about half of them do)."""
    for seed in SPLIT_RANGES["dev"]:
        suite.start(EpisodeTask(FAMILY, seed))
        if any(e.role == "textbox" and e.rendered for e in suite._page.elements):
            return seed
    raise AssertionError("no click-button dev page with a text box")


@pytest.fixture(scope="module")
def stock_first(suite):
    """Stock BrowserGym (made after the suite, so it finds its env vars; closed before it) and its first
    observation, of ``SEEDS[0]``."""
    import browsergym.miniwob  # noqa: F401 - registers the ids

    env = gym.make(f"browsergym/miniwob.{FAMILY}")
    obs, _ = env.reset(seed=SEEDS[0])
    yield env, obs
    env.close()


@pytest.fixture(scope="module")
def stock(stock_first):
    return stock_first[0]


def textbox_bid(suite: MiniWoBSuite) -> str:
    return next(e.bid for e in suite._page.elements if e.role == "textbox" and e.index == 1)


def chromium_trees() -> dict[int, list[psutil.Process]]:
    """Each running browser (a chromium process whose parent is not chromium) with its descendants."""
    trees: dict[int, list[psutil.Process]] = {}
    for p in psutil.Process().children(recursive=True):
        try:
            if p.name() == "chromium" and p.parent() is not None and p.parent().name() != "chromium":
                trees[p.pid] = [p, *p.children(recursive=True)]
        except psutil.NoSuchProcess:
            continue
    return trees


def tree_pss_mib(tree: list[psutil.Process]) -> float:
    total = 0
    for p in tree:
        try:
            total += p.memory_full_info().pss
        except psutil.NoSuchProcess:
            continue
    return total / 2**20


def test_adapter_start(benchmark, suite, perf):
    benchmark.group = "miniwob reset (click-button)"
    seeds = itertools.cycle(SEEDS)
    first = benchmark.pedantic(
        lambda task: suite.start(task),
        setup=lambda: ((EpisodeTask(FAMILY, next(seeds)),), {}),
        rounds=ADAPTER_START_ROUNDS,
        warmup_rounds=2,
    )
    perf.record(benchmark, "adapter MiniWoBSuite.start", unit="reset")
    assert first.startswith("page: Click Button Task") and " button " in first


# a stock reset is ~5 s; that it shows the adapter's page: test_adapter_and_stock_see_the_same_tasks
@pytest.mark.measure
def test_stock_reset(benchmark, stock, perf):
    benchmark.group = "miniwob reset (click-button)"
    seeds = itertools.cycle(SEEDS)
    obs, _ = benchmark.pedantic(
        lambda seed: stock.reset(seed=seed), setup=lambda: ((next(seeds),), {}), rounds=STOCK_RESET_ROUNDS
    )
    perf.record(benchmark, "stock BrowserEnv.reset", unit="reset")
    assert obs["goal"].startswith('Click on the "')


def test_adapter_and_stock_see_the_same_tasks(suite, stock_first, measuring):
    """Same seed, same page: the goal and the page's elements (roles, names, bids) agree. CI compares the stock
    env's first page only (a stock reset is ~5 s)."""
    stock, first = stock_first
    for seed in SEEDS[:3] if measuring else SEEDS[:1]:
        suite.start(EpisodeTask(FAMILY, seed))
        obs = first if seed == SEEDS[0] else stock.reset(seed=seed)[0]
        assert obs["goal"] == suite.task_description()
        ours = [(e.bid, e.role, e.name) for e in suite._page.elements]
        assert [(e.bid, e.role, e.name) for e in read_page(obs).elements] == ours


def test_adapter_step(benchmark, suite, step_seed, perf):
    benchmark.group = "miniwob step (fill a text box)"
    task = EpisodeTask(FAMILY, step_seed)
    suite.start(task)

    def setup() -> None:
        if suite.num_moves() >= RESTART_AT:
            suite.start(task)

    out = benchmark.pedantic(lambda: suite.step(STEP), setup=setup, rounds=ADAPTER_STEP_ROUNDS, warmup_rounds=2)
    perf.record(benchmark, "adapter MiniWoBSuite.step", unit="step")
    assert out.score == 0.0 and not out.done and 'textbox 1 "' in out.observation and 'value="abc"' in out.observation


# a reset and a step of stock's (~10 s); the pages' parity: test_adapter_and_stock_see_the_same_tasks
@pytest.mark.measure
def test_stock_step(benchmark, stock, suite, step_seed, perf):
    benchmark.group = "miniwob step (fill a text box)"
    suite.start(EpisodeTask(FAMILY, step_seed))
    bid = textbox_bid(suite)  # same page, same bids
    stock.reset(seed=step_seed)
    obs, reward, terminated, truncated, info = benchmark.pedantic(
        lambda: stock.step(f"fill({bid!r}, 'abc')"), rounds=STOCK_STEP_ROUNDS, warmup_rounds=1
    )
    perf.record(benchmark, "stock BrowserEnv.step", unit="step")
    assert obs["last_action_error"] == "" and reward == 0 and not terminated and not truncated
    assert next(e.value for e in read_page(obs).elements if e.bid == bid) == "abc"
    assert obs["screenshot"].size > 0  # stock pays for a screenshot per observation; the adapter does not


@pytest.mark.measure  # a measurement (two more browsers, ~10 s); no correctness claim for CI to keep
def test_memory_per_env(perf, suite):
    """PSS of the browser process trees: the adapter's one browser against stock's two (page + chat)."""
    before = set(chromium_trees())
    with MiniWoBSuite() as fresh:
        fresh.start(EpisodeTask(FAMILY, SEEDS[0]))
        ours = {pid: tree for pid, tree in chromium_trees().items() if pid not in before}
        adapter_mib = sum(tree_pss_mib(t) for t in ours.values())
    middle = set(chromium_trees())
    env = gym.make(f"browsergym/miniwob.{FAMILY}")
    try:
        env.reset(seed=SEEDS[0])
        theirs = {pid: tree for pid, tree in chromium_trees().items() if pid not in middle}
        stock_mib = sum(tree_pss_mib(t) for t in theirs.values())
    finally:
        env.close()
    perf.notes["miniwob browser PSS per env (MiB)"] = {
        "adapter": round(adapter_mib), "adapter browsers": len(ours),
        "stock": round(stock_mib), "stock browsers": len(theirs),
    }  # fmt: skip
    assert len(ours) == 1 and len(theirs) == 2, (ours, theirs)
    assert adapter_mib < stock_mib


def test_miniwob_ratios(require_measuring, perf):
    adapter_start = perf.median("adapter MiniWoBSuite.start")
    stock_reset = perf.median("stock BrowserEnv.reset")
    adapter_step = perf.median("adapter MiniWoBSuite.step")
    stock_step = perf.median("stock BrowserEnv.step")
    reset = stock_reset / adapter_start
    step = stock_step / adapter_step
    r = perf.ratio("stock reset / adapter start (miniwob)", reset, ">= 5", reset >= 5, ">= 3", reset >= 3)
    s = perf.ratio("stock step / adapter step (miniwob)", step, ">= 4", step >= 4, ">= 2", step >= 2)
    assert r.met_floor, f"adapter start is only {reset:.1f}x faster than stock reset (floor 3x)"
    assert s.met_floor, f"adapter step is only {step:.1f}x faster than stock step (floor 2x)"
