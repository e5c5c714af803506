"""GRPO's ``ops`` grammar on a tool-contract-2 id (issue 40), with the tiny random Llama of
tests/training/conftest.py on the real env: the prompt lists ``synthesize`` and the bank context, every rollout
commits without an invalid call, and a rollout that chose ``synthesize`` called the env's tool."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from dreamer_gym.methods.grpo.config import GRPOConfig
from dreamer_gym.methods.grpo.trainer import GRPOTrainer

pytestmark = pytest.mark.jvm
WINDOWS = "MemoryConsolidation-ScienceWorldWindows-v1"


def test_ops_rollouts_on_a_contract_2_window_show_the_bank_context_and_play_synthesize(tiny_model_dir: Path,
                                                                                      tmp_path: Path) -> None:
    config = GRPOConfig(model=str(tiny_model_dir), output_dir=str(tmp_path), env_id=WINDOWS, steps=1, groups_per_step=1,
                        num_generations=3, max_turns=8, lora_r=4, grammar="ops", seed=3,
                        env_overrides={"eval_in_family": 1, "eval_other": 0, "service": "inprocess"})
    trainer = GRPOTrainer(config)
    try:
        rollouts = trainer.collector.collect([(0, {"bank": 0, "region": "window:22-25"})], 3,
                                             torch.Generator().manual_seed(1))
        prompt = trainer.tokenizer.decode(rollouts[0].tokens[: rollouts[0].prompt_len])
        assert "synthesize G - " in prompt and "Bank context" in prompt and "| tasks: " in prompt
        chose = 0
        for r in rollouts:
            assert r.errors == [None] * len(r.commands) and r.info["invalid_calls"] == 0
            tools = [json.loads(a)["tool"] for a in r.actions]
            assert tools[-1] == "commit"
            if any(c.startswith("synthesize") for c in r.commands):
                chose += 1
                assert "synthesize" in tools  # one call per task of the synthesized groups (its emit or keep after)
        print(f"rollouts that chose synthesize: {chose} of {len(rollouts)}")
    finally:
        trainer.close()
