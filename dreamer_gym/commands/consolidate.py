"""``consolidate`` and ``evaluate``: consolidators from the registry run through an env id, one table each (and for
``evaluate``, a JSON record written whole or not at all). The same filter, env and LLM flags on both
(:func:`~dreamer_gym.commands.flags.add_run_flags`)."""
from __future__ import annotations

import argparse
import inspect
import json
from pathlib import Path

from dreamer_gym.cli_args import cli_fields
from dreamer_gym.commands.flags import (
    ENV_HELP,
    ENV_SKIP,
    add_run_flags,
    deprecated,
    env_id,
    env_kwargs,
    llm_config,
    make_env,
)
from dreamer_gym.envs.config import ConsolidationConfig
from dreamer_gym.errors import ConfigError
from dreamer_gym.evaluation.failures import failure_summary
from dreamer_gym.interrupts import write_text_atomic
from dreamer_gym.training.logs import text_table

DEFAULT_ENV = "MemoryConsolidation-ScienceWorld-v1"
DEFAULT_CONSOLIDATORS = "keep-all,dedupe,empty,blind,oracle,random"
TRANSFER_COLUMNS = ("consolidator", "score before", "score after", "success before", "success after",
                    "entries before", "entries after", "tokens before", "tokens after", "compression", "reward")
RECORD_KEYS = ("family", "seed", "error", "reasons", "return", "score_before", "score_after", "success_before",
               "success_after", "size_before", "size_after", "invalid_calls", "tool_calls", "episode_errors", "episodes")


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("consolidate", help="run consolidators through the env and print a table")
    p.add_argument("--env", default=DEFAULT_ENV, help=ENV_HELP)
    p.add_argument("--consolidator", default=DEFAULT_CONSOLIDATORS,
                   help=f"comma-separated registered names (default: {DEFAULT_CONSOLIDATORS})")
    deprecated(p, "--consolidators", "consolidator", str)
    add_run_flags(p, "consolidate")
    p.set_defaults(func=cmd_consolidate)

    p = sub.add_parser("evaluate", help="evaluate one consolidator (table + JSON record)")
    p.add_argument("--env", default=DEFAULT_ENV, help=ENV_HELP)
    p.add_argument("--consolidator", default="prompted",
                   help="registered consolidator name (--track transfer: a comma-separated list)")
    p.add_argument("--track", choices=("single", "transfer"), default="single",
                   help="transfer: the train suite and every held-out suite, one table each (default: single)")
    p.add_argument("--out", type=Path, default=None, help="write the per-episode record here (JSON)")
    add_run_flags(p, "evaluate")
    p.set_defaults(func=cmd_evaluate)


