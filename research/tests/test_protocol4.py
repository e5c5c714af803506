"""The staging of a draft protocol's rows (research/protocol4.py): rows shaped like the board's results files but
marked `draft`, which the track study reads and a board never ranks."""
from __future__ import annotations

from pathlib import Path

from dreamer_gym.leaderboard.board import build_board
from dreamer_gym.leaderboard.tracks import PROTOCOL_VERSION, Track, load_track
from research.protocol4 import as_draft_row, row_file

DRAFT = Path(__file__).resolve().parents[1] / "tracks" / "scienceworld-v4.yaml"


def test_a_staged_row_is_a_draft_the_board_never_ranks(tmp_path: Path) -> None:
    track = load_track(DRAFT, draft=True)
    assert isinstance(track, Track) and track.protocol_version == 4 and track.env_id.endswith("-v2")
    result = {"records": [], "summary": {"score": 0.0}, "commits": []}
    rows = [as_draft_row(result, track, name, 1.0) for name in ("empty", "oracle", "rule:merge-all", "random")]
    assert [r["builtin"] for r in rows] == ["empty", "oracle", "rule:merge-all", None]
    assert [r["consolidator"]["kind"] for r in rows] == ["fixed", "reference", "fixed", "fixed"]
    assert {r["tier"] for r in rows} == {"draft"} and "commits" not in rows[0]
    assert row_file(tmp_path, "scienceworld", "rule:merge-all") == tmp_path / "results/scienceworld/rule-merge-all.json"
    # even under the protocol the board ranks now, a draft is not a re-scored row
    board = build_board("scienceworld", [{**r, "protocol_version": PROTOCOL_VERSION} for r in rows])
    assert not board.rows and not board.verified
