"""The reward-validity study: does the reward separate good consolidation from bad?

The study runs the registered env id **as it runs for training** (``gym.make(env_id, workers=...)``:
its own ``eval_in_family`` + ``eval_other`` DEV episodes per commit, its size cost, its agent). Every
policy consolidates the same regions (family x seed; bank ``seed % banks``) and, because a reset's seed
fixes its evaluation episodes, is scored on the same episodes, so comparisons are paired. Two units:

* the **commit reward** per region (``info["return"]``: in-family score change, other-family losses,
  size term), paired across policies: what a learner is actually paid;
* the **in-family episode score** after consolidation, per episode, as in earlier versions of the study.

CIs are paired bootstrap 95% intervals (``scipy.stats.bootstrap``; BCa, percentile where fewer than 10
pairs). A run that changes a reward field (``episodes_per_family``, or a frozen field in ``env_kwargs``)
builds :class:`~dreamer_gym.envs.consolidation.ConsolidationEnv` directly and is labelled "not
comparable" to the registered id's reward.
"""
from __future__ import annotations

import gzip
import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from dreamer_gym.consolidators import make_consolidator, run_episode
from dreamer_gym.errors import ConfigError

POLICIES = ("oracle", "keep-all", "dedupe", "empty", "blind", "prose-oracle", "wrong-procedures",
            "constant", "bait")
# (a, b, expectation) on in-family episode scores: "greater" means a > b with a CI excluding 0; "equal"
# means the CI contains 0.
COMPARISONS: tuple[tuple[str, str, str], ...] = (
    ("oracle", "keep-all", "greater"),
    ("keep-all", "empty", "greater"),
    ("keep-all", "blind", "greater"),
    ("prose-oracle", "oracle", "equal"),
    ("keep-all", "wrong-procedures", "greater"),
)
# ... and on the commit reward per region. "equal" here means the CI lies within +-EQUAL_MARGIN (the prose
# rephrasing is a few tokens longer, so its size term differs by a constant sliver and a CI around an exact 0
# is not to be expected).
REWARD_COMPARISONS: tuple[tuple[str, str, str], ...] = (
    ("oracle", "keep-all", "greater"),
    ("keep-all", "empty", "greater"),
    ("keep-all", "blind", "greater"),
    ("prose-oracle", "oracle", "equal"),
    ("keep-all", "wrong-procedures", "greater"),
    ("oracle", "constant", "greater"),
    ("oracle", "bait", "greater"),
)
EQUAL_MARGIN = 0.01  # reward units: one score point on every episode
# The red team (docs/validity.md, "Red team"): each must not beat a bar, i.e. its paired CI over the bar must
# not lie entirely above 0 ("not-above"). Bars: the oracle (on a training id) and the best honest fixed
# baseline of the run (on a held-out track, where no policy can know the families).
RED_TEAM = ("constant-train", "constant-transfer", "stuffing", "junk", "giant", "duplicate", "injection", "copy-trajectory",
            "constant", "bait")
HONEST_FIXED = ("keep-all", "dedupe", "empty", "blind")
# the only env settings a training id leaves free: none changes what the reward measures
FREE_FIELDS: tuple[str, ...] = ("max_tool_calls", "max_emitted", "workers", "executor", "store_path", "service",
                                "region_chars", "render_mode")


@dataclass(frozen=True)
class ValidityConfig:
    """The study's settings; ``dreamer-gym validity`` generates its flags from these fields."""

    env_id: str = field(default="MemoryConsolidation-ScienceWorld-v0", metadata={"help": "env id"})
    families: tuple[str, ...] | None = field(default=None, metadata={"help": "None: every family in the pool"})
    seeds: tuple[int, ...] = field(default=(0, 1, 2, 3, 4, 5), metadata={
        "help": "one region per family and seed (bank seed % banks; the seed draws the episodes)"})
    episodes_per_family: int | None = field(default=None, metadata={
        "help": "None: the env id's own evaluation (comparable); a number: that many in-family episodes and "
                "none of other families, on a directly built env (not comparable)"})
    policies: tuple[str, ...] = field(default=POLICIES, metadata={"help": "registered consolidator names"})
    workers: int = field(default=0, metadata={"help": "evaluation worker processes (0 = in-process)"})
    bootstrap_resamples: int = field(default=4000, metadata={"help": "resamples per bootstrap CI"})
    env_kwargs: dict[str, Any] = field(default_factory=dict, metadata={"help": "more env keyword arguments"})
    compare: tuple[str, ...] = field(default=(), metadata={
        "help": "more paired comparisons of the commit reward and the in-family score, each 'A>B' (e.g. a "
                "trained policy against keep-all: grpo:runs/x/checkpoint-20>keep-all); reported, expected greater"})
    track: str | None = field(default=None, metadata={
        "help": "a leaderboard track (e.g. scienceworld): its pool, split, families and episodes, scores shown "
                "(a maintainer's study of the track's validity, not a submission)"})


