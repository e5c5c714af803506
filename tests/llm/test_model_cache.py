"""The converted model's cache is readable by any uid: the verify sandbox runs a consolidator under a uid of its own
(docs/leaderboard.md, "The sandbox"), and a model it cannot read it would convert again into its /tmp."""
from __future__ import annotations

import stat
from pathlib import Path

import pytest

from dreamer_gym.llm import smollm2_135m_instruct


def assert_world_readable(folder: Path) -> None:
    assert (folder / "config.json").is_file() and (folder / "model.safetensors").stat().st_size > 100_000_000
    assert stat.S_IMODE(folder.stat().st_mode) == 0o755
    assert {p.name: stat.S_IMODE(p.stat().st_mode) for p in folder.iterdir()} == {p.name: 0o644 for p in folder.iterdir()}


def test_the_shared_cache_is_world_readable() -> None:
    """The cache the LLM tests and the sandbox use (converted by the first test that needs it on a fresh machine)."""
    assert_world_readable(smollm2_135m_instruct())


@pytest.mark.heavy  # a fresh conversion, ~50 s (issue 39: CI time)
def test_a_fresh_conversion_is_world_readable(tmp_path: Path) -> None:
    assert_world_readable(smollm2_135m_instruct(tmp_path))
