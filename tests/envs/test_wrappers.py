"""Wrappers: one prompt string for LLM policies; fixed-size spaces for SB3-style libraries."""
from __future__ import annotations

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import dreamer_gym  # noqa: F401
from dreamer_gym.envs.tools import TOOLS
from dreamer_gym.envs.wrappers import ENTRY_FEATURES, EntryOpsWrapper, PromptObservation, entry_features

from helpers import make_env

ENV_ID = "MemoryConsolidation-ScienceWorld-v1"


def test_prompt_observation_holds_schema_region_and_budget() -> None:
    env = PromptObservation(make_env(ENV_ID, eval_in_family=1, eval_other=0))
    obs, info = env.reset(seed=3)
    assert isinstance(obs, str) and env.observation_space.contains(obs)
    for name in TOOLS:
        assert name in obs
    assert info["region"][0]["id"] in obs
    assert "tool calls left" in obs
    obs, reward, *_ = env.step('{"tool": "search", "query": "kitchen", "k": 2}')
    assert "Last result:" in obs
    env.close()


@pytest.mark.jvm
def test_entry_ops_wrapper_passes_checker_and_keep_all_is_zero() -> None:
    env = EntryOpsWrapper(make_env(ENV_ID, eval_in_family=1, eval_other=0))
    check_env(env, skip_render_check=True)
    obs, info = env.reset(seed=0)
    assert obs.shape == (50, len(ENTRY_FEATURES))
    n = info["n_entries"]
    assert obs[:n, :4].sum() == n and obs[n:].sum() == 0  # one kind per real entry, zero padding
    _, reward, terminated, truncated, info = env.step(np.ones(50, dtype=np.int64))
    assert terminated and not truncated
    assert info["reward_components"] == {"score_delta": 0.0, "size": 0.0}
    env.close()


def _entry(text: str, tags: tuple[str, ...] = (), kind: str = "insight") -> dict:
    return {"id": "e" + text[:12], "kind": kind, "text": text, "session": 2, "tags": list(tags),
            "provenance": [{"trajectory_id": "t1", "start": 0, "end": 4}, {"trajectory_id": "t2", "start": 3, "end": 3}]}


def test_entry_features_follow_tags_not_the_writer_s_english() -> None:
    col = {name: i for i, name in enumerate(ENTRY_FEATURES)}
    region = [
        _entry("'open door' raised the score from 0 to 10; the attempt failed and the score dropped."),
        _entry("Opening the door helps.", ("score-jump",)),
        _entry("Avoid the sink.", ("score-drop",), kind="pitfall"),
        _entry("To boil water: go to kitchen, focus on water.", ("verbatim", "variation:3"), kind="procedure"),
        _entry("An attempt ended early.", ("failure",)),
        _entry("The key can be found in the hallway.", ("location",), kind="fact"),
    ]
    feats = entry_features(region, max_entries=8)
    assert feats.shape == (8, len(ENTRY_FEATURES)) and feats[len(region):].sum() == 0
    tag_columns = ["verbatim", "variation_specific", "score_jump", "score_drop", "failure", "location"]
    assert feats[0, [col[c] for c in tag_columns]].sum() == 0  # the words without the tags score nothing
    assert feats[1, col["score_jump"]] == 1 and feats[2, col["score_drop"]] == 1
    assert feats[3, col["verbatim"]] == 1 and feats[3, col["variation_specific"]] == 1
    assert feats[4, col["failure"]] == 1 and feats[5, col["location"]] == 1
    assert feats[5, col["is_fact"]] == 1 and feats[3, col["is_procedure"]] == 1 and feats[2, col["is_pitfall"]] == 1
    assert feats[0, col["provenance_links"]] == 2 and feats[0, col["provenance_steps_div_10"]] == pytest.approx(0.6)
    assert feats[0, col["session"]] == 2


def test_entry_features_of_a_real_region_use_its_tags() -> None:
    env = make_env(ENV_ID, eval_in_family=1, eval_other=0)
    _, info = env.reset(seed=0)
    env.close()
    feats = entry_features(info["region"], 50)
    col = {name: i for i, name in enumerate(ENTRY_FEATURES)}
    for row, entry in zip(feats, info["region"]):
        assert row[col["score_jump"]] == float("score-jump" in entry["tags"])
        assert row[col["verbatim"]] == float("verbatim" in entry["tags"])
