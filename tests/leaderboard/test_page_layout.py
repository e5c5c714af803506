"""The rendered page's layout, measured in headless Chromium on the committed results: at desktop (1400 px) and
phone (390 px) width no two labels of a plot overlap, no label is cut off by its plot, the page never scrolls
sideways, the measure each board ranks by and its CI (header and every ranked row's cell) are on screen without
scrolling anything sideways (and, at desktop width, stay there while the table scrolls), no cell says a bare
"n/a", and every ``#family-`` link lands on a row of a per-family table. Screenshots of both widths go to
``$DREAMER_GYM_SCREENSHOTS`` (``leaderboards/screenshots`` for the checked-in ones) or to a tmp folder, with the
scienceworld board (heading to ranking table) at each width beside them (``docs/leaderboard-page.png`` and
``docs/leaderboard-page-390.png`` are those)."""
from __future__ import annotations

import io
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dreamer_gym.leaderboard.board import Board, build_board, table_rows
from dreamer_gym.leaderboard.board import comparison_rows, ranked_header
from dreamer_gym.leaderboard.render import _html_cell, _md_cell, html_page, plot_svg

ROOT = Path(__file__).parent.parent.parent
WIDTHS = {"desktop": 1400, "narrow": 390}
MAX_SHOT_HEIGHT = 4000  # px: a screenshot is the top of a page this tall at most (a few hundred KB as PNG)
MIN_LABEL_PX = 10  # a plot label's box at least this tall on screen (10 pt text shrunk to 75%: about 11.5 px)
BOARD_SHOTS = {"desktop": "leaderboard-page.png", "narrow": "leaderboard-page-390.png"}  # the docs' screenshots
# the scienceworld board from its heading to the bottom of its ranking table, in page coordinates
BOARD_CLIP = """() => {
  const section = document.getElementById('track-scienceworld');
  const top = section.getBoundingClientRect().top + window.scrollY;
  const table = section.querySelector('table.ranking').closest('.scroll');
  const bottom = table.getBoundingClientRect().bottom + window.scrollY;
  return {x: 0, y: top - 8, width: window.innerWidth, height: bottom - top + 16};
}"""

# per plot SVG: its box, its labels' boxes, and the label pairs whose boxes intersect
MEASURE = """() => [...document.querySelectorAll('.plot svg')].map(svg => {
  const box = svg.getBoundingClientRect();
  const labels = [...svg.querySelectorAll('text')].map(t => {
    const r = t.getBoundingClientRect();
    return {text: t.textContent, left: r.left, right: r.right, top: r.top, bottom: r.bottom};
  }).filter(r => r.right > r.left && r.bottom > r.top);
  const overlaps = [];
  for (let i = 0; i < labels.length; i++) for (let j = i + 1; j < labels.length; j++) {
    const a = labels[i], b = labels[j];
    if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom) overlaps.push([a.text, b.text]);
  }
  return {id: svg.closest('section').id, outer: svg.closest('.plot').getBoundingClientRect().right,
          box: {left: box.left, right: box.right, top: box.top, bottom: box.bottom}, labels, overlaps};
})"""
# per ranking table: the ranked measure's header and ranked cells (box and text) and the box they scroll in
RANKED = """() => [...document.querySelectorAll('table.ranking')].map(table => {
  const box = r => { const b = r.getBoundingClientRect(); return {left: b.left, right: b.right}; };
  const cells = [...table.querySelectorAll('th.measure, tr.ranked td.measure')];
  return {id: table.closest('section').id, scroll: box(table.closest('.scroll')),
          cells: cells.map(c => ({text: c.textContent, ...box(c)}))};
})"""
SCROLL_TABLES_RIGHT = ("() => document.querySelectorAll('table.ranking').forEach(t => { "
                       "const s = t.closest('.scroll'); s.scrollLeft = s.scrollWidth; })")
BARE = "() => [...document.querySelectorAll('td')].map(td => td.textContent.trim()).filter(t => /^n\\/a\\b/.test(t))"
VALUE_CI = re.compile(r"^[+-]?\d+\.\d+ \[[+-]?\d+\.\d+, [+-]?\d+\.\d+\]$")


