"""How small a difference between two board rows can a track detect, and how big must a track be to detect 0.05?

Measured on the committed results of a track (``leaderboards/results/<track>/*.json``), in the board's
normalised units (``(score - empty) / (oracle - empty)`` per family; flagged families are left out as the board
leaves them out), with the board's own statistics (:mod:`dreamer_gym.stats`):

1. **Every neighbouring pair** of ranked rows, as the board ranks them
   (:func:`~dreamer_gym.leaderboard.board.build_board`): the paired difference of the measure the board ranks by,
   the IQM, its 95% CI and its **MDD** = ``(z_0.975 + z_0.8) * SE``, the smallest true difference a two-sided 5%
   test finds with 80% power, where the SE is the paired bootstrap's (banks and TEST variations resampled
   independently within each family, Owen's pigeonhole bootstrap: every bank of a family replays the same few TEST
   variations, so a hard variation moves every bank at once). These are the board's own comparisons, not a copy.
   Beside them: the IQM's MDD with banks alone resampled (the claim limited to the track's own TEST variations),
   and the mean's, both ways.
2. **The yardstick** for sizing: of the pairs whose per-episode differences spread at all, the one with the median
   *spread* (sd of its per-episode paired differences; of an even count, the larger middle one).
3. **Sizing.** Per family, the variance components of the yardstick's per-episode difference under the crossed
   model ``d = mu + bank + variation + residual`` (Owen's U-statistics on pairs of cells: same bank, same
   variation, neither) give the SE of the *mean* difference for a design with ``B`` banks, ``E`` episodes per
   region (at most the family's ``N`` TEST variations, each bank drawing ``E`` of them) and ``F`` families (an
   extra family is an average one)::

       var_f = s2_bank / B + s2_var * (1 / N + (1 - E/N) / (B E)) + s2_res / (B E);   var = mean_f(var_f) / F

   The ``s2_var / N`` term is the crossing: more banks never take it away, only more variations or families do.
   The IQM has no such closed form; the crossed bootstrap at ``B`` resampled banks is reported beside it, for the
   mean and the IQM, at the track's ``E`` and ``F``.

:func:`docs_blocks` turns the records into the generated tables of docs/power.md and docs/leaderboard.md
(``<!-- generated:NAME -->`` ... ``<!-- /generated:NAME -->``); ``dreamer-gym power --track ... --write-docs``
writes them, and a test regenerates them from the committed rows and compares.
"""
from __future__ import annotations

import json
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from dreamer_gym.errors import ConfigError
from dreamer_gym.stats import Strata, iqm_difference, mdd, mean_difference, paired_se

__all__ = ["TrackPowerConfig", "docs_blocks", "load_track_data", "mdd", "predicted_se", "run", "track_mdd",
           "variance_components", "write_docs"]

TARGET_MDD = 0.05
SECONDS_PER_REGION = 5.0  # validate today: 51-68 s for 12 regions on a quiet 2-core machine (issue 30)
POPULATIONS = ("family", "track")  # what a ranking claims to hold for: the family's tasks, or the track's variations
ROOT = Path(__file__).resolve().parents[2]
DOCS = (ROOT / "docs" / "power.md", ROOT / "docs" / "leaderboard.md")  # the pages with generated power tables
DOC_TRACKS = ("scienceworld", "alfworld-gen", "miniwob")  # the shipped tracks the docs' tables cover