def _changes_reward(base: dict[str, Any], overrides: dict[str, Any]) -> bool:
    """Whether ``overrides`` set a reward field (anything not in :data:`FREE_FIELDS`) to another value than
    ``base`` has, or one ``base`` does not set."""
    return any(k not in FREE_FIELDS and (k not in base or base[k] != v) for k, v in overrides.items())


def make_study_env(env_id: str, workers: int = 0, overrides: dict[str, Any] | None = None) -> tuple[gym.Env, bool]:
    """``(env, comparable)``: the registered id as it runs (only free fields passed) when ``overrides``
    leave every reward field at the id's value; otherwise a directly built ``ConsolidationEnv`` with the
    id's settings and ``overrides``, whose reward is not the id's (``comparable=False``)."""
    overrides = dict(overrides or {})
    registered = {k: v for k, v in gym.spec(env_id).kwargs.items() if k != "frozen"}
    free = {k: v for k, v in overrides.items() if k in FREE_FIELDS}
    if not _changes_reward(registered, overrides):
        return gym.make(env_id, **{**free, "workers": workers}), True
    from dreamer_gym.envs.consolidation import ConsolidationEnv

    return ConsolidationEnv(**{**registered, **overrides, "workers": workers}), False


def collect(config: ValidityConfig, progress: bool = True) -> dict[str, Any]:
    """Every policy on every region: ``{"regions": [...], "episodes": [...], "setting": {...}}``; one region
    record per (policy, family, seed) with its commit reward and parts, one episode record per evaluation
    episode with its score before and after."""
    from tqdm.auto import tqdm

    overrides = dict(config.env_kwargs)
    if config.episodes_per_family is not None:
        overrides.update(eval_in_family=config.episodes_per_family, eval_other=0)
    track = None
    if config.track is not None:
        from dreamer_gym.envs.consolidation import ConsolidationEnv
        from dreamer_gym.leaderboard import Track, load_track

        track = load_track(config.track)
        if not isinstance(track, Track):
            raise ConfigError(f"`track` {config.track!r} is a transfer track: name one of its members")
        # an override replaces the track's value (a changed reward field labels the run not comparable)
        kwargs = track.env_kwargs(workers=config.workers)
        env, comparable = ConsolidationEnv(**{**kwargs, **overrides}), not _changes_reward(kwargs, overrides)
    else:
        env, comparable = make_study_env(config.env_id, config.workers, overrides)
    try:
        pool = env.unwrapped.pool
        families = config.families or (track.families if track else pool.families)
        jobs = [(f, s, p) for f in families for s in config.seeds for p in config.policies]
        regions, episodes = [], []
        for family, seed, policy in tqdm(jobs, desc="validity", disable=not progress):
            options = {"family": family, "bank": seed % len(pool.banks)}
            info = run_episode(env, make_consolidator(policy), seed=seed, options=options)
            parts = info["score_delta_parts"]
            regions.append({
                "policy": policy, "family": family, "seed": seed, "bank": options["bank"],
                "reward": info["return"], "score_delta": info["reward_components"]["score_delta"],
                "size": info["reward_components"]["size"], "in_family": parts["in_family"],
                "other_family": parts["other_family"], "other_family_unpaid": parts["other_family_unpaid"],
                "tokens": info["size_after"]["tokens"], "entries": info["size_after"]["entries"],
                "tokens_before": info["size_before"]["tokens"], "invalid_calls": info["invalid_calls"],
            })
            for i, ep in enumerate(info["episodes"]):
                episodes.append({
                    "policy": policy, "family": family, "seed": seed, "episode": i, "episode_family": ep["family"],
                    "variation": ep["variation"], "in_family": ep["in_family"], "before": ep["before"],
                    "score": ep["after"],
                })
        cfg = env.unwrapped.config
        setting = {"env_id": track.env_id if track else config.env_id, "comparable": comparable,
                   "agent_top_k": int(cfg.agent_top_k), "eval_in_family": int(cfg.eval_in_family),
                   "eval_other": int(cfg.eval_other), "size_coef": float(cfg.size_coef), "banks": len(pool.banks),
                   "track": config.track, "split": cfg.split, "pool_hash": pool.hash}
        return {"regions": regions, "episodes": episodes, "setting": setting}
    finally:
        env.close()


