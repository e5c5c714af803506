"""What a reward measures, and the rule that a registered id's measure cannot be changed.

A registered id (and a leaderboard track) fixes every *reward-defining* field: the suite, pool and split,
the evaluation sizes, the size term, the invalid-call penalty and the tool contract that says which calls are
invalid (:mod:`dreamer_gym.envs.toolspec`), the content limits that bound an
entry and a region, and the downstream agent with its settings (for an LLM agent: its model): the fields of
:class:`~dreamer_gym.contract.definition.RewardDefinition`, declared there once. Budgets
(``max_tool_calls``, ``max_emitted``) stay training knobs on training ids and are frozen on tracks.
``workers``, ``executor``, ``service``, ``store_path`` and the LLM's backend, server and timeouts change
where and how fast the reward is computed, not what it is, and stay free.

The env records :func:`reward_definition` in every commit's info with the id it matches
(:func:`comparable_id`); an env built with ``ConsolidationEnv(...)`` and a changed field matches none and
its commits say ``comparable: False``.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dreamer_gym.contract.config import ConsolidationConfig
from dreamer_gym.contract.definition import BUDGET_FIELDS, LLM_REWARD_FIELDS, REWARD_FIELDS
from dreamer_gym.errors import FrozenParameterError


def reward_definition(config: ConsolidationConfig) -> dict[str, Any]:
    """The reward-defining fields of ``config``, resolved (suite defaults filled in), as plain data."""
    out: dict[str, Any] = {name: getattr(config, name) for name in REWARD_FIELDS}
    out["llm"] = None if config.llm is None else {k: getattr(config.llm, k) for k in LLM_REWARD_FIELDS}
    return out


def budgets(config: ConsolidationConfig) -> dict[str, int]:
    """The budgets of ``config`` as plain data (recorded in every commit's info)."""
    return {name: int(getattr(config, name)) for name in BUDGET_FIELDS}


def _differences(reference: Mapping[str, Any], actual: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    out = []
    for name, value in reference.items():
        if isinstance(value, dict) and isinstance(actual.get(name), dict):
            out += [(f"{name}.{k}", v, actual[name].get(k)) for k, v in value.items() if actual[name].get(k) != v]
        elif actual.get(name) != value:
            out.append((name, value, actual.get(name)))
    return out


def check_frozen(config: ConsolidationConfig, frozen: Mapping[str, Any], *, freeze_budgets: bool = False,
                 what: str = "this env id") -> None:
    """Raise :class:`FrozenParameterError` naming the first reward-defining field (and, with
    ``freeze_budgets``, budget) of ``config`` that differs from the one ``frozen`` (the id's keyword
    arguments) defines."""
    reference = ConsolidationConfig(**{k: v for k, v in frozen.items() if k in ConsolidationConfig.__dataclass_fields__})
    expected, actual = reward_definition(reference), reward_definition(config)
    if freeze_budgets:
        expected.update(budgets(reference))
        actual.update(budgets(config))
    for name, value, got in _differences(expected, actual):
        raise FrozenParameterError(
            f"`{name}` is frozen at {value!r} for {what} (got {got!r}); it defines what the reward measures. "
            "For experiments construct dreamer_gym.envs.consolidation.ConsolidationEnv(...) directly (its "
            "commits are labelled comparable=False); to share a setting, register a new id with gym.register."
        )


def comparable_id(config: ConsolidationConfig) -> str | None:
    """The registered id whose reward ``config`` measures, or None (an experiment: not comparable)."""
    from dreamer_gym.contract import ids

    actual = reward_definition(config)
    for env_id, kwargs in ids.REGISTERED.items():
        frozen = kwargs["frozen"]
        if frozen.get("suite") != config.suite or frozen.get("reward_agent") != config.reward_agent:
            continue  # cheap filter before building the id's config
        reference = ConsolidationConfig(**{k: v for k, v in frozen.items()
                                           if k in ConsolidationConfig.__dataclass_fields__})
        if not _differences(reward_definition(reference), actual):
            return env_id
    return None


__all__ = ["BUDGET_FIELDS", "LLM_REWARD_FIELDS", "REWARD_FIELDS", "budgets", "check_frozen", "comparable_id",
           "reward_definition"]
