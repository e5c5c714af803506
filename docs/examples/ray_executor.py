"""Evaluation on Ray actors: the same episodes, results identical to playing them in this process.

Uses the built-in `latency` suite (every simulator call waits 20 ms, as a remote simulator would), so more
actors mean more episodes per second even on 2 cores. Run: python docs/examples/ray_executor.py (a test runs it)
"""
import time

import ray

from dreamer_gym.agents import AgentConfig
from dreamer_gym.evaluation import EvalTask, InProcessExecutor, make_executor
from dreamer_gym.memory import MemoryEntry
from dreamer_gym.suites import get_suite_spec
from dreamer_gym.suites.base import EpisodeTask

spec = get_suite_spec("latency")
memory = (MemoryEntry("procedure", "To set the safe to <code>: go to safe, set safe to <code>.", "open-safe"),)
tasks = [EvalTask(f"k{i}", EpisodeTask("open-safe", 200 + i % 8), memory, seed=i) for i in range(32)]
agent = AgentConfig(max_steps=6)

start = time.perf_counter()
reference = InProcessExecutor(spec, {}, agent).run(tasks)
print(f"in-process: {len(tasks) / (time.perf_counter() - start):.1f} episodes/s")

actors = make_executor("ray", spec, {}, agent, workers=4, cpus_per_actor=0.5)  # starts a local Ray instance
try:
    actors.warm_up()
    start = time.perf_counter()
    results = actors.run(tasks)
    print(f"Ray, 4 actors: {len(tasks) / (time.perf_counter() - start):.1f} episodes/s")
finally:
    actors.close()
    ray.shutdown()
assert results == reference
print(f"identical results; mean score {sum(r.score for r in results) / len(results):.1f}")
