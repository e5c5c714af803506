"""Rows of an older protocol move to the archive table: listed as they were scored, marked, never ranked."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from dreamer_gym.leaderboard.board import ARCHIVE_HEADER, archive_rows, load_results
from dreamer_gym.leaderboard.render import ARCHIVE_TITLE, render
from dreamer_gym.leaderboard.tracks import PROTOCOL_VERSION

ROOT = Path(__file__).resolve().parents[2]
ARCHIVE = ROOT / "leaderboards" / "archive"


def test_the_protocol_2_rows_are_archived_with_their_own_env_id_and_protocol() -> None:
    header, cells = archive_rows(ARCHIVE)
    assert header == ARCHIVE_HEADER
    files = sorted(ARCHIVE.glob("protocol-2/results/*/*.json"))
    re_scored = [p for p in files if json.loads(p.read_text())["tier"] == "re-scored"]
    assert len(cells) == len(re_scored) > 0
    col = {name: header.index(name) for name in ("protocol", "track", "env id", "consolidator", "regions")}
    assert {c[col["protocol"]] for c in cells} == {"2"} and PROTOCOL_VERSION > 2
    sw = [c for c in cells if c[col["track"]] == "scienceworld"]
    assert {c[col["env id"]] for c in sw} == {"MemoryConsolidation-ScienceWorld-v0"}  # from the archived track file
    assert {c[col["regions"]] for c in sw} == {"12"} and "keep-all" in {c[col["consolidator"]] for c in sw}
    # the current boards read leaderboards/results/ only: no archived row is on them
    current = load_results(ROOT / "leaderboards" / "results")
    assert all(r["protocol_version"] == PROTOCOL_VERSION for rs in current.values() for r in rs)


def test_the_page_lists_the_archive_apart_from_the_boards(tmp_path: Path) -> None:
    results = tmp_path / "results"
    (results / "scienceworld").mkdir(parents=True)
    keep_all = ROOT / "leaderboards" / "results" / "scienceworld" / "keep-all.json"
    shutil.copy(keep_all, results / "scienceworld" / "keep-all.json")
    shutil.copytree(ARCHIVE, tmp_path / "archive")
    readme, page = render(results, tmp_path / "out")
    text = readme.read_text()
    board, archive = text.split(f"### {ARCHIVE_TITLE}")
    assert "(superseded)" not in board and "MemoryConsolidation-ScienceWorld-v0" not in board
    assert archive.count("| 2 | scienceworld | MemoryConsolidation-ScienceWorld-v0 |") >= 10
    assert 'id="archive"' in page.read_text()
    # no archive folder: no archive section
    shutil.rmtree(tmp_path / "archive")
    readme, _ = render(results, tmp_path / "out2")
    assert ARCHIVE_TITLE not in readme.read_text()
