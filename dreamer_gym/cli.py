"""`dreamer-gym` command line: acquire, consolidate, evaluate, validity."""
from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path


def _cmd_acquire(args: argparse.Namespace) -> int:
    from dreamer_gym.envs.config import DEFAULT_FAMILIES
    from dreamer_gym.pool import build_pool
    from dreamer_gym.suites import make_suite

    with make_suite(args.suite) as suite:  # type: ignore[attr-defined]
        default = DEFAULT_FAMILIES if args.suite == "scienceworld" else tuple(suite.families)  # type: ignore[attr-defined]
        families = tuple(args.families.split(",")) if args.families else default
        pool = build_pool(suite, families, tuple(args.seeds), args.eval_variations, args.gold_variations,
                          progress=not args.quiet)
    pool.save(args.out)
    print(json.dumps({"pool": str(args.out), "hash": pool.hash, "banks": [len(b) for b in pool.banks],
                      "trajectories": len(pool.trajectories)}))
    return 0


def _table(rows: list[dict[str, object]]) -> str:
    cols = list(rows[0])
    widths = {c: max(len(c), *(len(f"{r[c]}") for r in rows)) for c in cols}
    line = " | ".join(c.ljust(widths[c]) for c in cols)
    sep = "-+-".join("-" * widths[c] for c in cols)
    body = [" | ".join(f"{r[c]}".ljust(widths[c]) for c in cols) for r in rows]
    return "\n".join([line, sep, *body])


TRANSFER_COLUMNS = ("consolidator", "score before", "score after", "success before", "success after",
                    "entries before", "entries after", "tokens before", "tokens after", "compression", "reward")


def markdown_table(rows: list[dict[str, object]], columns: tuple[str, ...] = TRANSFER_COLUMNS) -> str:
    """``rows`` as a Markdown table: how docs quote a recorded ``evaluate --out`` run (a test checks they do)."""
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(str(r[c]) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


def _llm_config(args: argparse.Namespace, role: str) -> dict[str, object]:
    """The LLM config a flag set asks for, as a plain dict (never holds a key: only its env var name)."""
    backend = getattr(args, f"{role}_backend", None) or args.backend
    model = getattr(args, f"{role}_model", None) or args.model
    return {"backend": backend, "model": model, "base_url": args.base_url, "api_key_env": args.api_key_env,
            "max_context": args.max_context, "timeout_s": args.timeout}


def _make_consolidator(name: str, args: argparse.Namespace, backend: object | None = None) -> object:
    from baselines import REGISTRY

    if name == "prompted":
        from baselines.prompted import PromptedConsolidator

        return PromptedConsolidator(backend=backend, llm=_llm_config(args, "consolidator"),  # type: ignore[arg-type]
                                    guided=not args.no_guided, seed=args.llm_seed)
    if name not in REGISTRY:
        raise SystemExit(f"unknown consolidator {name!r}; known: {sorted([*REGISTRY, 'prompted'])}")
    return REGISTRY[name]()


def _env_id(args: argparse.Namespace) -> str:
    """``--reward-agent llm`` picks the LLM-agent variant of ``--env`` (the reward agent is frozen per id)."""
    from dreamer_gym.envs.tracks import LLM_VARIANTS, REGISTERED

    if args.reward_agent == "llm" and REGISTERED.get(args.env, {}).get("reward_agent") != "llm":
        if args.env not in LLM_VARIANTS:
            raise SystemExit(f"{args.env} has no LLM-agent variant; known: {sorted(LLM_VARIANTS.values())}")
        return LLM_VARIANTS[args.env]
    if args.reward_agent == "memory" and REGISTERED.get(args.env, {}).get("reward_agent") == "llm":
        raise SystemExit(f"{args.env} is rewarded by the LLM agent; pass --reward-agent llm or another --env")
    return args.env


def _env_kwargs(args: argparse.Namespace) -> dict[str, object]:
    kwargs: dict[str, object] = {"workers": args.workers, "eval_in_family": args.episodes, "eval_other": args.other}
    if args.reward_agent == "llm":
        kwargs["llm"] = _llm_config(args, "agent")
        kwargs["agent_max_steps"] = args.agent_max_steps
    if args.max_tool_calls:
        kwargs["max_tool_calls"] = args.max_tool_calls
    if args.region_entries:
        kwargs["max_region_entries"] = args.region_entries
    return kwargs


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
         ) -> tuple[list[dict[str, object]], dict[str, list[dict[str, object]]]]:
    """Run each consolidator over families x seeds; an LLM failure is recorded per episode, not raised."""
    import gymnasium as gym
    from tqdm.auto import tqdm

    import dreamer_gym  # noqa: F401 - registers the ids
    from baselines import run_episode
    from dreamer_gym.errors import LLMError

    env = gym.make(env_id or _env_id(args), **_env_kwargs(args))
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
                info["tool_calls"] = env.unwrapped.config.max_tool_calls - int(info["tool_calls_left"])
            except LLMError as exc:
                info = {"error": f"{type(exc).__name__}: {exc}"}
            info.update(family=family, seed=seed)
            results.setdefault(name, []).append(info)
    finally:
        for policy in policies.values():
            backend = getattr(policy, "_backend", None)
            if backend is not None:
                backend.close()
        env.close()
    return [_summarise(n, infos) for n, infos in results.items()], results


