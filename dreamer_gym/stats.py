"""The statistics every number on the board and in the studies comes from, written once (rliable's definitions:
Agarwal et al. 2021, "Deep RL at the edge of the statistical precipice").

* **Measures** of a (banks x families) matrix, with any leading batch axes: :func:`mean`, the interquartile mean
  :func:`iqm` (``scipy.stats.trim_mean`` at 25%, rliable's ``aggregate_iqm``), and the probability of improvement
  :func:`probability_of_improvement` (per family ``P(X > Y) + P(X = Y) / 2`` between banks, averaged over families,
  rliable's ``probability_of_improvement``).
* **The stratified bootstrap, crossed and paired.** A row is :class:`Strata`: per family (the stratum), a (banks x
  TEST variations) array of its per-episode scores. A replicate draws, within every family and independently, the
  banks with replacement and the family's TEST variations with replacement (Owen's pigeonhole bootstrap): a
  resampled region's value is the mean of the resampled variations its bank played. Every bank of a family replays
  the same few TEST variations, so a hard variation moves every bank at once: resampling banks alone treats those
  episodes as fixed and claims only the track's own variations. The draws depend on the seed and the layout only,
  never on which rows are passed, so every row of a track is resampled on the *same* draws (paired: rows of a track
  share their regions and episodes), where rliable's ``StratifiedIndependentBootstrap`` draws each algorithm's runs
  independently (its runs are independent seeds; ours are not). A plain matrix is the special case of one cell a
  region: banks alone are resampled, exactly as before this module (the same draws from the same seed).
* **Intervals**: the replicates' percentile interval, or (the board's) ``estimate +- t(df) * SE`` with the SE the
  replicates' SD times ``sqrt(n / (n - 1))`` (n banks a family: a bootstrap's variance of a mean of n draws is
  (n - 1) / n of the unbiased one) and df the Welch-Satterthwaite degrees of freedom of the family spreads.
* **Paired differences, rank intervals and the MDD**: :func:`paired_difference`, :func:`pairwise` (every pair of
  rows on one set of draws) with :func:`rank_intervals` (best rank 1 + the rows significantly above, worst rank the
  rows not significantly below), and ``MDD = (z_0.975 + z_0.8) * SE``, the smallest true difference a two-sided 5%
  test detects with 80% power (:func:`mdd`).

numpy and scipy only: this module sits below every room (``.importlinter``).
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from scipy import stats

Z_975, Z_80 = 1.959963984540054, 0.8416212335729143  # two-sided 5%, 80% power
LEVEL = 0.95
# 95% CIs: the Monte-Carlo SD of their endpoints across bootstrap seeds is <= 0.005 normalised at this many
# replicates on the committed results (measured: docs/leaderboard.md, "How scores are computed"; endpoint_sd)
BOOTSTRAP_REPS = 10000
BOOTSTRAP_SEED = 20261205
BATCH_CELLS = 2_000_000  # replicates x banks x families drawn at once (16 MB a matrix): big tracks go in batches


# --- measures ------------------------------------------------------------------------------------------------------
def _scalar(out: Any) -> Any:
    return float(out) if np.ndim(out) == 0 else out


def iqm(m: np.ndarray) -> Any:
    """Interquartile mean of the last two axes (leading axes are batches: bootstrap replicates, simulations)."""
    return _scalar(stats.trim_mean(m.reshape(*m.shape[:-2], -1), 0.25, axis=-1))


def mean(m: np.ndarray) -> Any:
    return _scalar(m.mean(axis=(-2, -1)))


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
    return _scalar((u / (n_x * n_y)).mean(axis=-1))


def mdd(se: float) -> float:
    """Minimum detectable difference at two-sided alpha 0.05 and 80% power for an estimate with standard error se."""
    return (Z_975 + Z_80) * se


# --- a row's cells -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Strata:
    """One row's scores as the bootstrap resamples them: per family, a (banks x TEST variations) array of the
    mean score of the episodes a bank played on that variation (``values``) and how many it played (``weights``,
    0 where none: ``values`` is then ignored). Banks are the rows of every family's arrays, in the same order."""

    values: tuple[np.ndarray, ...]
    weights: tuple[np.ndarray, ...]

    def __post_init__(self) -> None:
        if not self.values or len(self.values) != len(self.weights):
            raise ValueError(f"`Strata`: expected one values and one weights array per family, got "
                             f"{len(self.values)} and {len(self.weights)}")
        banks = {v.shape[0] for v in self.values}
        if len(banks) != 1 or any(v.shape != w.shape for v, w in zip(self.values, self.weights)):
            raise ValueError(f"`Strata`: every family needs the same banks and weights shaped like values, got "
                             f"{[v.shape for v in self.values]} and {[w.shape for w in self.weights]}")

    @classmethod
    def from_matrix(cls, m: np.ndarray) -> Strata:
        """A (banks x families) matrix of region values: one cell a region (the bootstrap resamples banks alone)."""
        m = np.asarray(m, dtype=float)
        return cls(tuple(m[:, [j]] for j in range(m.shape[1])),
                   tuple((~np.isnan(m[:, [j]])).astype(float) for j in range(m.shape[1])))

    @property
    def layout(self) -> tuple[tuple[int, int], ...]:
        """(banks, variations) per family: rows with the same layout are resampled on the same draws."""
        return tuple(v.shape for v in self.values)

    @property
    def banks(self) -> int:
        return self.values[0].shape[0]

    def matrix(self) -> np.ndarray:
        """(banks x families) region means: every episode a bank played in the family, equally weighted."""
        cols = []
        for v, w in zip(self.values, self.weights):
            total = w.sum(axis=1)
            cols.append(np.where(total > 0, np.nansum(np.where(w > 0, v * w, 0.0), axis=1) / np.maximum(total, 1e-300),
                                 np.nan))
        return np.stack(cols, axis=1)

    def minus(self, other: Strata) -> Strata:
        """Cell-wise difference of two rows that played the same episodes (the paired unit of a study)."""
        _same_layout([self, other])
        return Strata(tuple(a - b for a, b in zip(self.values, other.values)), self.weights)


