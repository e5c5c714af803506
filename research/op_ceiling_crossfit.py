"""The op-level ceiling, cross-fitted, with `synthesize` and the bank context (issue 40, item 7).

``research/op_ceiling.py`` searched op assignments and scored the winner on the episodes it was chosen on: a
maximum over noisy scores, biased upward (it reached 0.75 of the oracle in sample). Here each region's evaluation
episodes are split into two disjoint halves by variation (:func:`dreamer_gym.studies.folds.fold_map`): the search
chooses on one half and the winner is scored on the other, then the other way round. One commit scores every
episode, so both searches share one memo of evaluated assignments; the second costs only what the first did not try.

The search (per region, on a contract-2 id, so the op space has the 5th op ``synthesize``): start from the better of
keep-all and "merge the procedures, drop the rest"; per kind, every op for all entries of that kind; then every op
for each procedure alone. Per region normalised on the scoring half: empty = 0, oracle = 1 (the oracle reads TRAIN
gold paths: a privileged reference, run here only to normalise); regions whose oracle stands under ``flat_points``
above empty on either half are flagged and left out.

``python -m research.op_ceiling_crossfit --env MemoryConsolidation-ScienceWorld-v2 --seeds 0 1 2 --out OUT.json``
"""
from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from tqdm.auto import tqdm

import dreamer_gym  # noqa: F401  (registers the ids)
from dreamer_gym.consolidators import run_episode
from dreamer_gym.consolidators.oracle import OracleConsolidator
from dreamer_gym.envs.ops import DROP, KEEP, MERGE
from dreamer_gym.methods.oplevel.wrapper import OpLevelWrapper
from dreamer_gym.studies.folds import fold_map
from research.op_ceiling import CeilingSearch, ceiling_parser

Episodes = list[tuple[str, int, float]]  # (family, variation, score after)


class Region(CeilingSearch):
    """One region reset the same way each time (``research/op_ceiling.py``'s): every assignment is scored once on
    every episode (memo)."""

    def __init__(self, env: OpLevelWrapper, seed: int) -> None:
        super().__init__(env, seed)
        self.entries: list[dict[str, Any]] = self.region
        self.memo: dict[tuple[int, ...], tuple[Episodes, int]] = {}

    def commit(self, ops: Sequence[int]) -> tuple[Episodes, int]:
        key = tuple(int(o) for o in ops)
        if key not in self.memo:
            self.env.reset(seed=self.seed)
            action = np.full(self.env.max_entries, DROP)
            action[: len(key)] = key
            info = self.env.step(action)[4]
            self.memo[key] = ([(e["family"], int(e["variation"]), float(e["after"])) for e in info["episodes"]],
                              int(info["size_after"]["tokens"]))
        return self.memo[key]

    def oracle_episodes(self) -> Episodes:
        info = run_episode(self.env.env, OracleConsolidator(), seed=self.seed)
        return [(e["family"], int(e["variation"]), float(e["after"])) for e in info["episodes"]]


def half_mean(episodes: Episodes, folds: dict[tuple[str, int], int], k: int) -> float:
    values = [after for family, variation, after in episodes if folds[(family, variation)] == k]
    return float(np.mean(values)) if values else float("nan")


def search(region: Region, objective: Callable[[Episodes], float]) -> list[int]:
    """The coordinate search of ``research/op_ceiling.py`` over every op of the env (ties: fewer tokens)."""
    n, kinds, n_ops = len(region.entries), [e["kind"] for e in region.entries], region.mask.shape[1]

    def key(ops: list[int]) -> tuple[float, int]:
        episodes, tokens = region.commit(ops)
        return objective(episodes), -tokens

    merged = [MERGE if k == "procedure" else DROP for k in kinds]
    best = max(([KEEP] * n, merged), key=key)
    best_key = key(best)
    for kind in dict.fromkeys(kinds):
        for op in range(n_ops):
            candidate = [op if k == kind and region.mask[i, op] else best[i] for i, k in enumerate(kinds)]
            if key(candidate) > best_key:
                best, best_key = candidate, key(candidate)
    for i, kind in enumerate(kinds):
        if kind != "procedure":
            continue
        for op in range(n_ops):
            if region.mask[i, op]:
                candidate = [op if j == i else best[j] for j in range(n)]
                if key(candidate) > best_key:
                    best, best_key = candidate, key(candidate)
    return best


def crossfit_region(env: OpLevelWrapper, seed: int, flat_points: float) -> dict[str, Any]:
    """Per half: the search's pick chosen on the other half, scored on this one; keep-all, merge-procedures,
    the better of the two chosen on the other half, empty and the oracle, all on this half."""
    region = Region(env, seed)
    n, kinds = len(region.entries), [e["kind"] for e in region.entries]
    keep, merged = [KEEP] * n, [MERGE if k == "procedure" else DROP for k in kinds]
    episodes = region.commit(keep)[0]
    folds = fold_map([(f, v) for f, v, _ in episodes], 2, seed, carry=True)
    oracle = region.oracle_episodes()
    halves = []
    for k in (0, 1):
        chosen_on = 1 - k
        pick = search(region, lambda eps: half_mean(eps, folds, chosen_on))
        fixed = max((keep, merged), key=lambda ops: half_mean(region.commit(ops)[0], folds, chosen_on))
        row = {name: half_mean(region.commit(ops)[0], folds, k)
               for name, ops in (("empty", [DROP] * n), ("keep_all", keep), ("merge_procedures", merged),
                                 ("fixed_other_half", fixed), ("best_other_half", pick))}
        row["best_in_sample"] = half_mean(region.commit(search(region, lambda eps: half_mean(eps, folds, k)))[0],
                                          folds, k)
        row["oracle"] = half_mean(oracle, folds, k)
        row["ops"] = {kind: sorted(env.op_list[op] for op, kk in zip(pick, kinds) if kk == kind)
                      for kind in dict.fromkeys(kinds)}
        halves.append(row)
    flat = any(h["oracle"] - h["empty"] < flat_points for h in halves)
    names = ("keep_all", "merge_procedures", "fixed_other_half", "best_other_half", "best_in_sample")
    normalised = None if flat else {
        name: float(np.mean([(h[name] - h["empty"]) / (h["oracle"] - h["empty"]) for h in halves])) for name in names}
    return {"seed": seed, "family": region.family, "entries": n, "commits": len(region.memo), "halves": halves,
            "flat": flat, "normalised": normalised}


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    kept = [r["normalised"] for r in rows if r["normalised"] is not None]
    out: dict[str, Any] = {"regions": len(rows), "flat": len(rows) - len(kept)}
    for name in (kept[0] if kept else {}):
        values = np.array([r[name] for r in kept])
        out[name] = round(float(values.mean()), 4)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = ceiling_parser(__doc__.split("\n")[0], "MemoryConsolidation-ScienceWorld-v2")
    args = parser.parse_args(argv)
    env = OpLevelWrapper(gym.make(args.env))
    if "synthesize" not in env.op_list:
        parser.error(f"{args.env} has no `synthesize` op (tool contract < 2): pass a contract-2 id")
    rows = []
    try:
        for seed in tqdm(args.seeds, desc="cross-fitted op ceiling"):
            rows.append(crossfit_region(env, seed, args.flat_points))
            args.out.write_text(json.dumps({"env": args.env, "summary": summarise(rows), "regions": rows}, indent=1))
    finally:
        env.close()
    print(json.dumps(summarise(rows)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
