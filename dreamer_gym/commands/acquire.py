"""``acquire``: build a frozen bank pool by real acquisition (:mod:`dreamer_gym.acquisition`, :mod:`dreamer_gym.pool`)."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from dreamer_gym.errors import ConfigError


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("acquire", help="build a frozen bank pool by real acquisition")
    p.add_argument("--suite", default="scienceworld", help="registered suite name (default: scienceworld)")
    p.add_argument("--families", default="", help="comma-separated task families (default: the suite's training "
                   "families, or with --held-out its held-out ones)")
    p.add_argument("--held-out", action="store_true", help="a held-out pool: the suite's held_out_families "
                   "(use bank seeds no training pool uses)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2],
                   help="bank seeds: one bank per seed (default: 0 1 2)")
    p.add_argument("--eval-variations", type=int, default=10, help="evaluation variations per family (default: 10)")
    p.add_argument("--gold-variations", type=int, default=20,
                   help="variations whose gold paths the oracle reads (default: 20)")
    p.add_argument("--schedule", choices=("rounds", "interleaved"), default="rounds",
                   help="rounds: each session plays every family once (the -v0 pools); interleaved: each episode "
                   "is a session, its family drawn from the bank's own task mix, and regions are time windows "
                   "(default: rounds)")
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
    p.set_defaults(func=cmd_acquire)


def episode_range(text: str) -> tuple[int, int]:
    """``--episodes``: ``16-32`` (a range, inclusive) or ``24`` (every bank the same)."""
    low, _, high = text.partition("-")
    try:
        return int(low), int(high or low)
    except ValueError:
        raise ConfigError(f"Expected --episodes to be N or LOW-HIGH (e.g. 16-32), got {text!r}") from None


def skills(text: str) -> tuple[float, ...]:
    """``--skills``: comma-separated noise multipliers (0.5 an expert, 2 a novice)."""
    try:
        return tuple(float(s) for s in text.split(","))
    except ValueError:
        raise ConfigError(f"Expected --skills to be comma-separated numbers (e.g. 0.5,1,2), got {text!r}") from None


def cmd_acquire(args: argparse.Namespace) -> int:
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
            configs = bank_configs(families, args.seeds, episode_range(args.episodes), skills(args.skills),
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
