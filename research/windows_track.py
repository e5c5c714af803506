"""The `scienceworld-windows` track (issue 40, item 5): its region list, its pilot and its sizing.

Why a region list: a pool cut into time windows has other windows in every bank, so ``families x banks`` names no
region; the track lists a seeded sample of the held-out pool's windows, ``per_bank`` from every bank (every bank
represented, none dominating). Why a pilot: the size a track needs follows from the variance of paired differences
of real rows on its TEST episodes, so a few rows (the anchors ``empty`` and ``oracle``, ``keep-all`` and two op
rules) run on a small region list, and the paired bootstrap of the board (the window cells of
:class:`~dreamer_gym.leaderboard.aggregate.Normaliser`) is asked how many windows bring the IQM MDD to the target.

    python -m research.windows_track regions --per-bank 1 --seed 0 --out research/tracks/windows-pilot.yaml
    nice -n 5 python -m research.windows_track pilot research/tracks/windows-pilot.yaml \\
        --out research/results/issue40/windows-track-pilot
    python -m research.windows_track size research/results/issue40/windows-track-pilot
"""
from __future__ import annotations

import argparse
import itertools
import json
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from dreamer_gym.contract import ids
from dreamer_gym.leaderboard.aggregate import Normaliser
from dreamer_gym.leaderboard.tracks import PROTOCOL_VERSION, Track, load_track
from dreamer_gym.pool import load_pool
from dreamer_gym.stats import Strata, iqm_difference, mdd, mean_difference, paired_se

ENV_ID = "MemoryConsolidation-ScienceWorldWindows-v1"
POOL = "scienceworld-windows-heldout-r3-v1"
ANCHORS = ("empty", "oracle")
PILOT_ROWS = ("empty", "oracle", "keep-all", "rule:merge-all", "rule:procedures-only")
TARGET = 0.05  # the IQM MDD (normalised, 80% power, 5% two-sided) the track is sized to
TRACK_SEED = 20261207
HEADER = """\
# The ScienceWorld windows track (DRAFT, protocol {protocol}: loads with load_track(path, draft=True) until the lead
# ships protocol 4 with every row re-run; then it moves to dreamer_gym/data/tracks/). Frozen: a change is a new
# protocol version, never an edit. The kind of region the learners train on (ScienceWorldWindows-v1: time windows of
# an agent's interleaved sessions, 4 sessions a window, stride 2, with the 3 older entries each episode retrieved),
# held out three ways: the held-out topics (identify-life-stages-1, lifespan-*), banks on seeds no training pool
# uses (scienceworld-windows-heldout-v1: 40 banks, seeds 600-639, interleaved) and TEST variations. A window's
# 20 in-family episodes are drawn from its own tasks in the proportions the agent met them, so its regions are
# listed (up to {per_bank} window(s) from every bank, a seeded sample: research/windows_track.py). Normalised per
# episode: minus its family's empty mean, over one track-wide oracle - empty gap (empty = 0 in every family,
# oracle = 1 over the track's episodes; docs/leaderboard.md, "The scienceworld-windows track").
{mdd_note}
# Built by: python -m research.windows_track regions --per-bank {per_bank} --seed {seed} --out THIS_FILE
"""


def sample_regions(pool: Any, per_bank: int, seed: int) -> list[tuple[int, str]]:
    """``per_bank`` windows of every bank (all of a bank with fewer), drawn without replacement from a generator
    seeded per bank, in (bank, time) order: a bank's draw does not move when another bank's windows do."""
    out = []
    for bank in range(len(pool.banks)):
        keys = pool.region_keys(bank)
        picks = np.random.default_rng([seed, bank]).choice(len(keys), size=min(per_bank, len(keys)), replace=False)
        out.extend((bank, keys[i]) for i in sorted(picks))
    return out