def _ci(diffs: np.ndarray, resamples: int, seed: int = 0) -> tuple[float, float]:
    from scipy.stats import bootstrap

    if len(diffs) == 0:
        return float("nan"), float("nan")
    if np.allclose(diffs, diffs[0]):
        return float(diffs[0]), float(diffs[0])
    method = "BCa" if len(diffs) >= 10 else "percentile"
    res = bootstrap((diffs,), np.mean, confidence_level=0.95, n_resamples=resamples,
                    method=method, random_state=np.random.default_rng(seed))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def _holds(expect: str, lo: float, hi: float, margin: float = 0.0) -> bool:
    if expect == "greater":
        return bool(lo > 0)
    if expect == "not-above":
        return bool(lo <= 0)
    return bool(-margin <= lo and hi <= margin) if margin else bool(lo <= 0 <= hi)


def _order(names: set[str]) -> list[str]:
    return [p for p in POLICIES if p in names] + sorted(names - set(POLICIES))


def _compare(by: dict[str, dict[tuple, float]], pairs: Sequence[tuple[str, str, str]], families: list[str],
             resamples: int, margin: float = 0.0) -> list[dict[str, Any]]:
    """Paired differences ``a - b`` over the keys both hold (key[0] is the family), pooled and per family."""
    out = []
    for a, b, expect in pairs:
        if a not in by or b not in by:
            continue
        keys = sorted(set(by[a]) & set(by[b]))
        diffs = np.array([by[a][k] - by[b][k] for k in keys], dtype=float)
        lo, hi = _ci(diffs, resamples)
        per_family = {}
        for f in families:
            fd = np.array([by[a][k] - by[b][k] for k in keys if k[0] == f], dtype=float)
            flo, fhi = _ci(fd, resamples)
            per_family[f] = {"mean": float(fd.mean()) if len(fd) else float("nan"), "ci95": [flo, fhi],
                             "holds": _holds(expect, flo, fhi, margin)}
        out.append({"a": a, "b": b, "expect": expect, "mean": float(diffs.mean()), "ci95": [lo, hi],
                    "n": len(keys), "holds": _holds(expect, lo, hi, margin), "per_family": per_family})
    return out


def parse_pairs(compare: Sequence[str]) -> list[tuple[str, str, str]]:
    """``["a>b", ...]`` -> ``[(a, b, "greater"), ...]`` (names may hold ':' but not '>')."""
    pairs = []
    for text in compare:
        a, sep, b = text.partition(">")
        if not sep or not a.strip() or not b.strip():
            raise ConfigError(f"Expected each `compare` item to be 'A>B' (two policy names), got {text!r}")
        pairs.append((a.strip(), b.strip(), "greater"))
    return pairs


def summarise_rewards(regions: Sequence[dict[str, Any]], resamples: int = 4000,
                      compare: Sequence[str] = ()) -> dict[str, Any]:
    """The commit reward per region: mean per policy and family (and its parts), paired comparisons (the
    study's, then ``compare``'s)."""
    by: dict[str, dict[tuple, dict[str, Any]]] = defaultdict(dict)
    for r in regions:
        by[r["policy"]][(r["family"], r["seed"])] = r
    families = sorted({r["family"] for r in regions})
    table: dict[str, dict[str, float]] = {}
    for p in _order(set(by)):
        rows = list(by[p].values())
        row = {f: float(np.mean([r["reward"] for k, r in by[p].items() if k[0] == f] or [np.nan])) for f in families}
        row["all"] = float(np.mean([r["reward"] for r in rows]))
        for part in ("in_family", "other_family", "other_family_unpaid", "size", "tokens"):
            row[part] = float(np.mean([r[part] for r in rows]))
        row["regions"] = len(rows)
        table[p] = row
    rewards = {p: {k: r["reward"] for k, r in rs.items()} for p, rs in by.items()}
    comparisons = _compare(rewards, REWARD_COMPARISONS, families, resamples, EQUAL_MARGIN)
    comparisons += _compare(rewards, parse_pairs(compare), families, resamples)
    fixed = [p for p in HONEST_FIXED if p in table]
    best_fixed = max(fixed, key=lambda p: table[p]["all"]) if fixed else None
    bars = [b for b in ("oracle", best_fixed) if b is not None]
    red = [(x, b, "not-above") for x in RED_TEAM if x in table for b in bars]
    out = {"families": families, "table": table, "comparisons": comparisons, "equal_margin": EQUAL_MARGIN}
    if red:
        out["red_team"] = _compare(rewards, red, families, resamples)
        out["best_fixed"] = best_fixed
    return out


