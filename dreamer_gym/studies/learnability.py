"""The learnability study: does the best consolidation depend on the region, beyond selection noise?

For each region (family x bank) of an env id, every rule of a family of fixed, whole-region rules (:data:`RULES`:
keep-all, empty, dedupe, consensus, merge-all, ...) is committed under ``draws`` independent episode draws (the
same region reset with different seeds: different evaluation episodes; every rule of one draw shares the reset
seed, so rules are compared on the same episodes). The unit is the commit reward ``info["return"]``, what a
learner is paid. Then, **cross-fitted** (choose on some draws, score on the draw left out, average over folds):

* the **best constant**: the one rule with the highest mean over regions (on the other draws: the best fixed
  rule, :mod:`dreamer_gym.studies.fixed_referee`);
* the **family switch** (family pools): per family, the rule with the highest mean over that family's regions,
  a reference row with its paired CI against the best constant (``family_switch``);
* the **best choice**: per region, the rule with the highest mean on that region (a lookup table, the most
  input-dependent policy the rule family allows);
* the **gap** (choice - constant), paired over regions, with a 95% bootstrap CI that resamples regions within
  each family and redoes both selections on every resample (so the constant's own selection noise counts too).

Choosing and scoring on the same episodes would count selection noise as learnability: with rules whose true
rewards are equal, the in-sample per-region maximum still beats every constant. The in-sample ("hindsight")
values are reported beside the cross-fitted ones to show how much that is.

Also: the share of regions per best rule, the share where each merging rule hurts or helps against keep-all,
and which region features predict the best rule (a one-split stump per feature and a depth-2 tree on all,
fitted on the selection draws' best rules and scored on the held-out draw, like the choice itself).

``summarise`` adds ``best_fixed`` and ``family_switch`` (:func:`~dreamer_gym.studies.fixed_referee.referee`) to the
summary.
"""
from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from dreamer_gym.consolidators import run_episode
from dreamer_gym.consolidators.op_rule import OP_RULES, make_rule
from dreamer_gym.consolidators.rule_selector import FEATURES, region_features  # FEATURES: re-exported
from dreamer_gym.consolidators.rule_selector import predict_tree as predict_tree  # re-exported
from dreamer_gym.errors import ConfigError
from dreamer_gym.memory.regions import parse_window
from dreamer_gym.studies.fixed_referee import describe_switch, referee
from dreamer_gym.studies.fixed_referee import argmax_first as _argmax
from dreamer_gym.studies.record_log import RecordLog, open_log
from dreamer_gym.studies.topic_referee import study_topic_referee, topic_markdown
from dreamer_gym.studies.region_context import backfill, context_columns, has_context, study_features
from dreamer_gym.studies.rule_tables import (  # the tables' reading, re-exported (their callers import them here)
    EPISODE_FIELDS,
    MERGING_RULES,
    bootstrap_gap,
    crossfit,
    describe_rules,
    describe_tree,
    draw_noise,
    feature_policies,
    fit_tree,
    score_table,
    variation_folds,
)
from dreamer_gym.studies.validity import make_study_env

# Registered deterministic consolidators that are whole-region rules too (dreamer_gym.consolidators.fixed)
REGISTERED_RULES: dict[str, str] = {
    "keep-all": "every entry kept verbatim (reward 0 before the size term)",
    "empty": "nothing kept (the floor)",
    "dedupe": "near-duplicates (token Jaccard >= 0.8) dropped, the latest copy kept",
    "consensus": "the procedures merged into their consensus, everything else dropped",
}
RULES: tuple[str, ...] = (*REGISTERED_RULES, *OP_RULES)
FOLD_BY: tuple[str, ...] = ("draw", "variation")
# the LearnabilityConfig fields a study's records depend on (the log's fingerprint)
RECORD_FIELDS: tuple[str, ...] = ("env_id", "families", "banks", "rules", "draws", "seed", "env_kwargs", "max_regions")
LOG_NAME = "records.jsonl"  # the study's log in its output folder (dreamer_gym.studies.record_log)


