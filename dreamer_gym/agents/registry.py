"""The downstream-agent registry: name -> agent class (or factory), built as ``factory(config: AgentConfig)``.

The agent's score on an episode is the reward, so an agent is a plug-in point like a suite: one line per built-in
here, :func:`register_agent` at run time, or an entry point in the ``dreamer_gym.agents`` group::

    [project.entry-points."dreamer_gym.agents"]
    mine = "my_pkg.agent:MyAgent"

``AgentConfig(name="mine")`` then validates against the live table, and ``reward_agent="mine"`` (the env config,
``dreamer-gym consolidate --reward-agent mine``) plays its episodes with it. The class must implement
:class:`~dreamer_gym.agents.base.DownstreamAgent`; :func:`dreamer_gym.testing.check_agent` checks one.
Strings keep this module free of imports: listing the names imports no agent (nor torch).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dreamer_gym.errors import ConfigError
from dreamer_gym.registry import Registry, callable_as

ENTRY_POINT_GROUP = "dreamer_gym.agents"


AGENTS: Registry[Callable[..., Any]] = Registry(
    "downstream agent", ENTRY_POINT_GROUP, {
        "memory-following": "dreamer_gym.agents.memory_following:MemoryFollowingAgent",
        "llm": "dreamer_gym.agents.llm_agent:LLMAgent",
    }, option="name", check=callable_as("a class or factory taking an AgentConfig"),
    how="dreamer_gym.agents.register_agent(name, factory) or an entry point in the 'dreamer_gym.agents' group "
        "(mine = \"my_pkg.agent:MyAgent\")")

# the env config's short names for the built-in agents (``reward_agent="memory"``); any other registered agent
# is named as it is registered
REWARD_AGENT_ALIASES = {"memory": "memory-following"}


def register_agent(name: str, factory: str | Callable[..., Any], *, replace: bool = False) -> None:
    """Make ``factory`` (a class built with an ``AgentConfig``, or a ``"module:attr"`` string) the agent ``name``."""
    if name in REWARD_AGENT_ALIASES:
        raise ConfigError(f"Expected an agent name other than {name!r} (reward_agent's alias for "
                          f"{REWARD_AGENT_ALIASES[name]!r})")
    AGENTS.register(name, factory, replace=replace)


def agent_names() -> tuple[str, ...]:
    """Every downstream agent this process can build: built-in, registered and installed as entry points."""
    return AGENTS.names()


def reward_agent_names() -> tuple[str, ...]:
    """What the env config's ``reward_agent`` (and ``--reward-agent``) may be: the aliases, then every agent."""
    return (*REWARD_AGENT_ALIASES, *(n for n in agent_names() if n not in REWARD_AGENT_ALIASES.values()))


def resolve_reward_agent(name: str) -> str:
    """The agent the env config's ``reward_agent`` means ("memory" -> "memory-following"; a registered name as
    is). Raises ConfigError listing :func:`reward_agent_names` for an unknown one."""
    agent = REWARD_AGENT_ALIASES.get(name, name)
    if agent not in AGENTS:
        raise ConfigError(f"Expected `reward_agent` to be one of {reward_agent_names()}, got {name!r}; register "
                          f"your own with {AGENTS.how_to()}")
    return agent