def summarise(records: Sequence[dict[str, Any]], resamples: int = 4000,
              regions: Sequence[dict[str, Any]] | None = None, compare: Sequence[str] = ()) -> dict[str, Any]:
    """In-family episode scores (``records``: episode records; other families' episodes are left out) and,
    with ``regions``, the commit rewards (``summary["rewards"]``)."""
    records = [r for r in records if r.get("in_family", True)]
    by = defaultdict(dict)
    for r in records:
        by[r["policy"]][(r["family"], r["seed"], r["episode"])] = r
    sizes = {(r["policy"], r["family"], r["seed"]): r for r in regions or ()}
    families = sorted({r["family"] for r in records})
    policies = _order(set(by))
    table: dict[str, dict[str, Any]] = {}
    for p in policies:
        row: dict[str, Any] = {}
        for f in families:
            scores = [r["score"] for k, r in by[p].items() if k[0] == f]
            row[f] = float(np.mean(scores)) if scores else float("nan")
        row["all"] = float(np.mean([r["score"] for r in by[p].values()]))
        firsts = [sizes.get((p, k[0], k[1]), r) for k, r in by[p].items() if k[2] == min(
            kk[2] for kk in by[p] if kk[:2] == k[:2])]
        row["tokens"] = float(np.mean([r["tokens"] for r in firsts]))
        row["entries"] = float(np.mean([r["entries"] for r in firsts]))
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
    scores = {p: {k: r["score"] for k, r in rs.items()} for p, rs in by.items()}
    comparisons = _compare(scores, COMPARISONS, families, resamples)
    comparisons += _compare(scores, parse_pairs(compare), families, resamples)
    summary = {"families": families, "table": table, "normalised": normalised, "comparisons": comparisons}
    if regions:
        summary["rewards"] = summarise_rewards(regions, resamples, compare)
    return summary


