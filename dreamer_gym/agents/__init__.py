"""Downstream agents: they play suite episodes with retrieved memory, and their score is the reward."""
from dreamer_gym.agents.base import AgentConfig, DownstreamAgent, EpisodeResult
from dreamer_gym.agents.memory_following import MemoryFollowingAgent

__all__ = ["AgentConfig", "DownstreamAgent", "EpisodeResult", "MemoryFollowingAgent"]
