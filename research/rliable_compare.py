"""Our aggregates against rliable's on the same matrices (issue 30, item 3).

rliable 1.2 pins ``arch < 8``, and arch 7.2 fails to import beside our pinned pandas 3, so rliable runs in a
separate environment (``python -m venv /tmp/rlvenv && /tmp/rlvenv/bin/pip install rliable 'pandas<3'``) that this
script calls with the normalised (banks x families) matrix of every ranked row of every committed track. Per row:
IQM and mean with their 95% CIs (rliable: stratified bootstrap, percentile, 50,000 reps; ours: the same percentile
bootstrap, and the board's t interval); per neighbouring pair: the IQM difference with rliable's independent
bootstrap of the two rows against our paired one; P(improvement) over the best fixed row, independent (rliable)
against paired (ours), at 5,000 replicates on both sides (rliable's runs scipy per family per replicate).
``python -m research.rliable_compare --rliable-python /tmp/rlvenv/bin/python
--out research/results/issue30/rliable_compare.json`` (~2 min, 2 cores).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from dreamer_gym.leaderboard import aggregate as A
from dreamer_gym.leaderboard.board import build_board, load_results

ROOT = Path(__file__).resolve().parent.parent
REPS = 50_000
POI_REPS = 5_000  # rliable's P(improvement) runs scipy's Mann-Whitney per family per replicate: 50,000 take hours

# run by the rliable environment's python: reads {"rows": {key: m}, "pairs": {key: [x, y]}} from stdin
RLIABLE = r'''
import json, sys
import numpy as np
from rliable import library as rly, metrics
data = json.load(sys.stdin)
rs = np.random.RandomState(0)
rows = {k: np.array(v) for k, v in data["rows"].items()}
pairs = {k: (np.array(x), np.array(y)) for k, (x, y) in data["pairs"].items()}
point, ci = rly.get_interval_estimates(rows, lambda x: np.array([metrics.aggregate_iqm(x), metrics.aggregate_mean(x)]),
                                       reps=data["reps"], random_state=rs)
out = {"rows": {k: {"iqm": float(point[k][0]), "iqm_ci": ci[k][:, 0].tolist(), "mean": float(point[k][1]),
                    "mean_ci": ci[k][:, 1].tolist()} for k in rows}}
diff = lambda x, y: np.array([metrics.aggregate_iqm(x) - metrics.aggregate_iqm(y)])
dp, dci = rly.get_interval_estimates(pairs, diff, reps=data["reps"], random_state=rs)
print("rows and differences done", file=sys.stderr, flush=True)
pp, pci = rly.get_interval_estimates(pairs, metrics.probability_of_improvement, reps=data["poi_reps"],
                                     random_state=rs)
out["pairs"] = {k: {"iqm_difference": float(dp[k][0]), "iqm_difference_ci": dci[k][:, 0].tolist(),
                    "p_improvement": float(np.squeeze(pp[k])), "p_improvement_ci": np.ravel(pci[k]).tolist()}
                for k in pairs}
json.dump(out, sys.stdout)
'''


def gather() -> tuple[dict[str, np.ndarray], dict[str, tuple[np.ndarray, np.ndarray]], dict[str, str]]:
    """Rows ("track/name") and pairs ("track/a | b": neighbours and each row against the best fixed row)."""
    rows, pairs, kinds = {}, {}, {}
    for track, results in sorted(load_results(ROOT / "leaderboards" / "results").items()):
        board = build_board(track, results)
        mats = {r.name: r.matrix for r in board.rows if r.ranked and r.matrix is not None and r.aggregates}
        rows.update({f"{track}/{n}": m for n, m in mats.items()})
        for c in board.comparisons:
            pairs[f"{track}/{c.name} | {c.above}"] = (mats[c.name], mats[c.above])
            kinds[f"{track}/{c.name} | {c.above}"] = "neighbours"
        for n, m in mats.items():
            if board.baseline is not None and n != board.baseline:
                pairs.setdefault(f"{track}/{n} | {board.baseline}", (m, mats[board.baseline]))
                kinds.setdefault(f"{track}/{n} | {board.baseline}", "vs best fixed")
    return rows, pairs, kinds


def ours(rows: dict, pairs: dict, kinds: dict) -> dict:
    def ci(stat, *ms, kind):  # noqa: ANN001, ANN202
        return list(A.stratified_bootstrap(stat, *ms, reps=REPS, kind=kind))

    out: dict = {"rows": {}, "pairs": {}}
    for k, m in rows.items():
        out["rows"][k] = {"iqm": A.iqm(m), "mean": A.mean(m),
                          **{f"{s}_ci_{kind}": ci(f, m, kind=kind) for s, f in (("iqm", A.iqm), ("mean", A.mean))
                             for kind in ("percentile", "t")}}
    for k, (x, y) in pairs.items():
        out["pairs"][k] = {"kind": kinds[k], "iqm_difference": A.iqm_difference(x, y),
                           "iqm_difference_ci_percentile": ci(A.iqm_difference, x, y, kind="percentile"),
                           "iqm_difference_ci_t": ci(A.iqm_difference, x, y, kind="t"),
                           "p_improvement": A.probability_of_improvement(x, y),
                           "p_improvement_ci_percentile": list(A.stratified_bootstrap(
                               A.probability_of_improvement, x, y, reps=POI_REPS, kind="percentile"))}
    return out


def summary(mine: dict, theirs: dict) -> dict:
    """The largest gaps, per quantity: point estimates, endpoints (same method) and CI widths."""
    def gap(a: list, b: list) -> float:
        return float(np.max(np.abs(np.array(a) - np.array(b))))

    rows = [(mine["rows"][k], theirs["rows"][k]) for k in mine["rows"]]
    pairs = [(mine["pairs"][k], theirs["pairs"][k]) for k in mine["pairs"]]
    width = lambda c: c[1] - c[0]  # noqa: E731
    return {
        "iqm_point_max_gap": max(abs(a["iqm"] - b["iqm"]) for a, b in rows),
        "mean_point_max_gap": max(abs(a["mean"] - b["mean"]) for a, b in rows),
        "iqm_ci_percentile_max_endpoint_gap": max(gap(a["iqm_ci_percentile"], b["iqm_ci"]) for a, b in rows),
        "mean_ci_percentile_max_endpoint_gap": max(gap(a["mean_ci_percentile"], b["mean_ci"]) for a, b in rows),
        "iqm_ci_t_over_rliable_width_median": float(np.median(
            [width(a["iqm_ci_t"]) / width(b["iqm_ci"]) for a, b in rows if width(b["iqm_ci"]) > 0])),
        "p_improvement_point_max_gap": max(abs(a["p_improvement"] - b["p_improvement"]) for a, b in pairs),
        "paired_over_independent_width_median": {
            "iqm_difference": float(np.median([width(a["iqm_difference_ci_percentile"]) / width(b["iqm_difference_ci"])
                                               for a, b in pairs if width(b["iqm_difference_ci"]) > 0])),
            "p_improvement": float(np.median([width(a["p_improvement_ci_percentile"]) / width(b["p_improvement_ci"])
                                              for a, b in pairs if width(b["p_improvement_ci"]) > 0]))},
        "neighbours_separated": {
            "rliable_independent_percentile": sum(not (b["iqm_difference_ci"][0] <= 0 <= b["iqm_difference_ci"][1])
                                                  for a, b in pairs if a["kind"] == "neighbours"),
            "ours_paired_percentile": sum(not (a["iqm_difference_ci_percentile"][0] <= 0
                                               <= a["iqm_difference_ci_percentile"][1])
                                          for a, b in pairs if a["kind"] == "neighbours"),
            "ours_paired_t": sum(not (a["iqm_difference_ci_t"][0] <= 0 <= a["iqm_difference_ci_t"][1])
                                 for a, b in pairs if a["kind"] == "neighbours"),
            "of": sum(a["kind"] == "neighbours" for a, _ in pairs)},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rliable-python", required=True, help="a python with rliable installed (see the docstring)")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    rows, pairs, kinds = gather()
    payload = {"reps": REPS, "poi_reps": POI_REPS, "rows": {k: m.tolist() for k, m in rows.items()},
               "pairs": {k: [x.tolist(), y.tolist()] for k, (x, y) in pairs.items()}}
    done = subprocess.run([args.rliable_python, "-c", RLIABLE], input=json.dumps(payload), stdout=subprocess.PIPE,
                          text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"rliable failed in {args.rliable_python} (its error is above)")
    version = subprocess.run([args.rliable_python, "-c", "import importlib.metadata as m; print(m.version('rliable'),"
                              " m.version('arch'), m.version('pandas'))"], capture_output=True, text=True).stdout.split()
    theirs, mine = json.loads(done.stdout), ours(rows, pairs, kinds)
    record = {"rliable_env": dict(zip(("rliable", "arch", "pandas"), version)), "reps": REPS, "poi_reps": POI_REPS,
              "summary": summary(mine, theirs), "ours": mine, "rliable": theirs}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(record["summary"], indent=1))


if __name__ == "__main__":
    main()
