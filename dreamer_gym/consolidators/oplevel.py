"""The op-level policy as a consolidator (``oplevel:CHECKPOINT``): greedy ops, texts from the rules.

It plays exactly what :class:`~dreamer_gym.envs.oplevel.OpLevelWrapper` plays for the same ops (the same
:func:`~dreamer_gym.envs.oplevel.plan_calls`), so an evaluation measures the trained policy. Without a
checkpoint it is the untrained policy (initialised from ``seed``): the baseline training must beat.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym

from dreamer_gym.consolidators.base import call
from dreamer_gym.envs.oplevel import entry_classes, op_mask, plan_calls
from dreamer_gym.envs.wrappers import entry_features


class OpLevelConsolidator:
    """``checkpoint``: a ``checkpoint-STEP`` folder of ``dreamer-gym train --algo oplevel``."""

    name = "oplevel"

    def __init__(self, checkpoint: str | Path | None = None, seed: int = 0) -> None:
        import torch

        from dreamer_gym.training.oplevel import OpLevelConfig, OpPolicy, load_policy

        if checkpoint is None:
            torch.manual_seed(seed)
            self.config = OpLevelConfig(seed=seed)
            self.policy = OpPolicy(hidden=self.config.hidden).eval()
        else:
            self.policy, self.config = load_policy(checkpoint)

    def ops(self, info: dict[str, Any]) -> list[int]:
        """The greedy op of each region entry."""
        region = info["region"][: self.config.max_entries]
        features = entry_features(region, self.config.max_entries)
        mask = op_mask(region, self.config.max_entries)
        classes = entry_classes(region) if self.config.tie == "class" and region else None
        return self.policy.act(features, mask, len(region), self.config.max_entries, greedy=True,
                               classes=classes)[: len(region)].tolist()

    def actions(self, env: gym.Env, obs: dict[str, Any], info: dict[str, Any]) -> Iterator[str]:
        region = info["region"][: self.config.max_entries]
        config = env.unwrapped.config
        calls, _ = plan_calls(self.ops(info), region, config.max_entry_tokens, config.max_emitted)
        for c in calls:
            yield call(c.pop("tool"), **c)
        yield call("commit")
