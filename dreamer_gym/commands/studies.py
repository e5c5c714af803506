"""``validity``, ``power`` and ``learnability``: the studies of :mod:`dreamer_gym.studies` from the command line.
Their flags are generated from each study's config dataclass; ``--track`` takes a track's name or its YAML file."""
from __future__ import annotations

import argparse
from pathlib import Path

from dreamer_gym.cli_args import add_dataclass_arguments, dataclass_kwargs
from dreamer_gym.commands.flags import (
    ENV_HELP,
    ENV_SKIP,
    add_env_flags,
    config_flag,
    deprecated,
    env_kwargs,
    families_arg,
    families_flag,
    track_name,
)

# ConsolidationConfig fields the validity study sets itself (its own episodes, none of other families, its workers)
VALIDITY_ENV_SKIP: tuple[str, ...] = (*ENV_SKIP, "eval_in_family", "eval_other", "workers")
VALIDITY_SKIP: tuple[str, ...] = ("env_id", "families", "env_kwargs")  # ValidityConfig: --env, --families
POWER_SKIP: tuple[str, ...] = ("env_id", "families")  # PowerConfig: --env, --families
LEARNABILITY_SKIP: tuple[str, ...] = ("env_id", "families")  # LearnabilityConfig: --env, --families
TRACK_METAVAR = "NAME|FILE"


def add_parsers(sub: argparse._SubParsersAction) -> None:
    from dreamer_gym.studies.learnability import LearnabilityConfig
    from dreamer_gym.studies.power import PowerConfig
    from dreamer_gym.studies.track_power import TrackPowerConfig
    from dreamer_gym.studies.validity import ValidityConfig

    p = sub.add_parser("validity", help="the reward-validity study (paired bootstrap CIs)")
    config_flag(p, "validity")
    p.add_argument("--env", default="MemoryConsolidation-ScienceWorld-v0", help=ENV_HELP)
    families_flag(p)
    g = p.add_argument_group("study (ValidityConfig fields)")
    add_dataclass_arguments(g, ValidityConfig, skip=VALIDITY_SKIP, dest_prefix="study.")
    deprecated(p, "--episodes", "study.episodes_per_family", int)
    add_env_flags(p, VALIDITY_ENV_SKIP)
    p.add_argument("--out", type=Path, default=Path("runs/validity"), help="output folder (default: runs/validity)")
    p.add_argument("--strict", action="store_true", help="exit 1 if an expected comparison fails")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=cmd_validity)

    p = sub.add_parser("power", help="the reward's noise and the commits a GRPO group needs (registered id as is); "
                       "with --track: a track's minimum detectable difference and the size that reaches a target")
    p.add_argument("--env", default="MemoryConsolidation-ScienceWorld-v0", help=ENV_HELP)
    families_flag(p)
    g = p.add_argument_group("study (PowerConfig fields)")
    add_dataclass_arguments(g, PowerConfig, skip=POWER_SKIP, dest_prefix="power.")
    g = p.add_argument_group("track power (--track; TrackPowerConfig fields, docs/power.md)")
    g.add_argument("--track", nargs="+", type=track_arg, default=None, metavar=TRACK_METAVAR,
                   help="instead of the reward study: each track's MDD on its committed results, and its sizing "
                   "table (a track's name or its YAML file)")
    g.add_argument("--results", type=Path, default=None, help="results folder (default: the checkout's "
                   "leaderboards/results)")
    add_dataclass_arguments(g, TrackPowerConfig, dest_prefix="track_power.")
    p.add_argument("--out", type=Path, default=None, help="the JSON record (default: runs/power.json; with --track, "
                   "runs/track-power-TRACKS.json)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=cmd_power)

    p = sub.add_parser("learnability", help="does the best fixed rule depend on the region? (cross-fitted gap, CI)")
    p.add_argument("--env", default="MemoryConsolidation-ScienceWorld-v1", help=ENV_HELP)
    families_flag(p)
    p.add_argument("--track", type=track_arg, default="", metavar=TRACK_METAVAR,
                   help="study a held-out track's committed rows instead of running the env (a track's name or its "
                   "YAML file): its rule rows cross-fitted on --draws disjoint folds of its TEST episodes, and its "
                   "trained rows read against them (input dependence, paired CIs); --rules, --env and --workers do "
                   "not apply")
    p.add_argument("--results", type=Path, default=None, help="with --track: the results folder (default: the board's)")
    p.add_argument("--archive", type=Path, default=None, metavar="leaderboards/archive/protocol-N",
                   help="with --track: an archived protocol's track and rows (the before of a protocol bump)")
    g = p.add_argument_group("study (LearnabilityConfig fields)")
    add_dataclass_arguments(g, LearnabilityConfig, skip=LEARNABILITY_SKIP, dest_prefix="learnability.")
    p.add_argument("--out", type=Path, default=Path("runs/learnability"),
                   help="output folder (default: runs/learnability); each commit's record is appended to "
                   "OUT/records.jsonl as it finishes, and a rerun of the same study resumes from it")
    p.add_argument("--max-jobs", type=int, default=None, metavar="N",
                   help="run at most N commits not yet in OUT/records.jsonl, then stop (rerun to go on)")
    p.add_argument("--summarise-only", action="store_true",
                   help="run nothing: write the tables from OUT/records.jsonl as it stands (labelled partial where "
                   "regions are missing); the study is the log's, --fold-by and --bootstrap-resamples apply")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=cmd_learnability)


