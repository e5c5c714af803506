"""One-off measurements that are too slow for a benchmark loop (not collected by pytest).

    .venv/bin/python tests/benchmarks/measure_once.py [--out results.json] [--trials 6]

1. Seconds per commit on the default env (``gym.make("MemoryConsolidation-ScienceWorld-v0")``:
   5 evaluation episodes, 3 in-family + 2 others) with a cold evaluation cache, workers=0 and workers=2.
   A commit evaluates the bank before and, if it changed, after: the "keep-all" policy (keep every
   region entry, commit) leaves the bank as it was and evaluates once; the "empty" policy (commit with
   nothing emitted) drops the region and evaluates twice. The first commit of an env starts the JVM(s)
   and is reported apart. Each measured commit gets a fresh in-memory Store, so nothing is cached.
2. The evaluation-cache hit rate over 10 resets+commits with a fixed policy (keep-all and empty
   alternately) on one env and one store: once with ``reset(seed=0)`` every time (the same region and
   episodes), once with ``reset(seed=0)`` then unseeded resets (what a training loop does).
3. Where an evaluation's time goes: py4j calls (JVM work + socket round trips) vs Python, for 8 cold
   dev episodes with workers=0. Measured two ways: a thin timer around py4j's
   ``GatewayClient.send_command`` (every JVM call goes through it; low overhead), and cProfile
   (inflates the Python side; reported for the breakdown).
"""
from __future__ import annotations

import argparse
import cProfile
import json
import os
import platform
import pstats
import statistics
import time
from typing import Any

import gymnasium as gym

import dreamer_gym  # noqa: F401 - registers the env ids
from dreamer_gym.evaluation import Evaluator, round_robin_episodes
from dreamer_gym.pool import load_pool
from dreamer_gym.store import Store

ENV_ID = "MemoryConsolidation-ScienceWorld-v0"
COMMIT = json.dumps({"tool": "commit"})


def _keep_all(env: Any, info: dict[str, Any]) -> None:
    ids = [e["id"] for e in info["region"]]
    _, _, terminated, truncated, step_info = env.step(json.dumps({"tool": "keep", "ids": ids}))
    assert not terminated and not truncated and step_info["last_error"] is None, step_info["last_error"]


def _commit(env: Any, info: dict[str, Any], policy: str) -> tuple[float, dict[str, Any]]:
    if policy == "keep-all":
        _keep_all(env, info)
    t0 = time.perf_counter()
    _, _, terminated, _, commit_info = env.step(COMMIT)
    dt = time.perf_counter() - t0
    assert terminated
    return dt, commit_info


def commit_times(workers: int, trials: int) -> dict[str, Any]:
    env = gym.make(ENV_ID, workers=workers, service="inprocess")  # so the evaluator can be reached and reset
    ev = env.unwrapped.service.referee.evaluator
    out: dict[str, Any] = {"workers": workers}
    try:
        _, info = env.reset(seed=1000)
        first, _ = _commit(env, info, "empty")
        out["first_commit_s (JVM start, cold JIT)"] = round(first, 3)
        # untimed warm-up: the JVM's first episodes are slow (class loading, JIT)
        for seed in (1001, 1002, 1003):
            _, info = env.reset(seed=seed)
            _commit(env, info, "empty")
        for policy in ("keep-all", "empty"):
            times, episodes, looked_up = [], [], []
            for trial in range(trials):
                _, info = env.reset(seed=trial)
                ev.store = Store()  # cold cache (the env's own store keeps the banks)
                misses, hits = ev.stats.misses, ev.stats.hits
                dt, _ = _commit(env, info, policy)
                times.append(dt)
                episodes.append(ev.stats.misses - misses)  # played on the JVM (the rest were cache hits)
                looked_up.append(ev.stats.misses - misses + ev.stats.hits - hits)
            out[policy] = {
                "median_s": round(statistics.median(times), 3),
                "min_s": round(min(times), 3),
                "max_s": round(max(times), 3),
                "episodes_played_per_commit": sorted(set(episodes)),
                "episodes_evaluated_per_commit": sorted(set(looked_up)),
                "median_s_per_episode": round(statistics.median(t / n for t, n in zip(times, episodes)), 4),
                "trials": trials,
            }
    finally:
        env.close()
    return out


def hit_rate(seeded_every_time: bool, commits: int = 10) -> dict[str, Any]:
    env = gym.make(ENV_ID, service="inprocess")
    try:
        times = []
        for i in range(commits):
            _, info = env.reset(seed=0) if (seeded_every_time or i == 0) else env.reset()
            dt, _ = _commit(env, info, "keep-all" if i % 2 == 0 else "empty")
            times.append(dt)
        stats = env.unwrapped.service.referee.evaluator.stats
        return {
            "resets": "reset(seed=0) every time" if seeded_every_time else "reset(seed=0), then reset()",
            "commits": commits,
            "hits": stats.hits,
            "misses": stats.misses,
            "hit_rate": round(stats.hit_rate, 3),
            "commit_s": [round(t, 3) for t in times],
        }
    finally:
        env.close()


