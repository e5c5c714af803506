"""The reward-validity study: does the reward separate good consolidation from bad?

Every policy consolidates the same regions (family x seed) and is scored on the same DEV episodes,
so comparisons are paired. Scores are reported raw and normalised per family (empty = 0, oracle = 1)
with paired bootstrap 95% confidence intervals (scipy.stats.bootstrap, BCa).
"""
from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from dreamer_gym.consolidators import make_consolidator, run_episode

POLICIES = ("oracle", "keep-all", "dedupe", "empty", "blind", "prose-oracle", "wrong-procedures")
# (a, b, expectation): "greater" means a > b with a CI excluding 0; "equal" means the CI contains 0.
COMPARISONS: tuple[tuple[str, str, str], ...] = (
    ("oracle", "keep-all", "greater"),
    ("keep-all", "empty", "greater"),
    ("keep-all", "blind", "greater"),
    ("prose-oracle", "oracle", "equal"),
    ("keep-all", "wrong-procedures", "greater"),
)


@dataclass(frozen=True)
class ValidityConfig:
    """The study's settings; ``dreamer-gym validity`` generates its flags from these fields."""

    env_id: str = field(default="MemoryConsolidation-ScienceWorld-v0", metadata={"help": "env id"})
    families: tuple[str, ...] | None = field(default=None, metadata={"help": "None: every family in the pool"})
    seeds: tuple[int, ...] = field(default=(0, 1, 2), metadata={"help": "one region per family and seed"})
    episodes_per_family: int = field(default=5, metadata={
        "help": "DEV episodes of the region's family per commit (none of other families)"})
    policies: tuple[str, ...] = field(default=POLICIES, metadata={"help": "registered consolidator names"})
    workers: int = field(default=0, metadata={"help": "evaluation worker processes (0 = in-process)"})
    bootstrap_resamples: int = field(default=4000, metadata={"help": "resamples per bootstrap CI"})
    env_kwargs: dict[str, Any] = field(default_factory=dict, metadata={"help": "more gym.make keyword arguments"})


def collect(config: ValidityConfig, progress: bool = True) -> list[dict[str, Any]]:
    """One record per (policy, family, seed, episode): the episode's score after consolidation."""
    from tqdm.auto import tqdm

    env = gym.make(
        config.env_id, eval_in_family=config.episodes_per_family, eval_other=0, workers=config.workers,
        **config.env_kwargs,
    )
    try:
        pool = env.unwrapped.pool
        families = config.families or pool.families
        jobs = [(f, s, p) for f in families for s in config.seeds for p in config.policies]
        records = []
        for family, seed, policy in tqdm(jobs, desc="validity", disable=not progress):
            options = {"family": family, "bank": seed % len(pool.banks)}
            info = run_episode(env, make_consolidator(policy), seed=seed, options=options)
            for i, ep in enumerate(info["episodes"]):
                records.append({
                    "policy": policy, "family": family, "seed": seed, "episode": i,
                    "variation": ep["variation"], "score": ep["after"],
                    "tokens": info["size_after"]["tokens"], "entries": info["size_after"]["entries"],
                    "return": info["return"],
                })
        return records
    finally:
        env.close()


def _ci(diffs: np.ndarray, resamples: int, seed: int = 0) -> tuple[float, float]:
    from scipy.stats import bootstrap

    if np.allclose(diffs, diffs[0]):
        return float(diffs[0]), float(diffs[0])
    res = bootstrap((diffs,), np.mean, confidence_level=0.95, n_resamples=resamples,
                    method="BCa", random_state=np.random.default_rng(seed))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def summarise(records: Sequence[dict[str, Any]], resamples: int = 4000) -> dict[str, Any]:
    by = defaultdict(dict)
    for r in records:
        by[r["policy"]][(r["family"], r["seed"], r["episode"])] = r
    families = sorted({r["family"] for r in records})
    policies = [p for p in POLICIES if p in by] + sorted(set(by) - set(POLICIES))
    table: dict[str, dict[str, Any]] = {}
    for p in policies:
        row: dict[str, Any] = {}
        for f in families:
            scores = [r["score"] for k, r in by[p].items() if k[0] == f]
            row[f] = float(np.mean(scores)) if scores else float("nan")
        row["all"] = float(np.mean([r["score"] for r in by[p].values()]))
        row["tokens"] = float(np.mean([r["tokens"] for k, r in by[p].items() if k[2] == 0]))
        row["entries"] = float(np.mean([r["entries"] for k, r in by[p].items() if k[2] == 0]))
        table[p] = row
    normalised: dict[str, dict[str, float]] = {}
    if "oracle" in table and "empty" in table:
        for p in policies:
            normalised[p] = {}
            for f in families:
                lo, hi = table["empty"][f], table["oracle"][f]
                normalised[p][f] = (table[p][f] - lo) / (hi - lo) if hi != lo else float("nan")
            vals = [v for v in normalised[p].values() if np.isfinite(v)]
            normalised[p]["mean"] = float(np.mean(vals)) if vals else float("nan")
    comparisons = []
    for a, b, expect in COMPARISONS:
        if a not in by or b not in by:
            continue
        keys = sorted(set(by[a]) & set(by[b]))
        diffs = np.array([by[a][k]["score"] - by[b][k]["score"] for k in keys], dtype=float)
        lo, hi = _ci(diffs, resamples)
        ok = (lo > 0) if expect == "greater" else (lo <= 0 <= hi)
        per_family = {}
        for f in families:
            fd = np.array([by[a][k]["score"] - by[b][k]["score"] for k in keys if k[0] == f], dtype=float)
            flo, fhi = _ci(fd, resamples)
            fok = (flo > 0) if expect == "greater" else (flo <= 0 <= fhi)
            per_family[f] = {"mean": float(fd.mean()), "ci95": [flo, fhi], "holds": bool(fok)}
        comparisons.append({"a": a, "b": b, "expect": expect, "mean": float(diffs.mean()), "ci95": [lo, hi],
                            "n": len(keys), "holds": bool(ok), "per_family": per_family})
    return {"families": families, "table": table, "normalised": normalised, "comparisons": comparisons}


