"""The TRL ``environment_factory`` adapter: its tools as TRL and transformers see them, and batched scoring that
gives what ``env.step`` gives.

Everything is real: the shipped pool, the default process reward service, ScienceWorld and the
memory-following agent. The envs evaluate one own-family episode per commit (an experiment, as in
tests/envs) to stay fast.
"""
from __future__ import annotations

import inspect
import json
from importlib import resources

import jsonschema
import pytest
from transformers.utils import get_json_schema
from transformers.utils.chat_template_utils import render_jinja_template

from dreamer_gym.envs.tools import TOOLS
from dreamer_gym.memory import KINDS
from dreamer_gym.methods.grpo.trl_env import (
    EPISODE_OVER,
    ConsolidationToolEnv,
    commit_reward,
    make_environment_factory,
)

from helpers import assert_same, call, make_env

ENV_ID = "MemoryConsolidation-ScienceWorld-v1"
CHEAP = {"eval_in_family": 1, "eval_other": 0}
SEED = 3
ROW = {"prompt": [{"role": "user", "content": "Consolidate this memory region."}]}  # what TRL passes besides seed


@pytest.fixture(scope="module")
def factory():
    with make_environment_factory(ENV_ID, experiment=True, **CHEAP) as f:
        yield f


@pytest.fixture(scope="module")
def region_ids(factory) -> list[str]:
    """The ids of the region that ``SEED`` draws (from a plain env of the same config)."""
    env = make_env(ENV_ID, reward_service=factory.service, **CHEAP)
    _, info = env.reset(seed=SEED)
    env.close()
    return [e["id"] for e in info["region"]]