@dataclass(frozen=True)
class LearnabilityConfig:
    """The study's settings; ``dreamer-gym learnability`` generates its flags from these fields."""

    env_id: str = field(default="MemoryConsolidation-ScienceWorld-v1", metadata={"help": "env id"})
    families: tuple[str, ...] | None = field(default=None, metadata={"help": "None: every family in the pool"})
    banks: tuple[int, ...] | None = field(default=None, metadata={"help": "None: every bank in the pool"})
    rules: tuple[str, ...] = field(default=RULES, metadata={
        "help": "the rule family: op rules of the study or registered deterministic consolidators (a trained "
                "policy too, e.g. oplevel:runs/x/checkpoint-20, to see where it stands among the rules)"})
    draws: int = field(default=2, metadata={
        "help": "episode draws per region (each region and draw its own reset seed); at least 2 to cross-fit on "
                "draws, 1 is enough with `fold_by` variation"})
    seed: int = field(default=0, metadata={"help": "the reset seeds' base and the bootstrap's seed"})
    bootstrap_resamples: int = field(default=2000, metadata={"help": "resamples of the gap's bootstrap CI"})
    workers: int = field(default=0, metadata={"help": "evaluation worker processes (0 = in-process)"})
    env_kwargs: dict[str, Any] = field(default_factory=dict, metadata={
        "help": "env settings over the id's (e.g. a pool with window regions: {\"pool\": \"scienceworld-windows-v0\", "
                "\"pool_hash\": null}); one that changes the reward makes the study not comparable to the id"})
    max_regions: int | None = field(default=None, metadata={
        "help": "study a seeded sample of this many regions (None: every region the config names)"})
    fold_by: str = field(default="draw", metadata={
        "choices": FOLD_BY,
        "help": "what the cross-fit chooses on and scores on: `draw` (the episode draws: they may replay the same "
                "episodes) or `variation` (each region's episodes split into 2 disjoint halves by variation; "
                "`draws` 1 is enough)"})

    def __post_init__(self) -> None:
        if self.max_regions is not None and self.max_regions < 2:
            raise ConfigError(f"Expected `max_regions` >= 2 or None, got {self.max_regions}")
        if self.fold_by not in FOLD_BY:
            raise ConfigError(f"Expected `fold_by` to be one of {list(FOLD_BY)}, got {self.fold_by!r}")
        if self.draws < (1 if self.fold_by == "variation" else 2):
            raise ConfigError(f"Expected `draws` >= 2 (one draw chooses, another scores), got {self.draws}; with "
                              "`fold_by` variation (--fold-by variation) 1 draw is enough")
        if len(self.rules) < 2 or len(set(self.rules)) != len(self.rules):
            raise ConfigError(f"Expected `rules` to be at least 2 distinct names, got {list(self.rules)}")
        if self.bootstrap_resamples < 1:
            raise ConfigError(f"Expected `bootstrap_resamples` to be a positive int, got {self.bootstrap_resamples}")
        from dreamer_gym.consolidators import consolidator_names
        from dreamer_gym.consolidators.registry import split_name

        known = set(OP_RULES) | set(consolidator_names())
        unknown = [r for r in self.rules if split_name(r)[0] not in known]  # "oplevel:CHECKPOINT": a trained policy
        if unknown:
            raise ConfigError(f"Unknown rule(s) {unknown} in `rules`; the study's rules are {list(RULES)} (any "
                              "registered deterministic consolidator works too)")

    def record_fields(self) -> dict[str, Any]:
        """The fields that decide the study's records (a resumed run must match them; the others, such as
        ``fold_by``, ``bootstrap_resamples`` and ``workers``, change only how the records are read or run)."""
        return {name: getattr(self, name) for name in RECORD_FIELDS}

    def reset_seed(self, draw: int, bank: int) -> int:
        """The reset seed of one draw on one bank's regions: every rule of the draw shares it (paired), and
        each bank gets its own, so regions of a family do not share their evaluation episodes."""
        return int(np.random.SeedSequence([self.seed, draw, bank]).generate_state(1)[0])


