"""Flags that several commands share, each added by one helper so a flag, its help and its default are written once
(STYLE 14): the env and LLM flags generated from the config dataclasses, the filter flags, ``--config`` (the
command's own recipes), ``--track`` (a name or a track file); and what turns them into an env.

The env flags are every field of :class:`~dreamer_gym.envs.config.ConsolidationConfig` that an env id does not
freeze (``eval_in_family`` -> ``--eval-in-family``); the LLM flags every field of
:class:`~dreamer_gym.llm.LLMConfig`, for both LLM sides (``--model``) and, with ``--consolidator-``/``--agent-``,
for one side. A flag not given stays None and is not sent, so the registered id's value holds.
"""
from __future__ import annotations

import argparse
import logging
import warnings
from functools import cache
from pathlib import Path

from dreamer_gym.cli_args import add_dataclass_arguments, dataclass_kwargs, recipe_names
from dreamer_gym.contract.frozen import REWARD_FIELDS
from dreamer_gym.envs.config import ConsolidationConfig
from dreamer_gym.errors import ConfigError
from dreamer_gym.llm.config import LLMConfig

# ConsolidationConfig fields that are not flags: what --env and --reward-agent pick (the id's identity), and what
# is not command-line material (progress: from --quiet)
IDENTITY_FIELDS: tuple[str, ...] = ("suite", "pool", "pool_hash", "split", "reward_agent")
ENV_SKIP: tuple[str, ...] = (*IDENTITY_FIELDS, "llm", "store_path", "progress")
LLM_ROLES = {"consolidator": "the prompted consolidator", "agent": "the LLM reward agent"}
ENV_HELP = "registered env id (dreamer_gym's ids: docs/env.md; a typo gets a suggestion)"
FAMILIES_HELP = "comma-separated families (default: every family of the pool)"


def config_flag(p: argparse.ArgumentParser, command: str, *, dest: str = "config", algo: str | None = None,
                default_algo: str | None = None) -> None:
    """``--config FILE|NAME``: a YAML file of flag values (the command line wins) or one of ``command``'s shipped
    recipes (for ``train``, those of ``--algo``; a recipe naming no algorithm is ``default_algo``'s), listed in its
    help."""
    names = recipe_names(command, algo, default_algo=default_algo)
    p.add_argument("--config", dest=dest, default=None, metavar="FILE|NAME",
                   help="YAML file of flag values (the command line wins), or the name of a shipped recipe: "
                   + (", ".join(names) or "none shipped"))


