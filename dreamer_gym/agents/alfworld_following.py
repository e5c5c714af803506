"""The memory-following agent on ALFWorld: it reads a procedure from memory and carries it over, by
analogy, to the task at hand.

What the agent knows without memory: ALFWorld's command words, how to walk to a receptacle, open it and
see what is inside, and how to read a goal sentence ("put a clean mug in shelf": object *mug*, target
*shelf*). What it does not know: what a goal asks beyond its literal words (that *clean* means the sink
basin, that looking *under the desklamp* means switching the lamp on), nor where objects usually are.
Memory supplies both:

* the best-matching **procedure** (first retrieved whose goal reads like the task's) is executed step
  by step. ``<slots>`` bind to this task's object and target (through the procedure's own goal, "To put
  a hot <object> in <receptacle>: ..."); a concrete name binds when it is of this task's type ("take
  mug 2 from ..." when the task asks for a mug: instance numbers are arbitrary) or, read by analogy, of
  the type the procedure's own goal puts in that role ("To heat some apple and put it in cabinet: ...,
  take apple 3 from ..., move apple 3 to cabinet 2" read for "put a hot cup in fridge": apple stands for
  cup, cabinet for fridge), as any reader adapts an example. Then ``take`` becomes a search for the
  object, ``clean/heat/cool ... with X`` goes to this room's X, ``move ... to`` goes to the target.
  Every other step is replayed as written when the room has what it names: the detours and wrong steps
  of a noisy procedure cost real steps, a procedure of another kind of task (cool for heat) does the
  wrong thing, and one with no goal to align handles only what it names. Those are the consolidator's
  job, not the agent's.
* **facts** ("The mug 1 can be found in the countertop 2.", "A mug is usually found in the cabinet,
  countertop or coffeemachine.") order the search: receptacle types named for the object come first.

With no usable procedure the agent falls back to the goal's literal reading: find the object, take it,
put it in the target (which solves plain pick-and-place, never clean/heat/cool or the lamp).
Deterministic: the same inputs always give the same episode.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from dreamer_gym.agents.base import AgentConfig, EpisodeResult, Reading
from dreamer_gym.agents.reading import extract_actions, slots
from dreamer_gym.memory import MemoryEntry
from dreamer_gym.suites.base import EpisodeTask, TaskSuite

# ALFWorld's command words, longest first (the shared reader splits prose and lists by them)
VERBS: tuple[str, ...] = (
    "go to", "take", "move", "put", "open", "close", "clean", "heat", "cool", "use", "examine", "look", "inventory",
)
_NAME = r"(?:<[^<>]{1,40}>|[a-z]+(?: \d+)?)"  # "mug 1", "mug" or a "<slot>"
_GOALS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern))
    for kind, pattern in (
        ("look", rf"^(?:look at|examine) (?:the |a |an )?(?P<obj>{_NAME}) (?:under|with) the (?P<target>{_NAME})$"),
        ("two", rf"^(?:put|find) two (?P<obj>{_NAME}) (?:and put them )?(?:in|on) (?P<target>{_NAME})$"),
        ("clean", rf"^(?:put a clean (?P<obj>{_NAME})|clean some (?P<obj2>{_NAME}) and put it) (?:in|on) (?P<target>{_NAME})$"),
        ("hot", rf"^(?:put a hot (?P<obj>{_NAME})|heat some (?P<obj2>{_NAME}) and put it) (?:in|on) (?P<target>{_NAME})$"),
        ("cool", rf"^(?:put a cool (?P<obj>{_NAME})|cool some (?P<obj2>{_NAME}) and put it) (?:in|on) (?P<target>{_NAME})$"),
        ("put", rf"^put (?:a |an |some )?(?P<obj>{_NAME}) (?:in|on) (?P<target>{_NAME})$"),
    )
)
_SEE = re.compile(r"you see (.+?)\.?$")
_ITEM = re.compile(r"^(?:a|an) ([a-z]+ \d+)$")
_FACT_SEEN = re.compile(r"\bthe ([a-z]+)(?: \d+)? (?:can be found|is|was) (?:in|on) the ([a-z]+)(?: \d+)?")
_FACT_USUALLY = re.compile(r"\b(?:a|an|the) ([a-z]+) (?:is|are) (?:usually|often) (?:found )?(?:in|on) (?:the )?(.+)")
_APPLIANCE = {"clean": "sinkbasin", "heat": "microwave", "cool": "fridge"}
_LAMPS = ("desklamp", "floorlamp")


@dataclass(frozen=True)
class Goal:
    kind: str  # put | clean | hot | cool | two | look
    obj: str
    target: str

    @property
    def count(self) -> int:
        return 2 if self.kind == "two" else 1


def parse_goal(text: str) -> Goal | None:
    """A goal clause in ALFWorld's template wording ("put a clean mug in shelf"), or None."""
    clause = re.sub(r"^(?:your task is to:?|to)\s+", "", text.strip().lower()).rstrip(". ")
    for kind, pattern in _GOALS:
        m = pattern.match(clause)
        if m:
            obj = m.group("obj") or m.groupdict().get("obj2") or ""
            return Goal(kind, obj, m.group("target"))
    return None