def to_markdown(summary: dict[str, Any], config: ValidityConfig) -> str:
    fams = summary["families"]
    lines = [
        f"Env `{config.env_id}`, DEV split, {len(fams)} families x {len(config.seeds)} seeds x "
        f"{config.episodes_per_family} episodes = {len(fams) * len(config.seeds) * config.episodes_per_family} "
        "paired episodes per policy; memory-following agent.",
        "",
        "| policy | " + " | ".join(fams) + " | all | region tokens | region entries |",
        "|---" * (len(fams) + 4) + "|",
    ]
    for p, row in summary["table"].items():
        lines.append(f"| {p} | " + " | ".join(f"{row[f]:.1f}" for f in fams)
                     + f" | **{row['all']:.1f}** | {row['tokens']:.0f} | {row['entries']:.1f} |")
    if summary["normalised"]:
        lines += ["", "Normalised per family (empty = 0, oracle = 1):", "",
                  "| policy | " + " | ".join(fams) + " | mean |", "|---" * (len(fams) + 2) + "|"]
        for p, row in summary["normalised"].items():
            lines.append(f"| {p} | " + " | ".join(f"{row[f]:.2f}" for f in fams) + f" | **{row['mean']:.2f}** |")
    lines += ["", "Paired differences (score points, bootstrap 95% CI):", "",
              "| comparison | expected | mean | 95% CI | n | holds |", "|---|---|---|---|---|---|"]
    for c in summary["comparisons"]:
        sign = ">" if c["expect"] == "greater" else "≈"
        lines.append(f"| {c['a']} {sign} {c['b']} | {c['expect']} | {c['mean']:+.1f} | "
                     f"[{c['ci95'][0]:+.1f}, {c['ci95'][1]:+.1f}] | {c['n']} | {'yes' if c['holds'] else 'NO'} |")
    lines += ["", "Per family (mean difference, 95% CI; ✓ where the expectation holds):", "",
              "| comparison | " + " | ".join(fams) + " |", "|---" * (len(fams) + 1) + "|"]
    for c in summary["comparisons"]:
        sign = ">" if c["expect"] == "greater" else "≈"
        cells = [f"{v['mean']:+.1f} [{v['ci95'][0]:+.1f}, {v['ci95'][1]:+.1f}] {'✓' if v['holds'] else '✗'}"
                 for v in (c["per_family"][f] for f in fams)]
        lines.append(f"| {c['a']} {sign} {c['b']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def plot(summary: dict[str, Any], path: str | Path, env_id: str = "MemoryConsolidation-ScienceWorld-v0") -> None:
    """Score vs region size, one point per policy: where a person would rather look than read."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=120)
    for i, (name, row) in enumerate(summary["table"].items()):
        ax.scatter(row["tokens"], row["all"], s=60)
        ax.annotate(name, (row["tokens"], row["all"]), textcoords="offset points",
                    xytext=(6, 5 if i % 2 == 0 else -12), fontsize=9)
    ax.set_xscale("symlog", linthresh=10)
    ax.set_xlabel("region size after consolidation (tokens, symlog)")
    ax.set_ylabel("downstream score on DEV episodes (0-100)")
    ax.set_title(f"Consolidators on {env_id}")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def run(config: ValidityConfig, out_dir: str | Path | None = None, progress: bool = True) -> dict[str, Any]:
    records = collect(config, progress=progress)
    summary = summarise(records, config.bootstrap_resamples)
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        (out / "records.json").write_text(json.dumps(records, indent=1))
        (out / "summary.json").write_text(json.dumps(summary, indent=1))
        (out / "config.json").write_text(json.dumps(asdict(config), indent=1))
        (out / "validity.md").write_text(to_markdown(summary, config))
        plot(summary, out / "validity.png", config.env_id)
    return summary