def families_flag(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    p.add_argument("--families", default="", help=FAMILIES_HELP)


def families_arg(args: argparse.Namespace) -> tuple[str, ...] | None:
    """``--families`` as a tuple (None: every family of the pool)."""
    return tuple(args.families.split(",")) if args.families else None


def add_filter_flags(p: argparse.ArgumentParser) -> None:
    """Which episodes ``consolidate`` and ``evaluate`` run: the families, how many of them, the reset seeds."""
    g = p.add_argument_group("which episodes")
    families_flag(g)
    g.add_argument("--max-families", type=int, default=0, metavar="N",
                   help="only the first N of those families (of each suite, on the transfer track; default: 0, all)")
    g.add_argument("--seeds", type=int, nargs="+", default=[0],
                   help="reset seeds: each consolidator plays one episode per family per seed (default: 0)")


def add_env_flags(p: argparse.ArgumentParser, skip: tuple[str, ...]) -> None:
    g = p.add_argument_group("env (ConsolidationConfig fields; default: the env id's value)")
    add_dataclass_arguments(g, ConsolidationConfig, skip=skip, dest_prefix="env.",
                            help_suffix="(ConsolidationConfig default: {default})")


def deprecated(p: argparse.ArgumentParser, flag: str, dest: str, kind: type) -> None:
    """An old flag name, hidden, kept working for recorded commands."""
    p.add_argument(flag, dest=dest, type=kind, default=None, help=argparse.SUPPRESS)


def add_run_flags(p: argparse.ArgumentParser, command: str) -> None:
    """What consolidate and evaluate share: the filter flags, the env flags, the LLM flags, the consolidator's."""
    config_flag(p, command)
    add_filter_flags(p)
    p.add_argument("--reward-agent", default="memory", metavar="NAME",
                   help="memory (the id's), llm (the LLM-agent variant of --env) or any registered downstream agent "
                        "(an experiment on --env: not comparable to the id; docs/byo.md)")
    add_env_flags(p, ENV_SKIP)
    g = p.add_argument_group("LLM (LLMConfig fields; both the prompted consolidator and the LLM reward agent)")
    add_dataclass_arguments(g, LLMConfig, dest_prefix="llm.")
    for role, who in LLM_ROLES.items():
        g = p.add_argument_group(f"LLM, {who} only (overrides the flag without --{role}-)")
        add_dataclass_arguments(g, LLMConfig, prefix=f"{role}-", dest_prefix=f"{role}_llm.", help_suffix="")
    g = p.add_argument_group("consolidator")
    g.add_argument("--no-guided", action="store_true", help="prompted: no guided JSON decoding")
    g.add_argument("--consolidator-seed", type=int, default=0,
                   help="seed of a stochastic consolidator (the prompted model's sampling, random)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    for flag, dest, kind in (("--episodes", "env.eval_in_family", int), ("--other", "env.eval_other", int),
                             ("--region-entries", "env.max_region_entries", int), ("--timeout", "llm.timeout_s", float),
                             ("--llm-seed", "consolidator_seed", int)):
        deprecated(p, flag, dest, kind)


def track_name(value: str) -> str:
    """``--track NAME|FILE``: a track's name, or the path of a track YAML file, which is loaded, checked and
    registered under the name it declares (so the studies, which look tracks up by name, find it).

    Raises:
        ConfigError: no such track or file, a malformed file, or a file that takes a shipped track's name with
            other contents (a changed track is a new protocol under a new name).
    """
    from dreamer_gym.leaderboard.tracks import TRACKS, load_track, register_track

    if not (value.endswith((".yaml", ".yml")) or "/" in value):
        return value  # a name: what uses it looks it up (an archived protocol's track need not be current)
    path = Path(value).expanduser()
    if not path.is_file():
        raise ConfigError(f"no track file {value}; pass a track YAML file or a track name")
    track = load_track(path)
    if track.name in TRACKS and load_track(track.name) != track:
        raise ConfigError(f"track file {value} is named {track.name!r}, as a known track with other contents; "
                          "give your track a name of its own")
    if track.name not in TRACKS:
        register_track(track.name, path)
    return str(track.name)


def llm_config(args: argparse.Namespace, role: str) -> dict[str, object]:
    """The LLM config of one side (``consolidator`` or ``agent``): the shared LLM flags, then that side's
    overrides, over LLMConfig's defaults. Never holds a key, only the name of its environment variable."""
    shared = dataclass_kwargs(args, LLMConfig, dest_prefix="llm.")
    return LLMConfig(**{**shared, **dataclass_kwargs(args, LLMConfig, dest_prefix=f"{role}_llm.")}).to_dict()


def env_id(args: argparse.Namespace) -> str:
    """``--reward-agent llm`` picks the LLM-agent variant of ``--env`` (the reward agent is frozen per id).

    Raises:
        ConfigError: the id has no variant for that reward agent.
    """
    from dreamer_gym.contract.ids import LLM_VARIANTS, REGISTERED

    if args.reward_agent == "llm" and REGISTERED.get(args.env, {}).get("reward_agent") != "llm":
        if args.env not in LLM_VARIANTS:
            raise ConfigError(f"{args.env} has no LLM-agent variant; known: {sorted(LLM_VARIANTS.values())}")
        return LLM_VARIANTS[args.env]
    if args.reward_agent == "memory" and REGISTERED.get(args.env, {}).get("reward_agent") == "llm":
        raise ConfigError(f"{args.env} is rewarded by the LLM agent; pass --reward-agent llm or another --env")
    return str(args.env)


def env_kwargs(args: argparse.Namespace, skip: tuple[str, ...] = ENV_SKIP) -> dict[str, object]:
    """What ``gym.make`` gets: only the env flags the user passed, and the reward agent's LLM (or, for an agent
    that is neither built-in reward agent, its name: an experiment on the id)."""
    kwargs: dict[str, object] = dataclass_kwargs(args, ConsolidationConfig, skip=skip, dest_prefix="env.")
    reward_agent = getattr(args, "reward_agent", "memory")
    if reward_agent == "llm":
        kwargs["llm"] = llm_config(args, "agent")
    elif reward_agent != "memory":
        kwargs["reward_agent"] = reward_agent
    return kwargs


@cache
def tracked_superseded_ids() -> frozenset[str]:
    """Superseded ids that a shipped track still measures (``ScienceWorld-v1`` until the protocol-4 tracks move to
    ``-v2``, issue 40): the CLI runs them without Gymnasium's "out of date" warning, which would tell a user of
    the current board to leave the id the board scores."""
    from dreamer_gym.contract.ids import SUPERSEDED
    from dreamer_gym.leaderboard.tracks import Track, load_track, shipped_track_names

    measured = set()
    for name in shipped_track_names():
        track = load_track(name)
        if isinstance(track, Track):
            measured.add(track.env_id)
    return frozenset(measured & set(SUPERSEDED))


def make_env(env_id: str, kwargs: dict[str, object]):  # noqa: ANN201 - a gym.Env
    """``gym.make`` of the id; where a flag changes a reward-defining field, an experiment on it instead
    (``ConsolidationEnv.experiment``), whose commits say ``comparable: False``."""
    import gymnasium as gym

    import dreamer_gym  # noqa: F401 - registers the ids
    from dreamer_gym.envs.consolidation import ConsolidationEnv
    from dreamer_gym.errors import FrozenParameterError

    try:
        with warnings.catch_warnings():
            if env_id in tracked_superseded_ids():  # what a shipped track measures: not out of date for the CLI
                warnings.filterwarnings("ignore", message=".*is out of date", category=DeprecationWarning)
            return gym.make(env_id, **kwargs)
    except FrozenParameterError as exc:
        changed = sorted(k for k in kwargs if k in (*REWARD_FIELDS, "llm"))
        logging.getLogger(__name__).warning("flags %s change what %s's reward measures (%s): running an experiment "
                                            "on it, NOT comparable to the id", changed, env_id, str(exc).split(";")[0])
        return ConsolidationEnv.experiment(env_id, **kwargs)
