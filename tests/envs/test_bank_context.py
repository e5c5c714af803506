"""The bank context (issue 40, item 2) on the shipped pools, no simulator: what the bank knew of a region's tasks
before its span, checked against the bank's history computed here independently."""
from __future__ import annotations

import json
from dataclasses import fields, replace

import numpy as np
import pytest

from dreamer_gym.envs.bank_context import (
    CONTEXT_FEATURES,
    HEADER,
    TaskContext,
    bank_context,
    context_dicts,
    context_features,
    render_context,
)
from dreamer_gym.envs.observation import entry_dict
from dreamer_gym.memory import KINDS, Region, bank_at, parse_window, region_task_mix, select_region
from dreamer_gym.pool import BankPool, load_pool

MAX_ENTRIES = 50


@pytest.fixture(scope="module")
def windows() -> BankPool:
    return load_pool("scienceworld-windows-r3-v0")


@pytest.fixture(scope="module")
def every_window(windows: BankPool) -> list[tuple[int, str, Region, tuple[TaskContext, ...]]]:
    """Every window region of the r3 pool as the env selects it (bank v0 = the bank at the window's close)."""
    out = []
    for i, full in enumerate(windows.banks):
        for key in windows.region_keys(i):
            bank = bank_at(full, key)
            region = windows.region_scheme.select(bank, key, windows.trajectories, MAX_ENTRIES)
            out.append((i, key, region, bank_context(bank, region, key, windows.trajectories)))
    return out


def test_covered_is_what_the_bank_held_before_the_window(windows: BankPool, every_window) -> None:
    """Recomputed from the whole bank (later sessions included: only sessions before A may count)."""
    uncovered = all_covered = 0
    for i, key, region, ctx in every_window:
        first, last = parse_window(key)
        full = windows.banks[i]
        in_region = [e for e in full if e.id in set(region.entry_ids)]
        own = sorted({e.family for e in in_region if first <= e.session <= last})
        assert [t.task for t in ctx] == own, key
        for task in ctx:
            older = [e for e in full if e.family == task.task and e.session < first]
            retrieved = [e for e in in_region if e.family == task.task and e.session < first]
            assert task.covered == bool(older), (i, key, task.task)
            assert task.newest_older_session == max((e.session for e in older), default=None)
            assert task.age == (None if not older else first - task.newest_older_session)
            assert task.retrieved == len(retrieved) and task.retrieved_sessions == tuple(sorted(
                {e.session for e in retrieved}))
            assert task.older_outside == {k: sum(e.kind == k for e in older if e not in retrieved) for k in KINDS}
            assert task.own_entries == sum(e.family == task.task and e.session >= first for e in in_region)
        uncovered += any(not t.covered for t in ctx)
        all_covered += all(t.covered for t in ctx)
    # windows that bring a task the bank never saw exist and are flagged; so do windows the bank fully covers
    assert uncovered > 0 and all_covered > 0 and uncovered + all_covered == len(every_window)
    print(f"every own task covered on {all_covered} of {len(every_window)} windows")


def test_windows_of_different_task_mixes_read_differently(windows: BankPool, every_window) -> None:
    by_mix: dict[tuple[str, ...], tuple[int, str, Region, tuple[TaskContext, ...]]] = {}
    for item in every_window:
        i, key, region, _ = item
        by_mix.setdefault(tuple(region_task_mix(bank_at(windows.banks[i], key), region)), item)
    assert len(by_mix) > 1
    (i, key, region, ctx), (j, key2, region2, ctx2) = list(by_mix.values())[:2]
    assert context_dicts(ctx) != context_dicts(ctx2) and render_context(ctx) != render_context(ctx2)
    # the same region's entries read with the other window's context: the columns move with the context
    dicts = [entry_dict(windows.banks[i].get(e)) for e in region.entry_ids]
    assert not np.array_equal(context_features(dicts, ctx, MAX_ENTRIES), context_features(dicts, ctx2, MAX_ENTRIES))


