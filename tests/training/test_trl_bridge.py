"""TRL's own ``GRPOTrainer`` on the real env (ScienceWorld through the process reward service) through
:mod:`dreamer_gym.methods.grpo.trl_bridge`'s ``rollout_func``, with a tiny random Llama that uses SmolLM2's real
tokenizer and chat template: LoRA parameters change, the logged losses are finite, the rewards TRL used are
the env's, and the ``env_mask`` TRL got is 0 exactly on the env's messages."""
from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from dreamer_gym.methods.grpo.decoding import TurnFormat
from dreamer_gym.methods.grpo.trl_bridge import (
    RolloutFunc,
    _groups,
    env_reward,
    make_dataset,
    make_rollout_func,
    parse_prompt,
)

ENV_ID = "MemoryConsolidation-ScienceWorld-v1"
CHEAP = {"eval_in_family": 1, "eval_other": 1}


def _zero_runs(mask: list[int]) -> list[tuple[int, int]]:
    """The [start, end) spans of consecutive 0s in ``mask``."""
    runs, start = [], None
    for k, m in enumerate([*mask, 1]):
        if m == 0 and start is None:
            start = k
        elif m != 0 and start is not None:
            runs.append((start, k))
            start = None
    return runs


@pytest.mark.jvm
def test_trl_grpo_trains_on_the_env_through_rollout_func(tiny_model_dir: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    rollout = make_rollout_func(ENV_ID, max_turns=2, overrides=CHEAP)
    seen: list[dict] = []  # what rollout_func handed TRL, batch by batch

    def spy(prompts: list, trainer: GRPOTrainer) -> dict:
        out = rollout(prompts, trainer)
        seen.append({"prompts": list(prompts), **out})
        return out

    args = GRPOConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, num_generations=2,
                      per_device_train_batch_size=2, max_steps=2, max_completion_length=512, logging_steps=1,
                      report_to=[], beta=0.0, learning_rate=1e-2, seed=3, save_strategy="no")
    trainer = GRPOTrainer(model=model, reward_funcs=[env_reward], args=args, train_dataset=make_dataset(8, seed=1),
                          processing_class=tokenizer, rollout_func=spy,
                          peft_config=LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, task_type="CAUSAL_LM",
                                                 target_modules=["q_proj", "k_proj", "v_proj", "o_proj"]))
    try:
        before = {n: p.detach().clone() for n, p in trainer.model.named_parameters() if p.requires_grad}
        assert before and all("lora" in n for n in before)
        trainer.train()
        after = {n: p.detach().clone() for n, p in trainer.model.named_parameters() if p.requires_grad}
    finally:
        rollout.close()
    assert rollout.envs is None

    # trained: parameters moved and every logged loss is finite
    assert any(not torch.equal(before[n], after[n]) for n in before)
    steps = [h for h in trainer.state.log_history if "loss" in h]
    assert len(steps) == 2 and all(math.isfinite(h["loss"]) for h in steps)
    # the rewards TRL used are the env's, passed from rollout_func to env_reward as the extra key `reward`
    assert len(seen) == 2
    for h, batch in zip(steps, seen):
        assert h["rewards/env_reward/mean"] == pytest.approx(sum(batch["reward"]) / 2, abs=1e-6)

    fmt = TurnFormat.from_tokenizer(tokenizer)
    assert any(0 in mask for batch in seen for mask in batch["env_mask"])  # some rollout got an env message
    for batch in seen:
        # TRL sent each dataset row num_generations times in a row; each group played one region
        assert len(batch["prompts"]) == 2 and batch["prompts"][0] == batch["prompts"][1]
        assert batch["prompt_ids"][0] == batch["prompt_ids"][1]
        for k, (ids, mask, logps) in enumerate(zip(batch["completion_ids"], batch["env_mask"], batch["logprobs"])):
            assert len(ids) == len(mask) == len(logps) and mask[-1] == 1
            assert ids[-1] == tokenizer.eos_token_id  # ends at the policy's end of turn: not "truncated" for TRL
            assert all(math.isfinite(x) and x <= 0.0 for x in logps)
            # env_mask is 0 exactly on the env's messages: each run of 0s decodes to one whole env turn (the user
            # turn with the command's result, then the assistant header), and no policy token is part of one
            runs = _zero_runs(mask)
            assert len(runs) == len(batch["commands"][k]) - 1
            for start, end in runs:
                text = tokenizer.decode(ids[start:end])
                assert text.startswith(fmt.user_prefix) and text.endswith(fmt.user_suffix)
                assert "Kept so far:" in text and "Turns left:" in text
                assert ids[start - 1] == tokenizer.eos_token_id  # right after the policy's end-of-turn token
            policy_text = tokenizer.decode([t for t, m in zip(ids, mask) if m])
            assert "Kept so far" not in policy_text and "<|im_start|>" not in policy_text
            for command in batch["commands"][k]:
                assert command.split()[0] in policy_text


def test_prompts_datasets_and_groups() -> None:
    assert parse_prompt("seed=123") == (123, None)
    assert parse_prompt("seed=5 family=grow-plant bank=2") == (5, {"family": "grow-plant", "bank": 2})
    assert parse_prompt([{"role": "user", "content": "seed=7"}]) == (7, None)
    for bad in ("family=x", "seed=1 colour=red", "seed=one", "hello"):
        with pytest.raises(ValueError, match="prompt"):
            parse_prompt(bad)

    data = make_dataset(5, seed=0, families=["grow-plant", "boil"])
    assert data.column_names == ["prompt"] and len(data) == 5
    assert all(parse_prompt(p)[1]["family"] in {"grow-plant", "boil"} for p in data["prompt"])
    assert make_dataset(5, seed=0)["prompt"] == make_dataset(5, seed=0)["prompt"]

    assert _groups(["seed=1", "seed=1", "seed=2", "seed=2"], 2) == ["seed=1", "seed=2"]
    with pytest.raises(ValueError, match="multiple of num_generations"):
        _groups(["seed=1", "seed=1", "seed=2"], 2)
    with pytest.raises(ValueError, match="in a row"):
        _groups(["seed=1", "seed=2", "seed=1", "seed=2"], 2)

    assert env_reward(["a", "b"], reward=[0.5, -1]) == [0.5, -1.0]
    logged: dict[str, float] = {}
    env_reward(["a", "b"], reward=[0.0, 0.0], score_changed=[True, False], keep_all=[False, False],
               log_metric=logged.__setitem__)
    assert logged == {"env/score_changed": 0.5, "env/keep_all": 0.0}


def test_refuses_settings_that_would_read_our_logprobs_as_unconstrained() -> None:
    from types import SimpleNamespace

    rollout = RolloutFunc(ENV_ID)

    def trainer(**kw: object) -> SimpleNamespace:
        args = {"use_vllm": False, "off_policy_mask_threshold": None, "temperature": 1.0, **kw}
        return SimpleNamespace(args=SimpleNamespace(**args), use_vllm=args["use_vllm"])

    rollout.check(trainer())
    with pytest.raises(ValueError, match="use_vllm"):
        rollout.check(trainer(use_vllm=True))
    with pytest.raises(ValueError, match="off_policy_mask_threshold"):
        rollout.check(trainer(off_policy_mask_threshold=0.5))
    with pytest.raises(ValueError, match="temperature"):
        rollout.check(trainer(temperature=0.7))
