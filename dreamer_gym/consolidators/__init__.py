"""Consolidators: policies that act on `ConsolidationEnv` through its tool calls.

One protocol (:class:`Consolidator`: ``actions(env, obs, info)`` yields JSON tool calls), a runner
(:func:`run_episode`) and a registry (:func:`make_consolidator`, :func:`consolidator_names`; add your own
with :func:`register_consolidator` or an entry point in the ``dreamer_gym.consolidators`` group) and a
conformance check (:func:`dreamer_gym.testing.check_consolidator`). Built in:
the fixed baselines (``keep-all``, ``empty``, ``dedupe``, ``blind``), ``random``, the ``oracle`` and its
decoys (``prose-oracle``, ``wrong-procedures``) and the zero-shot LLM policy ``prompted`` (imported only
when built: it needs the ``llm`` extra).
"""
from dreamer_gym._moved import forward_names
from dreamer_gym.consolidators.base import Consolidator, call, run_episode
from dreamer_gym.consolidators.fixed import (
    BlindConsolidator,
    DedupeConsolidator,
    EmptyConsolidator,
    KeepAllConsolidator,
)
from dreamer_gym.consolidators.oracle import (
    OracleConsolidator,
    ProseOracleDecoy,
    ReferenceEvidence,
    WrongProcedureDecoy,
)
from dreamer_gym.consolidators.random_policy import RandomConsolidator
from dreamer_gym.consolidators.registry import (
    ENTRY_POINT_GROUP,
    consolidator_names,
    get_consolidator_factory,
    make_consolidator,
    register_consolidator,
)

# moved up to dreamer_gym.testing (issue 28): served from there, with a warning, until 0.3
__getattr__ = forward_names(__name__, "dreamer_gym.testing",
                            ("ConsolidatorCheckError", "ConsolidatorReport", "check_consolidator"))

__all__ = [
    "ENTRY_POINT_GROUP",
    "BlindConsolidator",
    "Consolidator",
    "DedupeConsolidator",
    "EmptyConsolidator",
    "KeepAllConsolidator",
    "OracleConsolidator",
    "ReferenceEvidence",
    "ProseOracleDecoy",
    "RandomConsolidator",
    "WrongProcedureDecoy",
    "call",
    "consolidator_names",
    "get_consolidator_factory",
    "make_consolidator",
    "register_consolidator",
    "run_episode",
]
