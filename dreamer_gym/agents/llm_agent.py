"""The LLM downstream agent: a ReAct-style prompt with the retrieved memory entries, one action per turn.

Small models are chatty, so the reply is parsed leniently (``Action: ...``, else the first line) and an
action the simulator rejects is snapped onto the closest action it accepts now. Greedy decoding makes
episodes deterministic given the backend, which the evaluation cache relies on.
"""
from __future__ import annotations

import difflib
import re
from collections.abc import Sequence

from dreamer_gym.agents.base import AgentConfig, EpisodeResult
from dreamer_gym.agents.task_retriever import TaskRetriever
from dreamer_gym.llm import LLMBackend, SamplingConfig, make_backend
from dreamer_gym.memory import MemoryEntry
from dreamer_gym.memory.hashing import content_hash
from dreamer_gym.prompts import load_prompt
from dreamer_gym.suites.base import EpisodeTask, TaskSuite
from dreamer_gym.suites.registry import get_suite_spec

_REJECTED = ("No known action matches", "Unknown action", "Nothing happens")  # ScienceWorld, ALFWorld
_AMBIGUOUS = "Ambiguous request"
_ACTION = re.compile(r"action\s*[:=]\s*(.+)", re.IGNORECASE)
_OBSERVATION_CHARS = 900  # long room descriptions are cut: a 135M model's context is small
_QUOTED = re.compile(r'("(?:[^"\\]|\\.)*")')  # a double-quoted segment, backslash escapes inside


def _strip_quotes(text: str) -> str:
    """Remove quotes that wrap the whole action (``"open door"``) or dangle at either end (``open door"``),
    keeping the quotes of an argument (``click "Submit"``, ``type "JE4" into "Username"``)."""
    for q in "\"'":
        if len(text) >= 2 and text[0] == text[-1] == q and q not in text[1:-1]:
            text = text[1:-1].strip()
        elif text.count(q) % 2 == 1 and (text.startswith(q) or text.endswith(q)):
            text = (text[1:] if text.startswith(q) else text[:-1]).strip()
    return text


def parse_action(reply: str) -> str:
    """The action in a model reply: after ``Action:`` if present, else the first non-empty line;
    markdown, wrapping quotes and trailing punctuation removed, lower-cased with spaces collapsed outside
    double-quoted segments (what to type stays verbatim: ``type "JE4" into "Username"``)."""
    match = _ACTION.search(reply)
    text = match.group(1) if match else next((ln for ln in reply.splitlines() if ln.strip()), "")
    text = text.splitlines()[0] if text else ""
    text = re.sub(r"[.!]+$", "", text.strip())
    previous = None
    while text != previous:  # `"open door"`, "`open door`", **open door**
        previous, text = text, _strip_quotes(text.strip().strip("`*").strip())
    text = re.sub(r"[.!]+$", "", text)
    parts = _QUOTED.split(text)  # odd indices: the quoted segments
    return "".join(p if i % 2 else re.sub(r"\s+", " ", p).lower() for i, p in enumerate(parts))


def closest_action(text: str, valid: Sequence[str]) -> str | None:
    """The valid action most similar to ``text`` (difflib ratio), or None when nothing is valid."""
    if not valid:
        return None
    if text in valid:
        return text
    close = difflib.get_close_matches(text, valid, n=1, cutoff=0.0)
    return close[0] if close else valid[0]


def render_memory(entries: Sequence[MemoryEntry]) -> str:
    return "\n".join(f"- [{e.kind}] {e.text}" for e in entries) or "(no memory)"


class LLMAgent:
    """See the module docstring. The backend is built on first use from ``config.llm`` unless given, so
    evaluation workers construct it in their own process."""

    def __init__(self, config: AgentConfig | None = None, backend: LLMBackend | None = None) -> None:
        self.config = config or AgentConfig(name="llm")
        if self.config.name != "llm":
            raise ValueError(f"LLMAgent needs AgentConfig(name='llm'), got name={self.config.name!r}")
        self._backend = backend
        self._retriever = TaskRetriever(self.config.top_k)
        # the shipped system prompts (one per simulator language: its command words) are part of the cache
        # key; which one an episode uses is its suite's spec (`agent_prompt`). The step prompt is shared.
        self.system_prompts = {"scienceworld": load_prompt("agent_system"), "alfworld": load_prompt("agent_system_alfworld"),
                               "web": load_prompt("agent_system_web")}
        self.system_prompt = self.system_prompts["scienceworld"]
        self.step_prompt = load_prompt("agent_step")
        self.sampling = SamplingConfig(max_tokens=self.config.max_action_tokens, temperature=0.0, stop=("\n\n",))

    @property
    def backend(self) -> LLMBackend:
        if self._backend is None:
            self._backend = make_backend(self.config.llm)
        return self._backend

    @property
    def cache_key(self) -> str:
        return content_hash([self.config.key, self.system_prompts, self.step_prompt, self.sampling.to_dict()])

    def retrieve(self, description: str, entries: Sequence[MemoryEntry], index_key: str | None = None) -> list[MemoryEntry]:
        return self._retriever(description, entries, index_key)

    def prompt(self, description: str, entries: Sequence[MemoryEntry], history: Sequence[tuple[str, str]],
               observation: str, system_prompt: str | None = None) -> list[dict[str, str]]:
        recent = history[-self.config.history:] if self.config.history else []
        lines = "\n".join(f"> {a}\n{o[:200]}" for a, o in recent) or "(none yet)"
        user = self.step_prompt.format(task=description, memory=render_memory(entries), history=lines,
                                       observation=observation[:_OBSERVATION_CHARS])
        return [{"role": "system", "content": system_prompt or self.system_prompt}, {"role": "user", "content": user}]

    def play(self, suite: TaskSuite, task: EpisodeTask, entries: Sequence[MemoryEntry], seed: int = 0) -> EpisodeResult:
        """Play one episode. LLM errors propagate (the evaluator records them as a failed episode)."""
        observation = suite.start(task)
        description = suite.task_description()
        spec = get_suite_spec(suite.name)
        system, idle = spec.system_prompt(), spec.idle_action
        history: list[tuple[str, str]] = []
        actions: list[str] = []
        score, done = 0.0, False
        sampling = SamplingConfig(**{**self.sampling.to_dict(), "seed": seed})
        while not done and len(actions) < self.config.max_steps:
            reply = self.backend.generate([self.prompt(description, entries, history, observation, system)], sampling)[0][0]
            action = parse_action(reply.text) or idle
            outcome = suite.step(action)
            if outcome.observation.startswith(_REJECTED):
                snapped = closest_action(action, suite.valid_actions())
                if snapped is not None and snapped != action:
                    action = snapped
                    outcome = suite.step(action)
            actions.append(action)
            if outcome.observation.startswith(_AMBIGUOUS) and not outcome.done:
                outcome = suite.step("0")
            observation, score, done = outcome.observation, outcome.score, outcome.done
            history.append((action, observation))
        clipped = min(max(score, 0.0), 100.0)
        return EpisodeResult(task, clipped, score, len(actions), score >= 100.0, tuple(actions))
