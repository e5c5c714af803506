"""`check_consolidator` passes the shipped policies and names each breach of the contract."""
from __future__ import annotations

import json

import pytest

import dreamer_gym  # noqa: F401 - registers the ids
from dreamer_gym.consolidators import KeepAllConsolidator, RandomConsolidator
from dreamer_gym.testing import ConsolidatorCheckError, check_consolidator

from helpers import make_env


@pytest.fixture(scope="module")
def env():
    env = make_env("MemoryConsolidation-ScienceWorld-v0", eval_in_family=1, eval_other=0, max_tool_calls=6)
    yield env
    env.close()


@pytest.mark.jvm
@pytest.mark.parametrize("policy", [KeepAllConsolidator(), RandomConsolidator(seed=3)], ids=["keep-all", "random"])
def test_shipped_policies_pass(env, policy) -> None:  # noqa: ANN001
    report = check_consolidator(policy, env, seeds=(0, 1), family="use-thermometer")
    assert report.deterministic is True and report.invalid_rate == 0.0
    assert len(report.returns) == 2 and all(1 <= n <= 6 for n in report.tool_calls)


class ReturnsAList:
    name = "a-list"

    def actions(self, env, obs, info):  # noqa: ANN001, ANN201
        return [json.dumps({"tool": "commit"})]


class YieldsADict:
    name = "a-dict"

    def actions(self, env, obs, info):  # noqa: ANN001, ANN201
        yield {"tool": "commit"}


class RaisesMidway:
    name = "raises"

    def actions(self, env, obs, info):  # noqa: ANN001, ANN201
        yield json.dumps({"tool": "read_entry", "id": info["region"][0]["id"]})
        raise KeyError("region_text")


class TooLong:
    name = "too-long"

    def actions(self, env, obs, info):  # noqa: ANN001, ANN201
        yield json.dumps({"tool": "search", "query": "x" * 20_000})


class Nameless:
    def actions(self, env, obs, info):  # noqa: ANN001, ANN201
        yield json.dumps({"tool": "commit"})


@pytest.mark.parametrize("policy, message", [
    (ReturnsAList(), r"'a-list', episode seed=0: actions\(\) must return an iterator \(a generator\) of tool calls, got list"),
    (YieldsADict(), r"'a-dict', episode seed=0, call 1: expected a JSON string, got dict"),
    (RaisesMidway(), r"'raises', episode seed=0, call 2: the policy raised KeyError"),
    (TooLong(), r"'too-long', episode seed=0, call 1: the action is not in the env's action space"),
    (Nameless(), r"Nameless: expected a non-empty `name` attribute"),
], ids=["list", "dict", "raises", "too-long", "nameless"])
def test_each_breach_is_named(env, policy, message: str) -> None:  # noqa: ANN001
    with pytest.raises(ConsolidatorCheckError, match=message):
        check_consolidator(policy, env, seeds=(0,))
