"""Environment registration with string entry points (importing registers; nothing heavy starts).

The ids and their keyword arguments are the contract's (:mod:`dreamer_gym.contract.ids`)."""
from __future__ import annotations

import gymnasium as gym

from dreamer_gym.contract.ids import env_kwargs

__all__ = ["env_kwargs", "register_envs"]


def register_envs() -> None:
    """Register every dreamer_gym id (idempotent)."""
    from dreamer_gym.contract.ids import ENV_IDS

    for env_id, spec in ENV_IDS.items():
        if env_id in gym.registry:
            continue
        gym.register(
            id=env_id,
            entry_point="dreamer_gym.envs.consolidation:ConsolidationEnv",
            # gym.make_vec(id, num_envs=N) with no vectorization_mode: sub-envs sharing one reward service
            vector_entry_point="dreamer_gym.envs.vector:make_shared_vec",
            kwargs=env_kwargs(spec),
            max_episode_steps=None,
            disable_env_checker=False,
        )
