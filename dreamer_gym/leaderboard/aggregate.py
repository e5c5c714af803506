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

The statistics are rliable's definitions; the resampling is not quite rliable's. Every row of a track is
scored on the same regions (the same input banks, the same TEST episodes), so two rows' cells at one region
are a pair: a statistic of two rows (a difference, the probability of improvement) resamples the *same* bank
draws for both (paired), where rliable's ``StratifiedIndependentBootstrap`` draws each algorithm's runs
independently (its runs are independent seeds; ours are not). A row's own CI is the stratified bootstrap, as
in rliable. rliable itself is not a dependency: 1.2 pins ``arch < 8``, and arch 7.2 fails to import beside
our pinned pandas 3 (research/rliable_compare.py runs it in a separate environment against this module).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

FLAT_POINTS = 5.0  # oracle - empty below this (0-100 score points): the family is flagged, not normalised
# 95% CIs: the Monte-Carlo SD of their endpoints across bootstrap seeds is <= 0.005 normalised at this many
# replicates on the committed results (measured: docs/leaderboard.md, "How scores are computed"; endpoint_sd)
BOOTSTRAP_REPS = 10000
BOOTSTRAP_SEED = 20261205
BATCH_CELLS = 2_000_000  # replicates x banks x families drawn at once (16 MB a matrix): big tracks go in batches
LEVEL = 0.95


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
    """Interquartile mean of the last two axes (leading axes are batches: bootstrap replicates, simulations)."""
    flat = m.reshape(*m.shape[:-2], -1)
    out = stats.trim_mean(flat, 0.25, axis=-1)
    return float(out) if np.ndim(out) == 0 else out


def mean(m: np.ndarray) -> Any:
    out = m.mean(axis=(-2, -1))
    return float(out) if np.ndim(out) == 0 else out


def iqm_difference(x: np.ndarray, y: np.ndarray) -> Any:
    """IQM(x) - IQM(y): the measure the board ranks by, between two rows."""
    return iqm(x) - iqm(y)


def mean_difference(x: np.ndarray, y: np.ndarray) -> Any:
    return mean(x) - mean(y)


def probability_of_improvement(x: np.ndarray, y: np.ndarray) -> Any:
    """Average over families (last axis) of P(X > Y) + P(X = Y) / 2 between their banks (second-to-last axis):
    the Mann-Whitney U statistic over n_x * n_y, as rliable defines it. Computed from ranks (ties averaged), so a
    batch of replicates costs n log n per family rather than n_x * n_y."""
    n_x, n_y = x.shape[-2], y.shape[-2]
    ranks = stats.rankdata(np.concatenate([x, y], axis=-2), axis=-2)
    u = ranks[..., :n_x, :].sum(axis=-2) - n_x * (n_x + 1) / 2
    out = (u / (n_x * n_y)).mean(axis=-1)
    return float(out) if np.ndim(out) == 0 else out


