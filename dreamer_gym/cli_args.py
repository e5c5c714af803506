"""Command-line flags generated from config dataclasses, so a flag, its type, help and default are written
once, in the dataclass (TRL's ``HfArgumentParser`` idea, kept small).

A field ``eval_in_family: int = field(default=3, metadata={"help": ...})`` becomes ``--eval-in-family INT``
(``prefix`` goes in front of the name). Every generated flag defaults to ``None``, meaning "not given":
:func:`dataclass_kwargs` returns only the fields the user passed, so whatever builds the dataclass (here
``gym.make`` with the registered id's kwargs) keeps its own defaults. Fields whose type is not a scalar
(``str``, ``int``, ``float``, ``bool``, ``X | None`` of one, or ``tuple[X, ...]``) or a ``dict[str, ...]`` (a
JSON object on the command line) are not CLI material and are skipped. A YAML file supplies values for the same flags (:func:`apply_config_file`); ``--config NAME``
(no ``.yaml``, no slash) is a recipe shipped in ``dreamer_gym/data/configs/`` (:func:`resolve_config`), so the
recorded baselines' settings work from an installed wheel, with no repository.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import types
import typing
from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from dreamer_gym.errors import ConfigError

_SCALARS = (str, int, float, bool)


def _cli_type(hint: Any) -> tuple[type, bool] | None:
    """``(scalar type, is_tuple)`` for a field type the command line can carry, else None."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        return _cli_type(rest[0]) if len(rest) == 1 else None
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis and args[0] in _SCALARS:
        return args[0], True
    if (origin is dict and args and args[0] is str) or hint is dict:
        return json_object, False
    return (hint, False) if hint in _SCALARS else None


def json_object(text: str) -> dict[str, Any]:
    """A ``dict`` field's flag value: a JSON object (``--env-overrides '{"eval_in_family": 1}'``)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not JSON ({exc})") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {type(value).__name__}")
    return value


def cli_fields(cls: type, skip: Iterable[str] = ()) -> list[tuple[dataclasses.Field[Any], type, bool]]:
    """The fields of dataclass ``cls`` that become flags: ``(field, scalar type, is_tuple)``."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        kind = _cli_type(hints[f.name]) if f.name not in set(skip) and f.init else None
        if kind is not None:
            out.append((f, *kind))
    return out


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return None


def add_dataclass_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup, cls: type, *,
                            skip: Iterable[str] = (), prefix: str = "", dest_prefix: str = "",
                            help_suffix: str | None = None, given: Mapping[str, Any] | None = None,
                            given_by: str = "") -> list[str]:
    """Add one ``--{prefix}{kebab-name}`` flag per CLI field of ``cls``; its value lands in
    ``args.<dest_prefix><name>`` (None when not given). Returns the option strings added.

    ``help_suffix`` replaces the note "(default: <the dataclass default>)" (none for a None default);
    ``{default}`` in it is filled in. ``given`` holds the values a config file ``given_by`` sets (the ones a run
    will use where no flag overrides them): those fields' note says so instead, so ``--help`` prints the default
    that is used. ``field.metadata["choices"]`` becomes the flag's choices.
    """
    added = []
    for f, kind, is_tuple in cli_fields(cls, skip):
        flag = f"--{prefix}{f.name.replace('_', '-')}"
        default = _default(f)
        note = "" if default is None else (help_suffix if help_suffix is not None else "(default: {default})")
        note = note.format(default=default)
        if given is not None and f.name in given:
            note = f"(default: {given[f.name]}, from {given_by})"
        text = " ".join(p for p in (f.metadata.get("help", ""), note) if p)
        # field docs are prose, not argparse format strings: a literal "%" must not break --help
        kwargs: dict[str, Any] = {"dest": f"{dest_prefix}{f.name}", "default": None, "help": text.replace("%", "%%")}
        if kind is bool and not is_tuple:
            kwargs["action"] = argparse.BooleanOptionalAction
        else:
            kwargs.update(type=kind, metavar="JSON" if kind is json_object else kind.__name__.upper())
            if is_tuple:
                kwargs["nargs"] = "+"
            if "choices" in f.metadata:
                kwargs["choices"] = tuple(f.metadata["choices"])
        parser.add_argument(flag, **kwargs)
        added.append(flag)
    return added


def dataclass_kwargs(args: argparse.Namespace, cls: type, *, skip: Iterable[str] = (),
                     dest_prefix: str = "") -> dict[str, Any]:
    """The fields of ``cls`` the user passed (flag or config file), by field name; lists become tuples."""
    out = {}
    for f, _, is_tuple in cli_fields(cls, skip):
        value = getattr(args, f"{dest_prefix}{f.name}", None)
        if value is not None:
            out[f.name] = tuple(value) if is_tuple else value
    return out


