"""`check_consolidator` passes the shipped policies and names each breach of the contract."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import dreamer_gym  # noqa: F401 - registers the ids
from dreamer_gym.consolidators import KeepAllConsolidator, RandomConsolidator
from dreamer_gym.testing import ConsolidatorCheckError, check_consolidator

from helpers import make_env

ROOT = Path(__file__).resolve().parents[2]


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


def documented_consolidator() -> type:
    """``MyConsolidator`` as docs/baselines.md, "Your own consolidator", writes it: the smallest the protocol allows."""
    section = (ROOT / "docs" / "baselines.md").read_text().split("## Your own consolidator", 1)[1]
    block = next(b for b in re.findall(r"```python\n(.*?)```", section, flags=re.S) if "class MyConsolidator" in b)
    namespace: dict[str, object] = {}
    exec(compile(block, "docs/baselines.md", "exec"), namespace)  # noqa: S102 - the page's own code, run as written
    return namespace["MyConsolidator"]  # type: ignore[return-value]


def test_the_documented_consolidator_is_one_method() -> None:
    policy = documented_consolidator()()
    assert not hasattr(policy, "name") and callable(policy.actions)


@pytest.mark.jvm
def test_the_smallest_documented_consolidator_passes(env) -> None:  # noqa: ANN001
    """``actions(env, obs, info)`` is the whole protocol: the check asks for nothing more (no ``name``), as
    ``make_consolidator`` and the CLI ask for nothing more; the report labels it by its class."""
    report = check_consolidator(documented_consolidator()(), env, seeds=(0, 1), family="use-thermometer")
    keep_all = check_consolidator(KeepAllConsolidator(), env, seeds=(0, 1), family="use-thermometer")
    assert report.name == "MyConsolidator" and report.deterministic is True and report.invalid_rate == 0.0
    # one keep, then the commit the runner appends to a policy that stops early: keep-all's episode exactly
    assert report.tool_calls == [2, 2] and report.returns == keep_all.returns


class NoActions:
    name = "no-actions"

    def act(self, obs):  # noqa: ANN001, ANN201
        return json.dumps({"tool": "commit"})


@pytest.mark.parametrize("policy, message", [
    (ReturnsAList(), r"'a-list', episode seed=0: actions\(\) must return an iterator \(a generator\) of tool calls, got list"),
    (YieldsADict(), r"'a-dict', episode seed=0, call 1: expected a JSON string, got dict"),
    (RaisesMidway(), r"'raises', episode seed=0, call 2: the policy raised KeyError"),
    (TooLong(), r"'too-long', episode seed=0, call 1: the action is not in the env's action space"),
    (NoActions(), r"'no-actions', the policy: has no actions\(env, obs, info\) method"),
], ids=["list", "dict", "raises", "too-long", "no-actions"])
def test_each_breach_is_named(env, policy, message: str) -> None:  # noqa: ANN001
    with pytest.raises(ConsolidatorCheckError, match=message):
        check_consolidator(policy, env, seeds=(0,))
