"""How noisy is the commit reward, and how many commits does a GRPO group need to rank two policies?

For fixed consolidators (default ``keep-all``, ``dedupe``, ``oracle``), on the registered id as it runs
(``gym.make(env_id, workers=...)``; nothing reward-defining changed), every region (family x bank) is
reset with ``episode_seeds`` different seeds and the same options: same region, different evaluation
episodes. Three noise levels of the reward ``info["return"]``:

* **across resets**: sd over every (region, seed): another region *and* other episodes;
* **same region, other episodes**: the pooled within-region sd over seeds;
* **same region, same episodes** (a GRPO group sharing its reset seed: common random numbers): zero for
  a deterministic consolidator with the deterministic memory-following agent (checked by replaying).

Sample size to tell policy ``a`` from ``b`` at two-sided 95% with 80% power, normal approximation
``n = ((z_.975 + z_.8) * sd_diff / mean_diff) ** 2``, where ``sd_diff`` is the sd of the paired difference
``R_a(s) - R_b(s)`` when both commits share the reset seed ``s`` (CRN), and ``sqrt(var_a + var_b)`` when each
commit gets its own reset (independent). Computed per region (a GRPO group is one region) and pooled over
regions, and checked by resampling the measured rewards (the smallest ``n`` whose simulated power, a z-test
with the measured sd on the mean of ``n`` resampled differences, reaches 80%: the normal approximation
against the real, skewed distribution).
"""
from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dreamer_gym.consolidators import make_consolidator, run_episode
from dreamer_gym.stats import Z_80, Z_975
from dreamer_gym.studies.validity import make_study_env
PAIRS: tuple[tuple[str, str], ...] = (("oracle", "keep-all"), ("dedupe", "keep-all"), ("oracle", "dedupe"))


@dataclass(frozen=True)
class PowerConfig:
    """The power study's settings; ``dreamer-gym power`` generates its flags from these fields."""

    env_id: str = field(default="MemoryConsolidation-ScienceWorld-v0", metadata={"help": "env id"})
    families: tuple[str, ...] | None = field(default=None, metadata={"help": "None: every family in the pool"})
    banks: tuple[int, ...] | None = field(default=None, metadata={"help": "None: every bank in the pool"})
    episode_seeds: tuple[int, ...] = field(default=(0, 1, 2, 3, 4, 5, 6, 7), metadata={
        "help": "reset seeds per region (same region, different evaluation episodes)"})
    policies: tuple[str, ...] = field(default=("keep-all", "dedupe", "oracle"), metadata={
        "help": "registered (deterministic) consolidator names"})
    workers: int = field(default=0, metadata={"help": "evaluation worker processes (0 = in-process)"})
    resamples: int = field(default=2000, metadata={"help": "simulated experiments per n in the resampling check"})
    max_n: int = field(default=400, metadata={"help": "largest n the resampling check tries"})


def collect(config: PowerConfig, progress: bool = True) -> dict[str, Any]:
    """One record per (policy, family, bank, seed) with the commit reward; plus a replay of the first
    region and seed per policy (the same reset twice must give the same reward)."""
    from tqdm.auto import tqdm

    env, comparable = make_study_env(config.env_id, config.workers)
    try:
        pool = env.unwrapped.pool
        families = config.families or pool.families
        banks = config.banks if config.banks is not None else tuple(range(len(pool.banks)))
        regions = [(f, b) for f in families for b in banks if any(e.family == f for e in pool.banks[b])]
        jobs = [(f, b, s, p) for f, b in regions for s in config.episode_seeds for p in config.policies]
        records = []
        for family, bank, seed, policy in tqdm(jobs, desc="power", disable=not progress):
            info = run_episode(env, make_consolidator(policy), seed=seed, options={"family": family, "bank": bank})
            records.append({"policy": policy, "family": family, "bank": bank, "seed": seed, "reward": info["return"],
                            "in_family": info["score_delta_parts"]["in_family"],
                            "other_family": info["score_delta_parts"]["other_family"],
                            "episodes": [[e["family"], e["variation"]] for e in info["episodes"]]})
        replays = []
        family, bank = regions[0]
        for policy in config.policies:
            again = run_episode(env, make_consolidator(policy), seed=config.episode_seeds[0],
                                options={"family": family, "bank": bank})
            first = next(r for r in records if (r["policy"], r["family"], r["bank"], r["seed"])
                         == (policy, family, bank, config.episode_seeds[0]))
            replays.append({"policy": policy, "first": first["reward"], "again": again["return"]})
        return {"records": records, "replays": replays, "comparable": comparable, "env_id": config.env_id}
    finally:
        env.close()


