"""The reward-service registry: name -> class built as ``cls(config, *, withhold, spec)``, for
``ConsolidationConfig.service``.

It sits in the contract room, below the service room that implements the services, because the config (here)
checks its ``service`` field against it: the built-ins are named by ``"module:attr"`` strings, which import
nothing. Built in: ``process`` (the referee in its own process) and ``inprocess`` (this process). Add your own with
:func:`dreamer_gym.service.register_service` or an entry point in the ``dreamer_gym.services`` group::

    [project.entry-points."dreamer_gym.services"]
    remote = "my_pkg.service:RemoteRewardService"

The class implements :class:`~dreamer_gym.service.services.RewardService`; :func:`dreamer_gym.testing.check_service`
checks one.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dreamer_gym.registry import Registry, callable_as

ENTRY_POINT_GROUP = "dreamer_gym.services"


SERVICES: Registry[Callable[..., Any]] = Registry(
    "reward service", ENTRY_POINT_GROUP, {
        "process": "dreamer_gym.service.services:ProcessRewardService",
        "inprocess": "dreamer_gym.service.services:InProcessRewardService",
    }, option="service", check=callable_as("a class built as cls(config, *, withhold, spec)"),
    how="dreamer_gym.service.register_service(name, cls) or an entry point in the 'dreamer_gym.services' group "
        "(mine = \"my_pkg.service:MyRewardService\")")


def register_service(name: str, factory: str | Callable[..., Any], *, replace: bool = False) -> None:
    """Make ``factory`` (a class built as ``cls(config, *, withhold, spec)``, or a ``"module:attr"`` string) the
    reward service ``name``."""
    SERVICES.register(name, factory, replace=replace)


def service_names() -> tuple[str, ...]:
    """Every reward service this process can build: built-in, registered and installed as entry points."""
    return SERVICES.names()
