"""`dreamer-gym`: the memory-consolidation benchmark's command line (one line per subcommand below).

The env and LLM flags are generated from the config dataclasses (:mod:`dreamer_gym.cli_args`): every field
of :class:`~dreamer_gym.envs.config.ConsolidationConfig` that an env id does not freeze is a flag of the same
name (``eval_in_family`` -> ``--eval-in-family``), and every field of :class:`~dreamer_gym.llm.LLMConfig`
is a flag for both LLM sides (``--model``) and, with ``--consolidator-``/``--agent-``, for one side. A flag
not given stays None and is not sent, so the registered id's value holds. ``--config FILE`` (YAML) gives
values for the same flags (a bare NAME is a shipped recipe, :func:`~dreamer_gym.cli_args.resolve_config`);
consolidators are found by name in :mod:`dreamer_gym.consolidators.registry`. ``train``'s flags are generated
the same way from its algorithm's config dataclass and override the ``--config`` YAML.

An expected error (a typo'd id, a missing file or extra, a bad value) is one line on stderr and exit code 2
(:mod:`dreamer_gym.cli_errors`); ``--debug`` or ``DREAMER_GYM_DEBUG=1`` shows its traceback instead.
"""
from __future__ import annotations

import argparse
import inspect
import json
import logging
import sys
from importlib import metadata
from pathlib import Path

from dreamer_gym.cli_args import (
    add_dataclass_arguments,
    apply_config_file,
    cli_fields,
    dataclass_kwargs,
    recipe_names,
    resolve_config,
    subparser,
)
from dreamer_gym.cli_errors import (
    INTERRUPTED,
    USAGE_ERROR,
    check_env_id,
    check_requirements,
    debug_requested,
    error_message,
    require,
)
from dreamer_gym.envs.config import ConsolidationConfig
from dreamer_gym.contract.frozen import REWARD_FIELDS
from dreamer_gym.errors import ConfigError
from dreamer_gym.evaluation.failures import failure_summary
from dreamer_gym.llm.config import LLMConfig
from dreamer_gym.training.algorithms import ALGORITHMS, Algorithm, TrainOptions
from dreamer_gym.training.logs import text_table

# ConsolidationConfig fields that are not flags: what an env id freezes, and what is not command-line material
# what --env and --reward-agent pick (the id's identity), and what is not command-line material
IDENTITY_FIELDS: tuple[str, ...] = ("suite", "pool", "pool_hash", "split", "reward_agent")
ENV_SKIP: tuple[str, ...] = (*IDENTITY_FIELDS, "llm", "store_path", "progress")  # progress: from --quiet
# ... and those the validity study sets itself (its own episodes, none of other families, its workers)
VALIDITY_ENV_SKIP: tuple[str, ...] = (*ENV_SKIP, "eval_in_family", "eval_other", "workers")
VALIDITY_SKIP: tuple[str, ...] = ("env_id", "families", "env_kwargs")  # ValidityConfig: --env, --families
POWER_SKIP: tuple[str, ...] = ("env_id", "families")  # PowerConfig: --env, --families
LEARNABILITY_SKIP: tuple[str, ...] = ("env_id", "families")  # LearnabilityConfig: --env, --families
LLM_ROLES = {"consolidator": "the prompted consolidator", "agent": "the LLM reward agent"}
DEFAULT_CONSOLIDATORS = "keep-all,dedupe,empty,blind,oracle,random"


def _episode_range(text: str) -> tuple[int, int]:
    """``--episodes``: ``16-32`` (a range, inclusive) or ``24`` (every bank the same)."""
    low, _, high = text.partition("-")
    try:
        return int(low), int(high or low)
    except ValueError:
        raise ConfigError(f"Expected --episodes to be N or LOW-HIGH (e.g. 16-32), got {text!r}") from None


def _skills(text: str) -> tuple[float, ...]:
    """``--skills``: comma-separated noise multipliers (0.5 an expert, 2 a novice)."""
    try:
        return tuple(float(s) for s in text.split(","))
    except ValueError:
        raise ConfigError(f"Expected --skills to be comma-separated numbers (e.g. 0.5,1,2), got {text!r}") from None


