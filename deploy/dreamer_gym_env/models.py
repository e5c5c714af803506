"""The action and observation types (OpenEnv's ``models.py``): one JSON tool call in, the gym step out."""
from __future__ import annotations

from dreamer_gym.remote.openenv_server import ConsolidationAction, ConsolidationObservation

# the names OpenEnv's AutoEnv infers from the environment's name (dreamer_gym_env -> DreamerGym*)
DreamerGymAction = ConsolidationAction
DreamerGymObservation = ConsolidationObservation

__all__ = ["ConsolidationAction", "ConsolidationObservation", "DreamerGymAction", "DreamerGymObservation"]
