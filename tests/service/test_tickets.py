"""Episode tickets and derived seeds (issue 29) on the real latency suite: the evaluation draw is the reset
seed's without a secret and the secret's HMAC of it with one; a service killed between `open` and commit
re-opens its live tickets and the commit replays."""
from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest

from dreamer_gym.envs.config import ConsolidationConfig
from dreamer_gym.errors import RewardServiceError
from dreamer_gym.pool import load_or_build_pool
from dreamer_gym.service import CommitRequest, ProcessRewardService, derive_episode_seed, draw_episodes


def _draws(service: ProcessRewardService, family: str, seeds: range) -> list[list[tuple[str, int]]]:
    out = []
    for seed in seeds:
        token = service.open(0, family, seed).token
        info = service.commit(CommitRequest(0, family, token, ())).info
        out.append([(e["family"], e["variation"]) for e in info["episodes"]])
    return out


def test_the_draw_is_the_seed_s_without_a_secret_and_hidden_with_one(config: ConsolidationConfig) -> None:
    pool = load_or_build_pool(config.pool, config.suite, None)
    family = sorted({e.family for e in pool.banks[0]})[0]

    def expected(seed: int) -> list[tuple[str, int]]:
        rng = np.random.default_rng(seed)
        return [(e.task.family, e.task.variation)
                for e in draw_episodes(pool, family, config.split, config.eval_in_family, config.eval_other, rng)]

    seeds = range(6)
    with ProcessRewardService(config) as plain, ProcessRewardService(config, episode_secret="fresh") as secret:
        assert _draws(plain, family, seeds) == [expected(s) for s in seeds]
        hidden = _draws(secret, family, seeds)
    assert hidden == [expected(derive_episode_seed(s, "fresh")) for s in seeds]
    assert hidden != [expected(s) for s in seeds]
    assert derive_episode_seed(5, None) == 5 and derive_episode_seed(5, b"k") != derive_episode_seed(5, b"l")


def test_a_service_killed_between_open_and_commit_reopens_the_ticket(config: ConsolidationConfig) -> None:
    with ProcessRewardService(config) as reference:
        family = sorted({e.family for e in reference.public_pool().banks[0]})[0]
        want = reference.commit(CommitRequest(0, family, reference.open(0, family, 9).token, ()))
    with ProcessRewardService(config) as service:
        ticket = service.open(0, family, 9)
        pid = service.pid
        os.kill(pid, signal.SIGKILL)
        time.sleep(0.2)
        got = service.commit(CommitRequest(0, family, ticket.token, ()))
        assert service.restarts == 1 and service.pid != pid
        assert got == want
        with pytest.raises(RewardServiceError, match="not a live ticket"):  # spent in the new process too
            service.commit(CommitRequest(0, family, ticket.token, ()))