def _ranked_measure_on_screen(page: Any, width: int, after: str) -> None:
    """Every ranking table's measure header and ranked cells lie inside the viewport and inside their table's
    scrolling box (the header first, then one value [CI] per ranked row)."""
    tables = page.evaluate(RANKED)
    assert {t["id"] for t in tables} >= {"track-alfworld-gen", "track-miniwob", "track-scienceworld"}
    for table in tables:
        header, *cells = table["cells"]
        assert header["text"] in ("IQM (normalised)", "track score") and len(cells) >= 2, table
        assert all(VALUE_CI.match(c["text"]) for c in cells), f"{table['id']}: a ranked cell without its CI: {cells}"
        right = min(width, table["scroll"]["right"]) + 0.5
        off = [c for c in table["cells"] if c["left"] < max(0, table["scroll"]["left"]) - 0.5 or c["right"] > right]
        assert off == [], f"{table['id']} at {width} px{after}: ranked measure off screen: {off}"


LINKS = """() => [...document.querySelectorAll('a[href^="#family-"]')].map(a => {
  const id = a.getAttribute('href').slice(1);
  return {id, found: document.getElementById(id) !== null};
})"""


@pytest.fixture(scope="module")
def page_path(committed_render: tuple[Path, Path]) -> Path:
    """index.html rendered from the committed results (tests/leaderboard/conftest.py; the README beside it is a
    scratch copy)."""
    return committed_render[1]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    from dreamer_gym.suites.web.chromium import DEFAULT_CHROMIUM, check_chromium

    check_chromium()
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=DEFAULT_CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            yield chromium
        finally:
            chromium.close()


def _save_screenshot(png: bytes, path: Path) -> int:
    """The top of the page (at most MAX_SHOT_HEIGHT px) as a 64-colour PNG: text on white stays sharp and the
    checked-in file stays small. Returns its size in bytes."""
    from PIL import Image

    image = Image.open(io.BytesIO(png))
    image = image.crop((0, 0, image.width, min(image.height, MAX_SHOT_HEIGHT))).convert("RGB")
    image.quantize(colors=64).save(path, optimize=True)
    return path.stat().st_size


@pytest.mark.browser
@pytest.mark.parametrize("device", list(WIDTHS))
def test_the_page_has_readable_plots_and_no_sideways_scroll(device: str, page_path: Path, browser: Any,
                                                            tmp_path: Path) -> None:
    width = WIDTHS[device]
    page = browser.new_page(viewport={"width": width, "height": 900})
    try:
        page.goto(page_path.resolve().as_uri())
        plots = page.evaluate(MEASURE)
        assert {p["id"] for p in plots} == {"track-alfworld-gen", "track-miniwob", "track-scienceworld"}
        for plot in plots:
            assert len(plot["labels"]) >= 4, plot["id"]  # ticks, axis titles and a label per row were measured
            assert plot["overlaps"] == [], f"{plot['id']} at {width} px: labels overlap: {plot['overlaps']}"
            box = plot["box"]
            cut = [lb["text"] for lb in plot["labels"] if lb["left"] < box["left"] - 1 or lb["right"] > box["right"] + 1
                   or lb["top"] < box["top"] - 1 or lb["bottom"] > box["bottom"] + 1]
            assert cut == [], f"{plot['id']} at {width} px: labels cut off by the plot's edge: {cut}"
            assert plot["outer"] <= width, plot  # the plot's box fits the page (a phone scrolls inside it)
            smallest = min(lb["bottom"] - lb["top"] for lb in plot["labels"])
            assert smallest >= MIN_LABEL_PX, f"{plot['id']} at {width} px: labels {smallest:.1f} px tall, illegible"
        sizes = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
        assert sizes[0] <= sizes[1] == width, f"the page scrolls sideways at {width} px: scrollWidth {sizes[0]}"
        wide = page.evaluate("() => [...document.querySelectorAll('.scroll')].filter(d => d.scrollWidth > "
                             "d.clientWidth).length")
        if device == "narrow":
            assert wide >= 1  # the wide tables are there, and scroll inside their own box
        sizes = page.evaluate("() => [document.scrollingElement.scrollWidth, window.innerWidth]")
        assert sizes[0] <= sizes[1], f"the page scrolls sideways at {width} px: {sizes}"
        _ranked_measure_on_screen(page, width, "")
        assert page.evaluate(BARE) and all(re.match(r"^n/a \(.+\)$", t) for t in page.evaluate(BARE)), \
            f"a bare n/a at {width} px: {page.evaluate(BARE)}"
        links = page.evaluate(LINKS)
        assert [link["id"] for link in links if not link["found"]] == [], "per-family links without their row"
        folder = Path(os.environ.get("DREAMER_GYM_SCREENSHOTS") or tmp_path)
        folder.mkdir(parents=True, exist_ok=True)
        size = _save_screenshot(page.screenshot(full_page=True), folder / f"leaderboard-{device}-{width}px.png")
        assert 0 < size < 400_000
        clip = page.evaluate(BOARD_CLIP)
        assert 0 < _save_screenshot(page.screenshot(full_page=True, clip=clip), folder / BOARD_SHOTS[device]) < 400_000
        if device == "desktop":  # scrolled to their far right, the tables keep rank, name and measure in view
            page.evaluate(SCROLL_TABLES_RIGHT)
            _ranked_measure_on_screen(page, width, " with its table scrolled right")
    finally:
        page.close()