def _cmd_acquire(args: argparse.Namespace) -> int:
    from dreamer_gym.acquisition import bank_configs
    from dreamer_gym.memory import RegionScheme
    from dreamer_gym.pool import build_pool
    from dreamer_gym.suites import get_suite_spec

    spec = get_suite_spec(args.suite)
    default = spec.held_out_families if args.held_out else spec.families
    families = tuple(args.families.split(",")) if args.families else default
    if not families:
        raise ConfigError(f"suite {spec.name!r} has no held-out families; pass --families")
    configs, scheme = None, None
    if args.schedule == "interleaved":
        try:
            configs = bank_configs(families, args.seeds, _episode_range(args.episodes), _skills(args.skills),
                                   train_variations=args.train_variations or 10)
            scheme = RegionScheme(kind="window", sessions=args.window, stride=args.stride)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
    elif args.train_variations:
        raise ConfigError("--train-variations is for --schedule interleaved (rounds keeps the -v0 pools' 6)")
    suite = spec.make()
    try:
        pool = build_pool(suite, families, tuple(args.seeds), args.eval_variations, args.gold_variations,
                          progress=not args.quiet, bank_configs=configs, region_scheme=scheme)
    finally:
        suite.close()
    pool.save(args.out)
    regions = sum(len(pool.region_keys(i)) for i in range(len(pool.banks)))
    print(json.dumps({"pool": str(args.out), "hash": pool.hash, "banks": [len(b) for b in pool.banks],
                      "trajectories": len(pool.trajectories), "regions": regions}))
    return 0


TRANSFER_COLUMNS = ("consolidator", "score before", "score after", "success before", "success after",
                    "entries before", "entries after", "tokens before", "tokens after", "compression", "reward")


