"""The frozen bank pool: shipped, hash-pinned, and reproducible from real acquisition."""
from __future__ import annotations

import pytest

from dreamer_gym.acquisition import AcquisitionConfig, acquire
from dreamer_gym.contract.ids import SCIENCEWORLD_POOL_HASH
from dreamer_gym.errors import PoolHashMismatch
from dreamer_gym.pool import load_pool
from dreamer_gym.suites.scienceworld import ScienceWorldSuite


def test_shipped_pool_matches_pinned_hash() -> None:
    pool = load_pool("scienceworld-v0", SCIENCEWORLD_POOL_HASH)
    assert pool.hash == SCIENCEWORLD_POOL_HASH
    assert len(pool.banks) == 6
    # every entry's provenance points at a stored trajectory
    for bank in pool.banks:
        for entry in bank:
            for p in entry.provenance:
                assert p.trajectory_id in pool.trajectories
                assert 0 <= p.start <= p.end < len(pool.trajectories[p.trajectory_id].steps)


def test_wrong_pinned_hash_is_refused() -> None:
    with pytest.raises(PoolHashMismatch, match="pins"):
        load_pool("scienceworld-v0", "p0000000000000000")


def test_bank_looks_like_fast_written_memory() -> None:
    bank = load_pool("scienceworld-v0").banks[0]
    kinds = {e.kind for e in bank}
    assert {"procedure", "insight", "fact"} <= kinds
    procedures = [e for e in bank if e.kind == "procedure"]
    # verbatim, variation-specific procedures ...
    assert all(any(t.startswith("variation:") for t in e.tags) for e in procedures)
    # ... near-duplicate texts across sessions, and conflicting location facts
    texts = [e.text for e in bank]
    assert len(set(texts)) < len(texts)
    locations: dict[str, set[str]] = {}
    for e in bank:
        if e.kind == "fact" and " can be found in the " in e.text:
            thing, room = e.text.removeprefix("The ").rstrip(".").split(" can be found in the ")
            locations.setdefault(thing, set()).add(room)
    assert any(len(rooms) > 1 for rooms in locations.values())


@pytest.mark.jvm
def test_rebuilding_seed_0_reproduces_the_shipped_bank() -> None:
    pool = load_pool("scienceworld-v0")
    gold = {}
    with ScienceWorldSuite() as suite:
        def gold_path(task):
            if task not in gold:
                gold[task] = suite.gold_path(task)
            return gold[task]

        bank, trajectories = acquire(suite, AcquisitionConfig(families=pool.families), seed=0, gold=gold_path)
    assert bank.hash == pool.banks[0].hash
    assert {t.id for t in trajectories} <= set(pool.trajectories)
    # the JVM is launched deterministic (see DEFAULT_JAVA_OPTS): its gold paths equal the recorded ones
    for task, path in gold.items():
        assert tuple(path) == pool.train_gold[task.family][task.variation]
