"""`dreamer-gym leaderboard submit | validate | render`: the board's commands (docs/leaderboard.md)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from dreamer_gym.errors import ConfigError
from dreamer_gym.evaluation.failures import failure_summary
from dreamer_gym.leaderboard.rows import FIXED_RULES, results_path, slug
from dreamer_gym.leaderboard.tracks import is_ranked_track
from dreamer_gym.leaderboard.unranked import why

FIXED = frozenset(FIXED_RULES)


def board_root() -> Path:
    """``leaderboards/`` of the checkout this package runs from (so `validate` finds the references and the
    results from any folder), else ``./leaderboards`` (an installed package: pass the folders)."""
    import dreamer_gym

    root = Path(dreamer_gym.__file__).resolve().parent.parent / "leaderboards"
    return root if root.is_dir() else Path("leaderboards").resolve()


RESULTS_DIR = board_root() / "results"
SUBMISSIONS_DIR = board_root() / "submissions"


def _kind(name: str, given: str | None) -> str:
    from dreamer_gym.leaderboard.runner import REFERENCES

    if given:
        return given
    base = name.split(":", 1)[0]
    return "reference" if base in REFERENCES else "fixed" if base in FIXED else "contender"


def _member_tracks(names: list[str]) -> list[Any]:
    """The tracks ``--track`` names (a shipped or registered name, or a track YAML file), a transfer track as its
    members."""
    from dreamer_gym.leaderboard.tracks import TransferTrack, load_board_track

    out = []
    for name in names:
        track = load_board_track(name)
        if isinstance(track, TransferTrack):
            out.extend(t for _, t in track.tracks())
        else:
            out.append(track)
    return out


def llm_block(consolidator: object) -> dict[str, str] | None:
    """Which model an LLM consolidator ran, on which backend, and how it decoded (only greedy rows rank): its own
    ``llm_info()`` where it declares one, else read off a prompted consolidator's ``llm`` config and
    ``temperature``; None for a consolidator that is not an LLM."""
    info = getattr(consolidator, "llm_info", None)
    if callable(info):
        return {k: str(v) for k, v in info().items()}
    if hasattr(consolidator, "temperature"):
        config = getattr(consolidator, "llm", None)
        return {"backend": str(getattr(config, "backend", "unknown")), "model": str(getattr(config, "model", "unknown")),
                "decoding": "greedy" if float(consolidator.temperature) == 0.0 else "sampled"}
    return None


def this_machine() -> str:
    """The hardware line of a training record when the submitter gives none: this machine's CPUs and GPU."""
    import os

    gpus = ""
    try:
        import torch

        if torch.cuda.is_available():
            gpus = f", {torch.cuda.device_count()} x {torch.cuda.get_device_name(0)}"
    except ImportError:
        pass
    return f"{os.cpu_count()} CPU cores{gpus or ', no GPU'} (the machine the submission ran on)"


