"""Rendered boards: ``leaderboards/README.md`` (tables per track) and ``leaderboards/index.html`` (the same
tables, a plot per track and a per-family view), from results files only. The rows and table cells come from
``board.py``; this module only lays them out.
"""
from __future__ import annotations

import html
import io
from collections.abc import Sequence
from pathlib import Path

from dreamer_gym.leaderboard.aggregate import FLAT_POINTS
from dreamer_gym.leaderboard.board import (Board, build_board, family_rows, load_results, table_rows, transfer_rows,
                                           verified_rows)

__all__ = ["README_END", "README_START", "build_board", "html_page", "markdown", "plot_svg", "render"]

README_START, README_END = "<!-- boards:start -->", "<!-- boards:end -->"


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
