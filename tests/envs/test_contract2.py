"""Tool contract 2 (issue 40) through the env: ``ScienceWorld-v2`` and ``ScienceWorldWindows-v1``.

What the policy sees beyond its region (the bank context, the whole bank read-only) and the tool that writes
(``synthesize``), on the real shipped pools; the older ids are unchanged (no `synthesize`, no context)."""
from __future__ import annotations

import json

import gymnasium as gym
import pytest

from dreamer_gym.contract.ids import REGISTERED
from dreamer_gym.memory import parse_window

from helpers import make_env

V2 = "MemoryConsolidation-ScienceWorld-v2"
WINDOWS = "MemoryConsolidation-ScienceWorldWindows-v1"


def call(tool: str, **args) -> str:
    return json.dumps({"tool": tool, **args})


@pytest.fixture(scope="module")
def windows():
    env = make_env(WINDOWS)
    yield env
    env.close()


def window_with(env, want_covered: bool, want_retrieved_only: bool = False) -> tuple[int, str]:
    """A (bank, window) whose own tasks are all covered by older entries (or one that has a new task); with
    ``want_retrieved_only``, one that also holds retrieved entries of a task its own sessions did not play."""
    pool = env.unwrapped.pool
    for bank in range(len(pool.banks)):
        for key in pool.region_keys(bank):
            _, info = env.reset(seed=0, options={"bank": bank, "region": key})
            covered = all(t["covered"] for t in info["bank_context"])
            own = {t["task"] for t in info["bank_context"]}
            foreign = {e["family"] for e in info["region"]} - own
            if covered == want_covered and (not want_retrieved_only or foreign):
                return bank, key
    raise AssertionError("no such window in the shipped pool")


def test_the_new_ids_freeze_contract_2_and_the_old_ones_keep_theirs() -> None:
    assert REGISTERED[V2]["frozen"]["tool_contract"] == 2 and not REGISTERED[V2]["frozen"]["window_own_families"]
    assert REGISTERED[WINDOWS]["frozen"]["tool_contract"] == 2 and REGISTERED[WINDOWS]["frozen"]["window_own_families"]
    for old in ("MemoryConsolidation-ScienceWorld-v1", "MemoryConsolidation-ScienceWorldWindows-v0"):
        assert REGISTERED[old]["frozen"]["tool_contract"] == 1 and not REGISTERED[old]["frozen"]["window_own_families"]
    with pytest.raises(Exception, match="frozen"):
        gym.make(WINDOWS, window_own_families=False)


def test_the_old_id_has_no_synthesize_and_no_context() -> None:
    env = make_env("MemoryConsolidation-ScienceWorld-v1")
    try:
        obs, info = env.reset(seed=0, options={"family": "find-living-thing"})
        assert "bank_context" not in info and "Bank context" not in obs["region"]
        _, reward, *_, info = env.step(call("synthesize", task="find-living-thing"))
        assert "unknown tool 'synthesize'" in info["last_error"] and reward < 0
        _, _, *_, info = env.step(call("search", query="door", scope="bank"))
        assert "has no argument `scope`" in info["last_error"]
    finally:
        env.close()


def test_the_bank_context_is_in_the_observation_and_tells_covered_from_new_windows(windows) -> None:
    covered = window_with(windows, True)
    new = window_with(windows, False)
    texts = []
    for bank, key in (covered, new):
        obs, info = windows.reset(seed=0, options={"bank": bank, "region": key})
        head = obs["region"].split("\n")
        assert head[0].startswith(f"Region {key}:") and head[1].startswith("Bank context")
        first = parse_window(key)[0]
        own = {e["family"] for e in info["region"] if e["session"] >= first}
        assert [t["task"] for t in info["bank_context"]] == sorted(own)
        texts.append("\n".join(head[1:2 + len(own)]))
    assert "NOT covered" not in texts[0] and "NOT covered" in texts[1]


