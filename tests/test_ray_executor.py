"""The Ray executor on a real local Ray cluster (localhost only): the executor protocol, identical results to
the local executors, a killed actor that neither loses nor duplicates an episode, and an env reaching a
cluster by address (``executor='ray'``, ``ray_address``)."""
from __future__ import annotations

import dataclasses
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import ray

from dreamer_gym.agents import AgentConfig
from dreamer_gym.envs.consolidation import ConsolidationEnv
from dreamer_gym.errors import ConfigError, SuiteError
from dreamer_gym.evaluation import EvalEpisode, EvalTask, Evaluator, InProcessExecutor, make_executor
from dreamer_gym.evaluation.ray_executor import RayExecutor
from dreamer_gym.memory import MemoryEntry
from dreamer_gym.pool import build_pool
from dreamer_gym.store import Store
from dreamer_gym.suites import get_suite_spec, make_suite, register_suite
from dreamer_gym.suites.base import EpisodeTask
from dreamer_gym.testing import check_executor

from echo_suite import ECHO, ECHO_AGENT, ECHO_BANK, KILLS_WORKER, EchoSuite
from helpers import wait_gone

LATENCY = get_suite_spec("latency")
LATENCY_AGENT = AgentConfig(max_steps=6)
PROCEDURES = (MemoryEntry("procedure", "To set the safe to <code>: go to safe, set safe to <code>.", "open-safe"),
              MemoryEntry("procedure", "To set the radio to <code>: go to radio, set radio to <code>.", "tune-radio"))


@pytest.fixture(scope="module", autouse=True)
def local_ray() -> Iterator[None]:
    """The executors below start the local instance themselves; it ends with this module."""
    yield
    ray.shutdown()