def jvm_share(n_episodes: int = 8) -> dict[str, Any]:
    from py4j.java_gateway import GatewayClient

    pool = load_pool("scienceworld-v0")
    episodes = round_robin_episodes(pool, n_episodes)
    bank = pool.banks[0]
    ev = Evaluator(store=Store(), workers=0)
    ev.warm_up()
    try:
        for _ in range(2):  # warm the JIT
            ev.store = Store()
            ev.evaluate(bank, episodes)

        # (a) thin timer around every py4j call
        original = GatewayClient.send_command
        spent = {"s": 0.0, "calls": 0}
        by_method: dict[str, list[float]] = {}

        def timed(self, command, *args, **kwargs):  # noqa: ANN001, ANN202
            parts = command.split("\n")
            # py4j protocol: "c" (call) + target id + method name; other commands: their 1-2 letter codes
            name = parts[2] if parts[0] == "c" and len(parts) > 2 else ":".join(parts[:2])
            t0 = time.perf_counter()
            try:
                return original(self, command, *args, **kwargs)
            finally:
                dt = time.perf_counter() - t0
                spent["s"] += dt
                spent["calls"] += 1
                slot = by_method.setdefault(name, [0, 0.0])
                slot[0] += 1
                slot[1] += dt

        shares, totals, calls = [], [], []
        GatewayClient.send_command = timed
        try:
            for _ in range(3):
                ev.store = Store()
                spent["s"], spent["calls"] = 0.0, 0
                by_method.clear()
                t0 = time.perf_counter()
                results = ev.evaluate(bank, episodes)
                total = time.perf_counter() - t0
                shares.append(spent["s"] / total)
                totals.append(total)
                calls.append(spent["calls"])
        finally:
            GatewayClient.send_command = original
        steps = sum(r.steps for r in results)

        # (b) cProfile breakdown
        ev.store = Store()
        client_line = GatewayClient.send_command.__code__.co_firstlineno
        prof = cProfile.Profile()
        prof.runcall(ev.evaluate, bank, episodes)
        st = pstats.Stats(prof)
        total_p = max(v[3] for k, v in st.stats.items() if k[2] == "evaluate" and k[0].endswith("evaluator.py"))

        def cum(pred) -> float:  # noqa: ANN001
            return sum(v[3] for k, v in st.stats.items() if pred(k))

        def tot(pred) -> float:  # noqa: ANN001
            return sum(v[2] for k, v in st.stats.items() if pred(k))

        # java_gateway.py has GatewayClient.send_command (wraps the connection's); count the client's only
        send = cum(lambda k: k[0].endswith("java_gateway.py") and k[2] == "send_command" and k[1] == client_line)
        recv = tot(lambda k: k[2] in (
            "<method 'recv_into' of '_socket.socket' objects>", "<method 'recv' of '_socket.socket' objects>"
        ))
        retrieve = cum(lambda k: k[0].endswith("memory_following.py") and k[2] == "retrieve")
        sort_l = cum(lambda k: k[0].endswith("scienceworld.py") and k[2] == "sort_listings")
        return {
            "episodes": n_episodes,
            "agent_steps": steps,
            "evaluate_s_median": round(statistics.median(totals), 3),
            "py4j_calls_per_evaluate": calls,
            "py4j_calls_per_agent_step": round(statistics.median(calls) / max(steps, 1), 2),
            "share_in_py4j_calls (timer)": [round(s, 3) for s in shares],
            "share_in_py4j_calls_median (timer)": round(statistics.median(shares), 3),
            "py4j_by_method (last run: calls, ms)": {
                k: [v[0], round(v[1] * 1e3, 1)] for k, v in sorted(by_method.items(), key=lambda kv: -kv[1][1])
            },
            "cprofile": {
                "total_s": round(total_p, 3),
                "py4j send_command cum_s": round(send, 3),
                "socket recv (waiting on the JVM) s": round(recv, 3),
                "share_py4j": round(send / total_p, 3),
                "share_socket_wait": round(recv / total_p, 3),
                "retrieval (BM25, per episode) s": round(retrieve, 3),
                "sort_listings s": round(sort_l, 3),
            },
        }
    finally:
        ev.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=None)
    parser.add_argument("--trials", type=int, default=6)
    parser.add_argument("--only", nargs="*", default=["commit", "hits", "jvm"])
    args = parser.parse_args()
    report: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "load_avg_start": os.getloadavg(),
    }
    if "commit" in args.only:
        report["commit_workers0"] = commit_times(0, args.trials)
        print(json.dumps(report["commit_workers0"]), flush=True)
        report["commit_workers2"] = commit_times(2, args.trials)
        print(json.dumps(report["commit_workers2"]), flush=True)
    if "hits" in args.only:
        report["hit_rate_fixed_seed"] = hit_rate(True)
        print(json.dumps(report["hit_rate_fixed_seed"]), flush=True)
        report["hit_rate_training_loop"] = hit_rate(False)
        print(json.dumps(report["hit_rate_training_loop"]), flush=True)
    if "jvm" in args.only:
        report["jvm_share"] = jvm_share()
        print(json.dumps(report["jvm_share"]), flush=True)
    report["load_avg_end"] = os.getloadavg()
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump(report, fh, indent=1)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