def bootstrap_distribution(statistic: Callable[..., Any], *matrices: np.ndarray, reps: int = BOOTSTRAP_REPS,
                           seed: int = BOOTSTRAP_SEED) -> np.ndarray:
    """``reps`` values of ``statistic(*matrices)``, each on a stratified resample: the rows (banks) within every
    column (family) drawn with replacement, the *same* draw for every matrix (paired: rows of a track share their
    regions). ``statistic`` takes a leading batch axis; replicates go in batches of :data:`BATCH_CELLS` cells."""
    rng = np.random.default_rng(seed)
    n_rows, n_cols = matrices[0].shape
    batch = max(1, BATCH_CELLS // (n_rows * n_cols))
    cols = np.arange(n_cols)
    out = []
    for start in range(0, reps, batch):
        rows = rng.integers(n_rows, size=(min(batch, reps - start), n_rows, n_cols))
        out.append(np.asarray(statistic(*(m[rows, cols] for m in matrices)), dtype=float).reshape(len(rows)))
    return np.concatenate(out)


def expansion(n_rows: int, n_cols: int, level: float = LEVEL) -> float:
    """How far the ``expanded`` interval stretches the percentile one about the estimate: the bootstrap's variance
    of a mean of n draws is (n - 1) / n of the unbiased one, and with ``n_cols * (n_rows - 1)`` degrees of freedom
    the quantile is Student's t, not the normal's (after Hesterberg 2015's expanded percentile interval, which
    moves the percentile levels instead; measured against the ``t`` interval, docs/leaderboard.md)."""
    if n_rows < 2:
        return 1.0
    q = 0.5 + level / 2
    return float(np.sqrt(n_rows / (n_rows - 1)) * stats.t.ppf(q, n_cols * (n_rows - 1)) / stats.norm.ppf(q))


def welch_df(*matrices: np.ndarray) -> float:
    """Welch-Satterthwaite degrees of freedom of a stratified mean (of the cell-wise difference of two paired
    matrices): fewer than ``families * (banks - 1)`` where families spread unequally."""
    cells = matrices[0] if len(matrices) == 1 else matrices[0] - matrices[1]
    n_rows, n_cols = cells.shape
    if n_rows < 2:
        return float("inf")
    v = cells.var(axis=0, ddof=1) / n_rows
    if not (v > 0).any():
        return float(n_cols * (n_rows - 1))
    return float(v.sum() ** 2 / ((v ** 2) / (n_rows - 1)).sum())


def interval(values: np.ndarray, estimate: float, n_rows: int, n_cols: int, kind: str = "t",
             df: float | None = None, level: float = LEVEL) -> tuple[float, float]:
    """The CI from a bootstrap distribution: ``percentile`` (its quantiles), ``expanded`` (those quantiles moved
    away from ``estimate`` by :func:`expansion`) or ``t`` (``estimate`` +- Student's t at ``df`` times the
    bootstrap SD, corrected by sqrt(n / (n - 1)): the small-sample interval the board uses)."""
    if kind == "percentile" or (kind == "expanded" and n_rows < 2):
        lo, hi = np.percentile(values, [50 * (1 - level), 50 * (1 + level)])
        return float(lo), float(hi)
    if kind == "expanded":
        lo, hi = np.percentile(values, [50 * (1 - level), 50 * (1 + level)])
        c = expansion(n_rows, n_cols, level)
        return float(estimate - c * (estimate - lo)), float(estimate + c * (hi - estimate))
    if kind != "t":
        raise ValueError(f"`kind`: expected 'percentile', 'expanded' or 't', got {kind!r}")
    if n_rows < 2:
        return float(estimate), float(estimate)
    dof = df if df is not None else n_cols * (n_rows - 1)
    half = stats.t.ppf(0.5 + level / 2, dof) * np.sqrt(n_rows / (n_rows - 1)) * values.std(ddof=1)
    return float(estimate - half), float(estimate + half)


def stratified_bootstrap(statistic: Callable[..., Any], *matrices: np.ndarray, reps: int = BOOTSTRAP_REPS,
                         seed: int = BOOTSTRAP_SEED, kind: str = "t") -> tuple[float, float]:
    """95% CI of ``statistic(*matrices)`` from a stratified (paired, where several) bootstrap."""
    values = bootstrap_distribution(statistic, *matrices, reps=reps, seed=seed)
    return interval(values, float(statistic(*matrices)), *matrices[0].shape, kind=kind, df=welch_df(*matrices[:2]))


def paired_difference(x: np.ndarray, y: np.ndarray, statistic: Callable[..., Any] = iqm_difference,
                      reps: int = BOOTSTRAP_REPS, seed: int = BOOTSTRAP_SEED) -> tuple[float, tuple[float, float]]:
    """``statistic(x, y)`` (IQM(x) - IQM(y) by default) and its 95% CI, x and y resampled on the same bank draws
    within families. A row against itself is exactly 0 with CI [0, 0]."""
    if x.shape != y.shape:
        raise ValueError(f"paired rows must hold the same regions: shapes {x.shape} and {y.shape}")
    return float(statistic(x, y)), stratified_bootstrap(statistic, x, y, reps=reps, seed=seed)


def endpoint_sd(statistic: Callable[..., Any], *matrices: np.ndarray, reps: int, seeds: Sequence[int]) -> float:
    """Monte-Carlo SD of the CI's endpoints across bootstrap seeds (the larger of the two): how much of a CI is
    the bootstrap's own noise at ``reps`` replicates. BOOTSTRAP_REPS is chosen on it."""
    ends = np.array([stratified_bootstrap(statistic, *matrices, reps=reps, seed=s) for s in seeds])
    return float(ends.std(axis=0, ddof=1).max())


def coverage(statistic: Callable[..., Any], *matrices: np.ndarray, sims: int = 400, reps: int = 1000,
             n_rows: int | None = None, population: str = "normal", kind: str = "t", seed: int = 0) -> float:
    """Share of simulated tracks whose 95% CI of ``statistic`` covers the truth, on the spread of ``matrices``.

    Each simulated track draws ``n_rows`` banks (default: as many as observed) in every family from a population
    built on the observed cells: ``normal``, a normal per family with the family's observed means and covariance
    across the matrices (paired rows stay correlated); ``cells``, the observed banks themselves (a bank drawn is
    one bank index, the same for every matrix). The truth is the statistic of the population (200,000 banks a
    family for ``normal``; every observed bank equally weighted for ``cells``)."""
    rng = np.random.default_rng(seed)
    cube = np.stack(matrices, axis=-1)  # banks x families x matrices
    n_obs, n_cols, k = cube.shape
    n = n_rows or n_obs
    if population == "normal":
        mu = cube.mean(axis=0)
        cov = np.stack([np.atleast_2d(np.cov(cube[:, j, :], rowvar=False)) for j in range(n_cols)])
        root = np.stack([_cov_root(c) for c in cov])  # families x k x k

        def draw(size: tuple[int, ...]) -> np.ndarray:
            z = rng.standard_normal((*size, n_cols, k))
            return mu + np.einsum("jab,...jb->...ja", root, z)

        big = draw((200_000,))
        truth = float(statistic(*(big[..., i] for i in range(k))))
        tracks = draw((sims, n))
    elif population == "cells":
        truth = float(statistic(*(np.repeat(m, 1000, axis=0) for m in matrices)))
        idx = rng.integers(n_obs, size=(sims, n, n_cols))
        tracks = cube[idx, np.arange(n_cols)]
    else:
        raise ValueError(f"`population`: expected 'normal' or 'cells', got {population!r}")
    hits = 0
    for s in range(sims):
        sim = [tracks[s, ..., i] for i in range(k)]
        lo, hi = stratified_bootstrap(statistic, *sim, reps=reps, seed=seed + 1 + s, kind=kind)
        hits += lo - 1e-12 <= truth <= hi + 1e-12
    return hits / sims


def _cov_root(c: np.ndarray) -> np.ndarray:
    """A square root of a (possibly singular) covariance: eigenvectors scaled by the roots of the eigenvalues."""
    w, v = np.linalg.eigh(c)
    return v * np.sqrt(np.clip(w, 0, None))


def aggregate(matrix: np.ndarray, baseline: np.ndarray | None = None) -> dict[str, Any]:
    """Mean and IQM with CIs, and P(improvement) over ``baseline`` (same shape) with its CI."""
    if matrix.size == 0 or np.isnan(matrix).any():
        return {"mean": None, "iqm": None}
    out: dict[str, Any] = {"mean": mean(matrix), "mean_ci": stratified_bootstrap(mean, matrix),
                           "iqm": iqm(matrix), "iqm_ci": stratified_bootstrap(iqm, matrix)}
    if baseline is not None and baseline.shape == matrix.shape and not np.isnan(baseline).any():
        out["p_improvement"] = probability_of_improvement(matrix, baseline)
        lo, hi = stratified_bootstrap(probability_of_improvement, matrix, baseline)
        out["p_improvement_ci"] = (max(lo, 0.0), min(hi, 1.0))  # a probability: the expansion stops at its bounds
    return out


def best_fixed(matrices: Mapping[str, np.ndarray], fixed: Sequence[str]) -> str | None:
    """The fixed baseline with the highest IQM (ties: the first name in sorted order)."""
    scored = [(iqm(matrices[n]), n) for n in sorted(fixed) if n in matrices and not np.isnan(matrices[n]).any()]
    return max(scored, key=lambda t: t[0])[1] if scored else None  # max keeps the first of equals
