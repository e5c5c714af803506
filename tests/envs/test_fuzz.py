"""Fuzzing `ConsolidationEnv.step` with malformed and adversarial tool calls.

Bad policy output is an observation, never an exception (STYLE.md, "Bad model output is an
observation"). The fuzzed env has a huge call budget and is never sent `commit`, so no simulator runs
during the fuzz; one real commit at the end checks that a commit only ever *adds* a bank version.

Two input classes once crashed `step` and are fuzzed on purpose: JSON integers longer than Python's
4300-digit int-conversion limit, and JSON strings holding lone UTF-16 surrogates (``"\\ud800"``).
"""
from __future__ import annotations

import json
import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dreamer_gym.envs.tools import TOOLS

from helpers import call, make_env

SEED = 7
MAX_CALLS = 100_000
RESET_EVERY = 100  # keeps the episode's emitted list (and so each observation) from growing without bound


class Fuzzed:
    """The fuzzed env plus what must not change while it is fuzzed."""

    def __init__(self, env_id: str, pool) -> None:
        # a small region keeps each observation short (checking it against the Text space is per character)
        self.env = make_env(env_id, max_tool_calls=MAX_CALLS, max_region_entries=10)
        self.obs, self.info = self.env.reset(seed=SEED)
        self.region = self.info["region"]
        self.ids = [e["id"] for e in self.region]
        self.linked = sorted({p["trajectory_id"] for e in self.region for p in e["provenance"]})
        self.other_ids = sorted(e.id for b in pool.banks for e in b if e.id not in set(self.ids))[:40]
        self.unlinked = sorted(t for t in pool.trajectories if t not in set(self.linked))[:20]
        store = self.env.unwrapped.store
        self.banks_before = {h: [e.id for e in store.get_bank(h)] for h in store.bank_hashes()}
        self.calls_left = self.info["tool_calls_left"]
        self.steps = 0
        self.errors = 0
        self.max_new = 0

    def reset(self) -> None:
        self.obs, self.info = self.env.reset(seed=SEED)
        self.calls_left = self.info["tool_calls_left"]


@pytest.fixture(scope="module")
def fuzzed(env_id, pool):
    f = Fuzzed(env_id, pool)
    yield f
    f.env.close()


# --- strategies -----------------------------------------------------------------------------------------
PATHS = ["../../etc/passwd", "/etc/passwd", "..", ".", "~", "C:\\Windows\\system32", "file:///etc/passwd",
         "e" + "0" * 12, "t" + "0" * 12, "e../", "%2e%2e%2f", "\x00", " ", "", "NaN", "null", "commit"]
HUGE = ["x" * 100_000, "word " * 20_000, "é" * 50_000, "💥" * 30_000, "go to kitchen, " * 7_000, "\n" * 100_000,
        "<" * 50_000]
JUNK = (
    "\x00\x01\x1b\x7f\u200b\u200f\u202e\ufeff\uffff\U0001f600é漢字🚀\t\r\n\\\"'{}[]:,"
    "\ud800\udbff\udc00\udfff"  # lone surrogates
)
NON_COMMIT_TOOLS = sorted(t for t in TOOLS if t != "commit")
ARG_NAMES = ["id", "ids", "query", "k", "kind", "text", "provenance", "index", "start", "end", "arguments",
             "function", "name", "tool", "trajectory_id"]

ints = st.one_of(
    st.integers(-3, 60),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([-1, 0, 2**31, 2**63, -(2**63), 10**300]),
)
# JUNK holds lone surrogates: json.dumps escapes them ("\\ud800") or, with ensure_ascii=False, writes them raw
junk_text = st.text(alphabet=st.sampled_from(JUNK) | st.characters(exclude_categories=()), max_size=40)
scalars = st.one_of(
    st.none(), st.booleans(), ints, st.floats(allow_nan=True, allow_infinity=True), junk_text,
    st.sampled_from(PATHS), st.sampled_from(HUGE),
)
json_values = st.recursive(
    scalars, lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.sampled_from(ARG_NAMES) | junk_text, kids,
                                                                       max_size=4),
    max_leaves=10,
)