def track_data(regions: Sequence[tuple[int, str]], families: Sequence[str], mdd_value: float | None,
               name: str = "scienceworld-windows") -> dict[str, Any]:
    """The track file's mapping: the id's reward definition and budgets recorded as the `scienceworld` track
    records them, on the held-out window pool, with the listed regions."""
    base = load_track("scienceworld").data()
    pool = load_pool(POOL)
    defined = ids.REGISTERED[ENV_ID]
    data = {**base, "name": name, "protocol_version": PROTOCOL_VERSION + 1,
            "description": "Memory consolidation of time windows (the regions the learners train on) on "
                           "ScienceWorld topics and banks the training ids never show.",
            "env_id": ENV_ID, "pool": POOL, "pool_hash": pool.hash, "families": sorted(families),
            "banks": sorted({b for b, _ in regions}), "regions": [[b, k] for b, k in regions],
            "seed": TRACK_SEED, "mdd": mdd_value}
    for key in ("eval_in_family", "eval_other"):
        data[key] = defined.get(key, data[key])
    order = ["name", "protocol_version", "description", "env_id", "pool", "pool_hash", "split", "families", "banks",
             "regions"]
    return {**{k: data[k] for k in order}, **{k: v for k, v in data.items() if k not in order}}


def write_track(path: Path, per_bank: int, seed: int, mdd_value: float | None, mdd_note: str,
                name: str = "scienceworld-windows") -> Track:
    """Sample the regions, write the track file (checked by loading it back, pool included)."""
    pool = load_pool(POOL)
    regions = sample_regions(pool, per_bank, seed)
    data = track_data(regions, pool.families, mdd_value, name)
    body = yaml.safe_dump({k: v for k, v in data.items() if k != "regions"}, sort_keys=False, width=10_000,
                          default_flow_style=None)
    listed = "regions:\n" + "".join(f"- [{b}, {k}]\n" for b, k in regions)
    head, _, tail = body.partition("seed:")
    path.parent.mkdir(parents=True, exist_ok=True)
    note = "\n".join(f"# {line}" for line in textwrap.wrap(f"`mdd`: {mdd_note}", 112, break_on_hyphens=False))
    path.write_text(HEADER.format(protocol=PROTOCOL_VERSION + 1, per_bank=per_bank, seed=seed, mdd_note=note)
                    + head + listed + "seed:" + tail)
    track = load_track(path, draft=True)
    assert isinstance(track, Track)
    track.check_pool(pool)
    return track


def run_pilot(track_path: Path, out: Path, rows: Sequence[str], workers: int = 1) -> dict[str, float]:
    """Each row on the track (the board's runner, a real reward service, the re-scoring cache shared by the rows:
    the before side is played once); one results file a row, and the wall time of each."""
    from dreamer_gym.consolidators import make_consolidator
    from dreamer_gym.leaderboard.rescore_cache import cached_free, default_root
    from dreamer_gym.leaderboard.runner import run_track

    track = load_track(track_path, draft=True)
    assert isinstance(track, Track)
    out.mkdir(parents=True, exist_ok=True)
    times = {}
    for row in rows:
        path = out / f"{row.replace(':', '_')}.json"
        if path.exists():
            continue
        start = time.perf_counter()
        result = run_track(track, make_consolidator(row), name=row, progress=False,
                           **cached_free(track, default_root(), {"workers": workers}))
        times[row] = time.perf_counter() - start
        path.write_text(json.dumps({**result.to_dict(), "wall_s": times[row]}, indent=1))
        print(f"{row}: score {result.summary['score']:+.4f} in {times[row]:.0f} s", flush=True)
    return times


def load_rows(out: Path) -> dict[str, dict[str, Any]]:
    return {json.loads(p.read_text())["consolidator"]: json.loads(p.read_text()) for p in sorted(out.glob("*.json"))
            if p.name != "sizing.json"}


