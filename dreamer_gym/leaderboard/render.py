"""Rendered boards: ``leaderboards/README.md`` (tables per track) and ``leaderboards/index.html`` (the same
tables, a plot per track and a per-family view), from results files only. The rows and table cells come from
``board.py``; this module only lays them out, for a reader who has 30 seconds:

* one line at the top of the page and of each board says what the brackets are, what "normalised" means, what a
  rank interval is, how many regions and *distinct* TEST episodes stand behind a row (regions replay the same
  few), and the smallest difference of the ranked measure its neighbouring pairs can detect (their MDD);
* the plot shows the measure the table ranks by (IQM of normalised scores; the track score on a board without
  ``empty`` and ``oracle`` rows) with its 95% CI as a whisker, one row per consolidator on the y axis, its name
  a tick label (labels cannot collide), ranked rows in rank order, rows listed apart greyed below a divider,
  and bank size in a second panel on the same rows;
* wide tables scroll inside their own box, and the plot scales to its container: the page never scrolls
  sideways, at desktop or phone width (``tests/leaderboard/test_page_layout.py`` checks both in Chromium).

A table cell that starts with ``#family-`` is a link to that row of the per-family table (whose rows carry
``id="family-{track}-{slug(name)}"``), on the page and, from the Markdown, into ``index.html``.
"""
from __future__ import annotations

import html
import io
import re
from collections.abc import Collection, Sequence
from pathlib import Path

import numpy as np

from dreamer_gym.errors import ConfigError
from dreamer_gym.leaderboard.aggregate import BOOTSTRAP_REPS, FLAT_POINTS
from dreamer_gym.leaderboard.board import (Board, Row, archive_rows, board_reviews, build_board, comparison_rows,
                                           family_anchor, family_rows, load_results, ranked_header, table_rows,
                                           transfer_rows, verified_rows)
from dreamer_gym.leaderboard import unranked
from dreamer_gym.leaderboard.tracks import is_ranked_track, load_track

__all__ = ["README_END", "README_START", "build_board", "html_page", "markdown", "plot_svg", "reading_line",
           "render"]

README_START, README_END = "<!-- boards:start -->", "<!-- boards:end -->"
FAMILY_LINK = "#family-"  # a table cell that is an anchor into the per-family table
LABEL_CHARS = 44
COMPARISONS = ("Neighbouring rows, paired", "each ranked row against the row above: the difference of the ranked "
               "measure and its 95% CI, the same bootstrap draws for both, and the smallest difference the pair "
               "can detect at 80% power (MDD); a row's rank interval comes from its CIs against every other row")

PAGE_LINE = (f"How to read a board: a number in brackets is its 95% confidence interval, a stratified bootstrap "
             f"({BOOTSTRAP_REPS:,} draws) that resamples banks and TEST variations independently within each "
             "family, the same draws for every row; \"normalised\" puts each family on one scale, the empty bank "
             "at 0 and the oracle at 1; a rank such as 2-5 is every rank the paired CIs against all other rows "
             "allow (docs/leaderboard.md, \"Reading the page\").")


def _column(header: Sequence[str], *starts: str) -> int | None:
    return next((i for i, h in enumerate(header) if h.lower().startswith(starts)), None)


def reading_line(board: Board) -> str:
    """One line, at the top of a board: its brackets, its scale, what stands behind a row and what it can detect."""
    sizes = {(row.regions, row.distinct_episodes, row.episodes) for row in board.rows}
    if len(sizes) == 1:
        regions, distinct, played = sizes.pop()
        behind = (f"behind every row: {regions} regions (bank x family) and {distinct} distinct TEST episodes, "
                  f"replayed over the banks ({played:,} episodes played)")
    else:
        behind = ("the regions (bank x family) and distinct TEST episodes behind each row (and how often they were "
                  "played) are in column N")
    if board.normalised:
        counted = len(board.families) - len(board.flagged)
        scale = (f"ranked by the IQM of normalised in-family scores (per family: empty 0, oracle 1; "
                 f"{counted} of {len(board.families)} families count"
                 + (f", the flagged ones have an oracle within {FLAT_POINTS:g} points of empty" if board.flagged
                    else "") + ")")
    else:
        scale = "not normalised (no `empty` and `oracle` rows yet): ranked and plotted by track score"
    return (f"[Brackets] are 95% CIs (stratified bootstrap: banks and TEST variations resampled within families); "
            f"{scale}; {behind}" + _power(board) + ".")


