"""The verified tier: the board runs the consolidator itself, on banks nobody could have tuned against.

Re-scoring proves a submission's banks score what it claims; it does not prove they were written without
looking at TEST: the simulator, the evaluator and the held-out pool ship with the package. :func:`verify`
closes that: it draws bank seeds *now* (from the OS's entropy, recorded), acquires a fresh pool of the
track's families on them with real acquisition, writes a verification track that differs from the shipped
one only in its pool, runs the installed consolidator (a registered name or an entry point) **in another
process** through ``dreamer-gym leaderboard submit``, and validates what comes back like any submission
(checks and re-score), with the oracle's banks on the same fresh pool as the reference a contender may not
copy. The results file says ``tier: verified`` and records the seeds, the pool's hash and the oracle's score.

Only held-out tracks are verified this way (their pool is a held-out pool by definition); a track scored on
its training id's pool holds out the suite, not the banks.
"""
from __future__ import annotations

import secrets
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from dreamer_gym.errors import ConfigError
from dreamer_gym.leaderboard.submission import SubmissionError, frozen_fields, load_submission
from dreamer_gym.leaderboard.tracks import Track
from dreamer_gym.leaderboard.validate import check_data, compare_claims, rescore, results_record

# fresh bank seeds come from here: far from the seeds any shipped pool was acquired on (0-5, 100-102)
SEED_LOW, SEED_HIGH = 10_000, 2**31 - 1


def draw_seeds(n: int) -> list[int]:
    """``n`` distinct bank seeds from the OS's entropy (not from any seed a submitter could know)."""
    seeds: set[int] = set()
    while len(seeds) < n:
        seeds.add(SEED_LOW + secrets.randbelow(SEED_HIGH - SEED_LOW))
    return sorted(seeds)


def acquire_pool(track: Track, seeds: list[int], out: Path, *, eval_variations: int = 20, gold_variations: int = 20,
                 progress: bool = False) -> tuple[Path, str]:
    """A fresh pool of the track's families on ``seeds`` (real acquisition on the track's suite)."""
    from dreamer_gym.pool import build_pool
    from dreamer_gym.suites import get_suite_spec

    spec = get_suite_spec(track.config().suite)
    suite = spec.make()
    try:
        pool = build_pool(suite, track.families, tuple(seeds), eval_variations, gold_variations, progress=progress)
    finally:
        suite.close()
    out.parent.mkdir(parents=True, exist_ok=True)
    pool.save(out)
    return out, pool.hash


def verification_track(track: Track, pool: Path, pool_hash: str) -> Track:
    """The shipped track with the fresh pool: the same families, banks, episodes, budgets and seed."""
    if not track.held_out:
        raise ConfigError(f"track {track.name!r} is scored on its training id's pool; only held-out tracks have a "
                          "verified tier (docs/leaderboard.md)")
    return replace(track, pool=str(pool), pool_hash=pool_hash)


def write_track(track: Track, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({**frozen_fields(track), "description": track.description}, sort_keys=True))
    return path


def reference_banks(track: Track, *, progress: bool = False, **free: Any) -> list[dict[str, Any]]:
    """The oracle's submission on the fresh banks. The fresh pool file is on this machine, and a consolidator
    that opened it could read its gold paths as the oracle does; a verified run whose banks are the oracle's
    texts is refused like a re-scored one (validate.check_not_a_reference_copy)."""
    import json

    from dreamer_gym.consolidators import make_consolidator
    from dreamer_gym.leaderboard.runner import run_track
    from dreamer_gym.leaderboard.submission import build_submission, consolidator_block, dumps

    result = run_track(track, make_consolidator("oracle"), progress=progress, **free)
    data = build_submission(consolidator_block("oracle", kind="reference"), [(track, result)])
    return [json.loads(dumps(data))]


STAGES = ("acquire", "oracle", "consolidator", "re-score")


class StageReport:
    """Names each stage of a verification on stderr as it starts and ends (with its seconds), so a run of
    several minutes never sits silent between the bars of its stages."""

    def __init__(self, enabled: bool, timings: dict[str, float]) -> None:
        self.enabled = enabled
        self.timings = timings

    def __call__(self, stage: str, what: str):  # noqa: ANN204 - a context manager
        import contextlib

        @contextlib.contextmanager
        def running():  # noqa: ANN202
            index = STAGES.index(stage) + 1
            if self.enabled:
                print(f"[{index}/{len(STAGES)}] {stage}: {what}", file=sys.stderr, flush=True)
            clock = time.perf_counter()
            yield
            self.timings[f"{stage.replace('-', '')}_s"] = seconds = time.perf_counter() - clock
            if self.enabled:
                print(f"[{index}/{len(STAGES)}] {stage}: done in {seconds:.0f} s", file=sys.stderr, flush=True)

        return running()