def markdown_table(rows: list[dict[str, object]], columns: tuple[str, ...] = TRANSFER_COLUMNS) -> str:
    """``rows`` as a Markdown table: how docs quote a recorded ``evaluate --out`` run (a test checks they do)."""
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(str(r[c]) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


def _llm_config(args: argparse.Namespace, role: str) -> dict[str, object]:
    """The LLM config of one side (``consolidator`` or ``agent``): the shared LLM flags, then that side's
    overrides, over LLMConfig's defaults. Never holds a key, only the name of its environment variable."""
    shared = dataclass_kwargs(args, LLMConfig, dest_prefix="llm.")
    return LLMConfig(**{**shared, **dataclass_kwargs(args, LLMConfig, dest_prefix=f"{role}_llm.")}).to_dict()


def _names(value: str) -> list[str]:
    """A comma-separated list of consolidator names, each looked up in the registry before anything starts.

    Raises:
        ConfigError: a name is unknown (the message lists the known ones) or the list is empty.
    """
    from dreamer_gym.consolidators import get_consolidator_factory

    names = [n.strip() for n in value.split(",") if n.strip()]
    if not names:
        raise ConfigError(f"Expected --consolidator to name one or more consolidators (a comma list), got {value!r}")
    for name in names:
        get_consolidator_factory(name)
    return names


def _make_consolidator(name: str, args: argparse.Namespace) -> object:
    """Build consolidator ``name`` from the registry, handing it what its constructor asks for by name:
    ``llm`` (the consolidator's LLM config), ``guided`` and ``seed``."""
    from dreamer_gym.consolidators import get_consolidator_factory, make_consolidator

    try:
        params = inspect.signature(get_consolidator_factory(name)).parameters
    except (TypeError, ValueError):  # no signature to read (a builtin): offer nothing
        params = {}  # type: ignore[assignment]
    offered = {"llm": lambda: _llm_config(args, "consolidator"), "guided": lambda: not args.no_guided,
               "seed": lambda: args.consolidator_seed}
    return make_consolidator(name, **{k: make() for k, make in offered.items() if k in params})


def _env_id(args: argparse.Namespace) -> str:
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
    return args.env


def _env_kwargs(args: argparse.Namespace, skip: tuple[str, ...] = ENV_SKIP) -> dict[str, object]:
    """What ``gym.make`` gets: only the env flags the user passed, and the reward agent's LLM (or, for an agent
    that is neither built-in reward agent, its name: an experiment on the id)."""
    kwargs: dict[str, object] = dataclass_kwargs(args, ConsolidationConfig, skip=skip, dest_prefix="env.")
    reward_agent = getattr(args, "reward_agent", "memory")
    if reward_agent == "llm":
        kwargs["llm"] = _llm_config(args, "agent")
    elif reward_agent != "memory":
        kwargs["reward_agent"] = reward_agent
    return kwargs


def _make_env(env_id: str, kwargs: dict[str, object]):  # noqa: ANN202 - a gym.Env
    """``gym.make`` of the id; where a flag changes a reward-defining field, an experiment on it instead
    (``ConsolidationEnv.experiment``), whose commits say ``comparable: False``."""
    import gymnasium as gym

    import dreamer_gym  # noqa: F401 - registers the ids
    from dreamer_gym.envs.consolidation import ConsolidationEnv
    from dreamer_gym.errors import FrozenParameterError

    try:
        return gym.make(env_id, **kwargs)
    except FrozenParameterError as exc:
        changed = sorted(k for k in kwargs if k in (*REWARD_FIELDS, "llm"))
        logging.getLogger(__name__).warning("flags %s change what %s's reward measures (%s): running an experiment "
                                            "on it, NOT comparable to the id", changed, env_id, str(exc).split(";")[0])
        return ConsolidationEnv.experiment(env_id, **kwargs)


def _summarise(name: str, infos: list[dict[str, object]]) -> dict[str, object]:
    ok = [i for i in infos if "error" not in i]
    n = max(len(ok), 1)

    def mean(key: str, sub: str | None = None) -> float:
        return sum(float(i[key][sub] if sub else i[key]) for i in ok) / n  # type: ignore[index]

    row: dict[str, object] = {
        "consolidator": name,
        "score before": f"{mean('score_before'):.1f}",
        "score after": f"{mean('score_after'):.1f}",
        "success before": f"{mean('success_before'):.2f}",
        "success after": f"{mean('success_after'):.2f}",
        "entries before": f"{mean('size_before', 'entries'):.1f}",
        "entries after": f"{mean('size_after', 'entries'):.1f}",
        "tokens before": f"{mean('size_before', 'tokens'):.0f}",
        "tokens after": f"{mean('size_after', 'tokens'):.0f}",
        "reward": f"{mean('return'):+.3f}",
    }
    calls = sum(int(i.get("tool_calls", 0)) for i in ok)  # type: ignore[call-overload]
    if calls:
        row["valid calls"] = f"{1 - sum(int(i['invalid_calls']) for i in ok) / calls:.2f}"  # type: ignore[call-overload]
    if len(ok) < len(infos):
        row["failed"] = len(infos) - len(ok)
    return row


def _run(args: argparse.Namespace, names: list[str], env_id: str | None = None,
         ) -> tuple[list[dict[str, object]], dict[str, list[dict[str, object]]], ConsolidationConfig]:
    """Run each consolidator over families x seeds; an LLM failure is recorded per episode, not raised.
    Returns the rows, every episode's info and the env's resolved config."""
    from tqdm.auto import tqdm

    import dreamer_gym  # noqa: F401 - registers the ids
    from dreamer_gym.consolidators import run_episode
    from dreamer_gym.errors import EvaluationFailed, LLMError

    # a commit that runs past a few seconds shows its evaluation episodes, unless --quiet
    env = _make_env(env_id or _env_id(args), {**_env_kwargs(args), "progress": not args.quiet})
    config: ConsolidationConfig = env.unwrapped.config
    results: dict[str, list[dict[str, object]]] = {}
    policies: dict[str, object] = {}
    try:
        pool = env.unwrapped.pool
        families = args.families.split(",") if args.families and env_id is None else list(pool.families)
        if getattr(args, "max_families", 0):
            families = families[: args.max_families]
        policies = {name: _make_consolidator(name, args) for name in names}
        jobs = [(c, f, s) for c in names for f in families for s in args.seeds]
        for name, family, seed in tqdm(jobs, desc="consolidate", disable=args.quiet):
            try:
                info = run_episode(env, policies[name], seed=seed, options={"family": family})  # type: ignore[arg-type]
                info["tool_calls"] = config.max_tool_calls - int(info["tool_calls_left"])
            except (LLMError, EvaluationFailed) as exc:  # recorded with its reasons; the next episode goes on
                info = {"error": f"{type(exc).__name__}: {exc}", "reasons": _reasons(exc)}
            info.update(family=family, seed=seed)
            results.setdefault(name, []).append(info)
    finally:
        for policy in policies.values():
            backend = getattr(policy, "_backend", None)
            if backend is not None:
                backend.close()
        env.close()
    return [_summarise(n, infos) for n, infos in results.items()], results, config


def _reasons(exc: Exception) -> list[str]:
    """Why an episode failed: an EvaluationFailed's distinct reasons, else the error itself."""
    errors = list(getattr(exc, "errors", ()) or ())
    return errors or [f"{type(exc).__name__}: {exc}"]


def failure_lines(results: dict[str, list[dict[str, object]]]) -> str:
    """The lines under a table that counts failures: each distinct reason once, with its count (and, where the
    table has several rows, whose)."""
    several = len(results) > 1
    reasons = [f"{r}" + (f" ({name})" if several else "") for name, infos in results.items() for info in infos
               if "error" in info for r in info.get("reasons") or [info["error"]]]  # type: ignore[union-attr]
    return failure_summary(reasons)


def _print_table(rows: list[dict[str, object]], results: dict[str, list[dict[str, object]]]) -> None:
    print(text_table(rows))
    failures = failure_lines(results)
    if failures:
        print(failures)


def _header(args: argparse.Namespace, families: int, config: ConsolidationConfig) -> str:
    from dreamer_gym.contract.frozen import comparable_id

    agent = f"{config.agent_config().name} agent" if config.llm is None else f"LLM agent ({config.llm.model})"
    label = "" if comparable_id(config) else " [experiment: reward fields changed, NOT comparable to the id]"
    return (f"\n{_env_id(args)}: {families} families x {len(args.seeds)} seeds, "
            f"{config.eval_in_family}+{config.eval_other} DEV episodes per commit, {agent}{label}\n")

def _cmd_consolidate(args: argparse.Namespace) -> int:
    """Run consolidators through the env and print what each did to score and size."""
    rows, results, config = _run(args, _names(args.consolidator))
    families = len({i["family"] for infos in results.values() for i in infos})
    print(_header(args, families, config))
    _print_table(rows, results)
    return 0 if all("failed" not in r for r in rows) else 1


def _cmd_transfer(args: argparse.Namespace) -> int:
    """The transfer track: the same consolidator(s), unchanged, on the train suite and every held-out suite;
    one table per suite. A suite this machine cannot run is listed with the reason, not skipped silently."""
    from dreamer_gym.contract.ids import TRANSFER_TRACK
    from dreamer_gym.errors import DreamerGymError

    names = _names(args.consolidator)
    # the env flags as given (None: each id's own value), by ConsolidationConfig field name
    settings = {f.name: getattr(args, f"env.{f.name}") for f, _, _ in cli_fields(ConsolidationConfig, ENV_SKIP)}
    settings.update(max_families=args.max_families, reward_agent=args.reward_agent)
    record: dict[str, object] = {"track": "transfer", "consolidators": names, "seeds": args.seeds,
                                 "settings": settings, "suites": {}}
    status = 0
    for role, base_id in TRANSFER_TRACK:
        try:
            env_id = _env_id(argparse.Namespace(**{**vars(args), "env": base_id}))
        except ConfigError as exc:  # no LLM-agent variant of this suite
            print(f"\n{base_id} ({role}): not run: {exc}")
            record["suites"][base_id] = {"role": role, "unavailable": str(exc)}  # type: ignore[index]
            continue
        try:
            rows, results, config = _run(args, names, env_id=env_id)
        except DreamerGymError as exc:
            print(f"\n{env_id} ({role}): not run here: {exc}")
            record["suites"][env_id] = {"role": role, "unavailable": str(exc)}  # type: ignore[index]
            continue
        for row in rows:
            tokens_after = float(str(row["tokens after"])) or 1.0
            row["compression"] = f"{float(str(row['tokens before'])) / tokens_after:.1f}x"
        status |= any("failed" in r for r in rows)
        print(f"\n{env_id} ({role}): {len(args.seeds)} seeds per family, "
              f"{config.eval_in_family}+{config.eval_other} DEV episodes per commit")
        _print_table(rows, results)
        record["suites"][env_id] = {"role": role, "rows": rows}  # type: ignore[index]
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(record, indent=1, default=float))
        print(f"\nwrote {args.out}")
    return int(status)


