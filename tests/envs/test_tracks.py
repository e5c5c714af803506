"""Registered ids: each is one declaration; what defines it is frozen, and the rest comes from the suite."""
from __future__ import annotations

import dataclasses

import gymnasium as gym
import pytest

import dreamer_gym  # noqa: F401 - registers the ids
from dreamer_gym.contract.config import ConsolidationConfig
from dreamer_gym.contract.ids import ENV_IDS, FROZEN_FIELDS, REGISTERED, EnvIdSpec, env_kwargs
from dreamer_gym.suites import get_suite_spec

CONFIG_FIELDS = {f.name for f in dataclasses.fields(ConsolidationConfig)}


def test_frozen_fields_are_the_declaration_s_fields():
    """Every reward-defining field is declared per id (and so frozen); budgets and plumbing are not."""
    from dreamer_gym.contract.frozen import BUDGET_FIELDS, REWARD_FIELDS

    assert set(FROZEN_FIELDS) == set(REWARD_FIELDS)
    assert set(FROZEN_FIELDS) <= CONFIG_FIELDS
    assert not set(FROZEN_FIELDS) & {*BUDGET_FIELDS, "workers", "executor", "service", "store_path"}


@pytest.mark.parametrize("env_id", sorted(ENV_IDS))
def test_kwargs_are_derived_from_one_declaration(env_id):
    spec, kwargs = ENV_IDS[env_id], gym.spec(env_id).kwargs
    assert kwargs == REGISTERED[env_id] == env_kwargs(spec)
    assert kwargs["frozen"] == {name: getattr(spec, name) for name in FROZEN_FIELDS}
    assert {k: kwargs[k] for k in FROZEN_FIELDS} == kwargs["frozen"]  # the spec shows what defines the id
    assert set(kwargs) <= CONFIG_FIELDS | {"frozen"}
    # per-suite defaults come from the suite's SuiteSpec: an id restates none of them
    suite = get_suite_spec(spec.suite)
    for name, value in spec.defaults:
        assert value != getattr(suite, name), f"{env_id} restates the suite's {name}={value}"


@pytest.mark.parametrize("env_id,steps,top_k", [
    ("MemoryConsolidation-ScienceWorld-v0", 80, 10),
    ("MemoryConsolidation-ScienceWorld-LLM-v0", 30, 6),
    ("MemoryConsolidation-ALFWorldGen-v0", 50, 6),
    ("MemoryConsolidation-ALFWorldGen-LLM-v0", 30, 6),
    ("MemoryConsolidation-MiniWoB-v0", 10, 10),
    ("MemoryConsolidation-MiniWoB-LLM-v0", 10, 10),
])
def test_agent_limits_are_what_they_were(env_id, steps, top_k):
    kwargs = {k: v for k, v in REGISTERED[env_id].items() if k != "frozen"}
    config = ConsolidationConfig(**kwargs)
    assert (config.agent_max_steps, config.agent_top_k) == (steps, top_k)


def test_a_new_id_is_one_line():
    spec = EnvIdSpec("scienceworld", "scienceworld-v0", None).llm(agent_max_steps=12)
    kwargs = env_kwargs(spec)
    assert {k: kwargs["frozen"][k] for k in ("suite", "pool", "pool_hash", "split", "reward_agent")} == {
        "suite": "scienceworld", "pool": "scienceworld-v0", "pool_hash": None, "split": "dev", "reward_agent": "llm"}
    assert kwargs["frozen"]["agent_max_steps"] == 12  # an id's agent settings are frozen too
    assert kwargs["agent_max_steps"] == 12