def cmd_submit(args: argparse.Namespace) -> int:
    """Run a consolidator on each track (the consolidator in this process, scoring in the reward service)."""
    from dreamer_gym.consolidators import make_consolidator
    from dreamer_gym.leaderboard.submission import build_submission, consolidator_block, dumps, run_for_submission

    from dreamer_gym.leaderboard.rescore_cache import cached_free

    consolidator = make_consolidator(args.consolidator)
    check_installed()
    llm = llm_block(consolidator)
    training = None
    if args.training_run is not None:
        from dreamer_gym.training.logs import training_record

        training = training_record(args.training_run, args.hardware or this_machine())
    block = consolidator_block(args.name or args.consolidator, kind=_kind(args.consolidator, args.kind),
                               link=args.link, config={"consolidator": args.consolidator},
                               trained_on=args.trained_on, llm=llm, training=training)
    runs = []
    for track in _member_tracks(args.track):
        free = cached_free(track, args.cache, {"workers": args.workers})
        runs.append((track, run_for_submission(track, consolidator, name=block["name"], progress=not args.quiet,
                                               **free)))
    data = build_submission(block, runs)
    out = args.out or SUBMISSIONS_DIR / f"{slug(block['name'])}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(dumps(data))
    for track, result in runs:
        print(f"{track.name}: score {result.summary['score']:+.4f}, tokens after {result.summary['tokens_after']:.0f}")
        reasons = [e for record in result.records for e in record.get("episode_errors", ())]
        if reasons:  # episodes that did not run: say which and why, under the line that counts them
            print(failure_summary(reasons, indent="  "))
    print(f"wrote {out}")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    """Check and re-score a submission; write one results file per track; exit 1 with the reason if rejected."""
    import time

    from dreamer_gym.leaderboard.rescore_cache import default_root
    from dreamer_gym.leaderboard.submission import SubmissionError, dumps, load_submission
    from dreamer_gym.leaderboard.validate import submitted_track, validate

    check_installed()
    if not args.file.is_file():
        raise ConfigError(f"no submission file {str(args.file)!r}; write one with `dreamer-gym leaderboard submit`")
    start = time.perf_counter()
    try:
        data = load_submission(args.file)
        extra = track_files(args.track)
        check_rows_free(data, args.out_dir)  # the schema first: then every track it names is known, then references
        for i, block in enumerate(data["tracks"]):
            submitted_track(i, block["track"], extra)
        references = load_references(args.references, args.file, data)
        timings: dict[str, float] = {}
        results = validate(data, extra_tracks=extra, references=references, progress=not args.quiet,
                           workers=args.workers, timings=timings,
                           cache=None if args.no_cache else (args.cache or default_root()),
                           **({"store_path": str(args.store)} if args.store else {}))
    except SubmissionError as exc:
        print(f"rejected: {args.file}: {exc}", file=sys.stderr)
        return 1
    for result in results:
        out = results_path(args.out_dir, result["track"], result["consolidator"]["name"])
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(dumps(result))
        print(f"accepted ({result['tier']}): {result['track']}: score {result['summary']['score']:+.4f} -> {out}"
              + ("" if is_ranked_track(result["track"]) else f" ({why(result['track'])})"))
    print(f"validated in {time.perf_counter() - start:.1f} s (checks {timings['checks_s']:.1f} s, re-score "
          f"{timings.get('rescore_s', 0.0):.1f} s: {timings.get('episodes_played', 0):.0f} episodes played, "
          f"{timings.get('episodes_cached', 0):.0f} from the cache)", file=sys.stderr)
    return 0


def track_files(paths: list[str]) -> dict[str, Any]:
    """``validate --track FILE``: the tracks of submissions made on track files, by name. The submission records
    its track's whole definition (its ``frozen`` block), which validation compares field by field with the file."""
    from dreamer_gym.leaderboard.tracks import Track, load_board_track

    out: dict[str, Any] = {}
    for path in paths:
        track = load_board_track(path)
        if not isinstance(track, Track):
            raise ConfigError(f"--track {path!r} is a transfer track; pass its member tracks' files")
        out[track.name] = track
    return out


