"""Red-team fixtures: the shared fresh draw (tests/red_team/red_team_draw.py), built once per session."""
from __future__ import annotations

import pytest

from red_team_draw import FreshDraw, make_fresh_draw


@pytest.fixture(scope="session")
def fresh_draw(tmp_path_factory: pytest.TempPathFactory) -> FreshDraw:
    """One fresh bank x the 4 held-out families of the ``scienceworld`` track, and the oracle's banks on it."""
    return make_fresh_draw(tmp_path_factory.mktemp("fresh-draw").resolve())