def test_read_entry_and_search_reach_the_bank_read_only(windows) -> None:
    bank, key = window_with(windows, True)
    _, info = windows.reset(seed=0, options={"bank": bank, "region": key})
    region_ids = {e["id"] for e in info["region"]}
    full_bank = windows.unwrapped._ws.bank  # bank v0: the bank when the window closed
    outside = next(e for e in full_bank if e.id not in region_ids)
    obs, reward, *_, info = windows.step(call("read_entry", id=outside.id))
    shown = json.loads(obs["result"])
    assert reward == 0.0 and shown["id"] == outside.id and shown["read_only"] and not shown["in_region"]
    obs, *_ = windows.step(call("search", query=outside.text[:80], k=20))
    assert any(line.startswith("[bank, read-only") and outside.id in line for line in obs["result"].splitlines())
    obs, *_ = windows.step(call("search", query=outside.text[:80], k=20, scope="region"))
    assert outside.id not in obs["result"]
    for bad in (call("keep", ids=[outside.id]), call("emit", kind="fact", text="x", provenance=[outside.id])):
        _, reward, *_, info = windows.step(bad)  # read-only: it cannot be carried over or cited
        assert info["last_error"] and reward < 0
    _, _, *_, info = windows.step(call("read_entry", id="e-not-in-the-bank"))
    assert "no entry" in info["last_error"]


def test_synthesize_returns_a_candidate_that_emit_files_unchanged(windows) -> None:
    pool = windows.unwrapped.pool
    for bank in range(len(pool.banks)):  # a window whose own task has several successful runs
        for key in pool.region_keys(bank):
            obs, info = windows.reset(seed=0, options={"bank": bank, "region": key})
            for task in (t["task"] for t in info["bank_context"]):
                obs, reward, *_, info = windows.step(call("synthesize", task=task))
                assert reward == 0.0 and info["last_error"] is None
                if obs["result"].startswith("{") and "emit" in json.loads(obs["result"]):
                    reply = json.loads(obs["result"])
                    candidate = reply["candidate"]
                    assert candidate["task"] == task and candidate["support"] >= 2
                    cited = {p["trajectory_id"] for p in candidate["provenance"]}
                    assert {pool.trajectories[t].family for t in cited} == {task}
                    n_before = len(info["emitted"])
                    _, reward, *_, info = windows.step(reply["emit"])
                    assert info["last_error"] is None and reward == 0.0
                    written = info["emitted"][n_before]
                    assert written["text"] == candidate["text"] and written["family"] == task
                    assert "consolidated" in written["tags"]
                    return
    raise AssertionError("no window of the shipped pool had a task with two successful runs")


def test_synthesize_refuses_a_task_the_window_may_not_file_under(windows) -> None:
    bank, key = window_with(windows, True, want_retrieved_only=True)
    _, info = windows.reset(seed=0, options={"bank": bank, "region": key})
    own = {t["task"] for t in info["bank_context"]}
    linked_families = {windows.unwrapped.pool.trajectories[p["trajectory_id"]].family
                       for e in info["region"] for p in e["provenance"]}
    foreign = sorted(linked_families - own)
    assert foreign, "the window links runs of a task it did not play (through a retrieved entry)"
    _, reward, *_, info = windows.step(call("synthesize", task=foreign[0]))
    assert "own sessions played" in info["last_error"] and reward < 0
    _, _, *_, info = windows.step(call("synthesize", task="no-such-task"))
    assert "the region's tasks are" in info["last_error"]


@pytest.mark.jvm
def test_a_synthesized_region_commits_on_v2_and_the_reward_is_the_envs() -> None:
    env = make_env(V2)
    try:
        obs, info = env.reset(seed=0, options={"family": "find-living-thing"})
        assert info["bank_context"][0]["task"] == "find-living-thing"
        obs, *_ = env.step(call("synthesize", task="find-living-thing"))
        reply = json.loads(obs["result"])
        obs, reward, *_, info = env.step(reply.get("emit") or reply["keep"])
        assert info["last_error"] is None
        obs, reward, terminated, _, info = env.step(call("commit"))
        assert terminated and info["size_after"]["entries"] == 1 and isinstance(reward, float)
        assert info["invalid_calls"] == 0
    finally:
        env.close()