def load_references(folder: Path | None, submission: Path, data: dict[str, Any]) -> list[dict[str, Any]]:
    """The reference submissions in ``folder`` and the ones the package ships (all but ``submission`` itself), said
    on stderr per track. ``folder`` None: the board's ``submissions/`` where it exists (a checkout, or
    ``./leaderboards`` beside an installed package). A folder named but missing, or no reference for a track
    ``data`` is on, is a ConfigError: the copy check never runs on nothing."""
    from dreamer_gym.leaderboard.submission import dumps, load_submission, shipped_references

    if folder is not None and not folder.is_dir():
        raise ConfigError(f"no references folder {str(folder)!r}; pass --references DIR (the submissions of the "
                          "reference rows, e.g. leaderboards/submissions of the repository)")
    folder = folder if folder is not None else SUBMISSIONS_DIR
    mine = [(path, load_submission(path)) for path in sorted(folder.glob("*.json"))] if folder.is_dir() else []
    found, seen = [], set()
    for path, ref in (*mine, *shipped_references()):
        text = dumps(ref)  # a copy of a shipped reference in the folder counts once
        if path.resolve() != submission.resolve() and ref.get("consolidator", {}).get("kind") == "reference" \
                and text not in seen:
            seen.add(text)
            found.append((path, ref))
    own_reference = data.get("consolidator", {}).get("kind") == "reference"
    where = f"{folder} and the package's own references" if folder.is_dir() else "the package's own references"
    for block in data.get("tracks", []):
        track = block.get("track") if isinstance(block, dict) else None
        used = [path.name for path, ref in found if any(b.get("track") == track for b in ref["tracks"])]
        if not used and not own_reference:
            raise ConfigError(f"no reference submission for track {track!r} in {where}: the copy check needs one; "
                              f"write it with `dreamer-gym leaderboard submit --consolidator oracle --track "
                              f"{track or 'TRACK'} --out DIR/oracle.json` and pass --references DIR")
        print(f"copy check on track {track!r}: against {used or 'no other reference'} in {where}", file=sys.stderr)
    return [ref for _, ref in found]


def check_rows_free(data: dict[str, Any], results_dir: Path) -> None:
    """Before any re-score: no results file this submission would write holds another submission."""
    from dreamer_gym.leaderboard.rows import builtin_rule, check_row_free
    from dreamer_gym.leaderboard.validate import check_schema, submission_digest

    check_schema(data)
    digest, builtin = submission_digest(data), builtin_rule(data["consolidator"])
    for block in data["tracks"]:
        name = data["consolidator"]["name"]
        check_row_free(results_path(results_dir, block["track"], name), name, digest, builtin)


def cmd_verify(args: argparse.Namespace) -> int:
    """Run an installed consolidator out of process on fresh banks, check and re-score: a verified record."""
    import tempfile
    import time

    from dreamer_gym.leaderboard.rows import check_verified_free
    from dreamer_gym.leaderboard.sandbox import Sandbox
    from dreamer_gym.leaderboard.sandbox_limits import limits_from_args
    from dreamer_gym.leaderboard.submission import SubmissionError, dumps
    from dreamer_gym.leaderboard.tracks import Track, load_board_track
    from dreamer_gym.leaderboard.verify import verify

    check_installed()
    track = load_board_track(args.track)
    if not isinstance(track, Track):
        raise ConfigError(f"verify one track at a time; {args.track!r} is a transfer track (verify its members)")
    name, kind = args.name or args.consolidator, _kind(args.consolidator, args.kind)
    try:  # the row's name and file, before minutes of acquisition: never another run's file
        out = check_verified_free(args.out_dir, track.name, {"name": name, "kind": kind,
                                                             "config": {"consolidator": args.consolidator}})
    except SubmissionError as exc:
        print(f"verification refused: {exc}", file=sys.stderr)
        return 1
    start = time.perf_counter()
    timings: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="dreamer-gym-verify-") as tmp:
        work = args.work_dir or Path(tmp)
        try:
            sandbox = Sandbox(code=tuple(args.code), models=tuple(args.model), limits=limits_from_args(args))
            record = verify(track, args.consolidator, work, seeds=args.seeds, kind=kind, sandbox=sandbox,
                            timeout_s=args.timeout, trained_on=args.trained_on, progress=not args.quiet,
                            workers=args.workers,
                            timings=timings, name=name, **({"regions": args.regions} if args.regions is not None else {}))
        except SubmissionError as exc:
            print(f"verification failed: {exc}", file=sys.stderr)
            return 1
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(dumps(record))
    print(f"verified: {track.name}: score {record['summary']['score']:+.4f} on bank seeds "
          f"{record['verification']['bank_seeds']} -> {out}")
    parts = ", ".join(f"{k[:-2]} {v:.1f} s" for k, v in timings.items() if k.endswith("_s"))
    print(f"verified in {time.perf_counter() - start:.1f} s ({parts})", file=sys.stderr)
    return 0


