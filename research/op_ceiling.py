"""The op-level action space's ceiling: the best op assignment a search finds, per training region.

For each region (a reset of the training id with one seed), a coordinate search over
:class:`~dreamer_gym.methods.oplevel.wrapper.OpLevelWrapper`'s ops, scored by ``score_after`` on the env's own DEV
episodes (ties: fewer tokens): start from the better of keep-all and "merge the procedures, drop the
rest"; then, per kind, every op for all entries of that kind; then every op for each procedure alone.
Normalised per region: empty = 0, oracle = 1 (the oracle reads the TRAIN gold paths: a privileged
reference, run here only to normalise). Regions where the oracle is within ``flat_points`` of empty are
flagged and left out of the normalised mean rather than divided by ~0.

``python -m research.op_ceiling --seeds 0 1 2 --out ceiling.json``
"""
from __future__ import annotations

import argparse
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from tqdm.auto import tqdm

from dreamer_gym.consolidators import run_episode
from dreamer_gym.consolidators.oracle import OracleConsolidator
from dreamer_gym.envs.ops import ABSTRACT, DROP, KEEP, MERGE, OPS
from dreamer_gym.methods.oplevel.wrapper import OpLevelWrapper


@dataclass
class RegionCeiling:
    seed: int
    family: str
    entries: int
    empty: float
    keep_all: float
    oracle: float
    merge_procedures: float
    best: float
    best_tokens: int
    best_ops: dict[str, dict[str, int]]  # kind -> op -> count
    commits: int
    flat: bool = False
    normalised: dict[str, float] = field(default_factory=dict)


class CeilingSearch:
    """Scores op assignments on one region, reset the same way each time (same region, same episodes)."""

    def __init__(self, env: OpLevelWrapper, seed: int) -> None:
        self.env, self.seed = env, seed
        _, info = env.reset(seed=seed)
        self.region: list[dict[str, Any]] = info["region"][: env.max_entries]
        self.mask: np.ndarray = info["action_mask"]
        self.family: str = info["family"]
        self.commits = 0

    def score(self, ops: list[int]) -> tuple[float, int]:
        self.env.reset(seed=self.seed)
        action = np.full(self.env.max_entries, DROP)
        action[: len(ops)] = ops
        _, _, _, _, info = self.env.step(action)
        self.commits += 1
        return float(info["score_after"]), int(info["size_after"]["tokens"])

    def oracle(self) -> float:
        return float(run_episode(self.env.env, OracleConsolidator(), seed=self.seed)["score_after"])

    def run(self) -> RegionCeiling:
        n = len(self.region)
        kinds = [e["kind"] for e in self.region]
        empty, _ = self.score([DROP] * n)
        keep_all, keep_tokens = self.score([KEEP] * n)
        merged = [MERGE if k == "procedure" else DROP for k in kinds]
        merge_score, merge_tokens = self.score(merged)
        best, best_key = ([KEEP] * n, (keep_all, -keep_tokens)) if keep_all > merge_score else (merged, (merge_score, -merge_tokens))
        tried = {tuple(best)}

        def consider(ops: list[int]) -> None:
            nonlocal best, best_key
            if tuple(ops) in tried:
                return
            tried.add(tuple(ops))
            score, tokens = self.score(ops)
            if (score, -tokens) > best_key:
                best, best_key = ops, (score, -tokens)

        for kind in dict.fromkeys(kinds):
            for op in range(len(OPS)):
                candidate = [op if k == kind and self.mask[i, op] else best[i] for i, k in enumerate(kinds)]
                consider(candidate)
        for i, kind in enumerate(kinds):
            if kind == "procedure":
                for op in (DROP, KEEP, MERGE, ABSTRACT):
                    consider([op if j == i else best[j] for j in range(n)])
        ops_by_kind: dict[str, dict[str, int]] = {}
        for kind, op in zip(kinds, best):
            ops_by_kind.setdefault(kind, {}).setdefault(OPS[op], 0)
            ops_by_kind[kind][OPS[op]] += 1
        return RegionCeiling(self.seed, self.family, n, empty, keep_all, self.oracle(), merge_score, best_key[0],
                             -best_key[1], ops_by_kind, self.commits)


def normalise(row: RegionCeiling, flat_points: float) -> RegionCeiling:
    span = row.oracle - row.empty
    row.flat = span < flat_points
    if not row.flat:
        row.normalised = {name: round((getattr(row, name) - row.empty) / span, 4)
                          for name in ("keep_all", "merge_procedures", "best")}
    return row


def summarise(rows: list[RegionCeiling]) -> dict[str, Any]:
    kept = [r for r in rows if not r.flat]
    return {name: round(float(np.mean([r.normalised[name] for r in kept])), 4) if kept else None
            for name in ("keep_all", "merge_procedures", "best")} | {"regions": len(rows), "flat": len(rows) - len(kept)}


def ceiling_parser(description: str, env: str) -> argparse.ArgumentParser:
    """The ceiling scripts' shared arguments: the id, the region seeds, the flat threshold and the output file."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--env", default=env)
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(12)))
    parser.add_argument("--flat-points", type=float, default=5.0)
    parser.add_argument("--out", type=Path, required=True)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = ceiling_parser(__doc__.split("\n")[0], "MemoryConsolidation-ScienceWorld-v0")
    args = parser.parse_args(argv)
    env = OpLevelWrapper(gym.make(args.env))
    rows = []
    try:
        for seed in tqdm(args.seeds, desc="op-level ceiling"):
            rows.append(normalise(CeilingSearch(env, seed).run(), args.flat_points))
            args.out.write_text(json.dumps({"summary": summarise(rows), "regions": [asdict(r) for r in rows]}, indent=1))
    finally:
        env.close()
    print(json.dumps(summarise(rows)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
