"""The board's data: one track's rows from its results files (re-scored and verified), their aggregates, and the
cells of its tables, shared by the Markdown and the HTML renderers (``render.py``).

Ranked rows are contenders and fixed baselines of the current protocol that are eligible for the track;
references (privileged), stale rows (an older protocol) and ineligible rows are listed apart, below the
ranking. Every score sits beside its bank size and the regions and distinct TEST episodes behind it. Rows that
committed the same banks are one row that lists its submitters, and each ranked row shows the ranks the paired
CIs of every pair allow it (``ranking.py``).
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from dreamer_gym.errors import ConfigError
from dreamer_gym.leaderboard.aggregate import Normaliser, aggregate_rows, best_fixed, region_scores, reward_matrix, score_ci
from dreamer_gym.leaderboard.ranking import Comparison, identical_groups, rank_label, rank_rows
from dreamer_gym.leaderboard.review import Review, ReviewStatus, load_reviews, needs_review
from dreamer_gym.leaderboard.rows import ANCHORS, FIXED_RULES, slug
from dreamer_gym.leaderboard.tracks import PROTOCOL_VERSION, load_track
from dreamer_gym.stats import Strata, draw_mdd, iqm, mean

SCIENCEWORLD_ID = "MemoryConsolidation-ScienceWorld-v0"
# tracks that hold out only the suite: they rank only policies trained on ScienceWorld alone (docs/validity.md)
SUITE_HELD_OUT = frozenset({"alfworld-gen", "miniwob"})


@dataclass
class Row:
    name: str
    kind: str
    tier: str
    stale: bool
    eligible: bool
    llm: dict[str, str] | None
    score: float
    in_family: float
    tokens: float
    score_ci: tuple[float, float] | None = None
    aggregates: dict[str, Any] = field(default_factory=dict)
    per_family: dict[str, float | None] = field(default_factory=dict)
    verified: dict[str, Any] | None = None  # the agreeing verified run of this consolidator, if any
    grounding: float | None = None  # share of its claims the cited trajectories hold (leaderboard/grounding.py)
    reader_similarity: float | None = None  # mean max reader-level Jaccard to a reference (leaderboard/similarity.py)
    submitters: list[str] = field(default_factory=list)  # every row name whose banks are these (itself first)
    regions: int = 0
    episodes: int = 0  # in-family episodes played over its regions (the normalised score's)
    distinct_episodes: int = 0  # distinct (family, variation) among them: regions replay the same TEST episodes
    protocol: int = PROTOCOL_VERSION  # the track protocol it ran (board.ran_on names the env id)
    training: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (submitter, what its training cost)
    matrix: np.ndarray | None = None  # the ranking measure's (banks x families) region values
    cells: Strata | None = None  # the same per episode (banks x TEST variations a family): what the bootstrap draws
    rank: str = "-"
    rank_interval: tuple[int, int] | None = None  # the ranks the paired CIs allow (ranked rows)
    review: ReviewStatus | None = None  # the needs-review verdict with any recorded review (leaderboard/review.py)

    @property
    def ranked(self) -> bool:
        greedy = self.llm is None or self.llm.get("decoding") == "greedy"
        reviewed = self.review is None or self.review.ranked
        return self.kind != "reference" and not self.stale and self.eligible and greedy and reviewed

    @property
    def note(self) -> str:
        notes = []
        if self.kind == "reference":
            notes.append("reference (privileged)")
        if self.stale:
            notes.append("stale protocol")
        if not self.eligible:
            notes.append("not trained on ScienceWorld alone")
        if self.llm is not None:
            notes.append(f"{self.llm['model']} on {self.llm['backend']}, {self.llm['decoding']}")
        if len(self.submitters) > 1:
            notes.append(f"same banks from {len(self.submitters)} submitters: " + ", ".join(self.submitters))
        if self.review is not None and self.review.state not in ("clear", "reference"):
            notes.append(review_note(self.review))
        return "; ".join(notes)


def review_note(status: ReviewStatus) -> str:
    """A row's review state in words: the state, the flagged regions (bank/family) and the reason."""
    where = ", ".join(f"{r['family']} bank {r['bank']}" for r in status.regions[:4])
    more = f" and {len(status.regions) - 4} more" if len(status.regions) > 4 else ""
    regions = f" ({len(status.regions)} regions: {where}{more})" if status.regions else ""
    return f"{status.state}{regions}: {status.reason}"


