"""What an op-level run names (one frozen dataclass per method; YAML files only supply values): torch-free, so
``train --algo oplevel --help`` and a config check need no model code."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Self

import gymnasium as gym
import yaml

from dreamer_gym.errors import ConfigError

WARM_STARTS = ("", "consensus")
TIES = ("entry", "class")
SCALE_REWARDS = ("group", "batch", "none")


@dataclass(frozen=True)
class RegionRunConfig:
    """What every op-level run names: the id, its overrides, the training regions, the seed and the output."""

    env_id: str = field(default="MemoryConsolidation-ScienceWorld-v1", metadata={"help": "the env id trained on"})
    env_overrides: dict[str, Any] = field(default_factory=dict, metadata={
        "help": "ConsolidationEnv.experiment overrides (not the id: its rewards are not comparable)"})
    region_seeds: tuple[int, ...] = field(default=tuple(range(24)), metadata={
        "help": "the training regions: resets of env_id with these seeds"})
    seed: int = field(default=0, metadata={"help": "seeds the policy, the sampling and the region draws"})
    output_dir: str = field(default="runs/oplevel", metadata={"help": "checkpoints and log.jsonl"})

    def __post_init__(self) -> None:
        if not self.region_seeds:
            raise ConfigError(f"{type(self).__name__}.region_seeds is empty; list the reset seeds of the training regions")
        object.__setattr__(self, "region_seeds", tuple(int(s) for s in self.region_seeds))

    @classmethod
    def load(cls, path: str | Path, **overrides: Any) -> Self:
        """The YAML file's fields, with the non-None ``overrides`` on top; unknown fields are an error."""
        data = yaml.safe_load(Path(path).read_text()) or {}
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"{path}: unknown {cls.__name__} field(s) {unknown}; known: {sorted(known)}")
        data.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**data)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "region_seeds": list(self.region_seeds)}

    def make_env(self) -> gym.Env:
        """The env trained on: ``gym.make`` of the id itself; with ``env_overrides``, as GRPO's,
        ``ConsolidationEnv.experiment`` (any field, a smaller evaluation or another suite; where an override
        changes what the reward measures its commits say ``comparable: False``)."""
        if not self.env_overrides:
            return gym.make(self.env_id)
        from dreamer_gym.envs.consolidation import ConsolidationEnv

        return ConsolidationEnv.experiment(self.env_id, **self.env_overrides)


@dataclass(frozen=True)
class OpLevelConfig(RegionRunConfig):
    """One op-level run; YAML files in ``dreamer_gym/data/configs/oplevel-*.yaml`` hold these fields."""

    steps: int = field(default=12, metadata={"help": "updates (each one batch of regions_per_step groups)"})
    regions_per_step: int = field(default=4, metadata={"help": "regions (groups) per step"})
    group_size: int = field(default=8, metadata={"help": "sampled op assignments (commits) per region"})
    hidden: int = field(default=64, metadata={"help": "hidden width of the policy MLP"})
    lr: float = field(default=3e-3, metadata={"help": "Adam learning rate"})
    entropy_coef: float = field(default=0.01, metadata={"help": "entropy bonus"})
    max_entries: int = field(default=50, metadata={"help": "entries the wrapper's action covers"})
    # "consensus": before RL, fit the policy to the consensus rule (merge procedures, drop the rest) on the
    # training regions' features by cross-entropy (no commits); RL then starts from the rule, not from uniform
    warm_start: str = field(default="", metadata={"help": "'' (uniform start) | consensus (fit the rule first)"})
    warm_start_steps: int = field(default=300, metadata={"help": "cross-entropy steps of the warm start"})
    # the warm start's targets keep this much probability on the other allowed ops (label smoothing): a policy
    # fitted to one-hot targets samples the same assignment G times, its group advantages are all zero, and
    # RL never moves it (measured: entropy 0.01, 24 steps without a change)
    warm_start_smoothing: float = field(default=0.3, metadata={
        "help": "probability the warm start's targets leave on the other allowed ops"})
    # "entry": one op sampled per entry (an assignment of ~25 independent draws, one reward for all of them);
    # "class": one op per entry class (kind and rule tags: ~5 draws a region, entries of a class share it), the
    # per-entry logits averaged over the class. Credit for one reward is spread over 5 choices, not 25.
    tie: str = field(default="entry", metadata={"help": "entry (one op per entry) | class (one op per entry class)"})
    # How a group's rewards become advantages (TRL's `scale_rewards` names). "group": z-scores within the group,
    # the old default: a group whose commits differ by the size term alone (1e-4) gets advantages of +-1, as
    # large as a group where one op loses 0.4, so an op with many tiny gains and rare large losses wins while
    # its mean reward is negative (issue 31: on window regions every run went to merge-all, mean -0.013).
    # "batch": centred within the group, divided by the batch's standard deviation (magnitudes kept).
    scale_rewards: str = field(default="group", metadata={
        "help": "group (z-scores within each group) | batch (centred per group, scaled by the batch's std) | none"})

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("steps", "regions_per_step", "hidden", "max_entries"):
            if getattr(self, name) < 1:
                raise ConfigError(f"OpLevelConfig.{name} must be >= 1, got {getattr(self, name)}")
        if not 0.0 <= self.warm_start_smoothing < 1.0:
            raise ConfigError(f"OpLevelConfig.warm_start_smoothing must be in [0, 1), got {self.warm_start_smoothing}")
        if self.warm_start not in WARM_STARTS:
            raise ConfigError(f"OpLevelConfig.warm_start must be one of {list(WARM_STARTS)}, got {self.warm_start!r}")
        if self.scale_rewards not in SCALE_REWARDS:
            raise ConfigError(f"OpLevelConfig.scale_rewards must be one of {list(SCALE_REWARDS)}, got "
                              f"{self.scale_rewards!r}")
        if self.tie not in TIES:
            raise ConfigError(f"OpLevelConfig.tie must be one of {list(TIES)}, got {self.tie!r}")
        if self.group_size < 2:
            raise ConfigError(f"OpLevelConfig.group_size must be >= 2 (advantages are relative), got {self.group_size}")
