"""JSON schemas of the env's tool calls, for guided (structured-output) decoding.

A schema built from ``info["region"]`` constrains ids to the region's entries and trajectories, so a
small model under guided decoding emits calls that are well-formed *and* name real ids; the env still
validates everything (budgets, token limits), so a schema is a convenience, never a bypass.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dreamer_gym.envs.tools import TOOLS
from dreamer_gym.memory import KINDS


def _ids(values: Sequence[str]) -> dict[str, Any]:
    return {"enum": sorted(set(values))} if values else {"type": "string", "maxLength": 64}


def tool_call_schema(region: Sequence[dict[str, Any]] = (), max_text_chars: int = 600,
                     tools: Sequence[str] | None = None) -> dict[str, Any]:
    """One ``anyOf`` branch per tool with its required arguments; ``region`` is ``info["region"]``."""
    entry_ids = [e["id"] for e in region]
    trajectory_ids = [p["trajectory_id"] for e in region for p in e.get("provenance", ())]
    entry, trajectory = _ids(entry_ids), _ids(trajectory_ids)
    small_int = {"type": "integer", "minimum": 0, "maximum": 99}
    branches: dict[str, tuple[dict[str, Any], list[str]]] = {
        "read_entry": ({"id": entry}, ["id"]),
        "read_trajectory": ({"id": trajectory, "start": small_int, "end": small_int}, ["id"]),
        "search": ({"query": {"type": "string", "maxLength": 120}, "k": {"type": "integer", "minimum": 1, "maximum": 20}},
                   ["query"]),
        "keep": ({"ids": {"type": "array", "items": entry, "minItems": 1,
                          **({"maxItems": len(entry_ids)} if entry_ids else {})}}, ["ids"]),
        "emit": ({"kind": {"enum": list(KINDS)}, "text": {"type": "string", "minLength": 1, "maxLength": max_text_chars},
                  "provenance": {"type": "array", "items": entry, "minItems": 1, "maxItems": 8}},
                 ["kind", "text", "provenance"]),
        "retract": ({"index": small_int}, ["index"]),
        "commit": ({}, []),
    }
    chosen = [t for t in (tools or TOOLS) if t in branches]
    return {
        "anyOf": [
            {
                "type": "object",
                "properties": {"tool": {"const": name}, **props},
                "required": ["tool", *required],
                "additionalProperties": False,
            }
            for name, (props, required) in ((t, branches[t]) for t in chosen)
        ]
    }
