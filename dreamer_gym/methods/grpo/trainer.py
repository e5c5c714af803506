"""The GRPO trainer for text-action policies on ``MemoryConsolidation-*``: rollout, advantage, loss.

Why not TRL's ``GRPOTrainer`` here: it gives one advantage per completion, so a turn-level estimator
(GiGPO) has nowhere to go; its loss takes log-probs of the unconstrained model while our rollouts sample
under a grammar; and a resume that reproduces the next step exactly needs the sampling seeded per step,
which its generation loop does not expose. TRL is still a first-class path: :mod:`.trl_bridge` hands it
the same rollouts through ``rollout_func`` and :mod:`.trl_env` is an ``environment_factory`` class for
tool-calling models. This file is the smallest clean trainer: ~one screen per part.

One step = ``groups_per_step`` regions x ``num_generations`` rollouts (:mod:`.rollout`), one batched
commit, advantages per turn (:mod:`.advantages`), then one optimizer update over the batch in
``grad_accumulation`` micro-batches. The loss is PPO's clipped surrogate on the policy's decision tokens
(forced grammar tokens and env tokens carry none), aggregated as ``loss_type`` says, plus ``beta`` times
the k3 KL estimate against the base model (LoRA adapters disabled).
"""
from __future__ import annotations

import copy
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import yaml

from dreamer_gym.errors import ConfigError
from dreamer_gym.interrupts import write_text_atomic
from dreamer_gym.methods.grpo.advantages import ESTIMATORS
from dreamer_gym.methods.grpo.config import GRPOConfig
from dreamer_gym.methods.grpo.probe import probe_signal, summarise_rollouts
from dreamer_gym.methods.grpo.rollout import EnvGroups, Rollout, RolloutCollector, batch_seeds
from dreamer_gym.training.algorithms import TrainOptions
from dreamer_gym.training.learning_signal import check_batch
from dreamer_gym.training.logs import RunLog, curve_or_reason, learning_summary, text_table

log = logging.getLogger(__name__)
STATE_FILE = "trainer_state.json"


