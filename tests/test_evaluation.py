"""The evaluator: cached, parallel, and robust to a worker (and its JVM) dying mid-evaluation."""
from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from dreamer_gym.agents import AgentConfig
from dreamer_gym.evaluation import EvalEpisode, Evaluator, worker_pids
from dreamer_gym.store import Store
from dreamer_gym.suites.base import EpisodeTask

from helpers import child_jvms, descendants, is_scienceworld_jvm, pid_alive, wait_gone

pytestmark = pytest.mark.jvm
PER_FAMILY = 2  # dev variations per family: 12 episodes in all


@pytest.fixture(scope="module")
def episodes(pool) -> list[EvalEpisode]:
    out = []
    for family in pool.families:
        texts = pool.task_texts["dev"][family]
        for variation in sorted(texts)[:PER_FAMILY]:
            out.append(EvalEpisode(EpisodeTask(family, variation), texts[variation]))
    return out


@pytest.fixture(scope="module")
def bank(pool):
    return pool.banks[0]


@pytest.fixture(scope="module")
def local(bank, episodes):
    """An in-process evaluator and its results on ``episodes``: the reference for the others."""
    ev = Evaluator(workers=0)
    results = ev.evaluate(bank, episodes)
    yield ev, results
    ev.close()


def test_results_are_complete_and_clipped(local, episodes):
    ev, results = local
    assert [r.task for r in results] == [e.task for e in episodes]
    assert all(0.0 <= r.score <= 100.0 and r.error is None and r.steps == len(r.actions) for r in results)
    assert all(r.success == (r.raw_score >= 100.0) for r in results)
    assert ev.stats.misses == len(episodes) and ev.stats.hits == 0
    assert any(r.score > 0 for r in results)  # the memory-following agent gets somewhere with the bank


def test_second_evaluation_is_served_from_the_cache(local, bank, episodes):
    ev, first = local
    hits, misses = ev.stats.hits, ev.stats.misses
    again = ev.evaluate(bank, list(reversed(episodes)))
    assert again == list(reversed(first))
    assert ev.stats.hits == hits + len(episodes) and ev.stats.misses == misses


def test_cache_is_shared_through_the_store_and_plays_nothing(local, bank, episodes):
    """A new evaluator on the same store answers from the cache without starting any simulator."""
    ev, first = local
    jvms_before = child_jvms()
    fresh = Evaluator(workers=0, store=ev.store)
    try:
        assert fresh.evaluate(bank, episodes) == first
        assert fresh.stats.hits == len(episodes) and fresh.stats.misses == 0
        assert child_jvms() == jvms_before  # no simulator was started for it
    finally:
        fresh.close()


def test_cache_key_changes_with_what_matters(local, bank, episodes):
    ev, _ = local
    ep = episodes[0]
    retrieved = ev.agent.retrieve(ep.description, bank.entries)
    key = ev.episode_key(ep, retrieved)
    assert key == ev.episode_key(ep, list(retrieved))
    assert key != ev.episode_key(ep, retrieved[1:])
    assert key != ev.episode_key(EvalEpisode(ep.task, ep.description, seed=1), retrieved)
    other = Evaluator(agent_config=AgentConfig(top_k=3), store=Store())
    assert other.episode_key(ep, retrieved) != key


