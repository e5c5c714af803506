"""The learnability study on a held-out track, from its committed rows: no simulator runs.

Every row of a track plays the same regions and the same TEST episodes, and its results file keeps every
episode's score before and after. So the rules' rows (keep-all, empty, dedupe, consensus and the op rules
``rule:merge-all`` ...) are a ``(regions, rules)`` table of the track's own reward, and splitting each region's
episodes into disjoint **folds** (by TEST variation, the same split for every bank and row) makes it a
``(regions, rules, folds)`` table: the best constant and the best per-region choice are chosen on some folds and
scored on the fold left out (:func:`~dreamer_gym.studies.learnability.crossfit`), on episodes that share nothing.
A fold's reward is the track's reward formula (:mod:`dreamer_gym.contract.reward`) on the fold's episodes; on all
of them it reproduces the record's reward, which :func:`fold_rewards` checks.

The trained rows (``kind: contender``) are then read against the table (issue 31, item 4):

* **input dependence**: the share of regions where the policy plays the cross-fitted best rule (it commits a
  bank that scores like that rule's on every episode, with the same size), against the best constant's share;
* **against the fixed reference rows, chosen on the other folds** (:mod:`dreamer_gym.studies.fixed_referee`):
  ``vs_best_fixed``, the row's reward on each held-out fold minus that of the rule chosen on the other folds, and
  ``vs_family_switch``, the same against the per-family switch; paired per (region, fold), mean and 95% CI over
  banks resampled within families with the reference's choice redone on every resample;
* **paired differences** against the in-sample best constant (``vs_best_constant``: the rule best on all
  episodes, the board's reading, biased upward as a maximum over the scored episodes; kept for continuity) and
  against dedupe: the track's mean reward (banks resampled within families: a region's reward mixes in-family and
  other-family episodes) and the board's IQM of normalised scores (banks and TEST variations resampled, as the
  board does), each with its paired 95% CI (:func:`dreamer_gym.stats.paired_difference`);
* for rows named ``...-seedN``, the median seed by track score.

:func:`study`'s output: ``best_constant`` (in sample), ``constant_per_fold``, ``constant``/``choice``/``gap`` (the
cross-fit), ``best_fixed`` and ``family_switch`` (:func:`~dreamer_gym.studies.fixed_referee.referee`: the reference rows
chosen on other folds, the switch with its paired CI against the best fixed rule), the rule table
(``per_rule``, ...), ``feature_policies`` (cross-fitted on the same folds), ``policies`` (per row: ``score``,
``agreement``, ``plays``, ``vs_best_fixed``, ``vs_family_switch``, ``vs_best_constant``, ``vs_dedupe``) and
``per_region``.
"""
from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dreamer_gym.consolidators.context_rules import CONTEXT_RULES
from dreamer_gym.envs.bank_context import REGION_CONTEXT_FEATURES
from dreamer_gym.errors import ConfigError
from dreamer_gym.stats import iqm_difference, mean_difference, paired_difference
from dreamer_gym.studies.fixed_referee import PairedReferee, constant_selection, referee, switch_selection
from dreamer_gym.studies.region_context import context_columns
from dreamer_gym.studies.folds import fold_map, fold_rewards  # noqa: F401  (fold_map: part of this module's API)
from dreamer_gym.studies.topic_referee import study_topic_referee, topic_markdown
from dreamer_gym.studies.learnability import (
    FEATURES,
    _argmax,
    bootstrap_gap,
    crossfit,
    describe_rules,
    feature_policies,
    fixed_rows_markdown,
    region_features,
)

# the rows that are whole-region rules: deterministic, no learning (random and blind are not rules of the region);
# the context and synthesize rules of tool contract 2 where a protocol-4 track has their rows
RULE_ROWS: tuple[str, ...] = ("keep-all", "empty", "dedupe", "consensus", "rule:merge-all", "rule:merge-procedures",
                              "rule:merge-procedures-keep-facts", "rule:abstract-procedures", "rule:procedures-only",
                              "rule:drop-insights", *(f"rule:{name}" for name in CONTEXT_RULES))
# "draft": a row of the next protocol run by a maintainer before it ships (the track's real runner and reward
# service, research/protocol4.py), kept in a staging folder shaped like an archive; the board never reads it
READ_TIERS = ("re-scored", "draft")
SEED_SUFFIX = re.compile(r"^(?P<base>.+)-seed(?P<seed>\d+)$")


