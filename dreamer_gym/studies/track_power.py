"""How small a difference between two board rows can a track detect, and how big must a track be to detect 0.05?

Measured on the committed results of a track (``leaderboards/results/<track>/*.json``), in the board's
normalised units (``(score - empty) / (oracle - empty)`` per family, :class:`~dreamer_gym.leaderboard.aggregate.
Normaliser`; flagged families are left out as the board leaves them out):

1. **The pair.** The ranked rows in the board's order (:func:`~dreamer_gym.leaderboard.board.build_board`), rows
   that scored every episode identically collapsed into one (the same bank under several names is one row, not a
   tie the track failed to break). Every row of a track plays the same TEST episodes in a region, so two rows
   pair by (family, bank, variation); the per-episode paired difference ``(after_a - after_b) / (oracle - empty)``
   is the unit. Of the neighbouring pairs, the one with the median *spread* (sd of its per-episode differences;
   of an even count, the larger middle one) is the track's yardstick.
2. **Its standard error** under a bootstrap that keeps families as strata and resamples banks and variations
   *crossed* (Owen's pigeonhole bootstrap): per family, banks with replacement and, independently, the family's
   variations with replacement; a resampled region scores the resampled variations it played. Crossed because
   every bank of a family draws its episodes from the same few TEST variations (identify-life-stages-1 has 5,
   every bank plays all 5), so a hard variation lowers every bank at once; a nested bootstrap (banks, then
   episodes within each region) treats those cells as independent and under-states the SE; it is reported beside.
3. **MDD** = ``(z_0.975 + z_0.8) * SE``: the smallest true mean difference a two-sided 5% test finds with 80% power.
4. **Sizing.** Per family, the variance components of the crossed model ``d = mu + bank + variation + residual``
   (Owen's U-statistics on pairs of cells: same bank, same variation, neither) give the SE of a design with ``B``
   banks, ``E`` episodes per region (at most the family's ``N`` TEST variations, each bank drawing ``E`` of them)
   and ``F`` families (an extra family is an average one)::

       var_f = s2_bank / B + s2_var * (1 / N + (1 - E/N) / (B E)) + s2_res / (B E);   var = mean_f(var_f) / F

   The ``s2_var / N`` term is the crossing: more banks never take it away, only more variations or families do.
   For ``E`` and ``F`` as today, the same crossed bootstrap at ``B`` resampled banks is reported beside it.
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dreamer_gym.errors import ConfigError
from dreamer_gym.studies.power import Z_80, Z_975

TARGET_MDD = 0.05
SECONDS_PER_REGION = 5.0  # validate today: 51-68 s for 12 regions on a quiet 2-core machine (issue 30)
Key = tuple[int, int]  # (bank, variation)
POPULATIONS = ("family", "track")  # what a ranking claims to hold for: the family's tasks, or the track's variations


@dataclass(frozen=True)
class TrackPowerConfig:
    """The track power computation's settings; ``dreamer-gym power --track`` sets them from its flags."""

    reps: int = field(default=10_000, metadata={"help": "bootstrap replicates"})
    seed: int = field(default=20261207, metadata={"help": "bootstrap seed"})
    target: float = field(default=TARGET_MDD, metadata={"help": "the MDD (normalised) a design must reach"})
    design_banks: tuple[int, ...] = field(default=(3, 5, 10, 15, 20, 30, 40, 60), metadata={
        "help": "banks per family in the sizing table"})
    design_episodes: tuple[int, ...] = field(default=(0, 12, 20), metadata={
        "help": "episodes per region in the sizing table (0: the track's own), capped by each family's TEST variations"})
    design_families: tuple[int, ...] = field(default=(0, 6, 8, 12), metadata={
        "help": "families in the sizing table (0: the track's own; more: each an average family)"})
    seconds_per_region: float = field(default=SECONDS_PER_REGION, metadata={"help": "validate cost per region"})

    def __post_init__(self) -> None:
        if self.reps < 100:
            raise ConfigError(f"Expected `reps` >= 100 bootstrap replicates, got {self.reps}: an SE from fewer is noise")
        if not 0 < self.target < 1:
            raise ConfigError(f"Expected `target` in (0, 1) normalised, got {self.target}")


