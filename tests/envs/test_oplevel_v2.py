"""The op-level space and GRPO's ``ops`` grammar on tool contract 2 (issue 40), on the real env and pool:
the bank context's columns (they tell a covered window from a new one), the fifth op ``synthesize`` played
through the env's own tool, a checkpoint that records both lists and refuses an env of the other contract, and
the ops listing with ``synthesize`` and the bank context. Contract-1 envs keep their spaces (the other tests)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import dreamer_gym  # noqa: F401
from dreamer_gym.consolidators import make_consolidator
from dreamer_gym.envs.bank_context import CONTEXT_FEATURES
from dreamer_gym.envs.ops import KEEP, OPS, OPS_V2, SYNTHESIZE, op_names
from dreamer_gym.envs.wrappers import ENTRY_FEATURES, ENTRY_FEATURES_V2, feature_names
from dreamer_gym.errors import ConfigError
from dreamer_gym.methods.grpo.commands import CommandState, first_user_message, system_prompt
from dreamer_gym.methods.oplevel.trainer import (
    CHECKPOINT_FILE,
    OpLevelConfig,
    OpLevelTrainer,
    OpPolicy,
    load_policy,
    save_policy,
)
from dreamer_gym.methods.oplevel.wrapper import OpLevelWrapper

from helpers import make_env

pytestmark = pytest.mark.jvm
WINDOWS = "MemoryConsolidation-ScienceWorldWindows-v1"
# bank 0's first window (nothing is older: every task is new) and its last (its tasks met before)
UNCOVERED = {"bank": 0, "region": "window:0-3"}
COVERED = {"bank": 0, "region": "window:22-25"}


@pytest.fixture(scope="module")
def env():
    env = OpLevelWrapper(make_env(WINDOWS, eval_in_family=1, eval_other=0))
    yield env
    env.close()


def test_lists_are_a_function_of_the_contract() -> None:
    assert feature_names(1) == feature_names(0) == ENTRY_FEATURES and op_names(1) == op_names(0) == OPS
    assert feature_names(2) == ENTRY_FEATURES_V2 == (*ENTRY_FEATURES, *CONTEXT_FEATURES)
    assert op_names(2) == OPS_V2 == (*OPS, "synthesize")


def test_v2_observation_carries_the_bank_context_and_masks_synthesize_to_own_linked_tasks(env: OpLevelWrapper) -> None:
    assert env.features == ENTRY_FEATURES_V2 and env.op_list == OPS_V2
    assert env.observation_space.shape == (50, len(ENTRY_FEATURES_V2)) and tuple(env.action_space.nvec) == (5,) * 50
    covered = ENTRY_FEATURES_V2.index("task_covered")
    rows = []
    for options in (UNCOVERED, COVERED):
        obs, info = env.reset(seed=0, options=options)
        n, mask = info["n_entries"], info["action_mask"]
        assert obs.shape == env.observation_space.shape and mask.shape == (50, 5)
        own = {c["task"] for c in info["bank_context"]}
        allowed = {e["family"] for i, e in enumerate(info["region"]) if mask[i, SYNTHESIZE]}
        assert allowed and allowed <= own and not mask[n:, SYNTHESIZE].any()
        tasks = {c["task"]: c["covered"] for c in info["bank_context"]}
        assert obs[:n, covered].tolist() == [float(tasks.get(e["family"], True)) for e in info["region"]]
        rows.append(obs[:n, covered])
    assert not rows[0].any() and rows[1].any()  # the first window is new to the bank, the last is not


def _window_with_a_new_candidate(env: OpLevelWrapper) -> dict[str, object]:
    """A window of bank 0 where the env's ``synthesize`` writes a procedure no region entry holds (where a task
    had one successful run, the candidate is that run's verbatim procedure, and the op keeps it): asked of the
    tool itself, no commit."""
    base = env.unwrapped
    for key in base.pool.region_keys(0):
        _, info = base.reset(seed=0, options={"bank": 0, "region": key})
        for c in info["bank_context"]:
            obs, *_ = base.step(json.dumps({"tool": "synthesize", "task": c["task"], "kind": "procedure"}))
            if obs["result"].startswith("{") and "emit" in json.loads(obs["result"]):
                return {"bank": 0, "region": key}
    raise AssertionError("no window of bank 0 has a task whose successful runs synthesize a new procedure")


def test_synthesize_on_every_procedure_commits_entries_citing_whole_trajectories(env: OpLevelWrapper) -> None:
    _, info = env.reset(seed=0, options=_window_with_a_new_candidate(env))
    mask, region = info["action_mask"], info["region"]
    action = np.zeros(50, dtype=np.int64)
    for i, entry in enumerate(region):
        action[i] = SYNTHESIZE if entry["kind"] == "procedure" and mask[i, SYNTHESIZE] else KEEP
    _, reward, terminated, _, out = env.step(action)
    assert terminated and np.isfinite(reward) and out["invalid_ops"] == 0 and out["invalid_calls"] == 0
    played = out["ops_played"]  # a task whose runs share no procedure keeps its entries
    assert 0 < played["synthesize"] <= int((action == SYNTHESIZE).sum()) and sum(played.values()) == len(region)
    ids = {e["id"] for e in region}
    new = [e for e in out["emitted"] if e["id"] not in ids]
    assert new and all(e["kind"] == "procedure" and e["provenance"] for e in new)
    assert all(p["start"] == 0 for e in new for p in e["provenance"])  # whole trajectories, as synthesize cites
    tasks = {e["family"] for e, op in zip(region, action) if op == SYNTHESIZE}
    procedures = [e for e in out["emitted"] if e["kind"] == "procedure" and e["family"] in tasks]
    assert len(procedures) <= len(tasks) + played.get("keep", 0)  # one per task, or the kept entries of a task


def test_a_v2_checkpoint_records_both_lists_reloads_and_refuses_the_other_contract(env: OpLevelWrapper,
                                                                                 tmp_path: Path) -> None:
    config = OpLevelConfig(env_id=WINDOWS, steps=1, regions_per_step=1, group_size=2, region_seeds=(0,),
                           output_dir=str(tmp_path / "v2"), seed=1)
    trainer = OpLevelTrainer(config, env=env)
    (record,) = trainer.train(progress=False)
    assert np.isfinite(record["loss"])
    state = __import__("torch").load(tmp_path / "v2" / "checkpoint-1" / CHECKPOINT_FILE, weights_only=False)
    assert state["features"] == list(ENTRY_FEATURES_V2) and state["ops"] == list(OPS_V2)
    policy, _ = load_policy(tmp_path / "v2" / "checkpoint-1")
    assert policy.features == ENTRY_FEATURES_V2 and policy.op_list == OPS_V2
    _, info = env.reset(seed=0, options=UNCOVERED)
    consolidator = make_consolidator(f"oplevel:{tmp_path / 'v2' / 'checkpoint-1'}")
    ops = consolidator.ops(info)
    assert len(ops) == info["n_entries"] and all(info["action_mask"][i, op] for i, op in enumerate(ops))
    v1_info = {k: v for k, v in info.items() if k != "bank_context"}  # what a contract-1 env's info looks like
    with pytest.raises(ConfigError, match=r"tool-contract-2 env.*tool-contract-0/1 env.*Retrain it on this env id"):
        consolidator.ops(v1_info)
    save_policy(OpPolicy(), OpLevelConfig(), 3, tmp_path / "v1")  # a contract-1 policy on the v2 env
    with pytest.raises(ConfigError, match=r"tool-contract-0/1 env.*tool-contract-2 env.*Retrain it on this env id"):
        make_consolidator(f"oplevel:{tmp_path / 'v1'}").ops(info)


def test_grpo_ops_listing_offers_synthesize_with_the_bank_context_and_plays_it_through_the_env(
        env: OpLevelWrapper) -> None:
    base = env.unwrapped
    _, info = base.reset(seed=0, options=COVERED)
    region, context, cfg = info["region"], info["bank_context"], base.config
    message = first_user_message(info["family"], region, 6, grammar="ops", context=context)
    assert "Bank context" in message and "| tasks: " in message
    assert all(f"task {c['task']}: {'covered, ' if c['covered'] else 'new (no older entry)'}" in message
               for c in context) and any(c["covered"] for c in context)
    assert "synthesize G - " in system_prompt("ops", info["family"], synthesize=True)
    assert first_user_message(info["family"], region, 6, grammar="ops") not in ("", message)  # contract 1: no context
    state = CommandState.for_region(region, "ops", cfg.max_entry_tokens, cfg.max_emitted, context)
    assert any("synthesize" in allowed for allowed in state.group_allowed)
    for c, allowed in enumerate(state.group_allowed):
        procedures = region[state.groups.index(c)]["kind"] == "procedure"
        op = "synthesize" if "synthesize" in allowed and procedures else "keep"
        state.apply([op, f" {state.letter(c)}"])
    actions, calls = state.apply(["commit"]), []
    while actions:
        for action in actions:
            obs, _, _, _, step = base.step(action)
            calls.append(json.loads(action)["tool"])
        actions = state.answer(str(obs["result"]))
    assert "synthesize" in calls and calls[-1] == "commit" and step["invalid_calls"] == 0
