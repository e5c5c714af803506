"""A non-commit tool step (read_entry / search / keep+retract) on a 50-entry region. Target: < 1 ms.

The region is the pool's largest family region (the env's default selector) when it reaches 50
entries. When it does not (the shipped pool's largest is 41, measured 2026-12-02), the 50-entry region
is a real one built with the library's other selector, ``select_by_cluster(bank, seed, 50)``: the 50
entries of that bank most similar (BM25) to the family's first entry. That region is measured twice:

* ``Workspace`` tool calls directly (the "raw" cost of the tool itself), and
* ``ConsolidationEnv.step`` through ``gym.make`` (parse + tool + the observation and info the env
  returns), with the 50-entry workspace put in place of the one reset() built (when injected).

``env.step`` on the largest real family region (no injection) is measured as well.
No JVM starts here: only commit evaluates.
"""
from __future__ import annotations

import json

import gymnasium as gym
import pytest

import dreamer_gym  # noqa: F401 - registers the env ids
from dreamer_gym.envs.consolidation import REGION_CHARS
from dreamer_gym.envs.spaces import sanitize
from dreamer_gym.envs.tools import Workspace
from dreamer_gym.memory import select_by_cluster, select_by_family
from dreamer_gym.pool import load_pool

ENV_ID = "MemoryConsolidation-ScienceWorld-v0"
REGION_SIZE = 50
GROUP_WS = "tool call on a 50-entry region: Workspace (raw)"
GROUP_ENV = "tool step on a 50-entry region: env.step"


@pytest.fixture(scope="module")
def pool():
    return load_pool("scienceworld-v0")


@pytest.fixture(scope="module")
def largest(pool) -> tuple[int, int, str]:
    """(entries, bank index, family) of the pool's largest family region (first bank on a tie)."""
    n, neg_index, family = max(
        (len(select_by_family(b, f).entry_ids), -i, f) for i, b in enumerate(pool.banks) for f in pool.families
    )
    return n, -neg_index, family


@pytest.fixture(scope="module")
def region50(pool, largest, perf):
    n, bank_index, family = largest
    bank = pool.banks[bank_index]
    if n >= REGION_SIZE:
        region = select_by_family(bank, family, REGION_SIZE)
    else:
        seed = next(e for e in bank if e.family == family)
        region = select_by_cluster(bank, seed.id, REGION_SIZE)
    perf.notes["50-entry region"] = f"{region.name} in bank {bank_index} (largest family region: {family}, {n} entries)"
    return bank, region


def _workspace(pool, bank, region, family) -> Workspace:
    # contract 1, what these figures have always measured (contract 2's bank-wide search is another workload)
    return Workspace(bank, region, pool.trajectories, family, max_emitted=12, max_entry_tokens=320, contract=1)


@pytest.fixture(scope="module")
def ws(pool, region50, largest):
    return _workspace(pool, *region50, largest[2])


@pytest.fixture(scope="module")
def query(region50) -> str:
    bank, region = region50
    return " ".join(bank.get(region.entry_ids[0]).text.split()[:12])


def _make_env(largest):
    _, bank_index, family = largest
    env = gym.make(ENV_ID, max_region_entries=REGION_SIZE, max_tool_calls=1_000_000)
    _, info = env.reset(seed=0, options={"bank": bank_index, "family": family})
    return env, info


@pytest.fixture(scope="module")
def env50(pool, region50, largest):
    env, info = _make_env(largest)
    if len(info["region"]) != REGION_SIZE:  # the family region is smaller: put the 50-entry one in its place
        env.unwrapped._ws = _workspace(pool, *region50, largest[2])
    yield env
    env.close()


@pytest.fixture(scope="module")
def env_family(largest):
    env, info = _make_env(largest)
    yield env, info
    env.close()


def test_region_is_50_entries(region50, largest, env_family):
    bank, region = region50
    assert len(region.entry_ids) == REGION_SIZE and all(i in bank for i in region.entry_ids)
    _, info = env_family
    assert len(info["region"]) == min(largest[0], REGION_SIZE)


# --- Workspace (the tool itself) -------------------------------------------------------------------------
def test_ws_read_entry(benchmark, ws, region50, perf):
    benchmark.group = GROUP_WS
    entry_id = region50[1].entry_ids[0]
    out = benchmark(ws.read_entry, {"id": entry_id})
    perf.record(benchmark, "Workspace.read_entry (50)", unit="call")
    assert json.loads(out)["id"] == entry_id


def test_ws_search(benchmark, ws, region50, query, perf):
    benchmark.group = GROUP_WS
    out = benchmark(ws.search, {"query": query, "k": 5})
    perf.record(benchmark, "Workspace.search k=5 (50)", unit="call")
    ids = [line.split(" ", 1)[0] for line in out.splitlines()]
    assert 1 <= len(ids) <= 5 and set(ids) <= set(region50[1].entry_ids)
    assert region50[1].entry_ids[0] in ids  # the entry the query was taken from is found