def n_normal(mean_diff: float, sd_diff: float) -> float:
    """Paired normal approximation: commits (pairs) for a two-sided 95% test with 80% power; inf when the
    mean difference is 0 (or the wrong sign is irrelevant: only its size counts), 1 when sd is 0."""
    if mean_diff == 0:
        return math.inf
    return max(1.0, ((Z_975 + Z_80) * sd_diff / abs(mean_diff)) ** 2)


def _power(sampler, n: int, resamples: int, rng: np.random.Generator, sd: float) -> float:
    """Share of simulated experiments of ``n`` resampled differences whose z statistic (known sd ``sd``,
    the formula's assumption) passes 1.96 in the right direction; with ``sd`` 0, whose mean is > 0."""
    mean = sampler(rng, (resamples, n)).mean(axis=1)
    if sd <= 0:
        return float(np.mean(mean > 0))
    return float(np.mean(mean * np.sqrt(n) / sd > Z_975))


def n_resampled(sampler, resamples: int, max_n: int, sd: float, seed: int = 0) -> int | None:
    """Smallest n whose simulated power (see :func:`_power`) reaches 0.8; None past ``max_n``. It checks the
    normal approximation against the measured, skewed distribution of differences."""
    rng = np.random.default_rng(seed)
    if _power(sampler, 1, resamples, rng, sd) >= 0.8:
        return 1
    lo_n, hi_n = 1, 2
    while hi_n < max_n and _power(sampler, hi_n, resamples, rng, sd) < 0.8:
        lo_n, hi_n = hi_n, min(hi_n * 2, max_n)
    if _power(sampler, hi_n, resamples, rng, sd) < 0.8:
        return None
    while hi_n - lo_n > 1:
        mid = (lo_n + hi_n) // 2
        if _power(sampler, mid, resamples, rng, sd) >= 0.8:
            hi_n = mid
        else:
            lo_n = mid
    return hi_n


def _finite(x: float) -> float | None:
    return None if not math.isfinite(x) else float(x)