def _cmd_evaluate(args: argparse.Namespace) -> int:
    """Evaluate one consolidator; print the table and write every episode's record as JSON."""
    if args.track == "transfer":
        return _cmd_transfer(args)
    names = _names(args.consolidator)
    if len(names) > 1:
        raise ConfigError(f"evaluate takes one consolidator, got {names}; compare several with `dreamer-gym "
                          "consolidate --consolidator a,b` or run them on the transfer track with --track transfer")
    rows, results, config = _run(args, names)
    infos = results.get(names[0], [])
    print(_header(args, len({i["family"] for i in infos}), config))
    _print_table(rows, results)
    if args.out:
        keep = ("family", "seed", "error", "reasons", "return", "score_before", "score_after", "success_before", "success_after",
                "size_before", "size_after", "invalid_calls", "tool_calls", "episode_errors", "episodes")
        record = {
            "env": _env_id(args), "consolidator": args.consolidator, "reward_agent": args.reward_agent,
            "llm": _llm_config(args, "consolidator") if args.consolidator == "prompted" else None,
            "agent_llm": _llm_config(args, "agent") if args.reward_agent == "llm" else None,
            "summary": rows[0] if rows else {},
            "runs": [{k: i[k] for k in keep if k in i} for i in infos],
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(record, indent=1, default=float))
        print(f"\nwrote {args.out}")
    return 0 if infos and all("error" not in i for i in infos) else 1


