"""Filling ``<slot>`` placeholders: one small strategy per source, tried in order.

Slots are a convention the memory-following agent understands, not a format it requires. Each
strategy reads one source (what the agent read, the task text, what it sees, retrieved facts) and
returns a value or ``None``; the first value wins.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

_STOP = frozenset("a an the of to in on and or is are it this that some any".split())


@dataclass(frozen=True)
class SlotContext:
    name: str  # the slot's name, e.g. "wire 2"
    step: str  # the procedure step it sits in
    description: str  # the task text, lower-cased
    used: frozenset[str]  # values already bound to other slots
    visible: tuple[str, ...]  # objects in the room, then the inventory
    facts: tuple[str, ...]  # retrieved fact and insight texts
    last_read: str | None  # the last thing the agent read (a recipe)
    reading: float | None  # the last measurement it observed

    @property
    def base(self) -> str:
        """The name without a trailing index ("wire 2" -> "wire")."""
        return re.sub(r"\s*\d+$", "", self.name)

    @property
    def type_word(self) -> str:
        return self.base.split()[-1] if self.base.strip() else self.base

    @property
    def words_after(self) -> str | None:
        """The literal words right after the slot in its step ("<color> box" -> "box")."""
        found = re.search(r"<" + re.escape(self.name) + r">\s+([a-z]+(?: [a-z]+)?)", self.step)
        return found.group(1) if found else None


def from_what_was_read(ctx: SlotContext) -> str | None:
    """"<ingredient 2>": the 2nd item of the last list the agent read ("you need to mix a, b, c")."""
    numbered = re.match(r"(.*?)\s*(\d+)$", ctx.name)
    if not numbered or not ctx.last_read:
        return None
    listed = re.findall(r"(?:mix|ingredients?:?|are:?) ([a-z ,]+(?:,|and) [a-z ]+)", ctx.last_read.lower())
    if not listed:
        return None
    items = [i.strip() for i in re.split(r",|\band\b", listed[-1]) if i.strip()]
    index = int(numbered.group(2)) - 1
    return items[index] if 0 <= index < len(items) else None


def from_quoted_task_phrase(ctx: SlotContext) -> str | None:
    """"<substance>" from "create the substance 'salt water'"."""
    quoted = re.findall(r"'([^']+)'", ctx.description)
    if quoted and ctx.name.split()[0] in ("substance", "product", "target", "mixture"):
        return quoted[0]
    return None


def from_task_condition(ctx: SlotContext) -> str | None:
    """"If ... above 50.0 degrees ..., place it in the red box", against the last measurement."""
    if ctx.words_after is None or ctx.reading is None:
        return None
    pattern = r"if [^.]*?\b(above|below) (-?\d+(?:\.\d+)?)[^.]*?\b([a-z]+) " + re.escape(ctx.words_after)
    for side, limit, value in re.findall(pattern, ctx.description):
        if (side == "above") == (ctx.reading > float(limit)):
            return value
    return None


def from_task_context(ctx: SlotContext) -> str | None:
    """The words around the slot matched in the task text ("<color> box" -> "red" from "red box")."""
    if ctx.words_after is None:
        return None
    found = re.search(r"\b([a-z]+) " + re.escape(ctx.words_after) + r"\b", ctx.description)
    if found and found.group(1) not in _STOP and found.group(1) not in ctx.used:
        return found.group(1)
    return None


def from_labelled_task_name(ctx: SlotContext) -> str | None:
    """The slot's own name in the task text with its one-letter label ("unknown substance b")."""
    if re.search(r"\d$", ctx.name):
        return None
    named = re.search(r"\b" + re.escape(ctx.name) + r" [a-z0-9]\b", ctx.description)
    return named.group(0) if named and named.group(0) not in ctx.used else None


def from_visible_type(ctx: SlotContext) -> str | None:
    """A visible object named by the slot's type word, head nouns first ("<wire 2>" -> "black wire")."""
    if not ctx.type_word:
        return None
    word = re.escape(ctx.type_word)
    heads = [o for o in ctx.visible if re.search(r"\b" + word + r"s?$", o)]
    inner = [o for o in ctx.visible if re.search(r"\b" + word + r"s?\b", o)]
    return next((o for o in [*heads, *inner] if o not in ctx.used), None)


def from_category_fact(ctx: SlotContext) -> str | None:
    """A visible object that a retrieved text lists under the slot's name ("Examples of a non-living
    thing: chair, table", also as a sentence of a procedure): the items after the colon that follows the
    name; an item names an object it ends ("brown bear" for "baby brown bear", not "bee" for "bee hive")."""
    category = re.compile(r"(?<![\w<-])" + re.escape(ctx.base) + r"s?\b[^:.<>]*:([^.]*)")
    for fact in ctx.facts:
        for listed in category.findall(fact.lower()):
            items = [i.strip(" .") for i in listed.split(",") if i.strip(" .")]
            for obj in ctx.visible:  # room objects come before the inventory
                core = obj.split(" egg")[0]
                if obj not in ctx.used and any(core == i or core.endswith(" " + i) for i in items):
                    return obj
    return None


def from_task_verb(ctx: SlotContext) -> str | None:
    """The object the task names after its main verb ("boil water" -> "water")."""
    verb = re.search(
        r"your task is to (?:boil|melt|freeze|grow|create|find|measure|use|turn on) (?:an? |the )?([a-z ]+?)[.,]",
        ctx.description,
    )
    if verb and ctx.name.split()[0] in ("substance", "object", "thing"):
        return verb.group(1)
    return None


def from_task_subject(ctx: SlotContext) -> str | None:
    """What the task is about, the phrase after "of (the)" in its first sentence ("the life stages of the
    moth" -> "moth" for ``<organism>``; "of the cherry plant" -> "cherry" for ``<plant>``). Last: it only
    fills what nothing else can."""
    first = ctx.description.split(".")[0]
    found = re.search(r"\bof (?:the |an? )?([a-z ]+?)\s*(?:,|$)", first)
    if not found:
        return None
    phrase = found.group(1).strip()
    if phrase.endswith(" " + ctx.base):
        return phrase[: -len(ctx.base) - 1]
    return phrase if ctx.base in ("organism", "subject") else None


STRATEGIES: tuple[Callable[[SlotContext], str | None], ...] = (
    from_what_was_read,
    from_quoted_task_phrase,
    from_task_condition,
    from_task_context,
    from_labelled_task_name,
    from_visible_type,
    from_category_fact,
    from_task_verb,
    from_task_subject,
)


def resolve_slot(ctx: SlotContext) -> str | None:
    """The first value any strategy finds, in :data:`STRATEGIES` order."""
    for strategy in STRATEGIES:
        value = strategy(ctx)
        if value:
            return value
    return None
