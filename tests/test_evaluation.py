"""The evaluator: cached, played by an executor (in-process or worker processes), and robust to a worker
(and its JVM) dying mid-evaluation. The executor protocol's tests run on a pure-Python suite registered
here at run time; the rest play real ScienceWorld."""
from __future__ import annotations

import dataclasses
import os
import signal
import threading
import time

import gymnasium as gym
import pytest

import dreamer_gym  # noqa: F401 - registers the ids
from dreamer_gym.agents import AgentConfig, EpisodeResult
from dreamer_gym.envs.config import ConsolidationConfig
from dreamer_gym.errors import ConfigError, SuiteError
from dreamer_gym.evaluation import (
    EvalEpisode,
    EvalTask,
    Evaluator,
    InProcessExecutor,
    LocalProcessExecutor,
    make_executor,
)
from dreamer_gym.store import Store
from dreamer_gym.testing import check_executor
from dreamer_gym.suites import register_suite
from dreamer_gym.suites.base import EpisodeTask

from echo_suite import CRASH, ECHO, ECHO_AGENT, ECHO_BANK, KILLS_WORKER, LLM_DOWN, EchoSuite
from helpers import child_jvms, descendants, is_scienceworld_jvm, pid_alive, wait_gone

jvm = pytest.mark.jvm
PER_FAMILY = 1  # dev variations per family
FAMILIES = 5  # the pool's first 5 families (of 7; issue 40: CI time): 5 episodes, enough for a 2-worker pool to be
# killed mid-evaluation, and the crash script's first two families among them


# --- the executor protocol, on a pure-Python suite ---------------------------------------------------------------
@pytest.fixture(scope="module")
def echo_tasks() -> list[EvalTask]:
    """Registered here, not at import: a worker process knows the suite only from the spec it receives."""
    register_suite(ECHO)
    entries = tuple(ECHO_BANK.entries)
    return [EvalTask(f"k{i}", EpisodeTask("say", v), entries if v != 103 else (), seed=0)
            for i, v in enumerate((100, CRASH, 101, LLM_DOWN, 102, 103))]


@pytest.fixture(scope="module")
def echo_reference(echo_tasks) -> list[EpisodeResult]:
    ex = InProcessExecutor(ECHO, {}, ECHO_AGENT)
    try:
        return check_executor(ex, echo_tasks)
    finally:
        ex.close()


@pytest.mark.parametrize("name, workers", [("inprocess", 0), ("process", 2)])
def test_executor_keeps_the_protocol(name, workers, echo_tasks, echo_reference):
    """Both executors: one result per task in order, on_result once each, failures recorded not raised,
    and the same results (the process pool's workers know the suite only from its spec)."""
    ex = make_executor(name, ECHO, {}, ECHO_AGENT, workers=workers)
    try:
        results = check_executor(ex, echo_tasks, echo_reference)
        assert len(ex.worker_pids()) == workers
        pids = ex.worker_pids()
    finally:
        ex.close()
    assert [r.score for r in results] == [100.0, 0.0, 100.0, 0.0, 100.0, 0.0]
    assert [r.error is None for r in results] == [True, False, True, False, True, True]  # 103: no memory, a lost game
    assert results[1].error == "RuntimeError: the simulator crashed"  # retried once, then recorded
    assert results[3].error == "LLMError: the LLM server is unreachable"
    assert ex.worker_pids() == [] and wait_gone(set(pids), 10) == set()


def test_a_dead_worker_s_task_is_rerun_on_a_fresh_worker(tmp_path, echo_tasks, echo_reference):
    ex = LocalProcessExecutor(ECHO, {"die_once": str(tmp_path / "died")}, ECHO_AGENT, workers=1)
    try:
        assert check_executor(ex, echo_tasks, echo_reference) == echo_reference
        assert ex.restarts == 1 and (tmp_path / "died").exists()
    finally:
        ex.close()


def test_a_task_that_kills_every_worker_fails_after_max_restarts(echo_tasks):
    ex = LocalProcessExecutor(ECHO, {}, ECHO_AGENT, workers=1, max_restarts=1)
    try:
        with pytest.raises(SuiteError, match="died 2 times in one call"):
            ex.run([dataclasses.replace(echo_tasks[0], task=EpisodeTask("say", KILLS_WORKER))])
        assert ex.restarts == 2
        assert ex.run(echo_tasks[:1])[0].score == 100.0  # usable again, on a fresh worker
    finally:
        ex.close()
    assert ex.worker_pids() == []


