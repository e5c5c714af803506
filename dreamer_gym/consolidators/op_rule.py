"""Whole-region op rules: one fixed op per entry kind over the whole region (``rule:merge-all``, ...).

They are the constants a learned consolidator must beat (docs/learnability.md): the learnability study plays
them, and the registry names them (``rule:NAME``) so a rule is submitted to a track like any other row. Played as
the env's own tool calls (:func:`~dreamer_gym.envs.ops.plan_calls`), so a rule can do nothing a policy of the op
vocabulary cannot.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import gymnasium as gym

from dreamer_gym.consolidators.base import call
from dreamer_gym.envs.ops import ABSTRACT, DROP, KEEP, MERGE, plan_calls
from dreamer_gym.errors import ConfigError

# Whole-region rules played through the op vocabulary (:func:`~dreamer_gym.envs.ops.plan_calls`): name ->
# (op per entry kind, op for every other kind, what it does). Every MERGE entry of a region goes into one entry.
OP_RULES: dict[str, tuple[dict[str, int], int, str]] = {
    "merge-all": ({}, MERGE, "every entry merged into one (what the trained op-level and GRPO policies converge to)"),
    "merge-procedures": ({"procedure": MERGE}, KEEP, "the procedures merged into one, every other entry kept"),
    "merge-procedures-keep-facts": ({"procedure": MERGE, "fact": KEEP}, DROP,
                                    "the procedures merged into one, facts kept, insights and pitfalls dropped"),
    "abstract-procedures": ({"procedure": ABSTRACT}, KEEP,
                            "each procedure rewritten as the region's consensus, every other entry kept"),
    "procedures-only": ({"procedure": KEEP}, DROP, "the procedures kept verbatim, every other entry dropped"),
    "drop-insights": ({"insight": DROP}, KEEP, "insights dropped, every other entry kept"),
}


class OpRuleConsolidator:
    """One fixed op per entry kind over the whole region, played as the env's own tool calls."""

    def __init__(self, name: str | None = None, checkpoint: str | None = None) -> None:
        name = name if name is not None else checkpoint  # the registry passes NAME of ``rule:NAME`` as checkpoint
        if name not in OP_RULES:
            raise ConfigError(f"Expected an op rule, one of {list(OP_RULES)} (as ``rule:NAME``), got {name!r}")
        self.name = name
        self.by_kind, self.default, _ = OP_RULES[name]

    def actions(self, env: gym.Env, obs: dict[str, Any], info: dict[str, Any]) -> Iterator[str]:
        region = info["region"]
        config = env.unwrapped.config
        ops = [self.by_kind.get(e["kind"], self.default) for e in region]
        calls, _ = plan_calls(ops, region, config.max_entry_tokens, config.max_emitted)
        for c in calls:
            yield call(c.pop("tool"), **c)
        yield call("commit")


def make_rule(name: str) -> Any:
    """The consolidator that plays rule ``name``: an op rule (``merge-all``, or ``rule:merge-all``) or a registered
    consolidator's name (``keep-all``, ``dedupe``..., and the context rules of tool contract 2 such as
    ``rule:context``, which the registry's ``rule`` builds: :mod:`dreamer_gym.consolidators.context_rules`)."""
    from dreamer_gym.consolidators.registry import make_consolidator

    bare = name.removeprefix("rule:")
    return OpRuleConsolidator(bare) if bare in OP_RULES else make_consolidator(name)
