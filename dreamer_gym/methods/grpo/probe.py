"""Before a long run: can the policy move the reward? Per family, the share of the policy's own rollouts
whose downstream score changes (``score_after != score_before``), beside how many kept everything,
committed nothing, and the mean reward. A share near zero means GRPO would see only the size term."""
from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from dreamer_gym.methods.grpo.rollout import EnvGroups, Rollout, RolloutCollector, batch_seeds


def summarise_rollouts(rollouts: list[Rollout]) -> dict[str, Any]:
    """What a set of rollouts did: score moved, keep-all and empty commits, reward, tool mix, sizes."""
    tools: Counter[str] = Counter(c.split()[0] for r in rollouts for c in r.commands)
    kept: Counter[str] = Counter(label for r in rollouts for label in r.kept_labels)
    read: Counter[str] = Counter(label for r in rollouts for label in r.read_labels)
    dropped: Counter[str] = Counter(label for r in rollouts for label in r.dropped_labels)
    group_ops: Counter[str] = Counter(label for r in rollouts for label in r.group_ops)
    n = max(len(rollouts), 1)
    return {
        "rollouts": len(rollouts),
        "score_changed": sum(r.score_changed for r in rollouts) / n,
        "keep_all": sum(r.keep_all for r in rollouts) / n,
        "empty": sum(r.info.get("size_after", {}).get("entries", 0) == 0 for r in rollouts) / n,
        "mean_reward": float(np.mean([r.reward for r in rollouts])) if rollouts else 0.0,
        "mean_score_delta": float(np.mean([r.info["score_after"] - r.info["score_before"] for r in rollouts]))
        if rollouts else 0.0,
        "mean_entries_after": float(np.mean([r.info["size_after"]["entries"] for r in rollouts])) if rollouts else 0.0,
        "invalid_calls": sum(e is not None for r in rollouts for e in r.errors),
        "tool_mix": dict(sorted(tools.items())),
        "forced_commit": sum(r.forced_commit for r in rollouts) / n,
        "kept_labels": dict(kept.most_common()),  # kind/tag of the kept entries: what the policy selects
        "read_labels": dict(read.most_common()),
        "dropped_labels": dict(dropped.most_common()),  # ``drop`` grammar: what the policy leaves out
        "group_ops": dict(group_ops.most_common()),  # ``ops`` grammar: the op each entry got, by kind/tag
        "read_then_kept": sum(bool(set(r.read_labels)) and bool(r.kept_labels) for r in rollouts) / n,
    }


def probe_signal(model: Any, tokenizer: Any, env_id: str, families: list[str], groups_per_family: int,
                 group_size: int, max_turns: int, seed: int = 0, overrides: dict[str, Any] | None = None,
                 preview_words: int = 14, temperature: float = 1.0, grammar: str = "keep") -> dict[str, Any]:
    """Play ``groups_per_family`` groups of ``group_size`` sampled rollouts per family; summarise per family."""
    envs = EnvGroups(env_id, group_size, overrides)
    per_family: dict[str, list[Rollout]] = defaultdict(list)
    try:
        collector = RolloutCollector(model, tokenizer, envs, max_turns, preview_words, temperature,
                                     grammar=grammar)
        generator = torch.Generator().manual_seed(seed)
        for k, family in enumerate(tqdm(families, desc="probe", unit="family")):
            for s in batch_seeds(seed, k, groups_per_family):
                per_family[family] += collector.collect([(s, {"family": family})], group_size, generator)
        times = collector.times
    finally:
        envs.close()
    out = {f: summarise_rollouts(rs) for f, rs in per_family.items()}
    out["all"] = summarise_rollouts([r for rs in per_family.values() for r in rs])
    out["seconds"] = {"generation": times.generation_s, "evaluation": times.evaluation_s}
    return out
