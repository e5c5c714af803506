"""Aggregates the field trusts, from re-scored results files: the board's side of :mod:`dreamer_gym.stats`
(rliable's definitions, written once there).

Per region (bank x family), a row's in-family score after consolidation is normalised by the family's
references on the same track and episodes: ``(score - empty) / (oracle - empty)``, with the family means of
the ``empty`` and ``oracle`` rows. A family where the oracle is within :data:`FLAT_POINTS` of empty carries
no signal to divide by; it is flagged and left out of the aggregates, never divided by ~0. A row's normalised
cells are :class:`~dreamer_gym.stats.Strata` (per family, banks x TEST variations: :meth:`Normaliser.cells`), so
every CI resamples banks and TEST variations independently within each family, the same draws for every row.
Over the (banks x families) matrix of region means: the mean and the interquartile mean (IQM), each with a 95%
CI, and the probability of improvement over the best fixed baseline with its CI. The track score's CI
(:func:`score_ci`) resamples banks only: a region's reward mixes in-family and other-family episodes.

A window track's regions (``window:A-B``, issue 40) mix families, so the anchors are per *episode family*: every
in-family episode of family f is normalised by ``(after - empty_f) / gap``, with ``empty_f`` the ``empty`` row's
mean over every in-family episode of f on the track (the same episodes) and ``gap`` one track-wide denominator: the
mean of ``oracle_f - empty_f`` over the track's in-family episodes (each episode's family's gap, episode-weighted).
A window's normalised score is the mean over its in-family episodes of usable families. So ``empty`` scores 0 in
every family and ``oracle`` 1 on the track's episodes as a whole. Why one denominator: per family, a family whose
oracle stands little above empty on windows (identify-life-stages-1: 11 points, against 32-52 for lifespan-*)
would weigh 3-5 times as much per episode inside every window that mixes it, and the pilot's MDD doubles
(docs/leaderboard.md, "The scienceworld-windows track"). A
window has no family to stratify by: its cells are one stratum, rows the windows (in (bank, key) order) and columns
the track's distinct TEST episodes (family, variation), so the bootstrap resamples windows and, crossed, the TEST
episodes every window shares (:meth:`Normaliser.cells`).

rliable itself is not a dependency: 1.2 pins ``arch < 8``, and arch 7.2 fails to import beside our pinned pandas 3
(research/rliable_compare.py runs it in a separate environment against this module).
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dreamer_gym.memory.regions import parse_window
from dreamer_gym.stats import (  # noqa: F401  (the board's names for them: research/ and tests import these)
    BOOTSTRAP_REPS,
    BOOTSTRAP_SEED,
    LEVEL,
    Strata,
    as_strata,
    bootstrap_rows,
    coverage,
    endpoint_sd,
    interval,
    iqm,
    iqm_difference,
    mean,
    mean_difference,
    paired_difference,
    probability_of_improvement,
    stratified_bootstrap,
    welch_df,
)

FLAT_POINTS = 5.0  # oracle - empty below this (0-100 score points): the family is flagged, not normalised


def region_scores(result: Mapping[str, Any]) -> dict[tuple[int, str], float]:
    """(bank, family) -> in-family score after (0-100) of one results file's records."""
    out = {}
    for r in result["records"]:
        own = [e["after"] for e in r["episodes"] if e["in_family"]]
        out[(int(r["bank_index"]), r["family"])] = float(np.mean(own)) if own else float("nan")
    return out


def reward_matrix(result: Mapping[str, Any]) -> np.ndarray:
    """(banks x families) of the track score's per-region rewards (NaN where a region is missing)."""
    cells = {(int(r["bank_index"]), r["family"]): float(r["reward"]) for r in result["records"]}
    banks, families = sorted({b for b, _ in cells}), sorted({f for _, f in cells})
    return np.array([[cells.get((b, f), np.nan) for f in families] for b in banks])


def score_ci(result: Mapping[str, Any]) -> tuple[float, float] | None:
    """95% stratified-bootstrap CI of the track score (mean reward over regions)."""
    m = reward_matrix(result)
    return None if m.size == 0 or np.isnan(m).any() else stratified_bootstrap(mean, m)


