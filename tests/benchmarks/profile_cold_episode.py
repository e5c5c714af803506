"""Where a cold evaluation episode goes: the simulator's calls, retrieval, and the rest (the agent's reading,
cache keys, SQLite). A one-off script, not a test (docs/performance.md, "What a cold episode may cost").

    .venv/bin/python tests/benchmarks/profile_cold_episode.py --rounds 5 [--fresh-index] [--cprofile]
"""
from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import time
from typing import Any

from dreamer_gym.agents import make_agent
from dreamer_gym.evaluation import Evaluator, round_robin_episodes
from dreamer_gym.pool import load_pool
from dreamer_gym.store import Store

SUITE_CALLS = ("start", "step", "look", "inventory", "task_description")


def clock(obj: Any, name: str, totals: dict[str, float]) -> None:
    """Replace ``obj.name`` on the instance with a version that adds its seconds to ``totals[name]``."""
    fn = getattr(obj, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            totals[name] = totals.get(name, 0.0) + time.perf_counter() - t0

    setattr(obj, name, timed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds of 8 episodes (after 2 untimed)")
    parser.add_argument("--fresh-index", action="store_true", help="a new agent per episode: BM25 index built each time")
    parser.add_argument("--cprofile", action="store_true", help="also print cProfile's top functions by own time")
    args = parser.parse_args()
    pool = load_pool("scienceworld-v0")
    bank, episodes = pool.banks[0], round_robin_episodes(pool, 8)
    ev = Evaluator(store=Store(), workers=0)
    ev.warm_up()
    totals: dict[str, float] = {}

    def cold_round() -> list[Any]:
        out = []
        for episode in episodes:
            ev.store.close()
            ev.store = Store()
            ev._retrieved.clear()  # noqa: SLF001 - an empty per-bank memo, as for a commit's new bank
            if args.fresh_index:
                ev.agent = make_agent(ev.agent_config)
                clock(ev.agent, "retrieve", totals)
            out += ev.evaluate(bank, [episode])
        return out

    for _ in range(2):
        cold_round()
    totals.clear()
    for name in SUITE_CALLS:
        clock(ev.executor.suite, name, totals)
    if not args.fresh_index:
        clock(ev.agent, "retrieve", totals)
    profiler = cProfile.Profile() if args.cprofile else None
    t0, steps = time.perf_counter(), 0
    if profiler:
        profiler.enable()
    for _ in range(args.rounds):
        steps += sum(r.steps for r in cold_round())
    if profiler:
        profiler.disable()
    total = time.perf_counter() - t0
    n = args.rounds * len(episodes)
    simulator = sum(totals.get(k, 0.0) for k in SUITE_CALLS)
    retrieval = totals.get("retrieve", 0.0)
    print(f"per episode {total / n * 1e3:.1f} ms, {steps / n:.1f} agent steps")
    for name in (*SUITE_CALLS, "retrieve"):
        print(f"  {name:<18} {totals.get(name, 0.0) / n * 1e3:8.1f} ms  {totals.get(name, 0.0) / total:6.1%}")
    rest = total - simulator - retrieval
    print(f"  {'rest (reading...)':<18} {rest / n * 1e3:8.1f} ms  {rest / total:6.1%}")
    if profiler:
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(25)
        print(text.getvalue())
    ev.close()


if __name__ == "__main__":
    main()
