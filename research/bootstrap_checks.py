"""How many bootstrap draws the board needs, and how often its CIs cover the truth (issue 30, item 3).

On the committed results (leaderboards/results/, re-scored rows of the current protocol, normalised as the board
does): (1) the Monte-Carlo SD of the 95% CI endpoints across bootstrap seeds, per replicate count, for the mean,
the IQM, P(improvement) over the best fixed row and the paired IQM difference of neighbouring rows (the board's
interval, ``t``); (2) the coverage of the percentile, the expanded and the t interval on simulated tracks drawn
from each ranked scienceworld row's own per-family spread, and from each neighbouring pair's (identical pairs
left out: they cover trivially), by aggregate.coverage.
``python -m research.bootstrap_checks --out research/results/issue30/aggregates.json`` (~10 min, 2 cores).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from dreamer_gym.leaderboard import aggregate as A
from dreamer_gym.leaderboard.board import build_board, load_results

ROOT = Path(__file__).resolve().parent.parent


def track_matrices(results: list[dict]) -> tuple[dict[str, np.ndarray], str | None, list[tuple[str, str]]]:
    """name -> normalised matrix of every ranked row, the best fixed row, and the neighbouring ranked pairs."""
    board = build_board(results[0]["track"], results)
    mats = {row.name: row.matrix for row in board.rows if row.ranked and row.matrix is not None}
    return mats, board.baseline, [(c.name, c.above) for c in board.comparisons]


def endpoint_table(reps_list: list[int], seeds: list[int]) -> list[dict]:
    out = []
    for track, results in sorted(load_results(ROOT / "leaderboards" / "results").items()):
        mats, baseline, pairs = track_matrices(results)
        cases = [(f"{s.__name__} {n}", s, (m,)) for n, m in mats.items() for s in (A.mean, A.iqm)]
        if baseline is not None:
            cases += [(f"P(improvement) {n}", A.probability_of_improvement, (m, mats[baseline]))
                      for n, m in mats.items() if n != baseline]
        cases += [(f"IQM difference {a} - {b}", A.iqm_difference, (mats[a], mats[b])) for a, b in pairs]
        for reps in reps_list:
            sds = {label: A.endpoint_sd(stat, *ms, reps=reps, seeds=seeds) for label, stat, ms in cases}
            worst = max(sds, key=sds.get)
            out.append({"track": track, "reps": reps, "max_endpoint_sd": round(sds[worst], 5), "worst": worst,
                        "median_endpoint_sd": round(float(np.median(list(sds.values()))), 5), "cases": len(cases)})
            print(out[-1], flush=True)
    return out


def coverage_table(sims: int, reps: int) -> list[dict]:
    results = load_results(ROOT / "leaderboards" / "results")["scienceworld"]
    mats, _, pairs = track_matrices(results)
    out = []
    for population in ("normal", "cells"):
        for kind in ("percentile", "expanded", "t"):
            for label, stat, cases in (("IQM", A.iqm, [(m,) for m in mats.values()]),
                                       ("mean", A.mean, [(m,) for m in mats.values()]),
                                       ("IQM difference of neighbours", A.iqm_difference,
                                        [(mats[a], mats[b]) for a, b in pairs
                                         if not np.array_equal(mats[a], mats[b])])):
                shares = [A.coverage(stat, *ms, sims=sims, reps=reps, population=population, kind=kind, seed=i)
                          for i, ms in enumerate(cases) if any(np.ptp(m, axis=0).any() for m in ms)]
                out.append({"population": population, "interval": kind, "statistic": label,
                            "mean_coverage": round(float(np.mean(shares)), 3),
                            "min": round(float(np.min(shares)), 3), "max": round(float(np.max(shares)), 3),
                            "cases": len(shares), "sims": sims, "reps": reps})
                print(out[-1], flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--reps", type=int, nargs="+", default=[1000, 2000, 5000, 10000, 20000])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--sims", type=int, default=400)
    ap.add_argument("--sim-reps", type=int, default=1000)
    args = ap.parse_args()
    record = {"endpoint_sd": endpoint_table(args.reps, list(range(1, args.seeds + 1))),
              "coverage": coverage_table(args.sims, args.sim_reps)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
