"""The reward service: the evaluation episodes, the evaluator, gold paths and task texts, out of the
policy's process. See :mod:`dreamer_gym.service.services` and docs/env.md, "The reward service"."""
from dreamer_gym.contract.registry import register_service, service_names
from dreamer_gym.service.messages import CommitRequest, CommitResult, PublicPool
from dreamer_gym.service.referee import Referee, draw_episodes
from dreamer_gym.service.services import (
    SERVICES,
    InProcessRewardService,
    ProcessRewardService,
    RewardService,
    make_reward_service,
)

__all__ = ["SERVICES", "CommitRequest", "CommitResult", "InProcessRewardService", "ProcessRewardService", "PublicPool",
           "Referee", "RewardService", "draw_episodes", "make_reward_service", "register_service", "service_names"]
