"""The reward service: the evaluation episodes, the evaluator, gold paths and task texts, out of the
policy's process. See :mod:`dreamer_gym.service.services` and docs/env.md, "The reward service"."""
from dreamer_gym.contract.registry import register_service, service_names
from dreamer_gym.service.messages import SERVICE_OPERATIONS, CommitRequest, CommitResult, EpisodeTicket, PublicPool
from dreamer_gym.service.referee import Referee, draw_episodes
from dreamer_gym.service.services import (
    SERVICES,
    InProcessRewardService,
    ProcessRewardService,
    RewardService,
    make_reward_service,
)
from dreamer_gym.service.tickets import derive_episode_seed

__all__ = ["SERVICES", "SERVICE_OPERATIONS", "CommitRequest", "CommitResult", "EpisodeTicket", "InProcessRewardService",
           "ProcessRewardService", "PublicPool", "Referee", "RewardService", "derive_episode_seed", "draw_episodes",
           "make_reward_service", "register_service", "service_names"]
