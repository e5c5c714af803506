"""The one definition of the env's tool calls.

Each tool is declared once below (:data:`TOOL_SPECS`: name, one line, arguments with their constraints).
Everything else is generated from it, so no two places can disagree:

* the structural check the env runs on every call (:func:`check_arguments`, jsonschema);
* the JSON Schema of a whole call (:func:`call_schema`), which :func:`dreamer_gym.envs.schema.tool_call_schema`
  narrows to a region's ids for guided decoding;
* the OpenAI function-calling ``tools=[...]`` list (:func:`openai_tools`);
* the one-line help of each tool that the prompts show (:func:`prompt_lines`, ``tools.TOOLS``);
* the tool table of docs/env.md (:func:`tool_table`; a test compares the page with it).

Three contracts exist (``tool_contract``, frozen per env id, see docs/env.md "Versions"): **2** (issue 40:
``ScienceWorld-v2``, ``ScienceWorldWindows-v1``), contract 1's rules plus the ``synthesize`` tool and ``search``'s
``scope`` (a tool or argument declares the first contract that has it: ``since``), and the whole bank read-only
through ``read_entry`` and ``search``; **1**, the strict one
of the ``-v1`` ids (unknown keys refused, ``ids`` a list, ``k`` in [1, 20], every provenance item checked),
and **0**, what the ``-v0`` ids accepted (extra keys ignored, ``ids`` may be one string, ``k`` up to 50, only
the first 32 provenance items looked at). In both, "integer" means a JSON integer: ``5.0`` and ``true`` are
refused (:func:`validator_class`), which is what a grammar emits for an integer. What depends on the region or
the episode (an id not in the region, budgets, token limits, step ranges) is the
:class:`~dreamer_gym.envs.tools.Workspace`'s to check, after this.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from dreamer_gym.contract.definition import CONTRACTS, LATEST_CONTRACT
from dreamer_gym.memory import KINDS

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError

# CONTRACTS and LATEST_CONTRACT (which contracts exist) are the reward contract's: dreamer_gym.contract.definition
MAX_K = 20  # search: the most hits one call returns (contract 1; contract 0 allowed 50)
# emit: provenance items. Contract 1 checks every item and refuses more than MAX_PROVENANCE, far above any region
# (max_region_entries is 50 on the ids), so merging a whole region into one entry is a valid call; contract 0
# looked at the first V0_PROVENANCE_SEEN items and ignored the rest.
MAX_PROVENANCE = 256
V0_PROVENANCE_SEEN = 32


@dataclass(frozen=True)
class Arg:
    """One argument of a tool. ``schema`` is its value under the strict contract (1); ``v0`` where the
    lenient contract (0) differs. ``ids`` says which region ids it names ("entry" or "trajectory"), for the
    guided schema; ``placeholder`` is how the prompts' example call shows it."""

    name: str
    schema: Mapping[str, Any]
    doc: str
    placeholder: str
    required: bool = True
    default: Any = None
    ids: str | None = None
    v0: Mapping[str, Any] | None = None
    since: int = 0  # the first contract that has this argument

    def value_schema(self, contract: int) -> dict[str, Any]:
        return dict(self.v0 if contract == 0 and self.v0 is not None else self.schema)


@dataclass(frozen=True)
class ToolSpec:
    """One tool: ``description`` is the one line shown in prompts, OpenAI tools and the docs table;
    ``details`` is added to the docs table and the OpenAI description."""

    name: str
    description: str
    args: tuple[Arg, ...] = ()
    details: str = ""
    since: int = 0  # the first contract that has this tool
    # the one line under a contract where it differs from ``description`` (search's reach grew at contract 2)
    description_by_contract: Mapping[int, str] | None = None

    def arg(self, name: str) -> Arg:
        return next(a for a in self.args if a.name == name)

    def args_of(self, contract: int) -> tuple[Arg, ...]:
        """The arguments ``contract`` declares."""
        return tuple(a for a in self.args if a.since <= contract)

    def describe(self, contract: int) -> str:
        """The one line shown under ``contract``."""
        by_contract = self.description_by_contract or {}
        return next((by_contract[c] for c in sorted(by_contract, reverse=True) if c <= contract), self.description)


_ID = {"type": "string", "minLength": 1}
_INT0 = {"type": "integer", "minimum": 0}
_RANGE = {  # a trajectory range in emit's provenance
    "type": "object",
    "properties": {"trajectory_id": _ID, "start": _INT0, "end": _INT0},
    "required": ["trajectory_id", "start", "end"],
    "additionalProperties": False,
}
_RANGE_V0 = {"type": "object", "required": ["trajectory_id"],
             "properties": {"trajectory_id": {"type": "string"}, "start": {"type": "integer"}, "end": {"type": "integer"}}}