def mdd(se: float) -> float:
    """Minimum detectable difference at two-sided alpha 0.05 and 80% power for an estimate with standard error se."""
    return (Z_975 + Z_80) * se


# --- the data: per-episode paired differences --------------------------------------------------------------------
def episode_scores(result: Mapping[str, Any]) -> dict[str, dict[Key, float]]:
    """family -> (bank, variation) -> in-family score after, of one results file."""
    out: dict[str, dict[Key, float]] = {}
    for r in result["records"]:
        for e in r["episodes"]:
            if e["in_family"]:
                out.setdefault(r["family"], {})[(int(r["bank_index"]), int(e["variation"]))] = float(e["after"])
    return out


def paired_cells(a: Mapping[str, Any], b: Mapping[str, Any], denominators: Mapping[str, float]) -> dict[str, np.ndarray]:
    """family -> (banks x variations) matrix of ``(a - b) / (oracle - empty)`` per episode both rows played (NaN
    where a bank did not play a variation), for the families in ``denominators``."""
    sa, sb = episode_scores(a), episode_scores(b)
    out = {}
    for f, den in sorted(denominators.items()):
        keys = sorted(set(sa.get(f, {})) & set(sb.get(f, {})))
        if not keys:
            continue
        banks, variations = sorted({k[0] for k in keys}), sorted({k[1] for k in keys})
        m = np.full((len(banks), len(variations)), np.nan)
        for bank, v in keys:
            m[banks.index(bank), variations.index(v)] = (sa[f][(bank, v)] - sb[f][(bank, v)]) / den
        out[f] = m
    return out


def track_mean(cells: Mapping[str, np.ndarray]) -> float:
    """The board's mean difference: families equal, banks equal within a family, episodes equal within a region."""
    return float(np.mean([np.nanmean(np.nanmean(m, axis=1)) for m in cells.values()]))


# --- bootstraps ---------------------------------------------------------------------------------------------------
def _family_crossed(m: np.ndarray, reps: int, rng: np.random.Generator, banks: int | None = None) -> np.ndarray:
    """``reps`` resampled family means: ``banks`` banks (default: as many as observed) and the family's variations,
    each with replacement and independently; a region's mean is over the resampled variations it played."""
    nb, nv = m.shape
    observed = ~np.isnan(m)
    d = np.where(observed, m, 0.0)
    cb = rng.multinomial(banks or nb, np.full(nb, 1 / nb), size=reps)  # (reps, nb) bank counts
    cv = rng.multinomial(nv, np.full(nv, 1 / nv), size=reps).astype(float)  # (reps, nv) variation counts
    num, den = cv @ d.T, cv @ observed.T.astype(float)  # (reps, nb)
    played = den > 0
    region = np.divide(num, den, out=np.zeros_like(num), where=played)
    weight = cb * played
    total = weight.sum(axis=1)
    # a replicate where no resampled bank played a resampled variation has no family mean: redraw it as the
    # observed mean (rare: only when every bank misses every drawn variation)
    fallback = float(np.nanmean(np.nanmean(m, axis=1)))
    return np.where(total > 0, (weight * region).sum(axis=1) / np.maximum(total, 1), fallback)


def _family_nested(m: np.ndarray, reps: int, rng: np.random.Generator) -> np.ndarray:
    """``reps`` resampled family means: banks with replacement, then each region's episodes with replacement
    (independently per region: the crossing ignored)."""
    nb = m.shape[0]
    region = np.empty((reps, nb))
    for i in range(nb):
        row = m[i][~np.isnan(m[i])]
        region[:, i] = rng.choice(row, size=(reps, row.size)).mean(axis=1)
    picks = rng.integers(nb, size=(reps, nb))
    return np.take_along_axis(region, picks, axis=1).mean(axis=1)


def _family_banks(m: np.ndarray, reps: int, rng: np.random.Generator) -> np.ndarray:
    """``reps`` resampled family means: banks with replacement, every region's episodes as played (the track
    reading: the claim is about the track's own TEST variations, as the board's CI resamples)."""
    region = np.nanmean(m, axis=1)
    picks = rng.integers(region.size, size=(reps, region.size))
    return region[picks].mean(axis=1)


