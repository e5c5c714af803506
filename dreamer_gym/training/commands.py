"""The text-action language of GRPO rollouts: short commands a small model can emit, their grammar, and
their translation into the env's JSON tool calls.

Why not JSON: a 135M model sampled freely made 0 valid JSON tool calls in 8 (issue 12's probe), and every
generated token costs ~50 ms on a CPU. So the policy writes commands over the numbers of a listing shown
once at the start of the episode, and decoding follows the grammar below (only the decision tokens are
free; the rest are forced):

    read N            read_entry of entry N (its full text and provenance come back)
    keep N [M ...]    keep entries N, M, ... verbatim (distinct, not yet kept; in the order written)
    commit            replace the region with what was kept and get the reward

Entries are numbered 1..n in the region's order, zero-padded to two digits when n >= 10 ("03"), so that
no number's tokens are a prefix of another's: a segment ends where its tokens end. Every command becomes exactly one env tool call, so the
env's budget, penalties and reward apply unchanged; the command never reaches the env as text.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from dreamer_gym.memory.tokens import count_tokens

COMMANDS: tuple[str, ...] = ("read", "keep", "commit")
END = None  # the option that closes a command (the tokenizer's end-of-turn token)


@dataclass
class CommandState:
    """What the grammar needs to know about the episode so far: the region's ids and what is kept."""

    ids: list[str]
    kept: set[int] = field(default_factory=set)  # 1-based entry numbers
    read: set[int] = field(default_factory=set)
    commands: tuple[str, ...] = COMMANDS

    def number(self, i: int) -> str:
        return f"{i:02d}" if len(self.ids) >= 10 else str(i)

    def options(self, chosen: list[str]) -> list[str | None]:
        """The next segment's options after the segments ``chosen`` so far in this command (``END`` closes it)."""
        n = len(self.ids)
        if not chosen:
            opts: list[str | None] = []
            for c in self.commands:
                if c == "keep" and len(self.kept) >= n:
                    continue
                if c == "read" and len(self.read) >= n:
                    continue
                opts.append(c)
            return opts
        head = chosen[0]
        if head == "commit":
            return [END]
        if head == "read":
            return [f" {self.number(i)}" for i in range(1, n + 1) if i not in self.read] if len(chosen) == 1 else [END]
        if head == "keep":
            listed = {int(s) for s in chosen[1:]}
            free = [f" {self.number(i)}" for i in range(1, n + 1) if i not in self.kept and i not in listed]
            return free if len(chosen) == 1 else [*free, END]
        raise ValueError(f"unknown command {head!r}")

    def apply(self, chosen: list[str]) -> str:
        """The env tool call (a JSON string) for a finished command; updates the state."""
        head, numbers = chosen[0], [int(s) for s in chosen[1:]]
        if head == "commit":
            return json.dumps({"tool": "commit"})
        if head == "read":
            self.read.add(numbers[0])
            return json.dumps({"tool": "read_entry", "id": self.ids[numbers[0] - 1]})
        if head == "keep":
            self.kept.update(numbers)
            return json.dumps({"tool": "keep", "ids": [self.ids[i - 1] for i in numbers]})
        raise ValueError(f"unknown command {head!r}")

    def key(self) -> str:
        """The env state a command acts on, as GiGPO's anchor: what is kept (reads change no outcome)."""
        return ",".join(map(str, sorted(self.kept)))


def _preview(text: str, words: int) -> str:
    parts = text.split()
    return " ".join(parts[:words]) + (" ..." if len(parts) > words else "")


def region_listing(region: list[dict[str, Any]], preview_words: int = 14) -> str:
    """The region as numbered lines: kind, the writer's tags, size in tokens and the first words."""
    lines = []
    for i, entry in enumerate(region, 1):
        tags = ",".join(t for t in entry.get("tags", ()) if not t.startswith("variation:"))
        variation = [t.split(":", 1)[1] for t in entry.get("tags", ()) if t.startswith("variation:")]
        label = entry["kind"] + (f" [{tags}]" if tags else "") + (f" (variation {variation[0]})" if variation else "")
        number = f"{i:02d}" if len(region) >= 10 else str(i)
        lines.append(f"{number}. {label} {count_tokens(entry['text'])}t: {_preview(entry['text'], preview_words)}")
    return "\n".join(lines)


SYSTEM_PROMPT = (
    "You consolidate an agent's memory. The region below is one task family's entries. Keep the entries that "
    "help an agent solve new tasks of this family, drop the rest, then commit. Shorter memory is better when it "
    "keeps what matters.\nCommands, one per turn:\n  read N - show entry N in full\n  keep N M ... - keep these "
    "entries\n  commit - finish"
)


def first_user_message(family: str, region: list[dict[str, Any]], max_turns: int, preview_words: int = 14) -> str:
    return (f"Family: {family}. {len(region)} entries:\n{region_listing(region, preview_words)}\n"
            f"You have {max_turns} turns.")


def result_message(result: str, error: str | None, kept: int, turns_left: int, chars: int = 400) -> str:
    """The env's answer to one command, cut to ``chars`` (a read shows most of an entry)."""
    text = f"ERROR: {error}" if error else result
    return f"{text[:chars]}\nKept so far: {kept}. Turns left: {turns_left}."


def prompt_ids(tokenizer: Any, family: str, region: list[dict[str, Any]], max_turns: int,
               preview_words: int = 14) -> list[int]:
    """The episode's prompt tokens: the instructions and the region listing, shown once; the assistant's turn."""
    chat = [{"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": first_user_message(family, region, max_turns, preview_words)}]
    ids = tokenizer.apply_chat_template(chat, tokenize=True, add_generation_prompt=True)
    return list(ids["input_ids"] if hasattr(ids, "keys") else ids)