_PROVENANCE_ITEM_V0 = {"anyOf": [{"type": "string"}, _RANGE_V0]}

SYNTHESIS_SOURCES: tuple[str, ...] = ("success", "all")  # synthesize: which trajectories of the task it aligns
SYNTHESIS_KINDS: tuple[str, ...] = ("procedure", "fact")

TOOL_SPECS: tuple[ToolSpec, ...] = (
    ToolSpec("read_entry", "show one region entry with its provenance", (
        Arg("id", _ID, "a region entry id (contract 2: any entry of the bank)", "ENTRY_ID", ids="entry"),
    ), details="as JSON: kind, text, family, tags, provenance, session; contract 2: any entry of the bank, one "
               "outside the region marked `\"in_region\": false, \"read_only\": true`",
       description_by_contract={2: "show one entry of the bank (the region's, or read-only outside it)"}),
    ToolSpec("read_trajectory", "steps of a linked trajectory", (
        Arg("id", _ID, "a trajectory id linked from the region's provenance", "TRAJ_ID", ids="trajectory"),
        Arg("start", _INT0, "first step", "0", required=False, default=0, v0={"type": "integer"}),
        Arg("end", _INT0, "last step (at most 20 steps are shown)", "10", required=False, v0={"type": "integer"}),
    ), details="action, score and observation of each step; trajectories not linked from the region are refused"),
    ToolSpec("search", "BM25 search over the region", (
        Arg("query", _ID, "search text", "TEXT"),
        Arg("k", {"type": "integer", "minimum": 1, "maximum": MAX_K}, "hits", "5", required=False, default=5,
            v0={"type": "integer", "minimum": 1, "maximum": 50}),
        Arg("scope", {"enum": ["bank", "region"]}, "where to search: the whole bank (hits outside the region are "
            "read-only) or the region", '"bank"', required=False, default="bank", since=2),
    ), details="contract 2: over the whole bank by default, each hit marked `[region]` or `[bank, read-only]`",
       description_by_contract={2: "BM25 search over the bank (or the region)"}),
    ToolSpec("keep", "carry region entries over verbatim", (
        Arg("ids", {"type": "array", "items": _ID, "minItems": 1}, "region entry ids", "[ENTRY_ID, ...]", ids="entry",
            v0={"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}, "minItems": 1}]}),
    ), details="free: kept entries do not use the emit budget"),
    ToolSpec("emit", "add a new entry", (
        Arg("kind", {"enum": list(KINDS)}, "entry kind", '"procedure|insight|fact|pitfall"'),
        Arg("text", _ID, "the entry's text (within the token limit)", "TEXT"),
        Arg("provenance", {"type": "array", "items": {"anyOf": [_ID, _RANGE]}, "minItems": 1, "maxItems": MAX_PROVENANCE},
            "region entry ids and/or ranges inside linked trajectories",
            '[ENTRY_ID or {"trajectory_id": ID, "start": S, "end": E}]', ids="entry",
            v0={"type": "array", "minItems": 1, "prefixItems": [_PROVENANCE_ITEM_V0] * V0_PROVENANCE_SEEN}),
    ), details="uses the emit budget"),
    ToolSpec("synthesize", "one candidate entry aligned from the region's trajectories of a task", (
        Arg("task", _ID, "a task (family) the region's linked trajectories were played for", "TASK"),
        Arg("trajectories", {"enum": list(SYNTHESIS_SOURCES)}, "which of them: the successful ones or all",
            '"success"', required=False, default="success"),
        Arg("min_support", {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
            "share of those trajectories a step (or fact) must appear in", "0.5", required=False, default=0.5),
        Arg("kind", {"enum": list(SYNTHESIS_KINDS)}, "a procedure (majority steps in order, variation-specific "
            "objects as <slots>) or the location facts that hold across them", '"procedure"', required=False,
            default="procedure"),
    ), details="writes nothing: returns the candidate (kind, text, cited trajectories, support) and the `emit` call "
               "that files it; emit it as is, edit it, or drop it", since=2),
    ToolSpec("retract", "drop the N-th emitted or kept entry", (
        Arg("index", _INT0, "position in the new region", "N", v0={"type": "integer"}),
    )),
    ToolSpec("commit", "replace the region with what was emitted and get the reward",
             details="the new region replaces the old one and is evaluated; `terminated=True`"),
)
SPECS: dict[str, ToolSpec] = {t.name: t for t in TOOL_SPECS}
TOOL_NAMES: tuple[str, ...] = tuple(SPECS)  # every contract's tools


def tool_names(contract: int = LATEST_CONTRACT) -> tuple[str, ...]:
    """The tools ``contract`` has, in declaration order (``synthesize`` from contract 2 on)."""
    return tuple(t.name for t in TOOL_SPECS if t.since <= check_contract(contract))


def specs_of(contract: int) -> tuple[ToolSpec, ...]:
    return tuple(t for t in TOOL_SPECS if t.since <= check_contract(contract))


def _is_integer(_checker: Any, instance: Any) -> bool:
    return isinstance(instance, int) and not isinstance(instance, bool)


@cache
def validator_class() -> Any:
    """Draft 2020-12 with "integer" meaning a JSON integer (``5.0`` and ``true`` are not), as a grammar emits it
    and as the env has always read it. jsonschema is imported here, on the first call: ``import dreamer_gym``
    stays cheap."""
    from jsonschema import Draft202012Validator, validators

    checker = Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_integer)
    return validators.extend(Draft202012Validator, type_checker=checker)


def check_contract(contract: Any) -> int:
    if isinstance(contract, bool) or contract not in CONTRACTS:
        raise ValueError(f"Expected `tool_contract` to be one of {list(CONTRACTS)}, got {contract!r}")
    return int(contract)


def arguments_schema(name: str, contract: int = LATEST_CONTRACT) -> dict[str, Any]:
    """The JSON Schema of ``name``'s arguments (an object) under ``contract``."""
    spec = SPECS[name]
    args = spec.args_of(check_contract(contract))
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {a.name: a.value_schema(contract) for a in args},
        "required": [a.name for a in args if a.required],
    }
    if contract >= 1:
        schema["additionalProperties"] = False
    return schema


def call_schema(contract: int = LATEST_CONTRACT, tools: Iterable[str] | None = None) -> dict[str, Any]:
    """The JSON Schema of one flat call ``{"tool": NAME, ...arguments}``: one ``anyOf`` branch per tool."""
    branches = []
    for name in (tool_names(contract) if tools is None else tools):
        args = arguments_schema(name, contract)
        branches.append({**args, "properties": {"tool": {"const": name}, **args["properties"]},
                         "required": ["tool", *args["required"]]})
    return {"anyOf": branches}


@cache
def _validator(name: str, contract: int) -> Any:
    return validator_class()(arguments_schema(name, contract))


def describe(schema: Mapping[str, Any]) -> str:
    """A value schema in words (error messages and the docs table)."""
    if "enum" in schema:
        return "one of " + ", ".join(json.dumps(v) for v in schema["enum"])
    if "const" in schema:
        return json.dumps(schema["const"])
    if "anyOf" in schema:
        return " or ".join(describe(s) for s in schema["anyOf"])
    kind = schema.get("type")
    if kind == "string":
        out = "a non-empty string" if schema.get("minLength", 0) >= 1 else "a string"
        return out + (f" of at most {schema['maxLength']} characters" if "maxLength" in schema else "")
    if kind == "integer":
        low, high = schema.get("minimum"), schema.get("maximum")
        if low is not None and high is not None:
            return f"an integer in [{low}, {high}]"
        return "an integer" + (f" >= {low}" if low is not None else "") + (f" <= {high}" if high is not None else "")
    if kind == "number":
        low = schema.get("exclusiveMinimum", schema.get("minimum"))
        above = "above" if "exclusiveMinimum" in schema else "at least"
        high = schema.get("maximum")
        return "a number" + (f" {above} {low}" if low is not None else "") + (f" and at most {high}" if high is not None else "")
    if kind == "array":
        items = schema.get("items") or (schema.get("prefixItems") or [{}])[0]
        size = "a non-empty list" if schema.get("minItems", 0) >= 1 else "a list"
        most = f" (at most {schema['maxItems']})" if "maxItems" in schema else ""
        return f"{size}{most}, each {describe(items)}"
    if kind == "object":
        keys = [f"{k}" + ("" if k in schema.get("required", ()) else "?") for k in schema.get("properties", {})]
        return "an object {" + ", ".join(keys) + "}"
    return "any value"


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _field(path: Sequence[Any]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _message(name: str, error: ValidationError, contract: int) -> str:
    spec = SPECS[name]
    names = [a.name for a in spec.args_of(contract)]
    if error.validator == "additionalProperties" and not error.path:
        extra = sorted(set(error.instance) - set(names))
        known = ", ".join(f"`{n}`" for n in names) or "none"
        return (f"`{name}` has no argument {', '.join(f'`{k[:40]}`' for k in extra[:3])}; its arguments are {known} "
                f"(tool contract {contract} refuses unknown keys: check the spelling)")
    if error.validator == "required" and not error.path:
        missing = next(a for a in spec.args_of(contract) if a.required and a.name not in error.instance)
        return f"`{name}` needs `{missing.name}`: {missing.doc}, {describe(missing.value_schema(contract))}"
    where = _field(error.absolute_path)
    top = spec.arg(str(error.absolute_path[0])) if error.absolute_path else None
    hint = f" ({top.doc})" if top is not None and len(error.absolute_path) == 1 else ""
    schema: Mapping[str, Any] = error.schema  # type: ignore[assignment]
    fix = f"; send a list: {json.dumps([error.instance])[:60]}" if schema.get("type") == "array" and isinstance(error.instance, str) else ""
    return f"`{where}`{hint} must be {describe(schema)}, got {_short(error.instance)}{fix}"


def _lone_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, list):
        return any(_lone_surrogate(v) for v in value)
    if isinstance(value, dict):
        return any(_lone_surrogate(v) for v in value.values())
    return False


def argument_error(name: str, args: Mapping[str, Any], contract: int = LATEST_CONTRACT) -> str | None:
    """Why ``args`` are not a well-formed call of ``name`` under ``contract`` (one sentence naming the field
    and what it must be), or None. Strings must also be valid Unicode (JSON can encode a lone surrogate)."""
    errors = list(_validator(name, contract).iter_errors(args))
    if errors:  # the shallowest first: "`ids` must be a list" before anything inside it
        return _message(name, min(errors, key=lambda e: len(e.absolute_path)), contract)
    for arg in SPECS[name].args_of(contract):
        if arg.name in args and _lone_surrogate(args[arg.name]):
            return f"`{arg.name}` is not valid Unicode (a lone surrogate?)"
    return None


def openai_tools(contract: int = LATEST_CONTRACT) -> list[dict[str, Any]]:
    """The OpenAI function-calling ``tools=[...]`` list; a call comes back as ``{"name", "arguments"}``,
    which the env takes as it is."""
    out = []
    for spec in specs_of(contract):
        params = arguments_schema(spec.name, contract)
        for arg in spec.args_of(contract):
            params["properties"][arg.name] = {**params["properties"][arg.name], "description": arg.doc}
        description = spec.describe(contract) + (f" ({spec.details})" if spec.details else "")
        out.append({"type": "function", "function": {"name": spec.name, "description": description,
                                                     "parameters": params}})
    return out


def prompt_lines(contract: int = 1) -> dict[str, str]:
    """Tool name -> the one line the prompts show under ``contract``: an example call, then what the tool does.
    (Default 1: the lines every id before issue 40 showed; a contract-2 env shows ``prompt_lines(2)``.)"""
    out = {}
    for spec in specs_of(contract):
        args = "".join(f', "{a.name}": {a.placeholder}' for a in spec.args_of(contract))
        out[spec.name] = f'{{"tool": "{spec.name}"{args}}} - {spec.describe(contract)}'
    return out


def tool_table(contract: int = LATEST_CONTRACT) -> str:
    """The docs' tool table (Markdown) under ``contract``."""
    rows = ["| tool | arguments | effect |", "|---|---|---|"]
    for spec in specs_of(contract):
        args = []
        for a in spec.args_of(contract):
            optional = "" if a.required else (f", optional (default {a.default})" if a.default is not None else ", optional")
            args.append(f"`{a.name}`: {a.doc}; {describe(a.value_schema(contract))}{optional}")
        effect = spec.describe(contract) + (f"; {spec.details}" if spec.details else "")
        rows.append(f"| `{spec.name}` | {'<br>'.join(args) or '—'} | {effect} |")
    return "\n".join(rows)


__all__ = ["CONTRACTS", "LATEST_CONTRACT", "SYNTHESIS_KINDS", "SYNTHESIS_SOURCES", "TOOL_NAMES", "TOOL_SPECS", "specs_of", "tool_names", "Arg", "ToolSpec", "argument_error",
           "arguments_schema", "call_schema", "check_contract", "describe", "openai_tools", "prompt_lines", "tool_table", "validator_class"]
