"""Leaderboard fixtures shared across modules: the committed results, their boards and their rendered page, each
built once per session (a board draws 10,000 bootstrap replicates of every row and every pair of rows; the page
builds every board again)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dreamer_gym.leaderboard.board import Board, build_board, load_results
from dreamer_gym.leaderboard.render import render

BOARD = Path(__file__).resolve().parents[2] / "leaderboards"


@pytest.fixture(scope="session")
def committed_results() -> dict[str, list[dict[str, Any]]]:
    """leaderboards/results/, by track (tests copy what they change)."""
    return load_results(BOARD / "results")


@pytest.fixture(scope="session")
def committed_boards(committed_results: dict[str, list[dict[str, Any]]]) -> dict[str, Board]:
    """Each committed track's board, built from its results (no reviews), by track."""
    return {track: build_board(track, rows) for track, rows in committed_results.items()}


@pytest.fixture(scope="session")
def committed_render(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """``render`` of leaderboards/results/ into a scratch folder holding a copy of leaderboards/README.md:
    ``(README.md, index.html)``."""
    out = tmp_path_factory.mktemp("committed-board")
    (out / "README.md").write_text((BOARD / "README.md").read_text())
    readme, page = render(BOARD / "results", out)
    return readme, page
