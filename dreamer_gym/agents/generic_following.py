"""The default memory-following reader for a suite that brings none of its own.

It knows no command words: a procedure's steps are its clauses ("To <goal>: a, b, then c"), and its
goal's ``<slots>`` and quoted values are parameters matched against this task's goal (the same rule as
every suite's reader, :mod:`~dreamer_gym.agents.miniwob_following`). A step whose slot the goal does not
fill is skipped. With nothing usable in memory it plays the suite's idle action once. Deterministic.
"""
from __future__ import annotations

import re
from collections.abc import Sequence

from dreamer_gym.agents.base import AgentConfig, EpisodeResult, Reading, play_steps
from dreamer_gym.agents.miniwob_following import bind, clauses, split_head, template
from dreamer_gym.memory import MemoryEntry
from dreamer_gym.suites.base import EpisodeTask, TaskSuite
from dreamer_gym.suites.registry import get_suite_spec

_SLOT = re.compile(r"<[^<>]{1,40}>")


def plan(goals: Sequence[str], entries: Sequence[MemoryEntry]) -> list[str]:
    """The clauses of the first retrieved procedure whose goal template fits one of ``goals`` (the task
    text, its goal clause), bound to it; else the first procedure's clauses as written; slot-bearing
    steps left unbound are dropped."""
    fallback: list[str] | None = None
    for entry in entries:
        if entry.kind != "procedure":
            continue
        head, body = split_head(entry.text)
        steps = [c.rstrip(" .") for c in clauses(body)]
        if not steps:
            continue
        pattern, names = template(head)
        m = next((m for g in goals if (m := pattern.match(g.strip()))), None)
        if m:
            return [s for s in bind(steps, dict(zip(names, m.groups()))) if not _SLOT.search(s)]
        if fallback is None:
            fallback = [s for s in steps if not _SLOT.search(s)]
    return fallback or []


class GenericFollowing:
    """Plays one episode of any suite by following the best-fitting procedure's clauses literally."""

    def __init__(self, config: AgentConfig) -> None:
        self.config = config

    @staticmethod
    def reads(entries: Sequence[MemoryEntry]) -> Reading:
        """What :func:`plan` takes from ``entries``: each procedure's clauses and its goal's parameters."""
        heads_bodies = [split_head(e.text) for e in entries if e.kind == "procedure"]
        actions = tuple(c.rstrip(" .") for _, body in heads_bodies for c in clauses(body))
        return Reading(actions=actions, slots=tuple(dict.fromkeys(n for h, _ in heads_bodies for n in template(h)[1])))

    def play(self, suite: TaskSuite, task: EpisodeTask, entries: Sequence[MemoryEntry]) -> EpisodeResult:
        suite.start(task)
        spec = get_suite_spec(suite.name)
        description = suite.task_description()
        steps = plan((description, spec.profile.goal(description)), entries) or [spec.idle_action]
        return play_steps(suite, task, steps, self.config.max_steps)
