"""The prompted consolidator with the real SmolLM2-135M on the real env: guided decoding gives
well-formed calls, an unguided model that never emits a valid call still ends the episode in budget."""
from __future__ import annotations

import json

import jsonschema
import pytest

from dreamer_gym.consolidators.base import run_episode
from dreamer_gym.consolidators.prompted import PromptedConsolidator, extract_json_object
from dreamer_gym.envs.schema import tool_call_schema
from dreamer_gym.envs.tools import TOOLS

from helpers import make_env

ENV = "MemoryConsolidation-ScienceWorld-v0"
FAMILY = "use-thermometer"
# 4 entries keep each prompt short (CPU prefill); 3 tool calls leave the unguided test its 2 invalid calls before
# its streak guard commits, and the guided one 2 sampled calls, each a CPU prefill of ~1k tokens; the reward is
# scored on one in-family episode (issue 39, 40: CI time)
SMALL_REGION = {"max_region_entries": 4, "max_tool_calls": 3, "eval_other": 0}


@pytest.mark.parametrize(("text", "found"), [
    ('{"tool": "commit"}', '{"tool": "commit"}'),
    ('Sure, here it is:\n```json\n{"tool": "keep", "ids": ["a"]}\n```', '{"tool": "keep", "ids": ["a"]}'),
    ('{"tool": "emit", "text": "a } in a string", "kind": "fact"} trailing', '{"tool": "emit", "text": "a } in a string", "kind": "fact"}'),
    ('{not json} then {"tool": "commit"}', '{"tool": "commit"}'),
    ("no object at all", None),
    ('{"tool": "keep", "ids": [', None),
])
def test_extract_json_object(text: str, found: str | None) -> None:
    assert extract_json_object(text) == found


def test_tool_call_schema_accepts_what_the_env_accepts_and_pins_ids() -> None:
    region = [{"id": "e1", "provenance": [{"trajectory_id": "t1", "start": 0, "end": 3}]}, {"id": "e2", "provenance": []}]
    schema = tool_call_schema(region)
    good = [{"tool": "keep", "ids": ["e1", "e2"]}, {"tool": "read_trajectory", "id": "t1", "start": 0, "end": 2},
            {"tool": "emit", "kind": "procedure", "text": "To do X: a, b", "provenance": ["e1"]},
            {"tool": "commit"}, {"tool": "search", "query": "thermometer"}, {"tool": "retract", "index": 0},
            {"tool": "read_entry", "id": "e2"}]
    assert {g["tool"] for g in good} == set(TOOLS)
    for call in good:
        jsonschema.validate(call, schema)
    for bad in ({"tool": "keep", "ids": ["e9"]}, {"tool": "emit", "kind": "story", "text": "x", "provenance": ["e1"]},
                {"tool": "commit", "extra": 1}, {"tool": "drop"}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
    no_commit = tool_call_schema(region, tools=[t for t in TOOLS if t != "commit"])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"tool": "commit"}, no_commit)


@pytest.fixture(scope="module")
def env():
    e = make_env(ENV, **SMALL_REGION)
    yield e
    e.close()


@pytest.mark.jvm
def test_guided_prompted_consolidator_emits_well_formed_calls_and_gets_a_reward(env, smollm2_backend) -> None:
    policy = PromptedConsolidator(backend=smollm2_backend, guided=True)
    info = run_episode(env, policy, seed=0, options={"family": FAMILY})
    assert isinstance(info["return"], float) and "score_after" in info
    assert policy.stats.calls >= 1 and policy.stats.unparsed == 0
    schema = tool_call_schema(info["region"])
    for reply in policy.stats.replies:  # every sampled call is schema-valid JSON
        jsonschema.validate(json.loads(reply), schema)
    assert info["tool_calls_left"] >= 0 and policy.stats.calls <= SMALL_REGION["max_tool_calls"]
    assert not policy.stats.region_cut  # a 4-entry region fits the 4,096-token context


@pytest.mark.jvm
def test_model_that_never_emits_a_valid_call_still_ends_in_budget(env, smollm2_backend) -> None:
    """Unguided with 6 new tokens the real model cannot finish a JSON object: every call is invalid,
    the policy commits after its invalid streak, and the episode is recorded with its penalty."""
    policy = PromptedConsolidator(backend=smollm2_backend, guided=False, max_tokens=6, max_invalid_streak=2)
    info = run_episode(env, policy, seed=0, options={"family": FAMILY})
    assert info["invalid_calls"] == 2 and policy.stats.unparsed == 2
    assert info["size_after"]["entries"] == 0  # nothing was written
    assert info["return"] <= 0.02 + 1e-9  # at best the size term of an empty region


def test_region_is_cut_to_fit_a_small_context(env, smollm2_backend) -> None:
    """A region that does not fit the context is cut (never the instructions), and the cut is reported."""
    obs, info = env.reset(seed=0, options={"family": FAMILY})
    policy = PromptedConsolidator(backend=smollm2_backend)
    full = smollm2_backend.count_tokens(policy.messages(obs, []))
    small = PromptedConsolidator(backend=smollm2_backend, max_tokens=64)
    original = smollm2_backend.max_context
    smollm2_backend.max_context = full - 40 + 64  # 40 tokens too small for the full prompt
    try:
        chat = small.messages(obs, [])
        assert small.stats.region_cut
        assert smollm2_backend.count_tokens(chat) <= smollm2_backend.max_context - 64
        assert "Tools:" in chat[0]["content"] and "region cut" in chat[1]["content"]
    finally:
        smollm2_backend.max_context = original
