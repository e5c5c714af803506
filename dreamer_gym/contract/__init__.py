"""The reward contract: what a reward measures, declared once, and the one function that computes it.

Below the reward service (which scores with it) and the env (which is configured by it), above the
evaluation it runs. :mod:`~dreamer_gym.contract.definition` declares the reward-defining fields;
:mod:`~dreamer_gym.contract.reward` computes the reward and its size term; :mod:`~dreamer_gym.contract.ids`
holds the registered ids; :mod:`~dreamer_gym.contract.frozen` checks a config against an id;
:mod:`~dreamer_gym.contract.config` is the env's full configuration. See docs/env.md, "Reward".
"""
from dreamer_gym.contract.definition import (
    BUDGET_FIELDS,
    CHARS_PER_TOKEN,
    CONTRACTS,
    LATEST_CONTRACT,
    LLM_REWARD_FIELDS,
    REWARD_FIELDS,
    Budgets,
    RewardDefinition,
)
from dreamer_gym.contract.reward import RewardBreakdown, reward_from_results, size_term

__all__ = ["BUDGET_FIELDS", "CHARS_PER_TOKEN", "CONTRACTS", "LATEST_CONTRACT", "LLM_REWARD_FIELDS", "REWARD_FIELDS",
           "Budgets", "RewardBreakdown", "RewardDefinition", "reward_from_results", "size_term"]