@dataclass(frozen=True)
class TrackPowerConfig:
    """The track power computation's settings; ``dreamer-gym power --track`` sets them from its flags."""

    reps: int = field(default=10_000, metadata={"help": "bootstrap replicates (of the figures the board does not draw)"})
    seed: int = field(default=20261207, metadata={"help": "bootstrap seed (of the figures the board does not draw)"})
    target: float = field(default=TARGET_MDD, metadata={"help": "the MDD (normalised) a design must reach"})
    design_banks: tuple[int, ...] = field(default=(3, 5, 10, 15, 20, 30, 40, 60), metadata={
        "help": "banks per family in the sizing table"})
    design_episodes: tuple[int, ...] = field(default=(0, 12, 20), metadata={
        "help": "episodes per region in the sizing table (0: the track's own), capped by each family's TEST variations"})
    design_families: tuple[int, ...] = field(default=(0, 6, 8, 12), metadata={
        "help": "families in the sizing table (0: the track's own; more: each an average family)"})
    seconds_per_region: float = field(default=SECONDS_PER_REGION, metadata={"help": "validate cost per region"})
    write_docs: bool = field(default=False, metadata={
        "help": "rewrite the generated power tables of docs/power.md and docs/leaderboard.md (default settings only)"})

    def __post_init__(self) -> None:
        if self.reps < 100:
            raise ConfigError(f"Expected `reps` >= 100 bootstrap replicates, got {self.reps}: an SE from fewer is noise")
        if not 0 < self.target < 1:
            raise ConfigError(f"Expected `target` in (0, 1) normalised, got {self.target}")
        if self.write_docs and replace(self, write_docs=False) != TrackPowerConfig():
            raise ConfigError("`write_docs` writes the docs' tables at the default settings (a test regenerates them "
                              "so): drop the other --reps/--seed/--target/--design-* flags, or drop --write-docs")


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
    """What the computation needs of one track: its board (ranked rows, their comparisons), the ranked rows'
    normalised cells, the TEST variations per family and the track's design."""

    track: str
    board: Any  # dreamer_gym.leaderboard.board.Board (imported lazily: studies sit above the leaderboard)
    cells: dict[str, Strata]  # ranked row name -> its normalised cells (banks x TEST variations a family)
    caps: dict[str, int]
    banks: int
    episodes: int  # the track's in-family episodes per region (its `eval_in_family`)
    mdd_design: float | None  # what the track file says it was sized for


def load_track_data(track_name: str, results_dir: Path) -> TrackData:
    """The board of a track's committed rows, its ranked rows' cells and the TEST-variation caps."""
    from dreamer_gym.contract.ids import ENV_IDS
    from dreamer_gym.leaderboard.board import board_reviews, build_board, load_results
    from dreamer_gym.leaderboard.rows import ANCHORS
    from dreamer_gym.leaderboard.tracks import PROTOCOL_VERSION, Track, load_track
    from dreamer_gym.pool import load_pool

    track = load_track(track_name)
    if not isinstance(track, Track):
        raise ConfigError(f"`--track`: {track_name!r} is a transfer track (a list of member tracks); name a member")
    results = load_results(Path(results_dir)).get(track_name, [])
    builtin = {r["builtin"] for r in results if r.get("builtin") and r["tier"] == "re-scored"
               and r["protocol_version"] == PROTOCOL_VERSION}
    missing = [a for a in ANCHORS if a not in builtin]
    if missing:
        raise ConfigError(f"track {track_name!r}: no built-in {missing} row of protocol {PROTOCOL_VERSION} in "
                          f"{results_dir}/{track_name}/: the normalisation needs both; re-score them with "
                          "`dreamer-gym leaderboard validate`")
    board = build_board(track_name, results, board_reviews(Path(results_dir)))
    cells = {row.name: row.cells for row in board.rows if row.ranked and row.cells is not None}
    pool = load_pool(track.pool or ENV_IDS[track.env_id].pool)
    families = [f for f in board.families if f not in board.flagged]
    caps = {f: len(pool.variations(f, track.split)) for f in families}
    return TrackData(track_name, board, cells, caps, len(track.banks), int(track.eval_in_family), track.mdd)


def _components(d: Strata) -> dict[str, np.ndarray]:
    """Family index -> the (banks x variations) per-episode values of a difference (NaN where not played)."""
    return {str(j): np.where(w > 0, v, np.nan) for j, (v, w) in enumerate(zip(d.values, d.weights))}


def _pair_record(c: Any, x: Strata, y: Strata, config: TrackPowerConfig) -> dict[str, Any]:
    """One neighbouring pair: the board's IQM comparison and MDD, and beside it the IQM's MDD with banks alone
    resampled, the mean's both ways and the spread of the per-episode differences."""
    d = x.minus(y)
    diffs = np.concatenate([v[w > 0] for v, w in zip(d.values, d.weights)])
    boot = {"reps": config.reps, "seed": config.seed}
    return {"row": c.name, "above": c.above, "iqm_diff": c.difference, "iqm_ci": list(c.ci), "mdd_iqm": c.mdd,
            "mdd_iqm_banks": mdd(paired_se(x.matrix(), y.matrix(), iqm_difference, **boot)),
            "mean_diff": float(np.mean(x.matrix()) - np.mean(y.matrix())),
            "mdd_mean": mdd(paired_se(x, y, mean_difference, **boot)),
            "mdd_mean_banks": mdd(paired_se(x.matrix(), y.matrix(), mean_difference, **boot)),
            "spread": float(np.std(diffs, ddof=1)) if diffs.size > 1 else 0.0, "episodes": int(diffs.size)}


