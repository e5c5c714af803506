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
