"""The typed memory model: entries, banks, regions, retrieval. Imports nothing else of ours."""
from dreamer_gym.memory.bank import MemoryBank
from dreamer_gym.memory.entry import KINDS, MemoryEntry, Provenance
from dreamer_gym.memory.regions import Region, select_by_cluster, select_by_family
from dreamer_gym.memory.retrieval import BM25Retriever
from dreamer_gym.memory.tokens import count_tokens
from dreamer_gym.memory.trajectory import Step, Trajectory

__all__ = [
    "KINDS",
    "BM25Retriever",
    "MemoryBank",
    "MemoryEntry",
    "Provenance",
    "Region",
    "Step",
    "Trajectory",
    "count_tokens",
    "select_by_cluster",
    "select_by_family",
]
