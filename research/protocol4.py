"""Protocol 4's rows before it ships (issue 40, item 1).

A protocol bump re-runs every row of every track on the new ids, which takes many hours of both cores; the board
must keep ranking protocol 3 until every row is there. So each row of a draft track (``load_track(path,
draft=True)``) is run here by the board's own runner on the real reward service, into a staging folder shaped like
an archive: ``tracks/TRACK.yaml`` (the draft) and ``results/TRACK/ROW.json`` (tier ``"draft"``, never read by a
board), with each row's committed banks beside it in ``commits/TRACK/ROW.json.gz``. The track study reads the
folder as it reads an archive::

    nice -n 10 python -m research.protocol4 run research/tracks/scienceworld-v4.yaml \\
        --out research/results/issue40/protocol4 --rows empty oracle keep-all rule:merge-all
    dreamer-gym learnability --track scienceworld --archive research/results/issue40/protocol4

Every episode a row plays goes into the re-scoring cache (``dreamer_gym.leaderboard.rescore_cache``), so when
protocol 4 ships, submitting and validating the same rules for real replays nothing but their consolidation, as
long as the episode code is unchanged since (the cache is named by a fingerprint of it; an edit gives a cold cache).
"""
from __future__ import annotations

import argparse
import gzip
import json
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dreamer_gym.leaderboard.tracks import Track, load_track

ANCHORS = ("empty", "oracle")
REFERENCES = ("oracle",)  # privileged: reads the TEST episodes' gold paths


def row_file(out: Path, track: str, row: str) -> Path:
    return out / "results" / track / f"{row.replace(':', '-')}.json"


def as_draft_row(result: dict[str, Any], track: Track, row: str, wall_s: float) -> dict[str, Any]:
    """A run's result in the shape of a board results file, marked ``tier: draft``."""
    from dreamer_gym.studies.track_learnability import RULE_ROWS

    return {"track": track.name, "protocol_version": track.protocol_version, "tier": "draft",
            "builtin": row if row in (*RULE_ROWS, *ANCHORS) else None,
            "consolidator": {"name": row, "config": {"consolidator": row}, "link": "", "trained_on": [],
                             "kind": "reference" if row in REFERENCES else "fixed"},
            "env_id": track.env_id, "records": result["records"], "summary": result["summary"], "wall_s": wall_s}


def run_rows(track_path: Path, out: Path, rows: Sequence[str], workers: int = 1) -> dict[str, float]:
    """Each missing row on the draft track (resumable: a row whose file exists is skipped); wall seconds per row."""
    from dreamer_gym.consolidators import make_consolidator
    from dreamer_gym.leaderboard.rescore_cache import cached_free, default_root
    from dreamer_gym.leaderboard.runner import run_track

    track = load_track(track_path, draft=True)
    assert isinstance(track, Track)
    (out / "tracks").mkdir(parents=True, exist_ok=True)
    staged = out / "tracks" / f"{track.name}.yaml"
    if not staged.exists():
        shutil.copyfile(track_path, staged)
    elif staged.read_bytes() != Path(track_path).read_bytes():
        raise SystemExit(f"{staged} differs from {track_path}: a staging folder holds one draft per track")
    times = {}
    for row in rows:
        path = row_file(out, track.name, row)
        if path.exists():
            continue
        start = time.perf_counter()
        result = run_track(track, make_consolidator(row), name=row, progress=False,
                           **cached_free(track, default_root(), {"workers": workers})).to_dict()
        times[row] = time.perf_counter() - start
        commits = out / "commits" / track.name / f"{path.stem}.json.gz"
        commits.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(commits, "wt") as f:
            json.dump(result["commits"], f)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(as_draft_row(result, track, row, times[row]), indent=1))
        print(f"{track.name} {row}: score {result['summary']['score']:+.4f} in {times[row]:.0f} s", flush=True)
    return times


def as_submission(out: Path, track: str, row: str) -> dict[str, Any]:
    """A staged row's committed banks in the shape the board's columns read (a submission's track block)."""
    data = json.loads(row_file(out, track, row).read_text())
    with gzip.open(out / "commits" / track / f"{row_file(out, track, row).stem}.json.gz", "rt") as f:
        regions = json.load(f)
    return {"consolidator": data["consolidator"], "tracks": [{"track": track, "regions": regions}]}


def columns(out: Path, track_name: str, rows: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The board's reported columns of staged rows (``grounding``, ``reader_similarity`` against the oracle's
    banks, the ``review`` verdict), as ``leaderboard validate`` would write them; pure text, no simulator."""
    from dreamer_gym.leaderboard.validate import reported_columns

    track = load_track(out / "tracks" / f"{track_name}.yaml", draft=True)
    assert isinstance(track, Track)
    references = [as_submission(out, track_name, r) for r in REFERENCES if row_file(out, track_name, r).exists()]
    found = {}
    for row in rows:
        found[row] = reported_columns(as_submission(out, track_name, row), track, references)
        (out / "columns" / track_name).mkdir(parents=True, exist_ok=True)
        (out / "columns" / track_name / f"{row_file(out, track_name, row).stem}.json").write_text(
            json.dumps(found[row], indent=1))
    return found


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("track", type=Path)
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--rows", nargs="+", required=True)
    r.add_argument("--workers", type=int, default=1)
    c = sub.add_parser("columns")
    c.add_argument("track_name")
    c.add_argument("--out", type=Path, required=True)
    c.add_argument("--rows", nargs="+", required=True)
    args = p.parse_args(argv)
    if args.cmd == "run":
        run_rows(args.track, args.out, args.rows, args.workers)
    else:
        for row, found in columns(args.out, args.track_name, args.rows).items():
            print(row, json.dumps({k: v for k, v in found.items() if k != "review"})[:600], flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