def test_a_spec_that_cannot_reach_a_worker_fails_at_once():
    with pytest.raises(ConfigError, match="pickling them raised"):
        LocalProcessExecutor(dataclasses.replace(ECHO, adapter=lambda: EchoSuite()), workers=1)


class CountingExecutor(InProcessExecutor):
    """A real executor that records what it was asked to play."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.calls: list[list[str]] = []

    def run(self, tasks, on_result=None):
        self.calls.append([t.key for t in tasks])
        return super().run(tasks, on_result)


def test_evaluator_plays_misses_on_the_executor_it_is_given(echo_tasks, echo_reference):
    executor = CountingExecutor(ECHO, {}, ECHO_AGENT)
    ev = Evaluator("echo-eval", ECHO_AGENT, Store(), executor=executor)
    episodes = [EvalEpisode(t.task, f"Your task is to: say w{t.task.variation}.") for t in echo_tasks[:4]]
    try:
        first = ev.evaluate(ECHO_BANK, episodes)
        assert first == echo_reference[:4]
        assert ev.evaluate(ECHO_BANK, episodes) == first
        assert len(executor.calls) == 2 and len(executor.calls[0]) == 4
        # results with an error are never cached: only the crashed and the LLM-failed episodes play again
        assert len(executor.calls[1]) == 2 and set(executor.calls[1]) <= set(executor.calls[0])
        assert ev.stats.failures == 4 and ev.stats.hits == 2 and ev.stats.misses == 6
    finally:
        ev.close()


def test_executor_is_chosen_by_config(echo_tasks):
    assert isinstance(Evaluator("echo-eval", ECHO_AGENT, Store()).executor, InProcessExecutor)
    ev = Evaluator("echo-eval", ECHO_AGENT, Store(), workers=2)
    assert isinstance(ev.executor, LocalProcessExecutor) and ev.worker_pids() == []  # started on first use
    ev.close()
    with pytest.raises(ConfigError, match="workers=0, or executor='process'"):
        Evaluator("echo-eval", ECHO_AGENT, Store(), workers=1, executor="inprocess")
    with pytest.raises(ConfigError, match=r"one of \('auto', 'inprocess', 'process', 'ray'\), got 'dask'"):
        ConsolidationConfig(executor="dask")
    with pytest.raises(ConfigError, match=r"executor='ray' needs workers >= 1 \(Ray actors\)"):
        ConsolidationConfig(executor="ray")
    with pytest.raises(ConfigError, match="`ray_address` is for executor='ray'"):
        ConsolidationConfig(workers=2, ray_address="127.0.0.1:6379")
    env = gym.make("MemoryConsolidation-ScienceWorld-v0", workers=1, executor="process", service="inprocess")
    try:  # the reward service's evaluator plays on the configured executor
        assert isinstance(env.unwrapped.service.referee.evaluator.executor, LocalProcessExecutor)
    finally:
        env.close()


# --- real ScienceWorld -----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def episodes(pool) -> list[EvalEpisode]:
    out = []
    for family in pool.families[:FAMILIES]:
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


@jvm
def test_results_are_complete_and_clipped(local, episodes):
    ev, results = local
    assert [r.task for r in results] == [e.task for e in episodes]
    assert all(0.0 <= r.score <= 100.0 and r.error is None and r.steps == len(r.actions) for r in results)
    assert all(r.success == (r.raw_score >= 100.0) for r in results)
    assert ev.stats.misses == len(episodes) and ev.stats.hits == 0
    assert any(r.score > 0 for r in results)  # the memory-following agent gets somewhere with the bank


@jvm
def test_second_evaluation_is_served_from_the_cache(local, bank, episodes):
    ev, first = local
    hits, misses = ev.stats.hits, ev.stats.misses
    again = ev.evaluate(bank, list(reversed(episodes)))
    assert again == list(reversed(first))
    assert ev.stats.hits == hits + len(episodes) and ev.stats.misses == misses


@jvm
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


@jvm
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


@jvm
@pytest.mark.timeout(300)  # a pool that never recovers must fail, not hang
def test_workers_killed_while_idle_and_mid_evaluation_are_replaced(local, bank, episodes):
    """One pool, two deaths (one pool's start for both, issue 40: CI time). A worker that dies between
    evaluations (OOM killer, say) is replaced on the next evaluate(): it used to surface as BrokenProcessPool from
    submit(); now the send to it fails or its sentinel fires. A worker killed mid-evaluation is replaced and its
    task rerun: the results are complete, in order, and equal to the in-process play."""
    _, reference = local
    ev = Evaluator(workers=2)  # its own store: nothing is cached
    before = child_jvms()  # e.g. the in-process evaluator's JVM, which is not this test's to stop
    killed_jvms: set[int] = set()
    all_jvms: set[int] = set()
    try:
        ev.warm_up()
        workers = ev.worker_pids()
        assert len(workers) == 2
        all_jvms |= child_jvms()
        # warm_up asks every worker to start its JVM, but a fast worker may take every warm-up call
        assert 1 <= len(all_jvms - before) <= 2
        # the idle death: a worker with its JVM dies between evaluations
        idle_jvms = {w: {p for p in descendants(w) if is_scienceworld_jvm(p)} for w in workers}
        idle = max(idle_jvms, key=lambda w: len(idle_jvms[w]))
        assert idle_jvms[idle]  # warm_up started its JVM
        os.kill(idle, signal.SIGKILL)
        assert wait_gone({idle}, 10) == set() and wait_gone(idle_jvms[idle], 20) == set()
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
        assert "error" not in box, repr(box.get("error"))  # e.g. the idle death was not recovered from
        jvms_of = {w: {p for p in descendants(w) if is_scienceworld_jvm(p)} for w in ev.worker_pids()}
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
        assert ev.stats.worker_restarts >= 2 and idle not in ev.worker_pids()  # both deaths, replaced
        assert len(ev.store.get_cached(keys)) == len(episodes)
        # the dead worker's JVM does not outlive it (py4j's die-on-broken-pipe)
        assert not pid_alive(victim) or wait_gone({victim}, 10) == set()
        assert wait_gone(killed_jvms, 20) == set()
    finally:
        ev.close()
    all_jvms -= before
    assert all_jvms - first_pool  # the replacement pool started JVMs of its own
    assert wait_gone(all_jvms, 20) == set()
    assert ev.worker_pids() == []
    assert child_jvms() == before


_CRASH_SCRIPT = """
import json
from dreamer_gym.evaluation import Evaluator, EvalEpisode
from dreamer_gym.pool import load_pool
from dreamer_gym.suites.base import EpisodeTask
pool = load_pool("scienceworld-v0")
eps = [EvalEpisode(EpisodeTask(f, v), pool.description(EpisodeTask(f, v), "dev"))
       for f in pool.families[:2] for v in pool.variations(f, "dev")[:1]]
ev = Evaluator(workers=0)
ev.warm_up()
ev.executor.suite._proc.kill()  # the simulator dies between episodes
ev.executor.suite._proc.wait(timeout=10)
results = ev.evaluate(pool.banks[0], eps)
alive = ev.executor.suite._proc.poll() is None
ev.close()
print(json.dumps({"scores": [r.score for r in results],
                  "errors": [r.error for r in results], "alive": alive}))
"""


@jvm
@pytest.mark.timeout(300)
def test_a_simulator_crash_is_retried_on_a_fresh_jvm(pool, local, episodes):
    """Kill the in-process JVM behind the evaluator's back: the episode is retried on a fresh JVM and the
    result equals an undisturbed run (``local``'s, of the same episodes). Runs in a subprocess: py4j's dead
    connections log from background threads, which is none of this test process's business."""
    import json
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _CRASH_SCRIPT], capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["errors"] == [None, None]
    _, reference = local  # the script's episodes: the first dev variation of the pool's first two families
    script = [EpisodeTask(f, pool.variations(f, "dev")[0]) for f in pool.families[:2]]
    expected = [next(r.score for e, r in zip(episodes, reference) if e.task == task) for task in script]
    assert out["scores"] == expected
    assert out["alive"]


def test_a_long_evaluation_shows_a_bar_over_its_episodes_and_a_short_one_none(echo_tasks, capfd):
    """A commit that runs for a while shows which episode it is at (stderr); one under PROGRESS_DELAY_S shows
    nothing, so a training loop's quick commits do not fill its log."""
    episodes = [EvalEpisode(EpisodeTask("open-safe", 100 + i), "Your task is to: open the safe.") for i in range(5)]
    slow = Evaluator("latency", AgentConfig(max_steps=8), Store(), suite_kwargs={"latency_s": 0.4}, progress=True)
    try:
        results = slow.evaluate(ECHO_BANK, episodes)
    finally:
        slow.close()
    assert len(results) == 5 and "evaluation episodes" in capfd.readouterr().err
    quick = Evaluator("echo-eval", ECHO_AGENT, Store(), progress=True)
    try:
        quick.evaluate(ECHO_BANK, [EvalEpisode(EpisodeTask("say", 100), "Your task is to: say w100.")])
    finally:
        quick.close()
    assert "evaluation episodes" not in capfd.readouterr().err
