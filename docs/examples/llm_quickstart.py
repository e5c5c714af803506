"""LLMs on both sides: the prompted consolidator rewrites a region, the LLM agent's score is the reward.

Runs on a laptop CPU with the bundled SmolLM2-135M-Instruct (about a minute). On a GPU machine, pass
LLMConfig(backend="vllm", model="Qwen/Qwen2.5-7B-Instruct"); for a server, LLMConfig(backend="openai",
base_url="http://host:8000/v1", model=NAME) with the key in $OPENAI_API_KEY.
Run: python docs/examples/llm_quickstart.py   (a test runs this file)
"""
import dreamer_gym  # noqa: F401  (registers the ids)
from dreamer_gym.consolidators import run_episode
from dreamer_gym.consolidators.prompted import PromptedConsolidator
from dreamer_gym.envs.consolidation import ConsolidationEnv
from dreamer_gym.llm import LLMConfig, SamplingConfig, make_backend

if __name__ == "__main__":  # vLLM backends start worker processes: keep scripts importable
    llm = LLMConfig(backend="transformers", model="smollm2-135m", max_context=4096)
    backend = make_backend(llm)

    # Every backend answers the same call: a batch of chats, n samples each, optional JSON schema.
    [[reply]] = backend.generate([[{"role": "user", "content": "Name one colour."}]], SamplingConfig(max_tokens=8))
    print("model says:", reply.text)

    # The LLM-agent id: the reward is the LLM agent's score change. Its evaluation is frozen (3+2 episodes of
    # 30 steps: minutes on a CPU), so this demo runs an *experiment* on it (one DEV episode, 3 steps): same
    # env, smaller reward, and every commit says comparable=False.
    env = ConsolidationEnv.experiment("MemoryConsolidation-ScienceWorld-LLM-v1", llm=llm, eval_in_family=1,
                                      eval_other=0, agent_max_steps=3, max_region_entries=8, max_tool_calls=4)
    policy = PromptedConsolidator(backend=backend, guided=True)  # guided JSON: well-formed calls
    info = run_episode(env, policy, seed=0, options={"family": "use-thermometer"})
    print(f"score {info['score_before']:.1f} -> {info['score_after']:.1f}, reward {info['return']:+.3f}, "
          f"entries {info['size_before']['entries']} -> {info['size_after']['entries']}, "
          f"invalid calls {info['invalid_calls']}, comparable {info['comparable']}")
    env.close()
    backend.close()
