"""Commit time through the reward service process vs in-process, in the same run (not collected by pytest).

    .venv/bin/python tests/benchmarks/measure_service.py [--trials 8] [--out results.json]

For each service: one env, a warm-up commit (JVM start), then ``trials`` commits of the "empty" policy on
fresh seeds (cold cache: both banks played) and the same ``trials`` seeds again (every episode a cache
hit: what is left is the request's own cost: pickling the new region, the pipe, the referee's checks).
Sizes of what crosses the pipe are reported too.
"""
from __future__ import annotations

import argparse
import json
import pickle
import statistics
import time

import gymnasium as gym

import dreamer_gym  # noqa: F401
from dreamer_gym.service import CommitRequest

ENV_ID = "MemoryConsolidation-ScienceWorld-v0"
COMMIT = json.dumps({"tool": "commit"})


def _commits(env: gym.Env, seeds: list[int]) -> list[float]:
    times = []
    for seed in seeds:
        env.reset(seed=seed)
        t0 = time.perf_counter()
        env.step(COMMIT)
        times.append(time.perf_counter() - t0)
    return times


def measure(service: str, trials: int) -> dict[str, object]:
    env = gym.make(ENV_ID, service=service)
    try:
        t0 = time.perf_counter()
        env.reset(seed=999)
        first_reset = time.perf_counter() - t0
        _commits(env, [999])  # JVM start
        seeds = list(range(trials))
        cold = _commits(env, seeds)
        warm = _commits(env, seeds)
        pool = env.unwrapped.pool
        return {"service": service, "first_reset_s": round(first_reset, 3),
                "cold_commit_median_s": round(statistics.median(cold), 3),
                "cached_commit_median_ms": round(1000 * statistics.median(warm), 2),
                "public_pool_bytes": len(pickle.dumps(pool)),
                "request_bytes_empty": len(pickle.dumps(CommitRequest(0, pool.families[0], "0" * 32, ())))}
    finally:
        env.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    rows = [measure(s, args.trials) for s in ("inprocess", "process")]
    print(json.dumps(rows, indent=1))
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
