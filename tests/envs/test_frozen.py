"""Every reward-defining field of a registered id is frozen; budgets are training knobs recorded in info;
experiments on an id are labelled not comparable; tracks are frozen data that measure their id on TEST."""
from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import pytest

import dreamer_gym  # noqa: F401 - registers the ids
from dreamer_gym.contract.frozen import BUDGET_FIELDS, REWARD_FIELDS, comparable_id
from dreamer_gym.envs.consolidation import ConsolidationEnv
from dreamer_gym.errors import ConfigError, FrozenParameterError
from dreamer_gym.leaderboard import PROTOCOL_VERSION, Track, TransferTrack, load_track, track_names

from helpers import call

ENV_ID = "MemoryConsolidation-ScienceWorld-v1"
CHANGED = {  # one changed value per reward-defining field
    "suite": "alfworld-gen", "pool": "other-pool", "pool_hash": "p0000000000000000", "split": "test",
    "eval_in_family": 1, "eval_other": 0, "size_coef": 0.5, "invalid_penalty": 0.0, "max_entry_tokens": 100,
    "max_region_entries": 10, "reward_agent": "llm", "agent_top_k": 3, "agent_max_steps": 12, "tool_contract": 0,
    "window_own_families": True,
}


def test_every_reward_field_has_a_case():
    assert set(CHANGED) == set(REWARD_FIELDS)


@pytest.mark.parametrize("field", REWARD_FIELDS)
def test_changing_a_reward_field_of_a_registered_id_raises(field):
    with pytest.raises(FrozenParameterError, match=f"`{field}` is frozen") as raised:
        gym.make(ENV_ID, **{field: CHANGED[field]})
    assert "ConsolidationEnv(...) directly" in str(raised.value)


def test_the_llm_model_is_frozen_on_llm_ids():
    with pytest.raises(FrozenParameterError, match="`llm.model`"):
        gym.make("MemoryConsolidation-ScienceWorld-LLM-v1", llm={"model": "some/other-model"})


@pytest.mark.parametrize("field", BUDGET_FIELDS)
def test_budgets_stay_free_on_training_ids(field):
    env = gym.make(ENV_ID, **{field: 7})
    assert getattr(env.unwrapped.config, field) == 7
    assert comparable_id(env.unwrapped.config) == ENV_ID  # a budget changes no reward definition
    env.close()


def commit_whole_region(env: gym.Env) -> dict:
    """Keep the whole region and commit: the bank after is the bank before, so the commit plays its episodes once
    (the second scoring is served from the evaluation cache; issue 39: CI time)."""
    _, info = env.reset(seed=0)
    env.step(call("keep", ids=[e["id"] for e in info["region"]]))
    *_, info = env.step(call("commit"))
    assert info["bank_after"] == info["bank_before"]
    return info


@pytest.mark.jvm
def test_commits_record_the_reward_definition_and_whether_they_are_comparable():
    env = gym.make(ENV_ID, max_tool_calls=9)
    try:
        info = commit_whole_region(env)
        assert info["env_id"] == ENV_ID and info["comparable"] is True
        assert info["reward_definition"]["size_coef"] == 0.02 and info["reward_definition"]["eval_other"] == 2
        assert info["budgets"] == {"max_tool_calls": 9, "max_emitted": 12}
    finally:
        env.close()
    experiment = ConsolidationEnv.experiment(ENV_ID, eval_in_family=1, eval_other=0)
    try:
        info = commit_whole_region(experiment)
        assert info["env_id"] is None and info["comparable"] is False
        assert info["reward_definition"]["eval_in_family"] == 1
    finally:
        experiment.close()


# --- tracks -----------------------------------------------------------------------------------------------------
def test_shipped_tracks_are_frozen_data_on_test():
    names = track_names()
    assert {"scienceworld", "alfworld-gen", "miniwob", "transfer"} <= set(names)
    for name in names:
        track = load_track(name)
        assert track.protocol_version == PROTOCOL_VERSION
        if isinstance(track, TransferTrack):
            members = track.tracks()
            assert members[0] == ("train suite", load_track("scienceworld"))
            assert {role for role, _ in members[1:]} == {"held out"}
            continue
        assert track.split == "test" and track.regions()
        config = track.config()
        assert config.eval_in_family + config.eval_other > 5  # more episodes than a training commit
        assert config.pool_hash is not None  # pinned: every machine scores the same pool


def test_leaderboards_folder_holds_the_same_track_files():
    here = Path(__file__).resolve().parents[2] / "leaderboards" / "tracks"
    assert sorted(p.stem for p in here.glob("*.yaml")) == list(track_names())


def test_a_track_that_measures_something_else_than_its_id_is_refused():
    data = load_track("scienceworld").data()
    with pytest.raises(ConfigError, match="`size_coef`"):
        Track(**{**data, "size_coef": 0.5})
    with pytest.raises(ConfigError, match="`split` must be 'test'"):
        Track(**{**data, "split": "dev"})
    with pytest.raises(ConfigError, match="unknown fields"):
        load_track(_write(data | {"bonus": 1}))


def _write(data: dict) -> Path:
    import tempfile

    import yaml

    path = Path(tempfile.mkdtemp()) / "bad.yaml"
    path.write_text(yaml.safe_dump({k: list(v) if isinstance(v, tuple) else v for k, v in data.items()}))
    return path
