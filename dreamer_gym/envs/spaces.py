"""Text spaces with a real charset, so `sample()` and `contains()` work and `check_env` passes; the action
space samples JSON tool calls."""
from __future__ import annotations

import json
import re
import string
from typing import Any

from gymnasium import spaces

from dreamer_gym.memory import KINDS

CHARSET: str = "".join(sorted(set(string.printable) - set("\x0b\x0c\r")))
_ALLOWED = frozenset(CHARSET)


_OUTSIDE = re.compile(r"[^\t\n\x20-\x7e]")


def sanitize(text: str, max_length: int) -> str:
    """Map characters outside :data:`CHARSET` to '?' and cut to ``max_length`` (observations only)."""
    clean = _OUTSIDE.sub("?", text)
    return clean if len(clean) <= max_length else clean[: max_length - 3] + "..."


def text_space(max_length: int) -> spaces.Text:
    return spaces.Text(max_length=max_length, min_length=0, charset=CHARSET)


_LETTERS = string.ascii_lowercase
SAMPLED_TOOLS: tuple[str, ...] = ("read_entry", "read_trajectory", "search", "keep", "emit", "retract")


class ToolCallSpace(spaces.Text):
    """The action space: any charset string up to ``max_length`` (``contains`` as :class:`~gymnasium.spaces.Text`),
    whose ``sample()`` draws a tool call that is well-formed JSON with arguments of the right types.

    Samples are valid against :func:`dreamer_gym.envs.schema.tool_call_schema` without a region: ids
    are random, so calls that name an entry or a trajectory are answered with "not in this region"
    (a space is copied into every sub-env of a vector env, so it cannot know the region; the ``random``
    consolidator makes region-valid calls). ``commit`` is not drawn by default (``tools``): random samples
    end an episode by running out of tool calls, which commits, and ``check_env`` never starts a simulator.
    With a ``mask`` or ``probability``, ``sample`` falls back to :class:`~gymnasium.spaces.Text` characters.

    Example:
        >>> space = ToolCallSpace(16_384, seed=0)
        >>> json.loads(space.sample())["tool"] in SAMPLED_TOOLS
        True
    """

    def __init__(self, max_length: int, tools: tuple[str, ...] = SAMPLED_TOOLS, seed: int | None = None) -> None:
        super().__init__(max_length=max_length, min_length=0, charset=CHARSET, seed=seed)
        self.tools = tuple(tools)

    def _words(self, low: int, high: int) -> str:
        rng = self.np_random
        return " ".join("".join(rng.choice(list(_LETTERS), size=int(rng.integers(2, 9))))
                        for _ in range(int(rng.integers(low, high + 1))))

    def _id(self, prefix: str) -> str:
        return prefix + "".join(self.np_random.choice(list("0123456789abcdef"), size=12))

    def _args(self, tool: str) -> dict[str, Any]:
        rng = self.np_random
        if tool == "read_entry":
            return {"id": self._id("e")}
        if tool == "read_trajectory":
            start = int(rng.integers(0, 20))
            return {"id": self._id("t"), "start": start, "end": start + int(rng.integers(0, 20))}
        if tool == "search":
            return {"query": self._words(1, 6), "k": int(rng.integers(1, 21))}
        if tool == "keep":
            return {"ids": [self._id("e") for _ in range(int(rng.integers(1, 6)))]}
        if tool == "emit":
            return {"kind": KINDS[int(rng.integers(len(KINDS)))], "text": self._words(1, 30),
                    "provenance": [self._id("e") for _ in range(int(rng.integers(1, 4)))]}
        if tool == "retract":
            return {"index": int(rng.integers(0, 12))}
        return {}

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        if mask is not None or probability is not None:
            return super().sample(mask=mask, probability=probability)
        tool = self.tools[int(self.np_random.integers(len(self.tools)))]
        action = json.dumps({"tool": tool, **self._args(tool)})
        return action if len(action) <= self.max_length else json.dumps({"tool": tool})[: self.max_length]

    def __repr__(self) -> str:
        return f"ToolCallSpace({self.max_length}, tools={list(self.tools)})"