def _score_lines(summary: dict[str, Any]) -> list[str]:
    """The in-family episode-score tables (the whole page of the study's earlier versions, after its header)."""
    fams = summary["families"]
    lines = [
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
    return lines + _comparison_lines(summary["comparisons"], fams, ".1f", "Paired differences (score points, "
                                     "bootstrap 95% CI):", "Per family (mean difference, 95% CI; ✓ where the "
                                     "expectation holds):")


def _comparison_lines(comparisons: list[dict[str, Any]], fams: list[str], fmt: str, pooled_title: str,
                      family_title: str) -> list[str]:
    """The pooled and the per-family tables of paired comparisons, numbers in format ``fmt``."""
    def num(x: float) -> str:
        return format(x, "+" + fmt)

    lines = ["", pooled_title, "", "| comparison | expected | mean | 95% CI | n | holds |", "|---|---|---|---|---|---|"]
    for c in comparisons:
        sign = {"greater": ">", "not-above": "≯"}.get(c["expect"], "≈")
        lines.append(f"| {c['a']} {sign} {c['b']} | {c['expect']} | {num(c['mean'])} | "
                     f"[{num(c['ci95'][0])}, {num(c['ci95'][1])}] | {c['n']} | {'yes' if c['holds'] else 'NO'} |")
    lines += ["", family_title, "", "| comparison | " + " | ".join(fams) + " |", "|---" * (len(fams) + 1) + "|"]
    for c in comparisons:
        sign = {"greater": ">", "not-above": "≯"}.get(c["expect"], "≈")
        cells = [f"{num(v['mean'])} [{num(v['ci95'][0])}, {num(v['ci95'][1])}] {'✓' if v['holds'] else '✗'}"
                 for v in (c["per_family"][f] for f in fams)]
        lines.append(f"| {c['a']} {sign} {c['b']} | " + " | ".join(cells) + " |")
    return lines


def _reward_lines(rewards: dict[str, Any]) -> list[str]:
    fams = rewards["families"]
    lines = [
        "| policy | " + " | ".join(fams) + " | all | in-family | other-family | unpaid | size | tokens |",
        "|---" * (len(fams) + 7) + "|",
    ]
    for p, row in rewards["table"].items():
        lines.append(f"| {p} | " + " | ".join(f"{row[f]:+.3f}" for f in fams)
                     + f" | **{row['all']:+.3f}** | {row['in_family']:+.3f} | {row['other_family']:+.3f} | "
                     f"{row['other_family_unpaid']:.3f} | {row['size']:+.3f} | {row['tokens']:.0f} |")
    lines += _comparison_lines(
        rewards["comparisons"], fams, ".3f",
        f"Paired differences of the commit reward per region (bootstrap 95% CI; \"equal\": the CI lies "
        f"within ±{rewards['equal_margin']}):",
        "Per family (mean reward difference, 95% CI; ✓ where the expectation holds):")
    if rewards.get("red_team"):
        lines += _comparison_lines(
            rewards["red_team"], fams, ".3f",
            f"Red team: none may beat the oracle or the best honest fixed baseline of this run "
            f"(`{rewards['best_fixed']}`); \"not-above\" holds unless the paired 95% CI lies entirely above 0:",
            "Red team per family (✓: not above the bar):")
    return lines


def to_markdown(summary: dict[str, Any], config: ValidityConfig) -> str:
    fams = summary["families"]
    rewards = summary.get("rewards")
    if rewards is None:  # a summary of the study's earlier versions (in-family episodes only): its own page
        lines = [
            f"Env `{config.env_id}`, DEV split, {len(fams)} families x {len(config.seeds)} seeds x "
            f"{config.episodes_per_family} episodes = {len(fams) * len(config.seeds) * config.episodes_per_family} "
            "paired episodes per policy; memory-following agent.",
            "",
        ]
        return "\n".join(lines + _score_lines(summary)) + "\n"
    s = summary["setting"]
    n_regions = len(rewards["families"]) * len(config.seeds)
    if s.get("track"):
        label = (f"track `{s['track']}` as it runs, scores shown (pool `{s['pool_hash']}`)" if s["comparable"]
                 else f"track `{s['track']}` with changed settings (**not comparable**)")
        where = f"Env `{s['env_id']}` on {label}"
    else:
        label = ("the registered id as it runs (comparable)" if s["comparable"]
                 else "**not comparable**: a reward field differs from the registered id's")
        where = f"Env `{s['env_id']}`, {label}"
    lines = [
        f"{where}; {s.get('split', 'dev').upper()} split; {len(rewards['families'])} families x {len(config.seeds)} seeds = "
        f"{n_regions} regions per policy (bank = seed % {s['banks']}); {s['eval_in_family']} in-family + "
        f"{s['eval_other']} other-family episodes per commit; size_coef {s['size_coef']}; memory-following agent.",
        "",
        "### Commit reward per region",
        "",
        "Mean `info[\"return\"]` per family, pooled, and its parts (in-family score change, other-family losses, "
        "other-family gains left unpaid, size term):",
        "",
        *_reward_lines(rewards),
        "",
        "### In-family episode scores",
        "",
        f"Score (0-100) of the downstream agent on the region's own episodes after the commit, "
        f"{n_regions * s['eval_in_family']} paired episodes per policy:",
        "",
        *_score_lines(summary),
    ]
    return "\n".join(lines) + "\n"


def plot(summary: dict[str, Any], path: str | Path, env_id: str | None = None) -> None:
    """Score vs region size, one point per policy: where a person would rather look than read. The env id
    and split are the run's (``summary["setting"]``) unless ``env_id`` is given."""
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
    setting = summary.get("setting", {})
    split = str(setting.get("split", "dev")).upper()
    ax.set_ylabel(f"in-family downstream score on {split} episodes (0-100)")
    track = f", track {setting['track']}" if setting.get("track") else ""
    ax.set_title(f"Consolidators on {env_id or setting.get('env_id', 'MemoryConsolidation-ScienceWorld-v0')}{track}",
                 fontsize=10)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def run(config: ValidityConfig, out_dir: str | Path | None = None, progress: bool = True) -> dict[str, Any]:
    parse_pairs(config.compare)  # a malformed pair fails before the study runs
    data = collect(config, progress=progress)
    summary = summarise(data["episodes"], config.bootstrap_resamples, data["regions"], config.compare)
    summary["setting"] = data["setting"]
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        with gzip.open(out / "records.json.gz", "wt") as fh:  # every episode: ~0.5 MB as text, 15 kB zipped
            json.dump(data, fh)
        (out / "summary.json").write_text(json.dumps(summary, indent=1))
        (out / "config.json").write_text(json.dumps(asdict(config), indent=1))
        (out / "validity.md").write_text(to_markdown(summary, config))
        plot(summary, out / "validity.png")
    return summary
