"""The reward host (what async vector envs share): clients in other threads or processes, commits that arrive
together scored in one batch, errors delivered to the client that caused them, strangers refused."""
from __future__ import annotations

import threading
from multiprocessing import AuthenticationError
from multiprocessing.connection import Client

import pytest

from dreamer_gym.errors import RewardServiceError
from dreamer_gym.service import CommitRequest, InProcessRewardService
from dreamer_gym.service.host import ServiceHost


def requests_for(service: InProcessRewardService) -> list[CommitRequest]:
    bank = service.public_pool().banks[0]
    out = []
    for i, family in enumerate(sorted({e.family for e in bank})):
        kept = tuple(e for e in bank if e.family == family)[:1]  # keep one entry of the region
        out.append(CommitRequest(0, family, service.open(0, family, i).token, emitted=kept))
    return out


def test_commits_arriving_together_are_one_batch_with_the_direct_results(config):
    direct = InProcessRewardService(config)
    expected = [direct.commit(r) for r in requests_for(direct)]
    direct.close()
    service = InProcessRewardService(config)
    host = ServiceHost(service, batch_window_s=0.5)
    try:
        requests = requests_for(service)
        got: dict[int, object] = {}
        threads = [threading.Thread(target=lambda i=i: got.__setitem__(i, host.client().commit(requests[i])))
                   for i in range(len(requests))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert [got[i] for i in range(len(requests))] == expected
        assert host.batch_sizes == [len(requests)]  # both clients' commits: one evaluation run
        assert expected[0].reward is not None and expected[0].info["score_before"] >= 0
    finally:
        host.close()
        service.close()


def test_a_bad_request_fails_its_client_only_and_strangers_are_refused(config):
    service = InProcessRewardService(config)
    host = ServiceHost(service)
    try:
        client = host.client()
        with pytest.raises(RewardServiceError, match="bank_index"):
            client.commit(CommitRequest(99, "open-safe", "no-token", ()))
        assert client.stats()["failures"] == 0  # the host serves on
        with pytest.raises(AuthenticationError):
            Client(host.address, authkey=b"not the key")
        assert len(client.public_pool().banks) == 1
    finally:
        host.close()
        service.close()
