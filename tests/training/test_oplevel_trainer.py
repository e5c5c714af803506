"""The op-level baseline and Stable-Baselines3 on the real env: real updates change the policy, a
checkpoint plays the same greedy ops as a consolidator (on the toy suite), and MaskablePPO trains through the
wrapper as is (on ScienceWorld)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import dreamer_gym  # noqa: F401
from dreamer_gym.consolidators import make_consolidator, run_episode
from dreamer_gym.envs.ops import entry_classes, first_members
from dreamer_gym.envs.wrappers import ENTRY_FEATURES
from dreamer_gym.errors import ConfigError
from dreamer_gym.methods.oplevel.trainer import OpLevelConfig, OpLevelTrainer, OpPolicy, group_advantages, load_policy
from dreamer_gym.methods.oplevel.wrapper import OpLevelWrapper

from helpers import make_env

pytestmark = pytest.mark.jvm
ENV_ID = "MemoryConsolidation-ScienceWorld-v1"


def test_group_advantages_are_zero_for_a_flat_group_and_z_scores_otherwise() -> None:
    assert group_advantages(np.array([0.1, 0.1, 0.1])).tolist() == [0.0, 0.0, 0.0]
    adv = group_advantages(np.array([0.0, 1.0]))
    assert adv.tolist() == [-1.0, 1.0]


def test_oplevel_steps_change_the_policy_and_their_checkpoints_play_as_consolidators(tmp_path: Path,
                                                                                    toy_inprocess: dict) -> None:
    """One step under each tie (``entry``, ``class``), on one env on the toy suite (``toy_inprocess``: the real
    env, pool and reward service, a commit in milliseconds; MaskablePPO below plays ScienceWorld)."""
    env = OpLevelWrapper(make_env(ENV_ID, **toy_inprocess))
    try:
        family = env.reset(seed=0)[1]["family"]
        for tie in ("entry", "class"):
            out = tmp_path / tie
            config = OpLevelConfig(steps=1, regions_per_step=1, group_size=3, region_seeds=(0,), output_dir=str(out),
                                   seed=1, tie=tie)
            trainer = OpLevelTrainer(config, env=env)  # not closed: that would close the shared env
            before = [p.detach().clone() for p in trainer.policy.parameters()]
            (record,) = trainer.train(progress=False)
            after = list(trainer.policy.parameters())
            assert np.isfinite(record["loss"]) and record["families"] == [family], tie
            assert sum(sum(c.values()) for c in record["ops_by_kind"].values()) == 3 * record["entries"]
            if record["reward_max"] > record["reward"] + 1e-9:  # rewards differ in the group: a real gradient
                assert any(not torch.equal(a, b) for a, b in zip(before, after)), tie
            policy, loaded = load_policy(out / "checkpoint-1")
            assert loaded == config
            saved, trained = policy.state_dict(), trainer.policy.state_dict()  # the checkpoint holds the trained weights
            assert saved.keys() == trained.keys() and all(torch.equal(saved[k], trained[k]) for k in saved), tie
            consolidator = make_consolidator(f"oplevel:{out / 'checkpoint-1'}")
            features, info = env.reset(seed=0)
            mask = info["action_mask"]
            classes = entry_classes(info["region"]) if tie == "class" else None
            greedy = trainer.policy.act(features, mask, info["n_entries"], 50, classes=classes)[: info["n_entries"]]
            assert consolidator.ops(info) == greedy.tolist(), tie
            final = run_episode(env.env, consolidator, seed=0)
            assert final["last_error"] is None and final["invalid_calls"] == 0, tie
    finally:
        env.close()


def test_a_class_tied_policy_plays_one_op_per_kind_and_tags_and_credits_each_class_once() -> None:
    """tie: class samples one op per entry class (kind + rule tags); an assignment's log-probability sums one
    term per class, not per entry, so a class of 20 insights is one choice."""
    region = [{"kind": "insight", "tags": ["score-jump", "variation:3"]}, {"kind": "fact", "tags": ["location"]},
              {"kind": "insight", "tags": ["score-jump"]}, {"kind": "insight", "tags": ["failure"]},
              {"kind": "procedure", "tags": ["verbatim"]}]
    classes = entry_classes(region)
    assert classes.tolist() == [0, 1, 0, 2, 3]  # the variation tag is not a rule tag: entries 0 and 2 share a class
    policy = OpPolicy()
    features = torch.rand(50, len(ENTRY_FEATURES)).numpy() * 3
    mask = np.ones((50, 4), dtype=bool)
    mask[4, 3] = False  # abstract masked on the one procedure: masked for its class
    gen = torch.Generator().manual_seed(0)
    for _ in range(20):
        action = policy.act(features, mask, 5, 50, greedy=False, generator=gen, classes=classes)
        assert action[0] == action[2] and action[4] != 3 and not action[5:].any()
    dist = policy.distribution(features, mask, 5, classes)
    assert dist.probs.shape == (4, 4) and float(dist.probs[3, 3]) < 1e-6
    assert first_members(classes).tolist() == [0, 1, 3, 4]
    with pytest.raises(ConfigError, match="tie"):
        OpLevelConfig(tie="kind")


def test_maskable_ppo_trains_on_the_op_level_wrapper_unchanged() -> None:
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.wrappers import ActionMasker  # noqa: F401 - the wrapper exposes action_masks() itself

    env = OpLevelWrapper(make_env(ENV_ID, eval_in_family=1, eval_other=0, service="inprocess"))
    model = MaskablePPO("MlpPolicy", env, n_steps=2, batch_size=2, n_epochs=1, seed=0, device="cpu",
                        policy_kwargs={"net_arch": [32]})
    before = [p.detach().clone() for p in model.policy.parameters()]
    model.learn(total_timesteps=2)  # one rollout of two commits, one update
    assert model.num_timesteps == 2
    assert any(not torch.equal(a, b) for a, b in zip(before, model.policy.parameters()))
    obs, info = env.reset(seed=3)
    action, _ = model.predict(obs, action_masks=env.action_masks(), deterministic=True)
    assert env.action_masks().reshape(50, -1)[np.arange(50), action].all()  # never a masked op
    env.close()


def test_a_consensus_warm_start_makes_the_greedy_policy_the_rule_before_any_commit(tmp_path: Path) -> None:
    """warm_start: consensus fits the policy to merge-procedures/drop-the-rest on the training regions' features
    (resets only), smoothed so that it still samples other ops; RL then starts from the rule. No commit is made
    (no simulator needed)."""
    from dreamer_gym.methods.oplevel.trainer import consensus_ops

    config = OpLevelConfig(region_seeds=(0, 1, 2), output_dir=str(tmp_path), warm_start="consensus",
                           warm_start_steps=150, seed=0)
    trainer = OpLevelTrainer(config, env=OpLevelWrapper(make_env(ENV_ID, service="inprocess")))
    try:
        stats = trainer.warm_start()
        assert stats["warm_start_agreement"] >= 0.95, stats
        assert stats["warm_start_entropy"] > 0.3, stats  # smoothed: a group's samples still differ, RL can move it
        features, info = trainer.env.reset(seed=3)  # a region it was not fitted on
        n = info["n_entries"]
        greedy = trainer.policy.act(features, info["action_mask"], n, 50)[:n]
        rule = consensus_ops([e["kind"] for e in info["region"][:n]])
        assert (greedy == rule).mean() >= 0.9
    finally:
        trainer.close()
    with pytest.raises(ConfigError, match="warm_start must be one of"):
        OpLevelConfig(warm_start="oracle")


def test_batch_scaled_advantages_keep_the_magnitudes_that_group_z_scores_erase() -> None:
    """Under group z-scores a group split by the size term alone (1e-4) weighs as much as one split by a 0.4
    loss; batch scaling keeps their ratio (issue 31: the group z-score drove every run to merge-all)."""
    from dreamer_gym.methods.oplevel.trainer import batch_advantages

    tiny, large = np.array([0.0001, 0.0]), np.array([0.0, -0.4])
    z = batch_advantages([tiny, large], "group")
    assert np.abs(z[0]).max() == pytest.approx(np.abs(z[1]).max())
    b = batch_advantages([tiny, large], "batch")
    assert np.abs(b[1]).max() / np.abs(b[0]).max() == pytest.approx(4000.0)
    assert all(abs(a.sum()) < 1e-12 for a in b)
    assert batch_advantages([np.array([0.2, 0.2])], "batch")[0].tolist() == [0.0, 0.0]
    with pytest.raises(ConfigError, match="scale_rewards must be one of"):
        OpLevelConfig(scale_rewards="rank")
