"""Held-out topics and banks (issue 11): the training pool and the training id never touch them.

Checked on the shipped pool files themselves (their raw text, not only their parsed fields) and on 1,000
training resets with the service's own episode draw. No simulator runs here.
"""
from __future__ import annotations

import gzip
import json
from importlib import resources

import gymnasium as gym
import numpy as np
import pytest

from dreamer_gym.contract.ids import ENV_IDS
from dreamer_gym.leaderboard import load_track
from dreamer_gym.pool import load_pool
from dreamer_gym.service.referee import draw_episodes
from dreamer_gym.suites import get_suite_spec

ENV_ID = "MemoryConsolidation-ScienceWorld-v1"
SPEC = get_suite_spec("scienceworld")
TRACK = load_track("scienceworld")


@pytest.fixture(scope="module")
def pools():
    train = load_pool(ENV_IDS[ENV_ID].pool, ENV_IDS[ENV_ID].pool_hash)
    held = load_pool(TRACK.pool, TRACK.pool_hash)
    return train, held


def _raw(name: str) -> str:
    path = resources.files("dreamer_gym") / "data" / f"{name}.json.gz"
    with gzip.open(str(path), "rt", encoding="utf-8") as fh:
        return fh.read()


def test_held_out_families_are_whole_topics_apart_from_training():
    held, train = set(SPEC.held_out_families), set(SPEC.families)
    assert len(held) >= 4 and len(train) + len(held) >= 10 and not held & train
    held_topics = {SPEC.topics[f] for f in held}
    assert not held_topics & {SPEC.topics[f] for f in train}
    assert set(TRACK.families) == held and TRACK.held_out and TRACK.split == "test"


def test_training_pool_file_holds_no_held_out_family_or_bank(pools):
    train, held = pools
    assert set(train.families) == set(SPEC.families) and set(held.families) == set(SPEC.held_out_families)
    assert len(train.banks) >= 6 and len(held.banks) >= 3
    assert not set(train.seeds) & set(held.seeds)
    assert not {b.hash for b in train.banks} & {b.hash for b in held.banks}
    assert not {e.id for b in train.banks for e in b.entries} & {e.id for b in held.banks for e in b.entries}
    assert not set(train.trajectories) & set(held.trajectories)
    assert {t.family for t in train.trajectories.values()} <= set(SPEC.families)
    assert {e.family for b in train.banks for e in b.entries} <= set(SPEC.families)
    for split in ("dev", "test"):
        assert set(train.task_texts[split]) <= set(SPEC.families)
    assert set(train.train_gold) <= set(SPEC.families)
    # the raw file: no held-out family's name, and none of its task texts, anywhere in it
    raw = _raw(ENV_IDS[ENV_ID].pool).lower()
    for family in SPEC.held_out_families:
        assert family not in raw
    held_texts = {t for split in held.task_texts.values() for fam in split.values() for t in fam.values()}
    held_texts |= {t.task_description for t in held.trajectories.values()}
    assert held_texts and not any(text.lower() in raw for text in held_texts)
    assert "life span" not in raw and "life stages" not in raw


def test_a_thousand_training_resets_never_touch_the_held_out(pools):
    train, held = pools
    held_banks = {b.hash for b in held.banks}
    held_texts = {t for split in held.task_texts.values() for fam in split.values() for t in fam.values()}
    env = gym.make(ENV_ID, service="inprocess")
    seen_families, seen_banks = set(), set()
    try:
        for seed in range(1000):
            _, info = env.reset(seed=seed)
            assert info["family"] not in SPEC.held_out_families and info["bank_hash"] not in held_banks
            ids = {e["id"] for e in info["region"]}
            assert {e.family for e in train.banks[info["bank"]].entries if e.id in ids} == {info["family"]}
            seen_families.add(info["family"])
            seen_banks.add(info["bank_hash"])
            # the evaluation episodes this commit would score on, drawn as the service draws them
            episodes = draw_episodes(train, info["family"], "dev", 3, 2,
                                     np.random.default_rng(env.unwrapped._episode_seed))
            for ep in episodes:
                assert ep.task.family in SPEC.families and ep.description not in held_texts
    finally:
        env.close()
    assert seen_families == set(SPEC.families) and seen_banks == {b.hash for b in train.banks}


def test_the_held_out_track_pins_its_pool_and_a_training_track_cannot_hold_held_out_families(tmp_path):
    import yaml

    from dreamer_gym.errors import ConfigError

    data = {**TRACK.data(), "families": list(TRACK.families), "banks": list(TRACK.banks)}
    for bad, match in (({"pool_hash": None}, "pinned"), ({"families": ["grow-plant"]}, "not held out"),
                       ({"pool": None, "pool_hash": None}, "held-out families")):
        path = tmp_path / "t.yaml"
        path.write_text(yaml.safe_dump({**data, **bad}))
        with pytest.raises(ConfigError, match=match):
            load_track(path)


def test_every_pool_hash_and_size_is_as_documented():
    """The pinned hashes are the files' (a rebuilt pool is a changed id), and the package data stays small."""
    for name, expected in ((ENV_IDS[ENV_ID].pool, ENV_IDS[ENV_ID].pool_hash), (TRACK.pool, TRACK.pool_hash)):
        assert json.loads(_raw(name))["hash"] == expected
        size = (resources.files("dreamer_gym") / "data" / f"{name}.json.gz").stat().st_size  # type: ignore[attr-defined]
        assert size < 400_000, (name, size)


def test_a_suite_held_out_whole_scores_fresh_banks_of_its_own_families():
    """`alfworld-gen` (protocol 3) holds out the suite, not topics: its track pool is banks of the id's own families
    acquired on seeds the id's pool never used, sharing no bank with it. A few trajectories recur (the same TRAIN
    game played the same way by two seeds' writers: 3 of 351, and 9 of 893 entries), never a bank."""
    track = load_track("alfworld-gen")
    spec = get_suite_spec("alfworld-gen")
    assert track.held_out and not spec.held_out_families and set(track.families) <= set(spec.families)
    own = ENV_IDS["MemoryConsolidation-ALFWorldGen-v1"]
    id_pool, fresh = load_pool(own.pool, own.pool_hash), load_pool(track.pool, track.pool_hash)
    assert len(fresh.banks) == len(track.banks) >= 15 and not set(fresh.seeds) & set(id_pool.seeds)
    assert not {b.hash for b in fresh.banks} & {b.hash for b in id_pool.banks}
    assert len(set(fresh.trajectories) & set(id_pool.trajectories)) <= 0.02 * len(fresh.trajectories)
    assert json.loads(_raw(track.pool))["hash"] == track.pool_hash
