"""Multi-turn rollouts of a text-action policy on ``MemoryConsolidation-*`` envs, a batch at a time.

A batch is ``groups`` regions times ``G`` rollouts. The G envs of a group reset with the same seed, so they
hold the same region and the same evaluation episodes (each opens its own ticket on the same reset seed, from
which the service derives the draw); the prompt is fed
through the model once per group and its cache forked. Every command goes to the env through
:meth:`ConsolidationEnv.act`, which stops short of scoring; the batch's commits then go to the reward
service in ONE ``commit_many`` call (they play side by side on the evaluation workers, and the shared bank
v0 plays once), and each env settles its own result.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from dreamer_gym.envs.consolidation import ConsolidationEnv
from dreamer_gym.methods.grpo.commands import CommandState, prompt_ids, result_message
from dreamer_gym.methods.grpo.decoding import ConstrainedDecoder, DecodeState, TurnFormat
from dreamer_gym.service import CommitRequest


@dataclass
class Rollout:
    """One episode as the trainer sees it: the token sequence and, per token, whether the policy wrote it,
    what the grammar allowed there and its log-prob when sampled; per turn, the command and what it did."""

    group: int
    seed: int
    family: str
    bank: int
    tokens: list[int]
    prompt_len: int
    policy: list[bool] = field(default_factory=list)  # per token after the prompt
    allowed: list[tuple[int, ...]] = field(default_factory=list)  # per token after the prompt (() = env token)
    logprobs: list[float] = field(default_factory=list)  # per token after the prompt (0.0 for env tokens)
    turn_of: list[int] = field(default_factory=list)  # per token after the prompt: its turn (-1 = env token)
    commands: list[str] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    errors: list[str | None] = field(default_factory=list)
    turn_keys: list[str] = field(default_factory=list)
    turn_rewards: list[float] = field(default_factory=list)
    forced_commit: bool = False
    kept_labels: list[str] = field(default_factory=list)  # per kept entry: its kind and the writer's tags
    dropped_labels: list[str] = field(default_factory=list)  # per dropped entry (``drop`` grammar): the same
    read_labels: list[str] = field(default_factory=list)  # per read entry: the same
    group_ops: list[str] = field(default_factory=list)  # ``ops`` grammar: per entry, "OP kind/tag" as committed
    reward: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def completion(self) -> list[int]:
        return self.tokens[self.prompt_len:]

    @property
    def env_mask(self) -> list[int]:
        """TRL's convention: 1 = a policy token (carries loss), 0 = an environment token."""
        return [int(p) for p in self.policy]

    @property
    def score_changed(self) -> bool:
        return self.info.get("score_after") != self.info.get("score_before")

    @property
    def valid_calls(self) -> int:
        """The policy's commands the env accepted (a command that makes no env call counts when it parsed)."""
        return sum(e is None for e in self.errors)

    @property
    def keep_all(self) -> bool:
        """Committed exactly the region (verbatim): the reward is the size term's 0 and nothing else."""
        return self.info.get("bank_after") == self.info.get("bank_before")


class EnvGroups:
    """``n`` envs of one id sharing one reward service (one evaluation cache, one ``commit_many``)."""

    def __init__(self, env_id: str, n: int, overrides: dict[str, Any] | None = None) -> None:
        overrides = dict(overrides or {})
        first = ConsolidationEnv.experiment(env_id, **overrides)
        self.envs = [first] + [ConsolidationEnv.experiment(env_id, reward_service=first.service, **overrides)
                               for _ in range(n - 1)]
        self.service = first.service

    def close(self) -> None:
        for env in reversed(self.envs):  # the first owns the service: close it last
            env.close()


@dataclass
class RolloutTimes:
    generation_s: float = 0.0
    evaluation_s: float = 0.0