def study_regions(pool: Any, config: LearnabilityConfig) -> list[tuple[str, int]]:
    """``(region key, bank)`` of every region the config names that the pool holds: on a pool cut by family
    the key is the family; on a window pool every ``window:A-B`` of the banks (``families`` does not apply).
    With ``max_regions``, a sample drawn from ``seed``, in pool order."""
    banks = config.banks if config.banks is not None else tuple(range(len(pool.banks)))
    if pool.region_scheme.kind == "window":
        if config.families:
            raise ConfigError("`families` selects regions of a pool cut by family; this pool's regions are time "
                              "windows: drop `families` (or use `banks`, `max_regions`)")
        regions = [(key, b) for b in banks for key in pool.region_keys(b)]
    else:
        families = config.families or pool.families
        regions = [(f, b) for f in families for b in banks if any(e.family == f for e in pool.banks[b])]
    if not regions:
        raise ConfigError(f"No region: no bank of {list(banks)} holds a region the config names; check "
                          "`families` and `banks` against the pool")
    if config.max_regions is not None and len(regions) > config.max_regions:
        picked = np.random.default_rng(config.seed).choice(len(regions), size=config.max_regions, replace=False)
        regions = [regions[i] for i in sorted(picked)]
    return regions


Job = tuple[str, int, int, str]  # (region key, bank, draw, rule)


def job_of(record: Mapping[str, Any]) -> Job:
    return (record["family"], int(record["bank"]), int(record["draw"]), record["rule"])


def study_jobs(regions: Sequence[Sequence[Any]], config: LearnabilityConfig) -> list[Job]:
    """Every (region, bank, draw, rule) of the study, in the order they run (region by region)."""
    return [(f, int(b), d, r) for f, b in regions for d in range(config.draws) for r in config.rules]


def run_job(env: Any, config: LearnabilityConfig, job: Job) -> dict[str, Any]:
    """One commit of one rule on one region under one draw, as a record: the commit reward ``info["return"]``,
    its parts, and every episode's ``[family, variation, in_family, before, after]`` (what a fold's reward is
    recomputed from: :mod:`dreamer_gym.studies.folds`)."""
    family, bank, draw, rule = job
    start = time.perf_counter()
    info = run_episode(env, make_rule(rule), seed=config.reset_seed(draw, bank),
                       options={"region": family, "bank": bank})  # a family pool's key is its family
    parts = info["reward_components"]
    return {"kind": "record", "family": family, "bank": bank, "draw": draw, "rule": rule, "reward": info["return"],
            "score_delta": parts["score_delta"], "size": parts["size"],
            "in_family": info["score_delta_parts"]["in_family"], "tokens": info["size_after"]["tokens"],
            "seconds": round(time.perf_counter() - start, 3),
            "episodes": [[e["family"], e["variation"], e["in_family"], e["before"], e["after"]]
                         for e in info["episodes"]]}


def env_setting(env: Any, config: LearnabilityConfig, comparable: bool) -> dict[str, Any]:
    cfg, pool = env.unwrapped.config, env.unwrapped.pool
    return {"env_id": config.env_id, "comparable": comparable, "split": cfg.split, "pool_hash": pool.hash,
            "banks": len(pool.banks), "eval_in_family": int(cfg.eval_in_family),
            "eval_other": int(cfg.eval_other), "size_coef": float(cfg.size_coef)}