@pytest.mark.timeout(300)  # a pool that never recovers must fail, not hang
def test_worker_killed_mid_evaluation_is_replaced(local, bank, episodes):
    _, reference = local
    ev = Evaluator(workers=2)  # its own store: nothing is cached
    before = child_jvms()  # e.g. the in-process evaluator's JVM, which is not this test's to stop
    killed_jvms: set[int] = set()
    all_jvms: set[int] = set()
    try:
        ev.warm_up()
        workers = worker_pids(ev)
        assert len(workers) == 2
        all_jvms |= child_jvms()
        # warm_up asks every worker to start its JVM, but a fast worker may take every warm-up call
        assert 1 <= len(all_jvms - before) <= 2
        keys = [ev.episode_key(ep, ev.agent.retrieve(ep.description, bank.entries)) for ep in episodes]
        box: dict[str, object] = {}

        def run() -> None:
            try:
                box["results"] = ev.evaluate(bank, episodes)
            except BaseException as exc:  # noqa: BLE001 - re-raised in the test thread
                box["error"] = exc

        thread = threading.Thread(target=run)
        thread.start()
        # kill a worker once the evaluation is under way: the first result is in the store
        deadline = time.monotonic() + 120
        while not ev.store.get_cached(keys) and thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        jvms_of = {w: {p for p in descendants(w) if is_scienceworld_jvm(p)} for w in worker_pids(ev)}
        victim = max(jvms_of, key=lambda w: len(jvms_of[w]))  # a worker that is playing, JVM and all
        killed_jvms = jvms_of[victim]
        assert killed_jvms
        all_jvms |= child_jvms()
        first_pool = set(all_jvms)
        done_before_kill = len(ev.store.get_cached(keys))
        os.kill(victim, signal.SIGKILL)
        while thread.is_alive():
            all_jvms |= child_jvms()  # the restarted pool's JVMs too
            thread.join(timeout=0.2)
        assert "error" not in box, repr(box.get("error"))
        assert done_before_kill < len(episodes), "the evaluation ended before the kill; make it longer"
        assert box["results"] == reference  # complete, in order, equal to the in-process play
        assert ev.stats.worker_restarts >= 1
        assert len(ev.store.get_cached(keys)) == len(episodes)
        # the dead worker's JVM does not outlive it (py4j's die-on-broken-pipe)
        assert not pid_alive(victim) or wait_gone({victim}, 10) == set()
        assert wait_gone(killed_jvms, 20) == set()
    finally:
        ev.close()
    all_jvms -= before
    assert all_jvms - first_pool  # the replacement pool started JVMs of its own
    assert wait_gone(all_jvms, 20) == set()
    assert worker_pids(ev) == []
    assert child_jvms() == before


@pytest.mark.timeout(300)
def test_worker_that_died_while_idle_is_replaced(local, bank, episodes):
    """A worker that dies between evaluations (OOM killer, say) is replaced on the next evaluate(); it used to
    surface as BrokenProcessPool from submit()."""
    _, reference = local
    before = child_jvms()
    ev = Evaluator(workers=1)
    try:
        ev.warm_up()
        [victim] = worker_pids(ev)
        jvms = {p for p in descendants(victim) if is_scienceworld_jvm(p)}
        assert jvms  # warm_up started its JVM
        os.kill(victim, signal.SIGKILL)
        assert wait_gone({victim}, 10) == set() and wait_gone(jvms, 20) == set()
        deadline = time.monotonic() + 10
        while not getattr(ev._executor, "_broken", False) and time.monotonic() < deadline:
            time.sleep(0.02)  # let the pool notice, as it would between two real evaluations
        assert ev.evaluate(bank, episodes[:2]) == reference[:2]
        assert ev.stats.worker_restarts >= 1
        assert worker_pids(ev) and victim not in worker_pids(ev)
    finally:
        ev.close()
    assert wait_gone(child_jvms() - before, 20) == set()



_CRASH_SCRIPT = """
import json
from dreamer_gym.evaluation import Evaluator, EvalEpisode
from dreamer_gym.pool import load_pool
from dreamer_gym.suites.base import EpisodeTask
pool = load_pool("scienceworld-v0")
eps = [EvalEpisode(EpisodeTask(f, v), pool.description(EpisodeTask(f, v), "dev"))
       for f in pool.families[:2] for v in pool.variations(f, "dev")[:1]]
reference = Evaluator(workers=0)
expected = [r.score for r in reference.evaluate(pool.banks[0], eps)]
reference.close()
ev = Evaluator(workers=0)
ev.warm_up()
ev._suite._proc.kill()  # the simulator dies between episodes
ev._suite._proc.wait(timeout=10)
results = ev.evaluate(pool.banks[0], eps)
alive = ev._suite._proc.poll() is None
ev.close()
print(json.dumps({"expected": expected, "scores": [r.score for r in results],
                  "errors": [r.error for r in results], "alive": alive}))
"""


@pytest.mark.jvm
@pytest.mark.timeout(300)
def test_a_simulator_crash_is_retried_on_a_fresh_jvm():
    """Kill the in-process JVM behind the evaluator's back: the episode is retried on a fresh JVM and the
    result equals an undisturbed run. Runs in a subprocess: py4j's dead connections log from background
    threads, which is none of this test process's business."""
    import json
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _CRASH_SCRIPT], capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["errors"] == [None, None]
    assert out["scores"] == out["expected"]
    assert out["alive"]
