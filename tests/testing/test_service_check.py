"""`check_service` passes the shipped reward services (in-process and process, paying and withholding; tickets
refused when used, foreign or missing) on the real latency suite, checks the failure path on a suite whose evaluation episodes crash, and names a breach."""
from __future__ import annotations

from pathlib import Path

import pytest

from dreamer_gym.envs.config import ConsolidationConfig
from dreamer_gym.pool import build_pool
from dreamer_gym.service import CommitRequest, CommitResult, InProcessRewardService, make_reward_service
from dreamer_gym.suites import StepOutcome, SuiteSpec, get_suite_spec, make_suite, register_suite
from dreamer_gym.suites.latency import LatencySuite
from dreamer_gym.testing import ServiceCheckError, check_service

LATENCY = get_suite_spec("latency")


class DevCrashingLatency(LatencySuite):
    """The latency game whose simulator dies on every DEV step (the split the reward plays): the pool builds
    (TRAIN plays, DEV only starts), every evaluation episode fails."""

    name = "latency-dev-crash"

    def step(self, action: str) -> StepOutcome:
        if self._task is not None and self._task.variation >= 100:
            raise RuntimeError("the simulator died")
        return super().step(action)


CRASHING = SuiteSpec(name="latency-dev-crash", adapter=DevCrashingLatency, families=LATENCY.families,
                     profile=LATENCY.profile, procedures=LATENCY.procedures, agent_max_steps=6)


def _config(spec: SuiteSpec, folder: Path) -> ConsolidationConfig:
    register_suite(spec, replace=True)
    pool = build_pool(make_suite(spec.name, latency_s=0.0), spec.families, seeds=(0,), eval_variations=4,
                      gold_variations=2)
    pool.save(path := folder / f"{spec.name}-v0.json.gz")
    return ConsolidationConfig(suite=spec.name, pool=str(path), eval_in_family=2, eval_other=1, store_path=":memory:")


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> ConsolidationConfig:
    return _config(LATENCY, tmp_path_factory.mktemp("latency"))


@pytest.mark.parametrize("name", ["inprocess", "process"])
def test_the_shipped_services_pass(config: ConsolidationConfig, name: str) -> None:
    with make_reward_service(name, config) as service:
        report = check_service(service)
    assert report.passed == ["public pool", "keep-all pays 0.0", "same request, same result",
                             "bad requests raise RewardServiceError", "stats", "finish"]
    assert report.rewards["commit(keep-all)"] == 0.0 and report.rewards["commit(drop-all)"] != 0.0


@pytest.mark.parametrize("name", ["inprocess", "process"])
def test_a_withholding_service_passes_and_pays_nothing(config: ConsolidationConfig, name: str) -> None:
    with make_reward_service(name, config, withhold=True) as service:
        report = check_service(service)
    assert report.passed == ["public pool", "withheld rewards, each region opens once",
                             "bad requests raise RewardServiceError", "stats", "finish"]
    assert set(report.rewards.values()) == {None}


@pytest.mark.parametrize("name", ["inprocess", "process"])
def test_a_service_whose_episodes_fail_raises_evaluation_failed(tmp_path: Path, name: str) -> None:
    crashing = _config(CRASHING, tmp_path)
    with make_reward_service(name, crashing, spec=CRASHING) as service:
        report = check_service(service, episodes_fail=True)
    assert report.passed == ["public pool", "failed evaluation raises EvaluationFailed"]


class PaysForNothing(InProcessRewardService):
    """The real in-process service with one defect: every commit earns a bonus, a kept region too."""

    def commit(self, request: CommitRequest) -> CommitResult:
        result = super().commit(request)
        return CommitResult(result.bank_after, (result.reward or 0.0) + 0.5, result.info)


def test_check_service_names_each_breach(config: ConsolidationConfig) -> None:
    with PaysForNothing(config) as service:
        with pytest.raises(ServiceCheckError, match=r"service 'PaysForNothing', commit\(keep-all\): keeping the region "
                                                    r"as it was must pay exactly 0\.0, paid 0\.5"):
            check_service(service)
    with InProcessRewardService(config) as service:
        with pytest.raises(ServiceCheckError, match=r"commit\(keep-all\) whose episodes fail: expected EvaluationFailed, "
                                                    "nothing was raised"):
            check_service(service, episodes_fail=True)
