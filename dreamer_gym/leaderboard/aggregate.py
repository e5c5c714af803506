"""Aggregates the field trusts, from re-scored results files (Agarwal et al. 2021, "Deep RL at the edge of
the statistical precipice").

Per region (bank x family), a row's in-family score after consolidation is normalised by the family's
references on the same track and episodes: ``(score - empty) / (oracle - empty)``, with the family means of
the ``empty`` and ``oracle`` rows. A family where the oracle is within :data:`FLAT_POINTS` of empty carries
no signal to divide by; it is flagged and left out of the aggregates, never divided by ~0. Over the
(banks x families) matrix: the mean and the interquartile mean (IQM, ``scipy.stats.trim_mean`` at 25%),
each with a 95% CI from a stratified bootstrap (banks resampled within each family, families kept), and
the probability of improvement over the best fixed baseline (per family, ``P(X > Y) + P(X = Y) / 2`` over
its banks, the Mann-Whitney statistic, averaged over families), with its bootstrap CI.

Why not rliable: rliable 1.2 pins ``arch < 8``, and arch 7.2 fails to import beside pandas 3 (our pinned
pandas); the three functions above are rliable's definitions, on scipy and numpy.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

FLAT_POINTS = 5.0  # oracle - empty below this (0-100 score points): the family is flagged, not normalised
BOOTSTRAP_REPS = 2000
BOOTSTRAP_SEED = 20261205


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

    @classmethod
    def from_results(cls, empty: Mapping[str, Any], oracle: Mapping[str, Any]) -> Normaliser:
        e, o = _family_means(region_scores(empty)), _family_means(region_scores(oracle))
        flagged = tuple(sorted(f for f in e if f in o and o[f] - e[f] < FLAT_POINTS))
        return cls(e, o, flagged)

    @property
    def families(self) -> tuple[str, ...]:
        return tuple(sorted(f for f in self.empty if f in self.oracle and f not in self.flagged))

    def matrix(self, result: Mapping[str, Any]) -> tuple[np.ndarray, tuple[int, ...]]:
        """(banks x usable families) normalised scores of ``result``; NaN where a region is missing."""
        scores = region_scores(result)
        banks = tuple(sorted({b for b, _ in scores}))
        m = np.full((len(banks), len(self.families)), np.nan)
        for j, f in enumerate(self.families):
            for i, b in enumerate(banks):
                if (b, f) in scores:
                    m[i, j] = (scores[(b, f)] - self.empty[f]) / (self.oracle[f] - self.empty[f])
        return m, banks

    def per_family(self, result: Mapping[str, Any]) -> dict[str, float | None]:
        """Family -> normalised family mean (None for a flagged family)."""
        means = _family_means(region_scores(result))
        out: dict[str, float | None] = {}
        for f, v in sorted(means.items()):
            usable = f in self.families
            out[f] = float((v - self.empty[f]) / (self.oracle[f] - self.empty[f])) if usable else None
        return out


def _family_means(scores: Mapping[tuple[int, str], float]) -> dict[str, float]:
    by: dict[str, list[float]] = {}
    for (_, f), v in scores.items():
        by.setdefault(f, []).append(v)
    return {f: float(np.mean(v)) for f, v in by.items()}


def iqm(m: np.ndarray) -> Any:
    """Interquartile mean of the last two axes (a leading axis is a batch of bootstrap replicates)."""
    flat = m.reshape(*m.shape[:-2], -1)
    out = stats.trim_mean(flat, 0.25, axis=-1)
    return float(out) if np.ndim(out) == 0 else out


def mean(m: np.ndarray) -> Any:
    out = m.mean(axis=(-2, -1))
    return float(out) if np.ndim(out) == 0 else out


def probability_of_improvement(x: np.ndarray, y: np.ndarray) -> Any:
    """Average over families (last axis) of P(X > Y) + P(X = Y) / 2 between their banks (second-to-last axis):
    the Mann-Whitney U statistic over n_x * n_y, as rliable defines it."""
    gt = (x[..., :, None, :] > y[..., None, :, :]).mean(axis=(-3, -2))
    eq = (x[..., :, None, :] == y[..., None, :, :]).mean(axis=(-3, -2))
    out = (gt + 0.5 * eq).mean(axis=-1)
    return float(out) if np.ndim(out) == 0 else out


def stratified_bootstrap(statistic: Callable[..., Any], *matrices: np.ndarray, reps: int = BOOTSTRAP_REPS,
                         seed: int = BOOTSTRAP_SEED) -> tuple[float, float]:
    """95% percentile CI of ``statistic(*matrices)``: each replicate resamples the rows (banks) within every
    column (family) independently, the same draw for every matrix (so paired matrices stay paired). All
    replicates at once: ``statistic`` takes a leading batch axis."""
    rng = np.random.default_rng(seed)
    n_rows, n_cols = matrices[0].shape
    rows = rng.integers(n_rows, size=(reps, n_rows, n_cols))
    cols = np.arange(n_cols)
    values = np.asarray(statistic(*(m[rows, cols] for m in matrices)))
    lo, hi = np.percentile(values, [2.5, 97.5])
    return float(lo), float(hi)


def aggregate(matrix: np.ndarray, baseline: np.ndarray | None = None) -> dict[str, Any]:
    """Mean and IQM with CIs, and P(improvement) over ``baseline`` (same shape) with its CI."""
    if matrix.size == 0 or np.isnan(matrix).any():
        return {"mean": None, "iqm": None}
    out: dict[str, Any] = {"mean": mean(matrix), "mean_ci": stratified_bootstrap(mean, matrix),
                           "iqm": iqm(matrix), "iqm_ci": stratified_bootstrap(iqm, matrix)}
    if baseline is not None and baseline.shape == matrix.shape and not np.isnan(baseline).any():
        out["p_improvement"] = probability_of_improvement(matrix, baseline)
        out["p_improvement_ci"] = stratified_bootstrap(probability_of_improvement, matrix, baseline)
    return out


def best_fixed(matrices: Mapping[str, np.ndarray], fixed: Sequence[str]) -> str | None:
    """The fixed baseline with the highest IQM (ties: the first name in sorted order)."""
    scored = [(iqm(matrices[n]), n) for n in sorted(fixed) if n in matrices and not np.isnan(matrices[n]).any()]
    return max(scored, key=lambda t: t[0])[1] if scored else None  # max keeps the first of equals