def cmd_render(args: argparse.Namespace) -> int:
    from dreamer_gym.leaderboard.render import render

    check_installed()
    if not args.results.is_dir():
        raise ConfigError(f"no results folder {str(args.results)!r}; `dreamer-gym leaderboard validate` writes it")
    written = render(args.results, args.out)
    for path in written:
        print(f"wrote {path}")
    return 0


def cmd_columns(args: argparse.Namespace) -> int:
    """Recompute the reported columns of the committed re-scored rows (leaderboard/columns.py)."""
    from dreamer_gym.leaderboard.columns import refresh_columns

    check_installed()
    for folder, what in ((args.results, "results"), (args.submissions, "submissions")):
        if not folder.is_dir():
            raise ConfigError(f"no {what} folder {str(folder)!r}; pass --{what} DIR")
    done = refresh_columns(args.results, args.submissions)
    for path in done.changed:
        print(f"rewrote {path}")
    for path, why in done.skipped:
        print(f"skipped {path}: {why}", file=sys.stderr)
    print(f"{len(done.changed)} rewritten, {len(done.unchanged)} already current, {len(done.skipped)} skipped")
    return 0


def add_parser(sub: Any) -> None:
    p = sub.add_parser("leaderboard", help="submit, validate (re-score) and render the leaderboards (docs/leaderboard.md)")
    lsub = p.add_subparsers(dest="leaderboard_command", required=True)

    s = lsub.add_parser("submit", help="run a consolidator on tracks and write a submission (its committed banks)")
    s.add_argument("--consolidator", required=True, help="registered consolidator name (an entry point works)")
    s.add_argument("--track", nargs="+", required=True, metavar="NAME_OR_FILE",
                   help="track names or track YAML files (transfer: its member tracks); try the loop on `tryout`")
    s.add_argument("--name", default="", help="the row's name (default: --consolidator)")
    s.add_argument("--link", default="", help="where the code or paper is")
    s.add_argument("--kind", choices=("contender", "fixed", "reference"), default=None,
                   help="default: reference for privileged policies, fixed for built-in rules, else contender")
    s.add_argument("--trained-on", nargs="*", default=[], metavar="ENV_ID",
                   help="env ids the policy was trained or tuned on (transfer tracks rank only ScienceWorld-trained ones)")
    s.add_argument("--training-run", type=Path, default=None, metavar="RUN/checkpoint-N",
                   help="the checkpoint's training run: its steps, commits and wall time go on the board beside the row")
    s.add_argument("--hardware", default="", help="what the training ran on (default with --training-run: this "
                   "machine's CPUs and GPU)")
    s.add_argument("--workers", type=int, default=1)
    s.add_argument("--cache", type=Path, default=None,
                   help="folder of the submitter's own per-track evaluation caches (default: none, every episode "
                        "played); a cached episode is the same result as a fresh one, and the board never reads it")
    s.add_argument("--out", type=Path, default=None, help=f"default: {SUBMISSIONS_DIR}/NAME.json")
    s.add_argument("--quiet", action="store_true")
    s.set_defaults(func=cmd_submit)

    v = lsub.add_parser("validate", help="check a submission and re-score its banks; rejects with the reason")
    v.add_argument("file", type=Path)
    v.add_argument("--out-dir", type=Path, default=RESULTS_DIR, help="results files go to OUT_DIR/TRACK/NAME.json")
    v.add_argument("--store", type=Path, default=None, help="SQLite evaluation cache file (beats --cache)")
    v.add_argument("--cache", type=Path, default=None, help="folder of the per-track re-scoring caches (default: "
                   "$DREAMER_GYM_CACHE/rescore; docs/performance.md, 'Re-scoring a track')")
    v.add_argument("--no-cache", action="store_true", help="re-score with an empty in-memory cache (every episode played)")
    v.add_argument("--track", nargs="+", default=[], metavar="FILE",
                   help="the track YAML file(s) the submission was made on, where its track is not shipped (the "
                   "file's definition must be the one the submission records)")
    v.add_argument("--references", type=Path, default=None,
                   help="folder of submissions; those of kind 'reference' are what a contender may not copy (default: "
                   f"{SUBMISSIONS_DIR} where it exists; the package's own references are always read)")
    v.add_argument("--workers", type=int, default=1)
    v.add_argument("--quiet", action="store_true")
    v.set_defaults(func=cmd_validate)

    w = lsub.add_parser("verify", help="run an installed consolidator out of process on banks acquired from fresh "
                        "seeds, then check and re-score (the verified tier)")
    w.add_argument("--consolidator", required=True, help="registered name or entry point")
    w.add_argument("--track", required=True, metavar="NAME_OR_FILE",
                   help="a held-out track (scienceworld), by name or YAML file")
    w.add_argument("--name", default="", help="the row's name (default: --consolidator)")
    w.add_argument("--kind", choices=("contender", "fixed", "reference"), default=None)
    w.add_argument("--trained-on", nargs="*", default=[], metavar="ENV_ID")
    w.add_argument("--seeds", type=int, nargs="+", default=None,
                   help="bank seeds (default: drawn now from the OS's entropy; pass them only to reproduce a run)")
    w.add_argument("--regions", type=int, default=None,
                   help="regions to verify, on fresh banks of all the track's families (default: "
                   "dreamer_gym.leaderboard.verify.DEFAULT_REGIONS; size it with `dreamer-gym power`)")
    w.add_argument("--work-dir", type=Path, default=None, help="keep the fresh pool and submission here")
    w.add_argument("--out-dir", type=Path, default=RESULTS_DIR)
    w.add_argument("--workers", type=int, default=1)
    w.add_argument("--code", type=Path, nargs="+", default=[], metavar="DIR",
                   help="folders of the consolidator's own code, shown read-only in the sandbox and on its PYTHONPATH "
                   "(for a `module:attr` consolidator; never a checkout of this project)")
    w.add_argument("--model", type=Path, nargs="+", default=[], metavar="PATH",
                   help="model files or folders the consolidator loads, shown read-only at their paths (the converted "
                   "models of $DREAMER_GYM_CACHE/models are shown anyway, where any user may read them)")
    w.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help="wall time of the consolidator stage (default: dreamer_gym.leaderboard.verify.default_timeout "
                   "of the regions visited)")
    from dreamer_gym.leaderboard.sandbox_limits import add_limit_flags  # the sandbox's limits, from its dataclass

    add_limit_flags(w)
    w.add_argument("--quiet", action="store_true")
    w.set_defaults(func=cmd_verify)

    c = lsub.add_parser("columns", help="re-judge committed rows: recompute each re-scored results file's grounding, "
                        "reader similarity and needs-review verdict from its submission (scores untouched, no simulator)")
    c.add_argument("--results", type=Path, default=RESULTS_DIR)
    c.add_argument("--submissions", type=Path, default=SUBMISSIONS_DIR,
                   help="the submissions behind the results files (matched by sha256) and the reference rows")
    c.set_defaults(func=cmd_columns)

    r = lsub.add_parser("render", help="write leaderboards/README.md and leaderboards/index.html from results files")
    r.add_argument("--results", type=Path, default=RESULTS_DIR)
    r.add_argument("--out", type=Path, default=Path("leaderboards"))
    r.set_defaults(func=cmd_render)


def check_installed() -> None:
    """The board needs jsonschema (validate) and matplotlib (plots): a clear error where they are missing."""
    missing = []
    for module in ("jsonschema", "matplotlib"):
        try:
            __import__(module)
        except ImportError:
            missing.append(module)
    if missing:
        raise ConfigError(f"the leaderboard needs {missing}: pip install 'dreamer-gym[leaderboard]'")
