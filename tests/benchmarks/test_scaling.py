"""Scaling you can see on 2 cores: evaluation episodes per second on the latency-bound ``latency`` suite
(every simulator call waits ``LATENCY_S``, as a remote simulator or web server would; CPU per step ~0), for
the in-process executor, the local process pool with 1, 2 and 4 workers, and Ray with 1, 2, 4 and 8 actors.

Targets (ratios of medians in this run): Ray with 4 actors >= 3.5x one actor (floor 3.0x, the issue's bar);
the process pool with 4 workers >= 3.5x one worker (floor 3.0x); Ray with 1 actor >= 0.8x in-process (floor
0.6x: the price of a remote call per batch). The CPU-bound suites cannot show this here: 2 cores cap them.

Every setting plays the same ``N_EPISODES`` TEST episodes (with and without memory, distinct seeds) and must
return exactly the in-process results: a speed-up that changes an episode would be worth nothing.

CI (not measuring) plays ``CI_EPISODES`` in-process only; the other settings and the vector-env
comparison are ``measure`` (heavy in CI): tests/test_ray_executor.py and tests/test_evaluation.py check that the
Ray and process executors return the in-process results, tests/envs/test_vector_env.py that a shared vector env
gives the separate envs' rewards.
"""
from __future__ import annotations

from collections.abc import Iterator

import pytest
import ray

from dreamer_gym.agents import AgentConfig, EpisodeResult
from dreamer_gym.evaluation import EvalTask, Executor, InProcessExecutor, make_executor
from dreamer_gym.memory import MemoryEntry
from dreamer_gym.suites import get_suite_spec
from dreamer_gym.suites.base import EpisodeTask

LATENCY_S = 0.02
N_EPISODES = 64
CI_EPISODES = 8
ROUNDS = 3
SPEC = get_suite_spec("latency")
AGENT = AgentConfig(max_steps=6)
PROCEDURES = (MemoryEntry("procedure", "To set the safe to <code>: go to safe, set safe to <code>.", "open-safe"),
              MemoryEntry("procedure", "To set the radio to <code>: go to radio, set radio to <code>.", "tune-radio"))
SETTINGS = [("inprocess", 0), ("process", 1), ("process", 2), ("process", 4),
            ("ray", 1), ("ray", 2), ("ray", 4), ("ray", 8)]
IN_CI = ("inprocess", 0)
# the scale settings: their correctness claim is tests/test_ray_executor.py's
# test_ray_results_equal_the_local_executors_on_the_same_seeds and tests/test_evaluation.py's executor tests
SETTING_PARAMS = [pytest.param(n, w, id=f"{n}-{w}", marks=() if (n, w) == IN_CI else pytest.mark.measure)
                  for n, w in SETTINGS]


