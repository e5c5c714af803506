"""research.window_evidence reads a shipped window's evidence without a simulator."""
from __future__ import annotations

from dreamer_gym.pool import load_pool
from research.window_evidence import EVIDENCE, window_evidence


def test_the_first_window_of_a_bank_has_only_novel_tasks_and_a_later_one_fewer() -> None:
    pool = load_pool("scienceworld-windows-v0")
    keys = pool.region_keys(0)
    first = dict(zip(EVIDENCE, window_evidence(pool, keys[0], 0)))
    last = dict(zip(EVIDENCE, window_evidence(pool, keys[-1], 0)))
    assert first["window_start"] == 0 and first["novel_tasks"] >= 1
    assert last["novel_tasks"] <= first["novel_tasks"] and 0.0 < first["proc_support"] <= 1.0


def test_on_retrieved_windows_the_uncovered_tasks_are_visible_and_the_first_window_retrieves_nothing() -> None:
    pool = load_pool("scienceworld-windows-r3-v0")
    keys = pool.region_keys(0)
    first = dict(zip(EVIDENCE, window_evidence(pool, keys[0], 0)))
    later = dict(zip(EVIDENCE, window_evidence(pool, keys[4], 0)))
    assert first["retrieved"] == 0 and first["uncovered_tasks"] == first["novel_tasks"] >= 1
    # retrieved entries are older entries, so a task they cover is never novel: uncovered >= novel
    assert later["retrieved"] > 0 and later["uncovered_tasks"] >= later["novel_tasks"]
    assert 0.0 <= later["success_share"] <= 1.0
