"""The typed WebSocket client (OpenEnv's ``client.py``): ``DreamerGymEnv(base_url=...).sync()``."""
from __future__ import annotations

from dreamer_gym.remote.openenv_server import ConsolidationEnvClient

from .models import DreamerGymAction, DreamerGymObservation

# the name OpenEnv's AutoEnv infers from the environment's name (dreamer_gym_env -> DreamerGymEnv)
DreamerGymEnv = ConsolidationEnvClient

__all__ = ["ConsolidationEnvClient", "DreamerGymAction", "DreamerGymEnv", "DreamerGymObservation"]
