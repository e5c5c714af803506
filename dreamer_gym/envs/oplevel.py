"""Moved (issue 28): the op vocabulary to dreamer_gym.envs.ops, OpLevelWrapper and RegionSeeds to
dreamer_gym.methods.oplevel.wrapper; this shim goes in 0.3."""
from __future__ import annotations

import importlib
import warnings
from typing import Any

_WRAPPER_NAMES = ("OpLevelWrapper", "RegionSeeds", "REGIONS_REMEMBERED")


def __getattr__(name: str) -> Any:
    """The wrapper's names from its new home, everything else from :mod:`dreamer_gym.envs.ops`; imported by name
    at first use, so this env-room module never imports a method when it loads."""
    if name.startswith("__") and name.endswith("__"):
        raise AttributeError(name)
    new = "dreamer_gym.methods.oplevel.wrapper" if name in _WRAPPER_NAMES else "dreamer_gym.envs.ops"
    warnings.warn(f"{__name__} moved to {new} (issue 28); import {name} from there: the old path goes in 0.3",
                  DeprecationWarning, stacklevel=2)
    return getattr(importlib.import_module(new), name)