def load_policy(model_name: str, lora_r: int = 16, lora_alpha: int = 32,
                lora_targets: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj"),
                adapter: str | Path | None = None, seed: int = 0) -> tuple[Any, Any]:
    """The policy model (float32, CPU or the current device) and its tokenizer; LoRA through peft when
    ``lora_r > 0``. ``adapter``: a checkpoint folder to load the trained weights from."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from dreamer_gym.llm.models import resolve_model

    path = resolve_model(model_name)
    tokenizer = AutoTokenizer.from_pretrained(path)
    torch.manual_seed(seed)  # LoRA's initialisation
    if adapter is not None and not (Path(adapter) / "adapter_config.json").is_file():
        return AutoModelForCausalLM.from_pretrained(adapter, dtype=torch.float32), tokenizer  # a full fine-tune
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    if lora_r > 0 or adapter is not None:
        from peft import LoraConfig, PeftModel, get_peft_model

        if adapter is not None:
            model = PeftModel.from_pretrained(model, str(adapter), is_trainable=True)
        else:
            model = get_peft_model(model, LoraConfig(r=lora_r, lora_alpha=lora_alpha, lora_dropout=0.0,
                                                     target_modules=list(lora_targets), task_type="CAUSAL_LM"))
    return model, tokenizer


@dataclass
class _Batch:
    """The decision tokens of some rollouts, flattened: which rollout, where, what was allowed."""

    rows: torch.Tensor  # (N,) index of the rollout in the micro-batch
    positions: torch.Tensor  # (N,) position of the token in its sequence
    allowed: torch.Tensor  # (N, A) allowed ids, padded with the chosen id
    allowed_mask: torch.Tensor  # (N, A) True where a real option
    chosen: torch.Tensor  # (N,) column of the chosen id in `allowed`
    old_logprobs: torch.Tensor  # (N,)
    advantages: torch.Tensor  # (N,)
    seq_of: torch.Tensor  # (N,) index of the rollout in the whole step batch (for per-sequence means)


def decision_batch(rollouts: list[Rollout], advantages: list[list[float]], offset: int = 0) -> _Batch:
    """Flatten the decision tokens (more than one allowed id) of ``rollouts``; env and forced tokens are out."""
    rows, positions, allowed, chosen, old, adv, seq = [], [], [], [], [], [], []
    for b, (r, a) in enumerate(zip(rollouts, advantages)):
        for k, (ok, opts, lp, turn) in enumerate(zip(r.policy, r.allowed, r.logprobs, r.turn_of)):
            if not ok or len(opts) < 2:
                continue
            token = r.tokens[r.prompt_len + k]
            rows.append(b)
            positions.append(r.prompt_len + k)
            allowed.append(list(opts))
            chosen.append(opts.index(token))
            old.append(lp)
            adv.append(a[turn])
            seq.append(offset + b)
    width = max((len(x) for x in allowed), default=1)
    pad = [x + [x[0]] * (width - len(x)) for x in allowed]
    mask = [[True] * len(x) + [False] * (width - len(x)) for x in allowed]
    return _Batch(torch.tensor(rows, dtype=torch.long), torch.tensor(positions, dtype=torch.long),
                  torch.tensor(pad, dtype=torch.long).reshape(-1, width),
                  torch.tensor(mask, dtype=torch.bool).reshape(-1, width), torch.tensor(chosen, dtype=torch.long),
                  torch.tensor(old, dtype=torch.float32), torch.tensor(adv, dtype=torch.float32),
                  torch.tensor(seq, dtype=torch.long))


def constrained_logprobs(model: Any, rollouts: list[Rollout], batch: _Batch,
                         temperature: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-probs of the chosen tokens under the grammar-constrained policy, and its entropy, per decision
    token. Each sequence goes through the model alone, unpadded and without a mask, so attention runs in
    the causal kernel whose memory grows with the length, not its square (a padded batch of 4 x 2,000 tokens
    held ~15 GB of attention scores for the backward pass on CPU and was OOM-killed). Logits are computed
    only at decision positions (the full vocabulary at every position would cost ~0.4 GB per sequence)."""
    weight = model.get_output_embeddings().weight
    logps, entropies = [], []
    for b, r in enumerate(rollouts):
        rows = (batch.rows == b).nonzero().squeeze(1)
        if len(rows) == 0:
            continue
        ids = torch.tensor([r.tokens], dtype=torch.long)
        hidden = model.get_decoder()(input_ids=ids).last_hidden_state[0]
        picked = hidden[batch.positions[rows] - 1]  # the logits for token j come from position j-1
        allowed, mask = batch.allowed[rows], batch.allowed_mask[rows]
        logits = (picked.unsqueeze(1) * weight[allowed]).sum(-1) / temperature  # (n, A)
        logp = torch.log_softmax(logits.masked_fill(~mask, float("-inf")), dim=-1)
        logps.append(logp.gather(1, batch.chosen[rows].unsqueeze(1)).squeeze(1))
        probs = logp.exp().masked_fill(~mask, 0.0)
        entropies.append(-(probs * logp.masked_fill(~mask, 0.0)).sum(-1))
    if not logps:
        return torch.zeros(0), torch.zeros(0)
    return torch.cat(logps), torch.cat(entropies)


