"""Reading memory content: pull executable actions out of free text by the suite's action grammar.

The same procedure written as numbered steps, as prose or as a comma-separated list yields the same
actions, so the agent rewards what a memory *says*, not how it is formatted.
"""
from __future__ import annotations

import re
from functools import lru_cache

# ScienceWorld's action verbs, longest first so "look around" wins over "look".
VERBS: tuple[str, ...] = (
    "look around", "look at", "look in", "teleport to", "pick up", "put down", "focus on", "go to",
    "deactivate", "activate", "disconnect", "connect", "examine", "inventory", "open", "close", "move",
    "use", "pour", "mix", "wait1", "wait", "eat", "read", "dunk", "flush",
)


@lru_cache(maxsize=8)
def _verb_re(verbs: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(r"\b(" + "|".join(re.escape(v) for v in verbs) + r")\b")


_VERB_RE = _verb_re(VERBS)
_SPLIT_RE = re.compile(r"\n\s*(?:step\s*)?\d+[.):]\s+|^\s*(?:step\s*)?\d+[.):]\s+|\n|;|:[ \t]+|\||(?:^|\s)\d+\)\s|,\s*(?:and\s+)?(?:then\s+)?|\.\s+|\.$|\s+->\s+|\s*→\s*")
_JOINERS = re.compile(r"\s+(?:and then|then|and|after that|next|finally)\s+")
_ARTICLES = re.compile(r"\b(?:the|a|an)\b\s*")
_TRAIL = re.compile(r"[\s.,;:!?\"')]+$")
_LEAD = re.compile(r"^(?:first|then|next|finally|after that|now|step \d+:?)\s*,?\s*")
_SLOT = re.compile(r"<([^<>]{1,40})>")
_NUMBER_ANSWER = re.compile(r"^\s*(?:answer\s+)?(\d)\s*$")


def _clauses(text: str, verb_re: re.Pattern[str] = _VERB_RE) -> list[str]:
    parts: list[str] = []
    for chunk in _SPLIT_RE.split(text.lower()):
        if not chunk or not chunk.strip():
            continue
        # split "X and Y" / "X then Y" only where the right side starts with a verb
        pieces = [chunk]
        for joiner in _JOINERS.finditer(chunk):
            right = chunk[joiner.end():]
            if verb_re.match(right):
                pieces = [chunk[: joiner.start()], right]
                pieces = [pieces[0], *_clauses(pieces[1], verb_re)]
                break
        parts.extend(p for p in pieces if p.strip())
    return parts


def extract_actions(text: str, verbs: tuple[str, ...] = VERBS) -> list[str]:
    """Executable actions in ``text`` in order, by the command words ``verbs`` (default: ScienceWorld's).
    Articles are dropped, ``<slots>`` kept."""
    verb_re = _verb_re(verbs)
    actions: list[str] = []
    for clause in _clauses(text, verb_re):
        clause = _LEAD.sub("", clause.strip())
        if clause.startswith("to "):  # a goal phrase ("to use chemistry to ..."), not a step
            continue
        number = _NUMBER_ANSWER.match(clause)
        if number:  # an answer to an ambiguity question, as in gold paths
            actions.append(number.group(1))
            continue
        match = verb_re.search(clause)
        if match is None:
            continue
        action = clause[match.start():]
        action = _TRAIL.sub("", _ARTICLES.sub("", action)).strip()
        action = re.sub(r"\s+", " ", action)
        if action:
            actions.append(action)
    return actions


def slots(action: str) -> list[str]:
    """Slot names in an action (``"move <seed> to <pot>"`` → ``["seed", "pot"]``)."""
    return _SLOT.findall(action)


def fill(action: str, bindings: dict[str, str]) -> str:
    return _SLOT.sub(lambda m: bindings.get(m.group(1), m.group(0)), action)


def forbidden_actions(pitfall_texts: list[str]) -> set[str]:
    """Actions that pitfall entries warn against ("do not focus on the wall", "avoid: ...")."""
    banned: set[str] = set()
    for text in pitfall_texts:
        for sentence in re.split(r"[.\n;]", text.lower()):
            if re.search(r"\b(?:do not|don't|never|avoid|instead of|must not)\b", sentence):
                tail = re.split(r"\b(?:do not|don't|never|avoid|instead of|must not)\b:?", sentence, maxsplit=1)[1]
                tail = re.split(r"\b(?:before|until|when|unless|because|since)\b", tail)[0]
                banned.update(a for a in extract_actions(tail) if not slots(a))
    return banned


# "While trying to <goal>, '<action>' raised the score from 12 to 37." (the goal and the end score optional)
_RAISED = re.compile(r"(?:while trying to (?P<goal>.+?), )?'(?P<action>[^']+)' raised the score from "
                     r"(?P<from>-?\d+(?:\.\d+)?)(?: to (?P<to>-?\d+(?:\.\d+)?))?")


def steps_from_outcomes(texts: list[str]) -> tuple[str | None, list[str]]:
    """A procedure pieced together from notes on what worked ("While trying to <goal>, '<action>' raised the
    score from 12 to 37."): the actions in order of the score they started from, each once, and the goal of
    the first note that names one. What a reader does with a pile of such notes and no written procedure."""
    found: list[tuple[float, int, str]] = []
    goal = None
    for i, text in enumerate(texts):
        for m in _RAISED.finditer(text.lower()):
            actions = extract_actions(m.group("action"))
            if actions:
                found.append((float(m.group("from")), i, actions[0]))
                goal = goal or m.group("goal")
    steps = list(dict.fromkeys(a for _, _, a in sorted(found)))
    return goal, steps


_NOTE_GOAL = re.compile(r"^\s*to (?P<goal>[^:]+):(?P<steps>.+)$", re.S)


def _same_goal(a: str, b: str) -> bool:
    return re.sub(r"\W+", " ", a.lower()).strip() == re.sub(r"\W+", " ", b.lower()).strip()


def parallel_steps(action: str, ordinal: int, texts: list[str], goal: str, score: float) -> list[str]:
    """Other notes' versions of a step the world rejected: what notes on the *same goal* did at the same
    point of the task with the same command words ("focus on"), on another object. Notes on what raised
    the score count where the score they started from is not above ``score`` and the one they reached is
    (the same stage of the task); written procedures count by ``ordinal`` (the step is the ordinal-th with
    these command words). A reader whose note names an object that is not here tries what worked for the
    same goal elsewhere, as a person with a pile of notes does; whatever differs by more than the object
    still needs consolidation."""
    verb_words = command_words(action)
    if verb_words is None:
        return []
    found: list[str] = []
    for text in texts:
        lowered = text.lower()
        for m in _RAISED.finditer(lowered):
            if not (m.group("goal") and m.group("to") and _same_goal(m.group("goal"), goal)):
                continue
            if float(m.group("from")) <= score < float(m.group("to")):
                found += [a for a in extract_actions(m.group("action"))[:1] if a.startswith(verb_words + " ")]
        note = _NOTE_GOAL.match(lowered)
        if note and _same_goal(note.group("goal"), goal):
            same_verb = [a for a in extract_actions(note.group("steps")) if a.startswith(verb_words + " ")]
            if ordinal < len(same_verb):
                found.append(same_verb[ordinal])
    return [a for a in dict.fromkeys(found) if a != action and not slots(a)]


def command_words(action: str) -> str | None:
    """The command words an action starts with ("focus on" for "focus on egg parrot"), or None."""
    verb = _VERB_RE.match(action)
    return verb.group(1) if verb else None


_LOCATED = re.compile(r"^(?:the |an? )?(.+?) (?:can be found|is found|is|are|was) (?:in|on) (?:the )?([a-z ]+?)\s*$")


def fact_items(texts: list[str]) -> list[str]:
    """The facts a reader looks up in ``texts``, normalised: each item of a ``"<category>: a, b, c"`` list
    that holds no command (what :func:`~dreamer_gym.agents.slots.from_category_fact` binds a slot to), as
    ``"item"``, and each ``"<object> can be found in <place>"`` sentence (what
    :func:`~dreamer_gym.agents.analogy.rooms_named_for` reads), as ``"object @ place"``."""
    out: list[str] = []
    for text in texts:
        for sentence in re.split(r"\.\s+|\.$|\n|;", text.lower()):
            head, colon, listed = sentence.partition(":")
            if colon and listed.strip() and not extract_actions(listed):
                out += [_ARTICLES.sub("", i).strip(" .") for i in listed.split(",") if i.strip(" .")]
                continue
            located = _LOCATED.match(sentence.strip())
            if located and not extract_actions(sentence):
                out.append(f"{_ARTICLES.sub('', located.group(1)).strip()} @ {located.group(2)}")
    return list(dict.fromkeys(out))
