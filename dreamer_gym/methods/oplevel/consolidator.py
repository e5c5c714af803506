"""The op-level method's trained policies as consolidators: ``oplevel:CHECKPOINT`` (our torch policy) and
``sb3:PATH`` (a MaskablePPO model), both greedy over the ops of :mod:`dreamer_gym.envs.ops`, texts from the rules.

Each plays exactly what :class:`~dreamer_gym.methods.oplevel.wrapper.OpLevelWrapper` plays for the same ops (the
same :func:`~dreamer_gym.envs.ops.play_ops`), so an evaluation measures the trained policy. A policy plays only on
an env of the tool contract it was trained on (its feature and op lists: a contract-1 checkpoint on
``ScienceWorld-v2`` is a ConfigError naming the fix, and the reverse). Without a
checkpoint ``oplevel`` is the untrained policy (initialised from ``seed``): the baseline training must beat.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym

from dreamer_gym.consolidators.base import call
from dreamer_gym.envs.ops import entry_classes, info_contract, info_mask, op_names, play_ops
from dreamer_gym.envs.wrappers import check_features, entry_features, feature_names
from dreamer_gym.errors import ConfigError


class OpsConsolidator:
    """What both policies share: play :meth:`ops` (one op per region entry) through the env's tools, then commit."""

    max_entries: int

    def ops(self, info: dict[str, Any]) -> list[int]:
        raise NotImplementedError

    def actions(self, env: gym.Env, obs: dict[str, Any], info: dict[str, Any]) -> Iterator[str]:
        """The calls of :func:`~dreamer_gym.envs.ops.play_ops` (each ``synthesize`` answer read from the
        observation the runner sends back), then ``commit``."""
        region = info["region"][: self.max_entries]
        config = env.unwrapped.config
        program = play_ops(self.ops(info), region, config.max_entry_tokens, config.max_emitted)
        try:
            c = next(program)
            while True:
                args = dict(c)
                sent = yield call(args.pop("tool"), **args)
                c = program.send(str(sent[0]["result"]) if sent else "")
        except StopIteration:
            pass
        yield call("commit")

    @staticmethod
    def features_and_mask(info: dict[str, Any], max_entries: int) -> tuple[Any, Any]:
        """The observation and op mask :class:`~dreamer_gym.methods.oplevel.wrapper.OpLevelWrapper` gives for
        ``info`` (the bank context's columns and ``synthesize`` where the env is of tool contract 2)."""
        region = info["region"][:max_entries]
        return entry_features(region, max_entries, info.get("bank_context")), info_mask(info, max_entries)


class OpLevelConsolidator(OpsConsolidator):
    """``checkpoint``: a ``checkpoint-STEP`` folder of ``dreamer-gym train --algo oplevel``."""

    name = "oplevel"

    def __init__(self, checkpoint: str | Path | None = None, seed: int = 0) -> None:
        import torch

        from dreamer_gym.methods.oplevel.trainer import OpLevelConfig, OpPolicy, load_policy

        self.checkpoint, self.seed = checkpoint, seed
        if checkpoint is None:
            torch.manual_seed(seed)
            self.config = OpLevelConfig(seed=seed)
            self.policy = OpPolicy(hidden=self.config.hidden).eval()
        else:
            self.policy, self.config = load_policy(checkpoint)
        self.max_entries = self.config.max_entries

    def ops(self, info: dict[str, Any]) -> list[int]:
        """The greedy op of each region entry."""
        from dreamer_gym.methods.oplevel.trainer import OpPolicy, check_policy

        contract = info_contract(info)
        if self.checkpoint is None and self.policy.op_list != op_names(contract):  # untrained: the env's lists
            import torch

            torch.manual_seed(self.seed)
            self.policy = OpPolicy.for_lists(feature_names(contract), op_names(contract), self.config.hidden).eval()
        check_policy(self.policy, contract, str(self.checkpoint))
        region = info["region"][: self.config.max_entries]
        features, mask = self.features_and_mask(info, self.config.max_entries)
        classes = entry_classes(region) if self.config.tie == "class" and region else None
        return self.policy.act(features, mask, len(region), self.config.max_entries, greedy=True,
                               classes=classes)[: len(region)].tolist()


class SB3OpLevelConsolidator(OpsConsolidator):
    """``checkpoint``: a ``maskable_ppo.zip`` (or the folder holding it) from ``dreamer-gym train --algo sb3``."""

    name = "sb3"

    def __init__(self, checkpoint: str | Path | None = None) -> None:
        if checkpoint is None:
            raise ConfigError("sb3 needs a model: --consolidator sb3:runs/sb3-oplevel/maskable_ppo.zip")
        try:
            from sb3_contrib import MaskablePPO
        except ImportError as exc:
            raise ConfigError("the sb3 consolidator needs the sb3 extra: pip install -e '.[sb3]'") from exc
        path = Path(checkpoint)
        path = path / "maskable_ppo.zip" if path.is_dir() else path
        if not path.is_file():
            raise ConfigError(f"{checkpoint}: no MaskablePPO model there (expected maskable_ppo.zip)")
        self.model = MaskablePPO.load(path, device="cpu")
        self.path = str(path)
        self.max_entries = int(self.model.observation_space.shape[0])
        width = int(self.model.observation_space.shape[-1])
        if width not in (len(feature_names(1)), len(feature_names(2))):
            check_features(width, self.path)  # no env version's width: raises, naming the fix

    def ops(self, info: dict[str, Any]) -> list[int]:
        region = info["region"][: self.max_entries]
        contract = info_contract(info)
        check_features(int(self.model.observation_space.shape[-1]), self.path, expected=feature_names(contract))
        if int(self.model.action_space.nvec[0]) != len(op_names(contract)):
            raise ConfigError(f"{self.path} plays {int(self.model.action_space.nvec[0])} ops, but this env's are "
                              f"{list(op_names(contract))}: retrain it on this env id (`dreamer-gym train --algo sb3`)")
        features, mask = self.features_and_mask(info, self.max_entries)
        action, _ = self.model.predict(features, action_masks=mask.reshape(-1), deterministic=True)
        return [int(a) for a in action[: len(region)]]