class GRPOTrainer:
    """``train()`` runs ``config.steps`` steps from the last checkpoint in ``config.output_dir`` (if any)."""

    def __init__(self, config: GRPOConfig, model: Any = None, tokenizer: Any = None) -> None:
        self.config = config
        self.out = Path(config.output_dir)
        if model is None:
            model, tokenizer = load_policy(config.model, config.lora_r, config.lora_alpha, config.lora_targets,
                                           seed=config.seed)
        self.model, self.tokenizer = model, tokenizer
        if getattr(model.get_output_embeddings(), "bias", None) is not None:
            raise ConfigError("the policy's output layer has a bias; the constrained log-probs assume none")
        self.ref_model = None
        if config.beta > 0 and not hasattr(model, "disable_adapter"):
            self.ref_model = copy.deepcopy(model).eval().requires_grad_(False)
        params = [p for p in model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(params, lr=config.learning_rate, weight_decay=config.weight_decay)
        self.step = 0
        self._envs: EnvGroups | None = None
        self._collector: RolloutCollector | None = None

    # --- the parts -------------------------------------------------------------------------------------------------
    @property
    def collector(self) -> RolloutCollector:
        if self._collector is None:
            cfg = self.config
            self._envs = EnvGroups(cfg.env_id, cfg.groups_per_step * cfg.num_generations, cfg.env_overrides)
            self._collector = RolloutCollector(self.model, self.tokenizer, self._envs, cfg.max_turns,
                                               cfg.preview_words, cfg.temperature, grammar=cfg.grammar)
        return self._collector

    def resets(self, step: int) -> list[tuple[int, dict[str, Any] | None]]:
        """The step's regions: (seed, options) per group, a pure function of (seed, step); a reset whose
        region is under ``min_region_entries`` is redrawn."""
        cfg, env = self.config, self.collector.envs.envs[0]
        out = []
        for g, seed in enumerate(batch_seeds(cfg.seed, step, cfg.groups_per_step)):
            for attempt in range(100):
                s = seed if attempt == 0 else batch_seeds(seed, attempt, 1)[0]
                options = None
                if cfg.families:
                    options = {"family": cfg.families[int(np.random.default_rng([s, g]).integers(len(cfg.families)))]}
                _, info = env.reset(seed=s, options=options)
                if len(info["region"]) >= cfg.min_region_entries:
                    out.append((s, options))
                    break
            else:
                raise ConfigError(f"no region with >= {cfg.min_region_entries} entries in 100 draws; lower "
                                  "`min_region_entries` or choose other `families`")
        return out

    def advantages(self, rollouts: list[Rollout]) -> list[list[float]]:
        cfg = self.config
        return ESTIMATORS[cfg.advantage](rollouts, [r.group for r in rollouts], cfg.scale_rewards,
                                         step_weight=cfg.step_weight, gamma=cfg.gamma)

    def loss_terms(self, rollouts: list[Rollout], advantages: list[list[float]], offset: int, n_seqs: int,
                   n_tokens: int, max_tokens: int, seq_tokens: torch.Tensor) -> tuple[torch.Tensor, dict[str, float]]:
        """The micro-batch's share of the step loss (normalised over the whole step, so accumulation equals
        one big batch) and its metrics' sums."""
        cfg = self.config
        batch = decision_batch(rollouts, advantages, offset)
        if len(batch.rows) == 0:
            return torch.zeros((), requires_grad=True), {}
        logp, entropy = constrained_logprobs(self.model, rollouts, batch, cfg.temperature)
        ratio = torch.exp(logp - batch.old_logprobs)
        clipped = torch.clamp(ratio, 1 - cfg.epsilon, 1 + cfg.epsilon)
        per_token = -torch.min(ratio * batch.advantages, clipped * batch.advantages)
        kl = torch.zeros_like(per_token)
        if cfg.beta > 0:
            with torch.no_grad():
                if self.ref_model is not None:
                    ref, _ = constrained_logprobs(self.ref_model, rollouts, batch, cfg.temperature)
                else:
                    with self.model.disable_adapter():
                        ref, _ = constrained_logprobs(self.model, rollouts, batch, cfg.temperature)
            kl = torch.exp(ref - logp) - (ref - logp) - 1
            per_token = per_token + cfg.beta * kl
        if cfg.loss_type == "dapo":
            loss = per_token.sum() / n_tokens
        elif cfg.loss_type == "dr_grpo":
            loss = per_token.sum() / (n_seqs * max_tokens)
        else:  # grpo: each sequence's mean, then the mean over sequences
            loss = (per_token / seq_tokens[batch.seq_of]).sum() / n_seqs
        sums = {"loss": float(loss.detach()), "entropy": float(entropy.detach().sum()), "kl": float(kl.detach().sum()),
                "clipped": float(((ratio - clipped).abs() > 1e-6).float().sum()), "tokens": float(len(batch.rows))}
        return loss, sums

    def update(self, rollouts: list[Rollout], advantages: list[list[float]]) -> dict[str, float]:
        cfg = self.config
        full = decision_batch(rollouts, advantages)
        n_tokens = max(len(full.rows), 1)
        seq_tokens = torch.bincount(full.seq_of, minlength=len(rollouts)).clamp(min=1).float()
        max_tokens = int(seq_tokens.max())
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        size = len(rollouts) // cfg.grad_accumulation
        totals: dict[str, float] = {}
        for k in range(cfg.grad_accumulation):
            # a micro-batch's sequences go forward and backward one at a time (see constrained_logprobs); the
            # loss is normalised over the whole step, so the summed gradient is the whole batch's
            for i in range(k * size, (k + 1) * size):
                loss, sums = self.loss_terms(rollouts[i:i + 1], advantages[i:i + 1], i, len(rollouts), n_tokens,
                                             max_tokens, seq_tokens)
                if loss.requires_grad:
                    loss.backward()
                for name, value in sums.items():
                    totals[name] = totals.get(name, 0.0) + value
        params = [p for p in self.model.parameters() if p.requires_grad]
        grad_norm = float(torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm))
        self.optimizer.step()
        tokens = max(totals.get("tokens", 0.0), 1.0)
        return {"loss": totals.get("loss", 0.0), "entropy": totals.get("entropy", 0.0) / tokens,
                "kl": totals.get("kl", 0.0) / tokens, "clip_fraction": totals.get("clipped", 0.0) / tokens,
                "grad_norm": grad_norm, "decision_tokens": totals.get("tokens", 0.0)}

    # --- the loop --------------------------------------------------------------------------------------------------
    def train_step(self, status: Callable[[str], None] | None = None) -> dict[str, Any]:
        """One GRPO step; returns its log record. ``status`` hears each phase's name (the progress bar)."""
        cfg = self.config
        collector = self.collector
        before = (collector.times.generation_s, collector.times.evaluation_s)
        generator = torch.Generator().manual_seed(int(batch_seeds(cfg.seed, self.step, 1)[0]))
        if status is not None:
            status("rollouts and commit")
        rollouts = collector.collect(self.resets(self.step), cfg.num_generations, generator)
        signal = check_batch([r.reward for r in rollouts], [r.group for r in rollouts],
                             sum(r.valid_calls for r in rollouts), where=f"grpo step {self.step + 1}")
        advantages = self.advantages(rollouts)
        if status is not None:
            status("update")
        t0 = time.perf_counter()
        metrics = self.update(rollouts, advantages)
        update_s = time.perf_counter() - t0
        self.step += 1
        summary = summarise_rollouts(rollouts)
        rewards = [r.reward for r in rollouts]
        record = {
            "step": self.step, "reward": float(np.mean(rewards)), "reward_std": float(np.std(rewards)),
            **{k: summary[k] for k in ("score_changed", "keep_all", "empty", "mean_score_delta", "mean_entries_after",
                                       "tool_mix", "forced_commit", "kept_labels", "read_labels", "read_then_kept",
                                       "dropped_labels", "group_ops")},
            "valid_call_rate": 1 - summary["invalid_calls"] / max(sum(len(r.commands) for r in rollouts), 1),
            "response_tokens": float(np.mean([sum(r.policy) for r in rollouts])),
            **metrics,
            **signal.record(),
            "seconds": {"generation": collector.times.generation_s - before[0],
                        "evaluation": collector.times.evaluation_s - before[1], "update": update_s},
            "families": sorted({r.family for r in rollouts}),
            "commands": [r.commands for r in rollouts],
        }
        return record

    def train(self, progress: bool = True) -> list[dict[str, Any]]:
        """Run to ``config.steps``, resuming from the newest checkpoint in ``output_dir``; log and checkpoint."""
        from tqdm.auto import tqdm

        self.resume()
        run_log = RunLog(self.out)
        records = []
        try:
            bar = tqdm(total=self.config.steps, initial=self.step, desc="grpo", unit="step", disable=not progress)
            while self.step < self.config.steps:
                record = self.train_step(status=lambda phase: bar.set_description(f"grpo ({phase})"))
                run_log.write(record)
                records.append(record)
                bar.update(1)
                bar.set_postfix(reward=f"{record['reward']:+.3f}", std=f"{record['reward_std']:.3f}",
                                moved=f"{record['score_changed']:.2f}")
                if self.step % self.config.save_every == 0 or self.step == self.config.steps:
                    self.save()
            bar.close()
        finally:
            run_log.close()
        return records

    # --- checkpoints ---------------------------------------------------------------------------------------------
    def save(self) -> Path:
        """``output_dir/checkpoint-STEP``: the weights (the LoRA adapter, or the full model), the optimizer and
        the trainer state. Sampling and resets are seeded by (seed, step), so this is all a resume needs."""
        path = self.out / f"checkpoint-{self.step}"
        path.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(path)
        self.tokenizer.save_pretrained(path)
        torch.save(self.optimizer.state_dict(), path / "optimizer.pt")
        # last, and whole or not at all: a checkpoint without it (an interrupted save) is never resumed
        write_text_atomic(path / STATE_FILE, json.dumps({"step": self.step, "config": self.config.to_dict()}, indent=1))
        return path

    def latest_checkpoint(self) -> Path | None:
        found = sorted(self.out.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))
        found = [p for p in found if (p / STATE_FILE).is_file()]
        return found[-1] if found else None

    def resume(self, path: Path | None = None) -> bool:
        """Load a checkpoint (the newest in ``output_dir`` by default); False if there is none."""
        path = path or self.latest_checkpoint()
        if path is None:
            return False
        state = json.loads((path / STATE_FILE).read_text())
        if hasattr(self.model, "load_adapter"):
            from peft import set_peft_model_state_dict
            from safetensors.torch import load_file

            set_peft_model_state_dict(self.model, load_file(str(path / "adapter_model.safetensors")))
        else:
            from safetensors.torch import load_file

            self.model.load_state_dict(load_file(str(path / "model.safetensors")), strict=False)
        self.optimizer.load_state_dict(torch.load(path / "optimizer.pt", weights_only=True))
        self.step = int(state["step"])
        log.info("resumed from %s (step %d)", path, self.step)
        return True

    def close(self) -> None:
        if self._envs is not None:
            self._envs.close()
            self._envs, self._collector = None, None


