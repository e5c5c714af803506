"""Environment registration with string entry points (importing registers; nothing heavy starts)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import gymnasium as gym

if TYPE_CHECKING:
    from dreamer_gym.envs.tracks import EnvIdSpec


def env_kwargs(spec: EnvIdSpec) -> dict[str, Any]:
    """``gym.spec(id).kwargs`` of one id: its frozen fields, its free defaults, and ``frozen`` (the
    frozen fields again, which :class:`~dreamer_gym.envs.consolidation.ConsolidationEnv` enforces)."""
    from dreamer_gym.envs.tracks import FROZEN_FIELDS

    frozen = {name: getattr(spec, name) for name in FROZEN_FIELDS}
    return {**frozen, **dict(spec.defaults), "frozen": dict(frozen)}


def register_envs() -> None:
    """Register every dreamer_gym id (idempotent)."""
    from dreamer_gym.envs.tracks import ENV_IDS

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