@dataclass(frozen=True)
class TrackLearnabilityConfig:
    """The track study's settings (``dreamer-gym learnability --track NAME``)."""

    track: str = "scienceworld"
    folds: int = 2
    seed: int = 0
    bootstrap_resamples: int = 2000

    def __post_init__(self) -> None:
        if self.folds < 2:
            raise ConfigError(f"Expected `folds` (--draws) >= 2 (one fold chooses, another scores), got {self.folds}")
        if self.bootstrap_resamples < 1:
            raise ConfigError(f"Expected `bootstrap_resamples` >= 1, got {self.bootstrap_resamples}")


def play_signature(record: Mapping[str, Any]) -> tuple[Any, ...]:
    """What a region's commit looks like from the track: every episode's score after, and the size after. Two rows
    with equal signatures on a region played the same rule there, as far as the track can tell."""
    return (tuple(float(e["after"]) for e in record["episodes"]), int(record["size_after"]["tokens"]))


def _records(result: Mapping[str, Any]) -> dict[tuple[int, str], Mapping[str, Any]]:
    return {(int(r["bank_index"]), r["family"]): r for r in result["records"]}


@dataclass(frozen=True)
class TrackView:
    """What the study reads of a track file: a current track's, or an archived protocol's (which the package no
    longer loads as a :class:`~dreamer_gym.leaderboard.tracks.Track`)."""

    name: str
    protocol_version: int
    env_id: str
    families: tuple[str, ...]
    banks: tuple[int, ...]
    pool: str | None
    listed: tuple[tuple[int, str], ...] | None = None  # a window track's region list
    path: Path | None = None  # the track file, where the study read one (an archive or a draft's staging folder)

    def regions(self) -> list[tuple[int, str]]:
        if self.listed is not None:
            return list(self.listed)
        return [(b, f) for f in self.families for b in self.banks]


def track_view(track_name: str, archive: Path | None = None) -> TrackView:
    """The current track ``track_name``, or with ``archive`` (``leaderboards/archive/protocol-N``) its archived file."""
    if archive is not None:
        import yaml

        path = Path(archive) / "tracks" / f"{track_name}.yaml"
        if not path.is_file():
            raise ConfigError(f"`--archive`: no {path}; an archive folder holds tracks/TRACK.yaml and results/TRACK/")
        d = yaml.safe_load(path.read_text())
        listed = tuple((int(b), str(k)) for b, k in d["regions"]) if d.get("regions") else None
        return TrackView(d["name"], int(d["protocol_version"]), d["env_id"], tuple(d["families"]), tuple(d["banks"]),
                         d.get("pool"), listed, path)
    from dreamer_gym.leaderboard.tracks import Track, load_track

    track = load_track(track_name)
    if not isinstance(track, Track):
        raise ConfigError(f"`--track`: {track_name!r} is a transfer track (a list of member tracks); name a member")
    return TrackView(track.name, track.protocol_version, track.env_id, track.families, track.banks, track.pool,
                     tuple(track.regions()) if track.windows else None)


def load_rows(track: TrackView, results_dir: Path) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]], Any]:
    """The track's rule rows, its contender rows (re-scored, the track's protocol, every region scored) and the
    board's normaliser (None without its empty and oracle rows)."""
    from dreamer_gym.leaderboard.aggregate import Normaliser
    from dreamer_gym.leaderboard.board import load_results

    results = load_results(Path(results_dir)).get(track.name, [])
    current = [r for r in results if r["tier"] in READ_TIERS and r["protocol_version"] == track.protocol_version
               and len(r["records"]) == len(track.regions())]
    rules = {r["builtin"]: r for r in current if r.get("builtin") in RULE_ROWS}
    rules = {name: rules[name] for name in RULE_ROWS if name in rules}
    policies = {r["consolidator"]["name"]: r for r in current if r["consolidator"]["kind"] == "contender"}
    if len(rules) < 2:
        raise ConfigError(f"track {track.name!r}: {len(rules)} rule row(s) of protocol {track.protocol_version} in "
                          f"{results_dir}/{track.name}/ ({sorted(rules)}); the study needs at least 2 of {list(RULE_ROWS)}: "
                          "submit them with `dreamer-gym leaderboard submit --consolidator rule:merge-all --kind fixed`")
    anchors = {r["builtin"]: r for r in current if r.get("builtin") in ("empty", "oracle")}
    normaliser = Normaliser.from_results(anchors["empty"], anchors["oracle"]) if len(anchors) == 2 else None
    return rules, policies, normaliser


