"""`dreamer-gym`: the memory-consolidation benchmark's command line. This module only parses and dispatches; each
command's body lives with the room it drives (:mod:`dreamer_gym.commands`, ``leaderboard`` in
:mod:`dreamer_gym.leaderboard.board_commands`, ``serve`` in :mod:`dreamer_gym.remote.openenv_server`).

Flags are generated from the config dataclasses (:mod:`dreamer_gym.cli_args`), so a flag, its type, help and
default are written once. ``--config FILE|NAME`` (YAML) gives values for the same flags (a bare NAME is one of
the command's shipped recipes, :func:`~dreamer_gym.cli_args.resolve_config`) and ``--help`` then prints the
file's values as the defaults, because they are the ones a run uses.

An expected error (a typo'd id, a bad flag value, a missing file or extra) is one line on stderr and exit code 2
(:mod:`dreamer_gym.cli_errors`; argument errors too: no usage dump); ``--debug`` or ``DREAMER_GYM_DEBUG=1`` shows
its traceback instead. Ctrl-C is one line and exit code 130, whatever runs below (:mod:`dreamer_gym.interrupts`).
"""
from __future__ import annotations

import argparse
import logging
import sys
from importlib import metadata

from dreamer_gym.cli_args import apply_config_file, resolve_config, subparser
from dreamer_gym.cli_errors import (
    INTERRUPTED,
    USAGE_ERROR,
    OneLineParser,
    check_env_id,
    check_requirements,
    debug_requested,
    error_message,
)
from dreamer_gym.commands import acquire, consolidate, studies, train
from dreamer_gym.commands.consolidate import markdown_table
from dreamer_gym.errors import ConfigError
from dreamer_gym.interrupts import is_interrupt

__all__ = ["build_parser", "check_args", "main", "markdown_table", "parse_args"]

DESCRIPTION = "The dreamer_gym benchmark (learned memory consolidation as a Gymnasium env) from the command line."


class _HelpFormatter(argparse.HelpFormatter):
    """argparse (3.11) measures command names one indent short of where it prints them, so a name longer than
    11 characters (``learnability``) had its help on the next line; this measures them where they stand."""

    def add_argument(self, action: argparse.Action) -> None:
        super().add_argument(action)
        if action.help is not argparse.SUPPRESS and isinstance(action, argparse._SubParsersAction):
            names = [len(self._format_action_invocation(a)) for a in action._get_subactions()]
            self._action_max_length = max(self._action_max_length,
                                          max(names, default=0) + self._current_indent + self._indent_increment)


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser; where ``argv`` is a ``train`` command line, ``train`` gets its ``--algo``'s config flags."""
    from dreamer_gym.leaderboard.board_commands import add_parser as add_leaderboard_parser
    from dreamer_gym.remote.openenv_server import add_arguments as add_serve_arguments
    from dreamer_gym.remote.openenv_server import run as run_server

    parser = OneLineParser(prog="dreamer-gym", description=DESCRIPTION, formatter_class=_HelpFormatter,
                           epilog="`dreamer-gym COMMAND --help` for a command's flags. An expected error is one line "
                           "and exit code 2; --debug shows its traceback. Ctrl-C: one line, exit code 130.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    parser.add_argument("--debug", action="store_true",
                        help="show the traceback of an error instead of one line (anywhere on the line; also DREAMER_GYM_DEBUG=1)")
    sub = parser.add_subparsers(dest="command", required=True, title="commands", metavar="COMMAND")
    acquire.add_parser(sub)
    consolidate.add_parsers(sub)
    p = sub.add_parser("serve", help="serve an env id as an OpenEnv environment server (docs/byo.md)",
                       description="Serve a registered env id as an OpenEnv environment server: TRL, SkyRL, verifiers "
                       "and any OpenEnv client train on it over a WebSocket (docs/byo.md).")
    add_serve_arguments(p)
    p.set_defaults(func=run_server)
    add_leaderboard_parser(sub)
    studies.add_parsers(sub)
    train.add_parser(sub, argv)
    _order(sub, ("acquire", "consolidate", "evaluate", "validity", "train", "serve", "leaderboard", "power",
                 "learnability"))
    return parser


def _order(sub: argparse._SubParsersAction, names: tuple[str, ...]) -> None:
    """List the commands in ``--help`` in the order a newcomer meets them (not the order their rooms add them)."""
    rank = {name: i for i, name in enumerate(names)}
    sub._choices_actions.sort(key=lambda a: rank.get(a.dest, len(names)))


def _version() -> str:
    try:
        return metadata.version("dreamer-gym")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        from dreamer_gym import __version__

        return str(__version__)


