"""Every plug-in point by name: an LLM backend, a downstream agent, an executor and a reward service registered at
run time (an entry point in the matching group does the same from your own package; docs/byo.md, "Every plug-in
point"). Runs in a second, no simulator: it builds each piece by name the way the env and the CLI do."""
from __future__ import annotations

from dreamer_gym.agents import AgentConfig, MemoryFollowingAgent, make_agent, register_agent
from dreamer_gym.envs.config import ConsolidationConfig
from dreamer_gym.evaluation import InProcessExecutor, make_executor, register_executor
from dreamer_gym.llm import Completion, LLMConfig, SamplingConfig, make_backend, register_backend
from dreamer_gym.service import InProcessRewardService, register_service
from dreamer_gym.suites import get_suite_spec


class EchoBackend:
    """A deterministic backend (the LLMBackend protocol): it answers with the last user message, reversed."""

    name = "echo"

    def __init__(self, config: LLMConfig) -> None:
        self.model, self.max_context = config.model, config.max_context

    def generate(self, conversations, sampling: SamplingConfig) -> list[list[Completion]]:
        return [[Completion(chat[-1]["content"][::-1])] * sampling.n for chat in conversations]

    def count_tokens(self, conversation) -> int:
        return sum(len(m["content"].split()) for m in conversation)

    def close(self) -> None:
        pass


class CountingAgent(MemoryFollowingAgent):
    """The memory-following agent under a name of its own (its cache key must differ: it is another agent)."""

    @property
    def cache_key(self) -> str:
        return "counting/" + super().cache_key


def build_logged(spec, suite_kwargs, agent_config, *, workers, max_restarts, agent, **options) -> InProcessExecutor:
    """An executor builder: the in-process executor (yours would start workers, a cluster, ...)."""
    return InProcessExecutor(spec, suite_kwargs, agent_config, agent=agent)


register_backend("echo", EchoBackend)
register_agent("counting", CountingAgent)
register_executor("logged", build_logged)
register_service("debug", InProcessRewardService)

backend = make_backend(LLMConfig(backend="echo", model="none"))
[[reply]] = backend.generate([[{"role": "user", "content": "abc"}]], SamplingConfig())
assert reply.text == "cba"
assert isinstance(make_agent(AgentConfig(name="counting")), CountingAgent)

# the env config checks each name against the live registries: a name registered after import works
config = ConsolidationConfig(executor="logged", service="debug", reward_agent="counting")
assert config.agent_config().name == "counting"
executor = make_executor(config.executor, get_suite_spec(config.suite), agent_config=config.agent_config())
assert isinstance(executor, InProcessExecutor) and isinstance(executor.agent, CountingAgent)  # nothing started yet
print("registered and built by name: backend echo, agent counting, executor logged, service debug")
