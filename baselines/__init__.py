"""Baseline consolidators: policies that act on `ConsolidationEnv` through its tool calls."""
from baselines.base import Consolidator, run_episode
from baselines.fixed import BlindConsolidator, DedupeConsolidator, EmptyConsolidator, KeepAllConsolidator
from baselines.oracle import OracleConsolidator, ProseOracleDecoy, WrongProcedureDecoy

REGISTRY = {
    "keep-all": KeepAllConsolidator,
    "empty": EmptyConsolidator,
    "dedupe": DedupeConsolidator,
    "blind": BlindConsolidator,
    "oracle": OracleConsolidator,
    "prose-oracle": ProseOracleDecoy,
    "wrong-procedures": WrongProcedureDecoy,
}

__all__ = [
    "REGISTRY",
    "BlindConsolidator",
    "Consolidator",
    "DedupeConsolidator",
    "EmptyConsolidator",
    "KeepAllConsolidator",
    "OracleConsolidator",
    "ProseOracleDecoy",
    "WrongProcedureDecoy",
    "run_episode",
]