def kind_of(name: str) -> str:
    """An instance's type ("mug 2" -> "mug"); slots stay as they are."""
    return re.sub(r" \d+$", "", name)


def read_priors(texts: Sequence[str]) -> dict[str, list[str]]:
    """Object type -> receptacle types where memory says it is found, in the order memory says them."""
    priors: dict[str, list[str]] = {}
    sentences = [s for text in texts for s in re.split(r"[.;\n]\s*", text.lower()) if s]
    for low in sentences:
        for m in _FACT_USUALLY.finditer(low):
            places = re.split(r",\s*(?:or\s+|and\s+)?|\s+or\s+|\s+and\s+", m.group(2))
            for place in places:
                place = kind_of(re.sub(r"^(?:the|a|an)\s+", "", place.strip()))
                if re.fullmatch(r"[a-z]+", place):
                    priors.setdefault(m.group(1), []).append(place)
        for m in _FACT_SEEN.finditer(low):
            priors.setdefault(m.group(1), []).append(m.group(2))
    return {k: list(dict.fromkeys(v)) for k, v in priors.items()}


def seen_items(observation: str) -> list[str]:
    """Instances an observation lists ("On the desk 1, you see a mug 1, and a pen 2." -> mug 1, pen 2)."""
    m = _SEE.search(observation.strip())
    if not m or m.group(1).startswith("nothing"):
        return []
    out = []
    for part in re.split(r",\s*(?:and\s+)?|\s+and\s+", m.group(1)):
        item = _ITEM.match(part.strip())
        if item:
            out.append(item.group(1))
    return out


