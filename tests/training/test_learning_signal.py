"""Training that says when it learns nothing (issue 27): the forced commit keeps the region as it is, every
trainer warns (Python logging and its own log) on a batch whose groups have zero reward spread or that holds
no valid call, every grammar reaches TRL's text path, and SB3 shows progress.

Everything runs on the real env, reward service and memory-following agent, on the pure-Python toy suite
(``toy_overrides``: no JVM, a commit in milliseconds), with the tiny random Llama of conftest.py where a
language model is needed."""
from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
import torch

from dreamer_gym.envs.consolidation import ConsolidationEnv
from dreamer_gym.envs.ops import OPS
from dreamer_gym.errors import ConfigError
from dreamer_gym.methods.grpo.commands import CommandState
from dreamer_gym.methods.grpo.trl_env import commit_reward, make_environment_factory
from dreamer_gym.training.learning_signal import check_batch

ENV_ID = "MemoryConsolidation-ScienceWorld-v1"
SIGNAL_LOGGER = "dreamer_gym.training.learning_signal"


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == SIGNAL_LOGGER and r.levelno == logging.WARNING]


def test_check_batch_names_flat_groups_and_a_batch_without_a_valid_call(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    flat = check_batch([0.02, 0.02, 0.02, 0.02], [0, 0, 1, 1], valid_calls=0, where="step 1", hint="try X")
    assert (flat.groups, flat.flat_groups, flat.flat_share) == (2, 2, 1.0)
    assert "step 1: zero reward spread in every group (2 of 2; rewards +0.0200)" in flat.warnings[0]
    assert "step 1: no valid tool call in 4 rollouts" in flat.warnings[1] and flat.warnings[1].endswith("; try X")
    assert _warnings(caplog) == list(flat.warnings)
    assert flat.record() == {"flat_groups": 1.0, "warnings": list(flat.warnings), "valid_calls": 0}

    caplog.clear()
    partial = check_batch([0.0, 0.1, 0.3, 0.3], [0, 0, 1, 1], valid_calls=5)
    assert partial.flat_groups == 1 and partial.warnings == ("batch: zero reward spread in 1 of 2 groups: those "
                                                             "groups add nothing to the update",)
    caplog.clear()
    fine = check_batch([0.0, 0.1, 0.3, 0.2], [0, 0, 1, 1], valid_calls=5)
    assert fine.warnings == () and fine.flat_groups == 0 and _warnings(caplog) == []
    assert "valid_calls" not in check_batch([0.0, 1.0]).record()  # op-level / SB3: no tool calls to count
    with pytest.raises(ValueError, match="3 rewards but 2 group labels"):
        check_batch([0.0, 1.0, 2.0], [0, 1])


# --- the forced commit --------------------------------------------------------------------------------------------
def _play(env: ConsolidationEnv, calls: list[str]) -> dict:
    info: dict = {}
    for call in calls:
        _, reward, terminated, truncated, info = env.step(call)
        info["reward"] = reward
        if terminated or truncated:
            break
    return info


def test_the_forced_commit_deletes_nothing_the_policy_did_not_decide_to_delete(toy_inprocess: dict) -> None:
    """keep: the region as it is (what was kept is no decision to delete the rest): score delta 0, size term 0,
    reward exactly 0, where the old forced commit of nothing kept paid the size term of an empty region.
    drop / ops: each drop or group op is a finished decision, the rest is kept."""
    env = ConsolidationEnv.experiment(ENV_ID, **toy_inprocess)
    try:
        _, info = env.reset(seed=0)
        region = info["region"]
        keep = CommandState.for_region(region, "keep")
        calls = keep.apply(["read", " 1"]) + keep.apply(["keep", " 2"]) + keep.forced_commit()
        out = _play(env, calls)
        assert out["bank_after"] == out["bank_before"] and out["size_after"] == out["size_before"]
        assert out["reward"] == 0.0 and out["reward_components"]["score_delta"] == 0.0

        env.reset(seed=0)
        drop = CommandState.for_region(region, "drop")
        drop.apply(["drop", " 1"])
        out = _play(env, drop.forced_commit())
        assert out["size_after"]["entries"] == len(region) - 1

        env.reset(seed=0)
        ops = CommandState.for_region(region, "ops", env.config.max_entry_tokens, env.config.max_emitted)
        ops.apply(["drop", " A"])  # group A dropped; the turns ran out before the other groups
        out = _play(env, ops.forced_commit())
        assert out["size_after"]["entries"] == len(region) - ops.groups.count(0)
    finally:
        env.close()


def test_a_tools_batch_without_a_parseable_call_commits_the_region_and_warns(
        toy_inprocess: dict, caplog: pytest.LogCaptureFixture) -> None:
    """The issue's run: no rollout made a tool call TRL could parse. Every reward is now exactly 0 (the region as
    it is), not the +0.02 size bonus of an empty region, and the batch warns twice (no spread, no valid call)
    in the log and in TRL's metrics. A rollout that wrote entries and never committed has them undone."""
    caplog.set_level(logging.WARNING)
    metrics: dict[str, float] = {}
    with make_environment_factory(ENV_ID, experiment=True, **toy_inprocess) as factory:
        silent = [factory() for _ in range(2)]
        for e in silent:
            e.reset(seed=0)
        rewards = commit_reward([""] * 2, silent, log_metric=metrics.__setitem__)
        assert rewards == [0.0, 0.0] and all(e.forced_commit for e in silent)
        assert all(e.last_commit_info["bank_after"] == e.last_commit_info["bank_before"] for e in silent)
        found = _warnings(caplog)
        assert any("zero reward spread in every group (1 of 1; rewards +0.0000)" in w for w in found)
        assert any("no valid tool call in 2 rollouts" in w and "chat template" in w for w in found)
        assert metrics["signal/valid_calls"] == 0.0 and metrics["signal/flat_groups"] == 1.0
        assert metrics["consolidation/forced_commit"] == 1.0

        caplog.clear()
        writer, quiet = factory(), factory()
        writer.reset(seed=1)
        quiet.reset(seed=1)
        first = writer.env.unwrapped.region_ids[0]
        assert "kept 1" in writer.keep([first])
        assert "emitted" in writer.emit("insight", "Keys open the doors of their colour.", [first])
        rewards = commit_reward([""] * 2, [writer, quiet], log_metric=metrics.__setitem__)
        info = writer.last_commit_info
        assert writer.forced_commit and info["bank_after"] == info["bank_before"] and rewards[0] == 0.0
        assert writer.valid_calls == 2 and metrics["signal/valid_calls"] == 2.0
        assert not any("no valid tool call" in w for w in _warnings(caplog))


# --- every trainer warns in its own log -------------------------------------------------------------------------
def test_a_grpo_step_without_reward_spread_warns_in_log_jsonl(tiny_model_dir: Path, toy_inprocess: dict,
                                                              tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A collapsed policy (temperature 1e-4: the G rollouts of a group write the same commands) gets one reward
    per group: the step warns, in the log and in ``log.jsonl``."""
    from dreamer_gym.methods.grpo.config import GRPOConfig
    from dreamer_gym.methods.grpo.trainer import GRPOTrainer
    from dreamer_gym.training.logs import read_log

    caplog.set_level(logging.WARNING)
    config = GRPOConfig(model=str(tiny_model_dir), output_dir=str(tmp_path), env_overrides=toy_inprocess, steps=1,
                        groups_per_step=1, num_generations=3, max_turns=2, min_region_entries=2, lora_r=4,
                        temperature=1e-4, seed=2)
    trainer = GRPOTrainer(config)
    try:
        trainer.train(progress=False)
    finally:
        trainer.close()
    [record] = read_log(tmp_path / "log.jsonl")
    assert len({tuple(c) for c in record["commands"]}) == 1 and record["reward_std"] == 0.0
    assert record["flat_groups"] == 1.0 and record["valid_calls"] > 0
    [warning] = record["warnings"]
    assert warning.startswith("grpo step 1: zero reward spread in every group (1 of 1")
    assert warning in _warnings(caplog)


def test_an_oplevel_step_without_reward_spread_warns_in_log_jsonl(toy_inprocess: dict, tmp_path: Path,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    """A policy collapsed onto ``keep`` commits the region unchanged in every sample: one reward, a warning."""
    from dreamer_gym.methods.oplevel.trainer import OpLevelConfig, OpLevelTrainer
    from dreamer_gym.training.logs import read_log

    caplog.set_level(logging.WARNING)
    config = OpLevelConfig(env_overrides=toy_inprocess, region_seeds=(0,), steps=1, regions_per_step=1, group_size=3,
                           output_dir=str(tmp_path))
    trainer = OpLevelTrainer(config)
    try:
        head = trainer.policy.net[-1]
        with torch.no_grad():
            head.weight.zero_()
            head.bias.copy_(torch.tensor([50.0 if op == "keep" else 0.0 for op in OPS]))
        trainer.train(progress=False)
    finally:
        trainer.close()
    [record] = read_log(tmp_path / "log.jsonl")
    assert record["reward"] == 0.0 and record["reward_max"] == 0.0 and record["flat_groups"] == 1.0
    assert "valid_calls" not in record
    [warning] = record["warnings"]
    assert warning.startswith("op-level step 1: zero reward spread in every group (1 of 1; rewards +0.0000)")
    assert warning in _warnings(caplog)


def test_sb3_shows_progress_and_logs_flat_rollouts(toy_inprocess: dict, tmp_path: Path,
                                                   capfd: pytest.CaptureFixture[str]) -> None:
    from dreamer_gym.methods.oplevel.sb3 import SB3Config, train_maskable_ppo

    config = SB3Config(env_overrides=toy_inprocess, region_seeds=(0, 1), total_timesteps=4, n_steps=2, batch_size=2,
                       n_epochs=1, output_dir=str(tmp_path / "on"))
    assert train_maskable_ppo(config, progress=True).is_file()
    err = capfd.readouterr().err
    assert "sb3 maskable-ppo" in err and "4/4" in err and "reward=" in err
    lines = [json.loads(x) for x in (tmp_path / "on" / "log.jsonl").read_text().splitlines()]
    episodes = [x for x in lines if "reward" in x]
    assert len(episodes) == 4
    for k, warning in enumerate(x["warning"] for x in lines if "warning" in x):  # a rollout of equal rewards
        assert "zero reward spread" in warning, k

    quiet = SB3Config(**{**config.to_dict(), "output_dir": str(tmp_path / "off"), "total_timesteps": 2})
    train_maskable_ppo(quiet, progress=False)
    assert "sb3 maskable-ppo" not in capfd.readouterr().err


# --- every grammar on TRL's text path; the tools path refuses one ------------------------------------------------
def _text_recipe(model: Path, out: Path, overrides: dict, grammar: str) -> dict:
    return {
        "path": "text",
        "env": {"env_id": ENV_ID, "overrides": overrides, "max_turns": 3, "grammar": grammar},
        "model": {"name": str(model)},
        "lora": {"r": 4, "alpha": 8},
        "dataset": {"n": 2, "seed": 1},
        "trl": {"output_dir": str(out), "use_cpu": True, "bf16": False, "num_generations": 2,
                "per_device_train_batch_size": 2, "max_steps": 1, "max_completion_length": 256, "learning_rate": 1e-2,
                "beta": 0.0, "logging_steps": 1, "report_to": [], "save_strategy": "no", "seed": 3},
    }


@pytest.mark.parametrize("grammar", ["drop", "ops"])
def test_trl_text_path_trains_under_every_grammar(tiny_model_dir: Path, toy_inprocess: dict, tmp_path: Path,
                                                  grammar: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from dreamer_gym.methods.grpo.commands import GRAMMARS
    from dreamer_gym.methods.grpo.trl_recipe import build_trl_trainer

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    trainer, closer = build_trl_trainer(_text_recipe(tiny_model_dir, tmp_path, toy_inprocess, grammar))
    try:
        assert trainer.rollout_func.grammar == grammar
        trainer.train()
        rollouts = trainer.rollout_func.last
        assert rollouts and all(c.split()[0] in GRAMMARS[grammar] for r in rollouts for c in r.commands)
        [step] = [h for h in trainer.state.log_history if "loss" in h]
        assert "signal/flat_groups" in step and step["signal/valid_calls"] > 0 and "env/forced_commit" in step
    finally:
        closer()


def test_the_tools_path_refuses_a_grammar_and_says_why() -> None:
    from dreamer_gym.methods.grpo.trl_bridge import make_rollout_func
    from dreamer_gym.methods.grpo.trl_recipe import load_recipe

    recipe = {"path": "tools", "env": {"env_id": ENV_ID, "grammar": "ops"}, "model": {"name": "x"}}
    with pytest.raises(ConfigError, match=r"`env.grammar` \('ops'\) is for path: text.*nothing to constrain"):
        load_recipe(recipe)
    with pytest.raises(ConfigError, match=r"Expected `env.grammar` to be one of \['keep', 'drop', 'ops'\], got 'add'"):
        load_recipe({**recipe, "path": "text", "env": {"env_id": ENV_ID, "grammar": "add"}})
    assert load_recipe({**recipe, "path": "text"}).env.grammar == "ops"
    with pytest.raises(ConfigError, match="Expected `grammar` to be one of"):
        make_rollout_func(ENV_ID, grammar="add")