@pytest.fixture(scope="module")
def tasks(measuring) -> list[EvalTask]:
    return [EvalTask(f"k{i}", EpisodeTask(SPEC.families[i % 2], 200 + (i // 2) % 8), PROCEDURES if i % 4 else (),
                     seed=i) for i in range(N_EPISODES if measuring else CI_EPISODES)]


@pytest.fixture(scope="module")
def reference(tasks) -> list[EpisodeResult]:
    return InProcessExecutor(SPEC, {"latency_s": 0.0}, AGENT).run(tasks)


@pytest.fixture(scope="module", autouse=True)
def ray_instance() -> Iterator[None]:
    yield
    ray.shutdown()


def _executor(name: str, workers: int) -> Executor:
    options = {"cpus_per_actor": 0.25} if name == "ray" else {}  # 8 actors share 2 cores: they mostly wait
    return make_executor(name, SPEC, {"latency_s": LATENCY_S}, AGENT, workers=workers, **options)


@pytest.mark.parametrize("name, workers", SETTING_PARAMS)
def test_episodes_per_second(benchmark, perf, tasks, reference, name, workers):
    benchmark.group = f"play {N_EPISODES} latency-bound episodes ({LATENCY_S * 1000:.0f} ms a call)"
    ex = _executor(name, workers)
    try:
        ex.warm_up()
        out = benchmark.pedantic(ex.run, args=(tasks,), rounds=ROUNDS, warmup_rounds=1)
    finally:
        ex.close()
    assert out == reference  # the same episodes, played the same way, in order
    assert {r.score for r in reference} == {0.0, 100.0}  # with and without memory: the comparison means something
    perf.record(benchmark, f"latency suite, {name} x{workers}", per=N_EPISODES, unit="episode")


def _ratio(perf, name: str, slow: str, fast: str, target: float, floor: float) -> float:
    value = perf.median(slow) / perf.median(fast)
    perf.ratio(name, value, f">= {target}x", value >= target, f">= {floor}x", value >= floor)
    return value


def test_scaling_ratios(require_measuring, perf):
    per = {f"{n} x{w}": f"latency suite, {n} x{w}" for n, w in SETTINGS}
    base = perf.median(per["inprocess x0"])
    for key, record in per.items():  # episodes per second, and the speed-up over playing in this process
        perf.notes[f"latency suite: {key}"] = (f"{1 / perf.median(record):.1f} episodes/s, "
                                               f"{base / perf.median(record):.2f}x in-process")
    ray4 = _ratio(perf, "latency: ray x4 / ray x1", per["ray x1"], per["ray x4"], 3.5, 3.0)
    pool4 = _ratio(perf, "latency: process x4 / process x1", per["process x1"], per["process x4"], 3.5, 3.0)
    ray1 = _ratio(perf, "latency: ray x1 / in-process", per["inprocess x0"], per["ray x1"], 0.8, 0.6)
    assert ray4 >= 3.0, f"Ray with 4 actors is {ray4:.2f}x one actor; floor 3.0x"
    assert pool4 >= 3.0, f"the process pool with 4 workers is {pool4:.2f}x one worker; floor 3.0x"
    assert ray1 >= 0.6, f"Ray with 1 actor is {ray1:.2f}x in-process; floor 0.6x"


# --- vector envs: one shared reward service against separate envs ---------------------------------------------
VEC_SIZES = (1, 2, 4)
VEC_ROUNDS = 3


@pytest.fixture(scope="module")
def latency_pool(tmp_path_factory) -> str:
    from dreamer_gym.pool import build_pool
    from dreamer_gym.suites import make_suite

    pool = build_pool(make_suite("latency", latency_s=0.0), SPEC.families, seeds=(0, 1), eval_variations=8,
                      gold_variations=2)
    path = tmp_path_factory.mktemp("latency") / "latency-v0.json.gz"
    pool.save(path)
    return str(path)


def _vector(kind: str, n: int, pool: str):
    """``n`` sub-envs on the latency suite, evaluation on a 4-worker process pool each: one shared reward
    service (``make_shared_vec``, what ``gym.make_vec(id, num_envs=n)`` builds), or gymnasium's own
    SyncVectorEnv of separate envs (a service each)."""
    import functools

    import gymnasium as gym

    from dreamer_gym.envs.consolidation import ConsolidationEnv
    from dreamer_gym.envs.vector import make_shared_vec

    kwargs = dict(suite="latency", pool=pool, eval_in_family=4, eval_other=2, workers=4)
    if kind == "shared":
        return make_shared_vec(num_envs=n, **kwargs)
    return gym.vector.SyncVectorEnv([functools.partial(ConsolidationEnv, **kwargs)] * n)


def _round(envs, n: int, seed: int) -> list[float]:
    from dreamer_gym.consolidators.base import call

    _, infos = envs.reset(seed=[seed * 10 + i for i in range(n)])
    envs.step([call("keep", ids=[e["id"] for e in region][: len(region) // 2]) for region in infos["region"]])
    _, rewards, terminated, _, _ = envs.step([call("commit")] * n)
    assert terminated.all()
    return rewards.tolist()


@pytest.mark.measure  # correctness in CI: tests/envs/test_vector_env.py (shared evaluation = separate envs' results)
@pytest.mark.parametrize("kind", ["separate", "shared"])
@pytest.mark.parametrize("n", VEC_SIZES)
def test_vector_env_commits(benchmark, perf, latency_pool, kind, n, vector_results):
    benchmark.group = f"make_vec on the latency suite: reset, keep half, commit ({n} envs)"
    envs = _vector(kind, n, latency_pool)
    seeds = iter(range(1000))
    try:
        _round(envs, n, 999)  # warm: services, worker pools
        out = benchmark.pedantic(lambda: _round(envs, n, next(seeds)), rounds=VEC_ROUNDS, warmup_rounds=0)
    finally:
        envs.close()
    vector_results[(kind, n)] = out
    if ("separate", n) in vector_results and ("shared", n) in vector_results:
        assert vector_results[("separate", n)] == vector_results[("shared", n)]  # the same rewards, last round
    perf.record(benchmark, f"make_vec {kind} x{n}", per=n, unit="commit")


@pytest.fixture(scope="module")
def vector_results() -> dict:
    return {}


def test_vector_ratios(require_measuring, perf):
    for n in VEC_SIZES:
        separate, shared = perf.median(f"make_vec separate x{n}"), perf.median(f"make_vec shared x{n}")
        perf.notes[f"make_vec x{n}"] = (f"separate {1 / separate:.2f} commits/s, shared {1 / shared:.2f} commits/s, "
                                        f"shared/separate {separate / shared:.2f}x")
    value = perf.median("make_vec separate x4") / perf.median("make_vec shared x4")
    perf.ratio("make_vec x4: shared / separate", value, ">= 2.0x", value >= 2.0, ">= 1.2x", value >= 1.2)
    assert value >= 1.2, f"4 envs sharing one service are {value:.2f}x separate envs; floor 1.2x"
