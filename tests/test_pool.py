"""The frozen bank pool: shipped, hash-pinned, and reproducible from real acquisition."""
from __future__ import annotations

import gzip
import json

import pytest

from dreamer_gym.acquisition import AcquisitionConfig, acquire
from dreamer_gym.contract.ids import SCIENCEWORLD_POOL_HASH
from dreamer_gym.errors import PoolHashMismatch
from dreamer_gym.memory import RegionScheme
from dreamer_gym.pool import derive_pool_file, load_pool
from dreamer_gym.suites.base import EpisodeTask
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
    """The noisy writer plays the recorded gold paths; the JVM computes one task's gold path per family again.
    (It computed all 19, two thirds of the test's time; issue 39: CI time.)"""
    pool = load_pool("scienceworld-v0")
    first_task: dict[str, EpisodeTask] = {}

    def recorded_gold(task: EpisodeTask) -> tuple[str, ...]:
        first_task.setdefault(task.family, task)
        return pool.train_gold[task.family][task.variation]

    with ScienceWorldSuite() as suite:
        bank, trajectories = acquire(suite, AcquisitionConfig(families=pool.families), seed=0, gold=recorded_gold)
        assert bank.hash == pool.banks[0].hash
        assert {t.id for t in trajectories} <= set(pool.trajectories)
        # the JVM is launched deterministic (see DEFAULT_JAVA_OPTS): its gold paths equal the recorded ones
        assert sorted(first_task) == sorted(pool.families)
        for task in first_task.values():
            assert tuple(suite.gold_path(task)) == pool.train_gold[task.family][task.variation], task


def test_a_derived_pool_is_its_base_cut_into_other_regions(tmp_path) -> None:
    base = load_pool("scienceworld-windows-v0")
    derived = load_pool("scienceworld-windows-r3-v0", "p28d93d125475cebe")
    assert derived.banks == base.banks and derived.trajectories == base.trajectories
    assert derived.region_scheme == RegionScheme("window", sessions=4, stride=2, retrieved=3)
    assert derived.hash != base.hash  # the region scheme is part of what a pool's hash pins
    # a window of the derived pool holds the older entries its episodes retrieved; the base's does not
    key = base.region_keys(0)[2]
    with_retrieved = derived.region_scheme.select(derived.banks[0], key, derived.trajectories, 50).entry_ids
    written = base.region_scheme.select(base.banks[0], key, base.trajectories, 50).entry_ids
    assert set(written) < set(with_retrieved)
    # writing it again reproduces the shipped file's pool; a base of other banks is refused by its pinned hash
    again = derive_pool_file("scienceworld-windows-v0", derived.region_scheme, tmp_path / "again.json.gz")
    assert again.hash == derived.hash
    bad = tmp_path / "bad.json.gz"
    with gzip.open(bad, "wt") as fh:
        json.dump({"derived_from": "scienceworld-windows-v0", "base_hash": "p0000000000000000",
                   "region_scheme": {"kind": "window", "retrieved": 3}}, fh)
    with pytest.raises(PoolHashMismatch, match="pins p0000000000000000"):
        load_pool(str(bad))
    with gzip.open(bad, "wt") as fh:
        json.dump({"derived_from": "scienceworld-windows-v0"}, fh)
    with pytest.raises(ValueError, match="needs `base_hash`"):
        load_pool(str(bad))
