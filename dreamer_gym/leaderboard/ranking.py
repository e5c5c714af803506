"""Ranks that mean something: each ranked row shows the ranks the paired CIs allow it, and rows that committed the
same banks are one row.

**Rank intervals.** Ranked rows are ordered by the measure the table ranks by (IQM of the normalised cells; the
track score where the track has no ``empty`` and ``oracle`` rows). Every pair of ranked rows is compared by the
paired difference of that measure with its 95% CI (banks and TEST variations resampled within families, the same
draws for every row: :func:`dreamer_gym.stats.pairwise`). A row's best rank is 1 + the rows significantly above it
(their CI against it lies above 0), its worst rank the number of ranked rows less those significantly below it
(:func:`dreamer_gym.stats.rank_intervals`); the label is ``3`` where the two meet and ``2-5`` where they do not.
Unlike a chain of shared ranks (``1=``, each row tied to its neighbour), an interval never joins two rows the
board separates: a row's interval follows from its own comparisons with every other row. The CIs are not
corrected for the many pairs: an interval is a per-row reading, not a joint claim about the whole order.

**Neighbours.** The table "Neighbouring rows, paired" shows each ranked row against the row above it: the
difference, its CI and the pair's MDD (the smallest true difference the track detects at 80% power for this pair,
``(z_0.975 + z_0.8) * SE``), so a reader sees whether an unseparated pair is close or just noisy.

**Identical banks.** Results files carry no bank digest, so two rows committed the same banks when every region
holds the same bank size (entries and tokens), the same reward and the same score on every episode
(:func:`bank_fingerprint`). They are one row, named by its first name (a built-in row first, then by name), with
every submitter listed.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dreamer_gym.leaderboard.aggregate import complete
from dreamer_gym.stats import Pairwise, Strata, pairwise, rank_intervals


@dataclass(frozen=True)
class Comparison:
    """A ranked row against the ranked row above it: the paired difference of the ranking measure, its CI and the
    pair's MDD (None where the two rows do not hold the same complete regions)."""

    name: str
    above: str
    difference: float | None
    ci: tuple[float, float] | None
    mdd: float | None = None

    @property
    def separated(self) -> bool | None:
        """Whether the CI excludes 0 (None: not compared)."""
        return None if self.ci is None else not self.ci[0] <= 0.0 <= self.ci[1]


def bank_fingerprint(result: Mapping[str, Any]) -> str:
    """A digest of what a results file shows of its banks: per region, the bank's size, the reward and every
    episode's score (a record's ``bank_sha256``, where validate writes one, stands in for all of it)."""
    regions = []
    for r in result["records"]:
        if "bank_sha256" in r:
            regions.append([r["bank_index"], r["family"], r["bank_sha256"]])
            continue
        episodes = sorted((e.get("family", ""), e.get("variation", -1), bool(e["in_family"]), e["before"], e["after"])
                          for e in r["episodes"])
        regions.append([r["bank_index"], r["family"], r["size_after"], r["reward"], episodes])
    return hashlib.sha256(json.dumps(sorted(regions, key=repr), sort_keys=True).encode()).hexdigest()


def identical_groups(results: Sequence[Mapping[str, Any]],
                     key: Callable[[Mapping[str, Any]], Any] = lambda r: None) -> list[list[Mapping[str, Any]]]:
    """The results grouped by bank fingerprint (and ``key``: rows listed apart never merge with ranked ones), in
    order of first appearance; inside a group a built-in row comes first, then the rest by name."""
    groups: dict[tuple[str, Any], list[Mapping[str, Any]]] = {}
    for r in results:
        groups.setdefault((bank_fingerprint(r), key(r)), []).append(r)
    return [sorted(g, key=lambda r: (not r.get("builtin"), r["consolidator"]["name"])) for g in groups.values()]


@dataclass(frozen=True)
class Ranking:
    """The ranked rows' rank intervals and neighbouring comparisons, from one :class:`~dreamer_gym.stats.Pairwise`."""

    intervals: list[tuple[int, int]]
    comparisons: list[Comparison]
    pairs: Pairwise | None  # over the comparable rows (``index``), None when fewer than two
    index: dict[str, int]  # row name -> its position in ``pairs``

    @property
    def labels(self) -> list[str]:
        return [rank_label(i) for i in self.intervals]


def rank_label(interval: tuple[int, int]) -> str:
    best, worst = interval
    return str(best) if best == worst else f"{best}-{worst}"


def rank_rows(names: Sequence[str], rows: Mapping[str, Strata | None], statistic: Callable[[np.ndarray], Any],
              replicates: Mapping[str, np.ndarray] | None = None) -> Ranking:
    """Rank intervals of the ranked rows ``names`` (in rank order) from the paired CIs of every pair, and each row
    against the row above (``replicates``: each row's bootstrap values of ``statistic``, where the caller drew them
    already on the same draws). Rows without complete cells, or with other regions than the first complete row,
    cannot be compared: their interval spans every rank."""
    comparable = [n for n in names if complete(rows.get(n))]
    if comparable:
        layout = rows[comparable[0]].layout  # type: ignore[union-attr]
        comparable = [n for n in comparable if rows[n].layout == layout]  # type: ignore[union-attr]
    index = {n: i for i, n in enumerate(comparable)}
    values = (np.stack([replicates[n] for n in comparable], axis=1)
              if replicates is not None and comparable and all(n in replicates for n in comparable) else None)
    pairs = pairwise([rows[n] for n in comparable], statistic, values=values) if len(comparable) > 1 else None
    within = rank_intervals(pairs) if pairs is not None else [(1, 1)] * len(comparable)
    # a row the pairs cannot compare could sit anywhere; the comparable rows' intervals shift by the rows above them
    # that the pairs cannot place, and widen by those below
    k = len(names)
    intervals = []
    for n in names:
        if n not in index:
            intervals.append((1, k))
            continue
        best, worst = within[index[n]]
        intervals.append((best, worst + k - len(comparable)))
    comparisons = []
    for above, name in zip(names, names[1:]):
        if pairs is None or name not in index or above not in index:
            comparisons.append(Comparison(name, above, None, None))
            continue
        i, j = index[name], index[above]
        comparisons.append(Comparison(name, above, pairs.difference(i, j), pairs.ci(i, j), pairs.mdd(i, j)))
    return Ranking(intervals, comparisons, pairs, index)
