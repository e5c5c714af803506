"""Every plug-in point by name: an LLM backend, a downstream agent, an executor and a reward service registered at
run time (an entry point in the matching group does the same from your own package; docs/byo.md, "Every plug-in
point"), then one consolidation episode whose reward comes from them (a ScienceWorld JVM, a few seconds)."""
from __future__ import annotations

from dreamer_gym.agents import AGENTS, AgentConfig, MemoryFollowingAgent, make_agent, register_agent
from dreamer_gym.consolidators import make_consolidator, run_episode
from dreamer_gym.envs.config import ConsolidationConfig
from dreamer_gym.envs.consolidation import ConsolidationEnv
from dreamer_gym.evaluation import EXECUTORS, InProcessExecutor, register_executor
from dreamer_gym.llm import BACKENDS, Completion, LLMConfig, SamplingConfig, make_backend, register_backend
from dreamer_gym.service import SERVICES, InProcessRewardService, register_service


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
    """The memory-following agent, counting its episodes (its cache key differs: it is another agent)."""

    episodes = 0

    @property
    def cache_key(self) -> str:
        return "counting/" + super().cache_key

    def play(self, suite, task, entries, seed=0):
        CountingAgent.episodes += 1
        return super().play(suite, task, entries, seed)


def build_logged(spec, suite_kwargs, agent_config, *, workers, max_restarts, agent, **options) -> InProcessExecutor:
    """An executor builder: the in-process executor, saying so (yours would start workers, a cluster, ...)."""
    print(f"executor 'logged' built for the {spec.name} suite, agent {agent_config.name!r}")
    return InProcessExecutor(spec, suite_kwargs, agent_config, agent=agent)


register_backend("echo", EchoBackend)
register_agent("counting", CountingAgent)
register_executor("logged", build_logged)
register_service("debug", InProcessRewardService)
try:
    backend = make_backend(LLMConfig(backend="echo", model="none"))
    [[reply]] = backend.generate([[{"role": "user", "content": "abc"}]], SamplingConfig())
    assert reply.text == "cba"
    assert isinstance(make_agent(AgentConfig(name="counting")), CountingAgent)
    # the env config checks each name against the live registries: a name registered after import works
    config = ConsolidationConfig(executor="logged", service="debug", reward_agent="counting")
    assert config.agent_config().name == "counting"

    # an experiment on the id (a registered reward agent is not what the id freezes): one keep-all episode
    env = ConsolidationEnv.experiment("MemoryConsolidation-ScienceWorld-v1", executor="logged", service="debug",
                                      reward_agent="counting", eval_in_family=1, eval_other=0)
    info = run_episode(env, make_consolidator("keep-all"), seed=0)
    env.close()
    print(f"keep-all: score before {info['score_before']:.1f}, after {info['score_after']:.1f}, "
          f"{CountingAgent.episodes} episode(s) played by the counting agent")
finally:  # this process's registry is shared (a test runs this file in-process): leave it as found
    for registry, name in ((BACKENDS, "echo"), (AGENTS, "counting"), (EXECUTORS, "logged"), (SERVICES, "debug")):
        registry.unregister(name)