def _power(board: Board) -> str:
    """What the board can separate, measured on its own rows: its neighbouring pairs' MDD of the ranked measure
    (beside the figure the track file was sized for, a design figure for the mean)."""
    mdds = [c.mdd for c in board.comparisons if c.mdd is not None and c.mdd > 0]
    if not mdds:
        return ""
    try:
        stated = getattr(load_track(board.track), "mdd", None)
    except ConfigError:  # a results folder of a track this package does not ship
        stated = None
    design = f"; the track was sized for {stated:g} (the mean's MDD, a design figure)" if stated is not None else ""
    return (f"; its neighbouring pairs detect a difference in {board.mdd_measure} of {np.median(mdds):.3f} (median MDD "
            f"at 80% power; {min(mdds):.3f}-{max(mdds):.3f} over {len(mdds)} pairs, in the table below){design}")


def _short(name: str) -> str:
    return name if len(name) <= LABEL_CHARS else name[:LABEL_CHARS - 1] + "\u2026"


def _apart(row: Row) -> str:
    """Why a row is listed apart (a short plot label; the table's note says it in full)."""
    if row.kind == "reference":
        return "reference"
    if row.stale:
        return "stale"
    if not row.eligible:
        return "ineligible"
    return "sampled"


def plot_svg(board: Board) -> str:
    """The ranking as a dot-and-whisker chart (an SVG string): the measure the table ranks by with its 95% CI,
    one consolidator per y row (its name a tick label), and bank tokens in a second panel on the same rows.

    Why this layout: names as tick labels are spaced by the row height, so no two can meet however close the
    scores are (the old scatter's annotations piled up when rows tied); whiskers show which rows the board
    separates; the x axis is the ranked measure, so the plot and the table tell the same order."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    header, cells = table_rows(board)
    r, c = _column(header, "rank"), _column(header, "consolidator")
    ranks = {} if r is None or c is None else {cell[c]: cell[r] for cell in cells}
    rows = list(board.rows)
    ranked = sum(row.ranked for row in rows)
    labels = [(f"{ranks.get(row.name, '')} {_short(row.name)}".strip() if row.ranked
               else f"{_short(row.name)} ({_apart(row)})")
              + (f" +{len(row.submitters) - 1} same banks" if len(row.submitters) > 1 else "") for row in rows]
    if board.normalised:
        points = [(row.aggregates.get("iqm"), row.aggregates.get("iqm_ci")) for row in rows]
        measure = "IQM, normalised (95% CI)"
    else:
        points = [(row.score, row.score_ci) for row in rows]
        measure = "track score (95% CI)"
    style = {"svg.hashsalt": board.track,  # stable ids: the same results give the same page
             "svg.fonttype": "none",  # text stays text: searchable, small, measurable in the browser
             "font.size": 10}
    with matplotlib.rc_context(style):
        # the names' column grows with the longest name (~0.085 in a character at 10 pt), the panels keep their width
        fig, (ax, sizes) = plt.subplots(1, 2, sharey=True, figsize=(4.3 + 0.085 * max(map(len, labels)), 1.1 + 0.3 * len(rows)),
                                        width_ratios=(3, 1.25), layout="constrained")
        for y, (row, (value, ci)) in enumerate(zip(rows, points)):
            colour = "tab:blue" if row.ranked else "0.6"
            if value is not None:
                err = None if ci is None else [[value - ci[0]], [ci[1] - value]]
                ax.errorbar(value, y, xerr=err, fmt="o", color=colour, ms=4, capsize=2, lw=1.2)
            sizes.barh(y, row.tokens, height=0.6, color=colour)
        if board.normalised:
            for x in (0.0, 1.0):
                ax.axvline(x, color="0.75", lw=0.8, ls=":")
        for panel in (ax, sizes):
            if 0 < ranked < len(rows):
                panel.axhline(ranked - 0.5, color="0.4", lw=0.8, ls="--")
            panel.grid(axis="x", alpha=0.3)
            panel.xaxis.set_major_locator(MaxNLocator(nbins=5 if panel is ax else 2, steps=[1, 2, 2.5, 5, 10]))
        ax.set_yticks(range(len(rows)), labels)
        for tick, row in zip(ax.get_yticklabels(), rows):
            tick.set_color("black" if row.ranked else "0.45")
        ax.set_ylim(len(rows) - 0.5, -0.5)  # rank 1 on top
        ax.set_xlabel(measure)
        sizes.set_xlabel("bank tokens")
        sizes.tick_params(axis="y", left=False)
        fig.get_layout_engine().set(w_pad=8 / 72, h_pad=6 / 72)  # room for the browser's own font metrics
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None})
        plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]


def _md_cell(text: str) -> str:
    if text.startswith(FAMILY_LINK):
        return f"[per family](index.html{text})"
    return text.replace("|", "/")


ARCHIVE_TITLE = "Archive: rows of older protocols"
ARCHIVE_LINE = ("Superseded, listed as they were scored and never ranked: another protocol is another set of regions, "
                "episodes and env id, so these rows are not comparable with the boards above (leaderboards/archive/)")


def markdown(boards: Sequence[Board], archive: tuple[list[str], list[list[str]]] | None = None) -> str:
    def md(header: list[str], cells: list[list[str]]) -> str:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in cells]
        return "\n".join(lines)

    parts = [README_START, "", "*Rendered by `dreamer-gym leaderboard render` from `leaderboards/results/`; do not "
             "edit by hand. The HTML page with plots: [`index.html`](index.html).*", "", f"*{PAGE_LINE}*", ""]
    for board in boards:
        parts += [f"### Track `{board.track}`", "", f"*{reading_line(board)}*", ""]
        parts += [md(*table_rows(board)), ""]
        if board.comparisons:
            parts += [f"{COMPARISONS[0]} ({COMPARISONS[1]}):", "", md(*comparison_rows(board)), ""]
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
    if archive is not None and archive[1]:
        parts += [f"### {ARCHIVE_TITLE}", "", f"*{ARCHIVE_LINE}*", "", md(*archive), ""]
    parts.append(README_END)
    return "\n".join(parts)


def _html_cell(text: str, css: str = "") -> str:
    """One cell; ``css`` adds a class (``measure``: the column the board ranks by)."""
    if text.startswith(FAMILY_LINK):
        return f'<td><a href="{html.escape(text)}">per family</a></td>'
    if text.endswith("]") and " [" in text:  # a value and its CI read as one: never broken across lines
        css = f"{css} ci".strip()
    text = html.escape(text).replace(":", ":<wbr>")  # "rule:procedures-only" may wrap after its prefix
    return f'<td class="{css}">{text}</td>' if css else f"<td>{text}</td>"


def _html_line(text: str) -> str:
    """A reading line (Markdown-ish: `code`) as HTML."""
    parts = html.escape(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


def _table(header: list[str], cells: list[list[str]], css: str, ids: Sequence[str] | None = None,
           measure: str | None = None) -> str:
    """A table in a box that scrolls sideways on its own, so a wide table never widens the page. ``measure``: the
    header of the column the board ranks by; its header and cells carry the class ``measure`` (the CSS keeps it
    in view, the layout test finds it), and a ranked row (a rank other than "-") the class ``ranked``."""
    def css_of(h: str) -> str:
        return "measure" if h == measure else ""

    def tr(i: int, row: list[str]) -> str:
        ranked = ' class="ranked"' if measure and row[0] != "-" else ""
        attrs = (f' id="{html.escape(ids[i])}"' if ids else "") + ranked
        return f"<tr{attrs}>" + "".join(_html_cell(c, css_of(h)) for h, c in zip(header, row)) + "</tr>"

    head = "".join(f'<th class="{css_of(h)}">{html.escape(h)}</th>' if css_of(h) else f"<th>{html.escape(h)}</th>"
                   for h in header)
    body = "".join(tr(i, row) for i, row in enumerate(cells))
    return (f'<div class="scroll"><table class="{css}"><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>")


# Tables scroll inside their own box. The ranking keeps what a reader came for in view: at desktop width rank,
# name and the ranked measure with its CI stick to the box's left edge while the other columns scroll under them
# (fixed widths, so each sticky column knows where the one before it ends); on a phone the three fit the screen
# before any scrolling and only the name sticks (three sticky columns would leave no room to scroll). Borders
# are drawn per cell (border-collapse:separate): a collapsed border does not travel with a sticky cell.
STYLE = ("*{box-sizing:border-box}html,body{overflow-x:hidden}"
         "body{font-family:sans-serif;margin:0 auto;padding:1em;max-width:80em;line-height:1.4}"
         "p{overflow-wrap:anywhere}.how{background:#f6f8fa;border-left:3px solid #4a7ab5;padding:.4em .7em}"
         ".scroll{overflow-x:auto;max-width:100%;margin:1em 0}"
         "table{border-collapse:separate;border-spacing:0;width:max-content;border-top:1px solid #ccc;"
         "border-left:1px solid #ccc}"
         "td,th{border:solid #ccc;border-width:0 1px 1px 0;padding:.3em .6em;font-size:.9em;vertical-align:top;"
         "max-width:22em;background:#fff}th{background:#f3f3f3}td.ci{white-space:nowrap}"
         ".ranking tr>:nth-child(2),.per-family tr>:first-child{overflow-wrap:anywhere}"
         ".ranking tr>:nth-child(-n+3){position:sticky;z-index:1}.ranking tr>:first-child{left:0;width:4.5em;"
         "min-width:4.5em;max-width:4.5em}.ranking tr>:nth-child(2){left:4.5em;width:15em;min-width:15em;"
         "max-width:15em}.ranking td{max-width:28em}.ranking tr>.measure{left:19.5em;border-right:2px solid #888}"
         ".per-family tr>:first-child{position:sticky;left:0;z-index:1}"
         "@media (max-width:40em){td,th{padding:.3em .4em}"
         ".ranking tr>:first-child,.ranking tr>.measure{position:static}.ranking tr>:first-child{width:auto;"
         "min-width:0}.ranking tr>:nth-child(2){left:0;width:9em;min-width:9em;max-width:9em}}"
         ".plot{overflow-x:auto}.plot svg{display:block;width:100%;height:auto}")


PLOT_MIN_SCALE = 0.75  # a plot shrinks with the page down to this share of its size (10 pt text stays 10 px)


def _plot_box(svg: str) -> str:
    """The plot in a box no wider than its natural size (text the same size in every plot, never blown up) that
    shrinks with the page (the SVG has a viewBox) down to PLOT_MIN_SCALE of it; on a narrower screen (a phone) the
    plot scrolls sideways in its box, like a table, rather than shrink its names below legible."""
    width = re.search(r'<svg[^>]*\swidth="([0-9.]+)pt"', svg)
    if width is None:
        return f'<div class="plot">{svg}</div>'
    px = float(width.group(1)) * 4 / 3
    return (f'<div class="plot" style="max-width:{px:.0f}px"><div style="min-width:{px * PLOT_MIN_SCALE:.0f}px">'
            f"{svg}</div></div>")


def html_page(boards: Sequence[Board], archive: tuple[list[str], list[list[str]]] | None = None) -> str:
    sections = []
    for board in boards:
        if board.families:
            header, cells = family_rows(board)
            fam = _table(header, cells, "per-family", [family_anchor(board.track, row[0])[1:] for row in cells])
        else:
            fam = "<p>No per-family view: this track has no empty and oracle rows yet.</p>"
        track = html.escape(board.track)
        parts = [f'<section class="board" id="track-{track}"><h2>Track {track}</h2>',
                 f'<p class="how">{_html_line(reading_line(board))}</p>', _plot_box(plot_svg(board)),
                 _table(*table_rows(board), "ranking", measure=ranked_header(board))]
        if board.comparisons:
            parts.append(f"<h3>{COMPARISONS[0]}</h3><p>{html.escape(COMPARISONS[1])}.</p>"
                         f"{_table(*comparison_rows(board), 'comparisons')}")
        if board.verified:
            parts.append(f'<h3>Verified runs</h3>{_table(*verified_rows(board), "verified")}')
        parts.append(f"<h3>Per family (normalised: empty 0, oracle 1)</h3>{fam}</section>")
        sections.append("".join(parts))
    transfer = transfer_rows(boards)
    if transfer is not None:
        sections.append(f'<section class="board" id="track-transfer"><h2>Track transfer</h2>'
                        f'{_table(*transfer, "transfer")}</section>')
    if archive is not None and archive[1]:
        sections.append(f'<section class="archive" id="archive"><h2>{html.escape(ARCHIVE_TITLE)}</h2>'
                        f'<p class="how">{html.escape(ARCHIVE_LINE)}.</p>{_table(*archive, "archive")}</section>')
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>dreamer_gym leaderboards</title><style>{STYLE}</style></head><body>"
            "<h1>dreamer_gym leaderboards</h1>"
            "<p>Every row is a re-scored submission: the board replayed its committed banks and scored them on the "
            "track's TEST episodes (docs/leaderboard.md). Scores are beside bank sizes; references read privileged "
            f"evidence and are not ranked.</p><p class=\"how\">{_html_line(PAGE_LINE)}</p>"
            + "".join(sections) + "</body></html>\n")


def _unranked_md(block: str, cells: list[list[str]]) -> str:
    """The boards' Markdown with the rows no board ranks (leaderboard/unranked.py) as a last section."""
    if not cells:
        return block
    table = "\n".join(["| " + " | ".join(unranked.HEADER) + " |", "|" + "---|" * len(unranked.HEADER)]
                      + ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in cells])
    return block.replace(README_END, f"### {unranked.TITLE}\n\n*{unranked.LINE}.*\n\n{table}\n\n{README_END}")


