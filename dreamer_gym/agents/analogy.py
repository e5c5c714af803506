"""Reading a concrete note by analogy: adapting a procedure written on another variation of the task.

A fast-written note is verbatim: "To turn on the red light bulb: ..., focus on red light bulb, connect
battery anode to green wire terminal 1, ...". In a variation that asks for the blue bulb and has no green
wire, a reader who follows it to the letter fails; any competent reader adapts it, as an LLM agent does
with an example in its context. Two generic rules, no task knowledge:

* **what the goals say differs** (proactive): the note's goal ("To <goal>:") is aligned word by word with
  the task's goal; each replaced phrase maps to its counterpart (``red`` -> ``blue``, ``living room`` ->
  ``bathroom``, ``salt water`` -> ``smores``) and is rewritten in every step before it is acted on;
* **what is not here** (on failure): when the simulator rejects an action that names an object, each object
  the agent can see or holds lends its name to the phrase of the same kind in the action ("green wire" ->
  "yellow wire"); the first rewrite that names no object the note itself mentions is tried once and, if
  the simulator accepts it, kept for the rest of the episode.

So raw memory transfers in part (whatever differs only by names), while detours, wrong and fatal steps,
and whatever differs by more than names (another room to search, another recipe) still need consolidation.
"""
from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher

from dreamer_gym.agents.reading import VERBS

_TOKEN = re.compile(r"<[^<>]+>|[a-z0-9]+(?:-[a-z0-9]+)*")
_STOP = frozenset("a an the of to in on and or is it its from with by at".split())
# words that join an action's parts, never part of an object's name: stop words and the command words
_GLUE = _STOP | frozenset({"into", "onto"}) | frozenset(w for verb in VERBS for w in verb.split())


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def _word_re(phrase: str) -> re.Pattern[str]:
    """``phrase`` as whole words, never inside a ``<slot>``."""
    return re.compile(r"(?<![\w<-])" + r"\s+".join(re.escape(w) for w in phrase.split()) + r"(?![\w>-])")


def goal_mapping(note_goal: str, task_goal: str) -> dict[str, str]:
    """Phrase -> phrase where the two goals differ by a replacement (not an insertion or deletion); a side
    holding a ``<slot>`` or only stop words is not a name and maps nothing."""
    a, b = _tokens(note_goal), _tokens(task_goal)
    mapping: dict[str, str] = {}
    for op, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op != "replace":
            continue
        src, dst = a[i1:i2], b[j1:j2]
        if any(t.startswith("<") for t in (*src, *dst)) or set(src) <= _STOP or set(dst) <= _STOP:
            continue
        mapping[" ".join(src)] = " ".join(dst)
    return mapping


@dataclass
class Analogy:
    """One episode's name mapping from a note to the world (see the module docstring)."""

    mapping: dict[str, str] = field(default_factory=dict)
    note: str = ""  # the note, lower-cased: an object it names has its own part to play

    @classmethod
    def between(cls, note: str, task_goal: str) -> Analogy:
        """The analogy for following ``note`` ("To <goal>: steps") on a task whose goal is ``task_goal``."""
        head, sep, _ = note.partition(":")
        note_goal = head[3:] if sep and head.lower().startswith("to ") else ""
        mapping = goal_mapping(note_goal, task_goal) if note_goal else {}
        return cls(mapping, note.lower())

    def apply(self, action: str) -> str:
        """``action`` with every mapped phrase rewritten (longest first, each at most once per place)."""
        for src in sorted(self.mapping, key=len, reverse=True):
            action = _word_re(src).sub(self.mapping[src], action)
        return action

    def alternatives(self, action: str, known: Sequence[str]) -> Iterator[tuple[str, str, str]]:
        """``(phrase, object, rewritten action)`` for each object in ``known`` whose kind (last word) the
        action names with other words, where the object is not one the note mentions by name."""
        targets = set(self.mapping.values())
        for obj in dict.fromkeys(known):
            words = obj.lower().split()
            if not words or obj in targets:
                continue
            pattern = r"(?<![\w-])(?:[a-z0-9]+ ){" + str(len(words) - 1) + "}" + re.escape(words[-1]) + r"\b"
            # a phrase is the object's own words: never across a command word or a preposition ("on egg")
            found = next((m for m in re.finditer(pattern, action)
                          if not set(m.group(0).split()[:-1]) & _GLUE), None)
            if not found or found.group(0) == obj.lower() or _word_re(obj.lower()).search(self.note):
                continue
            yield found.group(0), obj, action[: found.start()] + obj + action[found.end():]

    def learn(self, phrase: str, obj: str) -> None:
        self.mapping[phrase] = obj


def rooms_named_for(action: str, facts: Sequence[str], rooms: Sequence[str] | None = None) -> list[str]:
    """Rooms that retrieved facts name together with an object of a kind ``action`` names ("The red light
    bulb can be found in the workshop." for "focus on blue light bulb"), in fact order."""
    from dreamer_gym.agents.world import ROOMS

    words = set(_tokens(action))
    out: list[str] = []
    for fact in facts:
        text = fact.lower()
        named = [r for r in (rooms or ROOMS) if _word_re(r).search(text)]
        subject = re.split(r"\b(?:can be found|is|are|was) ", text, maxsplit=1)[0]
        kinds = [w for w in _tokens(subject) if w not in _STOP]
        if named and kinds and kinds[-1] in words:
            out += [r for r in named if r not in out]
    return out
