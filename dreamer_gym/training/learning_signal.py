"""Does a batch carry any learning signal? One check shared by every trainer (our GRPO, TRL's two paths,
op-level REINFORCE, SB3), so that a run that learns nothing says so instead of logging a flat loss.

Two failures, both seen on a real run (issue 27: SmolLM2 on TRL's tools path, every reward +0.0200, loss and
gradient 0, nothing said):

* **zero spread**: a group's rewards are all equal, so its group-relative advantages are all 0 and it adds
  nothing to the gradient. Reported per batch: how many of its groups are flat (all of them: the update is 0).
* **no valid call**: not one tool call (or command) of the batch was accepted by the env, so every rollout
  was committed by the trainer and the reward measures the trainer's commit, not the policy.

:func:`check_batch` logs each problem as a ``logging`` warning (logger ``dreamer_gym.training.learning_signal``)
and returns them, so the trainer also writes them into its own log file or metrics.
"""
from __future__ import annotations

import logging
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np

log = logging.getLogger(__name__)
SPREAD_TOL = 1e-9  # rewards closer than this count as equal (a group's std below it gives zero advantages)


@dataclass(frozen=True)
class SignalCheck:
    """What :func:`check_batch` found in one batch."""

    groups: int
    flat_groups: int  # groups whose rewards are all equal (std <= SPREAD_TOL)
    valid_calls: int | None  # None: the trainer has no tool calls (op-level, SB3)
    warnings: tuple[str, ...] = field(default=())

    @property
    def flat_share(self) -> float:
        return self.flat_groups / self.groups if self.groups else 0.0

    def record(self) -> dict[str, object]:
        """The fields a trainer adds to its step record (``log.jsonl``)."""
        out: dict[str, object] = {"flat_groups": self.flat_share, "warnings": list(self.warnings)}
        if self.valid_calls is not None:
            out["valid_calls"] = self.valid_calls
        return out


def check_batch(rewards: Sequence[float], groups: Sequence[Hashable] | None = None, valid_calls: int | None = None,
                *, where: str = "batch", hint: str = "") -> SignalCheck:
    """Check one batch: ``rewards`` per rollout, ``groups`` the group of each (None: one group, the batch),
    ``valid_calls`` the env-accepted calls of the whole batch (None: not applicable). ``where`` names the batch
    in the message ("grpo step 3"); ``hint`` is appended to the no-valid-call warning (what to try)."""
    values = np.asarray(rewards, dtype=float)
    keys = [0] * len(values) if groups is None else list(groups)
    if len(keys) != len(values):
        raise ValueError(f"{len(values)} rewards but {len(keys)} group labels")
    by_group: dict[Hashable, list[float]] = {}
    for key, value in zip(keys, values.tolist()):
        by_group.setdefault(key, []).append(value)
    flat = [k for k, v in by_group.items() if len(v) > 1 and float(np.std(v)) <= SPREAD_TOL]
    warnings: list[str] = []
    if by_group and len(flat) == len(by_group):
        distinct = sorted({round(by_group[k][0], 4) for k in flat})
        shown = ", ".join(f"{v:+.4f}" for v in distinct[:4]) + (", ..." if len(distinct) > 4 else "")
        warnings.append(f"{where}: zero reward spread in every group ({len(flat)} of {len(by_group)}; rewards "
                        f"{shown}): all advantages are 0, this update learns nothing")
    elif flat:
        warnings.append(f"{where}: zero reward spread in {len(flat)} of {len(by_group)} groups: those groups add "
                        "nothing to the update")
    if valid_calls is not None and valid_calls == 0 and len(values):
        warnings.append(f"{where}: no valid tool call in {len(values)} rollouts: every rollout was committed by "
                        "the trainer (the region as it is), so the reward measures nothing the policy did"
                        + (f"; {hint}" if hint else ""))
    for message in warnings:
        log.warning(message)
    return SignalCheck(len(by_group), len(flat), valid_calls, tuple(warnings))