def _median_pair(pairs: Sequence[dict[str, Any]]) -> int | None:
    """Index of the pair with the median spread among pairs that spread at all (two rows that scored every episode
    alike are not a tie the track failed to break); of an even count, the larger of the two middle ones."""
    order = sorted((i for i, p in enumerate(pairs) if p["spread"] > 0), key=lambda i: pairs[i]["spread"])
    return order[len(order) // 2] if order else None


def _designs(data: TrackData, config: TrackPowerConfig) -> list[tuple[int, int, int]]:
    families = sorted({f or len(data.caps) for f in config.design_families})
    episodes = sorted({min(e or data.episodes, max(data.caps.values())) for e in config.design_episodes})
    return [(b, e, f) for f in families for e in episodes for b in sorted(set(config.design_banks))]


def sizing(data: TrackData, x: Strata, y: Strata, config: TrackPowerConfig) -> dict[str, Any]:
    """The sizing table of the yardstick pair: per design (B, E, F) its regions, episodes, the mean's predicted MDD
    (both readings) and validate cost, and at the track's E and F the crossed bootstrap's MDD of the mean and of
    the IQM at B resampled banks; and the smallest design (fewest regions, then episodes) meeting the target."""
    cells = _components(x.minus(y))
    families = [f for f in data.board.families if f not in data.board.flagged]
    components = {f: variance_components(cells[str(j)]) for j, f in enumerate(families)}
    f0, e0 = len(families), data.episodes
    boot = {"reps": config.reps, "seed": config.seed}
    table = []
    for b, e, f in _designs(data, config):
        se = predicted_se(components, data.caps, b, e, f)
        per_family = float(np.mean([min(e, n) for n in data.caps.values()]))
        row = {"banks": b, "episodes_per_region": e, "families": f, "regions": b * f,
               "episodes": int(round(b * f * per_family)), "se": se, "mdd": mdd(se),
               "mdd_track": mdd(predicted_se(components, data.caps, b, e, f, "track")),
               "validate_s": b * f * config.seconds_per_region,
               "validate_s_by_episodes": b * f * per_family * config.seconds_per_region / e0}
        if e == e0 and f == f0:  # the crossed bootstrap at B resampled banks: the mean (a check) and the IQM
            row["mdd_bootstrap"] = mdd(paired_se(x, y, mean_difference, banks=b, **boot))
            row["mdd_iqm_bootstrap"] = mdd(paired_se(x, y, iqm_difference, banks=b, **boot))
        table.append(row)
    same = [r for r in table if r["families"] == f0]
    return {"components": components, "caps": dict(data.caps), "table": table, "target": config.target,
            "recommended": {key: _smallest(table, key, config.target) for key in ("mdd", "mdd_track")},
            "recommended_same_families": {key: _smallest(same, key, config.target) for key in ("mdd", "mdd_track")}}


def _smallest(table: Sequence[dict[str, Any]], key: str, target: float) -> dict[str, Any] | None:
    """The design with the fewest regions (then episodes) whose ``key`` MDD meets ``target``; None if none does."""
    meeting = [r for r in table if r[key] <= target]
    return min(meeting, key=lambda r: (r["regions"], r["episodes"])) if meeting else None


def track_mdd(track_name: str, results_dir: str | Path | None = None, config: TrackPowerConfig | None = None,
              progress: bool = False) -> dict[str, Any]:
    """The track's MDDs on every neighbouring pair of ranked rows (the board's IQM comparison first), what stands
    behind a row, and the sizing table of the median pair: the record a track file cites."""
    from tqdm.auto import tqdm

    from dreamer_gym.leaderboard.board_commands import RESULTS_DIR

    config = config or TrackPowerConfig()
    data = load_track_data(track_name, Path(results_dir) if results_dir is not None else RESULTS_DIR)
    comparisons = [c for c in data.board.comparisons if c.mdd is not None]
    if not comparisons:
        raise ConfigError(f"track {track_name!r}: fewer than two comparable ranked rows in the results; a paired "
                          "difference needs two: re-score the fixed baselines first")
    pairs = [_pair_record(c, data.cells[c.name], data.cells[c.above], config)
             for c in tqdm(comparisons, desc=f"power {track_name}", disable=not progress)]
    i = _median_pair(pairs)
    sized = (sizing(data, data.cells[pairs[i]["row"]], data.cells[pairs[i]["above"]], config)
             if i is not None else None)
    first = next(row for row in data.board.rows if row.ranked)
    mdds = [p["mdd_iqm"] for p in pairs if p["mdd_iqm"] > 0]
    return {"track": track_name, "regions": first.regions, "episodes": first.episodes,
            "distinct_episodes": first.distinct_episodes, "banks": data.banks,
            "families": [f for f in data.board.families if f not in data.board.flagged],
            "flagged": list(data.board.flagged), "caps": data.caps, "mdd_design": data.mdd_design,
            "rows": [row.name for row in data.board.rows if row.ranked], "pairs": pairs,
            "mdd_iqm_median": float(np.median(mdds)) if mdds else 0.0, "mdd_iqm_max": max(mdds, default=0.0),
            "yardstick": pairs[i] if i is not None else None, "sizing": sized, "config": asdict(config)}


# --- output --------------------------------------------------------------------------------------------------------
def summary_table(records: Sequence[Mapping[str, Any]], target: float = TARGET_MDD) -> str:
    """One line a track: what stands behind a row and what its neighbouring pairs can detect."""
    lines = ["| track | regions | distinct TEST episodes (played) a row | ranked rows | IQM MDD of neighbouring pairs: "
             f"median [min, max] | pairs above {target} | mean MDD on the median-spread pair: banks + variations / "
             "banks | sized for (mean) |", "|---|---|---|---|---|---|---|---|"]
    for r in records:
        mdds = [p["mdd_iqm"] for p in r["pairs"] if p["mdd_iqm"] > 0]
        y = r["yardstick"]
        pair = (f"{y['row']} - {y['above']}: {y['mdd_mean']:.3f} / {y['mdd_mean_banks']:.3f}" if y is not None
                else "n/a")
        lines.append(f"| `{r['track']}` | {r['regions']} | {r['distinct_episodes']} ({r['episodes']:,}) | "
                     f"{len(r['rows'])} | {r['mdd_iqm_median']:.3f} [{min(mdds, default=0.0):.3f}, "
                     f"{r['mdd_iqm_max']:.3f}] | {sum(m > target for m in mdds)} of {len(r['pairs'])} | {pair} | "
                     f"{'n/a' if r['mdd_design'] is None else format(r['mdd_design'], 'g')} |")
    return "\n".join(lines) + "\n"


def pairs_table(record: Mapping[str, Any]) -> str:
    """Every neighbouring pair: the board's IQM comparison and MDD, and the MDDs beside it."""
    lines = ["| row | row above | IQM difference [95% CI] | **MDD IQM** (banks + variations) | MDD IQM (banks) | "
             "MDD mean (banks + variations) | MDD mean (banks) | spread per episode |", "|---|---|---|---|---|---|---|---|"]
    y = record["yardstick"]
    for p in record["pairs"]:
        lo, hi = p["iqm_ci"]
        mark = " (median spread)" if p is y else ""
        lines.append(f"| {p['row']} | {p['above']}{mark} | {p['iqm_diff']:+.3f} [{lo:+.3f}, {hi:+.3f}] | "
                     f"**{p['mdd_iqm']:.3f}** | {p['mdd_iqm_banks']:.3f} | {p['mdd_mean']:.3f} | "
                     f"{p['mdd_mean_banks']:.3f} | {p['spread']:.3f} |")
    return "\n".join(lines) + "\n"


def sizing_table(record: Mapping[str, Any]) -> str:
    """The yardstick's variance components, the sizing table and the smallest designs meeting the target."""
    s = record["sizing"]
    if s is None:
        return "No pair of rows spreads: nothing to size.\n"
    comps = "; ".join(f"`{f}`: bank {c['bank']:.4f}, variation {c['variation']:.4f}, residual {c['residual']:.4f}"
                      for f, c in s["components"].items())
    lines = [f"Variance components of the median-spread pair ({comps}); TEST variations {s['caps']}.", "",
             "| banks | episodes/region | families | regions | episodes | MDD mean, family (components) | "
             "MDD mean, track (components) | MDD mean (bootstrap) | MDD IQM (bootstrap) | validate (by regions / by "
             "episodes) |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in s["table"]:
        boot = (f"{r['mdd_bootstrap']:.3f} | {r['mdd_iqm_bootstrap']:.3f}" if "mdd_bootstrap" in r else " | ")
        lines.append(f"| {r['banks']} | {r['episodes_per_region']} | {r['families']} | {r['regions']} | {r['episodes']} "
                     f"| {r['mdd']:.3f} | {r['mdd_track']:.3f} | {boot} | {r['validate_s'] / 60:.0f} / "
                     f"{r['validate_s_by_episodes'] / 60:.0f} min |")
    lines.append("")
    for label, chosen in (("", s["recommended"]), (f" with the track's {len(record['families'])} families",
                                                    s["recommended_same_families"])):
        for key, view in (("mdd", "family"), ("mdd_track", "track")):
            lines.append(f"- Smallest design{label}, mean's MDD ({view} reading) <= {s['target']}: "
                         + _design(chosen[key], key))
    return "\n".join(lines) + "\n"


def to_markdown(record: Mapping[str, Any]) -> str:
    """The per-track line, the neighbouring pairs and the sizing table."""
    mdds = [p["mdd_iqm"] for p in record["pairs"] if p["mdd_iqm"] > 0]
    head = (f"Track `{record['track']}`: {record['regions']} regions, {record['distinct_episodes']} distinct TEST "
            f"episodes a row (played {record['episodes']:,} times over the banks), {len(record['families'])} "
            f"families; **IQM MDD at 80% power** on its {len(record['pairs'])} neighbouring pairs: median "
            f"**{record['mdd_iqm_median']:.3f}**, largest {record['mdd_iqm_max']:.3f}, "
            f"{sum(m > TARGET_MDD for m in mdds)} above {TARGET_MDD} (banks and TEST variations resampled).")
    return "\n".join([head, "", pairs_table(record), sizing_table(record)])


def _design(r: Mapping[str, Any] | None, key: str) -> str:
    if r is None:
        return "none in the table (more banks, episodes or families)."
    return (f"{r['banks']} banks x {r['families']} families x {r['episodes_per_region']} episodes per region "
            f"({r['regions']} regions, {r['episodes']} episodes; MDD {r[key]:.3f}; validate ~{r['validate_s'] / 60:.0f} "
            f"min by regions, ~{r['validate_s_by_episodes'] / 60:.0f} min by episodes).")


GENERATED = re.compile(r"(<!-- generated:(?P<name>[a-z0-9-]+) -->\n)(?P<body>.*?)(<!-- /generated:(?P=name) -->)", re.S)


def docs_blocks(records: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """Block name -> its text: ``power-summary`` (every shipped track, in :data:`DOC_TRACKS` order), and per track
    ``power-pairs-TRACK`` and ``power-sizing-TRACK``."""
    ordered = [records[t] for t in DOC_TRACKS if t in records]
    blocks = {"power-summary": summary_table(ordered)}
    for r in ordered:
        blocks[f"power-pairs-{r['track']}"] = pairs_table(r)
        blocks[f"power-sizing-{r['track']}"] = sizing_table(r)
    return blocks


def fill_blocks(text: str, blocks: Mapping[str, str]) -> str:
    """``text`` with every generated block named in ``blocks`` replaced by its text (others left as they are)."""
    return GENERATED.sub(lambda m: m.group(1) + blocks.get(m["name"], m["body"]) + m.group(4), text)


def write_docs(records: Mapping[str, Mapping[str, Any]], paths: Sequence[Path] = DOCS) -> list[Path]:
    """Rewrite the generated power blocks of ``paths`` from ``records``; returns the files that changed."""
    blocks = docs_blocks(records)
    changed = []
    for path in paths:
        text = path.read_text()
        new = fill_blocks(text, blocks)
        if new != text:
            path.write_text(new)
            changed.append(path)
    return changed


def run(tracks: Sequence[str], results_dir: str | Path | None = None, config: TrackPowerConfig | None = None,
        out: str | Path | None = None, progress: bool = True) -> dict[str, Any]:
    """:func:`track_mdd` for each track; with ``out`` write ``{"tracks": {name: record}, "markdown": ...}`` there;
    with ``config.write_docs``, the docs' generated power blocks of these tracks (from the committed rows only)."""
    config = config or TrackPowerConfig()
    if config.write_docs and results_dir is not None:
        raise ConfigError("`write_docs` writes the docs' tables from the committed rows: drop --results")
    records = {t: track_mdd(t, results_dir, config, progress) for t in tracks}
    if out is not None:
        path = Path(out)
        path.parent.mkdir(parents=True, exist_ok=True)
        text = "\n".join(to_markdown(r) for r in records.values())
        path.write_text(json.dumps({"tracks": records, "markdown": text}, indent=1, default=float))
    if config.write_docs:
        write_docs(records)
    return records
