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


@pytest.mark.heavy  # a fresh conversion, ~25 s (issue 39: CI time)
def test_a_fresh_conversion_is_world_readable(tmp_path: Path) -> None:
    assert_world_readable(smollm2_135m_instruct(tmp_path))


def test_gguf_parsing_is_memoised_only_inside_the_conversion(tmp_path: Path) -> None:
    """The conversion parses the GGUF once (transformers asks three times) and restores gguf afterwards."""
    import gguf
    import numpy as np

    from dreamer_gym.llm.models import _gguf_parsed_once

    path = tmp_path / "tiny.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_tensor("token_embd.weight", np.zeros((4, 2), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    original = gguf.GGUFReader, gguf.get_tensor_name_map
    with _gguf_parsed_once():
        first = gguf.GGUFReader(path)
        assert gguf.GGUFReader(path) is first and [t.name for t in first.tensors] == ["token_embd.weight"]
        assert gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, 2) is gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, 2)
    assert (gguf.GGUFReader, gguf.get_tensor_name_map) == original
    assert gguf.GGUFReader(path) is not gguf.GGUFReader(path)


@pytest.mark.heavy  # two fresh conversions, ~40 s
def test_memoised_conversion_writes_the_same_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import contextlib
    import hashlib

    from dreamer_gym.llm import models

    def digests(folder: Path) -> dict[str, str]:
        return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}

    memoised = digests(smollm2_135m_instruct(tmp_path / "memoised"))
    monkeypatch.setattr(models, "_gguf_parsed_once", contextlib.nullcontext)
    assert digests(smollm2_135m_instruct(tmp_path / "plain")) == memoised
