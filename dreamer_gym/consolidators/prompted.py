"""The prompted consolidator: a zero-shot LLM policy on the env.

Each turn it renders the observation (system prompt with the tool list, the region, the last tool
result and the budget, ``dreamer_gym/prompts/consolidator_*.md``), asks the backend for one tool call
and sends it. With ``guided=True`` the backend decodes under the tool-call JSON schema of this region
(:func:`dreamer_gym.envs.schema.tool_call_schema`), so even a 135M model emits well-formed calls with
real ids. Three guards keep a small model moving under guided decoding: while nothing has been kept
or emitted, the schema leaves `commit` out (unless ``allow_empty_commit``); a call just repeated
verbatim is left out next turn; and in the last ``write_phase`` calls with nothing written, only
`keep` and `emit` remain. Malformed calls go to the env anyway: its error observation is the model's
feedback. It commits itself when the budget is nearly spent or after a streak of invalid calls.
"""
from __future__ import annotations

import json
import logging
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from dreamer_gym.consolidators.base import call
from dreamer_gym.envs.schema import tool_call_schema
from dreamer_gym.envs.tools import tools_for
from dreamer_gym.envs.wrappers import render_state, system_prompt
from dreamer_gym.llm import LLMBackend, LLMConfig, SamplingConfig, make_backend
from dreamer_gym.prompts import load_prompt

log = logging.getLogger(__name__)
_CUT_NOTE = "\n[... region cut to fit the context; use read_entry or search for the rest]"


def extract_json_object(text: str) -> str | None:
    """The first balanced ``{...}`` in ``text`` that parses as a JSON object (chatty models wrap it)."""
    start = text.find("{")
    while start >= 0:
        depth, in_str, escape = 0, False, False
        for i in range(start, len(text)):
            ch = text[i]
            if in_str:
                escape = ch == "\\" and not escape
                if ch == '"' and not escape:
                    in_str = False
                continue
            if ch == '"':
                in_str = True
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    candidate = text[start : i + 1]
                    try:
                        if isinstance(json.loads(candidate), dict):
                            return candidate
                    except json.JSONDecodeError:
                        pass
                    break
        start = text.find("{", start + 1)
    return None


def _tool_name(action: str) -> str | None:
    try:
        value = json.loads(action)
    except json.JSONDecodeError:
        return None
    return value.get("tool") if isinstance(value, dict) else None


@dataclass
class PromptedStats:
    """What one episode's LLM calls did (the env counts invalid calls; this counts the model's side)."""

    calls: int = 0
    unparsed: int = 0  # replies with no JSON object at all
    prompt_tokens: int = 0
    completion_tokens: int = 0
    region_cut: bool = False
    replies: list[str] = field(default_factory=list)


class PromptedConsolidator:
    """See the module docstring. Pass a ready ``backend`` (shared, e.g. across episodes) or an ``llm``
    config to build one on first use."""

    name = "prompted"

    def __init__(self, backend: LLMBackend | None = None, llm: LLMConfig | dict | None = None, guided: bool = True,
                 max_tokens: int = 160, temperature: float = 0.0, seed: int = 0, max_invalid_streak: int = 4,
                 history: int = 6, allow_empty_commit: bool = False, write_phase: int = 3) -> None:
        self._backend = backend
        self.llm = LLMConfig.coerce(llm)
        self.guided = guided
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.seed = seed
        self.max_invalid_streak = max_invalid_streak
        self.history = history
        self.allow_empty_commit = allow_empty_commit
        self.write_phase = write_phase
        self.step_template = load_prompt("consolidator_step")
        self.stats = PromptedStats()

    @property
    def backend(self) -> LLMBackend:
        if self._backend is None:
            self._backend = make_backend(self.llm)
        return self._backend

    def messages(self, obs: dict[str, Any], previous: list[str], contract: int = 1) -> list[dict[str, str]]:
        """The chat for this turn, with the region cut (never the instructions) to fit the context; ``contract``:
        the env's tool contract (which tools the instructions list)."""
        system = system_prompt(contract)
        prev = "\n".join(previous[-self.history:]) if previous else "(none)"
        state = render_state(obs)

        def build(text: str) -> list[dict[str, str]]:
            return [{"role": "system", "content": system},
                    {"role": "user", "content": self.step_template.format(observation=text, previous=prev)}]

        chat = build(state)
        budget = self.backend.max_context - self.max_tokens
        used = self.backend.count_tokens(chat)
        if used > budget:
            self.stats.region_cut = True
            region = str(obs["region"])
            for _ in range(6):  # shrink proportionally until it fits
                keep = max(int(len(region) * budget / used * 0.95) - len(_CUT_NOTE), 0)
                region = region[:keep]
                chat = build(render_state({**obs, "region": region + _CUT_NOTE}))
                used = self.backend.count_tokens(chat)
                if used <= budget:
                    break
        return chat

    def actions(self, env: gym.Env, obs: dict[str, Any], info: dict[str, Any]) -> Generator[str, Any, None]:
        self.stats = PromptedStats()
        region = info.get("region", ())
        contract = int(getattr(getattr(env.unwrapped, "config", None), "tool_contract", 1))
        tools_here = list(tools_for(contract))
        no_commit = [t for t in tools_here if t != "commit"]

        def sampling_for(emitted: int, calls_left: int, previous: list[str]) -> SamplingConfig:
            # Guided decoding hides `commit` while the new region is empty (small models otherwise commit
            # an empty region on their first turn) and a tool just called twice in a row with the same
            # arguments (greedy decoding on a nearly unchanged prompt loops). The budget guard commits.
            schema = None
            if self.guided:
                tools = list(tools_here) if emitted or self.allow_empty_commit else list(no_commit)
                if len(previous) >= 2 and previous[-1] == previous[-2]:
                    repeated = _tool_name(previous[-1])
                    tools = [t for t in tools if t != repeated] or tools
                if not emitted and calls_left <= self.write_phase:  # time to write something
                    tools = ["keep", "emit"]
                # contract 0 (the -v0 ids) takes every contract-1 call: guide with the strict one there
                schema = tool_call_schema(region, tools=tools, contract=max(contract, 1))
            return SamplingConfig(max_tokens=self.max_tokens, temperature=self.temperature, seed=self.seed,
                                  json_schema=schema)
        previous: list[str] = []
        streak, invalid_before = 0, int(info.get("invalid_calls", 0))
        while True:
            calls_left = int(obs["budget"][0])
            if calls_left <= 1 or streak >= self.max_invalid_streak:
                yield call("commit")
                return
            sampling = sampling_for(int(obs["budget"][2]), calls_left, previous)
            reply = self.backend.generate([self.messages(obs, previous, contract)], sampling)[0][0]
            self.stats.calls += 1
            self.stats.prompt_tokens += reply.prompt_tokens
            self.stats.completion_tokens += reply.completion_tokens
            self.stats.replies.append(reply.text)
            action = extract_json_object(reply.text)
            if action is None:
                self.stats.unparsed += 1
                action = reply.text  # the env answers with an error observation the model sees next turn
            previous.append(action[:300])
            obs, info = yield action
            invalid = int(info.get("invalid_calls", 0))
            streak = streak + 1 if invalid > invalid_before else 0
            invalid_before = invalid
