"""The frozen-field checks, re-exported: they live in :mod:`dreamer_gym.contract.frozen` (issue 28).

Import from there; this path stays for one version (it goes in 0.3)."""
from dreamer_gym.contract.frozen import (
    BUDGET_FIELDS,
    LLM_REWARD_FIELDS,
    REWARD_FIELDS,
    budgets,
    check_frozen,
    comparable_id,
    reward_definition,
)

__all__ = ["BUDGET_FIELDS", "LLM_REWARD_FIELDS", "REWARD_FIELDS", "budgets", "check_frozen", "comparable_id",
           "reward_definition"]
