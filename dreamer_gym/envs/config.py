"""The env's configuration, :class:`ConsolidationConfig` (a public path, kept).

It is defined in :mod:`dreamer_gym.contract.config`, on the reward definition declared once in
:mod:`dreamer_gym.contract.definition`; this module re-exports it."""
from dreamer_gym.contract.config import DEFAULT_FAMILIES, REWARD_AGENTS, ConsolidationConfig

__all__ = ["DEFAULT_FAMILIES", "REWARD_AGENTS", "ConsolidationConfig"]