def subparser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    """The subcommand parser ``command`` of ``parser``."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices[command]
    raise KeyError(command)


def recipes_dir() -> Path:
    """Where the shipped recipes (the recorded baselines' config files) are, in the installed package."""
    return Path(str(resources.files("dreamer_gym") / "data" / "configs"))


def recipe_target(path: Path, default_algo: str | None = None) -> tuple[str, str | None]:
    """The command a recipe is for and, for ``train``, its ``--algo`` (``default_algo`` where the line names none),
    read off its first line: ``# dreamer-gym CMD --config NAME [--algo ALGO]`` (a test checks every recipe has it)."""
    words = path.read_text().splitlines()[0].split() if path.is_file() else []
    command = words[2] if len(words) > 2 and words[:2] == ["#", "dreamer-gym"] else ""
    algo = words[words.index("--algo") + 1] if "--algo" in words[:-1] else default_algo
    return command, algo if command == "train" else None


def recipe_names(command: str | None = None, algo: str | None = None, default_algo: str | None = None,
                 ) -> tuple[str, ...]:
    """The shipped recipes; with ``command`` (and for ``train`` an ``algo``), only those that command reads."""
    paths = sorted(recipes_dir().glob("*.yaml"))
    if command is not None:
        paths = [p for p in paths if recipe_target(p, default_algo) == (command, algo if command == "train" else None)]
    return tuple(p.stem for p in paths)


def _recipe_for(target: tuple[str, str | None]) -> str:
    command, algo = target
    return f"`dreamer-gym {command}{f' --algo {algo}' if algo else ''}`"


def resolve_config(value: str | Path, command: str | None = None, algo: str | None = None,
                   default_algo: str | None = None) -> Path:
    """``--config``'s value as a file: a bare name (no ``.yaml``/``.yml``, no slash) is a shipped recipe, anything
    else a path. With ``command`` (and ``algo``), a recipe must be that command's: a recipe of another command or
    algorithm fails here, naming the one it is for, instead of on its first unknown key.

    Raises:
        ConfigError: no such recipe or file, or a recipe of another command; the message lists the command's own.
    """
    text = str(value)
    bare = "/" not in text and "\\" not in text and not text.endswith((".yaml", ".yml"))
    path = recipes_dir() / f"{text}.yaml" if bare else Path(text).expanduser()
    own = recipe_names(command, algo, default_algo) if command is not None else recipe_names()
    whose = f"{_recipe_for((command, algo if command == 'train' else None))}'s" if command else "the shipped"
    if path.is_file():
        target = recipe_target(path, default_algo)
        if bare and command is not None and target != (command, algo if command == "train" else None):
            raise ConfigError(f"recipe {text!r} is for {_recipe_for(target)}; run that, or pass one of {whose} "
                              f"recipes: {', '.join(own) or 'none shipped'}")
        return path
    what = f"no shipped recipe {text!r}" if bare else f"config file {text} does not exist"
    raise ConfigError(f"{what}; pass a YAML path or one of {whose} recipes: {', '.join(own) or 'none shipped'}")


def apply_config_file(parser: argparse.ArgumentParser, path: str | Path) -> None:
    """Make the values of a YAML file the defaults of ``parser``'s flags; the command line still wins.

    Keys are flag names without the dashes (``eval_in_family`` or ``eval-in-family``); values only, the
    flags (and the dataclasses behind them) are the schema: an unknown key or a wrongly typed value raises
    :class:`~dreamer_gym.errors.ConfigError`.
    """
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"Cannot read config file {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"Expected {path} to hold a mapping of flag names to values, got {type(data).__name__}")
    by_flag = {s: a for a in parser._actions for s in a.option_strings if s.startswith("--")}
    defaults: dict[str, Any] = {}
    for key, value in data.items():
        action = by_flag.get("--" + str(key).replace("_", "-"))
        if action is None or action.dest in ("help", "config") or action.help == argparse.SUPPRESS:
            known = sorted(s[2:].replace("-", "_") for s, a in by_flag.items()
                           if a.dest not in ("help", "config") and a.help != argparse.SUPPRESS)
            raise ConfigError(f"Unknown key {key!r} in {path}; known keys (the {parser.prog} flags): {known}")
        defaults[action.dest] = _convert(action, value, key, path)
        if action.help:  # --help prints the default a run uses: the file's
            shown = str(value).replace("%", "%%")
            action.help = f"{_without_default_note(action.help)} (default: {shown}, from {Path(path).name})"
    parser.set_defaults(**defaults)


def _without_default_note(text: str) -> str:
    """``text`` without its trailing ``(... default: X)`` note (X may hold parentheses: a tuple)."""
    at = text.rfind("default: ")
    start = text.rfind("(", 0, at)
    return text[:start].rstrip() if at >= 0 and start >= 0 and text.endswith(")") else text


def _convert(action: argparse.Action, value: Any, key: str, path: str | Path) -> Any:
    if action.nargs == 0 or isinstance(action, argparse.BooleanOptionalAction):
        if not isinstance(value, bool):
            raise ConfigError(f"Expected `{key}` in {path} to be true or false, got {value!r}")
        return value
    convert = action.type or str
    if convert is json_object:
        if not isinstance(value, dict):
            raise ConfigError(f"Expected `{key}` in {path} to be a mapping, got {value!r}")
        return value
    try:
        if action.nargs in ("+", "*"):
            return [convert(v) for v in (value if isinstance(value, list) else [value])]
        if isinstance(value, list) and convert is str:  # a comma-separated flag (--families a,b) as a list
            value = ",".join(map(str, value))
        if isinstance(value, (list, dict, bool)) or (convert is int and isinstance(value, float)):
            raise TypeError(f"got a {type(value).__name__}")
        out = convert(value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"Expected `{key}` in {path} to be a {getattr(convert, '__name__', convert)}, "
                          f"got {value!r} ({exc})") from exc
    if action.choices is not None and out not in action.choices:
        raise ConfigError(f"Expected `{key}` in {path} to be one of {list(action.choices)}, got {out!r}")
    return out