def _cmd_validity(args: argparse.Namespace) -> int:
    from dreamer_gym.studies.validity import ValidityConfig, run, to_markdown

    study = dataclass_kwargs(args, ValidityConfig, skip=VALIDITY_SKIP, dest_prefix="study.")
    config = ValidityConfig(env_id=args.env, families=tuple(args.families.split(",")) if args.families else None,
                            env_kwargs=_env_kwargs(args, VALIDITY_ENV_SKIP), **study)
    summary = run(config, args.out, progress=not args.quiet)
    print(to_markdown(summary, config))
    failed = [c for c in summary["comparisons"] if not c["holds"]]
    return 1 if failed and args.strict else 0


def train_config_class(algo: str) -> type | None:
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


def _train_config(args: argparse.Namespace, cls: type) -> object:
    """``cls`` from the ``--config`` YAML, with the field flags given on the command line on top."""
    return ALGORITHMS.get(args.algo).load_config(args.train_config, dataclass_kwargs(args, cls, dest_prefix="train."))


def _cmd_train(args: argparse.Namespace) -> int:
    """``train --algo NAME``: the registered algorithm's ``run`` on its config (the ``--config`` YAML, flags on top)."""
    algorithm = ALGORITHMS.get(args.algo)
    options = TrainOptions(config_path=Path(args.train_config), quiet=args.quiet, probe=args.probe, check=args.check,
                           resume=args.resume)
    algorithm.check_options(options)
    cls = algorithm.config_class()
    return algorithm(_train_config(args, cls) if cls is not None else None, options)


def _cmd_power(args: argparse.Namespace) -> int:
    if args.track:
        return _cmd_track_power(args)
    from dreamer_gym.studies.power import PowerConfig, run, to_markdown

    out = args.out or Path("runs/power.json")
    study = dataclass_kwargs(args, PowerConfig, skip=POWER_SKIP, dest_prefix="power.")
    config = PowerConfig(env_id=args.env, families=tuple(args.families.split(",")) if args.families else None, **study)
    print(to_markdown(run(config, out, progress=not args.quiet)))
    print(f"wrote {out}")
    return 0


def _cmd_track_power(args: argparse.Namespace) -> int:
    """``power --track NAME...``: each track's MDD on its committed results and the sizing table."""
    from dreamer_gym.studies.track_power import TrackPowerConfig, run, to_markdown

    out = args.out or Path(f"runs/track-power-{'-'.join(args.track)}.json")
    config = TrackPowerConfig(**dataclass_kwargs(args, TrackPowerConfig, dest_prefix="track_power."))
    records = run(args.track, args.results, config, out, progress=not args.quiet)
    print("\n".join(to_markdown(r) for r in records.values()))
    print(f"wrote {out}")
    return 0


def _cmd_learnability(args: argparse.Namespace) -> int:
    from dreamer_gym.studies.learnability import LearnabilityConfig, run, to_markdown

    if args.track:
        return _cmd_track_learnability(args)
    study = dataclass_kwargs(args, LearnabilityConfig, skip=LEARNABILITY_SKIP, dest_prefix="learnability.")
    config = LearnabilityConfig(env_id=args.env, families=tuple(args.families.split(",")) if args.families else None,
                                **study)
    print(to_markdown(run(config, args.out, progress=not args.quiet)))
    print(f"wrote {args.out}/learnability.json and learnability.md")
    return 0


def _cmd_track_learnability(args: argparse.Namespace) -> int:
    """``learnability --track NAME``: the study on a track's committed rows (folds of its TEST episodes)."""
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