def summarise(data: dict[str, Any], config: PowerConfig) -> dict[str, Any]:
    rewards: dict[str, dict[tuple[str, int], dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
    for r in data["records"]:
        rewards[r["policy"]][(r["family"], r["bank"])][r["seed"]] = r["reward"]
    regions = sorted({k for p in rewards.values() for k in p})
    noise = {}
    for p, by_region in rewards.items():
        allv = np.array([v for k in regions for v in by_region[k].values()])
        within = [np.var(list(by_region[k].values()), ddof=1) for k in regions if len(by_region[k]) > 1]
        means = [np.mean(list(by_region[k].values())) for k in regions]
        noise[p] = {"mean": float(allv.mean()), "sd_across_resets": float(allv.std(ddof=1)),
                    "sd_same_region": float(np.sqrt(np.mean(within))) if within else 0.0,
                    "sd_between_region_means": float(np.std(means, ddof=1)) if len(means) > 1 else 0.0,
                    "exactly_zero_share": float(np.mean(allv == 0.0)), "commits": int(allv.size)}
    replays = data.get("replays", [])
    for r in replays:
        noise.setdefault(r["policy"], {})["same_reset_replay_equal"] = r["first"] == r["again"]

    pairs = []
    for a, b in PAIRS:
        if a not in rewards or b not in rewards:
            continue
        seeds = {k: sorted(set(rewards[a][k]) & set(rewards[b][k])) for k in regions}
        paired = {k: np.array([rewards[a][k][s] - rewards[b][k][s] for s in seeds[k]]) for k in regions}
        va = {k: np.array([rewards[a][k][s] for s in seeds[k]]) for k in regions}
        vb = {k: np.array([rewards[b][k][s] for s in seeds[k]]) for k in regions}
        per_region = []
        for k in regions:
            d = paired[k]
            md = float(d.mean())
            sd_crn = float(d.std(ddof=1)) if d.size > 1 else 0.0
            sd_ind = float(np.sqrt(va[k].var(ddof=1) + vb[k].var(ddof=1))) if d.size > 1 else 0.0
            per_region.append({
                "family": k[0], "bank": k[1], "mean_diff": md, "sd_diff_crn": sd_crn, "sd_diff_independent": sd_ind,
                "n_crn": _finite(n_normal(md, sd_crn)), "n_independent": _finite(n_normal(md, sd_ind)),
                "right_sign_share": float(np.mean(d > 0)), "wrong_sign_share": float(np.mean(d < 0)),
            })
        all_d = np.concatenate([paired[k] for k in regions])
        all_a = np.concatenate([va[k] for k in regions])
        all_b = np.concatenate([vb[k] for k in regions])
        md = float(all_d.mean())
        sd_crn = float(all_d.std(ddof=1))
        sd_ind = float(np.sqrt(all_a.var(ddof=1) + all_b.var(ddof=1)))
        # resampling: a commit pair = a random (region, seed); CRN: both policies on that reset;
        # independent: each policy on its own random (region, seed)
        def crn(rng, shape, d=all_d):
            return d[rng.integers(d.size, size=shape)]

        def independent(rng, shape, x=all_a, y=all_b):
            return x[rng.integers(x.size, size=shape)] - y[rng.integers(y.size, size=shape)]

        n_rs_crn = n_resampled(crn, config.resamples, config.max_n, sd_crn)
        n_rs_ind = n_resampled(independent, config.resamples, config.max_n, sd_ind, seed=1)
        ns_crn = [r["n_crn"] for r in per_region]
        ns_ind = [r["n_independent"] for r in per_region]
        pairs.append({
            "a": a, "b": b,
            "pooled": {"mean_diff": md, "sd_diff_crn": sd_crn, "sd_diff_independent": sd_ind,
                       "n_crn": _finite(n_normal(md, sd_crn)), "n_independent": _finite(n_normal(md, sd_ind)),
                       "n_crn_resampled": n_rs_crn, "n_independent_resampled": n_rs_ind,
                       "right_sign_share": float(np.mean(all_d > 0)), "tie_share": float(np.mean(all_d == 0)),
                       "wrong_sign_share": float(np.mean(all_d < 0)), "pairs": int(all_d.size)},
            "per_region": per_region,
            "regions_undetectable": int(sum(x is None for x in ns_crn)),
            "regions_wrong_sign": int(sum(r["mean_diff"] < 0 for r in per_region)),
            "median_n_crn": _median(ns_crn), "median_n_independent": _median(ns_ind),
        })
    return {"env_id": data["env_id"], "comparable": data["comparable"], "regions": len(regions),
            "episode_seeds": list(config.episode_seeds), "noise": noise, "pairs": pairs,
            "z": {"z_975": Z_975, "z_80": Z_80}}


def _median(ns: list[float | None]) -> float | None:
    vals = [math.inf if x is None else x for x in ns]
    if not vals:
        return None
    return _finite(float(np.median(vals)))


def _n(x: float | None) -> str:
    return "∞" if x is None else f"{math.ceil(x - 1e-9)}"


def to_markdown(summary: dict[str, Any]) -> str:
    lines = [f"Env `{summary['env_id']}` ({'comparable' if summary['comparable'] else 'NOT comparable'}); "
             f"{summary['regions']} regions x {len(summary['episode_seeds'])} reset seeds per policy.", "",
             "| policy | mean reward | sd across resets | sd same region | sd of region means | share exactly 0 "
             "| same reset replayed: equal |", "|---|---|---|---|---|---|---|"]
    for p, n in summary["noise"].items():
        lines.append(f"| {p} | {n['mean']:+.4f} | {n['sd_across_resets']:.4f} | {n['sd_same_region']:.4f} | "
                     f"{n['sd_between_region_means']:.4f} | {n['exactly_zero_share']:.2f} | "
                     f"{n.get('same_reset_replay_equal', '')} |")
    lines += ["", "Commits (pairs) to tell a from b, two-sided 95%, 80% power (normal approximation; resampled check):",
              "", "| a vs b | mean diff | sd diff CRN | sd diff indep. | n CRN | n indep. | n CRN resampled | "
              "n indep. resampled | P(diff>0) / tie / <0 | median n per region (CRN / indep.) | regions a < b |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in summary["pairs"]:
        q = c["pooled"]
        lines.append(f"| {c['a']} vs {c['b']} | {q['mean_diff']:+.4f} | {q['sd_diff_crn']:.4f} | "
                     f"{q['sd_diff_independent']:.4f} | {_n(q['n_crn'])} | {_n(q['n_independent'])} | "
                     f"{_n(q['n_crn_resampled'])} | {_n(q['n_independent_resampled'])} | "
                     f"{q['right_sign_share']:.2f} / {q['tie_share']:.2f} / {q['wrong_sign_share']:.2f} | "
                     f"{_n(c['median_n_crn'])} / {_n(c['median_n_independent'])} | {c['regions_wrong_sign']} of "
                     f"{len(c['per_region'])} |")
    return "\n".join(lines) + "\n"


def run(config: PowerConfig, out: str | Path | None = None, progress: bool = True) -> dict[str, Any]:
    """Collect, summarise; with ``out`` (a .json path) write ``{"config", "summary", "records"}`` there."""
    data = collect(config, progress=progress)
    summary = summarise(data, config)
    if out is not None:
        path = Path(out)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"config": asdict(config), "summary": summary, "markdown": to_markdown(summary),
                                    "replays": data["replays"], "records": data["records"]}, indent=1))
    return summary