def _peek_config(argv: list[str]) -> tuple[str | None, str | None]:
    """The command and its ``--config`` value, read before parsing (so the file's values are the defaults that
    ``--help`` prints, and that parsing then uses)."""
    words = [a for a in argv if not a.startswith("-")]
    if not words:
        return None, None
    peeker = argparse.ArgumentParser(add_help=False)
    peeker.add_argument("--config", default=None)
    return words[0], peeker.parse_known_args(argv[argv.index(words[0]) + 1:])[0].config


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Parse ``argv``; ``--config FILE|NAME`` is resolved to a file (a bare name is one of the command's shipped
    recipes) and, for every command but ``train`` (whose config class reads its own YAML), the file's values become
    the defaults and flags still win.

    Raises:
        ConfigError: a bad argument (:class:`~dreamer_gym.cli_errors.ArgumentsError`), no such config file or
            recipe, a recipe of another command or algorithm, or a file with an unknown key or a wrong value.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv)
    command, config = _peek_config(argv)
    path = None
    if config is not None and command not in (None, "train"):
        sub = subparser(parser, command) if command in _commands(parser) else None
        if sub is not None and any("--config" in a.option_strings for a in sub._actions):
            path = resolve_config(config, command)
            apply_config_file(sub, path)
    args = parser.parse_args(argv)
    if args.command == "train":
        train.resolve(args)
    elif path is not None:
        args.config = path
    return args


def _commands(parser: argparse.ArgumentParser) -> set[str]:
    return {name for a in parser._actions if isinstance(a, argparse._SubParsersAction) for name in a.choices}


def check_names(args: argparse.Namespace) -> None:
    """Every flag that names a plug-in (executor, reward service, reward agent) against the live registries, so a
    name registered or installed as an entry point works and a typo fails before any work, naming the flag and
    the choices. (The LLM backend flags take the live registry as argparse choices: LLMConfig's metadata.)"""
    from dreamer_gym.agents import resolve_reward_agent
    from dreamer_gym.contract.registry import SERVICES
    from dreamer_gym.evaluation.executors import validate_executor

    given = vars(args)
    checks = [("--reward-agent", given.get("reward_agent"), resolve_reward_agent),
              ("--executor", given.get("env.executor"), validate_executor),
              ("--service", given.get("env.service"), SERVICES.validate)]
    for flag, value, validate in checks:
        try:
            if value is not None:
                validate(value)
        except ConfigError as exc:
            raise ConfigError(f"{flag}: {exc}") from None


def check_args(args: argparse.Namespace) -> None:
    """What can be checked before any work starts: the env id is registered, the names of plug-ins are known,
    the extras are installed."""
    env_id = getattr(args, "env", None) or (getattr(args, "env_id", None) if args.command == "serve" else None)
    if env_id:
        check_env_id(env_id)
    check_names(args)
    check_requirements(args)


def quiet_interrupt_logs() -> None:
    """Drop the log records that carry an interrupt (py4j logs each KeyboardInterrupt with its traceback at ERROR):
    after Ctrl-C the command's one line is all the user sees."""
    for handler in logging.getLogger().handlers:
        handler.addFilter(lambda record: not (record.exc_info and is_interrupt(record.exc_info[1])))


def main(argv: list[str] | None = None) -> int:
    """The ``dreamer-gym`` entry point: the command's exit status; 2 (one line on stderr) on an expected error,
    130 (one line) on Ctrl-C."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = debug_requested(argv)
    argv = [a for a in argv if a != "--debug"]  # anywhere on the line, not only before the command
    words = [a for a in argv if not a.startswith("-")]
    prog = " ".join(["dreamer-gym", *words[:1]])  # until the command line is parsed
    try:
        args = parse_args(argv)
        prog = " ".join(["dreamer-gym", args.command, *([args.leaderboard_command] if args.command == "leaderboard"
                                                          else [])])
        logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING)
        if not debug:
            quiet_interrupt_logs()
        check_args(args)
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        if debug:
            raise
        print(f"{prog}: interrupted", file=sys.stderr)
        return INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - an expected error is one line; anything else keeps its traceback
        if is_interrupt(exc) and not debug:  # Ctrl-C that a library re-raised as another error (py4j does)
            print(f"{prog}: interrupted", file=sys.stderr)
            return INTERRUPTED
        message = error_message(exc)
        if message is None or debug:
            raise
        print(f"{prog}: error: {message}", file=sys.stderr)
        return USAGE_ERROR


if __name__ == "__main__":
    sys.exit(main())