def bootstrap_se(cells: Mapping[str, np.ndarray], reps: int = 10_000, seed: int = 0, scheme: str = "crossed",
                 banks: int | None = None) -> float:
    """SE of :func:`track_mean` under the ``crossed`` (default), ``nested`` or ``banks`` bootstrap, families as
    strata; with ``banks``, the crossed bootstrap resamples that many banks per family (a larger track of the same
    banks)."""
    if scheme not in ("crossed", "nested", "banks"):
        raise ConfigError(f"Expected `scheme` 'crossed', 'nested' or 'banks', got {scheme!r}")
    rng = np.random.default_rng(seed)
    draw = {"crossed": lambda m: _family_crossed(m, reps, rng, banks), "nested": lambda m: _family_nested(m, reps, rng),
            "banks": lambda m: _family_banks(m, reps, rng)}[scheme]
    per_family = [draw(m) for _, m in sorted(cells.items())]
    return float(np.std(np.mean(per_family, axis=0), ddof=1))


# --- variance components and the sizing model ----------------------------------------------------------------------
def _pair_sums(values: Sequence[np.ndarray]) -> tuple[float, float]:
    """Sum over groups of (sum over pairs in the group of (x_i - x_j)^2 / 2) and the number of such pairs."""
    s = p = 0.0
    for x in values:
        if x.size > 1:
            s += x.size * float(np.sum((x - x.mean()) ** 2)) / 2
            p += x.size * (x.size - 1) / 2
    return s, p


def variance_components(m: np.ndarray) -> dict[str, float]:
    """Bank, variation and residual variances of one family's (banks x variations) cells, by Owen's U-statistics:
    half the mean squared difference of two cells in the same bank is ``var + res``, in the same variation
    ``bank + res``, in neither ``bank + var + res``. Negative estimates are set to 0 (a component too small to see)."""
    observed = ~np.isnan(m)
    s_all, p_all = _pair_sums([m[observed]])
    s_bank, p_bank = _pair_sums([row[~np.isnan(row)] for row in m])
    s_var, p_var = _pair_sums([col[~np.isnan(col)] for col in m.T])
    p_neither = p_all - p_bank - p_var
    u_bank = s_bank / p_bank if p_bank else 0.0  # same bank: var + res
    u_var = s_var / p_var if p_var else 0.0  # same variation: bank + res
    u_neither = (s_all - s_bank - s_var) / p_neither if p_neither else u_bank
    if not p_var:  # no variation played by two banks: bank and variation effects cannot be told apart
        return {"bank": max(u_neither - u_bank, 0.0), "variation": 0.0, "residual": u_bank}
    return {"bank": max(u_neither - u_bank, 0.0), "variation": max(u_neither - u_var, 0.0),
            "residual": max(u_bank + u_var - u_neither, 0.0)}


def predicted_se(components: Mapping[str, Mapping[str, float]], caps: Mapping[str, int], banks: int, episodes: int,
                 families: int, population: str = "family") -> float:
    """SE of the track mean difference for ``banks`` banks per family, ``episodes`` per region (capped by each
    family's ``caps``: its TEST variations, each bank drawing ``episodes`` distinct ones) and ``families`` families,
    an extra family being an average one (see the module docstring's formula). ``population``: ``family`` (the
    claim is about the family's tasks, of which its TEST variations are a sample: the ``1 / N`` floor) or
    ``track`` (about the track's own TEST variations: a finite population, no floor once every bank plays all)."""
    if population not in POPULATIONS:
        raise ConfigError(f"Expected `population` in {POPULATIONS}, got {population!r}")
    floor = population == "family"
    var = []
    for f, c in components.items():
        n = caps[f]
        e = min(episodes, n)
        var.append(c["bank"] / banks + c["variation"] * (floor / n + (1 - e / n) / (banks * e))
                   + c["residual"] / (banks * e))
    return math.sqrt(float(np.mean(var)) / families)


# --- the track -----------------------------------------------------------------------------------------------------
@dataclass
class TrackData:
    """What the computation needs of one track: its ranked rows in the board's order, the normaliser's
    denominators, the TEST variations per family and the track's design."""

    track: str
    rows: list[tuple[str, dict[str, Any]]]  # (name(s), results file), board order, identical rows collapsed
    denominators: dict[str, float]
    caps: dict[str, int]
    banks: int
    episodes: int  # the track's in-family episodes per region (its `eval_in_family`)
    flagged: tuple[str, ...]


