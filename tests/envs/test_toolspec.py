"""One definition of a tool call (dreamer_gym/envs/toolspec.py): the env accepts exactly what the published
schema accepts, under both contracts; a region-narrowed guided schema only emits calls the env takes on that
region; the OpenAI tools, the prompts' lines and the errors come from the same declarations."""
from __future__ import annotations

import json
import warnings
from typing import Any

import gymnasium as gym
import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

import dreamer_gym  # noqa: F401 - registers the ids
from dreamer_gym.envs.observation import entry_dict
from dreamer_gym.envs.schema import tool_call_schema
from dreamer_gym.envs.tools import TOOLS, ToolError, Workspace, parse_action, tools_for
from dreamer_gym.envs.toolspec import CONTRACTS, TOOL_SPECS, arguments_schema, call_schema, openai_tools, specs_of
from dreamer_gym.memory import select_by_family

from helpers import call

# The published schema read with JSON Schema's own rules, but "integer" meaning a JSON integer (docs/env.md):
# written here once more, independently of the env's validator.
STRICT_INT = Draft202012Validator.TYPE_CHECKER.redefine(
    "integer", lambda _, v: isinstance(v, int) and not isinstance(v, bool))
SchemaValidator = jsonschema.validators.extend(Draft202012Validator, type_checker=STRICT_INT)
SCHEMAS = {c: SchemaValidator(call_schema(c)) for c in CONTRACTS}


def env_accepts(action: dict[str, Any], contract: int) -> bool:
    try:
        parse_action(json.dumps(action), tools=tools_for(contract), contract=contract)
    except ToolError:
        return False
    return True


# --- calls generated from a schema (the keywords the tool schemas use) ---------------------------------------
WORDS = st.text(alphabet="abcdef xyz0123456789-", max_size=12)