def collect(config: LearnabilityConfig, progress: bool = True, out_dir: str | Path | None = None,
            max_jobs: int | None = None) -> dict[str, Any]:
    """Every rule on every region under every draw: one record per (region, bank, draw, rule) (:func:`run_job`).

    With ``out_dir``, each record is appended to ``out_dir/records.jsonl`` the moment it is done, and each
    region's features once (:mod:`dreamer_gym.studies.record_log`): a rerun of the same config runs only the jobs
    not there yet, one of another config is refused naming the fields that differ. ``max_jobs`` stops after that
    many new jobs (the rest for a later run). Returns :func:`assemble`'s data (``progress`` says how much is in)."""
    from tqdm.auto import tqdm

    path = Path(out_dir) / LOG_NAME if out_dir is not None else None
    log = RecordLog.read(path) if path is not None else None
    if log is not None:
        log.check(config.record_fields())  # before the simulator starts
    done = {job_of(r): r for r in (log.of_kind("record") if log else [])}
    features = {(r["family"], int(r["bank"])): r for r in (log.of_kind("region") if log else [])}
    header = dict(log.header) if log is not None else None
    if header is not None:
        todo = [j for j in study_jobs(header["regions"], config) if j not in done]
        if not todo or max_jobs == 0:
            return assemble(header, done, features, config)
    env, comparable = make_study_env(config.env_id, config.workers, dict(config.env_kwargs))
    try:
        regions = [[f, b] for f, b in study_regions(env.unwrapped.pool, config)]
        setting = env_setting(env, config, comparable)
        if header is not None and (header["regions"], header["setting"]) != (regions, setting):
            said = "regions" if header["regions"] != regions else f"setting {header['setting']} -> {setting}"
            raise ConfigError(f"{path} was written for other {said} under the same config (the pool or the env "
                              "changed since): pass another output folder to start anew")
        header = {"config": config.record_fields(), "setting": setting, "regions": regions}
        todo = [j for j in study_jobs(regions, config) if j not in done][:max_jobs]
        with open_log(path, header) if path is not None else nullcontext(None) as writer:
            for job in tqdm(todo, desc="learnability", disable=not progress):
                done[job] = record = run_job(env, config, job)
                key = (job[0], job[1])
                if key not in features:
                    info = env.reset(seed=0, options={"region": key[0], "bank": key[1]})[1]
                    features[key] = {"kind": "region", "family": key[0], "bank": key[1],
                                     **region_features(info["region"]), **context_columns(info)}
                    if writer is not None:
                        writer.append(features[key])
                if writer is not None:
                    writer.append(record)
    finally:
        env.close()
    return assemble(header, done, features, config)


def assemble(header: Mapping[str, Any], records: Mapping[Job, Mapping[str, Any]],
             features: Mapping[tuple[str, int], Mapping[str, Any]], config: LearnabilityConfig) -> dict[str, Any]:
    """The study's data from what is done: ``records`` in job order, ``regions`` (with their features) the
    regions whose every job is done, and ``progress`` (records done of all jobs, regions complete of all)."""
    strip = ("kind",)
    jobs = study_jobs(header["regions"], config)
    complete = [(f, int(b)) for f, b in header["regions"]
                if (f, int(b)) in features and all(j in records for j in study_jobs([(f, b)], config))]
    kept = set(complete)
    return {"setting": header["setting"],
            "records": [{k: v for k, v in records[j].items() if k not in strip} for j in jobs
                        if j in records and (j[0], j[1]) in kept],
            "regions": [{k: v for k, v in features[key].items() if k not in strip} for key in complete],
            "progress": {"records": sum(j in records for j in jobs), "jobs": len(jobs), "regions": len(complete),
                         "of_regions": len(header["regions"]), "complete": len(complete) == len(header["regions"])}}


