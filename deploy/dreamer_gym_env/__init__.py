"""dreamer_gym as an OpenEnv environment: the client and types (the server is ``server.app:app``)."""
from __future__ import annotations

from .client import DreamerGymEnv
from .models import DreamerGymAction, DreamerGymObservation

__all__ = ["DreamerGymAction", "DreamerGymEnv", "DreamerGymObservation"]