def _add_env_flags(p: argparse.ArgumentParser, skip: tuple[str, ...]) -> None:
    g = p.add_argument_group("env (ConsolidationConfig fields; default: the env id's value)")
    add_dataclass_arguments(g, ConsolidationConfig, skip=skip, dest_prefix="env.",
                            help_suffix="(ConsolidationConfig default: {default})")


def _deprecated(p: argparse.ArgumentParser, flag: str, dest: str, kind: type) -> None:
    """An old flag name, hidden, kept working for recorded commands."""
    p.add_argument(flag, dest=dest, type=kind, default=None, help=argparse.SUPPRESS)


DESCRIPTION = "The dreamer_gym benchmark (learned memory consolidation as a Gymnasium env) from the command line."
CONFIG_HELP = ("YAML file of flag values (the command line wins), or the name of a shipped recipe: {names}")
ENV_HELP = "registered env id (dreamer_gym's ids: docs/env.md; a typo gets a suggestion)"


def _config_flag(p: argparse.ArgumentParser, dest: str = "config", required: bool = False) -> None:
    p.add_argument("--config", dest=dest, default=None, required=required, metavar="FILE|NAME",
                   help=CONFIG_HELP.format(names=", ".join(recipe_names())))


def _add_run_flags(p: argparse.ArgumentParser) -> None:
    """What consolidate and evaluate share: seeds, families, env flags, LLM flags."""
    _config_flag(p)
    p.add_argument("--families", default="", help="comma-separated families (default: every family of the pool)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0],
                   help="reset seeds: each consolidator plays one episode per family per seed (default: 0)")
    p.add_argument("--reward-agent", default="memory", metavar="NAME",
                   help="memory (the id's), llm (the LLM-agent variant of --env) or any registered downstream agent "
                        "(an experiment on --env: not comparable to the id; docs/byo.md)")
    _add_env_flags(p, ENV_SKIP)
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
        _deprecated(p, flag, dest, kind)


def _add_train_parser(sub: argparse._SubParsersAction, algo: str | None) -> None:
    """``train``; the fields of ``--algo``'s config dataclass are its flags (only those of the algorithm named on
    the command line exist: the op-level and SB3 configs need torch to import)."""
    p = sub.add_parser("train", help="train a consolidator on an env id: GRPO (docs/grpo.md), op-level or SB3 "
                       "(docs/byo.md)", description="Train a consolidator. The --config YAML gives the config "
                       "dataclass's fields; a flag of the same name overrides it (`train --algo ALGO --help` lists "
                       "ALGO's).")
    p.add_argument("--algo", type=_algorithm_name, default="grpo", metavar="NAME", help=_algo_help())
    _config_flag(p, dest="train_config", required=True)
    p.add_argument("--probe", type=int, default=0, metavar="GROUPS",
                   help="--algo grpo: do not train: play GROUPS groups per family with the untrained policy and "
                   "report, per family, the share of rollouts whose downstream score changes (output_dir/probe.json)")
    p.add_argument("--check", action="store_true", help="--algo trl: validate the recipe and exit")
    p.add_argument("--resume", action="store_true", help="--algo trl: resume from trl.output_dir's last checkpoint")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    cls = train_config_class(algo) if algo else None
    if cls is not None:
        g = p.add_argument_group(f"--algo {algo}: {cls.__name__} fields (override the --config YAML's)")
        add_dataclass_arguments(g, cls, dest_prefix="train.", help_suffix="(dataclass default: {default})")
    p.set_defaults(func=_cmd_train)


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