def summarise(data: Mapping[str, Any], config: LearnabilityConfig) -> dict[str, Any]:
    """The cross-fitted tables of a study's data (:func:`collect` or a log): on the draws, or with ``fold_by``
    variation on disjoint halves of each region's variations (:func:`variation_folds`). Data with regions not yet
    complete is summarised on the complete ones and labelled partial (``progress``)."""
    regions = [(r["family"], int(r["bank"])) for r in data["regions"]]
    if len(regions) < 2:
        raise ConfigError(f"{len(regions)} region(s) of the study have every job done; the tables need at least 2 "
                          "(resume the study first)")
    rules = list(config.rules)
    folds: dict[str, Any] = {"by": config.fold_by}
    if config.fold_by == "variation":
        scores, split = variation_folds(data["records"], regions, rules, config.draws, config.seed)
        folds.update(split)
    else:
        scores = score_table(data["records"], regions, rules, config.draws)
    fit = crossfit(scores)
    # the bootstrap's strata: a family pool's regions by family; a window pool's by bank (keys repeat across banks)
    windows = any(parse_window(f) is not None for f, _ in regions)
    strata = [f if parse_window(f) is None else f"bank {b}" for f, b in regions]
    lo, hi = bootstrap_gap(scores, strata, config.bootstrap_resamples, config.seed)
    table = describe_rules(scores, rules, strata)
    best = _argmax(scores.mean(axis=2))  # per region, on every fold: the share table's label
    names = study_features(data["regions"])
    x = np.array([[r[f] for f in names] for r in data["regions"]], dtype=float)
    noise = draw_noise(data["records"], regions, rules, config.draws)
    progress = data.get("progress") or {"complete": True}
    return {
        "setting": data["setting"], "regions": len(regions), "families": list(dict.fromkeys(strata)), "rules": rules,
        "draws": config.draws, "folds": folds, "progress": progress,
        "best_constant": rules[fit["constant_per_fold"][0]],
        "constant_per_fold": [rules[c] for c in fit["constant_per_fold"]],
        "constant": fit["constant_mean"], "choice": fit["choice_mean"], "gap": fit["gap_mean"], "gap_ci95": [lo, hi],
        "gap_ci_excludes_0": bool(lo > 0 or hi < 0),
        "agreement": {"constant": fit["agreement_constant"], "choice": fit["agreement_choice"]},
        "hindsight": {"constant": fit["hindsight_constant"], "choice": fit["hindsight_choice"],
                      "gap": fit["hindsight_gap"]},
        **noise, **table,
        "feature_policies": feature_policies(scores, x, names, rules),  # cross-fitted on the same folds
        "topic_referee": study_topic_referee(scores, x, names, rules, data["regions"], config.bootstrap_resamples,
                                             config.seed),
        # the fixed reference rows chosen on other draws; a window pool's regions have no one family to switch on
        **referee(scores, rules, None if windows else [f for f, _ in regions], strata, config.bootstrap_resamples,
                  config.seed),
        "per_region": [{"family": f, "bank": b, "best": rules[int(best[i])], "constant": float(fit["constant"][i]),
                        "choice": float(fit["choice"][i]), "gap": float(fit["gap"][i]),
                        "choice_per_fold": [rules[c[i]] for c in fit["choice_per_fold"]]}
                       for i, (f, b) in enumerate(regions)],
    }


def noise_markdown(summary: Mapping[str, Any]) -> str:
    """The sentences on how the folds were cut and how noisy one commit is."""
    folds = summary.get("folds") or {"by": "draw"}
    unit = "draws" if folds["by"] == "draw" else "folds"
    text = ""
    if summary.get("draw_noise") is not None:
        text = (f"Mean |draw 0 - draw 1| of one rule on one region: {summary['draw_noise']:.4f}; in-family episodes "
                f"of draw 0 also in draw 1: {summary['draw_overlap']:.2f}. ")
    if folds["by"] == "variation":
        eps, var = folds["episodes_per_fold"], folds["variations_per_fold"]
        text += (f"Cross-fitted on 2 disjoint halves of each region's variations (episodes per fold: {eps[0]:.1f} "
                 f"and {eps[1]:.1f}; variations {var[0]:.1f} and {var[1]:.1f}; none shared). ")
    return (text + f"One commit's noise (SD between {unit}): {summary.get('commit_sd', float('nan')):.4f}, against a "
            f"mean gap of {summary.get('runner_up_gap', float('nan')):.4f} between a region's best rule and its "
            f"runner-up. Agreement with the held-out {unit[:-1]}'s best rule: constant "
            f"{summary['agreement']['constant']:.2f}, choice {summary['agreement']['choice']:.2f}.")