def weighted(*branches):
    """Pick a branch with the given integer weights (st.one_of flattens nested one_ofs, which would let
    the branches with many alternatives dominate)."""
    table = [s for w, s in branches for _ in range(w)]

    @st.composite
    def pick(draw):
        return draw(table[draw(st.integers(0, len(table) - 1))])

    return pick()


def id_values(f: Fuzzed):
    return st.one_of(st.sampled_from(f.ids), st.sampled_from(f.ids), st.sampled_from(f.other_ids),
                     st.sampled_from(PATHS), junk_text)


def traj_values(f: Fuzzed):
    return st.one_of(st.sampled_from(f.linked), st.sampled_from(f.linked), st.sampled_from(f.unlinked),
                     st.sampled_from(PATHS), junk_text)


def sometimes_wrong(plausible):
    """Mostly a plausible value, sometimes any JSON value of any type."""
    return st.one_of(plausible, plausible, plausible, plausible, json_values)


small_ints = st.one_of(st.integers(-2, 25), st.integers(-2, 25), ints)
def texts():
    # huge texts are rarer here: an accepted 100k-character "word" (one token) makes every later
    # observation of the episode expensive to build
    plain = st.one_of(
        st.text(alphabet=string.ascii_letters + " ,.", min_size=1, max_size=60),
        st.sampled_from(["Open the door, then look around.", "Do not focus on the wall.", "go to kitchen, focus on <x>",
                         "1. go to kitchen\n2. look around"]),
    )
    surrogates = st.sampled_from(["bad \ud800 text", "\udfff", "Open the door \udbff\udc00 now."])
    return weighted((6, plain), (3, junk_text), (1, surrogates), (1, st.sampled_from(HUGE)))


def provenance_items(f: Fuzzed):
    good_range = st.fixed_dictionaries(
        {"trajectory_id": st.sampled_from(f.linked), "start": st.integers(0, 2), "end": st.integers(2, 5)})
    odd_range = st.fixed_dictionaries(
        {"trajectory_id": sometimes_wrong(traj_values(f))},
        optional={"start": sometimes_wrong(small_ints), "end": sometimes_wrong(small_ints)},
    )
    odd = st.one_of(id_values(f), odd_range, json_values)
    return weighted((6, st.sampled_from(f.ids)), (2, good_range), (2, odd))


def tool_args(f: Fuzzed, tool: str):
    """Arguments for ``tool``: mostly plausible, any of them possibly missing or of the wrong type."""
    fields = {
        "read_entry": {"id": id_values(f)},
        "read_trajectory": {"id": traj_values(f), "start": small_ints, "end": small_ints},
        "search": {"query": texts(), "k": small_ints},
        "keep": {"ids": st.lists(id_values(f), min_size=1, max_size=6) | id_values(f)},
        "emit": {
            "kind": st.sampled_from(["insight", "procedure", "fact", "pitfall"] * 3 + ["Fact", "lesson", ""]),
            "text": texts(),
            "provenance": st.lists(provenance_items(f), min_size=1, max_size=4),
        },
        "retract": {"index": small_ints},
    }.get(tool, {})

    @st.composite
    def build(draw):
        args = {}
        for key, plausible in fields.items():
            choice = draw(st.integers(0, 9))
            if choice < 8:
                args[key] = draw(plausible)
            elif choice == 8:
                args[key] = draw(json_values)
        if draw(st.integers(0, 9)) == 0:
            args.update(draw(st.dictionaries(st.sampled_from(ARG_NAMES) | junk_text, json_values, max_size=3)))
        return args

    return build()


