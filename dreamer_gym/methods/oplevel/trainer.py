"""The RL-trained op-level baseline: a small torch policy over :mod:`dreamer_gym.envs.ops`'s ops.

Not an LLM: in the spirit of memory managers trained with RL to insert, update and delete (Mem-alpha,
Memory-R1), the policy picks one op per entry (drop, keep, merge, abstract) from the entry's features and
the region's mean features; the rules write the text. Training is group-relative REINFORCE, in one file:
each step resets ``regions_per_step`` training regions, samples ``group_size`` op assignments per region
(the group shares its reset: same region, same evaluation episodes), commits each through the env, and
weights each assignment's log-probability by its reward's z-score within the group (GRPO's advantage, no
ratio or clip: one update per batch). ``dreamer-gym train --algo oplevel --config F`` runs it.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
import yaml
from torch import nn
from tqdm.auto import tqdm

from dreamer_gym.envs.ops import DROP, MERGE, OPS, entry_classes, first_members, op_names
from dreamer_gym.envs.wrappers import ENTRY_FEATURES, check_features, feature_names
from dreamer_gym.errors import ConfigError
from dreamer_gym.methods.oplevel.config import OpLevelConfig, RegionRunConfig  # noqa: F401 - RegionRunConfig: its old home
from dreamer_gym.methods.oplevel.wrapper import OpLevelWrapper
from dreamer_gym.training.algorithms import TrainOptions
from dreamer_gym.training.learning_signal import check_batch
from dreamer_gym.training.logs import curve_or_reason

CHECKPOINT_FILE = "policy.pt"


def consensus_ops(kinds: list[str]) -> np.ndarray:
    """The `consensus` rule's ops (consolidators/fixed.py): merge every procedure, drop the rest."""
    return np.array([MERGE if k == "procedure" else DROP for k in kinds], dtype=np.int64)


class OpPolicy(nn.Module):
    """Per-entry logits over the ops from ``[log1p(features), mean log1p(features) over the region]``; its
    width and output are the env's lists (:attr:`~dreamer_gym.methods.oplevel.wrapper.OpLevelWrapper.features`
    and ``op_list``: a contract-2 env's add the bank context's columns and ``synthesize``)."""

    def __init__(self, n_features: int = len(ENTRY_FEATURES), hidden: int = 64, n_ops: int = len(OPS)) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2 * n_features, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(),
                                 nn.Linear(hidden, n_ops))
        # the lists it reads and plays (checkpoints record them); the defaults: contracts 0-1's
        self.features: tuple[str, ...] = ENTRY_FEATURES if n_features == len(ENTRY_FEATURES) else ()
        self.op_list: tuple[str, ...] = OPS if n_ops == len(OPS) else ()

    @classmethod
    def for_lists(cls, features: tuple[str, ...], ops: tuple[str, ...], hidden: int = 64) -> OpPolicy:
        """A policy whose width and output are ``features`` and ``ops`` (an env's, or a checkpoint's)."""
        policy = cls(n_features=len(features), hidden=hidden, n_ops=len(ops))
        policy.features, policy.op_list = tuple(features), tuple(ops)
        return policy

    def forward(self, features: torch.Tensor, mask: torch.Tensor, n_entries: int) -> torch.Tensor:
        """Masked logits ``(max_entries, n_ops)``; ``features`` ``(max_entries, n_features)``."""
        x = torch.log1p(features)
        context = x[:n_entries].mean(0, keepdim=True) if n_entries else torch.zeros_like(x[:1])
        logits = self.net(torch.cat([x, context.expand_as(x)], dim=-1))
        return logits.masked_fill(~mask, -1e9)

    def distribution(self, features: np.ndarray, mask: np.ndarray, n_entries: int,
                     classes: np.ndarray | None = None) -> torch.distributions.Categorical:
        """Over the ops of each entry, or of each class (``classes``: :func:`entry_classes`), whose logits are
        its entries' mean (an op masked for one member is masked for the class)."""
        logits = self(torch.as_tensor(features), torch.as_tensor(mask), n_entries)[:n_entries]
        if classes is not None and n_entries:
            index = torch.as_tensor(classes[:n_entries])
            n_classes = int(index.max()) + 1
            sums = torch.zeros(n_classes, logits.shape[-1]).index_add(0, index, logits)
            counts = torch.bincount(index, minlength=n_classes).unsqueeze(-1)
            logits = sums / counts
        return torch.distributions.Categorical(logits=logits)

    @torch.no_grad()
    def act(self, features: np.ndarray, mask: np.ndarray, n_entries: int, max_entries: int,
            greedy: bool = True, generator: torch.Generator | None = None,
            classes: np.ndarray | None = None) -> np.ndarray:
        """One op per row (padding: drop); greedy = the most likely op; with ``classes``, one op per class."""
        dist = self.distribution(features, mask, n_entries, classes)
        ops = dist.probs.argmax(-1) if greedy else torch.multinomial(dist.probs, 1, generator=generator).squeeze(-1)
        if classes is not None and n_entries:
            ops = ops[torch.as_tensor(classes[:n_entries])]
        action = np.zeros(max_entries, dtype=np.int64)
        action[:n_entries] = ops.numpy()
        return action