def _same_scores(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return episode_scores(a) == episode_scores(b)


def load_track_data(track_name: str, results_dir: Path) -> TrackData:
    """Ranked rows (board order, identical rows collapsed), normaliser and TEST-variation caps of a track."""
    from dreamer_gym.contract.ids import ENV_IDS
    from dreamer_gym.leaderboard.aggregate import Normaliser
    from dreamer_gym.leaderboard.board import build_board, load_results
    from dreamer_gym.leaderboard.rows import ANCHORS
    from dreamer_gym.leaderboard.tracks import PROTOCOL_VERSION, Track, load_track
    from dreamer_gym.pool import load_pool

    track = load_track(track_name)
    if not isinstance(track, Track):
        raise ConfigError(f"`--track`: {track_name!r} is a transfer track (a list of member tracks); name a member")
    results = load_results(Path(results_dir)).get(track_name, [])
    current = [r for r in results if r["tier"] == "re-scored" and r["protocol_version"] == PROTOCOL_VERSION]
    builtin = {r["builtin"]: r for r in current if r.get("builtin")}
    missing = [a for a in ANCHORS if a not in builtin]
    if missing:
        raise ConfigError(f"track {track_name!r}: no built-in {missing} row of protocol {PROTOCOL_VERSION} in "
                          f"{results_dir}/{track_name}/: the normalisation needs both; re-score them with "
                          "`dreamer-gym leaderboard validate`")
    norm = Normaliser.from_results(builtin["empty"], builtin["oracle"])
    by_name = {r["consolidator"]["name"]: r for r in current}
    rows: list[tuple[str, dict[str, Any]]] = []
    for row in build_board(track_name, results).rows:
        if not row.ranked or row.name not in by_name:
            continue
        r = by_name[row.name]
        if rows and _same_scores(rows[-1][1], r):
            rows[-1] = (f"{rows[-1][0]} = {row.name}", rows[-1][1])
        else:
            rows.append((row.name, r))
    pool = load_pool(track.pool or ENV_IDS[track.env_id].pool)
    caps = {f: len(pool.variations(f, track.split)) for f in norm.families}
    return TrackData(track_name, rows, {f: norm.oracle[f] - norm.empty[f] for f in norm.families}, caps,
                     len(track.banks), int(track.eval_in_family), norm.flagged)


def _pair_record(upper: str, lower: str, cells: Mapping[str, np.ndarray], config: TrackPowerConfig) -> dict[str, Any]:
    diffs = np.concatenate([m[~np.isnan(m)] for m in cells.values()])
    crossed = bootstrap_se(cells, config.reps, config.seed)
    nested = bootstrap_se(cells, config.reps, config.seed, scheme="nested")
    by_banks = bootstrap_se(cells, config.reps, config.seed, scheme="banks")
    return {"upper": upper, "lower": lower, "mean_diff": track_mean(cells), "spread": float(np.std(diffs, ddof=1)),
            "episodes": int(diffs.size), "se_crossed": crossed, "se_nested": nested, "mdd": mdd(crossed),
            "mdd_nested": mdd(nested), "se_banks": by_banks, "mdd_banks": mdd(by_banks)}


def _median_pair(pairs: Sequence[dict[str, Any]]) -> int:
    """Index of the pair with the median spread; of an even count, the larger of the two middle ones."""
    order = sorted(range(len(pairs)), key=lambda i: pairs[i]["spread"])
    return order[len(order) // 2]


def _designs(data: TrackData, config: TrackPowerConfig) -> list[tuple[int, int, int]]:
    families = sorted({f or len(data.denominators) for f in config.design_families})
    episodes = sorted({min(e or data.episodes, max(data.caps.values())) for e in config.design_episodes})
    return [(b, e, f) for f in families for e in episodes for b in sorted(set(config.design_banks))]


def sizing(data: TrackData, cells: Mapping[str, np.ndarray], config: TrackPowerConfig) -> dict[str, Any]:
    """The sizing table of the yardstick pair: per design (B, E, F) its regions, episodes, predicted SE and MDD,
    validate cost; and the smallest design (fewest regions, then episodes) whose MDD meets the target."""
    components = {f: variance_components(m) for f, m in cells.items()}
    f0, e0 = len(cells), data.episodes
    table = []
    for b, e, f in _designs(data, config):
        se = predicted_se(components, data.caps, b, e, f)
        per_family = float(np.mean([min(e, n) for n in data.caps.values()]))
        row = {"banks": b, "episodes_per_region": e, "families": f, "regions": b * f,
               "episodes": int(round(b * f * per_family)), "se": se, "mdd": mdd(se),
               "mdd_track": mdd(predicted_se(components, data.caps, b, e, f, "track")),
               "validate_s": b * f * config.seconds_per_region,
               "validate_s_by_episodes": b * f * per_family * config.seconds_per_region / e0}
        if e == e0 and f == f0:  # the crossed bootstrap at B resampled banks, as a check on the components
            row["mdd_bootstrap"] = mdd(bootstrap_se(cells, config.reps, config.seed, banks=b))
        table.append(row)
    same = [r for r in table if r["families"] == f0]
    return {"components": components, "caps": {f: data.caps[f] for f in cells}, "table": table, "target": config.target,
            "recommended": {key: _smallest(table, key, config.target) for key in ("mdd", "mdd_track")},
            "recommended_same_families": {key: _smallest(same, key, config.target) for key in ("mdd", "mdd_track")}}


def _smallest(table: Sequence[dict[str, Any]], key: str, target: float) -> dict[str, Any] | None:
    """The design with the fewest regions (then episodes) whose ``key`` MDD meets ``target``; None if none does."""
    meeting = [r for r in table if r[key] <= target]
    return min(meeting, key=lambda r: (r["regions"], r["episodes"])) if meeting else None


def track_mdd(track_name: str, results_dir: str | Path | None = None, config: TrackPowerConfig | None = None,
              progress: bool = False) -> dict[str, Any]:
    """The track's MDD at 80% power on its median neighbouring pair of ranked rows, every neighbouring pair's,
    and the sizing table: the record a track file cites."""
    from tqdm.auto import tqdm

    from dreamer_gym.leaderboard.board_commands import RESULTS_DIR

    config = config or TrackPowerConfig()
    data = load_track_data(track_name, Path(results_dir) if results_dir is not None else RESULTS_DIR)
    if len(data.rows) < 2:
        raise ConfigError(f"track {track_name!r}: {len(data.rows)} distinct ranked row(s) in the results; a paired "
                          "difference needs two: re-score the fixed baselines first")
    pairs, all_cells = [], []
    steps = tqdm(list(zip(data.rows, data.rows[1:])), desc=f"power {track_name}", disable=not progress)
    for (upper, a), (lower, b) in steps:
        cells = paired_cells(a, b, data.denominators)
        pairs.append(_pair_record(upper, lower, cells, config))
        all_cells.append(cells)
    i = _median_pair(pairs)
    sized = sizing(data, all_cells[i], config)
    chosen = sized["recommended_same_families"]["mdd_track"]
    if chosen is not None:  # how every neighbouring pair fares at the yardstick's design (its own components)
        for pair, cells in zip(pairs, all_cells):
            components = {f: variance_components(m) for f, m in cells.items()}
            pair["mdd_track_at_recommended"] = mdd(predicted_se(components, data.caps, chosen["banks"],
                                                                chosen["episodes_per_region"], len(cells), "track"))
    scores = episode_scores(data.rows[0][1])
    regions = sum(len({k[0] for k in scores[f]}) for f in data.denominators)
    episodes = sum(len(scores[f]) for f in data.denominators)
    return {"track": track_name, "regions": regions, "episodes": episodes, "banks": data.banks,
            "families": sorted(data.denominators), "flagged": list(data.flagged), "caps": data.caps,
            "rows": [name for name, _ in data.rows], "pairs": pairs, "yardstick": pairs[i], "mdd": pairs[i]["mdd"],
            "sizing": sized, "config": asdict(config)}


# --- output --------------------------------------------------------------------------------------------------------
def to_markdown(record: Mapping[str, Any]) -> str:
    """The per-track line, the neighbouring pairs and the sizing table."""
    y, s = record["yardstick"], record["sizing"]
    lines = [f"Track `{record['track']}`: {record['regions']} regions, {record['episodes']} in-family episodes a row, "
             f"{len(record['families'])} families (TEST variations {record['caps']}); median neighbouring pair "
             f"{y['upper']} - {y['lower']}: spread {y['spread']:.3f}, SE {y['se_crossed']:.4f}, "
             f"**MDD at 80% power {y['mdd']:.3f}** normalised (family reading: banks and TEST variations resampled); "
             f"**{y['mdd_banks']:.3f}** in the track reading (banks resampled, the track's own episodes kept, as the "
             "board's CI).", "",
             "| neighbouring pair | mean diff | spread (sd per episode) | SE crossed | SE nested | MDD | MDD nested "
             "| MDD track (banks bootstrap) | MDD track at the recommended design |", "|---|---|---|---|---|---|---|---|---|"]
    for p in record["pairs"]:
        mark = " (median)" if p is y else ""
        later = f"{p['mdd_track_at_recommended']:.3f}" if "mdd_track_at_recommended" in p else "n/a"
        lines.append(f"| {p['upper']} - {p['lower']}{mark} | {p['mean_diff']:+.3f} | {p['spread']:.3f} | "
                     f"{p['se_crossed']:.4f} | {p['se_nested']:.4f} | {p['mdd']:.3f} | {p['mdd_nested']:.3f} | "
                     f"{p['mdd_banks']:.3f} | {later} |")
    comps = "; ".join(f"{f}: bank {c['bank']:.4f}, variation {c['variation']:.4f}, residual {c['residual']:.4f}"
                      for f, c in s["components"].items())
    lines += ["", f"Variance components of the median pair ({comps}).", "",
              "| banks | episodes/region | families | regions | episodes | MDD family (components) | "
              "MDD family (bootstrap) | MDD track (components) | validate (by regions / by episodes) |",
              "|---|---|---|---|---|---|---|---|---|"]
    for r in s["table"]:
        boot = f"{r['mdd_bootstrap']:.3f}" if "mdd_bootstrap" in r else ""
        lines.append(f"| {r['banks']} | {r['episodes_per_region']} | {r['families']} | {r['regions']} | {r['episodes']} "
                     f"| {r['mdd']:.3f} | {boot} | {r['mdd_track']:.3f} | {r['validate_s'] / 60:.0f} / "
                     f"{r['validate_s_by_episodes'] / 60:.0f} min |")
    lines.append("")
    for label, chosen in (("", s["recommended"]), (f" with the track's {len(record['families'])} families",
                                                    s["recommended_same_families"])):
        for key, view in (("mdd", "family"), ("mdd_track", "track")):
            lines.append(f"- Smallest design{label}, MDD {view} <= {s['target']}: " + _design(chosen[key], key))
    return "\n".join(lines) + "\n"


def _design(r: Mapping[str, Any] | None, key: str) -> str:
    if r is None:
        return "none in the table (more banks, episodes or families)."
    return (f"{r['banks']} banks x {r['families']} families x {r['episodes_per_region']} episodes per region "
            f"({r['regions']} regions, {r['episodes']} episodes; MDD {r[key]:.3f}; validate ~{r['validate_s'] / 60:.0f} "
            f"min by regions, ~{r['validate_s_by_episodes'] / 60:.0f} min by episodes).")


def run(tracks: Sequence[str], results_dir: str | Path | None = None, config: TrackPowerConfig | None = None,
        out: str | Path | None = None, progress: bool = True) -> dict[str, Any]:
    """:func:`track_mdd` for each track; with ``out`` write ``{"tracks": {name: record}, "markdown": ...}`` there."""
    records = {t: track_mdd(t, results_dir, config, progress) for t in tracks}
    if out is not None:
        path = Path(out)
        path.parent.mkdir(parents=True, exist_ok=True)
        text = "\n".join(to_markdown(r) for r in records.values())
        path.write_text(json.dumps({"tracks": records, "markdown": text}, indent=1, default=float))
    return records