def tool_calls(f: Fuzzed):
    odd_names = st.one_of(st.sampled_from(["Commit", "COMMIT", "commit ", "emit\x00", "__init__", "_entry", "bank"]),
                          junk_text.filter(lambda t: t != "commit"), json_values.filter(lambda v: v != "commit"))
    # emit, the tool with the most to check, twice as often as the others
    name = weighted((8, st.sampled_from([*NON_COMMIT_TOOLS, "emit"])), (2, odd_names))

    by_tool = {t: tool_args(f, t) for t in NON_COMMIT_TOOLS}  # built once: composites are costly to create
    no_args = tool_args(f, "")

    @st.composite
    def build(draw):
        tool = draw(name)
        args = draw(by_tool.get(tool, no_args) if isinstance(tool, str) else no_args)
        shape = draw(st.sampled_from(["plain"] * 4 + ["openai", "openai-str", "function", "function-str"]))
        if shape == "plain":
            obj = {"tool": tool, **{k: v for k, v in args.items() if k != "tool"}}
        elif shape in ("openai", "openai-str"):
            obj = {"name": tool, "arguments": args if shape == "openai" else json.dumps(args)}
        else:
            inner = {"name": tool, "arguments": args if shape == "function" else json.dumps(args)}
            obj = {"type": "function", "function": inner}
        text = json.dumps(obj, ensure_ascii=draw(st.booleans()))
        mutate = draw(st.sampled_from(["none"] * 12 + ["cut", "insert", "wrap", "dup"]))
        if mutate == "cut":
            text = text[: draw(st.integers(0, max(len(text) - 1, 0)))]
        elif mutate == "insert":
            at = draw(st.integers(0, len(text)))
            text = text[:at] + draw(junk_text) + text[at:]
        elif mutate == "wrap":
            text = json.dumps([json.loads(text)])
        elif mutate == "dup":
            text = text + text
        return text

    return build()


def raw_actions():
    digits = st.integers(4000, 20_000).map(lambda n: "9" * n)  # past Python's 4300-digit int limit
    huge_ints = st.one_of(
        digits,
        digits.map(lambda d: '{"tool": "retract", "index": ' + d + "}"),
        digits.map(lambda d: '{"tool": "search", "query": "x", "k": -' + d + "}"),
        digits.map(lambda d: json.dumps({"name": "read_entry", "arguments": '{"id": ' + d + "}"})),
    )
    nested = st.integers(1, 5000).map(lambda n: "[" * n + "]" * n)
    nested_obj = st.integers(1, 3000).map(lambda n: '{"tool":"emit","kind":' + '{"a":' * n + "1" + "}" * n + "}")
    return st.one_of(
        junk_text,
        st.text(alphabet=string.printable, max_size=200),
        st.sampled_from(HUGE),
        nested,
        nested_obj,
        huge_ints,
        json_values.map(json.dumps),
        st.sampled_from(["", " ", "{", "}", "{}", "[]", "null", "true", '"emit"', "NaN", "-Infinity", "{\"tool\"}",
                         '{"tool": "emit",}', "{'tool': 'emit'}", '{"tool": "search", "query": "x"} trailing']),
        st.one_of(st.none(), st.integers(), st.floats(), st.binary(max_size=20), st.lists(st.integers(), max_size=3),
                  st.dictionaries(st.text(max_size=5), st.integers(), max_size=3)),  # not even strings
    )


# --- the fuzz --------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def action_strategy(fuzzed):
    calls, raw = tool_calls(fuzzed), raw_actions()
    # explicit weights: st.one_of flattens nested one_ofs, which would let the raw branches dominate
    return weighted((7, calls), (3, raw))


