"""Environment registration with string entry points (importing registers; nothing heavy starts)."""
from __future__ import annotations

import gymnasium as gym


def register_envs() -> None:
    """Register every dreamer_gym id (idempotent)."""
    from dreamer_gym.envs.tracks import REGISTERED

    for env_id, kwargs in REGISTERED.items():
        if env_id in gym.registry:
            continue
        gym.register(
            id=env_id,
            entry_point="dreamer_gym.envs.consolidation:ConsolidationEnv",
            kwargs=dict(kwargs),
            max_episode_steps=None,
            disable_env_checker=False,
        )