def _header(args: argparse.Namespace, families: int) -> str:
    agent = "memory-following agent" if args.reward_agent == "memory" else f"LLM agent ({args.agent_model or args.model})"
    return (f"\n{_env_id(args)}: {families} families x {len(args.seeds)} seeds, "
            f"{args.episodes}+{args.other} DEV episodes per commit, {agent}\n")


def _cmd_consolidate(args: argparse.Namespace) -> int:
    """Run consolidators through the env and print what each did to score and size."""
    names = (args.consolidator or args.consolidators).split(",")
    rows, results = _run(args, names)
    families = len({i["family"] for infos in results.values() for i in infos})
    print(_header(args, families))
    print(_table(rows))
    return 0 if all("failed" not in r for r in rows) else 1


def _cmd_transfer(args: argparse.Namespace) -> int:
    """The transfer track: the same consolidator(s), unchanged, on the train suite and every held-out suite;
    one table per suite. A suite this machine cannot run is listed with the reason, not skipped silently."""
    from dreamer_gym.envs.tracks import TRANSFER_TRACK
    from dreamer_gym.errors import DreamerGymError

    names = args.consolidator.split(",")
    settings = {k: getattr(args, k, None) for k in ("episodes", "other", "region_entries", "max_tool_calls",
                                                    "max_families", "reward_agent", "workers")}
    record: dict[str, object] = {"track": "transfer", "consolidators": names, "seeds": args.seeds,
                                 "settings": settings, "suites": {}}
    status = 0
    for role, base_id in TRANSFER_TRACK:
        try:
            env_id = _env_id(argparse.Namespace(**{**vars(args), "env": base_id}))
        except SystemExit as exc:  # no LLM-agent variant of this suite
            print(f"\n{base_id} ({role}): not run: {exc}")
            record["suites"][base_id] = {"role": role, "unavailable": str(exc)}  # type: ignore[index]
            continue
        try:
            rows, _ = _run(args, names, env_id=env_id)
        except DreamerGymError as exc:
            print(f"\n{env_id} ({role}): not run here: {exc}")
            record["suites"][env_id] = {"role": role, "unavailable": str(exc)}  # type: ignore[index]
            continue
        for row in rows:
            tokens_after = float(str(row["tokens after"])) or 1.0
            row["compression"] = f"{float(str(row['tokens before'])) / tokens_after:.1f}x"
        status |= any("failed" in r for r in rows)
        print(f"\n{env_id} ({role}): {len(args.seeds)} seeds per family, {args.episodes}+{args.other} DEV episodes per commit")
        print(_table(rows))
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
    rows, results = _run(args, [args.consolidator])
    infos = results.get(args.consolidator, [])
    print(_header(args, len({i["family"] for i in infos})))
    print(_table(rows))
    if args.out:
        keep = ("family", "seed", "error", "return", "score_before", "score_after", "success_before", "success_after",
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
    from baselines.validity import ValidityConfig, run, to_markdown

    config = ValidityConfig(env_id=args.env, seeds=tuple(args.seeds), episodes_per_family=args.episodes, workers=args.workers,
                            families=tuple(args.families.split(",")) if args.families else None)
    summary = run(config, args.out, progress=not args.quiet)
    print(to_markdown(summary, config))
    failed = [c for c in summary["comparisons"] if not c["holds"]]
    return 1 if failed and args.strict else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dreamer-gym", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("acquire", help="build a frozen bank pool by real acquisition")
    p.add_argument("--suite", default="scienceworld")
    p.add_argument("--families", default="", help="comma-separated task families (default: the env's)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--eval-variations", type=int, default=10)
    p.add_argument("--gold-variations", type=int, default=20)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=_cmd_acquire)

    for command, func, helptext in (
        ("consolidate", _cmd_consolidate, "run consolidators through the env and print a table"),
        ("evaluate", _cmd_evaluate, "evaluate one consolidator (table + JSON record)"),
    ):
        p = sub.add_parser(command, help=helptext)
        p.add_argument("--env", default="MemoryConsolidation-ScienceWorld-v0")
        if command == "consolidate":
            p.add_argument("--consolidators", default="keep-all,dedupe,empty,blind,oracle")
            p.add_argument("--consolidator", default="", help="one consolidator (overrides --consolidators)")
        else:
            p.add_argument("--consolidator", default="prompted",
                           help="consolidator name (--track transfer: a comma-separated list)")
            p.add_argument("--track", choices=("single", "transfer"), default="single",
                           help="transfer: the train suite and every held-out suite, one table each")
            p.add_argument("--max-families", type=int, default=0, help="only the first N families of each suite")
            p.add_argument("--out", type=Path, default=None, help="write the per-episode record here (JSON)")
        p.add_argument("--families", default="")
        p.add_argument("--seeds", type=int, nargs="+", default=[0])
        p.add_argument("--episodes", type=int, default=3, help="DEV episodes of the region's family per commit")
        p.add_argument("--other", type=int, default=2, help="DEV episodes of other families per commit")
        p.add_argument("--workers", type=int, default=0)
        p.add_argument("--max-tool-calls", type=int, default=0, help="tool-call budget (0 = the env's default)")
        p.add_argument("--region-entries", type=int, default=0, help="largest region shown (0 = the env's default)")
        p.add_argument("--reward-agent", choices=("memory", "llm"), default="memory")
        p.add_argument("--agent-max-steps", type=int, default=30, help="LLM reward agent: steps per episode")
        g = p.add_argument_group("LLM (prompted consolidator and LLM reward agent)")
        g.add_argument("--backend", choices=("transformers", "vllm", "openai"), default="transformers")
        g.add_argument("--model", default="smollm2-135m", help="hub id, local folder, served name, or smollm2-135m")
        g.add_argument("--consolidator-backend", default=None, help="override --backend for the consolidator")
        g.add_argument("--consolidator-model", default=None, help="override --model for the consolidator")
        g.add_argument("--agent-backend", default=None, help="override --backend for the reward agent")
        g.add_argument("--agent-model", default=None, help="override --model for the reward agent")
        g.add_argument("--base-url", default=None, help="openai backend: e.g. http://127.0.0.1:8000/v1")
        g.add_argument("--api-key-env", default="OPENAI_API_KEY", help="environment variable holding the API key")
        g.add_argument("--max-context", type=int, default=4096)
        g.add_argument("--timeout", type=float, default=120.0, help="seconds per LLM request")
        g.add_argument("--no-guided", action="store_true", help="prompted: no guided JSON decoding")
        g.add_argument("--llm-seed", type=int, default=0)
        p.add_argument("--quiet", action="store_true")
        p.set_defaults(func=func)

    p = sub.add_parser("validity", help="the reward-validity study (paired bootstrap CIs)")
    p.add_argument("--env", default="MemoryConsolidation-ScienceWorld-v0")
    p.add_argument("--families", default="")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--episodes", type=int, default=5)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--out", type=Path, default=Path("runs/validity"))
    p.add_argument("--strict", action="store_true", help="exit 1 if an expected comparison fails")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=_cmd_validity)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