def size(out: Path, sizes: Sequence[int], reps: int = 2000) -> dict[str, Any]:
    """Every pair of the pilot's rows: the IQM and mean MDD at the pilot's windows, and the IQM MDD at ``sizes``
    windows (the paired crossed bootstrap resampling that many windows: the same windows' spread, a bigger
    sample); the size each pair needs for :data:`TARGET`, and the median pair's."""
    rows = load_rows(out)
    norm = Normaliser.from_results(rows["empty"], rows["oracle"])
    cells = {name: norm.cells(r) for name, r in rows.items()}
    n = next(iter(cells.values())).banks
    pairs = []
    for a, b in itertools.combinations(sorted(cells), 2):
        if {a, b} == set(ANCHORS):
            continue
        x, y = cells[a], cells[b]
        d = x.matrix() - y.matrix()
        at = {int(k): mdd(paired_se(x, y, iqm_difference, reps=reps, banks=k)) for k in sizes}
        need = next((k for k in sorted(at) if at[k] <= TARGET), None)
        # the track reading: the track's own TEST episodes fixed, windows alone resampled (what the scienceworld
        # track was sized for; docs/power.md)
        xw, yw = Strata.from_matrix(x.matrix()), Strata.from_matrix(y.matrix())
        at_w = {int(k): mdd(paired_se(xw, yw, iqm_difference, reps=reps, banks=k)) for k in sizes}
        need_w = next((k for k in sorted(at_w) if at_w[k] <= TARGET), None)
        pairs.append({"pair": f"{a} - {b}", "iqm_difference": float(iqm_difference(x.matrix(), y.matrix())),
                      "mean_difference": float(mean_difference(x.matrix(), y.matrix())),
                      "spread": float(np.nanstd(d, ddof=1)),
                      "mdd_iqm": mdd(paired_se(x, y, iqm_difference, reps=reps)),
                      "mdd_mean": mdd(paired_se(x, y, mean_difference, reps=reps)),
                      "mdd_iqm_at": at, "windows_needed": need,
                      "mdd_iqm_windows_alone_at": at_w, "windows_needed_windows_alone": need_w})
    ranked = sorted(pairs, key=lambda p: p["spread"])
    median = ranked[len(ranked) // 2]  # of an even count, the larger middle one (docs/power.md's yardstick)
    walls = {name: r.get("wall_s") for name, r in rows.items()}
    episodes = {name: sum(len(rec["episodes"]) for rec in r["records"]) for name, r in rows.items()}
    return {"windows": n, "anchors": {"empty": norm.empty, "oracle": norm.oracle, "flagged": list(norm.flagged)},
            "distinct_test_episodes": int(next(iter(cells.values())).values[0].shape[1]),
            "pairs": pairs, "median_pair": median["pair"], "median_mdd_iqm_at": median["mdd_iqm_at"],
            "median_windows_needed": median["windows_needed"],
            "median_mdd_iqm_windows_alone_at": median["mdd_iqm_windows_alone_at"],
            "median_windows_needed_windows_alone": median["windows_needed_windows_alone"], "wall_s": walls, "episodes_played": episodes,
            "reps": reps, "target": TARGET}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("regions")
    r.add_argument("--per-bank", type=int, default=1)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--name", default="scienceworld-windows")
    r.add_argument("--mdd", type=float, default=None)
    r.add_argument("--mdd-note", default="not sized yet")
    r.add_argument("--out", type=Path, required=True)
    q = sub.add_parser("pilot")
    q.add_argument("track", type=Path)
    q.add_argument("--out", type=Path, required=True)
    q.add_argument("--rows", nargs="+", default=list(PILOT_ROWS))
    q.add_argument("--workers", type=int, default=1)
    s = sub.add_parser("size")
    s.add_argument("out", type=Path)
    s.add_argument("--sizes", type=int, nargs="+", default=[20, 40, 80, 120, 160, 200, 240, 320, 400, 497])
    s.add_argument("--reps", type=int, default=2000)
    args = p.parse_args(argv)
    if args.cmd == "regions":
        track = write_track(args.out, args.per_bank, args.seed, args.mdd, args.mdd_note, args.name)
        print(f"{args.out}: {len(track.regions())} windows of {len(track.banks)} banks")
    elif args.cmd == "pilot":
        run_pilot(args.track, args.out, args.rows, args.workers)
    else:
        record = size(args.out, args.sizes, args.reps)
        (args.out / "sizing.json").write_text(json.dumps(record, indent=1))
        print(json.dumps({k: v for k, v in record.items() if k != "pairs"}, indent=1))
        for pair in record["pairs"]:
            print(f"{pair['pair']}: IQM diff {pair['iqm_difference']:+.3f}, MDD IQM {pair['mdd_iqm']:.3f}, "
                  f"needs {pair['windows_needed']} (windows alone: {pair['windows_needed_windows_alone']}); at sizes "
                  f"{pair['mdd_iqm_at']} / {pair['mdd_iqm_windows_alone_at']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
