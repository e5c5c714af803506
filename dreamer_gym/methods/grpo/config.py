"""The GRPO run's configuration: one dataclass is the schema (``dreamer_gym/data/configs/grpo-*.yaml`` fill it)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from dreamer_gym.errors import ConfigError

LOSS_TYPES = ("grpo", "dapo", "dr_grpo")
SCALE_REWARDS = ("group", "batch", "none")


@dataclass(frozen=True)
class GRPOConfig:
    """What a GRPO run on a ``MemoryConsolidation-*`` id does. The env's reward fields stay the id's (frozen);
    ``env_overrides`` is for tests and cheap experiments (its commits say ``comparable: False``)."""

    env_id: str = field(default="MemoryConsolidation-ScienceWorld-v1", metadata={"help": "the env id trained on"})
    env_overrides: dict[str, Any] = field(default_factory=dict, metadata={
        "help": "ConsolidationEnv.experiment overrides (not the id: its rewards are not comparable)"})
    families: tuple[str, ...] = field(default=(), metadata={"help": "train on these families only (empty = all)"})
    min_region_entries: int = field(default=8, metadata={"help": "resample resets whose region is smaller"})
    model: str = field(default="smollm2-135m", metadata={"help": "policy model: alias, local folder or hub id"})
    lora_r: int = field(default=16, metadata={"help": "LoRA rank (0 = train every weight)"})
    lora_alpha: int = field(default=32, metadata={"help": "LoRA alpha"})
    lora_targets: tuple[str, ...] = field(default=("q_proj", "k_proj", "v_proj", "o_proj"),
                                          metadata={"help": "the modules LoRA adapts"})
    steps: int = field(default=20, metadata={"help": "GRPO steps (optimizer updates)"})
    groups_per_step: int = field(default=2, metadata={"help": "regions (groups) per step"})
    num_generations: int = field(default=4, metadata={"help": "rollouts per group (G): one reset, G policies"})
    max_turns: int = field(default=6, metadata={"help": "policy turns per rollout; then the trainer commits"})
    preview_words: int = field(default=14, metadata={"help": "words of each entry in the region listing"})
    grammar: str = field(default="keep", metadata={
        "help": "command grammar: keep (build up from nothing) | drop (edit down from the whole region) | ops (one op "
                "per group of entries: drop, keep, merge, abstract)"})
    temperature: float = field(default=1.0, metadata={"help": "sampling temperature of the rollouts"})
    learning_rate: float = field(default=2e-5, metadata={"help": "AdamW learning rate"})
    weight_decay: float = field(default=0.0, metadata={"help": "AdamW weight decay"})
    max_grad_norm: float = field(default=1.0, metadata={"help": "gradient clipping norm"})
    grad_accumulation: int = field(default=1, metadata={"help": "micro-batches per step (rollouts split evenly)"})
    loss_type: str = field(default="dapo", metadata={"help": "grpo (per sequence) | dapo (per token) | dr_grpo"})
    epsilon: float = field(default=0.2, metadata={"help": "PPO clip range"})
    beta: float = field(default=0.0, metadata={"help": "KL coefficient against the base model (0 = no KL)"})
    scale_rewards: str = field(default="group", metadata={"help": "divide advantages by the std of: group | batch | none"})
    advantage: str = field(default="grpo", metadata={"help": "advantage estimator: grpo | gigpo"})
    step_weight: float = field(default=1.0, metadata={"help": "gigpo: weight of the step-level advantage"})
    gamma: float = field(default=1.0, metadata={"help": "gigpo: discount of returns from a step"})
    seed: int = field(default=0, metadata={"help": "seeds resets, sampling and LoRA's initialisation"})
    save_every: int = field(default=5, metadata={"help": "checkpoint every N steps (and at the end)"})
    output_dir: str = field(default="runs/grpo", metadata={"help": "checkpoints, logs, the curve"})

    def __post_init__(self) -> None:
        for name in ("steps", "groups_per_step", "num_generations", "max_turns", "grad_accumulation",
                     "save_every", "min_region_entries", "preview_words"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"Expected `{name}` to be a positive int, got {value!r}")
        if self.num_generations < 2:
            raise ConfigError("Expected `num_generations` >= 2: a group-relative advantage needs two rollouts")
        from dreamer_gym.methods.grpo.commands import GRAMMARS

        if self.grammar not in GRAMMARS:
            raise ConfigError(f"Expected `grammar` to be one of {tuple(GRAMMARS)}, got {self.grammar!r}")
        if self.loss_type not in LOSS_TYPES:
            raise ConfigError(f"Expected `loss_type` to be one of {LOSS_TYPES}, got {self.loss_type!r}")
        if self.scale_rewards not in SCALE_REWARDS:
            raise ConfigError(f"Expected `scale_rewards` to be one of {SCALE_REWARDS}, got {self.scale_rewards!r}")
        from dreamer_gym.methods.grpo.advantages import ESTIMATORS

        if self.advantage not in ESTIMATORS:
            raise ConfigError(f"Expected `advantage` to be one of {tuple(ESTIMATORS)}, got {self.advantage!r}")
        if (self.groups_per_step * self.num_generations) % self.grad_accumulation:
            raise ConfigError(f"`grad_accumulation` ({self.grad_accumulation}) must divide the rollouts per step "
                              f"({self.groups_per_step} x {self.num_generations})")
        if self.temperature <= 0 or self.learning_rate <= 0 or self.epsilon <= 0 or self.beta < 0:
            raise ConfigError("Expected `temperature`, `learning_rate`, `epsilon` > 0 and `beta` >= 0")
        if self.lora_r < 0:
            raise ConfigError(f"Expected `lora_r` >= 0 (0 trains every weight), got {self.lora_r}")
        object.__setattr__(self, "families", tuple(self.families))
        object.__setattr__(self, "lora_targets", tuple(self.lora_targets))

    def to_dict(self) -> dict[str, Any]:
        return {f.name: (list(v) if isinstance(v := getattr(self, f.name), tuple) else v)
                for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GRPOConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"Unknown GRPO config field(s) {unknown}; the fields are {sorted(known)}")
        return cls(**data)

    @classmethod
    def load(cls, path: str | Path, **overrides: Any) -> GRPOConfig:
        """A YAML file's fields, then ``overrides`` (e.g. from the command line) on top."""
        data = yaml.safe_load(Path(path).read_text()) or {}
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: expected a mapping of GRPO config fields, got {type(data).__name__}")
        return cls.from_dict({**data, **{k: v for k, v in overrides.items() if v is not None}})
