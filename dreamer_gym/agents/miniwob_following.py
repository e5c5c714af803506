"""The memory-following agent on MiniWoB++: it carries a procedure from memory over to this page.

Without memory the agent knows one thing: clicking an element whose name the goal quotes ("Click on
the "no" button" -> ``click "no"``). Every other skill in the suite's action language (typing into a
field, checking boxes, choosing from a list, focusing) comes from memory.

A procedure's own goal says which of its values are parameters: ``<slots>`` and quoted values
("To Enter "Myron" into the text field and press Submit: type "Myron" into textbox 1, ..."). The agent
turns that goal into a template, matches it against this task's goal and substitutes the captured
values into the steps; a step ``check each of <items>`` is repeated for every item of a list. Unquoted
values in a verbatim goal ("Select Nb and click Submit") are not parameters: such a procedure only
fits a task with the very same goal. Abstracting them is the consolidator's job.
Deterministic: the same inputs always give the same episode.
"""
from __future__ import annotations

import re
from collections.abc import Sequence

from dreamer_gym.agents.base import AgentConfig, EpisodeResult, Reading, play_steps
from dreamer_gym.memory import MemoryEntry
from dreamer_gym.suites.base import EpisodeTask, TaskSuite

VERBS: tuple[str, ...] = ("click", "type", "check", "uncheck", "select", "focus", "press")
_QUOTED = re.compile(r'"([^"]*)"')
_SLOT = re.compile(r"<([^<>]{1,40})>")
_SPLIT = re.compile(r'("[^"]*")|[,;\n]|\.(?:\s|$)|\bthen\b', re.IGNORECASE)
_VERB = re.compile(r"\b(" + "|".join(VERBS) + r")\b", re.IGNORECASE)
_EACH = re.compile(r"\beach of (<[^<>]+>)", re.IGNORECASE)


def clauses(text: str) -> list[str]:
    """``text`` cut at commas, semicolons, sentence ends and "then", never inside double quotes."""
    out, current = [], ""
    for i, piece in enumerate(_SPLIT.split(text)):
        if i % 2 == 0:
            current += piece or ""
        elif piece is not None:  # a quoted value: part of the clause
            current += piece
        else:  # a separator
            out.append(current)
            current = ""
    out.append(current)
    return [c.strip() for c in out if c.strip()]


def extract_steps(body: str) -> list[str]:
    """Actions in a procedure's body, in order, whatever the connectives around them."""
    steps = []
    for clause in clauses(body):
        m = _VERB.search(clause)
        if m:
            steps.append(m.group(1).lower() + clause[m.end():].rstrip(" ."))
    return steps


def split_head(text: str) -> tuple[str, str]:
    """(goal, body) of "To <goal>: <steps>" or "To <goal>. <prose>"; the goal is "" when there is none."""
    m = re.match(r'\s*to\s+((?:[^":.]|"[^"]*")+?)(?::\s+|\.\s+|\.?$)', text, re.IGNORECASE)
    return (m.group(1).strip(), text[m.end():]) if m else ("", text)


def template(goal: str) -> tuple[re.Pattern[str], list[str]]:
    """A regex for goals of ``goal``'s shape, and the parameter each group captures (a slot or a value)."""
    names: list[str] = []
    pattern = ""
    pos = 0
    for m in re.finditer(r'<[^<>]{1,40}>|"[^"]*"', goal):
        pattern += re.escape(goal[pos:m.start()])
        token = m.group(0)
        if token.startswith("<"):
            names.append(token)
            pattern += "(.+?)"
        else:
            names.append(token[1:-1])
            pattern += '"(.*?)"'
        pos = m.end()
    pattern += re.escape(goal[pos:].rstrip("."))
    return re.compile(rf"^{pattern}\.?$", re.IGNORECASE), names


def items_of(value: str) -> list[str]:
    """"A, B and C" -> [A, B, C]; "nothing" -> []."""
    if value.strip().lower() == "nothing":
        return []
    return [v.strip() for v in re.split(r",\s*|\s+and\s+", value) if v.strip()]


def bind(steps: Sequence[str], bindings: dict[str, str]) -> list[str]:
    """Substitute parameters into ``steps``; ``VERB each of <list>`` becomes one step per item."""
    out = []
    for step in steps:
        each = _EACH.search(step)
        if each and each.group(1) in bindings:
            verb = step[: each.start()].strip()
            out += [f'{verb} "{item}"' for item in items_of(bindings[each.group(1)])]
            continue
        step = _SLOT.sub(lambda m: bindings.get(m.group(0), m.group(0)), step)
        step = _QUOTED.sub(lambda m: f'"{bindings.get(m.group(1), m.group(1))}"', step)
        out.append(step)
    return out


class MiniWoBFollowing:
    """Plays one MiniWoB episode with retrieved entries (see the module docstring)."""

    def __init__(self, config: AgentConfig) -> None:
        self.config = config

    @staticmethod
    def reads(entries: Sequence[MemoryEntry]) -> Reading:
        """What :meth:`plan` takes from ``entries``: each procedure's steps and its goal's parameters."""
        heads_bodies = [split_head(e.text) for e in entries if e.kind == "procedure"]
        actions = tuple(s for _, body in heads_bodies for s in extract_steps(body))
        params = tuple(dict.fromkeys(n for head, _ in heads_bodies for n in template(head)[1]))
        return Reading(actions=actions, slots=params)

    @staticmethod
    def plan(goal: str, entries: Sequence[MemoryEntry]) -> list[str]:
        """The steps of the first retrieved procedure whose goal template fits ``goal``, bound to it; else
        the first procedure's steps as written; else nothing."""
        fallback: list[str] | None = None
        for entry in entries:
            if entry.kind != "procedure":
                continue
            head, body = split_head(entry.text)
            steps = extract_steps(body)
            if not steps:
                continue
            pattern, names = template(head)
            m = pattern.match(goal.strip())
            if m:
                return bind(steps, dict(zip(names, m.groups())))
            if fallback is None:
                fallback = steps
        return fallback or []

    def play(self, suite: TaskSuite, task: EpisodeTask, entries: Sequence[MemoryEntry]) -> EpisodeResult:
        suite.start(task)
        goal = suite.task_description()
        innate = [f'click "{v}"' for v in _QUOTED.findall(goal)[:1]]
        return play_steps(suite, task, [*self.plan(goal, entries), *innate], self.config.max_steps)
