"""A GRPO-trained text-action policy as a consolidator (``grpo:CHECKPOINT``), decoding greedily.

It plays the same turns the trainer's rollouts do (:mod:`dreamer_gym.methods.grpo.commands`: the region listed
once, then ``read N`` / ``keep N ...`` (or ``drop N``) / ``commit`` under the checkpoint's grammar, and
the same env tool calls), so an evaluation measures the trained policy and nothing else. Without a checkpoint it is the untrained base
model under that grammar: the baseline a trained policy must beat.
"""
from __future__ import annotations

import json
from collections.abc import Generator
from pathlib import Path
from typing import Any

import gymnasium as gym

from dreamer_gym.errors import ConfigError

STATE_FILE = "trainer_state.json"


class GRPOConsolidator:
    """``checkpoint``: a ``checkpoint-STEP`` folder of ``dreamer-gym train --algo grpo`` (its config names the
    model, turns and listing); None = the base ``model`` untrained."""

    name = "grpo"

    def __init__(self, checkpoint: str | Path | None = None, model: str | None = None, max_turns: int | None = None,
                 preview_words: int | None = None, greedy: bool = True, temperature: float = 1.0, seed: int = 0,
                 grammar: str | None = None) -> None:
        config: dict[str, Any] = {}
        if checkpoint is not None:
            state = Path(checkpoint) / STATE_FILE
            if not state.is_file():
                raise ConfigError(f"{checkpoint} is not a GRPO checkpoint (no {STATE_FILE}); pass a "
                                  "checkpoint-STEP folder written by `dreamer-gym train --algo grpo`")
            config = json.loads(state.read_text())["config"]
        self.checkpoint = None if checkpoint is None else Path(checkpoint)
        self.model_name = model or config.get("model", "smollm2-135m")
        self.max_turns = int(max_turns or config.get("max_turns", 6))
        self.preview_words = int(preview_words or config.get("preview_words", 14))
        self.grammar = grammar or config.get("grammar", "keep")
        self.greedy, self.temperature, self.seed = greedy, temperature, seed
        self.lora_r = int(config.get("lora_r", 0))
        self._loaded: tuple[Any, Any] | None = None
        self.commands: list[str] = []  # the last episode's commands (what the policy did)

    def llm_info(self) -> dict[str, str]:
        """What a leaderboard submission records: the policy runs on transformers (the base model plus the
        checkpoint's adapter), greedy unless built with ``greedy=False``."""
        model = self.model_name if self.checkpoint is None else f"{self.model_name} + {self.checkpoint}"
        return {"backend": "transformers", "model": model, "decoding": "greedy" if self.greedy else "sampled"}

    def _policy(self) -> tuple[Any, Any]:
        if self._loaded is None:
            from dreamer_gym.methods.grpo.trainer import load_policy

            model, tokenizer = load_policy(self.model_name, lora_r=0, adapter=self.checkpoint)
            self._loaded = (model.eval(), tokenizer)
        return self._loaded

    def actions(self, env: gym.Env, obs: dict[str, Any], info: dict[str, Any]) -> Generator[str, Any, None]:
        import torch

        from dreamer_gym.methods.grpo.commands import CommandState, prompt_ids, result_message
        from dreamer_gym.methods.grpo.decoding import ConstrainedDecoder, DecodeState, TurnFormat

        model, tokenizer = self._policy()
        region = info["region"]
        config = env.unwrapped.config
        context = info.get("bank_context")  # a tool-contract-2 env's: the ops grammar shows it, adds synthesize
        grammar = CommandState.for_region(region, self.grammar, config.max_entry_tokens, config.max_emitted, context)
        decoder = ConstrainedDecoder(model, tokenizer, self.temperature, greedy=self.greedy)
        turn_format = TurnFormat.from_tokenizer(tokenizer)
        state = DecodeState(queued=prompt_ids(tokenizer, info["family"], region, self.max_turns, self.preview_words,
                                              self.grammar, context))
        generator = None if self.greedy else torch.Generator().manual_seed(self.seed)
        self.commands = []
        for turn in range(self.max_turns):
            chosen, _ = decoder.command(state, grammar.options, generator)
            self.commands.append(" ".join(s.strip() for s in chosen))
            result, error = grammar.note, None
            actions = grammar.apply(chosen)
            while actions:  # a commit's synthesize answers are read (CommandState.answer)
                for action in actions:
                    obs, info = yield action
                    result, error = str(obs["result"]), error or info.get("last_error")
                actions = grammar.answer(result)
            if chosen == ["commit"]:
                return
            message = result_message(result, error, grammar.holding, self.max_turns - turn - 1,
                                     grammar=self.grammar)
            state.queued.extend(turn_format.env_tokens(tokenizer, message))
        actions = grammar.forced_commit()  # out of turns: commit as the trainer does
        while actions:
            for action in actions:
                sent = yield action
            actions = grammar.answer(str(sent[0]["result"]) if sent else "")


class GRPODropConsolidator(GRPOConsolidator):
    """``grpo-drop``: the untrained base model under the ``drop`` grammar (edit down from the whole region),
    the baseline a ``grammar: drop`` checkpoint must beat. With a checkpoint it is ``grpo:CHECKPOINT``."""

    name = "grpo-drop"

    def __init__(self, checkpoint: str | Path | None = None, **kwargs: Any) -> None:
        default = {"grammar": "drop"} if checkpoint is None else {}  # a checkpoint carries its own grammar
        super().__init__(checkpoint, **{**default, **kwargs})


class GRPOOpsConsolidator(GRPOConsolidator):
    """``grpo-ops``: the untrained base model under the ``ops`` grammar (one op per group of entries), the
    baseline a ``grammar: ops`` checkpoint must beat."""

    name = "grpo-ops"

    def __init__(self, checkpoint: str | Path | None = None, **kwargs: Any) -> None:
        default = {"grammar": "ops"} if checkpoint is None else {}
        super().__init__(checkpoint, **{**default, **kwargs})