@dataclass
class Normaliser:
    """Per-family empty and oracle means on one track; flagged families have no usable denominator."""

    empty: dict[str, float]
    oracle: dict[str, float]
    flagged: tuple[str, ...] = field(default=())
    windows: bool = False  # a window track: anchors per episode family, one stratum of windows (module docstring)
    gap: float | None = None  # a window track's one denominator: the episode-weighted mean of oracle_f - empty_f

    @classmethod
    def from_results(cls, empty: Mapping[str, Any], oracle: Mapping[str, Any]) -> Normaliser:
        if is_window_result(empty):
            e, o = _episode_family_means(empty), _episode_family_means(oracle)
            flagged = tuple(sorted(f for f in e if f in o and o[f] - e[f] < FLAT_POINTS))
            played = Counter(ep["family"] for r in empty["records"] for ep in r["episodes"] if ep["in_family"]
                             and ep["family"] in o and ep["family"] not in flagged)
            gap = sum(n * (o[f] - e[f]) for f, n in played.items()) / max(sum(played.values()), 1)
            return cls(e, o, flagged, windows=True, gap=gap)
        e, o = _family_means(region_scores(empty)), _family_means(region_scores(oracle))
        flagged = tuple(sorted(f for f in e if f in o and o[f] - e[f] < FLAT_POINTS))
        return cls(e, o, flagged)

    @property
    def families(self) -> tuple[str, ...]:
        return tuple(sorted(f for f in self.empty if f in self.oracle and f not in self.flagged))

    def matrix(self, result: Mapping[str, Any]) -> tuple[np.ndarray, tuple[int, ...]]:
        """(banks x usable families) normalised scores of ``result``; NaN where a region is missing. A window
        track's: (windows x 1), and the windows' banks."""
        if self.windows:
            return self.cells(result).matrix(), tuple(int(r["bank_index"]) for r in _window_records(result))
        scores = region_scores(result)
        banks = tuple(sorted({b for b, _ in scores}))
        m = np.full((len(banks), len(self.families)), np.nan)
        for j, f in enumerate(self.families):
            for i, b in enumerate(banks):
                if (b, f) in scores:
                    m[i, j] = (scores[(b, f)] - self.empty[f]) / (self.oracle[f] - self.empty[f])
        return m, banks

    def cells(self, result: Mapping[str, Any]) -> Strata:
        """The row's normalised in-family episodes as the bootstrap resamples them: per usable family, a (banks x
        TEST variations) array of the mean normalised score of the episodes a bank played on a variation, and how
        many (0 where it played none). Its region means are :meth:`matrix`. An episode without a variation (an
        old record) is its region's one cell: that family is then resampled by bank only. A window track's:
        one stratum, (windows x the track's distinct TEST episodes)."""
        if self.windows:
            return self._window_cells(result)
        sums: dict[tuple[str, int, int], float] = {}
        counts: dict[tuple[str, int, int], int] = {}
        for r in result["records"]:
            f = r["family"]
            if f not in self.families:
                continue
            for e in r["episodes"]:
                if e["in_family"]:
                    key = (f, int(r["bank_index"]), int(e.get("variation", -1)))
                    value = (float(e["after"]) - self.empty[f]) / (self.oracle[f] - self.empty[f])
                    sums[key] = sums.get(key, 0.0) + value
                    counts[key] = counts.get(key, 0) + 1
        banks = sorted({b for (_, b, _) in sums}) or [0]
        values, weights = [], []
        for f in self.families:
            variations = sorted({v for (g, _, v) in sums if g == f}) or [-1]
            w = np.array([[counts.get((f, b, v), 0) for v in variations] for b in banks], dtype=float)
            x = np.array([[sums.get((f, b, v), np.nan) for v in variations] for b in banks]) / np.maximum(w, 1)
            values.append(np.where(w > 0, x, np.nan))
            weights.append(w)
        return Strata(tuple(values), tuple(weights))

    def _window_cells(self, result: Mapping[str, Any]) -> Strata:
        records = _window_records(result)
        episodes = sorted({(e["family"], int(e["variation"])) for r in records for e in r["episodes"]
                           if e["in_family"] and e["family"] in self.families})
        column = {ep: j for j, ep in enumerate(episodes)}
        sums, counts = np.zeros((len(records), len(episodes))), np.zeros((len(records), len(episodes)))
        for i, r in enumerate(records):
            for e in r["episodes"]:
                if e["in_family"] and e["family"] in self.families:
                    j, f = column[(e["family"], int(e["variation"]))], e["family"]
                    sums[i, j] += (float(e["after"]) - self.empty[f]) / self.gap  # type: ignore[operator]
                    counts[i, j] += 1
        values = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
        return Strata((values,), (counts,))

    def per_family(self, result: Mapping[str, Any]) -> dict[str, float | None]:
        """Family -> normalised family mean (None for a flagged family); on a window track, of the episodes of
        that family."""
        if self.windows:
            means = _episode_family_means(result)
            return {f: float((v - self.empty[f]) / self.gap) if f in self.families else None  # type: ignore[operator]
                    for f, v in sorted(means.items())}
        means = _family_means(region_scores(result))
        out: dict[str, float | None] = {}
        for f, v in sorted(means.items()):
            usable = f in self.families
            out[f] = float((v - self.empty[f]) / (self.oracle[f] - self.empty[f])) if usable else None
        return out


