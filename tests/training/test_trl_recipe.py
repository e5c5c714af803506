"""The TRL recipe (:mod:`dreamer_gym.methods.grpo.trl_recipe`): one YAML -> a ready ``GRPOTrainer``.

The tools path runs one real step of TRL's ``environment_factory`` machinery on the real env (ScienceWorld through
the default process reward service) with a tiny random Llama that uses SmolLM2's tokenizer and TRL's own Qwen3
chat template. A random model almost never writes a parseable tool call, so one rollout's first turn is scripted
(its token ids replace the model's in TRL's generation step): TRL parses it with the Qwen3 response parser, runs
it on our env class, appends the result, generates on, and scores both rollouts with the batched
``commit_reward``. The scripted call is invalid (a penalty), the other rollout is committed for it, so the group's
rewards differ and the step has a real gradient.
"""
from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from dreamer_gym.errors import ConfigError
from dreamer_gym.methods.grpo.trl_recipe import (
    TOOLS_USER_MESSAGE,
    Recipe,
    build_trl_trainer,
    load_recipe,
    main,
    make_tool_dataset,
)

ENV_ID = "MemoryConsolidation-ScienceWorld-v1"
CONFIGS = Path(__file__).parent.parent.parent / "dreamer_gym" / "data" / "configs"
SCRIPTED_CALL = '<tool_call>\n{"name": "read_entry", "arguments": {"id": "no-such-entry"}}\n</tool_call><|im_end|>'


def tools_recipe(model: Path | str, output_dir: Path, **trl: object) -> dict:
    return {
        "path": "tools",
        "env": {"env_id": ENV_ID, "overrides": {"eval_in_family": 1, "eval_other": 1}},
        "model": {"name": str(model), "chat_template": "qwen3"},
        "lora": {"r": 4, "alpha": 8, "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj"]},
        "dataset": {"n": 4, "seed": 1},
        "trl": {"output_dir": str(output_dir), "use_cpu": True, "bf16": False, "num_generations": 2,
                "per_device_train_batch_size": 2, "max_steps": 1, "max_completion_length": 256,
                "max_tool_calling_iterations": 2, "learning_rate": 1e-2, "beta": 0.0, "logging_steps": 1,
                "report_to": [], "save_strategy": "no", "seed": 3, **trl},
    }


# --- (a) the tools path, end to end -----------------------------------------------------------------------------
@pytest.mark.heavy  # ~35 s (issue 39: CI time); TRL trains on the env in CI through tests/training/test_trl_bridge.py
@pytest.mark.jvm
def test_tools_path_trains_one_step_on_the_env(tiny_model_dir: Path, tmp_path: Path) -> None:
    trainer, closer = build_trl_trainer(tools_recipe(tiny_model_dir, tmp_path))
    try:
        tokenizer = trainer.processing_class
        assert tokenizer.response_template is not None  # TRL recognised its own Qwen3 template
        assert trainer.chat_template is not None  # ... and swapped in its prefix-preserving training variant
        assert {t.__name__ for t in trainer.tools} == {"read_entry", "read_trajectory", "search", "keep", "emit",
                                                       "retract", "commit"}

        scripted = tokenizer.encode(SCRIPTED_CALL, add_special_tokens=False)
        generate = trainer._generate_single_turn
        calls: list[int] = []

        def first_turn_scripted(prompt_ids, *args, **kwargs):
            completion_ids, logprobs = generate(prompt_ids, *args, **kwargs)
            if not calls:  # the batch's first turn: rollout 0 calls a tool instead of the model's text
                completion_ids[0] = list(scripted)
            calls.append(len(prompt_ids))
            return completion_ids, logprobs

        trainer._generate_single_turn = first_turn_scripted
        before = {n: p.detach().clone() for n, p in trainer.model.named_parameters() if p.requires_grad}
        assert before and all("lora" in n for n in before)
        trainer.train()
        after = {n: p.detach().clone() for n, p in trainer.model.named_parameters() if p.requires_grad}

        # TRL ran the tool on our class, then generated again for that rollout only
        assert calls[:2] == [2, 1]
        scripted_env, other_env = trainer.environments
        assert scripted_env.tool_counts == {"read_entry": 1} and scripted_env.invalid_calls == 1
        # commit_reward scored every rollout of the batch (one commit_many), committing those that did not
        for env in trainer.environments:
            assert env.last_commit_info is not None and env.episode_reward is not None
        assert scripted_env.forced_commit and other_env.forced_commit
        penalty = scripted_env.env.unwrapped.config.invalid_penalty
        assert scripted_env.episode_reward == pytest.approx(other_env.episode_reward - penalty)
        [step] = [h for h in trainer.state.log_history if "loss" in h]
        assert math.isfinite(step["loss"])
        mean = (scripted_env.episode_reward + other_env.episode_reward) / 2
        assert step["rewards/commit_reward/mean"] == pytest.approx(mean, abs=1e-6)
        assert step["rewards/commit_reward/std"] > 0
        assert step["consolidation/invalid_calls"] == pytest.approx(0.5)
        assert step["tools/call_frequency"] > 0
        assert any(not torch.equal(before[n], after[n]) for n in before)  # a real gradient reached LoRA
    finally:
        closer()
    assert all(env.env is None for env in trainer.environments)  # the closer closed the envs (and the service)