def track_arg(value: str) -> str:
    """``--track``'s type: :func:`~dreamer_gym.commands.flags.track_name`, its error one argparse line."""
    from dreamer_gym.errors import ConfigError

    try:
        return track_name(value)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def cmd_validity(args: argparse.Namespace) -> int:
    from dreamer_gym.studies.validity import ValidityConfig, run, to_markdown

    study = dataclass_kwargs(args, ValidityConfig, skip=VALIDITY_SKIP, dest_prefix="study.")
    config = ValidityConfig(env_id=args.env, families=families_arg(args),
                            env_kwargs=env_kwargs(args, VALIDITY_ENV_SKIP), **study)
    summary = run(config, args.out, progress=not args.quiet)
    print(to_markdown(summary, config))
    failed = [c for c in summary["comparisons"] if not c["holds"]]
    return 1 if failed and args.strict else 0


def cmd_power(args: argparse.Namespace) -> int:
    if args.track:
        return cmd_track_power(args)
    from dreamer_gym.studies.power import PowerConfig, run, to_markdown

    out = args.out or Path("runs/power.json")
    study = dataclass_kwargs(args, PowerConfig, skip=POWER_SKIP, dest_prefix="power.")
    config = PowerConfig(env_id=args.env, families=families_arg(args), **study)
    print(to_markdown(run(config, out, progress=not args.quiet)))
    print(f"wrote {out}")
    return 0


def cmd_track_power(args: argparse.Namespace) -> int:
    """``power --track NAME|FILE...``: each track's MDD on its committed results and the sizing table."""
    from dreamer_gym.studies.track_power import TrackPowerConfig, run, to_markdown

    out = args.out or Path(f"runs/track-power-{'-'.join(args.track)}.json")
    config = TrackPowerConfig(**dataclass_kwargs(args, TrackPowerConfig, dest_prefix="track_power."))
    records = run(args.track, args.results, config, out, progress=not args.quiet)
    print("\n".join(to_markdown(r) for r in records.values()))
    print(f"wrote {out}")
    return 0


def cmd_learnability(args: argparse.Namespace) -> int:
    from dreamer_gym.studies.learnability import LearnabilityConfig, run, summarise_log, to_markdown

    if args.track:
        return cmd_track_learnability(args)
    study = dataclass_kwargs(args, LearnabilityConfig, skip=LEARNABILITY_SKIP, dest_prefix="learnability.")
    if args.summarise_only:
        given = [*study, *(["families"] if args.families else [])]
        summary = summarise_log(args.out, LearnabilityConfig(families=families_arg(args), **study), given)
    else:
        config = LearnabilityConfig(env_id=args.env, families=families_arg(args), **study)
        summary = run(config, args.out, progress=not args.quiet, max_jobs=args.max_jobs)
        if not summary.get("regions"):
            p = summary["progress"]
            print(f"{p['records']} of {p['jobs']} commits done ({p['regions']} of {p['of_regions']} regions) in "
                  f"{args.out}/records.jsonl: rerun the same command to go on, or add --summarise-only for the tables "
                  "so far")
            return 0
    print(to_markdown(summary))
    print(f"wrote {args.out}/learnability.json and learnability.md")
    return 0


def cmd_track_learnability(args: argparse.Namespace) -> int:
    """``learnability --track NAME|FILE``: the study on a track's committed rows (folds of its TEST episodes)."""
    from dreamer_gym.studies import track_learnability as tl
    from dreamer_gym.studies.learnability import LearnabilityConfig

    study = {**{f: LearnabilityConfig.__dataclass_fields__[f].default for f in ("draws", "seed", "bootstrap_resamples")},
             **dataclass_kwargs(args, LearnabilityConfig, skip=LEARNABILITY_SKIP, dest_prefix="learnability.")}
    config = tl.TrackLearnabilityConfig(track=args.track, folds=study["draws"], seed=study["seed"],
                                        bootstrap_resamples=study["bootstrap_resamples"])
    summary = tl.run(config, args.results, args.out, archive=args.archive)
    print(tl.to_markdown(summary))
    print(f"wrote {args.out}/track-learnability-{args.track}*.json and .md")
    return 0