def to_markdown(summary: Mapping[str, Any]) -> str:
    s = summary["setting"]
    lo, hi = summary["gap_ci95"]
    windows = any(str(f).startswith("bank ") for f in summary["families"])
    strata = f"{len(summary['families'])} {'banks of time windows' if windows else 'families'}"
    progress = summary.get("progress") or {"complete": True}
    partial = [] if progress["complete"] else [
        f"**Partial**: {progress['regions']} of {progress['of_regions']} regions complete ({progress['records']} of "
        f"{progress['jobs']} commits done); the tables read the complete regions only.", ""]
    by_variation = (summary.get("folds") or {}).get("by") == "variation"
    lines = [
        *partial,
        f"Env `{s['env_id']}` ({'the registered id as it runs' if s['comparable'] else '**not comparable**'}; pool "
        f"`{s['pool_hash']}`), {s['split'].upper()} split; {summary['regions']} regions ({strata}); "
        f"{len(summary['rules'])} rules x {summary['draws']} episode draw{'s' if summary['draws'] > 1 else ''}; "
        f"{s['eval_in_family']} in-family + {s['eval_other']} other-family episodes per commit; unit: the commit "
        f"reward{', cross-fitted on disjoint halves of the variations' if by_variation else ''}.", "",
        f"| | reward (cross-fitted) | in hindsight (same {'episodes' if by_variation else 'draws'}) |", "|---|---|---|",
        f"| best constant (`{summary['best_constant']}`) | {summary['constant']:+.4f} | "
        f"{summary['hindsight']['constant']:+.4f} |",
        f"| best per-region choice | {summary['choice']:+.4f} | {summary['hindsight']['choice']:+.4f} |",
        f"| **gap** (choice - constant) | **{summary['gap']:+.4f}** [{lo:+.4f}, {hi:+.4f}] | "
        f"{summary['hindsight']['gap']:+.4f} |", "",
        f"95% CI: regions resampled within {'banks' if windows else 'families'}, both selections redone "
        f"({'excludes' if summary['gap_ci_excludes_0'] else 'includes'} 0). {noise_markdown(summary)}",
        "", "| rule | mean reward | share of regions where best |", "|---|---|---|",
    ]
    for rule, row in summary["per_rule"].items():
        lines.append(f"| {rule} | {row['mean']:+.4f} | {row['best_share']:.2f} |")
    if summary["merging_vs_keep_all"]:
        lines += ["", "| merging rule vs keep-all | hurts | helps | equal | worst | best |",
                  "|---|---|---|---|---|---|"]
        for rule, m in summary["merging_vs_keep_all"].items():
            lines.append(f"| {rule} | {m['hurts']:.2f} | {m['helps']:.2f} | {m['equal']:.2f} | {m['worst']:+.4f} | "
                         f"{m['best']:+.4f} |")
    lines += ["", *fixed_rows_markdown(summary), "",
              "| policy reading features (cross-fitted) | reward | - best fixed | agreement | fitted on fold 0 |",
              "|---|---|---|---|---|"]
    for p in summary["feature_policies"]:
        lines.append(f"| {p['model']} | {p['value']:+.4f} | {p.get('vs_best_fixed', float('nan')):+.4f} | "
                     f"{p['agreement']:.2f} | {p['trees'][0]} |")
    return "\n".join([*lines, *topic_markdown(summary.get("topic_referee"))]) + "\n"