def run(config: GRPOConfig, options: TrainOptions) -> int:
    """``dreamer-gym train --algo grpo``: train and report, or with ``--probe N`` only the signal probe."""
    out = Path(config.output_dir)
    if options.probe:
        return _run_probe(config, options.probe, out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.yaml").write_text(yaml.safe_dump(config.to_dict(), sort_keys=False))
    trainer = GRPOTrainer(config)
    try:
        records = trainer.train(progress=not options.quiet)
    finally:
        trainer.close()
    if (out / "log.jsonl").is_file():
        print(f"curve: {curve_or_reason(out, 'GRPO')}")
        print(learning_summary(out / "log.jsonl"))
    if records:
        last = records[-1]
        print(f"step {last['step']}: reward {last['reward']:+.4f}, score changed in {last['score_changed']:.0%}, "
              f"keep-all {last['keep_all']:.0%}; checkpoints in {out}")
    return 0


def _run_probe(config: GRPOConfig, groups: int, out: Path) -> int:
    """Play ``groups`` groups per family with the untrained policy; write and print, per family, how often the
    downstream score moved (``output_dir/probe.json``)."""
    from dreamer_gym.contract.ids import REGISTERED
    from dreamer_gym.suites import get_suite_spec

    model, tokenizer = load_policy(config.model, lora_r=0)
    suite = {**REGISTERED[config.env_id], **config.env_overrides}.get("suite", "scienceworld")
    families = list(config.families) or list(get_suite_spec(suite).families)
    result = probe_signal(model, tokenizer, config.env_id, families, groups, config.num_generations,
                          config.max_turns, config.seed, config.env_overrides, config.preview_words,
                          config.temperature, config.grammar)
    out.mkdir(parents=True, exist_ok=True)
    (out / "probe.json").write_text(json.dumps(result, indent=1))
    print(text_table([{"family": f, **{k: v for k, v in r.items() if k != "tool_mix"}}
                      for f, r in result.items() if f != "seconds"]))
    print(f"\nwrote {out / 'probe.json'}")
    return 0
