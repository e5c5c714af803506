"""The fixed rules of tool contract 2 (``rule:context``, ``rule:synthesize-*``; consolidators/context_rules.py) on
real ScienceWorld: each plays only calls the env accepts, the synthesize rules file the candidates the env wrote
(citing the region's trajectories), the context rule commits empty where the bank already covers every task of a
window and keeps the procedures where a task is new; on an id without contract 2 each fails at once, naming the id
to use. The windows are found by scanning the pool's regions (their ``info["bank_context"]``), not hard-coded."""
from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import pytest

import dreamer_gym  # noqa: F401 - registers the ids
from dreamer_gym.consolidators import make_consolidator, run_episode
from dreamer_gym.consolidators.context_rules import CONTEXT_RULES
from dreamer_gym.consolidators.op_rule import OP_RULES, make_rule
from dreamer_gym.errors import ConfigError

from helpers import make_env

WINDOWS = "MemoryConsolidation-ScienceWorldWindows-v1"
FAMILY = "MemoryConsolidation-ScienceWorld-v2"
RULES = [f"rule:{name}" for name in CONTEXT_RULES]


def play_until_commit(env: gym.Env, rule: str, options: dict[str, Any],
                      results: list[str] | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every call ``rule`` plays before its commit (stepped through the env, results fed back; each result appended
    to ``results``) and the last info: what it would commit, without paying the commit's evaluation episodes."""
    obs, info = env.reset(seed=0, options=options)
    calls = make_rule(rule).actions(env, obs, info)
    action, played = next(calls), []
    while json.loads(action)["tool"] != "commit":
        obs, _, terminated, _, info = env.step(action)
        assert not terminated
        played.append(json.loads(action))
        if results is not None:
            results.append(obs["result"])
        action = calls.send((obs, info))
    return played, info


def candidates(played: list[dict[str, Any]], results: list[str]) -> dict[str, list[dict[str, Any]]]:
    """task -> the filing calls (emit, or keep of an equal entry) its ``synthesize`` calls returned."""
    out: dict[str, list[dict[str, Any]]] = {}
    for c, result in zip(played, results):
        if c["tool"] == "synthesize":
            got = json.loads(result) if result.startswith("{") else {}
            out.setdefault(c["task"], []).extend(json.loads(got[k]) for k in ("emit", "keep") if k in got)
    return out


@pytest.fixture(scope="module")
def windows_env() -> Iterator[gym.Env]:
    env = gym.make(WINDOWS)
    yield env
    env.close()


@pytest.fixture(scope="module")
def windows(windows_env: gym.Env) -> dict[str, dict[str, Any]]:
    """Bank 0's first window whose every task the bank covered before it, first whose every task is new, and first
    that mixes both: found through ``info["bank_context"]``."""
    found: dict[str, dict[str, Any]] = {}
    for key in windows_env.unwrapped.pool.region_keys(0):
        _, info = windows_env.reset(seed=0, options={"bank": 0, "region": key})
        covered = [t["covered"] for t in info["bank_context"]]
        kind = "covered" if all(covered) else "novel" if not any(covered) else "mixed"
        found.setdefault(kind, {"bank": 0, "region": key})
    assert set(found) == {"covered", "novel", "mixed"}, found
    return found


def test_the_rules_are_named_like_the_op_rules() -> None:
    for rule in RULES:
        assert make_rule(rule).name == make_consolidator(rule).name == rule.removeprefix("rule:")
    assert make_consolidator("rule:merge-all").name == "merge-all" and not set(CONTEXT_RULES) & set(OP_RULES)
    with pytest.raises(ConfigError, match="context-synthesize"):  # the message lists every rule
        make_consolidator("rule:contxt")


@pytest.mark.parametrize("old, new", [("MemoryConsolidation-ScienceWorld-v1", FAMILY),
                                      ("MemoryConsolidation-ScienceWorldWindows-v0", WINDOWS)])
def test_on_an_id_without_contract_2_every_rule_fails_at_once_naming_the_id(old: str, new: str) -> None:
    env = gym.make(old)
    try:
        pool = env.unwrapped.pool
        region = pool.region_keys(0)[0] if pool.region_scheme.kind == "window" else pool.families[0]
        for rule in RULES:
            with pytest.raises(ConfigError, match=f"rule:{rule[5:]} needs tool contract 2.*use {new}"):
                run_episode(env, make_rule(rule), seed=0, options={"bank": 0, "region": region})
    finally:
        env.close()


def test_every_rule_plays_only_calls_the_env_accepts(windows_env: gym.Env, windows: dict[str, Any]) -> None:
    emitted: dict[str, list[dict[str, Any]]] = {rule: [] for rule in RULES}
    for options in windows.values():
        _, start = windows_env.reset(seed=0, options=options)
        linked = {p["trajectory_id"] for e in start["region"] for p in e["provenance"]}
        procedures = {e["id"] for e in start["region"] if e["kind"] == "procedure"}
        plays = {}
        for rule in RULES:
            results: list[str] = []
            played, info = play_until_commit(windows_env, rule, options, results)
            plays[rule] = played
            assert info["invalid_calls"] == 0 and info["last_error"] is None, (rule, options, info["last_error"])
            emits = [c for c in played if c["tool"] == "emit"]
            emitted[rule] += emits
            for c in emits:  # a synthesized entry cites whole ranges of the region's own linked trajectories
                assert c["provenance"] and all(set(p) == {"trajectory_id", "start", "end"} for p in c["provenance"])
                assert {p["trajectory_id"] for p in c["provenance"]} <= linked
            if rule == "rule:context" or (rule == "rule:context-synthesize" and
                                          all(t["covered"] for t in start["bank_context"])):
                continue  # the context rules' plays: test_the_context_rule_commits_empty_where_every_task_is_covered
            filed = candidates(played, results)
            assert set(filed) == {t["task"] for t in start["bank_context"]}  # one synthesize per own task (and kind)
            # every candidate filed as the env wrote it, nothing else emitted
            assert emits == [c for cs in filed.values() for c in cs if c["tool"] == "emit"]
            kept = {i for c in played if c["tool"] == "keep" for i in c["ids"]}
            from_candidates = {i for cs in filed.values() for c in cs if c["tool"] == "keep" for i in c["ids"]}
            if rule == "rule:synthesize-or-keep":  # a task without a candidate keeps its procedures verbatim
                bare = {e["id"] for e in start["region"] if e["kind"] == "procedure" and not filed[e["family"]]}
                assert kept == from_candidates | bare and bare <= procedures
            else:
                assert kept == from_candidates
        if not all(t["covered"] for t in start["bank_context"]):  # a task is new: context-synthesize synthesizes
            assert plays["rule:context-synthesize"] == plays["rule:synthesize-procedures"]
    assert any(c["kind"] == "procedure" for c in emitted["rule:synthesize-procedures"])
    assert {c["kind"] for c in emitted["rule:synthesize-procedures-facts"]} == {"procedure", "fact"}


def test_the_context_rule_commits_empty_where_every_task_is_covered(windows_env: gym.Env,
                                                                    windows: dict[str, Any]) -> None:
    for rule in ("rule:context", "rule:context-synthesize"):
        played, info = play_until_commit(windows_env, rule, windows["covered"])
        assert played == [] and all(t["covered"] for t in info["bank_context"])
    for kind in ("novel", "mixed"):  # a task the bank never saw: the region's procedures are kept
        played, info = play_until_commit(windows_env, "rule:context", windows[kind])
        procedures = [e["id"] for e in info["region"] if e["kind"] == "procedure"]
        assert procedures and played == [{"tool": "keep", "ids": procedures}]
        assert [e["id"] for e in info["emitted"]] == procedures


@pytest.mark.jvm
def test_rules_commit_on_the_family_id_and_through_the_command_line(capsys: pytest.CaptureFixture) -> None:
    """Real commits (evaluation episodes, the fewest that still mix in another family) on the contract-2 family id: a
    synthesized procedure, and the context rule through ``dreamer-gym consolidate --consolidator rule:context``."""
    from dreamer_gym.cli import main

    env = make_env(FAMILY)  # the id with one in-family and one other-family evaluation episode
    try:
        info = run_episode(env, make_rule("rule:synthesize-procedures"), seed=0,
                           options={"bank": 0, "region": "use-thermometer"})
    finally:
        env.close()
    assert info["invalid_calls"] == 0 and math.isfinite(info["return"])
    assert [e["kind"] for e in info["emitted"]] == ["procedure"]
    assert all(p["trajectory_id"] for p in info["emitted"][0]["provenance"])
    assert main(["consolidate", "--env", FAMILY, "--consolidator", "rule:context", "--families", "use-thermometer",
                 "--seeds", "0", "--eval-in-family", "1", "--eval-other", "0", "--quiet"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if "rule:context" in line)
    assert "1.00" in row  # valid calls: every call accepted


@pytest.mark.heavy
@pytest.mark.jvm
def test_every_rule_commits_on_real_windows(windows_env: gym.Env, windows: dict[str, Any]) -> None:
    """Each rule's real commit (20 in-family episodes, ~30-50 s each on 2 cores) on a window with a new task, and the
    context rule's on a covered window: accepted with no invalid call, the committed region what was played."""
    for kind, rules in (("mixed", RULES), ("covered", ["rule:context"])):
        for rule in rules:
            info = run_episode(windows_env, make_rule(rule), seed=0, options=windows[kind])
            assert info["invalid_calls"] == 0 and math.isfinite(info["return"]), (rule, kind)
            if kind == "covered":
                assert info["emitted"] == [] and info["size_after"]["entries"] == 0
