"""Shared plumbing for the performance benchmarks.

Every figure that has a target is a *ratio against the raw underlying environment measured in the
same run* (or an absolute time where the target is absolute), because this machine has 2 cores that
other processes share: absolute times move from run to run, ratios of medians taken minutes apart move
much less.

Two modes:

* CI (the default ``addopts`` hold ``--benchmark-disable``): each benchmark body runs once, and the
  tests assert correctness (same outputs as the raw environment, nothing valid-action related
  requested, cache hits served, ...). The ratio checks marked ``gate`` run and assert their floors too;
  the other ratio tests skip.
* ``--benchmark-enable`` (``make bench``): the bodies are measured; each benchmark records its median per
  operation here, the ratio tests at the end of each module (they take ``require_measuring``) compute the
  ratios and assert the floors, and a summary table is printed at the end of the session. Set
  ``DREAMER_BENCH_SUMMARY`` to a file path to also get the summary as JSON.

A ``gate`` check is one that a busy 2-core machine cannot fail by chance: it measures both sides itself,
in one test, *interleaved* (``paired.interleaved``: A and B alternate, the order flipped every pair), and
compares medians over enough pairs, so a load burst slows both sides alike; its floor leaves a margin
over what a loaded run measured (docs/performance.md, "Gates"); and it takes a few seconds. It does
not depend on any other test's medians, so it runs alone, in any order (``pytest -m gate``).

A ``measure`` test (or parameter) is one whose point is the measurement itself: many workers, many episodes, a
memory figure. It is ``heavy`` in CI mode (its marker's comment names the CI test that checks its correctness
claim at small size) and runs as usual under ``--benchmark-enable``; ``pytest -m heavy`` runs it once.
"""
from __future__ import annotations

import json
import os
import platform
import time
from dataclasses import asdict, dataclass
from typing import Any

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "measure: a benchmark whose point is the measurement (scale, memory): heavy "
                                       "unless --benchmark-enable (see tests/benchmarks/conftest.py)")


@pytest.hookimpl(tryfirst=True)  # before the -m selection reads the markers
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if benchmarks_enabled(config):
        return
    for item in items:
        if item.get_closest_marker("measure") is not None:
            item.add_marker(pytest.mark.heavy)


def benchmarks_enabled(config: pytest.Config) -> bool:
    """Whether pytest-benchmark measures in this session (``--benchmark-enable`` beats the ini's disable)."""
    session = getattr(config, "_benchmarksession", None)
    if session is not None:
        return not session.disabled
    return not (config.getoption("benchmark_disable") and not config.getoption("benchmark_enable"))


@dataclass
class Ratio:
    name: str
    value: float
    target: str
    met_target: bool
    floor: str
    met_floor: bool


class PerfRegistry:
    """Medians per operation (seconds) and the ratios computed from them, for the whole session."""

    def __init__(self) -> None:
        self.medians: dict[str, dict[str, Any]] = {}
        self.ratios: list[Ratio] = []
        self.notes: dict[str, Any] = {}

    def record(self, benchmark: Any, key: str, per: int = 1, unit: str = "op") -> float | None:
        """Store ``benchmark``'s median divided by ``per`` operations; None when not measured."""
        if benchmark.disabled or benchmark.stats is None:
            return None
        stats = benchmark.stats.stats
        median = stats.median / per
        self.medians[key] = {
            "median_s": median,
            "min_s": stats.min / per,
            "iqr_s": stats.iqr / per,
            "rounds": stats.rounds,
            "per": per,
            "unit": unit,
        }
        benchmark.extra_info[f"median_per_{unit}_s"] = median
        benchmark.extra_info["ops_per_round"] = per
        return median

    def median(self, key: str) -> float:
        if key not in self.medians:
            pytest.skip(f"benchmark {key!r} did not run in this session (run the whole module)")
        return float(self.medians[key]["median_s"])

    def ratio(self, name: str, value: float, target: str, met_target: bool, floor: str, met_floor: bool) -> Ratio:
        r = Ratio(name, float(value), target, bool(met_target), floor, bool(met_floor))
        self.ratios = [x for x in self.ratios if x.name != name] + [r]
        return r


_REGISTRY = PerfRegistry()


@pytest.fixture(scope="session")
def perf() -> PerfRegistry:
    return _REGISTRY


@pytest.fixture(scope="session")
def measuring(pytestconfig: pytest.Config) -> bool:
    return benchmarks_enabled(pytestconfig)


@pytest.fixture
def require_measuring(measuring: bool) -> None:
    if not measuring:
        pytest.skip("ratio assertions need --benchmark-enable (CI mode checks correctness only)")


def _fmt_s(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.3f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} us"


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    reg = _REGISTRY
    if not reg.medians and not reg.ratios:
        return
    tr = terminalreporter
    tr.section("dreamer_gym performance summary (medians, same run)")
    for key, m in reg.medians.items():
        tr.write_line(
            f"  {key:<44} {_fmt_s(m['median_s']):>11} per {m['unit']:<8} "
            f"(min {_fmt_s(m['min_s'])}, IQR {_fmt_s(m['iqr_s'])}, {m['rounds']} rounds x {m['per']} {m['unit']})"
        )
    if reg.ratios:
        tr.write_line("")
        for r in reg.ratios:
            tr.write_line(
                f"  {r.name:<44} {r.value:>9.3f}   target {r.target:<10} {'MET' if r.met_target else 'NOT MET':<8}"
                f" floor {r.floor:<10} {'ok' if r.met_floor else 'FAILED'}"
            )
    for key, value in reg.notes.items():
        tr.write_line(f"  note {key}: {value}")
    out = os.environ.get("DREAMER_BENCH_SUMMARY")
    if out:
        payload = {
            "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
            "load_avg_at_end": os.getloadavg(),
            "medians": reg.medians,
            "ratios": [asdict(r) for r in reg.ratios],
            "notes": reg.notes,
        }
        with open(out, "w", encoding="utf-8") as fh:
            json.dump(payload, fh, indent=1, sort_keys=True)
        tr.write_line(f"  summary written to {out}")