def _train_algo(argv: list[str] | None) -> str | None:
    """The ``--algo`` of a ``train`` command line (grpo when not given), read before the parser is built; None
    when the command is not ``train`` (its flags are not needed, nor the extras their config classes import)."""
    words = [a for a in argv or () if not a.startswith("-")]
    if not words or words[0] != "train":
        return None
    peek = argparse.ArgumentParser(add_help=False)
    peek.add_argument("--algo", default="grpo")
    return str(peek.parse_known_args(argv[argv.index("train") + 1:])[0].algo)  # type: ignore[union-attr]


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
    from dreamer_gym.studies.learnability import LearnabilityConfig
    from dreamer_gym.studies.power import PowerConfig
    from dreamer_gym.studies.track_power import TrackPowerConfig
    from dreamer_gym.studies.validity import ValidityConfig

    parser = argparse.ArgumentParser(prog="dreamer-gym", description=DESCRIPTION, formatter_class=_HelpFormatter,
                                     epilog="`dreamer-gym COMMAND --help` for a command's flags. An expected error "
                                     "is one line and exit code 2; --debug shows its traceback.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    parser.add_argument("--debug", action="store_true",
                        help="show the traceback of an error instead of one line (anywhere on the line; also DREAMER_GYM_DEBUG=1)")
    sub = parser.add_subparsers(dest="command", required=True, title="commands", metavar="COMMAND")

    p = sub.add_parser("acquire", help="build a frozen bank pool by real acquisition")
    p.add_argument("--suite", default="scienceworld", help="registered suite name (default: scienceworld)")
    p.add_argument("--families", default="", help="comma-separated task families (default: the suite's training "
                   "families, or with --held-out its held-out ones)")
    p.add_argument("--held-out", action="store_true", help="a held-out pool: the suite's held_out_families "
                   "(use bank seeds no training pool uses)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2],
                   help="bank seeds: one bank per seed (default: 0 1 2)")
    p.add_argument("--eval-variations", type=int, default=10, help="evaluation variations per family")
    p.add_argument("--gold-variations", type=int, default=20, help="variations whose gold paths the oracle reads")
    p.add_argument("--schedule", choices=("rounds", "interleaved"), default="rounds",
                   help="rounds: each session plays every family once (the -v0 pools); interleaved: each episode "
                   "is a session, its family drawn from the bank's own task mix, and regions are time windows")
    p.add_argument("--episodes", default="16-32", help="interleaved: episodes per bank, N or LOW-HIGH (each bank "
                   "draws its count from the range by its seed; default: 16-32)")
    p.add_argument("--skills", default="0.5,1,2", help="interleaved: writer noise multipliers, cycled over the bank "
                   "seeds (0.5 an expert, 2 a novice; default: 0.5,1,2)")
    p.add_argument("--train-variations", type=int, default=None,
                   help="interleaved: train variations the expert draws from (default: 10)")
    p.add_argument("--window", type=int, default=4, help="interleaved: sessions per window region (default: 4)")
    p.add_argument("--stride", type=int, default=2, help="interleaved: a new window every N sessions (default: 2)")
    p.add_argument("--out", type=Path, required=True, help="where the pool goes (.json.gz)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=_cmd_acquire)

    p = sub.add_parser("consolidate", help="run consolidators through the env and print a table")
    p.add_argument("--env", default="MemoryConsolidation-ScienceWorld-v1", help=ENV_HELP)
    p.add_argument("--consolidator", default=DEFAULT_CONSOLIDATORS,
                   help=f"comma-separated registered names (default: {DEFAULT_CONSOLIDATORS})")
    _deprecated(p, "--consolidators", "consolidator", str)
    _add_run_flags(p)
    p.set_defaults(func=_cmd_consolidate)

    p = sub.add_parser("evaluate", help="evaluate one consolidator (table + JSON record)")
    p.add_argument("--env", default="MemoryConsolidation-ScienceWorld-v1", help=ENV_HELP)
    p.add_argument("--consolidator", default="prompted",
                   help="registered consolidator name (--track transfer: a comma-separated list)")
    p.add_argument("--track", choices=("single", "transfer"), default="single",
                   help="transfer: the train suite and every held-out suite, one table each")
    p.add_argument("--max-families", type=int, default=0, help="only the first N families of each suite")
    p.add_argument("--out", type=Path, default=None, help="write the per-episode record here (JSON)")
    _add_run_flags(p)
    p.set_defaults(func=_cmd_evaluate)

    p = sub.add_parser("validity", help="the reward-validity study (paired bootstrap CIs)")
    _config_flag(p)
    p.add_argument("--env", default="MemoryConsolidation-ScienceWorld-v0", help=ENV_HELP)
    p.add_argument("--families", default="", help="comma-separated families (default: every family of the pool)")
    g = p.add_argument_group("study (ValidityConfig fields)")
    add_dataclass_arguments(g, ValidityConfig, skip=VALIDITY_SKIP, dest_prefix="study.")
    _deprecated(p, "--episodes", "study.episodes_per_family", int)
    _add_env_flags(p, VALIDITY_ENV_SKIP)
    p.add_argument("--out", type=Path, default=Path("runs/validity"), help="output folder (default: runs/validity)")
    p.add_argument("--strict", action="store_true", help="exit 1 if an expected comparison fails")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=_cmd_validity)

    _add_train_parser(sub, _train_algo(argv))

    p = sub.add_parser("serve", help="serve an env id as an OpenEnv environment server (docs/byo.md)",
                       description="Serve a registered env id as an OpenEnv environment server: TRL, SkyRL, verifiers "
                       "and any OpenEnv client train on it over a WebSocket (docs/byo.md).")
    from dreamer_gym.remote.openenv_server import add_arguments as add_serve_arguments
    from dreamer_gym.remote.openenv_server import run as run_server

    add_serve_arguments(p)
    p.set_defaults(func=run_server)

    from dreamer_gym.leaderboard.board_commands import add_parser as add_leaderboard_parser

    add_leaderboard_parser(sub)

    p = sub.add_parser("power", help="the reward's noise and the commits a GRPO group needs (registered id as is); "
                       "with --track: a track's minimum detectable difference and the size that reaches a target")
    p.add_argument("--env", default="MemoryConsolidation-ScienceWorld-v0", help=ENV_HELP)
    p.add_argument("--families", default="", help="comma-separated families (default: every family of the pool)")
    g = p.add_argument_group("study (PowerConfig fields)")
    add_dataclass_arguments(g, PowerConfig, skip=POWER_SKIP, dest_prefix="power.")
    g = p.add_argument_group("track power (--track; TrackPowerConfig fields, docs/power.md)")
    g.add_argument("--track", nargs="+", default=None, metavar="TRACK",
                   help="instead of the reward study: each track's MDD on its committed results, and its sizing table")
    g.add_argument("--results", type=Path, default=None, help="results folder (default: the checkout's "
                   "leaderboards/results)")
    add_dataclass_arguments(g, TrackPowerConfig, dest_prefix="track_power.")
    p.add_argument("--out", type=Path, default=None, help="the JSON record (default: runs/power.json; with --track, "
                   "runs/track-power-TRACKS.json)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=_cmd_power)

    p = sub.add_parser("learnability", help="does the best fixed rule depend on the region? (cross-fitted gap, CI)")
    p.add_argument("--env", default="MemoryConsolidation-ScienceWorld-v1", help=ENV_HELP)
    p.add_argument("--families", default="", help="comma-separated families (default: every family of the pool)")
    p.add_argument("--track", default="", help="study a held-out track's committed rows instead of running the env: "
                   "its rule rows cross-fitted on --draws disjoint folds of its TEST episodes, and its trained rows read "
                   "against them (input dependence, paired CIs); --rules, --env and --workers do not apply")
    p.add_argument("--results", type=Path, default=None, help="with --track: the results folder (default: the board's)")
    p.add_argument("--archive", type=Path, default=None, metavar="leaderboards/archive/protocol-N",
                   help="with --track: an archived protocol's track and rows (the before of a protocol bump)")
    g = p.add_argument_group("study (LearnabilityConfig fields)")
    add_dataclass_arguments(g, LearnabilityConfig, skip=LEARNABILITY_SKIP, dest_prefix="learnability.")
    p.add_argument("--out", type=Path, default=Path("runs/learnability"),
                   help="output folder (default: runs/learnability)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=_cmd_learnability)
    return parser


def _version() -> str:
    try:
        return metadata.version("dreamer-gym")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        from dreamer_gym import __version__

        return str(__version__)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Parse ``argv``; ``--config FILE|NAME`` is resolved to a file (a bare name is a shipped recipe) and, for
    every command but ``train`` (whose config class reads its own YAML), the file's values become the defaults
    and flags still win.

    Raises:
        ConfigError: no such config file or recipe, or the file has an unknown key or a value of the wrong type.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    if getattr(args, "train_config", None) is not None:
        args.train_config = resolve_config(args.train_config)
    if getattr(args, "config", None) is not None:
        path = resolve_config(args.config)
        apply_config_file(subparser(parser, args.command), path)
        args = parser.parse_args(argv)
        args.config = path
    return args


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


def main(argv: list[str] | None = None) -> int:
    """The ``dreamer-gym`` entry point: the command's exit status; 2 (one line on stderr) on an expected error."""
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
        check_args(args)
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        if debug:
            raise
        print(f"{prog}: interrupted", file=sys.stderr)
        return INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - an expected error is one line; anything else keeps its traceback
        message = error_message(exc)
        if message is None or debug:
            raise
        print(f"{prog}: error: {message}", file=sys.stderr)
        return USAGE_ERROR


if __name__ == "__main__":
    sys.exit(main())