def test_features_mark_own_entries_and_their_tasks(windows: BankPool, every_window) -> None:
    col = {name: k for k, name in enumerate(CONTEXT_FEATURES)}
    foreign_seen = 0
    for i, key, region, ctx in every_window[:40]:
        first, last = parse_window(key)
        dicts = [entry_dict(windows.banks[i].get(e)) for e in region.entry_ids]
        feats = context_features(dicts, ctx, MAX_ENTRIES)
        assert feats.shape == (MAX_ENTRIES, len(CONTEXT_FEATURES)) and feats.dtype == np.float32
        assert not feats[len(dicts):].any()  # padding
        by_task = {t.task: t for t in ctx}
        for row, entry in zip(feats, dicts):
            assert row[col["own_entry"]] == float(first <= entry["session"] <= last)
            task = by_task.get(entry["family"])
            if task is None:  # retrieved for a task the window did not write for
                foreign_seen += 1
                assert row[col["task_covered"]] == 1.0 and row[col["task_own_share"]] == 0.0
                continue
            assert row[col["task_covered"]] == float(task.covered)
            assert row[col["task_older_procedures"]] == task.older_outside["procedure"]
        shares = {dicts[k]["family"]: feats[k, col["task_own_share"]] for k in range(len(dicts))
                  if dicts[k]["family"] in by_task}
        assert sum(shares.values()) == pytest.approx(1.0)
    assert foreign_seen > 0
    # a task's context changes its entries' columns, and only theirs
    i, key, region, ctx = every_window[5]
    dicts = [entry_dict(windows.banks[i].get(e)) for e in region.entry_ids]
    flipped = tuple(replace(t, covered=not t.covered) if k == 0 else t for k, t in enumerate(ctx))
    moved = context_features(dicts, ctx, MAX_ENTRIES) != context_features(dicts, flipped, MAX_ENTRIES)
    assert {dicts[k]["family"] for k in np.flatnonzero(moved.any(axis=1))} == {ctx[0].task}


def test_family_regions_have_nothing_older_unless_capped() -> None:
    pool = load_pool("scienceworld-v0")
    bank = pool.banks[0]
    for key in pool.region_keys(0):
        region = select_region(bank, key)
        (task,) = bank_context(bank, region, key, pool.trajectories)
        assert task == TaskContext(key, len(region.entry_ids), 0, (), dict.fromkeys(KINDS, 0), None, None, False)
        capped = select_region(bank, key, 5)  # the newest sessions win: the older ones fall outside
        (task,) = bank_context(bank, capped, key, pool.trajectories)
        first = min(bank.get(e).session for e in capped.entry_ids)
        older = [e for e in bank if e.family == key and e.session < first]
        assert task.covered == bool(older) and sum(task.older_outside.values()) == len(older)
        assert task.own_entries == 5 and task.retrieved == 0


def test_dicts_are_plain_data_and_render_fits(every_window) -> None:
    _, _, _, ctx = max(every_window, key=lambda item: len(item[3]))
    dicts = json.loads(json.dumps(context_dicts(ctx)))
    assert [set(d) for d in dicts] == [{f.name for f in fields(TaskContext)}] * len(ctx)
    text = render_context(ctx)
    assert text.splitlines()[0] == HEADER and len(text.splitlines()) == 1 + len(ctx)
    # ten tasks with ScienceWorld's longest family name and two-digit counts (the r3 pool's largest: 44 own
    # entries, 10 retrieved, 89 older facts, age 32) fit in 1,500 characters
    worst = [TaskContext("find-non-living-thing", 99, 12, tuple(range(10, 99, 8)), dict.fromkeys(KINDS, 99), 0, 99,
                         True) for _ in range(10)]
    assert len(render_context(worst)) < 1500
    assert max(len(line) for *_, c in every_window for line in render_context(c).splitlines()[1:]) <= 140
    assert render_context(()).startswith(HEADER)


def test_a_region_outside_the_bank_is_named(windows: BankPool) -> None:
    key = windows.region_keys(0)[3]
    region = windows.region_scheme.select(bank_at(windows.banks[0], key), key, windows.trajectories, MAX_ENTRIES)
    with pytest.raises(ValueError, match="bank_at"):
        bank_context(windows.banks[1], region, key, windows.trajectories)