def test_ws_keep_retract(benchmark, ws, region50, perf):
    benchmark.group = GROUP_WS
    entry_id = region50[1].entry_ids[0]

    def keep_retract() -> tuple[str, str]:
        return ws.keep({"ids": [entry_id]}), ws.retract({"index": 0})

    kept, retracted = benchmark(keep_retract)
    perf.record(benchmark, "Workspace.keep+retract (50)", per=2, unit="call")
    assert kept.startswith("kept 1 entries") and retracted.startswith(f"retracted {entry_id}")
    assert ws.emitted == []


# --- env.step (parse + tool + observation + info) ----------------------------------------------------------
def _check_step(out, n_entries: int) -> None:
    obs, reward, terminated, truncated, info = out
    assert reward == 0.0 and not terminated and not truncated
    assert info["last_error"] is None
    assert obs["region"].startswith("Region ") and f": {n_entries} entries" in obs["region"].splitlines()[0]
    assert int(obs["budget"][3]) == n_entries


def test_env_step_read_entry(benchmark, env50, region50, perf):
    benchmark.group = GROUP_ENV
    entry_id = region50[1].entry_ids[0]
    action = json.dumps({"tool": "read_entry", "id": entry_id})
    out = benchmark(env50.step, action)
    perf.record(benchmark, "env.step read_entry (50)", unit="step")
    _check_step(out, REGION_SIZE)
    assert json.loads(out[0]["result"])["id"] == entry_id


def test_env_step_search(benchmark, env50, query, perf):
    benchmark.group = GROUP_ENV
    action = json.dumps({"tool": "search", "query": query, "k": 5})
    out = benchmark(env50.step, action)
    perf.record(benchmark, "env.step search k=5 (50)", unit="step")
    _check_step(out, REGION_SIZE)
    assert 1 <= len(out[0]["result"].splitlines()) <= 5


def test_env_step_keep_retract(benchmark, env50, region50, perf):
    benchmark.group = GROUP_ENV
    keep = json.dumps({"tool": "keep", "ids": [region50[1].entry_ids[0]]})
    retract = json.dumps({"tool": "retract", "index": 0})

    def keep_retract():
        return env50.step(keep), env50.step(retract)

    kept, retracted = benchmark(keep_retract)
    perf.record(benchmark, "env.step keep+retract (50)", per=2, unit="step")
    _check_step(kept, REGION_SIZE)
    _check_step(retracted, REGION_SIZE)
    assert kept[4]["emitted"] and retracted[4]["emitted"] == []


def test_env_step_read_entry_family_region(benchmark, env_family, perf):
    """The largest real family region, no injection."""
    benchmark.group = GROUP_ENV
    env, info = env_family
    entry_id = info["region"][0]["id"]
    out = benchmark(env.step, json.dumps({"tool": "read_entry", "id": entry_id}))
    perf.record(benchmark, f"env.step read_entry (family region, {len(info['region'])})", unit="step")
    _check_step(out, len(info["region"]))


def test_env_observation_sanitize(benchmark, env50, perf):
    """Where env.step's time goes: sanitizing the region text for the observation (per character)."""
    benchmark.group = GROUP_ENV
    text = env50.unwrapped.region_text()
    out = benchmark(sanitize, text, REGION_CHARS)
    perf.record(benchmark, "sanitize(region_text) (50)", unit="call")
    perf.notes["region_text chars (50-entry region)"] = len(text)
    assert out == text  # the pool's entries are printable ASCII already: sanitize changes nothing here


def test_tool_step_ratios(require_measuring, perf):
    failures = []
    for tool in ("read_entry", "search k=5", "keep+retract"):
        raw = perf.median(f"Workspace.{tool} (50)")
        step = perf.median(f"env.step {tool} (50)")
        perf.ratio(f"env.step / Workspace {tool}", step / raw, "(info)", True, "(info)", True)
        # target < 1 ms; floor 3 ms (the observation's per-character sanitize dominates env.step, see docs)
        r = perf.ratio(f"env.step {tool} (50), ms", step * 1e3, "< 1", step < 1e-3, "< 3", step < 3e-3)
        if not r.met_floor:
            failures.append(f"env.step {tool}: {step * 1e3:.2f} ms")
        w = perf.ratio(f"Workspace.{tool} (50), ms", raw * 1e3, "< 1", raw < 1e-3, "< 1", raw < 1e-3)
        if not w.met_floor:
            failures.append(f"Workspace.{tool}: {raw * 1e3:.2f} ms")
    perf.median("sanitize(region_text) (50)")  # skips if it did not run
    # mins, not medians: both are pure-Python CPU work, and the min is what a quiet machine gives
    share = perf.medians["sanitize(region_text) (50)"]["min_s"] / perf.medians["env.step read_entry (50)"]["min_s"]
    perf.ratio("sanitize share of env.step read_entry (mins)", share, "(info)", True, "(info)", True)
    assert not failures, failures