def fixed_rows_markdown(summary: Mapping[str, Any]) -> list[str]:
    """The reference rows chosen on other folds (best fixed rule, family switch) as a table, shared by the env
    study and the track study; empty for a summary written before they existed."""
    fixed, switch = summary.get("best_fixed"), summary.get("family_switch")
    if fixed is None:
        return []
    per_fold = ", ".join(dict.fromkeys(fixed["per_fold"]))
    lines = ["| fixed reference row (chosen on the other folds) | held-out reward | - best fixed [95% CI] | "
             "in sample |", "|---|---|---|---|",
             f"| best fixed rule (`{per_fold}`) | {fixed['value']:+.4f} | | {fixed['in_sample']['value']:+.4f} "
             f"(`{fixed['in_sample']['rule']}`) |"]
    if switch is not None:
        d = switch["vs_best_fixed"]
        lo, hi = d["ci95"]
        lines.append(f"| family switch (fold 0: {describe_switch(switch['per_fold'][0], fixed['per_fold'][0])}) | "
                     f"{switch['value']:+.4f} | {d['difference']:+.4f} [{lo:+.4f}, {hi:+.4f}] | "
                     f"{switch['in_sample']:+.4f} |")
    return lines


def run(config: LearnabilityConfig, out_dir: str | Path | None = None, progress: bool = True,
        max_jobs: int | None = None) -> dict[str, Any]:
    """Collect and summarise. With ``out_dir``, the records go to ``out_dir/records.jsonl`` as they finish (a rerun
    resumes: :func:`collect`) and, once every job is done, ``learnability.json`` (config, summary, regions,
    records) and ``learnability.md`` are written from them. ``max_jobs`` stops after that many new jobs; a study
    not yet complete returns only ``{"progress": ...}`` and writes no tables (:func:`summarise_log` does)."""
    data = collect(config, progress=progress, out_dir=out_dir, max_jobs=max_jobs)
    if not data["progress"]["complete"]:
        return {"progress": data["progress"]}
    summary = summarise(data, config)
    if out_dir is not None:
        write_tables(Path(out_dir), config, summary, data)
    return summary


def summarise_log(out_dir: str | Path, config: LearnabilityConfig, given: Sequence[str] = ()) -> dict[str, Any]:
    """The tables from what ``out_dir``'s log holds, running nothing (``--summarise-only``): partial, and labelled
    so, where regions are missing. The study is the log's (its record fields); ``config`` gives the rest
    (``fold_by``, ``bootstrap_resamples``). ``given``: record fields the caller set on purpose, refused where they
    differ from the log's."""
    out = Path(out_dir)
    log = RecordLog.read(out / LOG_NAME)
    if log is None:
        raise ConfigError(f"{out / LOG_NAME}: no study log there; run the study with this output folder first")
    fields = {k: tuple(v) if isinstance(v, list) else v for k, v in log.header["config"].items()}
    log.check({**fields, **{k: v for k, v in config.record_fields().items() if k in given}})
    config = replace(config, **fields)
    features = {(r["family"], int(r["bank"])): r for r in log.of_kind("region")}
    if features and not has_context(list(features.values())):
        # a log written without the context columns (older code, or a study still running): from region resets
        env, _ = make_study_env(config.env_id, 0, dict(config.env_kwargs))
        try:
            backfill(env, features)
        finally:
            env.close()
    data = assemble(log.header, {job_of(r): r for r in log.of_kind("record")}, features, config)
    summary = summarise(data, config)
    write_tables(out, config, summary, data)
    return summary


def write_tables(out: Path, config: LearnabilityConfig, summary: Mapping[str, Any], data: Mapping[str, Any]) -> None:
    """``learnability.json`` (config, summary, regions, records) and ``learnability.md``."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "learnability.json").write_text(json.dumps(
        {"config": asdict(config), "summary": summary, "regions": data["regions"], "records": data["records"]},
        indent=1))
    (out / "learnability.md").write_text(to_markdown(summary))
