"""The typed memory model: entries, banks, regions, retrieval. Imports nothing else of ours."""
from dreamer_gym.memory.bank import MemoryBank
from dreamer_gym.memory.entry import KINDS, MemoryEntry, Provenance
from dreamer_gym.memory.regions import (
    REGION_KINDS,
    Region,
    RegionScheme,
    bank_at,
    parse_window,
    region_task_mix,
    select_by_cluster,
    select_by_family,
    select_by_window,
    select_region,
)
from dreamer_gym.memory.retrieval import BM25Retriever
from dreamer_gym.memory.tokens import count_tokens
from dreamer_gym.memory.trajectory import Step, Trajectory

__all__ = [
    "KINDS",
    "REGION_KINDS",
    "BM25Retriever",
    "MemoryBank",
    "MemoryEntry",
    "Provenance",
    "Region",
    "RegionScheme",
    "Step",
    "Trajectory",
    "bank_at",
    "count_tokens",
    "parse_window",
    "region_task_mix",
    "select_by_cluster",
    "select_by_family",
    "select_by_window",
    "select_region",
]
