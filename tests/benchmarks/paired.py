"""Interleaved A/B timing and the ``gate`` ratio checks built on it (see ``conftest.py`` for what a gate is)."""
from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass
class Paired:
    """Seconds per round of two paths timed alternately in one run (see :func:`interleaved`)."""

    a: list[float]
    b: list[float]

    @property
    def ratio(self) -> float:
        """median(B) / median(A): what B costs in units of A."""
        return statistics.median(self.b) / statistics.median(self.a)

    def entry(self, side: str, per: int = 1, unit: str = "op") -> dict[str, Any]:
        """A :class:`PerfRegistry` medians row for side ``"a"`` or ``"b"``."""
        times = [t / per for t in getattr(self, side)]
        q = statistics.quantiles(times, n=4)
        return {"median_s": statistics.median(times), "min_s": min(times), "iqr_s": q[2] - q[0],
                "rounds": len(times), "per": per, "unit": unit}


def interleaved(a: Callable[[], Any], b: Callable[[], Any], pairs: int, warmup: int = 3,
                between: Callable[[], Any] | None = None) -> Paired:
    """Time ``a`` and ``b`` alternately, ``pairs`` times each after ``warmup`` untimed pairs, the order
    flipped every pair: a neighbour's load burst lands on both sides, so the ratio of medians holds on a
    busy machine where two benchmarks run minutes apart do not. ``between`` runs untimed before each pair."""
    out = Paired([], [])
    for i in range(warmup + pairs):
        if between is not None:
            between()
        for fn, sink in ((a, out.a), (b, out.b)) if i % 2 else ((b, out.b), (a, out.a)):
            t0 = time.perf_counter()
            fn()
            if i >= warmup:
                sink.append(time.perf_counter() - t0)
    return out


def gate(perf: Any, name: str, paired: Paired, target: float, floor: float,
         names: tuple[str, str], per: int = 1, unit: str = "op", higher_is_better: bool = False) -> Any:
    """Record a gated ratio (and both sides' medians) and assert its floor, with both medians in the message."""
    perf.medians[names[0]] = paired.entry("a", per, unit)
    perf.medians[names[1]] = paired.entry("b", per, unit)
    value = paired.ratio
    sign = ">=" if higher_is_better else "<="
    met = (lambda bound: value >= bound) if higher_is_better else (lambda bound: value <= bound)
    r = perf.ratio(name, value, f"{sign} {target:g}", met(target), f"{sign} {floor:g}", met(floor))
    a, b = (statistics.median(t) / per * 1e3 for t in (paired.a, paired.b))
    assert r.met_floor, (f"{name}: {value:.2f}x, floor {sign} {floor:g}x ({names[1]} {b:.3f} ms vs {names[0]} "
                         f"{a:.3f} ms per {unit}, medians of {len(paired.a)} interleaved pairs)")
    return r