def _record(name: str, reward: float) -> dict[str, Any]:
    """A re-scored results record on two banks x one family (the shape build_board reads)."""
    records = [{"bank_index": b, "family": "a", "reward": reward + 0.01 * b, "score_before": 40.0, "score_after": 50.0,
                "size_before": {"tokens": 200}, "size_after": {"tokens": 100}, "episode_errors": [],
                "episodes": [{"in_family": True, "after": 50.0, "before": 40.0}]} for b in (0, 1)]
    return {"consolidator": {"name": name, "kind": "contender", "config": {}, "trained_on": []}, "tier": "re-scored",
            "protocol_version": _protocol(), "records": records,
            "summary": {"score": reward + 0.005, "tokens_after": 100.0},
            "review": {"needs_review": False, "regions": [], "reason": "judged clear (a layout record)"}}


def _protocol() -> int:
    from dreamer_gym.leaderboard.tracks import PROTOCOL_VERSION

    return PROTOCOL_VERSION


def test_a_board_without_empty_and_oracle_plots_the_track_score_and_says_so() -> None:
    board: Board = build_board("scienceworld", [_record("mine", 0.02), _record("theirs", 0.01)])
    assert not board.normalised
    svg = plot_svg(board)
    assert "track score (95% CI)" in svg and "IQM" not in svg
    header, cells = table_rows(board)
    for cell in cells:  # the table's rank (shared or not) beside the name
        assert f"{cell[header.index('rank')]} {cell[header.index('consolidator')]}" in svg
    assert plot_svg(board) == svg  # deterministic: the same results render the same page


def test_a_board_ranks_by_its_third_column_and_says_why_a_cell_is_empty() -> None:
    """Without `empty` and `oracle` rows the board ranks by track score: that column comes third, marked as the
    measure on the page, and the normalised columns say why they are empty, as do a reference's."""
    reference = _record("the reference", 0.03)
    reference["consolidator"]["kind"] = "reference"
    board = build_board("scienceworld", [_record("mine", 0.02), _record("theirs", 0.01), reference])
    header, cells = table_rows(board)
    assert header[:3] == ["rank", "consolidator", ranked_header(board)] == ["rank", "consolidator", "track score"]
    assert [c[1] for c in cells] == ["mine", "theirs", "the reference"]  # ranked by track score, reference apart
    for row, cell in zip(board.rows, cells):
        assert row.score_ci is not None
        assert cell[2] == f"{row.score:+.4f} [{row.score_ci[0]:+.4f}, {row.score_ci[1]:+.4f}]"
    empty = [c for row in cells + comparison_rows(board)[1] for c in row if c.startswith("n/a")]
    assert "n/a (no empty and oracle rows)" in empty and "n/a (it is the reference)" in empty
    assert all(re.match(r"^n/a \(.+\)$", c) for c in empty), empty
    page = html_page([board])
    assert '<th class="measure">track score</th>' in page and page.count('<tr class="ranked">') == 2


def test_a_per_family_cell_is_a_link_in_html_and_markdown() -> None:
    anchor = "#family-scienceworld-grpo-seed-0"
    assert _html_cell(anchor) == f'<td><a href="{anchor}">per family</a></td>'
    assert _md_cell(anchor) == f"[per family](index.html{anchor})"
    assert _html_cell("0.37 [0.17, 0.51]") == '<td class="ci">0.37 [0.17, 0.51]</td>'  # never broken in two