@dataclass
class _Episode:
    """One episode's state: where the agent is, what it has seen and holds."""

    suite: TaskSuite
    config: AgentConfig
    receptacles: list[str] = field(default_factory=list)  # in the order the room description lists them
    contents: dict[str, list[str]] = field(default_factory=dict)  # receptacle -> instances last seen there
    closed: set[str] = field(default_factory=set)
    searched: set[str] = field(default_factory=set)
    placed: set[str] = field(default_factory=set)  # instances put into a receptacle of the goal's target type
    target_type: str = ""
    held: list[str] = field(default_factory=list)  # every instance held, in order (found again first)
    actions: list[str] = field(default_factory=list)
    at: str | None = None
    holding: str | None = None
    score: float = 0.0
    done: bool = False

    @property
    def steps_left(self) -> int:
        return self.config.max_steps - len(self.actions)

    def act(self, action: str) -> str:
        if self.done or self.steps_left <= 0:
            self.done = True
            return ""
        outcome = self.suite.step(action)
        self.actions.append(action)
        self.score, self.done = outcome.score, outcome.done
        obs = outcome.observation
        if action.startswith("go to ") and obs.startswith("You arrive at"):
            self.at = action[len("go to "):]
            if "is closed" in obs:
                self.closed.add(self.at)
            else:
                self._saw(self.at, obs)
        elif action.startswith("open ") and obs.startswith("You open"):
            self.closed.discard(action[len("open "):])
            self._saw(action[len("open "):], obs)
        elif action.startswith("close ") and obs.startswith("You close"):
            self.closed.add(action[len("close "):])
        elif action.startswith("take ") and obs.startswith("You pick up"):
            self.holding = action[len("take "):].split(" from ")[0]
            self.held.append(self.holding)
            for items in self.contents.values():
                if self.holding in items:
                    items.remove(self.holding)
        elif (action.startswith(("move ", "put "))) and obs.startswith(("You move", "You put")):
            if self.holding:
                if self.at and kind_of(self.at) == self.target_type:
                    self.placed.add(self.holding)
                if self.at:
                    self.contents.setdefault(self.at, []).append(self.holding)
            self.holding = None
        return obs

    def _saw(self, place: str, obs: str) -> None:
        self.contents[place] = seen_items(obs)
        self.searched.add(place)

    def instances(self, type_: str) -> list[str]:
        return [r for r in self.receptacles if kind_of(r) == type_]

    def go(self, place: str) -> bool:
        if self.at != place:
            self.act(f"go to {place}")
        if place in self.closed and not self.done:
            self.act(f"open {place}")
        return self.at == place

    def find(self, type_: str, hints: Sequence[str]) -> tuple[str, str] | None:
        """Walk to an instance of ``type_`` (not one already placed) and return (instance, receptacle)."""
        while not self.done and self.steps_left > 0:
            known = [(item not in self.held, place, item) for place, items in self.contents.items() for item in items
                     if kind_of(item) == type_ and item not in self.placed]
            if known:  # one it already handled (heated, cleaned...) first
                _, place, item = min(known, key=lambda k: k[0])
                if self.go(place) and item in self.contents.get(place, []):
                    return item, place
                self.contents[place] = [i for i in self.contents.get(place, []) if i != item]
                continue
            rank = {t: i for i, t in enumerate(dict.fromkeys(hints))}
            todo = [r for r in self.receptacles if r not in self.searched]
            if not todo:
                return None
            todo.sort(key=lambda r: rank.get(kind_of(r), len(rank)))
            self.go(todo[0])
            self.searched.add(todo[0])  # even when closed and not opened: never loop on it
        return None

    def fetch(self, type_: str, hints: Sequence[str]) -> bool:
        """Hold an instance of ``type_``."""
        if self.holding and kind_of(self.holding) == type_:
            return True
        if self.holding and self.at:  # hands full with something else: put it down here first
            self.act(f"move {self.holding} to {self.at}")
        found = self.find(type_, hints)
        if found is None or self.done:
            return False
        item, place = found
        self.act(f"take {item} from {place}")
        return self.holding == item

    def place_in(self, target_type: str) -> bool:
        if self.holding is None:
            return False
        for place in self.instances(target_type)[:1]:
            if self.go(place) and not self.done:
                self.act(f"move {self.holding} to {place}")
                return self.holding is None
        return False

    def use_lamp(self, lamp_type: str, hints: Sequence[str]) -> None:
        found = self.find(lamp_type, hints)
        if found is not None and not self.done:
            self.act(f"use {found[0]}")


