"""Downstream agents: they play suite episodes with retrieved memory, and their score is the reward."""
from __future__ import annotations

from dreamer_gym.agents.base import AgentConfig, DownstreamAgent, EpisodeResult
from dreamer_gym.agents.memory_following import MemoryFollowingAgent
from dreamer_gym.agents.registry import (
    AGENTS,
    agent_names,
    register_agent,
    resolve_reward_agent,
    reward_agent_names,
)


def make_agent(config: AgentConfig) -> DownstreamAgent:
    """The agent ``config.name`` names, from the registry (:mod:`dreamer_gym.agents.registry`). The LLM agent
    loads its model lazily, on its first episode."""
    return AGENTS.get(config.name)(config)


def check_agent_available(config: AgentConfig) -> None:
    """Fail at once, naming the fix, when the agent ``config`` names cannot run here: the LLM agent needs its
    backend's packages and model. The memory-following agent needs nothing beyond its suite."""
    if config.name == "llm":
        from dreamer_gym.llm.available import check_llm_available

        check_llm_available(config.llm)


__all__ = ["AGENTS", "AgentConfig", "check_agent_available", "DownstreamAgent", "EpisodeResult", "MemoryFollowingAgent",
           "agent_names", "make_agent", "register_agent", "resolve_reward_agent", "reward_agent_names"]