def test_fuzz_step_never_raises(fuzzed, action_strategy):
    env = fuzzed.env
    penalty = env.unwrapped.config.invalid_penalty
    max_emitted = env.unwrapped.config.max_emitted

    @settings(max_examples=1000, deadline=None, database=None, derandomize=False,  # 2000 before (issue 39: CI time)
              suppress_health_check=list(HealthCheck))
    @given(action=action_strategy)
    def check(action):
        if fuzzed.steps and fuzzed.steps % RESET_EVERY == 0:
            fuzzed.reset()
        fuzzed.steps += 1
        obs, reward, terminated, truncated, info = env.step(action)
        fuzzed.calls_left -= 1
        assert not terminated and not truncated, action
        assert env.observation_space.contains(obs), action
        assert info["tool_calls_left"] == fuzzed.calls_left
        assert info["region"] == fuzzed.region  # the region is read-only evidence
        if info["last_error"] is None:
            assert reward == 0.0, action
        else:
            fuzzed.errors += 1
            assert isinstance(info["last_error"], str) and reward == -penalty, action
            assert obs["result"].startswith("ERROR")
        new = [e for e in info["emitted"] if e["id"] not in set(fuzzed.ids)]
        assert len(new) <= max_emitted
        fuzzed.max_new = max(fuzzed.max_new, len(new))
        assert all(e["kind"] in ("insight", "procedure", "fact", "pitfall") and e["text"].strip() for e in new)
        # every accepted provenance points into the region's own trajectories
        linked = set(fuzzed.linked)
        assert all(p["trajectory_id"] in linked for e in info["emitted"] for p in e["provenance"])
        assert "score_after" not in info

    check()
    assert fuzzed.steps >= 500
    # the fuzz reached the error paths and the accepting ones too (emits included)
    assert fuzzed.errors > fuzzed.steps // 2 and fuzzed.steps - fuzzed.errors >= 100
    assert fuzzed.max_new >= 1


@pytest.mark.jvm  # the final commit plays
def test_fuzz_left_the_store_alone_and_a_commit_adds_one_version(fuzzed):
    env = fuzzed.env
    store = env.unwrapped.store
    after = {h: [e.id for e in store.get_bank(h)] for h in store.bank_hashes()}
    assert after == fuzzed.banks_before  # no stored version changed, none was added

    obs, info = env.reset(seed=SEED)
    ids = fuzzed.ids
    env.step(call("keep", ids=ids[: len(ids) // 2]))
    env.step(call("emit", kind="insight", text="Look around in every room before you focus on anything.",
                  provenance=ids[:2]))
    obs, reward, terminated, truncated, info = env.step(call("commit"))
    assert terminated and "score_after" in info and info["last_error"] is None
    final = {h: [e.id for e in store.get_bank(h)] for h in store.bank_hashes()}
    added = set(final) - set(fuzzed.banks_before)
    assert added == {info["bank_after"]}
    assert all(final[h] == ids_ for h, ids_ in fuzzed.banks_before.items())
    assert store.bank_parent(info["bank_after"]) == info["bank_before"]


# --- the two inputs that once crashed step ------------------------------------------------------------------------
@pytest.mark.parametrize("action", [
    '{"tool": "retract", "index": ' + "1" * 5000 + "}",
    json.dumps({"name": "read_entry", "arguments": '{"id": ' + "9" * 4500 + "}"}),
    "7" * 5000,
], ids=["plain", "openai-arguments-string", "bare-number"])
def test_huge_json_integer_is_an_error_observation(fuzzed, action):
    """json.loads raises a plain ValueError (not JSONDecodeError) for integers over 4300 digits."""
    fuzzed.reset()
    obs, reward, terminated, truncated, info = fuzzed.env.step(action)
    assert info["last_error"] and not terminated and not truncated
    assert reward == -fuzzed.env.unwrapped.config.invalid_penalty


@pytest.mark.parametrize("tool", ["emit", "search", "read_entry", "read_trajectory", "keep"])
def test_lone_surrogate_is_an_error_observation(fuzzed, tool):
    """A lone surrogate is valid JSON but not encodable UTF-8; content hashing used to raise on it."""
    fuzzed.reset()
    bad = "bad \ud800 text"
    args = {
        "emit": {"kind": "fact", "text": bad, "provenance": [fuzzed.ids[0]]},
        "search": {"query": bad},
        "read_entry": {"id": bad},
        "read_trajectory": {"id": bad},
        "keep": {"ids": [bad]},
    }[tool]
    for ensure_ascii in (True, False):  # escaped, or the raw code point inside the action string
        action = json.dumps({"tool": tool, **args}, ensure_ascii=ensure_ascii)
        obs, reward, terminated, truncated, info = fuzzed.env.step(action)
        assert info["last_error"] and not terminated and not truncated
        assert fuzzed.env.observation_space.contains(obs)
        assert info["emitted"] == []
