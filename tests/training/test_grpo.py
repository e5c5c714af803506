"""Real GRPO steps on the real env (the pure-Python toy suite's: the trainer under test, not the simulator; GRPO on
ScienceWorld is test_grpo_v2's and test_trl_bridge's) with a tiny random Llama that uses SmolLM2's real tokenizer
and chat template: parameters change, the loss is finite, only the policy's decision tokens carry loss, a group
shares its region and episodes, a resumed run takes the same next step as an uninterrupted one, the drop grammar
commits what was not dropped and the ops grammar the groups' ops."""
from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest
import torch

from dreamer_gym.methods.grpo.commands import CommandState
from dreamer_gym.methods.grpo.config import GRPOConfig
from dreamer_gym.methods.grpo.trainer import GRPOTrainer, constrained_logprobs, decision_batch, load_policy
from dreamer_gym.training.logs import plot_curve, read_log

pytestmark = pytest.mark.jvm
CHEAP = {"eval_in_family": 1, "eval_other": 1, "service": "inprocess"}  # the reward service in this process


def _config(model: Path, out: Path, **kw: object) -> GRPOConfig:
    base = dict(model=str(model), output_dir=str(out), steps=2, groups_per_step=1, num_generations=2, max_turns=3,
                lora_r=4, learning_rate=1e-2, env_overrides=CHEAP, save_every=1, seed=3)
    return GRPOConfig(**{**base, **kw})


def _trainable(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}


def test_grpo_step_updates_policy_and_only_decision_tokens_carry_loss(tiny_model_dir: Path, toy_inprocess: dict,
                                                                      tmp_path: Path) -> None:
    """On the toy suite (the step's masks, log-probs and update are under test; this collector's rollouts on
    ScienceWorld are test_grpo_v2's, GRPO steps on it test_trl_bridge's: CI time)."""
    trainer = GRPOTrainer(_config(tiny_model_dir, tmp_path, num_generations=3, env_overrides=toy_inprocess,
                                  min_region_entries=2))
    try:
        before = _trainable(trainer.model)
        resets = trainer.resets(0)
        rollouts = trainer.collector.collect(resets, 3, torch.Generator().manual_seed(0))
        # the group shares one reset: same region (prompt), same bank v0 and the same evaluation episodes
        assert len({tuple(r.tokens[: r.prompt_len]) for r in rollouts}) == 1
        assert len({r.info["bank_before"] for r in rollouts}) == 1
        assert len({str([(e["family"], e["variation"]) for e in r.info["episodes"]]) for r in rollouts}) == 1
        assert all(math.isfinite(r.reward) for r in rollouts)

        tok = trainer.tokenizer
        for r in rollouts:
            completion = r.completion
            assert len(completion) == len(r.policy) == len(r.allowed) == len(r.logprobs) == len(r.env_mask)
            policy_text = tok.decode([t for t, p in zip(completion, r.policy) if p])
            env_text = tok.decode([t for t, p in zip(completion, r.policy) if not p])
            for command in r.commands:  # what the policy wrote is exactly its commands
                assert command.split()[0] in policy_text
            kept = sum(len(c.split()) - 1 for c in r.commands if c.startswith("keep"))
            assert len(r.kept_labels) == kept and all("/" in x or x in ("procedure", "insight", "fact", "pitfall")
                                                      for x in r.kept_labels)
            assert "Kept so far" not in policy_text
            if len(r.commands) > 1:
                assert "Kept so far" in env_text
            for k, p in enumerate(r.policy):  # an env token allows nothing; a policy token was allowed
                assert (r.allowed[k] == ()) == (not p)
                if p:
                    assert completion[k] in r.allowed[k]
                if p and len(r.allowed[k]) == 1:
                    assert r.logprobs[k] == 0.0  # forced: no choice, no gradient

        advantages = trainer.advantages(rollouts)
        batch = decision_batch(rollouts, advantages)
        for row, pos in zip(batch.rows.tolist(), batch.positions.tolist()):
            r = rollouts[row]
            k = pos - r.prompt_len
            assert r.policy[k] and len(r.allowed[k]) > 1  # the loss sees decision tokens only
        assert len(batch.rows) == sum(1 for r in rollouts for p, a in zip(r.policy, r.allowed) if p and len(a) > 1)
        # the log-probs recomputed for the loss are the ones sampled with (same constrained policy)
        with torch.no_grad():
            logp, entropy = constrained_logprobs(trainer.model, rollouts, batch, 1.0)
        assert torch.allclose(logp, batch.old_logprobs, atol=1e-4)
        assert torch.all(entropy >= 0)

        # the advantages must differ within the group for a gradient; force it if this draw tied
        if len({r.reward for r in rollouts}) == 1:
            advantages = [[float(i - 1)] * len(a) for i, a in enumerate(advantages)]
        metrics = trainer.update(rollouts, advantages)
        assert math.isfinite(metrics["loss"]) and metrics["grad_norm"] > 0
        after = _trainable(trainer.model)
        assert any(not torch.equal(before[n], after[n]) for n in before)
    finally:
        trainer.close()


