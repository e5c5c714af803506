"""The reward function, re-exported: it lives in :mod:`dreamer_gym.contract.reward` (issue 28).

Import from there; this path stays for one version (it goes in 0.3)."""
from dreamer_gym.contract.reward import RewardBreakdown, mean_score, reward_from_results, size_term

__all__ = ["RewardBreakdown", "mean_score", "reward_from_results", "size_term"]
