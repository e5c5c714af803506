"""Several consolidators at once: the PettingZoo env, independent fixed agents and the board-using baseline.

Run: python docs/examples/parallel_env.py   (a test runs this file)
"""
from dreamer_gym.consolidators.cooperative import BoardDedupeConsolidator, run_parallel_episode
from dreamer_gym.consolidators.fixed import DedupeConsolidator
from dreamer_gym.envs.parallel import parallel_env

env = parallel_env("MemoryConsolidationParallel-ScienceWorld-v1", n_agents=2)
try:
    # the raw PettingZoo loop: every live agent acts each step; a committed agent waits for the others
    observations, infos = env.reset(seed=0)
    print({agent: info["family"] for agent, info in infos.items()})
    actions = {agent: '{"tool": "post", "text": "I keep my procedures."}' for agent in env.agents}
    observations, rewards, terminations, truncations, infos = env.step(actions)
    print(observations["consolidator_1"]["board"])

    # one consolidator per agent, run to the joint commit: shared score change + each agent's size term
    for policy in (DedupeConsolidator(), BoardDedupeConsolidator()):
        out = run_parallel_episode(env, policy, seed=0)
        first = out["consolidator_0"]
        print(f"{policy.name}: joint score {first['score_before']:.1f} -> {first['score_after']:.1f}, "
              f"returns {[round(o['return'], 4) for o in out.values()]}, parts {first['reward_components']}")
finally:
    env.close()
