"""Is there anything for an input-dependent op-level policy to learn on the training regions?

Per training region (a reset of the training id), the DEV commit reward of a few fixed op assignments: merge
everything (what the class-tied and GRPO ``ops`` policies converge to, played by an op-level checkpoint),
``consensus`` (merge the procedures, drop the rest), ``dedupe`` and ``keep-all``; then what a per-region choice
between merge-everything and consensus would add over the better constant. A small gain says the training
distribution pays for one constant op, whatever a policy sees of the region.

``python -m research.rule_choice --checkpoint runs/oplevel-class-seed0/checkpoint-32 --out F``
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from tqdm.auto import tqdm

from dreamer_gym.consolidators import make_consolidator, run_episode
from dreamer_gym.envs.consolidation import ConsolidationEnv

RULES = ("consensus", "dedupe", "keep-all")


def run(checkpoint: str, seeds: list[int], env_id: str = "MemoryConsolidation-ScienceWorld-v0",
        progress: bool = True, **overrides: Any) -> dict[str, Any]:
    """``overrides``: env fields for cheap tests (an experiment env: not comparable with the id's numbers)."""
    policies = {"merge-all": make_consolidator(f"oplevel:{checkpoint}"), **{r: make_consolidator(r) for r in RULES}}
    env = ConsolidationEnv.experiment(env_id, **overrides) if overrides else gym.make(env_id)
    rows = []
    try:
        for seed in tqdm(seeds, desc="regions", disable=not progress):
            row: dict[str, Any] = {"seed": seed}
            for name, policy in policies.items():
                out = run_episode(env, policy, seed=seed)
                row.update({"family": out["family"], name: out["return"], f"{name}_tokens": out["size_after"]["tokens"]})
            rows.append(row)
    finally:
        env.close()
    diff = np.array([r["consensus"] - r["merge-all"] for r in rows])
    best_constant = max(np.mean([r["merge-all"] for r in rows]), np.mean([r["consensus"] for r in rows]))
    summary = {name: {"reward": float(np.mean([r[name] for r in rows])),
                      "tokens": float(np.mean([r[f"{name}_tokens"] for r in rows]))} for name in policies}
    summary["consensus_beats_merge_all"] = int((diff > 0).sum())
    summary["merge_all_beats_consensus"] = int((diff < 0).sum())
    summary["per_region_choice"] = float(np.mean([max(r["consensus"], r["merge-all"]) for r in rows]))
    summary["per_region_choice_gain"] = summary["per_region_choice"] - float(best_constant)
    return {"env_id": env_id, "checkpoint": checkpoint, "regions": rows, "summary": summary}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--checkpoint", required=True, help="an op-level checkpoint whose greedy policy merges everything")
    p.add_argument("--seeds", type=int, nargs="+", default=list(range(24)), help="reset seeds (default: the 24 training regions)")
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    result = run(args.checkpoint, args.seeds)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result["summary"], indent=1))


if __name__ == "__main__":
    main()