def _wait(process: subprocess.Popen, timeout_s: float, progress: bool, label: str) -> None:
    """Wait for ``process``, ticking a bar of elapsed seconds (the child runs quiet: its output is kept for
    the error message)."""
    from tqdm.auto import tqdm

    clock = time.perf_counter()
    with tqdm(desc=label, unit="s", disable=not progress, bar_format="{desc}: {elapsed} elapsed") as bar:
        while process.poll() is None:
            if time.perf_counter() - clock > timeout_s:
                process.kill()
                raise SubmissionError(f"the consolidator ran past {timeout_s:.0f} s and was stopped")
            time.sleep(1.0)
            bar.update(1)


def run_submit(consolidator: str, track_file: Path, out: Path, *, kind: str | None = None,
               trained_on: list[str] | None = None, timeout_s: float = 3600.0, progress: bool = False) -> Path:
    """``dreamer-gym leaderboard submit`` in a child process (the consolidator never shares the board's)."""
    cmd = [sys.executable, "-m", "dreamer_gym.cli", "leaderboard", "submit", "--consolidator", consolidator,
           "--track", str(track_file), "--out", str(out), "--quiet"]
    if kind:
        cmd += ["--kind", kind]
    if trained_on:
        cmd += ["--trained-on", *trained_on]
    with tempfile.TemporaryFile("w+") as stderr:
        process = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=stderr, text=True)
        _wait(process, timeout_s, progress, f"consolidator {consolidator!r} in its own process")
        if process.returncode != 0:
            stderr.seek(0)
            raise SubmissionError(f"the consolidator {consolidator!r} failed in its process (exit {process.returncode}): "
                                  f"{stderr.read().strip()[-2000:]}")
    return out


def verify(track: Track, consolidator: str, work_dir: Path, *, seeds: list[int] | None = None,
           kind: str | None = None, trained_on: list[str] | None = None, eval_variations: int = 20,
           gold_variations: int = 20, progress: bool = False, timings: dict[str, float] | None = None,
           **free: Any) -> dict[str, Any]:
    """Run ``consolidator`` on fresh banks of ``track`` out of process, check and re-score; a results record
    of tier ``verified``. ``seeds`` default to :func:`draw_seeds` (one per bank of the track)."""
    source = "given (a re-run of an earlier verification)" if seeds is not None else "drawn at verification (OS entropy)"
    seeds = sorted(seeds) if seeds is not None else draw_seeds(len(track.banks))
    if len(seeds) != len(track.banks):
        raise ConfigError(f"track {track.name!r} has {len(track.banks)} banks; got {len(seeds)} seeds")
    stage = StageReport(progress, {} if timings is None else timings)
    with stage("acquire", f"fresh banks of {len(track.families)} families on bank seeds {seeds} (real acquisition)"):
        pool_path, pool_hash = acquire_pool(track, seeds, work_dir / "pool.json.gz", eval_variations=eval_variations,
                                            gold_variations=gold_variations, progress=progress)
    fresh = verification_track(track, pool_path.resolve(), pool_hash)
    track_file = write_track(fresh, work_dir / f"{track.name}.yaml")
    with stage("oracle", "the oracle's banks on the fresh pool (the reference a contender may not copy)"):
        references = reference_banks(fresh, progress=progress, **free)
    with stage("consolidator", f"{consolidator!r} in its own process, on the fresh track"):  # start, run, its service
        submission_file = run_submit(consolidator, track_file, work_dir / "submission.json", kind=kind,
                                     trained_on=trained_on, progress=progress)
    with stage("re-score", "the submission's checks, then its banks re-scored on TEST episodes"):
        data = load_submission(submission_file)
        [checked] = check_data(data, {fresh.name: fresh}, references=references)
        records = rescore(fresh, checked.block, progress=progress, **free)
        compare_claims(0, checked.block, records)
    verification = {"bank_seeds": seeds, "pool_hash": pool_hash, "eval_variations": eval_variations,
                    "oracle_score": references[0]["tracks"][0]["claimed"]["score"],
                    "gold_variations": gold_variations, "seed_source": source}
    return results_record(data, fresh, records, "verified", verification, references=references)
