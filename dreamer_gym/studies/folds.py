"""Disjoint folds of a region's evaluation episodes, by variation, and a fold's reward from its episodes.

Two studies split episodes this way: the track study (:mod:`dreamer_gym.studies.track_learnability`: a track's
TEST episodes) and the env study with ``fold_by="variation"`` (:mod:`dreamer_gym.studies.learnability`: the DEV
episodes its draws played). Splitting by variation, not by episode, keeps a variation played twice (two draws of
a windows id replay mostly the same episodes) inside one fold, so a choice made on one fold is scored on
episodes that share nothing with it.

A fold's reward is the commit reward's formula (:func:`dreamer_gym.contract.reward.reward_from_results`) on the
fold's episodes: in-family deltas, other-family losses only, over the fold's episode count, plus the size term.
On all of a record's episodes it must give the record's reward, which :func:`fold_rewards` checks: a record of
another formula is refused rather than split wrongly.
"""
from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np


def fold_map(episodes: Sequence[tuple[str, int]], folds: int, seed: int,
             carry: bool = False) -> dict[tuple[str, int], int]:
    """(family, variation) -> fold: each family's variations in a seeded order, dealt round-robin, so every fold
    holds about the same share of every family's variations (stratified) and no variation is in two folds.

    Each family's deal starts at fold 0 (the track study's split); with ``carry`` it starts where the previous
    family's ended, so a region whose episodes hold many families of one variation each (its other-family
    episodes) does not put all of them in fold 0."""
    by_family: dict[str, set[int]] = {}
    for family, variation in episodes:
        by_family.setdefault(family, set()).add(int(variation))
    out, dealt = {}, 0
    for family, variations in sorted(by_family.items()):
        order = np.random.default_rng([seed, zlib.crc32(family.encode())]).permutation(sorted(variations))
        start = dealt if carry else 0
        out.update({(family, int(v)): (start + i) % folds for i, v in enumerate(order)})
        dealt += len(order)
    return out


def episode_reward(episodes: Sequence[Mapping[str, Any]], size: float) -> float:
    """The commit reward's formula on ``episodes`` (dicts with ``before``, ``after``, ``in_family``) plus the
    size term; NaN for no episode (a fold that holds none of a region's episodes)."""
    if not episodes:
        return float("nan")
    deltas = [(e["after"] - e["before"], e["in_family"]) for e in episodes]
    return sum(d if own else min(0.0, d) for d, own in deltas) / (100.0 * len(episodes)) + size


def fold_rewards(record: Mapping[str, Any], folds: Mapping[tuple[str, int], int], n_folds: int,
                 region_terms: bool = False) -> np.ndarray:
    """The region's reward on each fold's episodes (:func:`episode_reward`); checks that all episodes give the
    record's reward. With ``region_terms`` (a contender's row, which may carry a term the formula does not know,
    such as an archived protocol's penalty), a difference is instead a region-level term added to every fold,
    like size."""
    size = float(record["reward_components"]["size"])
    eps = record["episodes"]
    whole = episode_reward(eps, size)
    offset = float(record["reward"]) - whole if region_terms else 0.0
    if abs(whole + offset - float(record["reward"])) > 1e-9:
        where = f"{record.get('bank_index', record.get('bank'))}/{record['family']}"
        raise ValueError(f"region {where}: its episodes give reward {whole:+.6f}, the record says "
                         f"{record['reward']:+.6f} (a record of another reward formula?)")
    return np.array([episode_reward([e for e in eps if folds[(e["family"], int(e["variation"]))] == k], size)
                     + offset for k in range(n_folds)])