def test_resume_takes_the_same_next_step_and_a_checkpoint_loads_as_a_policy(
        tiny_model_dir: Path, toy_inprocess: dict, tmp_path: Path) -> None:
    """On the toy suite (``toy_inprocess``: real env, pool and reward service, a commit in milliseconds): what is
    under test is the trainer's state, not the simulator's (the steps above play ScienceWorld)."""
    def config(out: Path, **kw: object) -> GRPOConfig:
        return _config(tiny_model_dir, out, env_overrides=toy_inprocess, min_region_entries=2, **kw)

    whole = GRPOTrainer(config(tmp_path / "whole"))
    try:
        records = whole.train(progress=False)
        final = _trainable(whole.model)
    finally:
        whole.close()
    assert [r["step"] for r in records] == [1, 2]

    first = GRPOTrainer(config(tmp_path / "split", steps=1))
    try:
        first.train(progress=False)
        saved = _trainable(first.model)
    finally:
        first.close()
    checkpoint = tmp_path / "split" / "checkpoint-1"
    assert (checkpoint / "adapter_model.safetensors").is_file()
    model, _ = load_policy(str(tiny_model_dir), adapter=checkpoint)  # the checkpoint is the trained policy
    loaded = _trainable(model)
    assert saved.keys() == loaded.keys() and all(torch.equal(saved[n], loaded[n]) for n in saved)
    assert any(not torch.equal(saved[n], final[n]) for n in saved)  # step 2 moved it: the check below means something

    second = GRPOTrainer(config(tmp_path / "split", seed=3))
    try:
        resumed = second.train(progress=False)
        assert [r["step"] for r in resumed] == [2]
        for key in ("reward", "loss", "commands", "grad_norm", "entropy"):
            assert resumed[0][key] == records[1][key], key
        again = _trainable(second.model)
        assert all(torch.equal(final[n], again[n]) for n in final)
    finally:
        second.close()

    logged = read_log(tmp_path / "split" / "log.jsonl")
    assert [r["step"] for r in logged] == [1, 2]
    assert {"reward", "kl", "entropy", "valid_call_rate", "response_tokens", "tool_mix", "seconds", "kept_labels",
            "read_then_kept"} <= set(logged[-1])
    assert plot_curve(tmp_path / "split" / "log.jsonl", tmp_path / "curve.png").stat().st_size > 1000
    assert any((tmp_path / "split" / "tb").iterdir())  # TensorBoard event file


def test_grammar_numbers_are_prefix_free_and_translate_to_tool_calls() -> None:
    ids = [f"id{i}" for i in range(12)]
    state = CommandState(ids)
    assert state.options([]) == ["read", "keep", "commit"]
    numbers = state.options(["keep"])
    assert numbers[0] == " 01" and len(numbers) == 12 and len({len(n) for n in numbers}) == 1
    assert state.apply(["keep", " 03", " 12"]) == ['{"tool": "keep", "ids": ["id2", "id11"]}']
    assert " 03" not in state.options(["keep"]) and None not in state.options(["keep"])
    assert state.options(["keep", " 01"])[-1] is None  # a list may end after one number
    assert state.key() == "3,12"


def test_drop_grammar_edits_down_from_the_whole_region() -> None:
    ids = [f"id{i}" for i in range(4)]
    state = CommandState.of(ids, "drop")
    assert state.options([]) == ["read", "drop", "commit"] and state.holding == 4
    assert state.options(["drop", " 2"]) == [None]  # one entry per drop: each is its own decision
    assert state.apply(["drop", " 2"]) == [] and state.apply(["drop", " 4"]) == []  # no env call: an edit buffer
    assert "keeps 2 of 4" in state.note and state.holding == 2 and state.key() == "2,4"
    assert " 2" not in state.options(["drop"])
    assert state.apply(["commit"]) == ['{"tool": "keep", "ids": ["id0", "id2"]}', '{"tool": "commit"}']
    nothing = CommandState.of(ids, "drop")  # no drops: the commit keeps the region whole (keep-all)
    assert nothing.apply(["commit"])[0] == '{"tool": "keep", "ids": ["id0", "id1", "id2", "id3"]}'
    every = CommandState.of(ids, "drop")
    for i in range(1, 5):
        every.apply(["drop", f" {i}"])
    assert every.options([]) == ["read", "commit"] and every.apply(["commit"]) == ['{"tool": "commit"}']
    with pytest.raises(ValueError, match="grammar"):
        CommandState.of(ids, "rewrite")