class RolloutCollector:
    """Plays batches of groups with a policy model under the command grammar (see module docstring)."""

    def __init__(self, model: Any, tokenizer: Any, envs: EnvGroups, max_turns: int, preview_words: int = 14,
                 temperature: float = 1.0, greedy: bool = False, grammar: str = "keep") -> None:
        self.model, self.tokenizer, self.envs = model, tokenizer, envs
        self.max_turns, self.preview_words = max_turns, preview_words
        self.decoder = ConstrainedDecoder(model, tokenizer, temperature, greedy)
        self.format = TurnFormat.from_tokenizer(tokenizer)
        self.grammar = grammar
        self.times = RolloutTimes()

    def prompt(self, family: str, region: list[dict[str, Any]],
               context: list[dict[str, Any]] | None = None) -> list[int]:
        return prompt_ids(self.tokenizer, family, region, self.max_turns, self.preview_words, self.grammar, context)

    def collect(self, resets: list[tuple[int, dict[str, Any] | None]], group_size: int,
                generator: torch.Generator | None = None) -> list[Rollout]:
        """One rollout per env: ``resets[g]`` = (seed, options) of group ``g``; env ``g * group_size + i`` plays
        rollout ``i`` of it. Returns the rollouts, settled, in env order."""
        envs = self.envs.envs
        if len(resets) * group_size > len(envs):
            raise ValueError(f"{len(resets)} groups of {group_size} need {len(resets) * group_size} envs; "
                             f"there are {len(envs)}")
        was_training = self.model.training
        self.model.eval()
        t0 = time.perf_counter()
        rollouts: list[Rollout] = []
        try:
            for g, (seed, options) in enumerate(resets):
                base: DecodeState | None = None
                for i in range(group_size):
                    env = envs[g * group_size + i]
                    _, info = env.reset(seed=seed, options=options)
                    prompt = self.prompt(info["family"], info["region"], info.get("bank_context"))
                    if base is None:
                        base = DecodeState(queued=list(prompt))
                        self.decoder.feed(base)
                    rollouts.append(self._play(env, info, g, seed, prompt, base.fork(), generator))
        finally:
            self.model.train(was_training)
        t1 = time.perf_counter()
        self._settle([envs[k] for k in range(len(rollouts))], rollouts)
        self.times.generation_s += t1 - t0
        self.times.evaluation_s += time.perf_counter() - t1
        return rollouts

    def _play(self, env: ConsolidationEnv, info: dict[str, Any], group: int, seed: int, prompt: list[int],
              state: DecodeState, generator: torch.Generator | None) -> Rollout:
        region = info["region"]
        config = env.config
        grammar = CommandState.for_region(region, self.grammar, config.max_entry_tokens, config.max_emitted,
                                          info.get("bank_context"))
        r = Rollout(group, seed, info["family"], int(info["bank"]), list(prompt), len(prompt))
        for turn in range(self.max_turns):
            r.turn_keys.append(grammar.key())
            chosen, decisions = self.decoder.command(state, grammar.options, generator)
            for d in decisions:
                r.tokens.append(d.token)
                r.policy.append(True)
                r.allowed.append(d.allowed)
                r.logprobs.append(d.logprob)
                r.turn_of.append(turn)
            actions = grammar.apply(chosen)
            numbers = [] if grammar.by_group else [int(x) for x in chosen[1:]]
            labels = [_label(region[i - 1]) for i in numbers]
            if chosen[0] == "keep":
                r.kept_labels += labels
            elif chosen[0] == "drop":
                r.dropped_labels += labels
            elif chosen[0] == "read":
                r.read_labels += labels
            r.commands.append(" ".join(s.strip() for s in chosen))
            result, error, reward = self._act(env, r, actions, grammar.note, grammar)
            r.errors.append(error)
            r.turn_rewards.append(reward)
            if env.pending_commit is not None:
                return self._finish(r, grammar, region)
            message = result_message(result, error, grammar.holding, self.max_turns - turn - 1,
                                     grammar=self.grammar)
            env_ids = self.format.env_tokens(self.tokenizer, message)
            state.queued.extend(env_ids)
            r.tokens.extend(env_ids)
            r.policy.extend([False] * len(env_ids))
            r.allowed.extend([()] * len(env_ids))
            r.logprobs.extend([0.0] * len(env_ids))
            r.turn_of.extend([-1] * len(env_ids))
        # out of turns: the trainer commits (not a policy token; the last turn's return carries the reward),
        # deleting nothing the policy did not decide to delete (CommandState.forced_commit)
        r.forced_commit = True
        _, _, reward = self._act(env, r, grammar.forced_commit(), "", grammar)
        r.turn_rewards[-1] += reward
        return self._finish(r, grammar, region)

    @staticmethod
    def _finish(r: Rollout, grammar: CommandState, region: list[dict[str, Any]]) -> Rollout:
        if grammar.drops:  # what the commit kept: every entry not dropped
            r.kept_labels = [_label(region[i - 1]) for i in sorted(grammar.kept)]
        if grammar.by_group:  # what the commit played on each entry
            r.kept_labels = [_label(region[i - 1]) for i in sorted(grammar.kept)]
            r.dropped_labels = [_label(region[i - 1]) for i in sorted(grammar.dropped)]
            r.group_ops = [f"{grammar.group_ops.get(g, 'keep')} {_label(e)}" for e, g in zip(region, grammar.groups)]
        return r

    @staticmethod
    def _act(env: ConsolidationEnv, r: Rollout, actions: list[str], note: str,
             grammar: CommandState) -> tuple[str, str | None, float]:
        """Send one command's env calls (and those :meth:`CommandState.answer` adds, given each result: a
        commit's ``synthesize`` under ``ops``); its answer (the last call's, or ``note`` when it made none), its
        error (the first) and its summed shaping reward."""
        result, error, reward = note, None, 0.0
        while actions:
            for action in actions:
                obs, step_reward, _, _, step_info = env.act(action)
                r.actions.append(action)
                result, reward = str(obs["result"]), reward + float(step_reward)
                error = error or step_info["last_error"]
            actions = grammar.answer(result)
        return result, error, reward

    def _settle(self, envs: list[ConsolidationEnv], rollouts: list[Rollout]) -> None:
        requests: list[CommitRequest] = [env.pending_commit for env in envs]  # type: ignore[misc]
        results = self.envs.service.commit_many(requests)
        for env, r, result in zip(envs, rollouts, results):
            _, reward, _, _, info = env.settle(result)
            r.turn_rewards[-1] += reward
            r.reward = float(sum(r.turn_rewards))
            r.info = info


def _label(entry: dict[str, Any]) -> str:
    """``procedure/verbatim``: an entry's kind and the acquisition writer's main tag (what a policy can see)."""
    tags = [t for t in entry.get("tags", ()) if not t.startswith("variation:")]
    return f"{entry['kind']}/{tags[0]}" if tags else entry["kind"]


def batch_seeds(seed: int, step: int, groups: int) -> list[int]:
    """Reset seeds for one step's groups: a pure function of (run seed, step), so a resumed run draws the same."""
    return [int(s) for s in np.random.default_rng([seed, step]).integers(0, 2**31 - 1, size=groups)]