def _unranked_html(page: str, cells: list[list[str]]) -> str:
    """The page with the rows no board ranks as its last section."""
    if not cells:
        return page
    section = (f'<section class="unranked" id="unranked"><h2>{html.escape(unranked.TITLE)}</h2>'
               f'<p class="how">{html.escape(unranked.LINE)}.</p>{_table(unranked.HEADER, cells, "unranked")}</section>')
    return page.replace("</body>", section + "</body>")


def render(results_dir: Path, out_dir: Path, archive_dir: Path | None = None,
           ranked: Collection[str] | None = None) -> list[Path]:
    """Write ``out_dir/README.md`` (between its board markers) and ``out_dir/index.html``; ``archive_dir`` (default:
    ``archive/`` beside ``results_dir``, where it exists) holds the rows of older protocols, listed apart.
    ``ranked`` names the tracks that get a ranked board (default: the shipped tracks but the try-out,
    :func:`is_ranked_track`); a test's own small track is ranked by naming it, every other one is listed apart."""
    results = load_results(Path(results_dir))
    reviews = board_reviews(Path(results_dir))
    is_ranked = is_ranked_track if ranked is None else frozenset(ranked).__contains__
    boards = [build_board(track, rs, reviews) for track, rs in sorted(results.items()) if is_ranked(track)]
    # the try-out track's rows and those of track files: listed, never ranked
    apart = unranked.unranked_rows({t: rs for t, rs in results.items() if not is_ranked(t)})
    archive_dir = Path(results_dir).parent / "archive" if archive_dir is None else Path(archive_dir)
    archive = archive_rows(archive_dir) if archive_dir.is_dir() else None
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    readme = out_dir / "README.md"
    text = readme.read_text() if readme.exists() else "# Leaderboards\n\n"
    block = _unranked_md(markdown(boards, archive), apart)
    if README_START in text and README_END in text:
        head, rest = text.split(README_START, 1)
        text = head + block + rest.split(README_END, 1)[1]
    else:
        text = text.rstrip() + "\n\n## Boards\n\n" + block + "\n"
    readme.write_text(text)
    page = out_dir / "index.html"
    page.write_text(_unranked_html(html_page(boards, archive), apart))
    return [readme, page]
