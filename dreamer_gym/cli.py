"""`dreamer-gym` command line: acquire, consolidate, validity, demo."""
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

    families = tuple(args.families.split(",")) if args.families else DEFAULT_FAMILIES
    with make_suite(args.suite) as suite:  # type: ignore[attr-defined]
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


def _cmd_consolidate(args: argparse.Namespace) -> int:
    """Run fixed consolidators through the env and print what each did to score and size."""
    import gymnasium as gym
    from tqdm.auto import tqdm

    import dreamer_gym  # noqa: F401 - registers the ids
    from baselines import REGISTRY, run_episode

    env = gym.make(args.env, workers=args.workers, eval_in_family=args.episodes, eval_other=args.other)
    rows = []
    try:
        pool = env.unwrapped.pool
        families = args.families.split(",") if args.families else list(pool.families)
        jobs = [(c, f, s) for c in args.consolidators.split(",") for f in families for s in args.seeds]
        results: dict[str, list[dict[str, object]]] = {}
        for name, family, seed in tqdm(jobs, desc="consolidate", disable=args.quiet):
            if name not in REGISTRY:
                raise SystemExit(f"unknown consolidator {name!r}; known: {sorted(REGISTRY)}")
            info = run_episode(env, REGISTRY[name](), seed=seed, options={"family": family})
            results.setdefault(name, []).append(info)
        for name, infos in results.items():
            n = len(infos)
            rows.append({
                "consolidator": name,
                "score before": f"{sum(i['score_before'] for i in infos) / n:.1f}",
                "score after": f"{sum(i['score_after'] for i in infos) / n:.1f}",
                "success before": f"{sum(i['success_before'] for i in infos) / n:.2f}",
                "success after": f"{sum(i['success_after'] for i in infos) / n:.2f}",
                "entries before": f"{sum(i['size_before']['entries'] for i in infos) / n:.1f}",
                "entries after": f"{sum(i['size_after']['entries'] for i in infos) / n:.1f}",
                "tokens before": f"{sum(i['size_before']['tokens'] for i in infos) / n:.0f}",
                "tokens after": f"{sum(i['size_after']['tokens'] for i in infos) / n:.0f}",
                "reward": f"{sum(i['return'] for i in infos) / n:+.3f}",
            })
    finally:
        env.close()
    print(f"\n{args.env}: {len(families)} families x {len(args.seeds)} seeds, "
          f"{args.episodes}+{args.other} DEV episodes per commit, memory-following agent\n")
    print(_table(rows))
    return 0


def _cmd_validity(args: argparse.Namespace) -> int:
    from baselines.validity import ValidityConfig, run, to_markdown

    config = ValidityConfig(seeds=tuple(args.seeds), episodes_per_family=args.episodes, workers=args.workers,
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

    p = sub.add_parser("consolidate", help="run consolidators through the env and print a table")
    p.add_argument("--env", default="MemoryConsolidation-ScienceWorld-v0")
    p.add_argument("--consolidators", default="keep-all,dedupe,empty,blind,oracle")
    p.add_argument("--families", default="")
    p.add_argument("--seeds", type=int, nargs="+", default=[0])
    p.add_argument("--episodes", type=int, default=3, help="DEV episodes of the region's family per commit")
    p.add_argument("--other", type=int, default=2, help="DEV episodes of other families per commit")
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=_cmd_consolidate)

    p = sub.add_parser("validity", help="the reward-validity study (paired bootstrap CIs)")
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
