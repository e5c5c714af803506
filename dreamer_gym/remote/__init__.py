"""Serving dreamer_gym env ids to other training stacks over the network.

:mod:`dreamer_gym.remote.openenv_server` exposes any registered id as an OpenEnv environment server (TRL,
SkyRL and verifiers speak OpenEnv). Importing this package, or that module, never imports OpenEnv: it is an
optional extra, loaded when an app, a server or a client is first built.
"""
from __future__ import annotations

from typing import Any

__all__ = ["ConsolidationAction", "ConsolidationEnvClient", "ConsolidationEnvironment", "ConsolidationObservation",
           "build_env", "main", "make_app", "serve"]


def __getattr__(name: str) -> Any:
    """The OpenEnv names, resolved on first use (the classes need OpenEnv installed; the functions do not)."""
    if name in __all__:
        from dreamer_gym.remote import openenv_server

        return getattr(openenv_server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
