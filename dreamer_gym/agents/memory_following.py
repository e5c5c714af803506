"""The deterministic memory-following agent: its score moves with what its memory says.

It retrieves entries for the task, executes the steps of the best-matching procedure (filling
``<slot>`` placeholders from the task text, observations and facts), skips what pitfalls forbid, and
navigates on its own. With nothing useful in memory it falls back to a weak fixed exploration.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from dreamer_gym.agents.analogy import Analogy, rooms_named_for
from dreamer_gym.agents.base import AgentConfig, EpisodeResult, Reading
from dreamer_gym.agents.reading import (
    command_words,
    extract_actions,
    fact_items,
    fill,
    forbidden_actions,
    parallel_steps,
    slots,
    steps_from_outcomes,
)
from dreamer_gym.agents.task_retriever import TaskRetriever
from dreamer_gym.agents.slots import SlotContext, resolve_slot
from dreamer_gym.agents.world import ROOMS, WorldModel, objects_in
from dreamer_gym.memory import MemoryEntry
from dreamer_gym.memory.hashing import content_hash
from dreamer_gym.suites.base import EpisodeTask, StepOutcome, TaskSuite
from dreamer_gym.suites.registry import get_suite_spec

# Bump whenever a change to how the followers read memory or act can change an episode: it is part of
# the evaluation-cache key. 2: concrete notes are read by analogy (issue 11, agents/analogy.py). 3: a
# rejected step tries what other notes on the same goal did there (reading.parallel_steps); ALFWorld notes
# bind their names through their own goal (issue 11).
READING_VERSION = 3
_AMBIGUOUS = "Ambiguous request"
_UNKNOWN_ACTION = "No known action"  # ScienceWorld's answer to an action naming nothing here


class _Episode:
    """One episode's mutable state; created per call to :meth:`MemoryFollowingAgent.play`."""

    def __init__(self, suite: TaskSuite, task: EpisodeTask, config: AgentConfig) -> None:
        self.suite, self.task, self.config = suite, task, config
        self.world = WorldModel()
        self.actions: list[str] = []
        self.score = 0.0
        self.done = False
        first = suite.start(task)
        self.description = suite.task_description()
        self.world.observe_look(first)
        self.notes: list[str] = []  # what the agent has read (recipes, labels)
        self.reading: float | None = None  # the last measurement it observed
        self.searched = False  # a rejected step has sent it searching the house (once per episode)
        self.goal = get_suite_spec(suite.name).profile.goal(self.description)  # the task's goal clause

    @property
    def steps_left(self) -> int:
        return self.config.max_steps - len(self.actions)

    def act(self, action: str) -> StepOutcome | None:
        if self.done or self.steps_left <= 0:
            self.done = True
            return None
        outcome = self.suite.step(action)
        self.actions.append(action)
        self.score = outcome.score
        self.done = outcome.done
        if outcome.observation.startswith(_AMBIGUOUS) and not self.done and self.steps_left > 0:
            outcome = self.suite.step("0")  # the first reading, as gold paths do
            self.actions.append("0")
            self.score, self.done = outcome.score, outcome.done
        if action.startswith("read "):
            self.notes.append(outcome.observation)
        reading = re.search(r"temperature of (-?\d+(?:\.\d+)?) degrees", outcome.observation)
        if reading:
            self.reading = float(reading.group(1))
        if action == "look around" or action.startswith("go to"):
            self.world.observe_look(self.suite.look())
        return outcome

    def navigate(self, target: str) -> bool:
        """Walk to ``target`` through doors, exploring when the way is not known yet."""
        guard = 0
        while not self.done and self.world.room != target and guard < 20:
            guard += 1
            path = self.world.path_to(target) or self.world.frontier_path()
            if not path:
                return False
            nxt = path[0]
            self.act(f"open door to {nxt}")
            outcome = self.act(f"go to {nxt}")
            if outcome is None or "You move to" not in outcome.observation:
                self.world.doors.get(self.world.room or "", set()).discard(nxt)
        return self.world.room == target


def _rooms_told(description: str) -> list[str]:
    """The rooms a task text names, in the order it names them."""
    text = description.lower()
    return [r for _, r in sorted((text.find(r), r) for r in ROOMS if r in text)]


