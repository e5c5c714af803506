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
        return _moved_attribute(old, new, name)

    return __getattr__


def _moved_attribute(old: str, new: str, name: str) -> Any:
    """``name`` from ``new``, warning that ``old`` is the old path (attributed to whoever asked for it)."""
    warnings.warn(f"{old} moved to {new} (issue 28); import {name} from there: the old path goes in 0.3",
                  DeprecationWarning, stacklevel=3)
    return getattr(importlib.import_module(new), name)


def forward_names(old: str, new: str, names: tuple[str, ...]) -> Callable[[str], Any]:
    """A package ``__getattr__`` for ``old`` that serves only ``names`` from ``new`` (warning, as :func:`forward`)
    and raises AttributeError for anything else, so the package's own submodules still import::

        # dreamer_gym/suites/__init__.py re-exported check_suite, which moved up to dreamer_gym.testing
        __getattr__ = forward_names(__name__, "dreamer_gym.testing", ("check_suite", "SuiteReport"))
    """

    def __getattr__(name: str) -> Any:
        if name not in names:
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        return _moved_attribute(f"{old}.{name}", new, name)

    return __getattr__