class ALFWorldFollowing:
    """Plays one ALFWorld episode with retrieved entries (see the module docstring)."""

    def __init__(self, config: AgentConfig) -> None:
        self.config = config

    @staticmethod
    def reads(entries: Sequence[MemoryEntry]) -> Reading:
        """What :meth:`play` takes from ``entries``: each procedure's steps and the places facts name."""
        actions = tuple(a for e in entries if e.kind == "procedure" for a in extract_actions(e.text, VERBS))
        priors = read_priors([e.text for e in entries])
        return Reading(actions=actions, slots=tuple(dict.fromkeys(s for a in actions for s in slots(a))),
                       facts=tuple(f"{obj} @ {place}" for obj, places in priors.items() for place in places))

    def play(self, suite: TaskSuite, task: EpisodeTask, entries: Sequence[MemoryEntry]) -> EpisodeResult:
        first = suite.start(task)
        goal = parse_goal(suite.task_description())
        ep = _Episode(suite, self.config, receptacles=seen_items(first), target_type=goal.target if goal else "")
        if goal is not None:
            priors = read_priors([e.text for e in entries])  # facts may sit in any entry, a procedure's too
            procedure = self._choose(goal, [e for e in entries if e.kind == "procedure"])
            if procedure is not None:
                self._follow(ep, goal, procedure, priors)
            if not ep.done and goal.kind != "look":
                self._literal(ep, goal, priors.get(goal.obj, []))
        raw = ep.score
        return EpisodeResult(task, min(max(raw, 0.0), 100.0), raw, len(ep.actions), raw >= 100.0, tuple(ep.actions))

    @staticmethod
    def _choose(goal: Goal, procedures: Sequence[MemoryEntry]) -> tuple[Goal, list[str]] | None:
        """The first retrieved procedure whose own goal is of the task's kind, else the first one at all."""
        parsed = []
        for entry in procedures:
            head = re.split(r":|\.\s", entry.text, maxsplit=1)[0]
            steps = extract_actions(entry.text, VERBS)
            own = parse_goal(head)
            if steps:
                parsed.append((own, steps))
        for own, steps in parsed:
            if own is not None and own.kind == goal.kind:
                return own, steps
        if parsed:
            own, steps = parsed[0]
            return (own or Goal(goal.kind, goal.obj, goal.target)), steps
        return None

    def _follow(self, ep: _Episode, goal: Goal, procedure: tuple[Goal, list[str]], priors: dict[str, list[str]]) -> None:
        own, steps = procedure
        # the note's own goal aligned with the task's: its object and target types stand for this task's
        note_obj, note_target = kind_of(own.obj), kind_of(own.target)

        def role(name: str) -> str | None:
            """A ``<slot>`` binds to this task's object or target by the procedure's own goal; a concrete
            name when it is of this task's type ("mug 2" is a mug) or of the type the note's own goal puts
            in that role ("apple 3" in a note "To heat some apple ..." read for "heat some cup ..."). Other
            names stay literal."""
            if name.startswith("<"):
                if name == own.target or name in ("<receptacle>", "<target>", "<lamp>"):
                    return "target"
                return "obj" if name == own.obj or name in ("<object>", "<obj>") else None
            if kind_of(name) in (goal.obj, note_obj):
                return "obj"
            return "target" if kind_of(name) in (goal.target, note_target) else None

        for i, step in enumerate(steps):
            if ep.done or ep.steps_left <= 0:
                return
            m = re.match(r"(go to|open|close|examine|use) (.+)$", step)
            verb, arg = (m.group(1), m.group(2)) if m else (step.split(" ")[0], "")
            if verb == "go to":
                later = " ".join(steps[i + 1: i + 3])
                if arg.startswith("<") or arg in later or role(arg):
                    continue  # the next step's skill walks there itself
                if arg in ep.receptacles:
                    ep.act(step)  # replayed as written
                continue
            take = re.match(r"take (.+?) from (.+)$", step)
            if take:
                if role(take.group(1)) == "obj":
                    hints = list(priors.get(goal.obj, []))
                    if not take.group(2).startswith("<"):  # where the note found its object: first when
                        # it is this task's object, after memory's own facts when it is another one
                        place = kind_of(take.group(2))
                        hints = [place, *hints] if kind_of(take.group(1)) == goal.obj else [*hints, place]
                    ep.fetch(goal.obj, hints)
                elif take.group(2) in ep.receptacles:
                    ep.act(step)
                continue
            treat = re.match(r"(clean|heat|cool) (.+?) with (.+)$", step)
            if treat:
                appliance = kind_of(treat.group(3)) if not treat.group(3).startswith("<") else _APPLIANCE[treat.group(1)]
                places = ep.instances(appliance)
                if ep.holding and places and ep.go(places[0]) and not ep.done:
                    ep.act(f"{treat.group(1)} {ep.holding} with {places[0]}")
                continue
            put = re.match(r"(?:move|put) (.+?) (?:to|in|on|in/on) (.+)$", step)
            if put:
                if role(put.group(2)) == "target" or put.group(2).startswith("<"):
                    ep.place_in(goal.target)
                elif put.group(2) in ep.receptacles and ep.holding and ep.go(put.group(2)) and not ep.done:
                    ep.act(f"move {ep.holding} to {put.group(2)}")
                continue
            if verb == "use":
                lamp = goal.target if role(arg) == "target" or arg.startswith("<") else kind_of(arg)
                if lamp in _LAMPS or lamp == goal.target:
                    ep.use_lamp(lamp, priors.get(lamp, []))
                continue
            if verb in ("open", "close"):
                if arg == ep.at:
                    ep.act(step)
                continue
            if not re.search(r"<[^<>]+>", step):
                ep.act(step)  # look, examine, inventory...: replayed

    @staticmethod
    def _literal(ep: _Episode, goal: Goal, hints: Sequence[str]) -> None:
        """The goal's literal reading: find the object, take it, put it in the target (``count`` times)."""
        while not ep.done and sum(kind_of(p) == goal.obj for p in ep.placed) < goal.count:
            if not ep.fetch(goal.obj, hints) or not ep.place_in(goal.target):
                return
