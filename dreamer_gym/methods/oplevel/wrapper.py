"""The op-level action space as a Gymnasium wrapper, for standard RL libraries (sb3-contrib, our trainer).

``OpLevelWrapper`` turns a ``MemoryConsolidation-*`` env into a one-step episode with fixed-size spaces:

* observation: ``Box(max_entries, len(features))`` entry features (:func:`entry_features`), zero rows
  past the region; ``features`` is the env's :func:`~dreamer_gym.envs.wrappers.feature_names` (on a
  tool-contract-2 env, ``ScienceWorld-v2`` and ``ScienceWorldWindows-v1``, the bank context's columns appended);
* action: ``MultiDiscrete([len(ops)] * max_entries)``, one op of :mod:`dreamer_gym.envs.ops` per entry: ``0``
  drop, ``1`` keep (verbatim), ``2`` merge (every merged entry goes into one new entry), ``3`` abstract (this
  procedure rewritten as the region's consensus); the texts come from the documented rules of
  :mod:`dreamer_gym.envs.op_rules`. On a contract-2 env (:func:`~dreamer_gym.envs.ops.op_names`) also ``4``
  synthesize (the entry replaced by the procedure the env's ``synthesize`` tool aligns for its task, one tool
  call per task: :func:`~dreamer_gym.envs.ops.play_ops`);
* ``action_masks()`` (what sb3-contrib's ``MaskablePPO`` reads) and ``info["action_mask"]``: a
  ``(max_entries, len(ops))`` bool mask. Padding rows allow ``drop`` only; ``abstract`` is allowed on procedures
  the rules can read; ``synthesize`` on entries of the region's own tasks with a linked trajectory.

The wrapper plays the ops through the env's own tools (``keep``, ``emit`` with the entries as provenance,
``commit``, and on contract 2 ``synthesize``), so the reward is the env's commit reward, unchanged. A masked op is
not a crash: it is played as ``keep`` on a real entry and ignored on padding, and counted in
``info["invalid_ops"]``; ``abstract`` ops past the emit budget, or whose text the rules leave unchanged, and
``synthesize`` ops whose task has no candidate, are played as ``keep`` too (``info["ops_played"]`` says what was
played).
"""
from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from dreamer_gym.envs.ops import DROP, KEEP, as_op, info_mask, op_names, play_ops, region_key
from dreamer_gym.envs.wrappers import entry_features, feature_names

REGIONS_REMEMBERED = 512  # features + mask of this many regions per wrapper (~3.5 kB each at 50 entries)


class OpLevelWrapper(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Fixed-size spaces with four ops per entry, five on a contract-2 env (see the module docstring); one step =
    one commit. :attr:`features` and :attr:`op_list` name the columns and ops (a checkpoint records both).

    ``slots``: write ``<slots>`` for variable words in merged and abstracted procedures (off by default:
    they scored lower than concrete names on the training regions, docs/byo.md).
    """

    def __init__(self, env: gym.Env, max_entries: int = 50, slots: bool = False) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, max_entries=max_entries, slots=slots)
        gym.Wrapper.__init__(self, env)
        self.max_entries = max_entries
        self.slots = slots
        contract = env.unwrapped.config.tool_contract
        self.features, self.op_list = feature_names(contract), op_names(contract)
        self.observation_space = spaces.Box(0.0, 1_000.0, shape=(max_entries, len(self.features)), dtype=np.float32)
        self.action_space = spaces.MultiDiscrete([len(self.op_list)] * max_entries)
        self._region: list[dict[str, Any]] = []
        self._mask = np.zeros((max_entries, len(self.op_list)), dtype=bool)
        self._mask[:, DROP] = True
        self._seen: OrderedDict[tuple[Any, ...], tuple[np.ndarray, np.ndarray]] = OrderedDict()

    def reset(self, **kwargs: Any):
        _, info = self.env.reset(**kwargs)
        self._region = info["region"][: self.max_entries]
        features, self._mask = self._features_and_mask(info)
        info["n_entries"] = len(self._region)
        info["action_mask"] = self._mask.copy()
        return features.copy(), info

    def _features_and_mask(self, info: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        """The region's features and op mask (read-only arrays), computed once per distinct region (and, on a
        contract-2 env, bank context)."""
        region, context = info["region"][: self.max_entries], info.get("bank_context")
        key: tuple[Any, ...] = region_key(region)
        if context is not None:
            key = (key, json.dumps(context, sort_keys=True))
        cached = self._seen.get(key)
        if cached is None:
            cached = (entry_features(region, self.max_entries, context), info_mask(info, self.max_entries))
            for array in cached:
                array.flags.writeable = False
            self._seen[key] = cached
            if len(self._seen) > REGIONS_REMEMBERED:
                self._seen.popitem(last=False)
        else:
            self._seen.move_to_end(key)
        return cached

    def action_masks(self) -> np.ndarray:
        """The flat mask sb3-contrib's ``MaskablePPO`` expects for a ``MultiDiscrete`` space."""
        return self._mask.reshape(-1).copy()

    def ops(self, action: Any) -> tuple[list[int], int]:
        """One valid op per region entry, and how many of ``action``'s ops were masked or malformed."""
        flat = np.asarray(action, dtype=object).reshape(-1).tolist()
        ops, invalid = [], 0
        for i in range(len(self._region)):
            op = as_op(flat[i]) if i < len(flat) else -1
            if not 0 <= op < len(self.op_list) or not self._mask[i, op]:
                invalid += 1
                op = KEEP
            ops.append(op)
        invalid += sum(1 for v in flat[len(self._region):self.max_entries] if as_op(v) != DROP)
        return ops, invalid

    def step(self, action: Any):
        ops, invalid = self.ops(action)
        config = self.env.unwrapped.config
        program = play_ops(ops, self._region, config.max_entry_tokens, config.max_emitted, slots=self.slots)
        reward = 0.0
        try:
            call = next(program)
            while True:
                obs, r, *_ = self.env.step(json.dumps(call))
                reward += r
                call = program.send(str(obs["result"]))
        except StopIteration as stop:
            played = stop.value
        _, r, terminated, truncated, info = self.env.step(json.dumps({"tool": "commit"}))
        info.update(n_entries=len(self._region), invalid_ops=invalid, ops_played=dict(played))
        return np.zeros(self.observation_space.shape, dtype=np.float32), reward + r, terminated, truncated, info


class RegionSeeds(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Resets without a seed draw one from ``seeds`` (with a generator seeded by ``seed``): the same
    training regions for any trainer, SB3's included, as :class:`~dreamer_gym.methods.oplevel.trainer.OpLevelTrainer`
    uses. A reset with an explicit seed passes through."""

    def __init__(self, env: gym.Env, seeds: tuple[int, ...], seed: int = 0) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, seeds=seeds, seed=seed)
        gym.Wrapper.__init__(self, env)
        if not seeds:
            raise ValueError("Expected `seeds` to list at least one reset seed, got ()")
        self.seeds = tuple(int(s) for s in seeds)
        self._rng = np.random.default_rng(seed)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        if seed is None:
            seed = int(self._rng.choice(self.seeds))
        return self.env.reset(seed=seed, options=options)

    def action_masks(self) -> np.ndarray:
        return self.env.action_masks()  # type: ignore[attr-defined]