def save_policy(policy: OpPolicy, config: OpLevelConfig, step: int, path: Path,
                features: tuple[str, ...] = ENTRY_FEATURES, ops: tuple[str, ...] = OPS) -> Path:
    """Write ``path/policy.pt``: the weights, the config, the step, and the feature and op lists trained on
    (``ops`` recorded from issue 40 on; a checkpoint without it was trained on :data:`OPS`)."""
    path.mkdir(parents=True, exist_ok=True)
    part = path / f".{CHECKPOINT_FILE}.part"  # renamed when whole: an interrupted save leaves no half a policy
    torch.save({"state_dict": policy.state_dict(), "config": config.to_dict(), "step": step,
                "features": list(features), "ops": list(ops)}, part)
    os.replace(part, path / CHECKPOINT_FILE)
    return path


def checkpoint_lists(state: dict[str, Any], source: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The feature and op lists a checkpoint was trained on: one env version's pair (:func:`feature_names` and
    :func:`op_names` of contract 1 or 2), else a ConfigError naming the fix (a checkpoint saved before issue 31)."""
    recorded = state.get("features") or state["state_dict"]["net.0.weight"].shape[1] // 2
    ops = tuple(state.get("ops", OPS))
    for contract in (1, 2):
        features = feature_names(contract)
        same = recorded == len(features) if isinstance(recorded, int) else tuple(recorded) == features
        if same and ops == op_names(contract):
            return features, ops
    check_features(recorded, source)  # an older feature list: raises, naming the fix
    width = recorded if isinstance(recorded, int) else len(recorded)
    raise ConfigError(f"{source} records {len(ops)} ops {list(ops)} beside {width} features: no env version has that "
                      "pair. Retrain it (`dreamer-gym train --algo oplevel`)")


def check_policy(policy: OpPolicy, contract: int, source: str) -> None:
    """Raise unless ``policy`` was trained on the feature and op lists of an env of tool contract ``contract``
    (a contract-1 checkpoint on ``ScienceWorld-v2`` and the reverse are ConfigErrors naming the fix)."""
    check_features(policy.features, source, expected=feature_names(contract))
    if policy.op_list != op_names(contract):
        raise ConfigError(f"{source} plays the ops {list(policy.op_list)}, but this env's are "
                          f"{list(op_names(contract))}: retrain it on this env id (`dreamer-gym train --algo oplevel` with this env_id)")


def load_policy(checkpoint: str | Path) -> tuple[OpPolicy, OpLevelConfig]:
    """A ``checkpoint-STEP`` folder (or its ``policy.pt``) written by the op-level trainer. Its feature and op lists
    are on the policy (``policy.features``, ``policy.op_list``): :func:`check_policy` compares them with an env's."""
    path = Path(checkpoint)
    path = path / CHECKPOINT_FILE if path.is_dir() else path
    if not path.is_file():
        raise ConfigError(f"{checkpoint} is not an op-level checkpoint (no {CHECKPOINT_FILE}); pass a checkpoint-STEP "
                          "folder written by `dreamer-gym train --algo oplevel`")
    state = torch.load(path, map_location="cpu", weights_only=False)
    features, ops = checkpoint_lists(state, str(path))
    config = OpLevelConfig(**state["config"])
    policy = OpPolicy.for_lists(features, ops, hidden=config.hidden)
    policy.load_state_dict(state["state_dict"])
    return policy.eval(), config


def group_advantages(rewards: np.ndarray) -> np.ndarray:
    """Rewards as z-scores within their group; all zero where the group's rewards are equal."""
    std = rewards.std()
    return np.zeros_like(rewards) if std < 1e-9 else (rewards - rewards.mean()) / std


