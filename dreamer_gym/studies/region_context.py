"""The bank-context columns of a study's regions (issue 40): what the env shows a contract-2 policy of the bank
around its region, summed up per region (:func:`~dreamer_gym.envs.bank_context.region_context_features`), so the
learnability tables can ask whether the context predicts a region's best rule.

A study log written before these columns existed (or while a study was running) lacks them; :func:`backfill`
computes them from a reset of each region, which runs no evaluation, and never writes to the log.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dreamer_gym.consolidators.rule_selector import FEATURES
from dreamer_gym.envs.bank_context import REGION_CONTEXT_FEATURES, region_context_features


def context_columns(info: Mapping[str, Any]) -> dict[str, Any]:
    """The region's context columns from a reset's ``info``, and ``tasks``, the tasks its own entries were written
    for (the topics a leave-one-topic-out referee holds out, :mod:`dreamer_gym.studies.topic_referee`); none on
    an id whose tool contract shows no context."""
    if "bank_context" not in info:
        return {}
    ctx = info["bank_context"]
    return {**region_context_features(ctx), "tasks": sorted(t["task"] for t in ctx)}


def has_context(regions: Sequence[Mapping[str, Any]]) -> bool:
    """Whether every region record carries every context column."""
    return bool(regions) and all(all(f in r for f in (*REGION_CONTEXT_FEATURES, "tasks")) for r in regions)


def study_features(regions: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """The feature columns every region of a study has: the region's own (:data:`FEATURES`), plus the context
    columns where each region carries them."""
    return FEATURES + REGION_CONTEXT_FEATURES if has_context(regions) else FEATURES


def backfill(env: Any, features: dict[tuple[str, int], dict[str, Any]]) -> int:
    """Add the context columns, in place, to the region records of ``features`` that lack them, from one reset of
    each region on ``env`` (the study's env). Returns how many were filled; 0 on an id without bank context."""
    filled = 0
    for (family, bank), record in features.items():
        if has_context([record]):
            continue
        columns = context_columns(env.reset(seed=0, options={"region": family, "bank": bank})[1])
        if not columns:
            return filled
        record.update(columns)
        filled += 1
    return filled
