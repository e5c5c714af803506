"""The one Registry type: a built-in or registered name answers without scanning the installed entry points
(every config that names a built-in checks its name; a scan costs milliseconds), and an entry point is found."""
from __future__ import annotations

import pytest

from dreamer_gym.errors import ConfigError
from dreamer_gym.registry import Registry


class CountingRegistry(Registry):
    scans = 0

    def _plugins(self) -> dict[str, str]:
        type(self).scans += 1
        return {"from-entry-point": "json:dumps"}


def test_known_names_answer_without_a_scan_and_entry_points_are_still_found() -> None:
    registry = CountingRegistry("thing", "dreamer_gym.things", {"builtin": "json:loads"}, option="thing")
    registry.register("mine", "json:dumps")
    assert "builtin" in registry and "mine" in registry
    assert CountingRegistry.scans == 0
    assert "from-entry-point" in registry and registry.get("from-entry-point").__name__ == "dumps"
    assert "absent" not in registry
    with pytest.raises(ConfigError, match="Expected `thing` to be one of"):
        registry.validate("absent")
