"""Downstream agents: they play suite episodes with retrieved memory, and their score is the reward."""
from __future__ import annotations

from dreamer_gym.agents.base import AGENTS, AgentConfig, DownstreamAgent, EpisodeResult
from dreamer_gym.agents.memory_following import MemoryFollowingAgent


def make_agent(config: AgentConfig) -> DownstreamAgent:
    """The agent ``config.name`` names. The LLM agent loads its model lazily, on its first episode."""
    if config.name == "llm":
        from dreamer_gym.agents.llm_agent import LLMAgent

        return LLMAgent(config)
    return MemoryFollowingAgent(config)


__all__ = ["AGENTS", "AgentConfig", "DownstreamAgent", "EpisodeResult", "MemoryFollowingAgent", "make_agent"]