class MemoryFollowingAgent:
    """See the module docstring. Deterministic: the same inputs always give the same episode.

    Retrieval is shared; playing is the suite's own reader of its commands, named by its
    :class:`~dreamer_gym.suites.spec.SuiteSpec` (``follower``), so this class never branches on a suite."""

    def __init__(self, config: AgentConfig | None = None) -> None:
        self.config = config or AgentConfig()
        self._retriever = TaskRetriever(self.config.top_k)
        self._followers: dict[str, object] = {}

    @property
    def cache_key(self) -> str:
        """What the evaluation cache keys this agent's episodes by: its config and the version of its reading
        (:data:`READING_VERSION`), so a cache filled by an older reader is never served."""
        return content_hash({"config": self.config.key, "reading": READING_VERSION})

    def retrieve(self, description: str, entries: Sequence[MemoryEntry], index_key: str | None = None) -> list[MemoryEntry]:
        """Top entries for the task (see :class:`TaskRetriever`)."""
        return self._retriever(description, entries, index_key)

    def play(self, suite: TaskSuite, task: EpisodeTask, entries: Sequence[MemoryEntry], seed: int = 0) -> EpisodeResult:
        """Play one episode with ``entries`` (already retrieved, best first) in context."""
        follower = self._followers.get(suite.name)
        if follower is None:
            follower = self._followers[suite.name] = get_suite_spec(suite.name).follower_class()(self.config)
        return follower.play(suite, task, entries)  # type: ignore[attr-defined]