def test_tool_dataset_rows_are_the_reset_arguments() -> None:
    from dreamer_gym.methods.grpo.trl_bridge import make_dataset, parse_prompt

    data = make_tool_dataset(3, seed=0, families=("grow-plant", "boil"))
    assert data.column_names == ["prompt", "seed", "family"]
    text = make_dataset(3, seed=0, families=["grow-plant", "boil"])["prompt"]
    assert [(s, {"family": f}) for s, f in zip(data["seed"], data["family"])] == [parse_prompt(p) for p in text]
    system, user = data[0]["prompt"]
    assert system["role"] == "system" and "consolidate" in system["content"] and "{tools}" not in system["content"]
    assert user == {"role": "user", "content": TOOLS_USER_MESSAGE}
    assert make_tool_dataset(2, seed=0).column_names == ["prompt", "seed"]


# --- (b) a bad recipe is a clear ConfigError -----------------------------------------------------------------------
@pytest.mark.parametrize(("change", "match"), [
    ({"colour": "red"}, r"Unknown key 'colour' in `recipe`; allowed: \['dataset', 'env', 'lora', 'model', 'path'"),
    ({"env": {"env_id": ENV_ID, "max_steps": 3}}, r"Unknown key 'max_steps' in `env`; allowed: \['env_id', "),
    ({"env": {"overrides": {"eval_episodes": 1}}}, r"Unknown key 'eval_episodes' in `env.overrides`; allowed: .*"
                                                   r"'eval_in_family'"),
    ({"model": {"name": "m", "template": "qwen3"}}, r"Unknown key 'template' in `model`; allowed: "
                                                    r"\['chat_template', 'name'\]"),
    ({"lora": {"rank": 8}}, r"Unknown key 'rank' in `lora`; allowed: \['alpha', 'dropout', 'r', 'target_modules'\]"),
    ({"dataset": {"rows": 8}}, r"Unknown key 'rows' in `dataset`; allowed: \['families', 'n', 'seed'\]"),
    ({"trl": {"num_generation": 8}}, r"Unknown key 'num_generation' in `trl`; allowed: .*'num_generations'"),
    ({"path": "grammar"}, r"`path` .* one of \['tools', 'text'\]"),
    ({"model": {"name": "m", "chat_template": "qwen9"}}, r"Unknown `model.chat_template` 'qwen9'; TRL ships: .*qwen3"),
    ({"env": {"max_turns": 4}}, r"`env.max_turns` is for path: text"),
    ({"env": {"env_id": "MemoryConsolidation-Nowhere-v0"}}, r"Unknown `env.env_id`"),
    ({"model": {}}, r"Expected `model.name`"),
    ({"lora": {"r": -1}}, r"`lora.r` to be an int >= 0"),
])
def test_a_bad_recipe_names_the_key(tmp_path: Path, change: dict, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        load_recipe({**tools_recipe("some-model", tmp_path), **change})


def test_the_text_path_refuses_vllm_and_chat_templates(tmp_path: Path) -> None:
    text = {"path": "text", "model": {"name": "smollm2-135m"}}
    assert load_recipe(text).path == "text"
    with pytest.raises(ConfigError, match="`trl.use_vllm` is for path: tools"):
        load_recipe({**text, "trl": {"use_vllm": True}})
    with pytest.raises(ConfigError, match="`model.chat_template` is for path: tools"):
        load_recipe({**text, "model": {"name": "smollm2-135m", "chat_template": "qwen3"}})
    bad = tmp_path / "bad.yaml"
    bad.write_text("path: text\nmodel: {name: smollm2-135m}\ntrl: {lerning_rate: 1.0e-5}\n")
    with pytest.raises(ConfigError, match="Unknown key 'lerning_rate' in `trl`"):
        load_recipe(bad)
    assert main([str(bad), "--check"]) == 2


def test_the_tools_path_needs_a_template_trl_recognises(tiny_model_dir: Path, tmp_path: Path) -> None:
    """SmolLM2's own template renders no tool calls: the recipe says to install one of TRL's (before any env)."""
    recipe = tools_recipe(tiny_model_dir, tmp_path)
    recipe["model"] = {"name": str(tiny_model_dir)}
    with pytest.raises(ConfigError, match="cannot render a tool-calling conversation: set `model.chat_template`"):
        build_trl_trainer(recipe)


# --- (c) the shipped recipes ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["grpo-trl-qwen2.5-1.5b-gpu.yaml", "grpo-trl-smollm2-cpu.yaml"])
def test_shipped_recipes_are_valid(name: str) -> None:
    path = CONFIGS / name
    first = path.read_text().splitlines()[0]
    assert first == f"# dreamer-gym train --config {name.removesuffix('.yaml')} --algo trl"
    recipe = load_recipe(path)
    assert isinstance(recipe, Recipe) and main([str(path), "--check"]) == 0
    if recipe.path == "tools":
        assert recipe.model.name == "Qwen/Qwen2.5-1.5B-Instruct" and recipe.model.chat_template == "qwen2_5"
        assert recipe.lora.r == 16 and recipe.env.overrides == {}  # the registered id's reward: comparable
        assert recipe.trl["use_vllm"] and recipe.trl["vllm_mode"] == "colocate" and recipe.trl["bf16"]
        assert (recipe.trl["num_generations"], recipe.trl["max_tool_calling_iterations"]) == (8, 12)
        assert "NOT RUN" in path.read_text()
    else:
        assert recipe.model.name == "smollm2-135m" and recipe.trl["use_cpu"] and not recipe.trl["bf16"]
        assert (recipe.trl["num_generations"], recipe.trl["max_steps"]) == (4, 2)
    assert load_recipe(recipe.to_dict()) == recipe  # what main saves as recipe.yaml reads back the same
