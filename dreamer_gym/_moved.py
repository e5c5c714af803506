"""Deprecation shims for modules that moved (issue 28): the old path keeps working, with a warning, for one
version (removed in 0.3). A shim imports its new home by name when first used, so an old path in a lower
room never becomes an import arrow pointing up (the layers contract, tests/test_layers.py, stays clean)."""
from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from typing import Any


def forward(old: str, new: str) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``old`` that serves every attribute from ``new``, warning once per name::

        # dreamer_gym/training/oplevel.py, now a shim
        from dreamer_gym._moved import forward
        __getattr__ = forward(__name__, "dreamer_gym.methods.oplevel.trainer")
    """

    def __getattr__(name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        warnings.warn(f"{old} moved to {new} (issue 28); import {name} from there: the old path goes in 0.3",
                      DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(new), name)

    return __getattr__
