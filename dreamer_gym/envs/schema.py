"""JSON schemas of the env's tool calls, for guided (structured-output) decoding.

:func:`tool_call_schema` is the strict contract's call schema (:func:`dreamer_gym.envs.toolspec.call_schema`,
the one the env checks) with the ids narrowed to ``info["region"]``'s entries and trajectories and the lengths
bounded for decoding, so a small model under guided decoding emits calls that are well-formed *and* name real
ids. Every narrowing only removes calls, so what it allows is a subset of what the env accepts under either
contract (a test checks it); the env still checks everything (budgets, token limits, step ranges).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dreamer_gym.envs.toolspec import SPECS, call_schema, tool_names

QUERY_CHARS = 120  # a search query under guided decoding
SMALL_INT = 99  # step numbers and retract's index under guided decoding
GUIDED_PROVENANCE = 8  # emit's provenance under guided decoding: region entry ids only, at most this many


def _ids(values: Sequence[str]) -> dict[str, Any]:
    return {"enum": sorted(set(values))} if values else {"type": "string", "minLength": 1, "maxLength": 64}


def tool_call_schema(region: Sequence[dict[str, Any]] = (), max_text_chars: int = 600,
                     tools: Sequence[str] | None = None, contract: int = 1) -> dict[str, Any]:
    """One ``anyOf`` branch per tool (``tools``, default all of ``contract``'s: the env's ``tool_contract``),
    narrowed for decoding; ``region`` is ``info["region"]`` (empty: ids are any short string). On contract 2,
    ``synthesize``'s ``task`` is one of the region's families."""
    entry_ids = [e["id"] for e in region]
    entry = _ids(entry_ids)
    trajectory = _ids([p["trajectory_id"] for e in region for p in e.get("provenance", ())])
    available = tool_names(contract)
    chosen = [t for t in (tools or available) if t in available]
    schema = call_schema(contract, chosen)
    families = sorted({e["family"] for e in region if e.get("family")})
    for branch in schema["anyOf"]:
        props = branch["properties"]
        for name, value in props.items():
            if name == "tool":
                continue
            arg = SPECS[branch["properties"]["tool"]["const"]].arg(name)
            if value.get("type") == "integer":
                props[name] = {**value, "maximum": min(value.get("maximum", SMALL_INT), SMALL_INT)}
            elif arg.ids == "trajectory":
                props[name] = trajectory
            elif arg.ids == "entry" and value.get("type") == "array":
                # keep: region ids; emit's provenance: region entry ids only (a range's bounds are the region's)
                most = len(entry_ids) if name == "ids" else GUIDED_PROVENANCE
                props[name] = {**value, "items": entry, **({"maxItems": most} if name != "ids" or entry_ids else {})}
            elif arg.ids == "entry":
                props[name] = entry
            elif name == "query":
                props[name] = {**value, "maxLength": QUERY_CHARS}
            elif name == "task" and families:
                props[name] = {"enum": families}
            elif name == "text":
                props[name] = {**value, "maxLength": max_text_chars}
    return schema