def _paired(x: Mapping[str, Any], y: Mapping[str, Any], normaliser: Any) -> dict[str, Any]:
    from dreamer_gym.leaderboard.aggregate import reward_matrix

    mean_d, mean_ci = paired_difference(reward_matrix(x), reward_matrix(y), statistic=mean_difference)
    out = {"reward": mean_d, "reward_ci95": list(mean_ci), "reward_excludes_0": bool(mean_ci[0] > 0 or mean_ci[1] < 0)}
    if normaliser is not None:
        iqm_d, iqm_ci = paired_difference(normaliser.cells(x), normaliser.cells(y), statistic=iqm_difference)
        out.update({"iqm_normalised": iqm_d, "iqm_ci95": list(iqm_ci),
                    "iqm_excludes_0": bool(iqm_ci[0] > 0 or iqm_ci[1] < 0)})
    return out


def median_seeds(scores: Mapping[str, float]) -> dict[str, dict[str, Any]]:
    """Rows named ``BASE-seedN`` grouped by BASE: every seed's score and the median seed (the lower middle one
    when the count is even), so a claim about a method rests on its median seed, not its best."""
    groups: dict[str, list[str]] = {}
    for name in scores:
        m = SEED_SUFFIX.match(name)
        if m:
            groups.setdefault(m["base"], []).append(name)
    out = {}
    for base, names in groups.items():
        ordered = sorted(names, key=lambda n: (scores[n], n))
        out[base] = {"seeds": {n: scores[n] for n in sorted(names)}, "median": ordered[(len(ordered) - 1) // 2]}
    return out


def rule_table(config: TrackLearnabilityConfig, results_dir: str | Path | None = None,
               archive: str | Path | None = None) -> dict[str, Any]:
    """The track's rows read into the study's table: ``track``, ``rule_rows``, ``policy_rows``, ``normaliser``,
    ``regions`` ((bank, family)), ``rules``, ``recs`` (row -> region -> record), ``folds`` and ``scores``
    ((regions, rules, folds) fold rewards), and ``x`` (the region features)."""
    from dreamer_gym.contract.ids import ENV_IDS
    from dreamer_gym.leaderboard.board_commands import RESULTS_DIR
    from dreamer_gym.pool import load_pool

    track = track_view(config.track, Path(archive) if archive is not None else None)
    default = Path(archive) / "results" if archive is not None else RESULTS_DIR
    rule_rows, policy_rows, normaliser = load_rows(track, Path(results_dir or default))
    regions = track.regions()  # (bank, family)
    rules = list(rule_rows)
    recs = {name: _records(r) for name, r in {**rule_rows, **policy_rows}.items()}
    episodes = [(e["family"], int(e["variation"])) for rec in recs[rules[0]].values() for e in rec["episodes"]]
    folds = fold_map(episodes, config.folds, config.seed)
    scores = np.array([[fold_rewards(recs[rule][region], folds, config.folds) for rule in rules]
                       for region in regions])
    if np.isnan(scores).any():
        raise ConfigError(f"track {config.track!r}: a fold holds no episode of some region; use fewer `folds`")
    context = track_context(track)
    if context is None:  # an id without the bank context: the region's own features, from the pool (protocol 3)
        pool = load_pool(track.pool or ENV_IDS[track.env_id].pool)
        own = [region_features([e.to_dict() for e in pool.banks[b] if e.family == f]) for b, f in regions]
        context = [{} for _ in regions]
        names: tuple[str, ...] = FEATURES
    else:
        own = [c.pop("own") for c in context]
        names = FEATURES + REGION_CONTEXT_FEATURES
    x = np.array([[{**o, **c}[name] for name in names] for o, c in zip(own, context, strict=True)], dtype=float)
    return {"track": track, "rule_rows": rule_rows, "policy_rows": policy_rows, "normaliser": normaliser,
            "regions": regions, "rules": rules, "recs": recs, "folds": folds, "scores": scores, "x": x,
            "features": names, "context": context}


def track_context(track: TrackView) -> list[dict[str, Any]] | None:
    """Per region of a track on a tool-contract-2 id, what its policy was shown: the region's own features (``own``,
    from the entries the env hands it) and the bank-context columns with the region's ``tasks``
    (:func:`~dreamer_gym.studies.region_context.context_columns`), from one reset of each region (no evaluation
    runs); None on an id without the bank context."""
    from dreamer_gym.contract.ids import ENV_IDS
    from dreamer_gym.envs.consolidation import ConsolidationEnv
    from dreamer_gym.leaderboard.tracks import PROTOCOL_VERSION, Track, load_track

    if ENV_IDS[track.env_id].tool_contract < 2:
        return None
    full = load_track(track.path or track.name, draft=track.protocol_version == PROTOCOL_VERSION + 1)
    assert isinstance(full, Track)
    env = ConsolidationEnv(**full.env_kwargs())
    try:
        out = []
        for i, (bank, key) in enumerate(full.regions()):
            info = env.reset(seed=full.seed + i, options=full.reset_options(bank, key))[1]
            out.append({"own": region_features(info["region"]), **context_columns(info)})
        return out
    finally:
        env.close()


def topic_table(config: TrackLearnabilityConfig, table: Mapping[str, Any]) -> dict[str, Any] | None:
    """The leave-one-family-out referee on the track's table: fitted on the other held-out families."""
    regions = [{"family": f, "bank": b, **c} for (b, f), c in zip(table["regions"], table["context"], strict=True)]
    return study_topic_referee(table["scores"], table["x"], table["features"], table["rules"], regions,
                               config.bootstrap_resamples, config.seed)


def study(config: TrackLearnabilityConfig, results_dir: str | Path | None = None,
          archive: str | Path | None = None) -> dict[str, Any]:
    """The cross-fitted table of the track's rule rows, and every contender row read against it. With ``archive``
    (``leaderboards/archive/protocol-N``), the archived protocol's track and rows (``results_dir`` defaults to its
    ``results``): the "before" of a protocol bump."""
    t = rule_table(config, results_dir, archive)
    track, rule_rows, policy_rows, normaliser = t["track"], t["rule_rows"], t["policy_rows"], t["normaliser"]
    regions, rules, recs, folds, scores, x = t["regions"], t["rules"], t["recs"], t["folds"], t["scores"], t["x"]
    fit = crossfit(scores)
    strata = [family for _, family in regions]
    lo, hi = bootstrap_gap(scores, strata, config.bootstrap_resamples, config.seed)
    table = describe_rules(scores, rules, strata)
    mean = scores.mean(axis=2)
    best = _argmax(mean)
    families = list(dict.fromkeys(strata))

    # the contenders against the table
    constant_name = rules[int(_argmax(mean.mean(axis=0)))]  # the best constant on every fold (the board's reading)
    signatures = [{name: play_signature(recs[name][region]) for name in recs} for region in regions]
    chosen = fit["choice_per_fold"]  # fold -> per-region rule index, chosen on the other folds

    def agreement(name: str) -> float:
        """Share of (region, fold) where ``name`` plays the rule chosen on the other folds."""
        hits = [signatures[i][name] == signatures[i][rules[c[i]]] for c in chosen for i in range(len(regions))]
        return float(np.mean(hits))

    def plays(name: str) -> dict[str, float]:
        """Share of regions where ``name`` plays each rule (the first listed of equal plays), or none of them."""
        counts: dict[str, int] = {}
        for sig in signatures:
            match = next((rule for rule in rules if sig[rule] == sig[name]), "none of the rules")
            counts[match] = counts.get(match, 0) + 1
        return {k: v / len(regions) for k, v in sorted(counts.items(), key=lambda kv: -kv[1])}

    # the fixed reference rows chosen on other folds, paired with each row per (region, fold)
    vs_fixed = PairedReferee(constant_selection(scores), strata, config.bootstrap_resamples, config.seed)
    vs_switch = PairedReferee(switch_selection(scores, strata), strata, config.bootstrap_resamples, config.seed)
    policies = {}
    for name, row in policy_rows.items():
        held_out = np.array([fold_rewards(recs[name][region], folds, config.folds, region_terms=True)
                             for region in regions])
        policies[name] = {
            "score": float(row["summary"]["score"]), "trained_on": row["consolidator"]["trained_on"],
            "agreement": agreement(name), "plays": plays(name),
            "vs_best_fixed": vs_fixed.against(held_out), "vs_family_switch": vs_switch.against(held_out),
            "vs_best_constant": _paired(row, rule_rows[constant_name], normaliser),
            "vs_dedupe": _paired(row, rule_rows["dedupe"], normaliser) if "dedupe" in rule_rows else None}
    constant_agreement = agreement(constant_name)
    # how often the choice made on one fold is the choice made on another: the agreement a policy that reads the
    # region perfectly could expect, where the per-region best rule itself moves with the episodes
    pairs = [(a, b) for a in range(len(chosen)) for b in range(len(chosen)) if a < b]
    consistency = float(np.mean([signatures[i][rules[chosen[a][i]]] == signatures[i][rules[chosen[b][i]]]
                                 for a, b in pairs for i in range(len(regions))]))
    for p in policies.values():
        p["agreement_minus_constant"] = p["agreement"] - constant_agreement
    return {
        "track": config.track, "protocol": track.protocol_version, "env_id": track.env_id, "config": asdict(config),
        "regions": len(regions), "families": families, "rules": rules,
        "episodes_per_fold": [int(sum(1 for v in folds.values() if v == k)) for k in range(config.folds)],
        "best_constant": constant_name, "constant_per_fold": [rules[c] for c in fit["constant_per_fold"]],
        "constant": fit["constant_mean"], "choice": fit["choice_mean"], "gap": fit["gap_mean"], "gap_ci95": [lo, hi],
        "gap_ci_excludes_0": bool(lo > 0 or hi < 0),
        "agreement": {"constant": constant_agreement, "choice_consistency": consistency,
                      "constant_held_out_best": fit["agreement_constant"],
                      "choice_held_out_best": fit["agreement_choice"]},
        "hindsight": {"constant": fit["hindsight_constant"], "choice": fit["hindsight_choice"],
                      "gap": fit["hindsight_gap"]},
        **table,
        "features": list(t["features"]),
        "feature_policies": feature_policies(scores, x, t["features"], rules),  # cross-fitted on the same folds
        # fitted on the other held-out families, scored on the one left out (a topic the fit never saw)
        "topic_referee": topic_table(config, t),
        **referee(scores, rules, strata, strata, config.bootstrap_resamples, config.seed),
        "policies": policies, "median_seeds": median_seeds({n: p["score"] for n, p in policies.items()}),
        "per_region": [{"bank": b, "family": f, "best": rules[int(best[i])], "gap": float(fit["gap"][i]),
                        "choice_per_fold": [rules[c[i]] for c in chosen]} for i, (b, f) in enumerate(regions)],
    }


def _ci(d: Mapping[str, Any] | None, key: str) -> str:
    if d is None or key not in d:
        return "n/a"
    lo, hi = d[f"{'reward' if key == 'reward' else 'iqm'}_ci95"]
    return f"{d[key]:+.4f} [{lo:+.4f}, {hi:+.4f}]"


def _fold_ci(d: Mapping[str, Any] | None) -> str:
    if d is None:
        return "n/a"
    lo, hi = d["ci95"]
    return f"{d['difference']:+.4f} [{lo:+.4f}, {hi:+.4f}]"


def to_markdown(s: Mapping[str, Any]) -> str:
    lo, hi = s["gap_ci95"]
    per_fold = s["constant_per_fold"]
    folds = f"; the folds chose {', '.join(per_fold)}" if len(set(per_fold)) > 1 else ""
    lines = [
        f"Track `{s['track']}` (protocol {s['protocol']}, `{s['env_id']}`): {s['regions']} regions "
        f"({len(s['families'])} families), {len(s['rules'])} rule rows, {s['config']['folds']} disjoint folds of the "
        f"track's TEST episodes (episodes per fold: {s['episodes_per_fold']}, by variation); unit: the track's reward.",
        "", "| | reward (cross-fitted over folds) | in hindsight (all episodes) |", "|---|---|---|",
        f"| best constant (`{s['best_constant']}`{folds}) | {s['constant']:+.4f} | {s['hindsight']['constant']:+.4f} |",
        f"| best per-region choice | {s['choice']:+.4f} | {s['hindsight']['choice']:+.4f} |",
        f"| **gap** (choice - constant) | **{s['gap']:+.4f}** [{lo:+.4f}, {hi:+.4f}] | {s['hindsight']['gap']:+.4f} |",
        "", f"95% CI: regions resampled within families, both selections redone "
        f"({'excludes' if s['gap_ci_excludes_0'] else 'includes'} 0). One region's noise between folds (SD): "
        f"{s['commit_sd']:.4f}, against a mean gap of {s['runner_up_gap']:.4f} between a region's best rule and its "
        f"runner-up.", "", "| rule | mean reward | share of regions where best |", "|---|---|---|"]
    for rule, row in s["per_rule"].items():
        lines.append(f"| {rule} | {row['mean']:+.4f} | {row['best_share']:.2f} |")
    if s["merging_vs_keep_all"]:
        lines += ["", "| merging rule vs keep-all | hurts | helps | equal | worst | best |", "|---|---|---|---|---|---|"]
        for rule, m in s["merging_vs_keep_all"].items():
            lines.append(f"| {rule} | {m['hurts']:.2f} | {m['helps']:.2f} | {m['equal']:.2f} | {m['worst']:+.4f} | "
                         f"{m['best']:+.4f} |")
    lines += ["", *fixed_rows_markdown(s), "",
              "| policy reading features (cross-fitted) | reward | - best fixed | agreement | fitted on fold 0 |",
              "|---|---|---|---|---|"]
    for p in s["feature_policies"]:
        lines.append(f"| {p['model']} | {p['value']:+.4f} | {p.get('vs_best_fixed', float('nan')):+.4f} | "
                     f"{p['agreement']:.2f} | {p['trees'][0]} |")
    lines += topic_markdown(s.get("topic_referee"))
    if s["policies"]:
        lines += ["", f"Trained rows against the table. Agreement: the share of (region, fold) where the row plays the "
                  f"rule chosen on the other folds; the best constant `{s['best_constant']}` plays it on "
                  f"{s['agreement']['constant']:.2f}; the choices of two folds agree on {s['agreement']['choice_consistency']:.2f} "
                  "of regions (the per-region best rule moves with the episodes). Paired 95% CIs (stratified bootstrap "
                  "over banks within families). Best fixed and family switch: chosen on the other folds, the row "
                  "paired with them per (region, held-out fold); best constant in sample: "
                  f"`{s['best_constant']}`, best on all episodes (the board's reading, biased upward).",
                  "", "| row | track score | agreement (- constant's) | plays | - best fixed | - family switch | "
                  "- best constant in sample: reward | IQM normalised | - dedupe: reward | IQM normalised |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for name, p in sorted(s["policies"].items()):
            plays = ", ".join(f"{k} {v:.2f}" for k, v in list(p["plays"].items())[:3])
            lines.append(f"| {name} | {p['score']:+.4f} | {p['agreement']:.2f} ({p['agreement_minus_constant']:+.2f}) | "
                         f"{plays} | {_fold_ci(p.get('vs_best_fixed'))} | {_fold_ci(p.get('vs_family_switch'))} | "
                         f"{_ci(p['vs_best_constant'], 'reward')} | "
                         f"{_ci(p['vs_best_constant'], 'iqm_normalised')} | {_ci(p['vs_dedupe'], 'reward')} | "
                         f"{_ci(p['vs_dedupe'], 'iqm_normalised')} |")
        for base, g in s["median_seeds"].items():
            lines.append(f"\nMedian seed of `{base}` ({len(g['seeds'])} seeds): `{g['median']}`.")
    return "\n".join(lines) + "\n"


def run(config: TrackLearnabilityConfig, results_dir: str | Path | None = None, out_dir: str | Path | None = None,
        archive: str | Path | None = None) -> dict[str, Any]:
    """:func:`study`; with ``out_dir``, write ``track-learnability-TRACK[-protocolN].json`` and ``.md`` there."""
    summary = study(config, results_dir, archive)
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        stem = f"track-learnability-{config.track}" + (f"-protocol{summary['protocol']}" if archive is not None else "")
        (out / f"{stem}.json").write_text(json.dumps(summary, indent=1))
        (out / f"{stem}.md").write_text(to_markdown(summary))
    return summary