def trl_tools(environment: object) -> dict[str, object]:
    """The tools GRPOTrainer exposes for ``environment``. TRL has no standalone function for this: the filter
    is inline in ``GRPOTrainer.__init__`` and ``_generate_and_score_completions`` (trl 1.16), replicated here:
    the class's functions (``inspect.isfunction``), minus ``reset``, ``get_reward`` and ``_private`` ones."""
    return {
        name: getattr(environment, name)
        for name, _ in inspect.getmembers(type(environment), predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    }


# --- (a) the tools as TRL and transformers see them -------------------------------------------------------------
def test_tools_are_the_env_tools_with_valid_schemas(factory):
    env = factory()
    tools = trl_tools(env)
    assert set(tools) == set(TOOLS)  # exactly the env's tools: no helper leaks in as a tool
    assert not hasattr(env, "get_reward")  # scoring is batched (commit_reward), not per env
    for name, method in tools.items():
        schema = get_json_schema(method)  # what apply_chat_template does with each tool
        function = schema["function"]
        assert function["name"] == name and function["description"]
        jsonschema.Draft202012Validator.check_schema(function["parameters"])
        assert set(function["parameters"]["properties"]) == set(inspect.signature(method).parameters)
    emit = get_json_schema(tools["emit"])["function"]["parameters"]
    assert set(emit["properties"]["kind"]["enum"]) == set(KINDS)
    assert emit["required"] == ["kind", "text", "provenance"]
    assert get_json_schema(tools["search"])["function"]["parameters"]["required"] == ["query"]  # k defaults to 5
    # the Qwen3 template TRL ships renders every tool into the prompt
    template = (resources.files("trl") / "chat_templates" / "qwen3.jinja").read_text()
    [rendered], _ = render_jinja_template([ROW["prompt"]], tools=list(tools.values()), chat_template=template,
                                          add_generation_prompt=True)
    for name in TOOLS:
        assert f'"name": "{name}"' in rendered


def test_a_contract_2_id_offers_its_own_tools_and_synthesize_reaches_the_env():
    """On ScienceWorldWindows-v1 (tool contract 2) the rollout class has `synthesize` and the bank-wide `search`;
    on the -v1 id above it has neither (test_tools_are_the_env_tools_with_valid_schemas)."""
    from dreamer_gym.envs.tools import tools_for

    with make_environment_factory("MemoryConsolidation-ScienceWorldWindows-v1", experiment=True, **CHEAP) as f:
        env = f()
        tools = trl_tools(env)
        assert set(tools) == set(tools_for(2))
        for name, method in tools.items():
            jsonschema.Draft202012Validator.check_schema(get_json_schema(method)["function"]["parameters"])
        text = env.reset(seed=SEED, **ROW)
        task = text.split("Bank context", 1)[1].split("\n")[1].split(":")[0]  # the first own task's line
        reply = tools["synthesize"](task=task, trajectories="all", min_support=0.5)
        assert env.invalid_calls == 0 and env.tool_counts == {"synthesize": 1}, reply
        assert tools["search"](query="door", scope="bank").strip()


def test_tool_arguments_from_the_schema_reach_the_env(factory, region_ids):
    """A call whose arguments validate against a tool's schema is taken by the env as that call."""
    env = factory()
    env.reset(seed=SEED, **ROW)
    tools = trl_tools(env)
    args = {"ids": region_ids[:2]}
    jsonschema.validate(args, get_json_schema(tools["keep"])["function"]["parameters"])
    assert tools["keep"](**args) == "kept 2 entries; the new region holds 2"
    assert env.tool_counts == {"keep": 1} and env.invalid_calls == 0


# --- (b) batched scoring = step ----------------------------------------------------------------------------------
@pytest.mark.jvm
def test_commit_reward_batches_and_matches_step(factory, region_ids, monkeypatch):
    ids = region_ids
    emitted = {"kind": "procedure", "text": "Focus on the task object first, then act on it step by step.",
               "provenance": ids[:1]}
    plans = {  # tool calls per rollout
        "committed": [("read_entry", {"id": ids[0]}), ("keep", {"ids": ids[:2]}), ("commit", {})],
        "open": [("read_entry", {"id": ids[0]}), ("keep", {"ids": ids[:2]})],  # commit_reward commits it
        "invalid": [("read_entry", {"id": "no-such-entry"}), ("keep", {"ids": ids[1:2]}), ("emit", emitted)],
    }
    # what commit_reward does for a rollout that did not commit: the region as it is (keep the rest, retract
    # what was written, commit), not the rollout's half-built region
    forced = {"open": [("keep", {"ids": ids[2:]}), ("commit", {})],
              "invalid": [("keep", {"ids": ids[:1] + ids[2:]}), ("retract", {"index": 1}), ("commit", {})]}

    # the reference: a plain env (its own process service) stepped through the same calls, commit included
    expected = {}
    ref = make_env(ENV_ID, **CHEAP)
    try:
        for name, plan in plans.items():
            ref.reset(seed=SEED)
            total = 0.0
            for tool, args in plan + forced.get(name, []):
                _, reward, terminated, truncated, info = ref.step(call(tool, **args))
                total += reward
            assert terminated and not truncated
            expected[name] = (total, info)
    finally:
        ref.close()

    # the same rollouts through the tools, scored by one commit_many
    service = factory.service
    batches: list[int] = []
    real_commit_many = service.commit_many
    monkeypatch.setattr(service, "commit_many", lambda requests: batches.append(len(requests)) or real_commit_many(requests))
    monkeypatch.setattr(service, "commit", lambda request: pytest.fail("commit_reward scored a commit on its own"))
    envs = [factory() for _ in plans]
    for env, plan in zip(envs, plans.values()):
        env.reset(seed=SEED, **ROW)
        for tool, args in plan:
            result = getattr(env, tool)(**args)
            assert isinstance(result, str) and result
    penalty = envs[2].env.unwrapped.config.invalid_penalty
    assert envs[2].invalid_calls == 1 and envs[2].tool_reward == pytest.approx(-penalty)
    rewards = commit_reward(completions=[[]] * len(envs), environments=envs)
    assert batches == [3]

    for env, (name, (total, info)), reward in zip(envs, expected.items(), rewards):
        assert reward == total, name
        assert_same(env.last_commit_info, info, name)
    assert [e.forced_commit for e in envs] == [False, True, True]
    # a forced commit keeps the region as it is: reward 0 but for the invalid-call penalties
    assert rewards[1] == 0.0 and rewards[2] == pytest.approx(-penalty) and rewards[0] != 0.0
    assert all(e.last_commit_info["bank_after"] == e.last_commit_info["bank_before"] for e in envs[1:])
    # scored rollouts keep their reward: no second commit, no second evaluation
    assert commit_reward(completions=[[]] * len(envs), environments=envs) == rewards
    assert batches == [3]
    assert envs[0].commit() == EPISODE_OVER


def test_commit_reward_refuses_envs_with_different_services(factory):
    shared = factory()
    alone = ConsolidationToolEnv(ENV_ID, experiment=True, **CHEAP)  # builds and owns its own service
    try:
        shared.reset(seed=SEED, **ROW)
        alone.reset(seed=SEED, **ROW)
        with pytest.raises(ValueError, match="share one reward service"):
            commit_reward(completions=[[], []], environments=[shared, alone])
    finally:
        alone.env.close()


# --- (c) the region is shown once ---------------------------------------------------------------------------------
def test_region_is_shown_once_then_only_results(factory, region_ids):
    env = factory()
    text = env.reset(seed=SEED, **ROW)
    region = env.env.unwrapped.region_text()
    header = region.splitlines()[0]
    assert text.startswith("\n\n")  # TRL appends it to the prompt's last message without a separator
    assert text.count(header) == 1 and region in text
    assert "Budget: 40 tool calls, 12 new entries (emit), 0 entries in the new region" in text
    assert not env.reset(seed=SEED, prompt="").startswith("\n")  # nothing to separate from
    lines = [line for line in region.splitlines()[1:] if line.strip()]
    for result in (env.keep(ids=region_ids[:1]), env.search(query="focus on the plant", k=3),
                   env.read_entry(id=region_ids[0])):
        assert header not in result and len(result) < len(region) // 2
        assert not any(line in result for line in lines if region_ids[0] not in line and len(line) > 40)


# --- (d) bad calls answer with the env's error text --------------------------------------------------------------
def test_bad_calls_return_errors_and_count(factory):
    env = factory()
    assert env.read_entry(id="x").startswith("ERROR: no episode")  # before reset: an answer, not an exception
    env.reset(seed=SEED, **ROW)
    bad = [
        env.read_entry(id="no-such-entry"),
        env.emit(kind="story", text="Water the plant.", provenance=["no-such-entry"]),
        env.read_trajectory(id="no-such-trajectory", start=0, end=3),
        env.search(query="plant", k=0),
        env.search(query="plant", k="5"),  # a wrong type, as a model may send it: the env refuses it
        env.keep(ids=[]),
        env.retract(index=0),
    ]
    for result in bad:
        assert result.startswith("ERROR: "), result
    assert "no entry" in bad[0] and "`kind`" in bad[1] and "must be one of" in bad[1]
    penalty = env.env.unwrapped.config.invalid_penalty
    assert env.invalid_calls == len(bad) and env.tool_reward == pytest.approx(-penalty * len(bad))
    assert env.commit().startswith("Committed 0 entries")
    assert env.keep(ids=["anything"]) == EPISODE_OVER and env.calls_after_end == 1
    assert sum(env.tool_counts.values()) == len(bad) + 2  # reset cleared the call made before it
    assert json.loads(json.dumps(dict(env.tool_counts)))  # plain counts, ready to log


def test_budget_running_out_commits(region_ids):
    with make_environment_factory(ENV_ID, experiment=True, max_tool_calls=2, **CHEAP) as small:
        env = small()
        env.reset(seed=SEED, **ROW)
        env.read_entry(id=region_ids[0])
        last = env.keep(ids=region_ids[:1])
        assert last.startswith("kept 1 entries") and "No tool calls left" in last
        assert env.env.unwrapped.pending_commit is not None
        assert env.search(query="plant", k=2) == EPISODE_OVER



def test_default_factory_builds_the_registered_id():
    """Without ``experiment`` the envs are ``gym.make`` of the id itself, all on the factory's one service."""
    with make_environment_factory(ENV_ID) as default:
        a, b = default(), default()
        a.reset(seed=SEED, **ROW)
        b.reset(seed=SEED + 1, **ROW)
        # gym.make's wrappers (their `spec` would deep-copy the service in its kwargs: read the unwrapped one)
        assert a.env.unwrapped.spec.id == ENV_ID and a.env.unwrapped is not a.env
        assert a.env.unwrapped.service is b.env.unwrapped.service is default.service
        assert a.env.unwrapped.config.eval_in_family == 3  # the id's evaluation, not an experiment's