def test_drop_grammar_rollouts_commit_what_was_not_dropped(tiny_model_dir: Path, toy_inprocess: dict,
                                                           tmp_path: Path) -> None:
    """On the toy suite (what is under test is the grammar's edit buffer and its commit, not the simulator)."""
    trainer = GRPOTrainer(_config(tiny_model_dir, tmp_path, num_generations=3, grammar="drop", max_turns=2,
                                  env_overrides=toy_inprocess, min_region_entries=2))
    try:
        rollouts = trainer.collector.collect(trainer.resets(0), 3, torch.Generator().manual_seed(1))
        prompt = trainer.tokenizer.decode(rollouts[0].tokens[: rollouts[0].prompt_len])
        assert "drop N - " in prompt and "keep N M" not in prompt
        for r in rollouts:
            n = r.info["size_before"]["entries"]
            dropped = {x for c in r.commands if c.startswith("drop") for x in c.split()[1:]}
            assert len(r.dropped_labels) == len(dropped)
            assert r.info["size_after"]["entries"] == n - len(dropped) == len(r.kept_labels)
            assert r.keep_all == (not dropped)  # nothing dropped = the region committed unchanged
            assert math.isfinite(r.reward)
    finally:
        trainer.close()


def test_ops_grammar_decides_one_op_per_group_in_order_then_plays_the_op_level_rules() -> None:
    """Under ``ops`` the letters are forced and only the op is a decision; ``commit`` is offered once every
    group has an op, and it plays exactly the op-level wrapper's calls (``plan_calls``) for those ops."""
    import json

    from dreamer_gym.envs.consolidation import ConsolidationEnv
    from dreamer_gym.envs.ops import DROP, KEEP, MERGE, entry_classes, plan_calls

    env = ConsolidationEnv.experiment("MemoryConsolidation-ScienceWorld-v1", **CHEAP)
    try:
        _, info = env.reset(seed=4)
    finally:
        env.close()
    region, cfg = info["region"], env.config
    groups = entry_classes(region).tolist()
    state = CommandState.for_region(region, "ops", cfg.max_entry_tokens, cfg.max_emitted)
    assert len(state.group_allowed) == max(groups) + 1 >= 3 and state.holding == len(region)
    with pytest.raises(ValueError, match="next group is A"):  # groups go in order
        state.apply(["drop", " B"])
    assert [CommandState.letter(c) for c in (0, 25, 26, 27)] == ["A", "Z", "AA", "AB"]
    ops = {}
    for c, allowed in enumerate(state.group_allowed):
        assert state.options([]) == list(allowed) and "commit" not in state.options([])
        assert state.options(["drop"]) == [f" {chr(65 + c)}"]  # the letter is forced: the next group in order
        op = "merge" if "procedure" in region[groups.index(c)]["kind"] else ("drop" if c % 2 else "keep")
        assert state.apply([op, f" {chr(65 + c)}"]) == []  # no env call until the commit
        assert state.options([op, f" {chr(65 + c)}"]) == [None]
        ops[c] = op
    assert state.options([]) == ["commit"] and state.key() == ",".join(f"{chr(65 + c)}:{o}" for c, o in ops.items())
    expected, _ = plan_calls([{"drop": DROP, "keep": KEEP, "merge": MERGE}[ops[g]] for g in groups], region,
                             cfg.max_entry_tokens, cfg.max_emitted)
    assert state.apply(["commit"]) == [json.dumps(c) for c in expected] + ['{"tool": "commit"}']
    with pytest.raises(ValueError, match="for_region"):
        CommandState.of([e["id"] for e in region], "ops")


def test_ops_grammar_rollouts_commit_the_groups_ops(tiny_model_dir: Path, toy_inprocess: dict, tmp_path: Path) -> None:
    """On the toy suite (what is under test is the grammar's group ops, their commit and the step's log, not the
    simulator: ops rollouts on ScienceWorld are test_grpo_v2's); the rollouts checked are the ones a real
    ``train_step`` collected and updated on (CI time)."""
    trainer = GRPOTrainer(_config(tiny_model_dir, tmp_path, num_generations=3, grammar="ops", max_turns=6,
                                  env_overrides=toy_inprocess, min_region_entries=2))
    rollouts: list = []
    try:
        collect = trainer.collector.collect

        def collect_and_keep(*args: object, **kwargs: object) -> list:
            rollouts.extend(collected := collect(*args, **kwargs))
            return collected

        trainer.collector.collect = collect_and_keep
        record = trainer.train_step()
        assert len(rollouts) == 3
        prompt = trainer.tokenizer.decode(rollouts[0].tokens[: rollouts[0].prompt_len])
        assert "merge G - " in prompt and "A. " in prompt and "keep N M" not in prompt
        for r in rollouts:
            n = r.info["size_before"]["entries"]
            assert r.commands[-1] == "commit" and not r.forced_commit and r.errors == [None] * len(r.commands)
            assert [c.split()[1] for c in r.commands[:-1]] == [chr(65 + k) for k in range(len(r.commands) - 1)]
            assert len(r.group_ops) == n and r.info["last_error"] is None
            played = {c.split()[1]: c.split()[0] for c in r.commands[:-1]}
            assert r.keep_all == (set(played.values()) == {"keep"})
            assert math.isfinite(r.reward)
        assert sum(record["group_ops"].values()) == sum(r.info["size_before"]["entries"] for r in rollouts)
    finally:
        trainer.close()


