"""A suite is one room: the toy suite of ``toy_suite.py`` (one module + one registry line, public API only)
runs through acquisition, the pool, the env and evaluation, and passes the shipped conformance check."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from dreamer_gym.acquisition import AcquisitionConfig, acquire
from dreamer_gym.agents import AgentConfig
from dreamer_gym.envs.consolidation import ConsolidationEnv
from dreamer_gym.evaluation import EvalEpisode, Evaluator
from dreamer_gym.memory import MemoryEntry
from dreamer_gym.pool import build_pool, load_pool
from dreamer_gym.store import Store
from dreamer_gym.suites import EpisodeTask, make_suite, register_suite
from dreamer_gym.testing import check_suite

import toy_suite

register_suite(toy_suite.SPEC)  # the one registry line


@pytest.fixture(scope="module")
def toy_pool(tmp_path_factory: pytest.TempPathFactory) -> Path:
    suite = make_suite("toy")
    pool = build_pool(suite, toy_suite.FAMILIES, seeds=(0, 1), eval_variations=6, gold_variations=3)
    path = tmp_path_factory.mktemp("toy") / "toy-v0.json.gz"
    pool.save(path)
    return path


def test_toy_suite_passes_check_suite() -> None:
    report = check_suite("toy")
    assert report.available and not report.skipped
    assert {"spec", "families and splits", "episode", "gold path solves", "acquisition",
            "memory-following reader", "close"} <= set(report.passed)


def test_acquisition_writes_a_messy_bank_with_provenance() -> None:
    bank, trajectories = acquire(make_suite("toy"), AcquisitionConfig(families=toy_suite.FAMILIES), seed=0)
    kinds = {e.kind for e in bank}
    assert "procedure" in kinds and len(trajectories) == 4 * len(toy_suite.FAMILIES)
    by_id = {t.id for t in trajectories}
    assert all(p.trajectory_id in by_id for e in bank for p in e.provenance)
    assert acquire(make_suite("toy"), AcquisitionConfig(families=toy_suite.FAMILIES), seed=0)[0].hash == bank.hash


def test_pool_round_trips_with_its_hash(toy_pool: Path) -> None:
    pool = load_pool(str(toy_pool))
    assert pool.suite == "toy" and pool.families == toy_suite.FAMILIES
    assert load_pool(str(toy_pool), pool.hash).hash == pool.hash
    assert pool.variations("unlock-door", "dev") == tuple(range(100, 106))


def test_env_and_evaluation_reward_abstraction_over_verbatim_memory(toy_pool: Path) -> None:
    env = ConsolidationEnv(suite="toy", pool=str(toy_pool), eval_in_family=3, eval_other=0)
    try:
        rewards = {}
        for name in ("keep", "oracle"):
            _, info = env.reset(seed=3, options={"family": "unlock-door"})
            region = info["region"]
            assert region and all(e["kind"] in ("insight", "procedure", "fact", "pitfall") for e in region)
            if name == "keep":
                env.step(json.dumps({"tool": "keep", "ids": [e["id"] for e in region]}))
            else:
                proc = toy_suite.SPEC.procedures["unlock-door"]
                env.step(json.dumps({"tool": "emit", "kind": "procedure", "text": f"To {proc.goal}: {proc.steps}.",
                                     "provenance": [region[0]["id"]]}))
            _, reward, terminated, _, info = env.step(json.dumps({"tool": "commit"}))
            assert terminated and info["suite"] == "toy"
            rewards[name] = (info["score_before"], info["score_after"], info["reward_components"]["score_delta"])
        assert rewards["keep"][2] == 0.0  # keeping the whole region changes nothing
        assert rewards["oracle"][1] == 100.0 > rewards["oracle"][0]  # the abstract procedure transfers to DEV
    finally:
        env.close()


def test_evaluator_plays_the_toy_suite_in_process() -> None:
    evaluator = Evaluator("toy", AgentConfig(max_steps=8), Store(":memory:"))
    try:
        from dreamer_gym.memory import MemoryBank

        proc = toy_suite.SPEC.procedures["light-lamp"]
        bank = MemoryBank([MemoryEntry("procedure", f"To {proc.goal}: {proc.steps}.", "light-lamp"),
                           MemoryEntry("fact", "The table holds keys and matches of every colour.", "unlock-door"),
                           MemoryEntry("insight", "Unlocking a door needs the key the task names.", "unlock-door")])
        suite = make_suite("toy")
        episodes = []
        for v in (100, 101):
            suite.start(EpisodeTask("light-lamp", v))
            episodes.append(EvalEpisode(EpisodeTask("light-lamp", v), suite.task_description()))
        results = evaluator.evaluate(bank, episodes)
        assert [r.score for r in results] == [100.0, 100.0]
        assert evaluator.evaluate(bank, episodes) == results and evaluator.stats.hits == 2
    finally:
        evaluator.close()