def markdown_table(rows: list[dict[str, object]], columns: tuple[str, ...] = TRANSFER_COLUMNS) -> str:
    """``rows`` as a Markdown table: how docs quote a recorded ``evaluate --out`` run (a test checks they do)."""
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(str(r[c]) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


def names(value: str) -> list[str]:
    """A comma-separated list of consolidator names, each looked up in the registry before anything starts.

    Raises:
        ConfigError: a name is unknown (the message lists the known ones) or the list is empty.
    """
    from dreamer_gym.consolidators import get_consolidator_factory

    found = [n.strip() for n in value.split(",") if n.strip()]
    if not found:
        raise ConfigError(f"Expected --consolidator to name one or more consolidators (a comma list), got {value!r}")
    for name in found:
        get_consolidator_factory(name)
    return found


def make_consolidator(name: str, args: argparse.Namespace) -> object:
    """Build consolidator ``name`` from the registry, handing it what its constructor asks for by name:
    ``llm`` (the consolidator's LLM config), ``guided`` and ``seed``."""
    from dreamer_gym.consolidators import get_consolidator_factory
    from dreamer_gym.consolidators import make_consolidator as make

    try:
        params = inspect.signature(get_consolidator_factory(name)).parameters
    except (TypeError, ValueError):  # no signature to read (a builtin): offer nothing
        params = {}  # type: ignore[assignment]
    offered = {"llm": lambda: llm_config(args, "consolidator"), "guided": lambda: not args.no_guided,
               "seed": lambda: args.consolidator_seed}
    return make(name, **{k: build() for k, build in offered.items() if k in params})


def summarise(name: str, infos: list[dict[str, object]]) -> dict[str, object]:
    """One table row: the means over the episodes that ran, and how many failed."""
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


def run(args: argparse.Namespace, consolidators: list[str], the_env_id: str | None = None,
        ) -> tuple[list[dict[str, object]], dict[str, list[dict[str, object]]], ConsolidationConfig]:
    """Run each consolidator over families x seeds; an LLM failure is recorded per episode, not raised.
    Returns the rows, every episode's info and the env's resolved config."""
    from tqdm.auto import tqdm

    import dreamer_gym  # noqa: F401 - registers the ids
    from dreamer_gym.consolidators import run_episode
    from dreamer_gym.errors import EvaluationFailed, LLMError

    # a commit that runs past a few seconds shows its evaluation episodes, unless --quiet
    env = make_env(the_env_id or env_id(args), {**env_kwargs(args), "progress": not args.quiet})
    config: ConsolidationConfig = env.unwrapped.config
    results: dict[str, list[dict[str, object]]] = {}
    policies: dict[str, object] = {}
    try:
        pool = env.unwrapped.pool
        families = args.families.split(",") if args.families and the_env_id is None else list(pool.families)
        if args.max_families:
            families = families[: args.max_families]
        policies = {name: make_consolidator(name, args) for name in consolidators}
        jobs = [(c, f, s) for c in consolidators for f in families for s in args.seeds]
        for name, family, seed in tqdm(jobs, desc="consolidate", disable=args.quiet):
            try:
                info = run_episode(env, policies[name], seed=seed, options={"family": family})  # type: ignore[arg-type]
                info["tool_calls"] = config.max_tool_calls - int(info["tool_calls_left"])
            except (LLMError, EvaluationFailed) as exc:  # recorded with its reasons; the next episode goes on
                info = {"error": f"{type(exc).__name__}: {exc}", "reasons": reasons(exc)}
            info.update(family=family, seed=seed)
            results.setdefault(name, []).append(info)
    finally:
        for policy in policies.values():
            backend = getattr(policy, "_backend", None)
            if backend is not None:
                backend.close()
        env.close()
    return [summarise(n, infos) for n, infos in results.items()], results, config


def reasons(exc: Exception) -> list[str]:
    """Why an episode failed: an EvaluationFailed's distinct reasons, else the error itself."""
    errors = list(getattr(exc, "errors", ()) or ())
    return errors or [f"{type(exc).__name__}: {exc}"]


def failure_lines(results: dict[str, list[dict[str, object]]]) -> str:
    """The lines under a table that counts failures: each distinct reason once, with its count (and, where the
    table has several rows, whose)."""
    several = len(results) > 1
    found = [f"{r}" + (f" ({name})" if several else "") for name, infos in results.items() for info in infos
             if "error" in info for r in info.get("reasons") or [info["error"]]]  # type: ignore[union-attr]
    return failure_summary(found)


def print_table(rows: list[dict[str, object]], results: dict[str, list[dict[str, object]]]) -> None:
    print(text_table(rows))
    failures = failure_lines(results)
    if failures:
        print(failures)


def header(args: argparse.Namespace, families: int, config: ConsolidationConfig) -> str:
    from dreamer_gym.contract.frozen import comparable_id

    agent = f"{config.agent_config().name} agent" if config.llm is None else f"LLM agent ({config.llm.model})"
    label = "" if comparable_id(config) else " [experiment: reward fields changed, NOT comparable to the id]"
    return (f"\n{env_id(args)}: {families} families x {len(args.seeds)} seeds, "
            f"{config.eval_in_family}+{config.eval_other} DEV episodes per commit, {agent}{label}\n")


def cmd_consolidate(args: argparse.Namespace) -> int:
    """Run consolidators through the env and print what each did to score and size."""
    rows, results, config = run(args, names(args.consolidator))
    families = len({i["family"] for infos in results.values() for i in infos})
    print(header(args, families, config))
    print_table(rows, results)
    return 0 if all("failed" not in r for r in rows) else 1


def cmd_transfer(args: argparse.Namespace) -> int:
    """The transfer track: the same consolidator(s), unchanged, on the train suite and every held-out suite;
    one table per suite. A suite this machine cannot run is listed with the reason, not skipped silently."""
    from dreamer_gym.contract.ids import TRANSFER_TRACK
    from dreamer_gym.errors import DreamerGymError

    consolidators = names(args.consolidator)
    # the env flags as given (None: each id's own value), by ConsolidationConfig field name
    settings = {f.name: getattr(args, f"env.{f.name}") for f, _, _ in cli_fields(ConsolidationConfig, ENV_SKIP)}
    settings.update(max_families=args.max_families, reward_agent=args.reward_agent)
    record: dict[str, object] = {"track": "transfer", "consolidators": consolidators, "seeds": args.seeds,
                                 "settings": settings, "suites": {}}
    status = 0
    for role, base_id in TRANSFER_TRACK:
        try:
            suite_id = env_id(argparse.Namespace(**{**vars(args), "env": base_id}))
        except ConfigError as exc:  # no LLM-agent variant of this suite
            print(f"\n{base_id} ({role}): not run: {exc}")
            record["suites"][base_id] = {"role": role, "unavailable": str(exc)}  # type: ignore[index]
            continue
        try:
            rows, results, config = run(args, consolidators, the_env_id=suite_id)
        except DreamerGymError as exc:
            print(f"\n{suite_id} ({role}): not run here: {exc}")
            record["suites"][suite_id] = {"role": role, "unavailable": str(exc)}  # type: ignore[index]
            continue
        for row in rows:
            tokens_after = float(str(row["tokens after"])) or 1.0
            row["compression"] = f"{float(str(row['tokens before'])) / tokens_after:.1f}x"
        status |= any("failed" in r for r in rows)
        print(f"\n{suite_id} ({role}): {len(args.seeds)} seeds per family, "
              f"{config.eval_in_family}+{config.eval_other} DEV episodes per commit")
        print_table(rows, results)
        record["suites"][suite_id] = {"role": role, "rows": rows}  # type: ignore[index]
    if args.out:
        write_text_atomic(args.out, json.dumps(record, indent=1, default=float))
        print(f"\nwrote {args.out}")
    return int(status)


def cmd_evaluate(args: argparse.Namespace) -> int:
    """Evaluate one consolidator; print the table and write every episode's record as JSON."""
    if args.track == "transfer":
        return cmd_transfer(args)
    consolidators = names(args.consolidator)
    if len(consolidators) > 1:
        raise ConfigError(f"evaluate takes one consolidator, got {consolidators}; compare several with `dreamer-gym "
                          "consolidate --consolidator a,b` or run them on the transfer track with --track transfer")
    rows, results, config = run(args, consolidators)
    infos = results.get(consolidators[0], [])
    print(header(args, len({i["family"] for i in infos}), config))
    print_table(rows, results)
    if args.out:
        record = {
            "env": env_id(args), "consolidator": args.consolidator, "reward_agent": args.reward_agent,
            "llm": llm_config(args, "consolidator") if args.consolidator == "prompted" else None,
            "agent_llm": llm_config(args, "agent") if args.reward_agent == "llm" else None,
            "summary": rows[0] if rows else {},
            "runs": [{k: i[k] for k in RECORD_KEYS if k in i} for i in infos],
        }
        write_text_atomic(args.out, json.dumps(record, indent=1, default=float))
        print(f"\nwrote {args.out}")
    return 0 if infos and all("error" not in i for i in infos) else 1
