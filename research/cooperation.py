"""Cooperation on the parallel env: the board-using ``board-dedupe`` against independent ``dedupe`` agents (and
``keep-all``, whose joint bank is the bank itself), on the same resets.

Per reset (seed) the joint reward is the mean of the agents' returns (the shared score change plus the mean
size term). The comparison is paired by seed; the CI is a paired bootstrap 95% interval of the mean
difference (:func:`dreamer_gym.studies.validity._ci`, BCa). Run::

    python -m research.cooperation --seeds 20 --n-agents 3 --out research/results/before-after/issue15/cooperation.json
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from dreamer_gym.consolidators.cooperative import BoardDedupeConsolidator, run_parallel_episode
from dreamer_gym.consolidators.fixed import DedupeConsolidator, KeepAllConsolidator
from dreamer_gym.envs.parallel import parallel_env
from dreamer_gym.studies.validity import _ci

POLICIES = {"keep-all": KeepAllConsolidator, "dedupe": DedupeConsolidator, "board-dedupe": BoardDedupeConsolidator}


def run(seeds: int = 20, n_agents: int = 3, env_id: str = "MemoryConsolidationParallel-ScienceWorld-v0",
        resamples: int = 4000, progress: bool = True, **env_kwargs: Any) -> dict[str, Any]:
    """Every policy on resets ``0..seeds-1`` of one env (one evaluation cache: shared episodes play once)."""
    env = parallel_env(env_id, n_agents=n_agents, **env_kwargs)
    rows: list[dict[str, Any]] = []
    try:
        for seed in tqdm(range(seeds), desc="cooperation", disable=not progress):
            for name, policy in POLICIES.items():
                out = run_parallel_episode(env, policy(), seed=seed)
                first = next(iter(out.values()))
                rows.append({
                    "seed": seed, "policy": name, "families": first["families"],
                    "joint_reward": float(np.mean([o["return"] for o in out.values()])),
                    "shared_score_delta": first["reward_components"]["shared_score_delta"],
                    "score_before": first["score_before"], "score_after": first["score_after"],
                    "tokens_after": sum(o["size_after"]["tokens"] for o in out.values()),
                    "tokens_before": sum(o["size_before"]["tokens"] for o in out.values()),
                    "bank_after": first["bank_after"],
                })
    finally:
        env.close()
    return {"env_id": env_id, "n_agents": n_agents, "seeds": seeds, "rows": rows,
            "summary": summarise(rows, resamples)}


def summarise(rows: list[dict[str, Any]], resamples: int = 4000) -> dict[str, Any]:
    by = {(r["policy"], r["seed"]): r for r in rows}
    seeds = sorted({r["seed"] for r in rows})
    out: dict[str, Any] = {"policies": {}, "board-dedupe minus dedupe": {}}
    for name in POLICIES:
        values = np.array([by[(name, s)]["joint_reward"] for s in seeds])
        out["policies"][name] = {"joint_reward_mean": float(values.mean()),
                                 "tokens_after_mean": float(np.mean([by[(name, s)]["tokens_after"] for s in seeds]))}
    diffs = np.array([by[("board-dedupe", s)]["joint_reward"] - by[("dedupe", s)]["joint_reward"] for s in seeds])
    lo, hi = _ci(diffs, resamples)
    out["board-dedupe minus dedupe"] = {
        "mean": float(diffs.mean()), "ci95": [lo, hi],
        "resets_where_banks_differ": sum(by[("board-dedupe", s)]["bank_after"] != by[("dedupe", s)]["bank_after"]
                                         for s in seeds),
        "resets": len(seeds),
    }
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--n-agents", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    result = run(args.seeds, args.n_agents)
    text = json.dumps(result, indent=1, sort_keys=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    print(json.dumps(result["summary"], indent=1))


if __name__ == "__main__":
    main()