class ScienceWorldFollowing:
    """The memory-following reader of ScienceWorld's commands (navigation built in, slots filled from the
    task text, observations and facts, pitfalls skipped)."""

    def __init__(self, config: AgentConfig) -> None:
        self.config = config

    @staticmethod
    def reads(entries: Sequence[MemoryEntry]) -> Reading:
        """What :meth:`play` takes from ``entries``: every procedure's steps, the steps notes on what raised the
        score piece together, what pitfalls forbid, the slots and the looked-up facts."""
        actions = [a for e in entries if e.kind == "procedure" for a in extract_actions(e.text)]
        actions += steps_from_outcomes([e.text for e in entries if e.kind == "insight"])[1]
        return Reading(tuple(actions), tuple(sorted(forbidden_actions([e.text for e in entries if e.kind == "pitfall"]))),
                       tuple(dict.fromkeys(s for a in actions for s in slots(a))), tuple(fact_items([e.text for e in entries])))

    def play(self, suite: TaskSuite, task: EpisodeTask, entries: Sequence[MemoryEntry]) -> EpisodeResult:
        ep = _Episode(suite, task, self.config)
        procedures = [e for e in entries if e.kind == "procedure"]
        facts = [e.text for e in entries]  # a list under a category may sit in any entry, a procedure's too
        banned = forbidden_actions([e.text for e in entries if e.kind == "pitfall"])
        if procedures:
            note, steps = procedures[0].text, extract_actions(procedures[0].text)
        else:  # no procedure in context: piece one together from notes on what raised the score
            goal, steps = steps_from_outcomes([e.text for e in entries if e.kind == "insight"])
            note = f"To {goal}: " + ", ".join(steps) if goal else ", ".join(steps)
        if steps:
            analogy = Analogy.between(note, ep.goal)
            self._follow(ep, steps, facts, banned, analogy)
        if not ep.done and ep.score <= 0:
            self._explore(ep)
        raw = ep.score
        clipped = min(max(raw, 0.0), 100.0)
        return EpisodeResult(task, clipped, raw, len(ep.actions), raw >= 100.0, tuple(ep.actions))

    def _follow(self, ep: _Episode, steps: list[str], facts: list[str], banned: set[str], analogy: Analogy) -> None:
        bindings: dict[str, str] = {}
        seen: dict[str | None, int] = {}
        for step in steps:
            verb = command_words(step)
            ordinal = seen[verb] = seen.get(verb, -1) + 1  # the ordinal-th step with these command words
            if ep.done or ep.steps_left <= 0:
                return
            step = analogy.apply(step)
            if step.startswith("open door to"):
                continue  # navigation opens doors itself
            if step.startswith("go to"):
                room = self._resolve_room(ep, step[len("go to "):].strip(), bindings)
                if room:
                    ep.navigate(room)
                continue
            for name in slots(step):
                if name not in bindings:
                    value = self._resolve_slot(ep, name, step, bindings, facts)
                    if value:
                        bindings[name] = value
            action = fill(step, bindings)
            if slots(action) or action in banned:
                continue
            outcome = ep.act(action)
            if outcome is not None and not slots(step) and outcome.observation.startswith(_UNKNOWN_ACTION):
                self._adapt(ep, action, ordinal, analogy, banned, facts)

    def _adapt(self, ep: _Episode, action: str, ordinal: int, analogy: Analogy, banned: set[str],
               facts: list[str], max_rooms: int = 10) -> None:
        """A rejected concrete step: what it names is not here. First what other notes on the same goal did at
        this point (:func:`~dreamer_gym.agents.reading.parallel_steps`), then search (once per episode): first the
        rooms a retrieved fact places an object of that kind in, then those the task text names, then the
        nearest unvisited ones, at most
        ``max_rooms``, retrying in each (an object held "in inventory" is picked up where it is found). Where
        it is nowhere, retry once with an object of the same kind in sight (see
        :mod:`dreamer_gym.agents.analogy`) and keep the rewrite if the simulator accepts it."""
        if self._parallel(ep, action, ordinal, analogy, banned, facts):
            return
        if not ep.searched:
            ep.searched = True
            if self._search(ep, action, facts, max_rooms, lambda: self._parallel(ep, action, ordinal, analogy, banned, facts)):
                return
        if not ep.done:
            self._retry(ep, action, analogy, banned)

    def _parallel(self, ep: _Episode, action: str, ordinal: int, analogy: Analogy, banned: set[str],
                  facts: list[str]) -> bool:
        """Whether what another note on the same goal did here was accepted (each tried once per room)."""
        verb = command_words(action) or ""
        for candidate in parallel_steps(action, ordinal, facts, ep.goal, ep.score):
            if ep.done or candidate in banned:
                continue
            outcome = ep.act(candidate)
            if outcome is not None and not outcome.observation.startswith(_UNKNOWN_ACTION):
                analogy.learn(action[len(verb):].strip(), candidate[len(verb):].strip())
                return True
        return False

    def _search(self, ep: _Episode, action: str, facts: list[str], max_rooms: int,
                fallback: Callable[[], bool] = lambda: False) -> bool:
        held = re.search(r"(?:^|\s)(?:on |to |in )?([a-z0-9 ]+?) in inventory\b", action)
        hinted = [r for r in dict.fromkeys([*rooms_named_for(action, facts), *_rooms_told(ep.description)])
                  if r != ep.world.room]
        held_name = held.group(1).split(" on ")[-1] if held else None
        for _ in range(max_rooms):
            target = hinted.pop(0) if hinted else None
            if target is None:
                path = ep.world.frontier_path()
                target = path[-1] if path else None
            if target is None or not ep.navigate(target):
                return False
            if held_name in ep.world.objects:
                ep.act(f"pick up {held_name}")
            outcome = ep.act(action)
            if outcome is None or not outcome.observation.startswith(_UNKNOWN_ACTION) or fallback():
                return True
        return False

    def _retry(self, ep: _Episode, action: str, analogy: Analogy, banned: set[str]) -> bool:
        """Whether an object of the same kind in sight made ``action`` acceptable (tried once)."""
        known = (*ep.world.objects, *objects_in(ep.suite.inventory()))
        for phrase, obj, rewritten in analogy.alternatives(action, known):
            if rewritten in banned:
                continue
            outcome = ep.act(rewritten)
            if outcome is not None and not outcome.observation.startswith(_UNKNOWN_ACTION):
                analogy.learn(phrase, obj)
                return True
            return False
        return False

    # --- slot resolution -------------------------------------------------------------------------------
    def _resolve_room(self, ep: _Episode, target: str, bindings: dict[str, str]) -> str | None:
        if target in ROOMS:
            return target
        name = slots(target)[0] if slots(target) else None
        if name is None:
            return None
        if name in bindings:
            return bindings[name]
        used = set(bindings.values())
        for room in _rooms_told(ep.description):
            if room not in used:
                bindings[name] = room
                return room
        return None

    def _resolve_slot(self, ep: _Episode, name: str, step: str, bindings: dict[str, str], facts: list[str]) -> str | None:
        ctx = SlotContext(
            name=name,
            step=step,
            description=ep.description.lower(),
            used=frozenset(bindings.values()),
            visible=(*ep.world.objects, *objects_in(ep.suite.inventory())),
            facts=tuple(facts),
            last_read=ep.notes[-1] if ep.notes else None,
            reading=ep.reading,
        )
        return resolve_slot(ctx)

    def _explore(self, ep: _Episode) -> None:
        """Weak fixed fallback: visit the rooms the task text names and look around."""
        for room in [r for r in ROOMS if r in ep.description.lower()][:2]:
            if ep.done:
                return
            ep.navigate(room)
            ep.act("look around")
