"""How many fresh banks a verification needs (issue 30, item 2): the gap between a consolidator's re-scored row and
its verified run that a verification of ``k`` fresh banks detects at 80% power.

A verified run scores the same consolidator on *other* banks (drawn at verification), so the comparison is
unpaired: its SE is that of the row's track mean on ``k`` banks plus that of the row on the track's ``n`` banks,
``sqrt(mean_f(s_f^2) / F * (1/k + 1/n))``, where ``s_f`` is the spread (sd) over banks of the row's normalised
in-family score in family ``f`` (the board's measure; flagged families left out). Gap = 2.80 x SE (two-sided 5%,
80% power). The TEST variations are redrawn too where a family has more than the track plays; that adds variance
this figure leaves out, so read it as a lower bound.

    python -m research.verify_sizing leaderboards/results scienceworld --banks 3 5 10 20 40
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from dreamer_gym.leaderboard.aggregate import Normaliser
from dreamer_gym.leaderboard.board import load_results
from dreamer_gym.studies.track_power import mdd


def gaps(results_dir: Path, track: str, banks: list[int]) -> dict[str, dict[str, float]]:
    """Row name -> {k: detectable gap (normalised) for a verification of k fresh banks}."""
    results = [r for r in load_results(results_dir)[track] if r["tier"] == "re-scored"]
    builtin = {r["builtin"]: r for r in results if r.get("builtin")}
    norm = Normaliser.from_results(builtin["empty"], builtin["oracle"])
    out = {}
    for r in results:
        if r["consolidator"]["kind"] == "reference" or r.get("builtin") == "empty":
            continue
        m, _ = norm.matrix(r)  # banks x usable families
        n, f = m.shape
        s2 = float(np.mean(np.nanvar(m, axis=0, ddof=1)))
        out[r["consolidator"]["name"]] = {"bank_sd": float(np.sqrt(s2)),
                                          **{str(k): mdd(float(np.sqrt(s2 / f * (1 / k + 1 / n)))) for k in banks}}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("track")
    parser.add_argument("--banks", type=int, nargs="+", default=[3, 5, 10, 20, 40])
    args = parser.parse_args()
    table = gaps(args.results, args.track, args.banks)
    print(json.dumps(table, indent=1))
    cols = [str(k) for k in args.banks]
    print("| row | bank sd | " + " | ".join(f"gap at {k} banks" for k in cols) + " |")
    print("|---|---|" + "---|" * len(cols))
    for name, row in sorted(table.items()):
        print(f"| {name} | {row['bank_sd']:.3f} | " + " | ".join(f"{row[k]:.3f}" for k in cols) + " |")
    median = {k: float(np.median([row[k] for row in table.values()])) for k in cols}
    print("median gap: " + ", ".join(f"{k} banks {v:.3f}" for k, v in median.items()))


if __name__ == "__main__":
    main()