def from_schema(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values valid against ``schema`` (enum, const, anyOf, string, integer, array with items or prefixItems,
    object): the well-formed half of the generated calls."""
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "const" in schema:
        return st.just(schema["const"])
    if "anyOf" in schema:
        return st.one_of([from_schema(s) for s in schema["anyOf"]])
    kind = schema.get("type")
    if kind == "string":
        return st.text(alphabet="abcdef xyz0123456789-", min_size=schema.get("minLength", 0),
                       max_size=min(schema.get("maxLength", 12), 12))
    if kind == "integer":
        return st.integers(schema.get("minimum", -5), schema.get("maximum", 60))
    if kind == "number":  # synthesize's min_support: (0, 1]
        return st.floats(schema.get("exclusiveMinimum", 0), schema.get("maximum", 1), exclude_min=True)
    if kind == "array":
        items = schema.get("items") or schema["prefixItems"][0]
        low = schema.get("minItems", 0)
        return st.lists(from_schema(items), min_size=low, max_size=max(low, min(schema.get("maxItems", 4), 4)))
    if kind == "object":
        required = set(schema.get("required", ()))
        return st.fixed_dictionaries(
            {k: from_schema(v) for k, v in schema["properties"].items() if k in required},
            optional={k: from_schema(v) for k, v in schema["properties"].items() if k not in required})
    raise AssertionError(f"from_schema: no strategy for {schema}")


WRONG = st.one_of(  # values of every JSON type, the usual wrong ones among them
    st.none(), st.booleans(), st.integers(-3, 60), st.floats(-3, 60, allow_nan=False), st.sampled_from([5.0, 1e2, -0.0]),
    WORDS, st.lists(WORDS, max_size=3), st.dictionaries(WORDS, st.integers(0, 3), max_size=2),
    st.just([]), st.just(""), st.just({"trajectory_id": "t1", "start": 0}),
)
EXTRA_KEYS = st.sampled_from(["kk", "idz", "extra", "ids", "id", "start", "k", "query", "name", "arguments", "index"])
# ("function" is left out: a dict under it is the OpenAI envelope, {"type": "function", "function": {...}})


@st.composite
def calls(draw: st.DrawFn, contract: int) -> dict[str, Any]:
    """A call well-formed under ``contract``, then maybe broken: a key dropped, a key added, a value replaced by
    a wrong one (types, ranges, floats, strings where lists belong), or an unknown tool."""
    spec = draw(st.sampled_from(TOOL_SPECS))
    out = {"tool": spec.name, **draw(from_schema(arguments_schema(spec.name, contract)))}
    for _ in range(draw(st.integers(0, 2))):
        how = draw(st.sampled_from(["drop", "add", "replace", "retool"]))
        keys = [k for k in out if k != "tool"]
        if how == "drop" and keys:
            del out[draw(st.sampled_from(keys))]
        elif how == "add":
            out[draw(EXTRA_KEYS)] = draw(WRONG)
        elif how == "replace" and keys:
            out[draw(st.sampled_from(keys))] = draw(WRONG)
        elif how == "retool":
            out["tool"] = draw(st.sampled_from([*TOOLS, "drop", "Keep", 3]))
    return out


@pytest.mark.parametrize("contract", CONTRACTS)
# 400 examples before (issue 39: CI time)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_env_accepts_exactly_what_the_schema_accepts(contract: int, data: st.DataObject) -> None:
    action = data.draw(calls(contract))
    schema_ok = SCHEMAS[contract].is_valid(action)
    assert env_accepts(action, contract) == schema_ok, (action, list(SCHEMAS[contract].iter_errors(action))[:1])
    args = {k: v for k, v in action.items() if k != "tool"}  # the OpenAI form reads the same
    openai = {"type": "function", "function": {"name": action["tool"], "arguments": json.dumps(args)}}
    assert env_accepts(openai, contract) == schema_ok, openai


def test_the_contracts_nest_and_the_generated_calls_cover_both_sides() -> None:
    """Contract 1 is a subset of contract 0 (so v1 calls still work on the v0 ids)."""
    strict = calls(1)
    seen = {True: 0, False: 0}

    @settings(max_examples=150, deadline=None)  # 300 before (issue 39: CI time)
    @given(strict)
    def check(action: dict[str, Any]) -> None:
        ok = SCHEMAS[1].is_valid(action)
        seen[ok] += 1
        if ok:
            assert SCHEMAS[0].is_valid(action) and env_accepts(action, 0), action

    check()
    assert seen[True] > 30 and seen[False] > 30, seen  # both halves are exercised


# --- the four disagreements the issue found ---------------------------------------------------------------
CASES = [  # (call, accepted under contract 0, under contract 1)
    ({"tool": "keep", "ids": "e1"}, True, False),
    ({"tool": "search", "query": "x", "k": 50}, True, False),
    ({"tool": "search", "query": "x", "kk": 3}, True, False),
    ({"tool": "search", "query": "x", "k": 5.0}, False, False),
    ({"tool": "search", "query": "x", "k": True}, False, False),
    ({"tool": "search", "query": "x", "k": 20}, True, True),
    ({"tool": "emit", "kind": "fact", "text": "t", "provenance": [{"trajectory_id": "t1"}]}, True, False),
    ({"tool": "emit", "kind": "fact", "text": "t", "provenance": ["e1"] * 32 + [7]}, True, False),
    # merging a whole 40-entry region into one entry (the op-level rules, the `ops` grammar) is valid in both
    ({"tool": "emit", "kind": "fact", "text": "t", "provenance": ["e1"] * 40}, True, True),
    ({"tool": "emit", "kind": "fact", "text": "t", "provenance": ["e1"] * 257}, True, False),
]


@pytest.mark.parametrize("action,v0,v1", CASES, ids=[json.dumps(c[0])[:60] for c in CASES])
def test_the_env_and_the_schemas_agree_on_the_known_cases(action, v0, v1) -> None:
    assert (env_accepts(action, 0), env_accepts(action, 1)) == (v0, v1)
    assert (SCHEMAS[0].is_valid(action), SCHEMAS[1].is_valid(action)) == (v0, v1)
    guided = SchemaValidator(tool_call_schema())  # the guided schema (no region) never takes what v1 refuses
    assert not guided.is_valid(action) or v1


@pytest.mark.parametrize("action,match", [
    ({"tool": "keep", "ids": "e1"}, r'`ids` \(region entry ids\) must be a non-empty list.*got .e1.; send a list: \["e1"\]'),
    ({"tool": "search", "query": "x", "k": 50}, r"`k` \(hits\) must be an integer in \[1, 20\], got 50"),
    ({"tool": "search", "query": "x", "kk": 3}, r"`search` has no argument `kk`; its arguments are `query`, `k`"),
    ({"tool": "search", "query": "x", "k": 5.0}, r"`k` \(hits\) must be an integer in \[1, 20\], got 5.0"),
    ({"tool": "emit", "kind": "fact", "text": "t"}, r"`emit` needs `provenance`"),
    ({"tool": "read_trajectory", "id": "t", "start": -1}, r"`start` \(first step\) must be an integer >= 0"),
    ({"tool": "emit", "kind": "fact", "text": "t", "provenance": [{"trajectory_id": "t"}]}, r"`provenance\[0\]` must be"),
])
def test_an_error_names_the_field_and_the_fix(action, match) -> None:
    with pytest.raises(ToolError, match=match):
        parse_action(json.dumps(action), contract=1)


# --- the guided schema on a real region ---------------------------------------------------------------------
ID_ERRORS = ("not in this region", "not linked", "is not an entry of this region", "must be", "has no argument",
             "needs", "unknown tool")


@pytest.fixture(scope="module")
def region_and_workspace(pool):
    bank = pool.banks[0]
    family = sorted({e.family for e in bank})[0]
    region = select_by_family(bank, family, 50)
    entries = [bank.get(i) for i in region.entry_ids]
    return [entry_dict(e) for e in entries], (bank, region, pool.trajectories, family)


def test_the_guided_schema_s_calls_are_taken_by_the_env_on_its_region(region_and_workspace) -> None:
    """Every call the region-narrowed schema allows is well-formed under both contracts and names only the
    region's ids; on a fresh episode it runs, or fails only on what the episode's state decides (nothing
    emitted yet to retract, a step range past the trajectory's end, the token limit)."""
    region, ws_args = region_and_workspace
    schema = tool_call_schema(region)
    ws = Workspace(*ws_args, max_emitted=12, max_entry_tokens=320)
    ran = {"ok": 0, "state": 0}

    # 300 examples before (issue 39: CI time)
    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(from_schema(schema))
    def check(action: dict[str, Any]) -> None:
        jsonschema.validate(action, call_schema(1))  # a subset of the strict contract...
        for contract in CONTRACTS:  # ...which the env takes under both contracts
            name = parse_action(json.dumps(action), contract=contract).name
        if name == "commit":
            return
        ws.emitted = []  # a fresh episode on the same region
        try:
            getattr(ws, name)({k: v for k, v in action.items() if k != "tool"})
            ran["ok"] += 1
        except ToolError as exc:
            assert name in ("retract", "read_trajectory", "emit") and not any(e in str(exc) for e in ID_ERRORS), exc
            ran["state"] += 1

    check()
    assert ran["ok"] > ran["state"], ran


def test_the_guided_schema_is_the_strict_one_narrowed() -> None:
    region = [{"id": "e1", "provenance": [{"trajectory_id": "t1", "start": 0, "end": 3}]}, {"id": "e2", "provenance": []}]
    guided, strict = tool_call_schema(region), call_schema(1)
    for g, s in zip(guided["anyOf"], strict["anyOf"], strict=True):
        assert g["required"] == s["required"] and g["additionalProperties"] is False
        assert g["properties"].keys() == s["properties"].keys()
    assert guided["anyOf"][0]["properties"]["id"] == {"enum": ["e1", "e2"]}


# --- the other generated forms ------------------------------------------------------------------------------
@pytest.mark.parametrize("contract", CONTRACTS)
def test_openai_tools_are_the_declared_tools(contract: int) -> None:
    tools = openai_tools(contract)
    assert [t["function"]["name"] for t in tools] == list(tools_for(contract))
    assert ("synthesize" in tools_for(contract)) == (contract >= 2)
    for tool in tools:
        fn = tool["function"]
        params = {**fn["parameters"], "properties": {k: {kk: vv for kk, vv in v.items() if kk != "description"}
                                                     for k, v in fn["parameters"]["properties"].items()}}
        assert tool["type"] == "function" and fn["description"]
        assert params == arguments_schema(fn["name"], contract)
        Draft202012Validator.check_schema(fn["parameters"])


def test_prompt_lines_are_the_ones_the_prompts_always_showed() -> None:
    """The prompts' tool lines are generated now; they read as they did (the recorded prompted runs used them)."""
    assert TOOLS["keep"] == '{"tool": "keep", "ids": [ENTRY_ID, ...]} - carry region entries over verbatim'
    assert TOOLS["search"] == '{"tool": "search", "query": TEXT, "k": 5} - BM25 search over the region'
    for contract in CONTRACTS:  # each line shows its tool, every argument and the one line of its contract
        lines = tools_for(contract)
        for spec in specs_of(contract):
            line = lines[spec.name]
            assert line.startswith(f'{{"tool": "{spec.name}"') and line.endswith(f" - {spec.describe(contract)}")
            assert all(f'"{a.name}": ' in line for a in spec.args_of(contract)), line
    assert tools_for(1) == TOOLS and tools_for(0) == TOOLS  # contracts 0 and 1 show the same lines
    assert tools_for(2)["search"] == ('{"tool": "search", "query": TEXT, "k": 5, "scope": "bank"} - BM25 search over '
                                      'the bank (or the region)')


# --- the v0 contract, through the env (the one explicit test of a superseded id) -----------------------------
def test_the_v0_ids_keep_the_lenient_contract_and_gymnasium_says_they_are_superseded() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old = gym.make("MemoryConsolidation-ScienceWorld-v0", max_tool_calls=100)
    assert any("out of date" in str(w.message) and "v2" in str(w.message) for w in caught)
    new = gym.make("MemoryConsolidation-ScienceWorld-v1", max_tool_calls=100)
    try:
        assert (old.unwrapped.config.tool_contract, new.unwrapped.config.tool_contract) == (0, 1)
        _, info = old.reset(seed=0)
        new.reset(seed=0)
        first = info["region"][0]["id"]
        lenient = [call("keep", ids=first), call("search", query="focus", k=50), call("search", query="x", kk=1)]
        for action in lenient:
            _, reward_old, *_, info_old = old.step(action)
            _, reward_new, *_, info_new = new.step(action)
            assert info_old["last_error"] is None and reward_old == 0.0, action
            assert info_new["last_error"] and reward_new == -new.unwrapped.config.invalid_penalty, action
        assert [e["id"] for e in info_old["emitted"]] == [first]
    finally:
        old.close()
        new.close()
