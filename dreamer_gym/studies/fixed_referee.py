"""An honest referee among fixed rules: the best fixed rule and the per-family switch, each chosen on the other
folds of a ``(regions, rules, folds)`` score table and scored on the fold left out.

Why other folds: the rule with the highest mean on the scored episodes is a maximum over noisy means, biased
upward (with rules equal in truth it still beats each of them), so a contender read against it looks worse than it
is, and a rule that won the scored episodes by luck is crowned. Here fold k's rule is chosen on the mean of every
fold but k and scored on fold k; a rule whose lead lives on one fold only is never scored on that fold.

Every selection gives its held-out value per (region, fold), so a contender with its own per-(region, fold)
values (a track row's fold rewards) is compared **paired**, on the same regions and episodes; its 95% CI
resamples regions within strata (families; banks on a window pool) and redoes the selection on every resample
(:func:`dreamer_gym.stats.stratified_indices`), as the learnability study's gap does, so the reference's own
selection noise is in the interval.

* :func:`best_fixed_other_fold`: one rule for every region (the best constant);
* :func:`family_switch`: per family (any grouping of regions), the rule best on the other folds for that family:
  a stump on the family, the cheapest rule that reads anything, and the reference row a learned policy that
  only tells families apart would tie.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dreamer_gym.stats import interval, stratified_indices

TIE = 1e-9  # rewards closer than this are equal (a rule "agrees" with the best where it scores within TIE of it)

# Per-(region, fold) held-out values of a row: an array (regions, folds), or a selection that computes them for
# any resample of the regions (an index array, repeats allowed), redoing its choice on those regions only
Row = np.ndarray | Callable[[np.ndarray], np.ndarray]


def argmax_first(values: np.ndarray) -> np.ndarray:
    """Index of the largest value along the last axis, the first listed rule among ties within :data:`TIE`."""
    return np.argmax(values >= values.max(axis=-1, keepdims=True) - TIE, axis=-1)


def other_folds(scores: np.ndarray) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """``(k, select, held)`` per fold k: the mean of every other fold (regions, rules), which chooses, and fold k
    (regions, rules), which scores."""
    for k in range(scores.shape[2]):
        yield k, np.delete(scores, k, axis=2).mean(axis=2), scores[:, :, k]


def best_fixed_other_fold(scores: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """The best constant chosen on the other folds: its held-out values ``(regions, folds)`` and the rule index
    chosen per fold."""
    values, chosen = np.zeros(scores.shape[::2]), []
    for k, select, held in other_folds(scores):
        c = int(argmax_first(select.mean(axis=0)))
        values[:, k] = held[:, c]
        chosen.append(c)
    return values, chosen


def family_switch(scores: np.ndarray, groups: Sequence[str]) -> tuple[np.ndarray, list[dict[str, int]]]:
    """Per group (family), the rule with the highest mean over the group's regions on the other folds: held-out
    values ``(regions, folds)`` and, per fold, group -> rule index."""
    groups = np.asarray(groups)
    values, chosen = np.zeros(scores.shape[::2]), []
    for k, select, held in other_folds(scores):
        picks = {}
        for g in dict.fromkeys(groups.tolist()):
            rows = groups == g
            picks[g] = int(argmax_first(select[rows].mean(axis=0)))
            values[rows, k] = held[rows, picks[g]]
        chosen.append(picks)
    return values, chosen


def constant_selection(scores: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """:func:`best_fixed_other_fold` as a :data:`Row`: redone on every resample of the regions."""
    return lambda idx: best_fixed_other_fold(scores[idx])[0]


def switch_selection(scores: np.ndarray, groups: Sequence[str]) -> Callable[[np.ndarray], np.ndarray]:
    """:func:`family_switch` as a :data:`Row`: redone on every resample of the regions."""
    g = np.asarray(groups)
    return lambda idx: family_switch(scores[idx], g[idx])[0]


def _values(row: Row, idx: np.ndarray) -> np.ndarray:
    return row(idx) if callable(row) else np.asarray(row, dtype=float)[idx]


@dataclass
class PairedReferee:
    """Contenders against one reference row, paired on the same regions and folds: ``against(x)`` gives the mean
    of x - reference over (region, fold) and its 95% percentile CI from ``resamples`` stratified resamples of the
    regions (the same resamples for every contender; the reference's selection redone on each)."""

    reference: Row
    strata: Sequence[str]
    resamples: int
    seed: int = 0
    _draws: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list, repr=False)

    def draws(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """(region indices, the reference's values on them) per resample, computed once."""
        if not self._draws:
            self._draws = [(idx, _values(self.reference, idx))
                           for idx in stratified_indices(self.strata, self.resamples, self.seed)]
        return self._draws

    def against(self, contender: Row) -> dict[str, Any]:
        full = np.arange(len(self.strata))
        d = float((_values(contender, full) - _values(self.reference, full)).mean())
        boots = np.array([(_values(contender, idx) - ref).mean() for idx, ref in self.draws()])
        lo, hi = interval(boots, float("nan"), len(boots), 1, kind="percentile")
        return {"difference": d, "ci95": [lo, hi], "excludes_0": bool(lo > 0 or hi < 0)}


def referee(scores: np.ndarray, rules: Sequence[str], groups: Sequence[str] | None, strata: Sequence[str],
            resamples: int, seed: int = 0) -> dict[str, Any]:
    """The fixed reference rows of a score table, chosen on other folds.

    Returns ``best_fixed`` (``per_fold``: the rule each fold chose; ``value``: its held-out mean; ``in_sample``:
    the rule and mean of the biased reading, best on every fold) and, with ``groups``, ``family_switch``
    (``per_fold``: group -> rule; ``value``; ``in_sample``: its value chosen and scored on every fold;
    ``vs_best_fixed``: paired difference and CI against the best fixed rule, both selections redone on every
    resample). ``None`` for the switch without groups (a window pool's regions have no one family)."""
    const, const_chosen = best_fixed_other_fold(scores)
    mean = scores.mean(axis=2)
    best = int(argmax_first(mean.mean(axis=0)))
    out: dict[str, Any] = {
        "best_fixed": {"per_fold": [rules[c] for c in const_chosen], "value": float(const.mean()),
                       "in_sample": {"rule": rules[best], "value": float(mean[:, best].mean())}},
        "family_switch": None}
    if groups is not None:
        switch, switch_chosen = family_switch(scores, groups)
        g = np.asarray(groups)
        in_sample = sum(mean[g == name].mean(axis=0).max() * np.sum(g == name) for name in dict.fromkeys(groups))
        ref = PairedReferee(constant_selection(scores), strata, resamples, seed)
        out["family_switch"] = {
            "per_fold": [{g: rules[c] for g, c in picks.items()} for picks in switch_chosen],
            "value": float(switch.mean()), "in_sample": float(in_sample / len(groups)),
            "vs_best_fixed": ref.against(switch_selection(scores, groups))}
    return out


def describe_switch(picks: Mapping[str, str], default: str | None = None) -> str:
    """One fold's switch (group -> rule) in words: each group that does not play ``default`` (the best fixed
    rule; by default the rule most groups play) with its rule, then ``default`` elsewhere."""
    default = default or max(set(picks.values()), key=list(picks.values()).count)
    special = [f"{rule} on {g}" for g, rule in picks.items() if rule != default]
    return ", ".join([*special, f"{default} {'elsewhere' if special else 'everywhere'}"])
