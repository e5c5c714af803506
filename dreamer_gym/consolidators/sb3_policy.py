"""A MaskablePPO model trained on the op-level wrapper as a consolidator (``sb3:PATH``): deterministic ops,
texts from the op rules, played with the same :func:`~dreamer_gym.envs.oplevel.plan_calls` as the wrapper."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym

from dreamer_gym.consolidators.base import call
from dreamer_gym.envs.oplevel import op_mask, plan_calls
from dreamer_gym.envs.wrappers import entry_features
from dreamer_gym.errors import ConfigError


class SB3OpLevelConsolidator:
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
        self.max_entries = int(self.model.observation_space.shape[0])

    def ops(self, info: dict[str, Any]) -> list[int]:
        region = info["region"][: self.max_entries]
        mask = op_mask(region, self.max_entries)
        action, _ = self.model.predict(entry_features(region, self.max_entries), action_masks=mask.reshape(-1),
                                       deterministic=True)
        return [int(a) for a in action[: len(region)]]

    def actions(self, env: gym.Env, obs: dict[str, Any], info: dict[str, Any]) -> Iterator[str]:
        region = info["region"][: self.max_entries]
        config = env.unwrapped.config
        calls, _ = plan_calls(self.ops(info), region, config.max_entry_tokens, config.max_emitted)
        for c in calls:
            yield call(c.pop("tool"), **c)
        yield call("commit")
