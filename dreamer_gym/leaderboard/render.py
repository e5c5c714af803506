"""Rendered boards: ``leaderboards/README.md`` (tables per track) and ``leaderboards/index.html`` (the same
tables, a score-vs-bank-size plot per track and a per-family view), from results files only.

Ranked rows are contenders and fixed baselines of the current protocol that are eligible for the track;
references (privileged), stale rows (an older protocol) and ineligible rows are listed apart, below the
ranking. Every score sits beside its bank size.
"""
from __future__ import annotations

import html
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dreamer_gym.leaderboard.aggregate import FLAT_POINTS, Normaliser, aggregate, best_fixed, region_scores, score_ci
from dreamer_gym.leaderboard.rows import ANCHORS, FIXED_RULES
from dreamer_gym.leaderboard.tracks import PROTOCOL_VERSION

SCIENCEWORLD_ID = "MemoryConsolidation-ScienceWorld-v0"
# tracks that hold out only the suite: they rank only policies trained on ScienceWorld alone (docs/validity.md)
SUITE_HELD_OUT = frozenset({"alfworld-gen", "miniwob"})
README_START, README_END = "<!-- boards:start -->", "<!-- boards:end -->"


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

    @property
    def ranked(self) -> bool:
        greedy = self.llm is None or self.llm.get("decoding") == "greedy"
        return self.kind != "reference" and not self.stale and self.eligible and greedy

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
        return "; ".join(notes)


@dataclass
class VerifiedRun:
    """A verified record: the consolidator run by the board on fresh banks (seeds drawn at verification)."""

    name: str
    score: float
    tokens: float
    seeds: list[int]
    pool_hash: str
    agrees: bool | None  # its score inside the re-scored row's CI; None without a re-scored row


@dataclass
class Board:
    track: str
    rows: list[Row]
    verified: list[VerifiedRun]
    families: tuple[str, ...]
    flagged: tuple[str, ...]
    baseline: str | None
    normalised: bool


def load_results(results_dir: Path) -> dict[str, list[dict[str, Any]]]:
    """Track -> its results files' contents (sorted by file name, so renders are stable)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(results_dir.glob("*/*.json")):
        out.setdefault(path.parent.name, []).append(json.loads(path.read_text()))
    return out


def build_board(track: str, all_results: Sequence[dict[str, Any]]) -> Board:
    """One track's rows (re-scored records, ranked and listed apart) and its verified runs."""
    results = [r for r in all_results if r["tier"] == "re-scored"]
    current = [r for r in results if r["protocol_version"] == PROTOCOL_VERSION]
    # the normalising rows and the fixed baselines are built-in rows only: `builtin` is written by validate when
    # the board re-ran the package's own rule and it reproduced the banks (rows.py), never by a submitter
    builtin = {r["builtin"]: r for r in current if r.get("builtin")}
    normaliser = (Normaliser.from_results(builtin["empty"], builtin["oracle"])
                  if all(a in builtin for a in ANCHORS) else None)
    matrices: dict[str, np.ndarray] = {}
    if normaliser is not None:
        for r in current:
            matrices[r["consolidator"]["name"]] = normaliser.matrix(r)[0]
    fixed = [r["consolidator"]["name"] for r in current if r.get("builtin") in FIXED_RULES]
    baseline = best_fixed(matrices, fixed)
    rows = []
    for r in results:
        name = r["consolidator"]["name"]
        scores = list(region_scores(r).values())
        trained = set(r["consolidator"]["trained_on"])
        eligible = track not in SUITE_HELD_OUT or trained <= {SCIENCEWORLD_ID}
        row = Row(name, r["consolidator"]["kind"], r["tier"], r["protocol_version"] != PROTOCOL_VERSION, eligible,
                  r["consolidator"].get("llm"), float(r["summary"]["score"]), float(np.mean(scores)),
                  float(r["summary"]["tokens_after"]), score_ci(r))
        row.grounding = (r.get("grounding") or {}).get("share")
        row.reader_similarity = (r.get("reader_similarity") or {}).get("mean")
        if normaliser is not None and name in matrices and not row.stale:
            base = matrices.get(baseline) if baseline is not None and name != baseline else None
            row.aggregates = aggregate(matrices[name], base)
            row.per_family = normaliser.per_family(r)
        rows.append(row)
    rows.sort(key=lambda w: (not w.ranked, -(w.aggregates.get("iqm") if w.aggregates.get("iqm") is not None
                                           else w.score), w.name))
    verified = []
    for r in all_results:
        if r["tier"] != "verified" or r["protocol_version"] != PROTOCOL_VERSION:
            continue
        name = r["consolidator"]["name"]
        row = next((w for w in rows if w.name == name and not w.stale), None)
        score = float(r["summary"]["score"])
        agrees = None if row is None or row.score_ci is None else bool(row.score_ci[0] <= score <= row.score_ci[1])
        run = VerifiedRun(name, score, float(r["summary"]["tokens_after"]), list(r["verification"]["bank_seeds"]),
                          r["verification"]["pool_hash"], agrees)
        verified.append(run)
        if row is not None and agrees:
            row.verified = {"seeds": run.seeds, "score": score}
    families = tuple(sorted({f for r in rows for f in r.per_family}))
    return Board(track, rows, sorted(verified, key=lambda v: v.name), families,
                 normaliser.flagged if normaliser else (), baseline, normaliser is not None)