def test_config_errors_name_the_field(tmp_path: Path) -> None:
    from dreamer_gym.errors import ConfigError

    with pytest.raises(ConfigError, match="loss_type"):
        GRPOConfig(loss_type="ppo")
    with pytest.raises(ConfigError, match="num_generations"):
        GRPOConfig(num_generations=1)
    with pytest.raises(ConfigError, match="advantage"):
        GRPOConfig(advantage="ppo")
    with pytest.raises(ConfigError, match="grammar"):
        GRPOConfig(grammar="rewrite")
    bad = tmp_path / "bad.yaml"
    bad.write_text("stepz: 3\n")
    with pytest.raises(ConfigError, match="stepz"):
        GRPOConfig.load(bad)
    assert dataclasses.replace(GRPOConfig(), steps=3).steps == 3


@pytest.mark.heavy  # ~60 s (issue 39: CI time); a GRPO step, its checkpoint as a policy and resume stay in CI
def test_cli_trains_then_evaluates_the_checkpoint_greedily(tiny_model_dir: Path, tmp_path: Path) -> None:
    """`dreamer-gym train --algo grpo --config F` writes a checkpoint, a log and a curve; `dreamer-gym evaluate
    --consolidator grpo:CHECKPOINT` plays it greedily through the env (twice: the same commands)."""
    import json
    import os
    import subprocess
    import sys

    import yaml

    config = tmp_path / "grpo.yaml"
    config.write_text(yaml.safe_dump({**_config(tiny_model_dir, tmp_path / "run", steps=1).to_dict()}))
    run = subprocess.run([sys.executable, "-m", "dreamer_gym.cli", "train", "--algo", "grpo", "--config", str(config),
                          "--quiet"], capture_output=True, text=True, timeout=600, env=dict(os.environ))
    assert run.returncode == 0, run.stderr[-3000:]
    checkpoint = tmp_path / "run" / "checkpoint-1"
    assert (checkpoint / "trainer_state.json").is_file() and (tmp_path / "run" / "curve.png").is_file()
    assert "score changed in" in run.stdout and "| steps 1-1 |" in run.stdout  # the learning summary

    records = []
    for k in range(2):
        out = tmp_path / f"eval{k}.json"
        ev = subprocess.run([sys.executable, "-m", "dreamer_gym.cli", "evaluate", "--consolidator", f"grpo:{checkpoint}",
                             "--families", "use-thermometer", "--eval-in-family", "1", "--eval-other", "0", "--seeds", "0",
                             "--quiet", "--out", str(out)], capture_output=True, text=True, timeout=600,
                            env=dict(os.environ))
        assert ev.returncode == 0, ev.stderr[-3000:]
        records.append(json.loads(out.read_text()))
    [first], [second] = records[0]["runs"], records[1]["runs"]
    assert first["tool_calls"] >= 1 and "error" not in first
    assert {k: first[k] for k in ("score_after", "size_after", "tool_calls")} == \
        {k: second[k] for k in ("score_after", "size_after", "tool_calls")}  # greedy: deterministic


def test_a_checkpoint_carries_its_grammar_into_evaluation(tmp_path: Path) -> None:
    """``grpo-drop`` is the untrained model under ``drop``; given a checkpoint, the checkpoint's grammar wins
    (a ``keep`` policy evaluated under ``drop`` would be scored on moves it never learned)."""
    import json

    from dreamer_gym.consolidators import make_consolidator

    (tmp_path / "trainer_state.json").write_text(json.dumps({"config": {"grammar": "keep"}}))
    assert make_consolidator("grpo-drop").grammar == "drop"
    assert make_consolidator("grpo-ops").grammar == "ops"
    assert make_consolidator(f"grpo-drop:{tmp_path}").grammar == "keep"
    assert make_consolidator(f"grpo:{tmp_path}").grammar == "keep"
    (tmp_path / "trainer_state.json").write_text(json.dumps({"config": {"grammar": "drop"}}))
    assert make_consolidator(f"grpo:{tmp_path}").grammar == "drop"
