"""The action space samples schema-valid JSON tool calls; it still contains any charset string."""
from __future__ import annotations

import copy
import json

import gymnasium as gym
import jsonschema
import numpy as np
import pytest

import dreamer_gym  # noqa: F401 - registers the ids
from dreamer_gym.envs.schema import tool_call_schema
from dreamer_gym.envs.spaces import CHARSET, SAMPLED_TOOLS, ToolCallSpace
from dreamer_gym.envs.tools import TOOLS, parse_action

from helpers import make_env

ENV_ID = "MemoryConsolidation-ScienceWorld-v1"


@pytest.fixture(scope="module")
def action_space():
    env = gym.make(ENV_ID)  # no reset: building the spaces loads nothing
    yield env.action_space
    env.close()


def test_samples_are_schema_valid_tool_calls(action_space):
    assert isinstance(action_space, ToolCallSpace)
    action_space.seed(0)
    schema = tool_call_schema()  # no region: ids are any string
    seen = set()
    for _ in range(200):
        action = action_space.sample()
        assert action_space.contains(action)
        call = parse_action(action)  # raises ToolError on a malformed call
        jsonschema.validate(json.loads(action), schema)
        seen.add(call.name)
    assert seen == set(SAMPLED_TOOLS) == set(TOOLS) - {"commit"}


def test_samples_come_from_the_space_rng():
    a, b = ToolCallSpace(16_384, seed=3), ToolCallSpace(16_384, seed=3)
    assert [a.sample() for _ in range(20)] == [b.sample() for _ in range(20)]
    c = copy.deepcopy(a)  # what vector envs do with a space
    assert [a.sample() for _ in range(5)] == [c.sample() for _ in range(5)]


def test_commit_is_drawn_only_when_asked():
    space = ToolCallSpace(16_384, tools=tuple(TOOLS), seed=0)
    names = {parse_action(space.sample()).name for _ in range(300)}
    assert names == set(TOOLS)
    assert json.loads(ToolCallSpace(100, tools=("commit",), seed=0).sample()) == {"tool": "commit"}


def test_contains_is_the_text_space_s(action_space):
    assert action_space.contains("not json at all")
    assert action_space.contains("")
    assert action_space.contains(CHARSET)
    assert not action_space.contains("caf\u00e9")
    assert not action_space.contains("x" * (action_space.max_length + 1))
    assert not action_space.contains(7)


def test_a_mask_falls_back_to_characters():
    space = ToolCallSpace(10, seed=0)
    mask = np.zeros(len(space.character_list), dtype=np.int8)
    mask[space.character_list.index("a")] = 1
    assert set(space.sample(mask=(5, mask))) == {"a"}


def test_vector_env_samples_parse():
    envs = gym.make_vec(ENV_ID, num_envs=2, vectorization_mode="sync")
    try:
        envs.action_space.seed(1)
        for _ in range(10):
            for action in envs.action_space.sample():
                parse_action(action)
    finally:
        envs.close()


def test_a_sampled_step_is_an_observation_not_an_exception():
    env = make_env(ENV_ID, eval_in_family=1, eval_other=0)
    try:
        env.reset(seed=0)
        env.action_space.seed(0)
        for _ in range(20):  # random ids are refused as observations; nothing raises, nothing commits
            _, _, terminated, truncated, info = env.step(env.action_space.sample())
            assert not terminated and not truncated
            assert info["last_error"] is None or "JSON" not in info["last_error"]
    finally:
        env.close()