def _ci(value: float | None, ci: Sequence[float] | None, digits: int = 2, sign: str = "") -> str:
    if value is None:
        return "n/a"
    return f"{value:{sign}.{digits}f}" + (f" [{ci[0]:{sign}.{digits}f}, {ci[1]:{sign}.{digits}f}]" if ci is not None else "")


def table_rows(board: Board) -> tuple[list[str], list[list[str]]]:
    """The header and cells of a board's table (shared by the Markdown and the HTML)."""
    header = ["rank", "consolidator", "tier", "IQM (normalised)", "mean (normalised)",
              f"P(improvement) over {board.baseline or 'best fixed'}", "track score", "in-family score", "bank tokens",
              "grounding", "reader similarity to a reference", "note"]
    cells = []
    rank = 0
    for row in board.rows:
        rank += row.ranked
        a = row.aggregates
        tier = "re-scored + verified" if row.verified else row.tier
        cells.append([str(rank) if row.ranked else "-", row.name, tier, _ci(a.get("iqm"), a.get("iqm_ci")),
                      _ci(a.get("mean"), a.get("mean_ci")), _ci(a.get("p_improvement"), a.get("p_improvement_ci")),
                      _ci(row.score, row.score_ci, 4, "+"), f"{row.in_family:.1f}", f"{row.tokens:.0f}",
                      _ci(row.grounding, None), _ci(row.reader_similarity, None), row.note])
    return header, cells


def verified_rows(board: Board) -> tuple[list[str], list[list[str]]]:
    header = ["consolidator", "track score on fresh banks", "bank tokens", "bank seeds (drawn at verification)",
              "pool hash", "inside the re-scored row's CI"]
    cells = [[v.name, f"{v.score:+.4f}", f"{v.tokens:.0f}", " ".join(map(str, v.seeds)), v.pool_hash,
              "n/a" if v.agrees is None else ("yes" if v.agrees else "NO")] for v in board.verified]
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
    by_track = {b.track: {r.name: r for r in b.rows if not r.stale} for b in boards}
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


