"""``train --algo NAME``: a registered training algorithm (:mod:`dreamer_gym.training.algorithms`) on its config.

The fields of the algorithm's config dataclass are ``train``'s flags; ``--config`` (a YAML file or one of that
algorithm's shipped recipes) gives their values, the flags override it, and without ``--config`` the dataclass's
own defaults hold (``--config`` is needed only where the algorithm has no config class: ``trl``'s recipe is its
config). ``--help`` prints, for each flag, the value a run will use: the recipe's where ``--config`` names one.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from dreamer_gym.cli_args import add_dataclass_arguments, dataclass_kwargs, resolve_config
from dreamer_gym.cli_errors import require
from dreamer_gym.commands.flags import config_flag
from dreamer_gym.errors import ConfigError
from dreamer_gym.training.algorithms import ALGORITHMS, Algorithm, TrainOptions

DEFAULT_ALGO = "grpo"


def peek(argv: list[str] | None) -> tuple[str | None, str | None]:
    """The ``--algo`` (grpo when not given) and ``--config`` of a ``train`` command line, read before the parser is
    built; ``(None, None)`` when the command is not ``train`` (its flags are not needed, nor the extras their
    config classes import)."""
    words = [a for a in argv or () if not a.startswith("-")]
    if not words or words[0] != "train":
        return None, None
    peeker = argparse.ArgumentParser(add_help=False)
    peeker.add_argument("--algo", default=DEFAULT_ALGO)
    peeker.add_argument("--config", default=None)
    known = peeker.parse_known_args(argv[argv.index("train") + 1:])[0]  # type: ignore[union-attr]
    return str(known.algo), known.config


def config_class(algo: str) -> type | None:
    """The config dataclass whose fields are ``train --algo ALGO``'s flags (None for trl: its recipe holds them;
    None for a name no algorithm has: ``--algo`` itself then says which exist).

    Raises:
        DependencyNotInstalled: the algorithm's extra is missing (checked before anything is imported: the
            op-level and SB3 configs live beside their torch trainers).
    """
    if algo not in ALGORITHMS:
        return None
    algorithm = ALGORITHMS.get(algo)
    require(algorithm.needs, f"train --algo {algo}")
    return algorithm.config_class()


def _recipe_values(config: str | None, algo: str) -> tuple[dict[str, object] | None, str]:
    """What ``--config`` sets (for ``--help``'s defaults) and its name; (None, "") without one, or where it cannot
    be read (parsing then names the problem in one line)."""
    import yaml

    if config is None:
        return None, ""
    try:
        path = resolve_config(config, "train", algo, DEFAULT_ALGO)
        data = yaml.safe_load(path.read_text()) or {}
    except (ConfigError, OSError, yaml.YAMLError):
        return None, ""
    return (data, path.name) if isinstance(data, dict) else (None, "")


def add_parser(sub: argparse._SubParsersAction, argv: list[str] | None) -> None:
    """``train``; only the fields of the ``--algo`` named on the command line are flags (the op-level and SB3
    configs need torch to import)."""
    algo, config = peek(argv)
    p = sub.add_parser("train", help="train a consolidator on an env id: GRPO (docs/grpo.md), op-level or SB3 "
                       "(docs/byo.md)", description="Train a consolidator. The config dataclass's fields are the "
                       "flags; --config (a YAML file or a shipped recipe of --algo) gives their values and a flag "
                       "overrides it; without --config, the dataclass defaults hold (`train --algo ALGO --help` lists "
                       "ALGO's flags and, with --config, the recipe's values).")
    p.add_argument("--algo", type=_algorithm_name, default=DEFAULT_ALGO, metavar="NAME",
                   help=f"{_algo_help()} (default: {DEFAULT_ALGO})")
    config_flag(p, "train", dest="train_config", algo=algo or DEFAULT_ALGO, default_algo=DEFAULT_ALGO)
    p.add_argument("--probe", type=int, default=0, metavar="GROUPS",
                   help="--algo grpo: do not train: play GROUPS groups per family with the untrained policy and "
                   "report, per family, the share of rollouts whose downstream score changes (output_dir/probe.json)")
    p.add_argument("--check", action="store_true", help="--algo trl: validate the recipe and exit")
    p.add_argument("--resume", action="store_true", help="--algo trl: resume from trl.output_dir's last checkpoint")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    cls = config_class(algo) if algo else None
    if cls is not None:
        given, given_by = _recipe_values(config, algo)  # type: ignore[arg-type]
        g = p.add_argument_group(f"--algo {algo}: {cls.__name__} fields (override the --config YAML's)")
        add_dataclass_arguments(g, cls, dest_prefix="train.", help_suffix="(default: {default})", given=given,
                                given_by=given_by)
    p.set_defaults(func=cmd_train)


def resolve(args: argparse.Namespace) -> None:
    """``--config`` as a file of ``--algo``'s (a recipe of another algorithm is a one-line error naming it); an
    algorithm without a config class needs one."""
    if args.train_config is not None:
        args.train_config = resolve_config(args.train_config, "train", args.algo, DEFAULT_ALGO)
    elif ALGORITHMS.get(args.algo).config is None:
        from dreamer_gym.cli_args import recipe_names

        raise ConfigError(f"train --algo {args.algo} needs --config (its settings live in the recipe): a YAML file "
                          f"or one of {', '.join(recipe_names('train', args.algo, DEFAULT_ALGO)) or 'its recipes'}")


def train_config(args: argparse.Namespace, cls: type) -> object:
    """``cls`` from the ``--config`` YAML (or its own defaults), with the field flags given on top."""
    return ALGORITHMS.get(args.algo).load_config(args.train_config, dataclass_kwargs(args, cls, dest_prefix="train."))


def cmd_train(args: argparse.Namespace) -> int:
    """``train --algo NAME``: the registered algorithm's ``run`` on its config."""
    algorithm = ALGORITHMS.get(args.algo)
    options = TrainOptions(config_path=None if args.train_config is None else Path(args.train_config),
                           quiet=args.quiet, probe=args.probe, check=args.check, resume=args.resume)
    algorithm.check_options(options)
    cls = algorithm.config_class()
    return algorithm(train_config(args, cls) if cls is not None else None, options)


def _algorithm_name(name: str) -> str:
    """``--algo``'s type: a name of the live registry (a plug-in's too), else the registry's error listing them."""
    try:
        return ALGORITHMS.validate(name)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _algo_help() -> str:
    """Each algorithm's summary, read without importing any (a plug-in not yet loaded shows its reference)."""
    refs = {name: ALGORITHMS.reference(name) for name in ALGORITHMS.names()}
    return "; ".join(f"{name}: {ref.summary if isinstance(ref, Algorithm) else ref}" for name, ref in refs.items())