def is_window_result(result: Mapping[str, Any]) -> bool:
    """Whether a results file's regions are time windows (``window:A-B`` keys in the records' ``family``)."""
    return any(parse_window(r["family"]) is not None for r in result["records"])


def _window_records(result: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """A window track's records in (bank, key) order: every row of the track lists its windows alike."""
    return sorted(result["records"], key=lambda r: (int(r["bank_index"]), parse_window(r["family"]) or (0, 0)))


def _episode_family_means(result: Mapping[str, Any]) -> dict[str, float]:
    """Family -> mean score after over every in-family episode of that family (a window track's anchors)."""
    by: dict[str, list[float]] = {}
    for r in result["records"]:
        for e in r["episodes"]:
            if e["in_family"]:
                by.setdefault(e["family"], []).append(float(e["after"]))
    return {f: float(np.mean(v)) for f, v in sorted(by.items())}


def _family_means(scores: Mapping[tuple[int, str], float]) -> dict[str, float]:
    by: dict[str, list[float]] = {}
    for (_, f), v in scores.items():
        by.setdefault(f, []).append(v)
    return {f: float(np.mean(v)) for f, v in by.items()}


def complete(row: Strata | np.ndarray | None) -> bool:
    """Whether a row holds a value in every region (only such rows are aggregated and compared)."""
    if row is None:
        return False
    m = row.matrix() if isinstance(row, Strata) else row
    return m.size > 0 and not np.isnan(m).any()


def aggregate_rows(rows: Mapping[str, Strata], baseline: Strata | None = None,
                   ) -> tuple[dict[str, dict[str, Any]], dict[str, np.ndarray]]:
    """Every row's mean and IQM with CIs, and P(improvement) over ``baseline`` with its CI, from one bootstrap pass
    per layout (the same draws for every row: :func:`~dreamer_gym.stats.bootstrap_rows`); and each complete row's
    IQM replicates, which give every paired IQM difference without another pass."""
    out: dict[str, dict[str, Any]] = {name: {"mean": None, "iqm": None} for name in rows}
    replicates: dict[str, np.ndarray] = {}
    groups: dict[Any, list[str]] = {}
    for name, cells in rows.items():
        if complete(cells):
            groups.setdefault(cells.layout, []).append(name)
    for layout, names in groups.items():
        base = baseline if baseline is not None and baseline.layout == layout and complete(baseline) else None
        values = bootstrap_rows([rows[n] for n in names], {"mean": mean, "iqm": iqm}, against=base,
                                paired={"p_improvement": probability_of_improvement})
        for i, name in enumerate(names):
            cells = rows[name]
            matrix, (n_banks, n_cols) = cells.matrix(), (cells.banks, len(layout))
            agg: dict[str, Any] = {}
            for key, f in (("mean", mean), ("iqm", iqm)):
                agg[key] = f(matrix)
                agg[f"{key}_ci"] = interval(values[key][:, i], agg[key], n_banks, n_cols, df=welch_df(cells))
            if base is not None:
                agg["p_improvement"] = probability_of_improvement(matrix, base.matrix())
                lo, hi = interval(values["p_improvement"][:, i], agg["p_improvement"], n_banks, n_cols,
                                  df=welch_df(cells, base))
                agg["p_improvement_ci"] = (max(lo, 0.0), min(hi, 1.0))  # a probability: the t interval stops at its bounds
            out[name] = agg
            replicates[name] = values["iqm"][:, i]
    return out, replicates


def aggregate(row: Strata | np.ndarray, baseline: Strata | np.ndarray | None = None) -> dict[str, Any]:
    """Mean and IQM with CIs, and P(improvement) over ``baseline`` (same regions and episodes) with its CI."""
    base = None if baseline is None else as_strata(baseline)
    return aggregate_rows({"row": as_strata(row)}, base)[0]["row"]


def best_fixed(rows: Mapping[str, Strata], fixed: Sequence[str]) -> str | None:
    """The fixed baseline with the highest IQM (ties: the first name in sorted order)."""
    scored = [(iqm(rows[n].matrix()), n) for n in sorted(fixed) if n in rows and complete(rows[n])]
    return max(scored, key=lambda t: t[0])[1] if scored else None  # max keeps the first of equals