def markdown(boards: Sequence[Board]) -> str:
    def md(header: list[str], cells: list[list[str]]) -> str:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(c.replace("|", "/") for c in row) + " |" for row in cells]
        return "\n".join(lines)

    parts = [README_START, "", "*Rendered by `dreamer-gym leaderboard render` from `leaderboards/results/`; do not "
             "edit by hand. The HTML page with plots: [`index.html`](index.html).*", ""]
    for board in boards:
        parts += [f"### Track `{board.track}`", ""]
        if not board.normalised:
            parts += ["(no `empty` and `oracle` rows on this track yet: scores are not normalised)", ""]
        parts += [md(*table_rows(board)), ""]
        if board.verified:
            parts += ["Verified runs (the board ran the consolidator itself on banks acquired from seeds drawn at "
                      "verification):", "", md(*verified_rows(board)), ""]
        if board.families:
            parts += ["Per family (normalised: empty 0, oracle 1"
                      + (f"; flagged: oracle within {FLAT_POINTS:g} points of empty, left out of the aggregates"
                         if board.flagged else "") + "):", "", md(*family_rows(board)), ""]
    transfer = transfer_rows(boards)
    if transfer is not None:
        parts += ["### Track `transfer` (train on ScienceWorld, test unchanged on the held-out suites)", "",
                  md(*transfer), ""]
    parts.append(README_END)
    return "\n".join(parts)


def plot_svg(board: Board) -> str:
    """Score (in-family, 0-100) against bank tokens, one labelled point per row; an SVG string."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = board.track  # stable ids: the same results give the same page
    plt.rcParams["svg.fonttype"] = "none"  # text stays text: searchable and small
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for row in board.rows:
        marker = "o" if row.ranked else "x"
        ax.scatter(row.tokens, row.in_family, marker=marker, color="tab:blue" if row.ranked else "tab:gray")
        ax.annotate(row.name, (row.tokens, row.in_family), fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel("bank tokens after consolidation (region mean)")
    ax.set_ylabel("in-family score after (0-100)")
    ax.set_title(f"track {board.track}: score vs bank size (o ranked, x listed apart)")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None})
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]


def html_page(boards: Sequence[Board]) -> str:
    def table(header: list[str], cells: list[list[str]], css: str) -> str:
        head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in cells)
        return f'<table class="{css}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'

    sections = []
    for board in boards:
        fam = (table(*family_rows(board), "per-family") if board.families
               else "<p>No per-family view: this track has no empty and oracle rows yet.</p>")
        sections.append(
            f'<section class="board" id="track-{html.escape(board.track)}"><h2>Track {html.escape(board.track)}</h2>'
            f'{table(*table_rows(board), "ranking")}'
            + (f'<h3>Verified runs</h3>{table(*verified_rows(board), "verified")}' if board.verified else "") +
            f'<div class="plot">{plot_svg(board)}</div>'
            f'<h3>Per family (normalised: empty 0, oracle 1)</h3>{fam}</section>')
    transfer = transfer_rows(boards)
    if transfer is not None:
        sections.append(f'<section class="board" id="track-transfer"><h2>Track transfer</h2>'
                        f'{table(*transfer, "transfer")}</section>')
    style = ("body{font-family:sans-serif;margin:2em;max-width:80em}table{border-collapse:collapse;margin:1em 0}"
             "td,th{border:1px solid #ccc;padding:.3em .6em;font-size:.9em}th{background:#f3f3f3}")
    return (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>dreamer_gym leaderboards</title>"
            f"<style>{style}</style></head><body><h1>dreamer_gym leaderboards</h1>"
            "<p>Every row is a re-scored submission: the board replayed its committed banks and scored them on the "
            "track's TEST episodes (docs/leaderboard.md). Scores are beside bank sizes; references read privileged "
            "evidence and are not ranked.</p>" + "".join(sections) + "</body></html>\n")


def render(results_dir: Path, out_dir: Path) -> list[Path]:
    """Write ``out_dir/README.md`` (between its board markers) and ``out_dir/index.html``."""
    results = load_results(Path(results_dir))
    boards = [build_board(track, rs) for track, rs in sorted(results.items())]
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    readme = out_dir / "README.md"
    text = readme.read_text() if readme.exists() else "# Leaderboards\n\n"
    block = markdown(boards)
    if README_START in text and README_END in text:
        head, rest = text.split(README_START, 1)
        text = head + block + rest.split(README_END, 1)[1]
    else:
        text = text.rstrip() + "\n\n## Boards\n\n" + block + "\n"
    readme.write_text(text)
    page = out_dir / "index.html"
    page.write_text(html_page(boards))
    return [readme, page]
