"""Vector envs that share evaluation (``gym.make_vec(id, num_envs=N)``'s entry point, sync and async) against
separate envs (gymnasium's own ``SyncVectorEnv``), on real ScienceWorld: identical results, one reward service
and one simulator instead of N, a step's commits scored in one batch."""
from __future__ import annotations

import gymnasium as gym
import pytest

import dreamer_gym  # noqa: F401 - registers the ids
from dreamer_gym.consolidators.base import call
from dreamer_gym.contract.ids import REGISTERED
from dreamer_gym.envs.vector import SharedAsyncVectorEnv, SharedSyncVectorEnv, make_shared_vec
from dreamer_gym.errors import ConfigError, FrozenParameterError, RewardServiceError

from helpers import SMALL, child_jvms, make_env

pytestmark = pytest.mark.jvm
ENV_ID = "MemoryConsolidation-ScienceWorld-v1"
N = 2


def one_round(envs: gym.vector.VectorEnv) -> dict:
    """Reset on fixed seeds, keep half of each region, commit both in the same step, then one more step
    (gymnasium's next-step autoreset); what came back, and the JVMs this round started."""
    running = child_jvms()  # JVMs of other tests' fixtures (a session-scoped env) are not this round's
    _, infos = envs.reset(seed=[5, 6])
    keep = [[e["id"] for e in region][: len(region) // 2] for region in infos["region"]]
    envs.step([call("keep", ids=ids) for ids in keep])
    _, rewards, terminated, _, infos = envs.step([call("commit")] * N)
    jvms = len(child_jvms() - running)
    obs, *_ = envs.step([call("commit")] * N)  # the autoreset step: fresh episodes, full budgets
    return {"rewards": rewards.tolist(), "terminated": terminated.tolist(), "jvms": jvms,
            "scores": list(zip(infos["score_before"].tolist(), infos["score_after"].tolist())),
            "banks_after": infos["bank_after"].tolist(), "budgets_after_reset": obs["budget"][:, 0].tolist()}


# The round runs on an experiment of the id with the smallest evaluation (helpers.SMALL: 2 episodes a commit, the
# id's 5 before issue 39: CI time); what `gym.make_vec` of the id itself builds is checked in the last test.
EXPERIMENT = {**{k: v for k, v in REGISTERED[ENV_ID].items() if k != "frozen"}, **SMALL}


@pytest.fixture(scope="module")
def separate() -> dict:
    envs = gym.vector.SyncVectorEnv([lambda: make_env(ENV_ID) for _ in range(N)])  # gymnasium's own, as make_vec's
    try:
        return one_round(envs)
    finally:
        envs.close()


@pytest.mark.timeout(600)
@pytest.mark.parametrize("vector_mode, cls", [("sync", SharedSyncVectorEnv), ("async", SharedAsyncVectorEnv)])
def test_shared_evaluation_gives_the_separate_envs_results_with_one_simulator(separate, vector_mode, cls):
    envs = make_shared_vec(num_envs=N, vector_mode=vector_mode, **EXPERIMENT)  # the ids' vector_entry_point
    try:
        assert isinstance(envs, cls)
        shared = one_round(envs)
        assert envs.batch_sizes == [N]  # both commits of the step: one evaluation run
        host = getattr(envs, "host", None)
    finally:
        envs.close()
    assert {k: v for k, v in shared.items() if k != "jvms"} == {k: v for k, v in separate.items() if k != "jvms"}
    assert separate["rewards"][0] != 0.0 and separate["terminated"] == [True] * N  # a real score change
    assert separate["jvms"] == N and shared["jvms"] == 1  # one simulator instead of one per sub-env
    if host is not None:  # the async envs' host stopped with them
        with pytest.raises(RewardServiceError, match="cannot reach the reward host"):
            host.client().stats()


def test_the_default_make_vec_shares_and_bad_settings_raise():
    envs = gym.make_vec(ENV_ID, num_envs=2)
    try:
        assert isinstance(envs, SharedSyncVectorEnv)
        assert all(e.unwrapped.service is envs.service for e in envs.envs)
    finally:
        envs.close()
    with pytest.raises(ConfigError, match="`vector_mode` to be one of"):
        gym.make_vec(ENV_ID, num_envs=2, vector_mode="threads")
    with pytest.raises(FrozenParameterError, match="eval_in_family"):
        gym.make_vec(ENV_ID, num_envs=2, eval_in_family=1)