def latency_tasks(n: int) -> list[EvalTask]:
    """``n`` TEST episodes over both families, every third without memory (a lost game), distinct seeds."""
    out = []
    for i in range(n):
        family = LATENCY.families[i % 2]
        out.append(EvalTask(f"k{i}", EpisodeTask(family, 200 + (i // 2) % 8), PROCEDURES if i % 3 else (), seed=i))
    return out


def test_ray_executor_keeps_the_protocol():
    register_suite(ECHO)
    entries = tuple(ECHO_BANK.entries)
    tasks = [EvalTask(f"k{i}", EpisodeTask("say", v), entries if v != 103 else (), seed=0)
             for i, v in enumerate((100, 150, 101, 151, 102, 103))]
    reference = InProcessExecutor(ECHO, {}, ECHO_AGENT).run(tasks)
    ex = make_executor("ray", ECHO, {}, ECHO_AGENT, workers=2, cpus_per_actor=0.5)
    assert isinstance(ex, RayExecutor)
    try:
        results = check_executor(ex, tasks, reference)  # the echo suite reaches the actors by its spec alone
        pids = ex.worker_pids()
        assert len(pids) == 2 and os.getpid() not in pids
    finally:
        ex.close()
    assert [r.score for r in results] == [100.0, 0.0, 100.0, 0.0, 100.0, 0.0]
    assert results[1].error == "RuntimeError: the simulator crashed" and results[3].error.startswith("LLMError")
    assert ex.worker_pids() == [] and wait_gone(set(pids), 20) == set()


def test_ray_results_equal_the_local_executors_on_the_same_seeds():
    tasks = latency_tasks(12)
    reference = InProcessExecutor(LATENCY, {"latency_s": 0.0}, LATENCY_AGENT).run(tasks)
    local = make_executor("process", LATENCY, {"latency_s": 0.0}, LATENCY_AGENT, workers=2)
    remote = make_executor("ray", LATENCY, {"latency_s": 0.0}, LATENCY_AGENT, workers=3, batch_size=2,
                           cpus_per_actor=0.5)
    try:
        assert local.run(tasks) == reference == remote.run(tasks)
    finally:
        local.close()
        remote.close()
    assert {r.score for r in reference} == {0.0, 100.0}  # both outcomes occur: the comparison means something


def test_a_killed_actor_neither_loses_nor_duplicates_an_episode():
    tasks = latency_tasks(16)  # 8 batches: both actors hold one when the first result comes, and more follow
    reference = InProcessExecutor(LATENCY, {"latency_s": 0.0}, LATENCY_AGENT).run(tasks)
    ex = RayExecutor(LATENCY, {"latency_s": 0.03}, LATENCY_AGENT, actors=2, batch_size=2, cpus_per_actor=0.5)
    seen: list[str] = []
    killed: list[int] = []

    def on_result(task: EvalTask, result) -> None:  # noqa: ANN001
        seen.append(task.key)
        if not killed:  # both actors hold batches now: kill one the way a node dies
            killed.append(ex.worker_pids()[len(seen) % 2])
            os.kill(killed[0], signal.SIGKILL)

    try:
        ex.warm_up()
        results = ex.run(tasks, on_result=on_result)
        assert results == reference
        assert Counter(seen) == Counter(t.key for t in tasks)  # each episode reported exactly once
        assert ex.restarts == 1 and len(ex.worker_pids()) == 2 and killed[0] not in ex.worker_pids()
        assert ex.run(tasks[:4]) == reference[:4]  # the replacement plays on
    finally:
        ex.close()


def test_an_episode_that_kills_every_actor_fails_after_max_restarts():
    register_suite(ECHO)
    ex = RayExecutor(ECHO, {}, ECHO_AGENT, actors=1, max_restarts=1, cpus_per_actor=0.5)
    good = EvalTask("k0", EpisodeTask("say", 100), tuple(ECHO_BANK.entries), seed=0)
    try:
        with pytest.raises(SuiteError, match="died 2 times in one call"):
            ex.run([dataclasses.replace(good, task=EpisodeTask("say", KILLS_WORKER))])
        assert ex.restarts == 2
        assert ex.run([good])[0].score == 100.0  # usable again, on a fresh actor
    finally:
        ex.close()


def test_a_spec_that_cannot_reach_an_actor_fails_at_once():
    with pytest.raises(ConfigError, match="pickling them raised"):
        RayExecutor(dataclasses.replace(ECHO, adapter=lambda: EchoSuite()), actors=1)
    with pytest.raises(ConfigError, match="`workers` \\(Ray actors\\) to be >= 1"):
        RayExecutor(ECHO, actors=0)


def test_without_ray_installed_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # what an install without the `ray` extra looks like
    with pytest.raises(ConfigError, match=r"pip install 'dreamer-gym\[ray\]'"):
        RayExecutor(LATENCY, {}, LATENCY_AGENT, actors=1)


def test_actors_the_cluster_cannot_place_fail_with_the_numbers():
    if not ray.is_initialized():  # else the executor would start an instance sized for its actors
        ray.init(address="local", num_cpus=2, include_dashboard=False, object_store_memory=256 * 1024**2, log_to_driver=False)
    ex = RayExecutor(LATENCY, {}, LATENCY_AGENT, actors=1, cpus_per_actor=64, start_timeout_s=1)  # it can never start
    try:
        with pytest.raises(SuiteError, match=r"1 Ray actors of 64 CPU each did not start in 1 s; the cluster has"):
            ex.warm_up()
        assert ex.worker_pids() == []
    finally:
        ex.close()


@pytest.mark.jvm
@pytest.mark.timeout(300)
def test_ray_and_process_executors_agree_on_scienceworld(pool):
    """Real ScienceWorld JVMs inside Ray actors and inside local worker processes: the same episodes."""
    episodes = [EvalEpisode(EpisodeTask(f, v), pool.description(EpisodeTask(f, v), "dev"), seed=1)
                for f in pool.families[:2] for v in pool.variations(f, "dev")[:1]]
    scores = {}
    for executor in ("process", "ray"):
        ev = Evaluator(workers=1, executor=executor, store=Store())
        try:
            scores[executor] = ev.evaluate(pool.banks[0], episodes)
        finally:
            ev.close()
    assert scores["ray"] == scores["process"]
    assert all(r.error is None for r in scores["ray"])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.timeout(300)
def test_the_env_reaches_a_running_cluster_by_address(tmp_path: Path):
    """``ray start --head`` on localhost (as a cluster's head would run), then an env with executor='ray' and
    ray_address: its reward equals the in-process executor's, played by actors of that cluster."""
    ray.shutdown()  # this process connects as a client of the cluster below, not of its own instance
    pool = build_pool(make_suite("latency", latency_s=0.0), LATENCY.families, seeds=(0,), eval_variations=4,
                      gold_variations=2)
    pool.save(path := tmp_path / "latency-v0.json.gz")
    port = _free_port()
    ray_bin = Path(sys.executable).parent / "ray"
    head = subprocess.Popen([str(ray_bin), "start", "--head", "--block", f"--port={port}", "--num-cpus=2",
                             "--include-dashboard=false", "--node-ip-address=127.0.0.1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    outcomes = {}
    try:
        for executor, kwargs in (("inprocess", {}), ("ray", {"workers": 2, "ray_address": f"127.0.0.1:{port}"})):
            env = ConsolidationEnv(suite="latency", pool=str(path), eval_in_family=4, eval_other=2, service="inprocess",
                                   executor=executor, **kwargs)
            try:
                _, info = env.reset(seed=0, options={"family": "open-safe"})
                env.step('{"tool": "emit", "kind": "procedure", "text": "To set the safe to <code>: go to safe, '
                         f'set safe to <code>.", "provenance": ["{info["region"][0]["id"]}"]}}')
                _, reward, terminated, _, info = env.step('{"tool": "commit"}')
                assert terminated
                outcomes[executor] = (reward, info["score_before"], info["score_after"])
                evaluator_executor = env.unwrapped.service.referee.evaluator.executor
                if executor == "ray":
                    assert isinstance(evaluator_executor, RayExecutor) and not evaluator_executor.started_ray
                    assert ray.is_initialized() and len(evaluator_executor.worker_pids()) == 2
            finally:
                env.close()
        assert outcomes["ray"] == outcomes["inprocess"]
        assert outcomes["ray"][2] > outcomes["ray"][1]  # the abstract procedure helps: a real score change
    finally:
        ray.shutdown()
        head.terminate()
        try:
            head.wait(60)
        except subprocess.TimeoutExpired:
            head.kill()
        time.sleep(1)
