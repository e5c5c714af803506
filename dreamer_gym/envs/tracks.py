"""Registered ids and their frozen keyword arguments (filled in as suites land)."""
from __future__ import annotations

from typing import Any

REGISTERED: dict[str, dict[str, Any]] = {}
