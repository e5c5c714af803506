"""Ranks that mean something: neighbouring rows the board cannot tell apart share a rank, and rows that committed
the same banks are one row.

**Ties.** Ranked rows are ordered by the measure the table ranks by (IQM of the normalised matrix; the track
score where the track has no ``empty`` and ``oracle`` rows). Each row is compared with the row above it by a
paired difference of that measure with a 95% CI (banks resampled within families, the same draws for both rows:
``aggregate.paired_difference``). A row whose CI includes 0 shares the rank of the row above: ranks are numbered
by position (1, 2=, 2=, 4, ...), and ``=`` marks every row of a shared rank. Ties chain: a row tied to the row
above it shares that row's rank even where it separates from rows further up, because the board only claims
what each neighbouring comparison shows.

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

from dreamer_gym.leaderboard.aggregate import paired_difference


@dataclass(frozen=True)
class Comparison:
    """A ranked row against the ranked row above it: the paired difference of the ranking measure and its CI."""

    name: str
    above: str
    difference: float | None  # None: the two rows do not hold the same complete regions
    ci: tuple[float, float] | None
    shares_rank: bool


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


def compare_neighbours(names: Sequence[str], matrices: Mapping[str, np.ndarray | None],
                       statistic: Callable[..., Any]) -> list[Comparison]:
    """Each ranked row (after the first, in rank order) against the row above it."""
    out = []
    for above, name in zip(names, names[1:]):
        x, y = matrices.get(name), matrices.get(above)
        if x is None or y is None or x.shape != y.shape or x.size == 0 or np.isnan(x).any() or np.isnan(y).any():
            out.append(Comparison(name, above, None, None, False))
            continue
        diff, ci = paired_difference(x, y, statistic)
        out.append(Comparison(name, above, diff, ci, bool(ci[0] <= 0.0 <= ci[1])))
    return out


def rank_labels(comparisons: Sequence[Comparison], n: int) -> list[str]:
    """Competition ranks of ``n`` ranked rows (1, 2=, 2=, 4): a row that shares the rank of the row above takes
    its number, and every row of a shared rank is marked ``=``."""
    if n == 0:
        return []
    ranks = [1]
    for i, c in enumerate(comparisons[: n - 1], start=1):
        ranks.append(ranks[-1] if c.shares_rank else i + 1)
    shared = {r for r in ranks if ranks.count(r) > 1}
    return [f"{r}=" if r in shared else str(r) for r in ranks]