def batch_advantages(groups: list[np.ndarray], scale: str) -> list[np.ndarray]:
    """Each group's advantages under ``scale`` (:data:`~dreamer_gym.methods.oplevel.config.SCALE_REWARDS`):
    ``group`` z-scores within the group; ``batch`` centres within the group and divides by the standard
    deviation of every centred reward of the batch, so a group whose commits differ by 1e-4 keeps advantages
    of ~1e-4 next to a group whose commits differ by 0.4; ``none`` centres only."""
    if scale == "group":
        return [group_advantages(r) for r in groups]
    centred = [r - r.mean() for r in groups]
    if scale == "none":
        return centred
    std = float(np.concatenate(centred).std()) if centred else 0.0
    return [np.zeros_like(c) if std < 1e-9 else c / std for c in centred]


class OpLevelTrainer:
    """Group-relative REINFORCE on :class:`OpLevelWrapper` (see the module docstring)."""

    def __init__(self, config: OpLevelConfig, env: gym.Env | None = None) -> None:
        self.config = config
        torch.manual_seed(config.seed)
        self.rng = np.random.default_rng(config.seed)
        self.generator = torch.Generator().manual_seed(config.seed)
        self.env = env or OpLevelWrapper(config.make_env(), max_entries=config.max_entries)
        features, ops = getattr(self.env, "features", ENTRY_FEATURES), getattr(self.env, "op_list", OPS)
        self.policy = OpPolicy.for_lists(features, ops, hidden=config.hidden)
        self.optimizer = torch.optim.Adam(self.policy.parameters(), lr=config.lr)
        self.out = Path(config.output_dir)

    def save(self, step: int) -> Path:
        """``checkpoint-STEP``: the policy with the env's feature and op lists."""
        return save_policy(self.policy, self.config, step, self.out / f"checkpoint-{step}", self.policy.features,
                           self.policy.op_list)

    def classes(self, region: list[dict[str, Any]]) -> np.ndarray | None:
        """Each entry's class under ``tie: class``; None (one op per entry) under ``tie: entry``."""
        return entry_classes(region) if self.config.tie == "class" and region else None

    def rollout_group(self, seed: int) -> dict[str, Any]:
        """``group_size`` sampled op assignments on the region of reset ``seed``, each committed."""
        features, info = self.env.reset(seed=seed)
        mask, n = info["action_mask"], info["n_entries"]
        region = info["region"][: self.config.max_entries]
        kinds = [e["kind"] for e in region]
        classes = self.classes(region)
        actions, rewards, scores_changed, ops_by_kind = [], [], [], {}
        for _ in range(self.config.group_size):
            action = self.policy.act(features, mask, n, self.config.max_entries, greedy=False, generator=self.generator,
                                     classes=classes)
            self.env.reset(seed=seed)
            _, reward, _, _, step_info = self.env.step(action)
            actions.append(action)
            rewards.append(float(reward))
            scores_changed.append(step_info["score_after"] != step_info["score_before"])
            for kind, op in zip(kinds, action[:n].tolist()):
                ops_by_kind.setdefault(kind, {}).setdefault(self.policy.op_list[op], 0)
                ops_by_kind[kind][self.policy.op_list[op]] += 1
        return {"features": features, "mask": mask, "n": n, "classes": classes, "actions": actions,
                "rewards": np.array(rewards),
                "score_changed": float(np.mean(scores_changed)), "ops_by_kind": ops_by_kind, "family": info["family"]}

    def update(self, groups: list[dict[str, Any]]) -> dict[str, float]:
        losses, entropies = [], []
        scaled = batch_advantages([g["rewards"] for g in groups], self.config.scale_rewards)
        for group, advantages in zip(groups, scaled):
            classes = group["classes"]
            dist = self.policy.distribution(group["features"], group["mask"], group["n"], classes)
            picks = first_members(classes) if classes is not None else np.arange(group["n"])
            for action, advantage in zip(group["actions"], advantages):
                log_prob = dist.log_prob(torch.as_tensor(action[picks])).sum()
                losses.append(-float(advantage) * log_prob / max(len(picks), 1))
            entropies.append(dist.entropy().mean())
        entropy = torch.stack(entropies).mean()
        loss = torch.stack(losses).mean() - self.config.entropy_coef * entropy
        self.optimizer.zero_grad()
        loss.backward()
        grad_norm = float(nn.utils.clip_grad_norm_(self.policy.parameters(), 1.0))
        self.optimizer.step()
        return {"loss": float(loss.detach()), "entropy": float(entropy.detach()), "grad_norm": grad_norm}

    def warm_start(self) -> dict[str, Any]:
        """Fit the policy to the ``warm_start`` rule on every training region (resets only, no commits);
        returns the share of entries whose greedy op is the rule's afterwards."""
        regions = []
        s = self.config.warm_start_smoothing
        for seed in self.config.region_seeds:
            features, info = self.env.reset(seed=seed)
            n, mask = info["n_entries"], info["action_mask"]
            region = info["region"][: self.config.max_entries]
            classes = self.classes(region)
            picks = first_members(classes) if classes is not None else np.arange(n)
            target = torch.as_tensor(consensus_ops([e["kind"] for e in region])[picks])
            allowed = torch.as_tensor(mask[picks], dtype=torch.float32)  # a class's: its first member's
            one_hot = nn.functional.one_hot(target, len(self.policy.op_list)).float()
            soft = (1 - s) * one_hot + s * allowed / allowed.sum(-1, keepdim=True)
            regions.append((features, mask, n, classes, target, soft))
        optimizer = torch.optim.Adam(self.policy.parameters(), lr=self.config.lr)
        for _ in range(self.config.warm_start_steps):
            loss = torch.stack([-(soft * self.policy.distribution(f, m, n, c).logits).sum(-1).mean()
                                for f, m, n, c, _, soft in regions]).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        with torch.no_grad():
            dists = [(self.policy.distribution(f, m, n, c), target) for f, m, n, c, target, _ in regions]
            agree = sum(int((d.probs.argmax(-1) == target).sum()) for d, target in dists)
            entropy = float(torch.cat([d.entropy() for d, _ in dists]).mean())
        return {"warm_start": self.config.warm_start, "warm_start_loss": float(loss.detach()),
                "warm_start_agreement": agree / max(sum(len(r[4]) for r in regions), 1), "warm_start_entropy": entropy}

    def train(self, progress: bool = True) -> list[dict[str, Any]]:
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / "config.yaml").write_text(yaml.safe_dump(self.config.to_dict(), sort_keys=False))
        records = []
        log = (self.out / "log.jsonl").open("a")
        if self.config.warm_start:  # its own file: the log holds RL steps only (the curve reads it)
            (self.out / "warm_start.json").write_text(json.dumps(self.warm_start(), indent=1) + "\n")
            self.save(0)
        try:
            bar = tqdm(range(1, self.config.steps + 1), desc="op-level", unit="step", disable=not progress)
            for step in bar:
                start = time.perf_counter()
                seeds = self.rng.choice(self.config.region_seeds, size=self.config.regions_per_step, replace=False)
                groups = [self.rollout_group(int(s)) for s in seeds]
                played = time.perf_counter() - start
                stats = self.update(groups)
                rewards = np.concatenate([g["rewards"] for g in groups])
                signal = check_batch(rewards.tolist(), [k for k, g in enumerate(groups) for _ in g["rewards"]],
                                     where=f"op-level step {step}")
                bar.set_postfix(reward=f"{rewards.mean():+.3f}", best=f"{rewards.max():+.3f}",
                                flat=f"{signal.flat_groups}/{signal.groups}")
                ops: dict[str, dict[str, int]] = {}
                for g in groups:
                    for kind, counts in g["ops_by_kind"].items():
                        for op, n in counts.items():
                            ops.setdefault(kind, {}).setdefault(op, 0)
                            ops[kind][op] += n
                record = {"step": step, "reward": float(rewards.mean()), "reward_max": float(rewards.max()),
                          "score_changed": float(np.mean([g["score_changed"] for g in groups])),
                          "regions": [int(s) for s in seeds], "families": [g["family"] for g in groups],
                          "entries": int(sum(g["n"] for g in groups)),
                          "ops_by_kind": ops, "seconds_play": played,
                          "seconds_update": time.perf_counter() - start - played, **stats, **signal.record()}
                log.write(json.dumps(record) + "\n")
                log.flush()
                records.append(record)
                self.save(step)
        finally:
            log.close()
        return records

    def close(self) -> None:
        self.env.close()


def run(config: OpLevelConfig, options: TrainOptions) -> int:
    """``dreamer-gym train --algo oplevel``: train, then say where the curve and the checkpoints are."""
    trainer = OpLevelTrainer(config)
    try:
        records = trainer.train(progress=not options.quiet)
    finally:
        trainer.close()
    out = Path(config.output_dir)
    print(f"curve: {curve_or_reason(out, 'op-level')}")
    if records:
        last = records[-1]
        print(f"step {last['step']}: reward {last['reward']:+.4f}, best in batch {last['reward_max']:+.4f}; "
              f"checkpoints in {out}")
    return 0
