"""The op-level method's trained policies as consolidators: ``oplevel:CHECKPOINT`` (our torch policy) and
``sb3:PATH`` (a MaskablePPO model), both greedy over the ops of :mod:`dreamer_gym.envs.ops`, texts from the rules.

Each plays exactly what :class:`~dreamer_gym.methods.oplevel.wrapper.OpLevelWrapper` plays for the same ops (the
same :func:`~dreamer_gym.envs.ops.plan_calls`), so an evaluation measures the trained policy. Without a
checkpoint ``oplevel`` is the untrained policy (initialised from ``seed``): the baseline training must beat.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym

from dreamer_gym.consolidators.base import call
from dreamer_gym.envs.ops import entry_classes, op_mask, plan_calls
from dreamer_gym.envs.wrappers import check_features, entry_features
from dreamer_gym.errors import ConfigError


class OpsConsolidator:
    """What both policies share: play :meth:`ops` (one op per region entry) through the env's tools, then commit."""

    max_entries: int

    def ops(self, info: dict[str, Any]) -> list[int]:
        raise NotImplementedError

    def actions(self, env: gym.Env, obs: dict[str, Any], info: dict[str, Any]) -> Iterator[str]:
        region = info["region"][: self.max_entries]
        config = env.unwrapped.config
        calls, _ = plan_calls(self.ops(info), region, config.max_entry_tokens, config.max_emitted)
        for c in calls:
            yield call(c.pop("tool"), **c)
        yield call("commit")


class OpLevelConsolidator(OpsConsolidator):
    """``checkpoint``: a ``checkpoint-STEP`` folder of ``dreamer-gym train --algo oplevel``."""

    name = "oplevel"

    def __init__(self, checkpoint: str | Path | None = None, seed: int = 0) -> None:
        import torch

        from dreamer_gym.methods.oplevel.trainer import OpLevelConfig, OpPolicy, load_policy

        if checkpoint is None:
            torch.manual_seed(seed)
            self.config = OpLevelConfig(seed=seed)
            self.policy = OpPolicy(hidden=self.config.hidden).eval()
        else:
            self.policy, self.config = load_policy(checkpoint)
        self.max_entries = self.config.max_entries

    def ops(self, info: dict[str, Any]) -> list[int]:
        """The greedy op of each region entry."""
        region = info["region"][: self.config.max_entries]
        features = entry_features(region, self.config.max_entries)
        mask = op_mask(region, self.config.max_entries)
        classes = entry_classes(region) if self.config.tie == "class" and region else None
        return self.policy.act(features, mask, len(region), self.config.max_entries, greedy=True,
                               classes=classes)[: len(region)].tolist()


class SB3OpLevelConsolidator(OpsConsolidator):
    """``checkpoint``: a ``maskable_ppo.zip`` (or the folder holding it) from ``dreamer-gym train --algo sb3``."""

    name = "sb3"

    def __init__(self, checkpoint: str | Path | None = None) -> None:
        if checkpoint is None:
            raise ConfigError("sb3 needs a model: --consolidator sb3:runs/sb3-oplevel/maskable_ppo.zip")
        try:
            from sb3_contrib import MaskablePPO
        except ImportError as exc:
            raise ConfigError("the sb3 consolidator needs the sb3 extra: pip install -e '.[sb3]'") from exc
        path = Path(checkpoint)
        path = path / "maskable_ppo.zip" if path.is_dir() else path
        if not path.is_file():
            raise ConfigError(f"{checkpoint}: no MaskablePPO model there (expected maskable_ppo.zip)")
        self.model = MaskablePPO.load(path, device="cpu")
        check_features(int(self.model.observation_space.shape[-1]), str(path))
        self.max_entries = int(self.model.observation_space.shape[0])

    def ops(self, info: dict[str, Any]) -> list[int]:
        region = info["region"][: self.max_entries]
        mask = op_mask(region, self.max_entries)
        action, _ = self.model.predict(entry_features(region, self.max_entries), action_masks=mask.reshape(-1),
                                       deterministic=True)
        return [int(a) for a in action[: len(region)]]