@dataclass
class VerifiedRun:
    """A verified record: the consolidator run by the board on fresh banks (seeds drawn at verification)."""

    name: str
    score: float
    tokens: float
    seeds: list[int]
    pool_hash: str
    agrees: bool | None  # not below the re-scored row's score by more than the draw's MDD; None without a row
    rescored: float | None = None  # the re-scored row's track score
    mdd: float | None = None  # the draw's MDD (track score units) for a verification of this many fresh banks
    review: ReviewStatus | None = None  # its own needs-review verdict, against the draw's oracle


@dataclass
class Board:
    track: str
    rows: list[Row]
    verified: list[VerifiedRun]
    families: tuple[str, ...]
    flagged: tuple[str, ...]
    baseline: str | None
    normalised: bool
    comparisons: list[Comparison] = field(default_factory=list)  # each ranked row against the ranked row above
    mdd_measure: str = "IQM (normalised)"  # what the comparisons' MDDs are of


def load_results(results_dir: Path) -> dict[str, list[dict[str, Any]]]:
    """Track -> its results files' contents (sorted by file name, so renders are stable)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(results_dir.glob("*/*.json")):
        out.setdefault(path.parent.name, []).append(json.loads(path.read_text()))
    return out


def board_reviews(results_dir: Path) -> dict[str, Review]:
    """The recorded reviews beside a results folder (``reviews/`` next to ``results/``; none where it is missing)."""
    folder = Path(results_dir).parent / "reviews"
    return load_reviews(folder) if folder.is_dir() else {}


def build_board(track: str, all_results: Sequence[dict[str, Any]],
                reviews: Mapping[str, Review] | None = None) -> Board:
    """One track's rows (re-scored records, ranked and listed apart; identical banks merged), their rank intervals
    and neighbouring comparisons, and the verified runs. ``reviews``: the recorded reviews (``review.load_reviews``
    of leaderboards/reviews/); a row that needs review is ranked only once one of them clears it, in either tier."""
    reviews = reviews or {}
    results = [r for r in all_results if r["tier"] == "re-scored"]
    current = [r for r in results if r["protocol_version"] == PROTOCOL_VERSION]
    # the normalising rows and the fixed baselines are built-in rows only: `builtin` is written by validate when
    # the board re-ran the package's own rule and it reproduced the banks (rows.py), never by a submitter
    builtin = {r["builtin"]: r for r in current if r.get("builtin")}
    normaliser = (Normaliser.from_results(builtin["empty"], builtin["oracle"])
                  if all(a in builtin for a in ANCHORS) else None)
    if normaliser is not None and not normaliser.families:
        normaliser = None  # every family flat: nothing to normalise by, the board ranks the track score
    cells: dict[str, Strata] = {}
    if normaliser is not None:
        for r in current:
            cells[r["consolidator"]["name"]] = normaliser.cells(r)
    fixed = [r["consolidator"]["name"] for r in current if r.get("builtin") in FIXED_RULES]
    baseline = best_fixed(cells, fixed)
    made = {id(r): _row(track, r, reviews) for r in results}
    base = cells.get(baseline) if baseline is not None else None
    aggregates, replicates = aggregate_rows({n: c for n, c in cells.items()}, base)
    rows, rewards = [], {}
    for group in identical_groups(results, key=lambda r: (made[id(r)].ranked, made[id(r)].stale)):
        r, row = group[0], made[id(group[0])]
        row.submitters = [g["consolidator"]["name"] for g in group]
        row.training = [(g["consolidator"]["name"], g["consolidator"]["training"]) for g in group
                        if g["consolidator"].get("training")]
        row.matrix = rewards[row.name] = reward_matrix(r)
        row.cells = Strata.from_matrix(row.matrix)
        if normaliser is not None and row.name in cells and not row.stale:
            row.aggregates = dict(aggregates[row.name])
            if row.name == baseline:  # over itself P(improvement) is 0.5 by definition: not shown
                row.aggregates = {k: v for k, v in row.aggregates.items() if not k.startswith("p_improvement")}
            row.per_family = normaliser.per_family(r)
            row.cells = cells[row.name]
            row.matrix = row.cells.matrix()
        rows.append(row)
    rows.sort(key=lambda w: (not w.ranked, -(w.aggregates.get("iqm") if w.aggregates.get("iqm") is not None
                                           else w.score), -w.score, w.name))
    ranked = [w for w in rows if w.ranked]
    ranking = rank_rows([w.name for w in ranked], {w.name: w.cells for w in ranked},
                        iqm if normaliser is not None else mean, replicates if normaliser is not None else None)
    for w, interval in zip(ranked, ranking.intervals):
        w.rank, w.rank_interval = rank_label(interval), interval
    verified = []
    for r in all_results:
        if r["tier"] != "verified" or r["protocol_version"] != PROTOCOL_VERSION:
            continue
        name = r["consolidator"]["name"]
        row = next((w for w in rows if name in w.submitters and not w.stale), None)
        score = float(r["summary"]["score"])
        seeds = list(r["verification"]["bank_seeds"])
        # one-sided: a fresh draw of banks scores lower or higher by chance; only a shortfall beyond what a draw of
        # this many banks can show (its MDD, from the row's own spread over banks) says the row does not reproduce
        threshold = draw_mdd(rewards[row.name], len(seeds)) if row is not None else None
        agrees = None if threshold is None or row is None else bool(score >= row.score - threshold)
        status = needs_review(r, reviews)
        run = VerifiedRun(name, score, float(r["summary"]["tokens_after"]), seeds, r["verification"]["pool_hash"],
                          agrees, None if row is None else row.score, threshold, status)
        verified.append(run)
        if row is not None and not status.ranked and status.state != "reference":
            row.review = status  # flagged on its fresh draw: the re-scored row waits for review too
        if row is not None and agrees and status.ranked:
            row.verified = {"seeds": run.seeds, "score": score}
    families = tuple(sorted({f for r in rows for f in r.per_family}))
    return Board(track, rows, sorted(verified, key=lambda v: v.name), families,
                 normaliser.flagged if normaliser else (), baseline, normaliser is not None, ranking.comparisons,
                 "IQM (normalised)" if normaliser is not None else "track score")


ARCHIVE_HEADER = ["protocol", "track", "env id", "consolidator", "kind", "regions", "track score [95% CI]",
                  "in-family score", "bank tokens"]


def archive_rows(archive_dir: Path) -> tuple[list[str], list[list[str]]]:
    """The rows of older protocols, kept as they were scored (``archive_dir/protocol-N/results/TRACK/*.json``, the
    track files beside them in ``.../tracks/``): listed, never ranked, never compared with the current boards (other
    regions, other episodes, another env id)."""
    cells = []
    for folder in sorted(Path(archive_dir).glob("protocol-*"), key=lambda p: p.name, reverse=True):
        for path in sorted(folder.glob("results/*/*.json")):
            r = json.loads(path.read_text())
            if r["tier"] != "re-scored":
                continue
            track_file = folder / "tracks" / f"{path.parent.name}.yaml"
            env_id = yaml.safe_load(track_file.read_text()).get("env_id", "") if track_file.exists() else ""
            scores = list(region_scores(r).values())
            cells.append([str(r["protocol_version"]), path.parent.name, env_id, r["consolidator"]["name"],
                          r["consolidator"]["kind"], str(len(r["records"])),
                          _ci(float(r["summary"]["score"]), score_ci(r), 4, "+"), f"{float(np.mean(scores)):.1f}",
                          f"{float(r['summary']['tokens_after']):.0f}"])
    return ARCHIVE_HEADER, cells


def _row(track: str, r: dict[str, Any], reviews: Mapping[str, Review]) -> Row:
    """A results file's row before aggregates: its scores, its CI and what stands behind it."""
    scores = list(region_scores(r).values())
    trained = set(r["consolidator"]["trained_on"])
    eligible = track not in SUITE_HELD_OUT or trained <= {SCIENCEWORLD_ID}
    row = Row(r["consolidator"]["name"], r["consolidator"]["kind"], r["tier"], r["protocol_version"] != PROTOCOL_VERSION,
              eligible, r["consolidator"].get("llm"), float(r["summary"]["score"]), float(np.mean(scores)),
              float(r["summary"]["tokens_after"]), score_ci(r))
    row.grounding = (r.get("grounding") or {}).get("share")
    row.reader_similarity = (r.get("reader_similarity") or {}).get("mean")
    own = [(e.get("family", rec["family"]), e.get("variation")) for rec in r["records"] for e in rec["episodes"]
           if e["in_family"]]
    row.regions, row.episodes, row.distinct_episodes = len(r["records"]), len(own), len(set(own))
    row.protocol = int(r["protocol_version"])
    row.review = needs_review(r, reviews)
    return row


def _ci(value: float | None, ci: Sequence[float] | None, digits: int = 2, sign: str = "", why: str = "") -> str:
    """``value [lo, hi]``; where there is no value, "n/a" and, given ``why``, the reason in brackets."""
    if value is None:
        return f"n/a ({why})" if why else "n/a"
    return f"{value:{sign}.{digits}f}" + (f" [{ci[0]:{sign}.{digits}f}, {ci[1]:{sign}.{digits}f}]" if ci is not None else "")


# regions replay the same few TEST episodes (every bank of a family plays them): the distinct ones are what a row's
# score generalises from, the plays how often they were played
N_HEADER = "N: regions, distinct TEST episodes (episodes played)"


def missing_why(board: Board, row: Row, column: str) -> str:
    """Why a cell of ``row`` holds no value: the page says it instead of a bare "n/a"."""
    if column == "p":
        if row.name == board.baseline:
            return "the baseline itself"
        return missing_why(board, row, "iqm") if not row.aggregates else "no best fixed baseline"
    if column in ("iqm", "mean"):
        if row.stale:
            return "an older protocol"
        return "no empty and oracle rows" if not board.normalised else "not in the normalised rows"
    return "it is the reference" if row.kind == "reference" else "no reference region reads anything"


def ranked_header(board: Board) -> str:
    """The header of the column a board ranks by (and plots): third in its table, beside its CI."""
    return "IQM (normalised)" if board.normalised else "track score"


def table_rows(board: Board) -> tuple[list[str], list[list[str]]]:
    """The header and cells of a board's table (shared by the Markdown and the HTML)."""
    # what a reader needs first (rank, name, the ranked measure with its CI, the bank size it was scored at, what
    # stands behind it, the per-family link and the protocol it ran) comes before the columns a narrow screen
    # scrolls to; the note stays last
    measure = ranked_header(board)
    p_header = f"P(improvement) over {board.baseline or 'best fixed'}"
    header = ["rank", "consolidator", measure, "bank tokens", *(["track score"] if board.normalised else []), N_HEADER,
              "per family", "ran on (protocol, env id)", "training: steps, commits, wall, hardware", "tier",
              *([] if board.normalised else ["IQM (normalised)"]), "mean (normalised)", p_header, "in-family score",
              "grounding", "reader similarity to a reference", "note"]
    cells = []
    for row in board.rows:
        a = row.aggregates
        cell = {"rank": row.rank, "consolidator": row.name,
                "IQM (normalised)": _ci(a.get("iqm"), a.get("iqm_ci"), why=missing_why(board, row, "iqm")),
                N_HEADER: f"{row.regions}, {row.distinct_episodes} ({row.episodes})",
                "per family": family_anchor(board.track, row.name) if row.per_family else "",
                "ran on (protocol, env id)": ran_on(board.track, row.protocol),
                "training: steps, commits, wall, hardware": training_cell(row),
                "tier": "re-scored + verified" if row.verified else row.tier,
                "mean (normalised)": _ci(a.get("mean"), a.get("mean_ci"), why=missing_why(board, row, "mean")),
                p_header: _ci(a.get("p_improvement"), a.get("p_improvement_ci"), why=missing_why(board, row, "p")),
                "track score": _ci(row.score, row.score_ci, 4, "+"), "in-family score": f"{row.in_family:.1f}",
                "bank tokens": f"{row.tokens:.0f}", "grounding": _ci(row.grounding, None, why="no claims to check"),
                "reader similarity to a reference": _ci(row.reader_similarity, None,
                                                        why=missing_why(board, row, "similarity")),
                "note": row.note}
        cells.append([cell[h] for h in header])
    return header, cells


def training_cell(row: Row) -> str:
    """What training each submitter of the row reports (``submit --training-run``); blank for a rule."""
    def one(t: dict[str, Any]) -> str:
        return f"{t['steps']} steps, {t['commits']} commits, {t['wall_s'] / 60:.0f} min, {t['hardware']}"

    if len(row.training) == 1 and row.training[0][0] == row.name:
        return one(row.training[0][1])
    return "; ".join(f"{name}: {one(t)}" for name, t in row.training)


def ran_on(track: str, protocol: int) -> str:
    """The protocol a row ran and, for the current protocol, the env id its track measures (an older protocol's
    id is in that protocol's track file, which the board no longer loads)."""
    if protocol != PROTOCOL_VERSION:
        return f"{protocol} (superseded)"
    try:
        return f"{protocol} ({load_track(track).env_id})"
    except ConfigError:  # a results folder of a track this package does not ship
        return str(protocol)


def family_anchor(track: str, name: str) -> str:
    """The link to a row's line in the per-family table (the page gives that line this id)."""
    return f"#family-{track}-{slug(name)}"


def comparison_rows(board: Board) -> tuple[list[str], list[list[str]]]:
    """The paired comparison of neighbouring ranked rows: the difference of the ranking measure with its 95% CI
    (banks and TEST variations resampled within families, the same draws for both rows), the pair's MDD at 80%
    power and whether the CI separates the two."""
    header = ["row", "row above", f"difference in {board.mdd_measure} [95% CI]", "MDD (80% power)", "separated"]
    why = "not the same complete regions"  # a Comparison has no paired difference without them
    apart = f"n/a ({why})"
    cells = [[c.name, c.above, _ci(c.difference, c.ci, 3, "+", why=why), apart if c.mdd is None else
              f"{c.mdd:.3f}", apart if c.separated is None else ("yes" if c.separated else "no")]
             for c in board.comparisons]
    return header, cells


def verified_rows(board: Board) -> tuple[list[str], list[list[str]]]:
    header = ["consolidator", "track score on fresh banks", "re-scored track score", "MDD of the draw", "bank tokens",
              "bank seeds (drawn at verification)", "pool hash", "agrees (not below the re-scored score by more than the MDD)",
              "review (against the draw's oracle)"]
    alone = "n/a (no re-scored row)"
    cells = [[v.name, f"{v.score:+.4f}", alone if v.rescored is None else f"{v.rescored:+.4f}",
              alone if v.mdd is None else f"{v.mdd:.4f}", f"{v.tokens:.0f}", " ".join(map(str, v.seeds)), v.pool_hash,
              alone if v.agrees is None else ("yes" if v.agrees else "NO"),
              "unjudged" if v.review is None else (v.review.state if v.review.state in ("clear", "reference")
                                                   else review_note(v.review))] for v in board.verified]
    return header, cells


def family_rows(board: Board) -> tuple[list[str], list[list[str]]]:
    header = ["consolidator", *[f + (" (flagged)" if f in board.flagged else "") for f in board.families]]
    cells = []
    for row in board.rows:
        if row.per_family:
            cells.append([row.name, *("flat" if row.per_family.get(f) is None else f"{row.per_family[f]:.2f}"
                                      for f in board.families)])
    return header, cells


def transfer_rows(boards: Sequence[Board]) -> tuple[list[str], list[list[str]]] | None:
    """The transfer track: per consolidator, the mean of its held-out member tracks' scores (the same policy,
    unchanged, on each); a member without its row is named, and the mean then covers fewer tracks."""
    from dreamer_gym.leaderboard.tracks import load_track

    transfer = load_track("transfer")
    held_out = [name for role, name in transfer.members if role == "held out"]  # type: ignore[union-attr]
    by_track = {b.track: {n: r for r in b.rows if not r.stale for n in r.submitters} for b in boards}
    present = [t for t in held_out if t in by_track]
    if not present:
        return None
    names = sorted({n for t in present for n in by_track[t]})
    header = ["consolidator", "transfer score (mean of held-out tracks)", *[f"{t} score" for t in held_out],
              "bank tokens (mean)", "note"]
    cells = []
    for name in names:
        rows = [by_track[t].get(name) for t in present]
        got = [r for r in rows if r is not None]
        missing = [t for t in held_out if t not in by_track or name not in by_track[t]]
        cells.append([name, f"{np.mean([r.score for r in got]):+.4f}",
                      *[f"{by_track[t][name].score:+.4f}" if t in by_track and name in by_track[t] else "missing"
                        for t in held_out],
                      f"{np.mean([r.tokens for r in got]):.0f}",
                      "; ".join(filter(None, [got[0].note, f"incomplete: no {missing}" if missing else ""]))])
    cells.sort(key=lambda c: ("incomplete" in c[-1], "reference" in c[-1], -float(c[1])))
    return header, cells