def as_strata(row: Strata | np.ndarray) -> Strata:
    return row if isinstance(row, Strata) else Strata.from_matrix(row)


def _same_layout(rows: Sequence[Strata]) -> None:
    if len({r.layout for r in rows}) != 1:
        raise ValueError(f"paired rows must hold the same regions: layouts {[r.layout for r in rows]}")


# --- the bootstrap -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Draw:
    """One batch of resampling draws: bank picks (n, banks, families) and per family the variation counts (n,
    variations), None for a family of one cell a region."""

    banks: np.ndarray
    variations: tuple[np.ndarray | None, ...]


def draws(layout: Sequence[tuple[int, int]], reps: int = BOOTSTRAP_REPS, seed: int = BOOTSTRAP_SEED,
          banks: int | None = None) -> Iterator[Draw]:
    """The replicates' draws for one layout, in batches of :data:`BATCH_CELLS` cells: banks with replacement within
    every family (``banks`` of them: default as many as observed), then, independently, every family's variations
    with replacement. They depend on ``seed`` and ``layout`` only, so every row of a track gets the same ones."""
    n_banks, n_cols = layout[0][0], len(layout)
    batch = max(1, BATCH_CELLS // ((banks or n_banks) * n_cols))
    if reps <= batch:  # one batch: kept, since a board draws the same ones for every row and statistic
        yield _one_batch(tuple(map(tuple, layout)), reps, seed, banks)
        return
    rng = np.random.default_rng(seed)
    for start in range(0, reps, batch):
        yield _draw(rng, layout, min(batch, reps - start), banks)


def _draw(rng: np.random.Generator, layout: Sequence[tuple[int, int]], n: int, banks: int | None) -> Draw:
    n_banks, n_cols = layout[0][0], len(layout)
    picks = rng.integers(n_banks, size=(n, banks or n_banks, n_cols))
    counts = tuple(None if v == 1 else rng.multinomial(v, np.full(v, 1 / v), size=n).astype(float) for _, v in layout)
    return Draw(picks, counts)


@lru_cache(maxsize=4)
def _one_batch(layout: tuple[tuple[int, int], ...], reps: int, seed: int, banks: int | None) -> Draw:
    return _draw(np.random.default_rng(seed), layout, reps, banks)


def resampled(row: Strata, draw: Draw) -> np.ndarray:
    """(n, banks, families): the row's region values on a batch of draws. A bank that played none of the drawn
    variations keeps its own mean (rare: only where banks play a subset of a family's variations)."""
    own = row.matrix()
    cols = []
    for j, (v, w) in enumerate(zip(row.values, row.weights)):
        counts = draw.variations[j]
        if counts is None:
            region = np.broadcast_to(own[:, j], (len(draw.banks), own.shape[0]))
        else:
            vw = np.where(w > 0, v * w, 0.0)
            num, den = counts @ vw.T, counts @ w.T  # (n, banks)
            region = np.where(den > 0, num / np.where(den > 0, den, 1.0), own[:, j])
        cols.append(np.take_along_axis(region, draw.banks[:, :, j], axis=1))
    return np.stack(cols, axis=-1)


def bootstrap_distribution(statistic: Callable[..., Any], *rows: Strata | np.ndarray, reps: int = BOOTSTRAP_REPS,
                           seed: int = BOOTSTRAP_SEED, banks: int | None = None) -> np.ndarray:
    """``reps`` values of ``statistic(*matrices)``, each on one replicate of the rows (the same draws for all:
    paired). ``statistic`` takes a leading batch axis."""
    strata = [as_strata(r) for r in rows]
    _same_layout(strata)
    out = [np.asarray(statistic(*(resampled(s, d) for s in strata)), dtype=float).reshape(len(d.banks))
           for d in draws(strata[0].layout, reps, seed, banks)]
    return np.concatenate(out)


def bootstrap_rows(rows: Sequence[Strata | np.ndarray], statistics: Mapping[str, Callable[[np.ndarray], Any]], *,
                   against: Strata | None = None,
                   paired: Mapping[str, Callable[[np.ndarray, np.ndarray], Any]] | None = None,
                   reps: int = BOOTSTRAP_REPS, seed: int = BOOTSTRAP_SEED) -> dict[str, np.ndarray]:
    """Name -> (reps, rows): each one-row statistic of every row on the same replicates and, with ``against``,
    each ``paired`` statistic of every row and that row (P(improvement) over a baseline), in one pass: a row is
    resampled once per batch. A difference of two rows' columns is that pair's paired replicate (the same draws),
    so every pair comes from this one pass."""
    strata = [as_strata(r) for r in rows]
    _same_layout(strata + ([against] if against is not None else []))
    two = dict(paired or {}) if against is not None else {}
    out: dict[str, list[np.ndarray]] = {name: [] for name in [*statistics, *two]}
    for d in draws(strata[0].layout, reps, seed):
        base = resampled(against, d) if against is not None else None
        batch: dict[str, list[np.ndarray]] = {name: [] for name in out}
        for s in strata:
            m = resampled(s, d)
            for name, f in statistics.items():
                batch[name].append(np.asarray(f(m), dtype=float).reshape(len(d.banks)))
            for name, g in two.items():
                batch[name].append(np.asarray(g(m, base), dtype=float).reshape(len(d.banks)))
        for name, cols in batch.items():
            out[name].append(np.stack(cols, axis=1))
    return {name: np.concatenate(parts) for name, parts in out.items()}


def welch_df(*rows: Strata | np.ndarray) -> float:
    """Welch-Satterthwaite degrees of freedom of a stratified mean (of the cell-wise difference of two paired
    rows' region values): fewer than ``families * (banks - 1)`` where families spread unequally."""
    mats = [as_strata(r).matrix() for r in rows]
    cells = mats[0] if len(mats) == 1 else mats[0] - mats[1]
    n_rows, n_cols = cells.shape
    if n_rows < 2:
        return float("inf")
    v = cells.var(axis=0, ddof=1) / n_rows
    if not (v > 0).any():
        return float(n_cols * (n_rows - 1))
    return float(v.sum() ** 2 / ((v ** 2) / (n_rows - 1)).sum())


def standard_error(values: np.ndarray, n_banks: int) -> float:
    """The replicates' SD, corrected by sqrt(n / (n - 1)) for n banks a family (0 below two banks)."""
    if n_banks < 2 or len(values) < 2:
        return 0.0
    return float(np.sqrt(n_banks / (n_banks - 1)) * np.std(values, ddof=1))


def expansion(n_rows: int, n_cols: int, level: float = LEVEL) -> float:
    """How far the ``expanded`` interval stretches the percentile one about the estimate: sqrt(n / (n - 1)) times
    Student's t at ``n_cols * (n_rows - 1)`` df over the normal quantile (after Hesterberg 2015's expanded
    percentile interval, which moves the percentile levels instead; measured against ``t``, docs/leaderboard.md)."""
    if n_rows < 2:
        return 1.0
    q = 0.5 + level / 2
    return float(np.sqrt(n_rows / (n_rows - 1)) * stats.t.ppf(q, n_cols * (n_rows - 1)) / stats.norm.ppf(q))


def interval(values: np.ndarray, estimate: float, n_rows: int, n_cols: int, kind: str = "t",
             df: float | None = None, level: float = LEVEL) -> tuple[float, float]:
    """The CI from a bootstrap distribution: ``percentile`` (its quantiles), ``expanded`` (those quantiles moved
    away from ``estimate`` by :func:`expansion`) or ``t`` (``estimate`` +- Student's t at ``df`` times
    :func:`standard_error`: the small-sample interval the board uses)."""
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
    half = stats.t.ppf(0.5 + level / 2, dof) * standard_error(values, n_rows)
    return float(estimate - half), float(estimate + half)


def stratified_bootstrap(statistic: Callable[..., Any], *rows: Strata | np.ndarray, reps: int = BOOTSTRAP_REPS,
                         seed: int = BOOTSTRAP_SEED, kind: str = "t") -> tuple[float, float]:
    """95% CI of ``statistic(*matrices)`` from the stratified (crossed; paired, where several rows) bootstrap."""
    strata = [as_strata(r) for r in rows]
    values = bootstrap_distribution(statistic, *strata, reps=reps, seed=seed)
    estimate = float(statistic(*(s.matrix() for s in strata)))
    return interval(values, estimate, strata[0].banks, len(strata[0].layout), kind=kind, df=welch_df(*strata[:2]))


def paired_difference(x: Strata | np.ndarray, y: Strata | np.ndarray,
                      statistic: Callable[..., Any] = iqm_difference, reps: int = BOOTSTRAP_REPS,
                      seed: int = BOOTSTRAP_SEED) -> tuple[float, tuple[float, float]]:
    """``statistic(x, y)`` (IQM(x) - IQM(y) by default) and its 95% CI, x and y resampled on the same draws. A row
    against itself is exactly 0 with CI [0, 0]."""
    sx, sy = as_strata(x), as_strata(y)
    _same_layout([sx, sy])
    return float(statistic(sx.matrix(), sy.matrix())), stratified_bootstrap(statistic, sx, sy, reps=reps, seed=seed)


def paired_se(x: Strata | np.ndarray, y: Strata | np.ndarray, statistic: Callable[..., Any] = iqm_difference,
              reps: int = BOOTSTRAP_REPS, seed: int = BOOTSTRAP_SEED, banks: int | None = None) -> float:
    """The standard error of ``statistic(x, y)`` under the paired bootstrap (``banks`` resampled banks a family:
    a bigger track of the same banks); its :func:`mdd` is what the pair can detect."""
    sx, sy = as_strata(x), as_strata(y)
    values = bootstrap_distribution(statistic, sx, sy, reps=reps, seed=seed, banks=banks)
    return standard_error(values, banks or sx.banks)


def draw_mdd(matrix: np.ndarray, banks: int) -> float | None:
    """The MDD of the difference between a row's mean over its (banks x families) ``matrix`` and the same row's
    mean on a fresh draw of ``banks`` other banks of the same families (a verification): unpaired, so its SE is
    ``sqrt(sum_f s_f^2 / F^2 * (1 / banks + 1 / n))`` with ``s_f`` the row's spread over its n banks in family f.
    A fresh draw also redraws TEST variations where a family has more than a pool uses, which this leaves out: a
    lower bound. None without two complete banks."""
    m = np.asarray(matrix, dtype=float)
    if m.ndim != 2 or m.shape[0] < 2 or np.isnan(m).any() or banks < 1:
        return None
    n, f = m.shape
    return mdd(float(np.sqrt(m.var(axis=0, ddof=1).sum() / f ** 2 * (1 / banks + 1 / n))))


# --- every pair of rows: CIs, MDDs and rank intervals ----------------------------------------------------------------
@dataclass(frozen=True)
class Pairwise:
    """A one-row statistic of every row and, for every ordered pair (i, j), the paired difference ``estimate[i] -
    estimate[j]``, its 95% CI and its SE, all on one set of draws."""

    estimates: np.ndarray  # (rows,)
    lower: np.ndarray  # (rows, rows)
    upper: np.ndarray
    se: np.ndarray

    def difference(self, i: int, j: int) -> float:
        return float(self.estimates[i] - self.estimates[j])

    def ci(self, i: int, j: int) -> tuple[float, float]:
        return float(self.lower[i, j]), float(self.upper[i, j])

    def mdd(self, i: int, j: int) -> float:
        return mdd(float(self.se[i, j]))


def pairwise(rows: Sequence[Strata | np.ndarray], statistic: Callable[[np.ndarray], Any] = iqm,
             reps: int = BOOTSTRAP_REPS, seed: int = BOOTSTRAP_SEED, level: float = LEVEL,
             values: np.ndarray | None = None) -> Pairwise:
    """Every pair's paired difference of ``statistic`` with its t interval (Welch df of the pair's cell-wise
    difference) and SE, from one pass of :func:`bootstrap_rows` (or its ``values``, (reps, rows), where a caller
    made them already): the same CIs :func:`paired_difference` gives."""
    strata = [as_strata(r) for r in rows]
    k = len(strata)
    est = np.array([float(statistic(s.matrix())) for s in strata])
    lower, upper, se = np.zeros((k, k)), np.zeros((k, k)), np.zeros((k, k))
    if k:
        if values is None:
            values = bootstrap_rows(strata, {"s": statistic}, reps=reps, seed=seed)["s"]
        n_rows, n_cols = strata[0].banks, len(strata[0].layout)
        for i in range(k):
            for j in range(i + 1, k):
                d = values[:, i] - values[:, j]
                lo, hi = interval(d, est[i] - est[j], n_rows, n_cols, df=welch_df(strata[i], strata[j]), level=level)
                lower[i, j], upper[i, j], lower[j, i], upper[j, i] = lo, hi, 0.0 - hi, 0.0 - lo  # no -0.0
                se[i, j] = se[j, i] = standard_error(d, n_rows)
    return Pairwise(est, lower, upper, se)


def rank_intervals(p: Pairwise) -> list[tuple[int, int]]:
    """Per row, the ranks the paired CIs allow: best = 1 + the rows whose CI against it lies above 0 (significantly
    better), worst = the number of rows less those whose CI lies below 0 (significantly worse). A row no CI separates
    from any other spans every rank; rows far apart on every comparison get one rank each."""
    k = len(p.estimates)
    out = []
    for i in range(k):
        better = sum(1 for j in range(k) if j != i and p.lower[j, i] > 0)
        worse = sum(1 for j in range(k) if j != i and p.upper[j, i] < 0)
        out.append((1 + better, k - worse))
    return out


# --- checks of the bootstrap itself ----------------------------------------------------------------------------------
def endpoint_sd(statistic: Callable[..., Any], *rows: Strata | np.ndarray, reps: int, seeds: Sequence[int]) -> float:
    """Monte-Carlo SD of the CI's endpoints across bootstrap seeds (the larger of the two): how much of a CI is
    the bootstrap's own noise at ``reps`` replicates. BOOTSTRAP_REPS is chosen on it."""
    ends = np.array([stratified_bootstrap(statistic, *rows, reps=reps, seed=s) for s in seeds])
    return float(ends.std(axis=0, ddof=1).max())


def coverage(statistic: Callable[..., Any], *matrices: np.ndarray, sims: int = 400, reps: int = 1000,
             n_rows: int | None = None, population: str = "normal", kind: str = "t", seed: int = 0) -> float:
    """Share of simulated tracks whose 95% CI of ``statistic`` covers the truth, on the spread of ``matrices``
    ((banks x families) region values).

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


# --- resampling groups (regions within strata) for a study's own statistic ------------------------------------------
def stratified_indices(strata: Sequence[Any], reps: int, seed: int) -> Iterator[np.ndarray]:
    """``reps`` index arrays, each the items resampled with replacement within every stratum (in order of first
    appearance): the bootstrap of a statistic that is not a function of a (banks x families) matrix, such as a
    cross-fitted selection redone on every resample (``studies.learnability.bootstrap_gap``)."""
    rng = np.random.default_rng(seed)
    groups = [np.flatnonzero(np.asarray(strata) == s) for s in dict.fromkeys(strata)]
    for _ in range(reps):
        yield np.concatenate([g[rng.integers(len(g), size=len(g))] for g in groups])
