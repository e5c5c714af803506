"""The built-in `latency` suite (scaling measurements): it passes the suite check, and every call waits."""
from __future__ import annotations

import time

import pytest

from dreamer_gym.suites import EpisodeTask, make_suite
from dreamer_gym.testing import check_suite
from dreamer_gym.suites.latency import code_of


def test_latency_suite_passes_check_suite() -> None:
    report = check_suite("latency")
    assert report.available and not report.skipped and "gold path solves" in report.passed


def test_every_call_waits_and_the_gold_path_wins() -> None:
    suite = make_suite("latency", latency_s=0.05)
    task = EpisodeTask("open-safe", 200)
    start = time.perf_counter()
    suite.start(task)
    outcomes = [suite.step(action) for action in suite.gold_path(task)]
    assert time.perf_counter() - start >= 3 * 0.05
    assert outcomes[-1].score == 100.0 and outcomes[-1].done
    assert {code_of(v) for v in range(0, 8)}.isdisjoint(code_of(v) for v in range(200, 208))  # TRAIN vs TEST codes
    with pytest.raises(ValueError, match="latency_s"):
        make_suite("latency", latency_s=-1)
