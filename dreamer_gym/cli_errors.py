"""What ``dreamer-gym`` says when something expected goes wrong: one line on stderr and exit code 2.

Why: a typo'd env id, a missing config file or an optional extra that is not installed is the user's to fix,
and the fix fits in a sentence; a traceback buries it. Which errors are "expected" is decided here, once
(:func:`error_message`); anything else is a bug and keeps its traceback. The extras a command needs are
checked up front with ``importlib.util.find_spec`` (:func:`check_requirements`), before any work starts, so the
message names the extra (``pip install "dreamer-gym[sb3]"``), not whichever transitive module failed first.
``--debug`` or ``DREAMER_GYM_DEBUG=1`` re-raises instead, with the traceback.
"""
from __future__ import annotations

import argparse
import os
from collections.abc import Iterable, Sequence
from typing import NoReturn

import gymnasium

from dreamer_gym.errors import ConfigError, DreamerGymError, EvaluationFailed
from dreamer_gym.evaluation.failures import one_line
from dreamer_gym.llm.available import BACKEND_NEEDS
from dreamer_gym.registry import importable

USAGE_ERROR = 2  # what argparse exits with on a bad argument: the same for every bad argument
INTERRUPTED = 130
# OpenEnv's install line (docs/byo.md): its declared pins conflict with ours, so it goes in without its dependencies
OPENENV_INSTALL = 'pip install --no-deps openenv-core==0.3.0 && pip install "fastmcp-slim[client]==4.2.3"'
# an importable top-level module -> the pyproject extra that installs it
EXTRA_OF: dict[str, str] = {
    **dict.fromkeys(("torch", "transformers", "trl", "peft", "xgrammar", "openai", "gguf"), "llm"),
    "vllm": "vllm", "ray": "ray", "pettingzoo": "pettingzoo",
    **dict.fromkeys(("stable_baselines3", "sb3_contrib"), "sb3"),
    **dict.fromkeys(("openenv", "fastmcp", "uvicorn", "fastapi", "websockets"), "openenv"),
    "scienceworld": "scienceworld", **dict.fromkeys(("alfworld", "textworld"), "alfworld"),
    **dict.fromkeys(("browsergym", "miniwob", "playwright"), "web"),
    "jsonschema": "leaderboard", "matplotlib": "plots",
}


class ArgumentsError(ConfigError):
    """A bad command line (an unknown flag, a value of the wrong type, a missing argument): one line, exit 2."""


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line with a hint, not the whole usage then the error: it raises
    :class:`ArgumentsError`, which ``main`` prints as every other expected error. Subparsers get the same class
    (argparse's ``add_subparsers`` defaults its ``parser_class`` to the parser's own), so every subcommand and the
    ``leaderboard`` sub-subcommands answer alike."""

    def error(self, message: str) -> NoReturn:  # type: ignore[override]
        raise ArgumentsError(f"{message} (`{self.prog} --help` lists the flags)")


def debug_requested(argv: Sequence[str]) -> bool:
    """``--debug`` anywhere on the command line, or ``DREAMER_GYM_DEBUG`` set to anything but 0: show tracebacks."""
    return "--debug" in argv or os.environ.get("DREAMER_GYM_DEBUG", "0") not in ("", "0")


def install_hint(extra: str) -> str:
    """The command that installs ``extra`` (OpenEnv's is the one docs/byo.md gives: it conflicts with our pins)."""
    if extra == "openenv":
        return OPENENV_INSTALL
    return f'pip install "dreamer-gym[{extra}]"'


def require(modules: Iterable[str], what: str) -> None:
    """Raise ``DependencyNotInstalled`` naming the extra(s) when a module of ``modules`` cannot be imported here.

    Nothing is imported: ``find_spec`` only looks the modules up."""
    missing = [m for m in modules if not importable(m)]
    if not missing:
        return
    extras = list(dict.fromkeys(EXTRA_OF.get(m.split(".")[0], "") for m in missing))
    fix = " and ".join(install_hint(e) for e in extras if e) or f"pip install {' '.join(missing)}"
    named = ", ".join(f"[{e}]" for e in extras if e)
    raise gymnasium.error.DependencyNotInstalled(
        f"{what} needs {', '.join(missing)} (the {named or 'missing'} extra), which is not installed here: run {fix}")


def check_requirements(args: argparse.Namespace) -> None:
    """The optional extras ``args``' command will import, checked before it starts (``train`` checks its own at
    parse time: its flags come from its algorithm's config class)."""
    command = args.command
    if command == "serve":
        require(("openenv", "fastmcp", "uvicorn", "fastapi", "websockets"), "dreamer-gym serve (OpenEnv)")
    if getattr(args, "env.executor", None) == "ray":
        require(("ray",), "--executor ray")
    if command in ("consolidate", "evaluate"):
        names = (getattr(args, "consolidator", "") or getattr(args, "consolidators", "")).split(",")
        if "prompted" in names:
            backend = _backend(args, "consolidator")
            require(BACKEND_NEEDS.get(backend, ((), ""))[0], f"the prompted consolidator on the {backend} backend")
        if args.reward_agent == "llm":
            backend = _backend(args, "agent")
            require(BACKEND_NEEDS.get(backend, ((), ""))[0], f"the LLM reward agent on the {backend} backend")


def _backend(args: argparse.Namespace, role: str) -> str:
    from dreamer_gym.llm.config import LLMConfig

    return str(vars(args).get(f"{role}_llm.backend") or vars(args).get("llm.backend") or LLMConfig().backend)


def check_env_id(env_id: str) -> None:
    """Fail now, with Gymnasium's "did you mean", when ``env_id`` is not registered (before any simulator starts);
    where Gymnasium has no suggestion, the message lists this package's ids."""
    import dreamer_gym  # noqa: F401 - registers the ids

    try:
        gymnasium.spec(env_id)
    except gymnasium.error.UnregisteredEnv as exc:
        if "Did you mean" in str(exc) or "provides versioned" in str(exc):
            raise
        versions: dict[str, list[str]] = {}
        for spec in gymnasium.registry.values():
            if spec.name.startswith("MemoryConsolidation"):
                versions.setdefault(spec.name, []).append(f"v{spec.version}")
        ours = [f"{name}-{'/'.join(sorted(v))}" for name, v in sorted(versions.items())]
        raise type(exc)(f"{exc} dreamer_gym's ids: {', '.join(ours)}") from None


def error_message(exc: BaseException) -> str | None:
    """The one line to print for an expected error; None for anything else (a bug: keep its traceback)."""
    if isinstance(exc, EvaluationFailed):
        reasons = [r for r in exc.errors if r not in str(exc)]
        return one_line(f"{exc}" + (f" (reasons: {'; '.join(reasons)})" if reasons else ""))
    if isinstance(exc, (DreamerGymError, gymnasium.error.Error)):
        return one_line(str(exc))
    if isinstance(exc, (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError)) and exc.filename:
        return one_line(f"{exc.strerror}: {exc.filename}")
    missing = _missing_module(exc)
    if missing is not None:
        extra = EXTRA_OF[missing]
        return one_line(f"{missing} is not installed (the [{extra}] extra): run {install_hint(extra)}"
                        + ("" if str(exc).startswith("No module named") else f" ({exc})"))
    return None


def _missing_module(exc: BaseException) -> str | None:
    """The optional module whose absence ``exc`` (or an error it was raised from) reports, if any."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ModuleNotFoundError) and seen.name and seen.name.split(".")[0] in EXTRA_OF:
            return seen.name.split(".")[0]
        seen = seen.__cause__
    return None
