"""The text-action language of GRPO rollouts: short commands a small model can emit, their grammar, and
their translation into the env's JSON tool calls.

Why not JSON: a 135M model sampled freely made 0 valid JSON tool calls in 8 (issue 12's probe), and every
generated token costs ~50 ms on a CPU. So the policy writes commands over the numbers of a listing shown
once at the start of the episode, and decoding follows the grammar below (only the decision tokens are
free; the rest are forced). Two grammars (``GRAMMARS``):

``keep`` (build the new region up from nothing)::

    read N            read_entry of entry N (its full text and provenance come back)
    keep N [M ...]    keep entries N, M, ... verbatim (distinct, not yet kept; in the order written)
    commit            replace the region with what was kept and get the reward (out of turns, the trainer
                      keeps the region as it is: :meth:`CommandState.forced_commit`)

``drop`` (edit down from the whole region; doing nothing commits the region unchanged)::

    read N            read_entry of entry N
    drop N            mark entry N to leave out (no env call: the trainer's edit buffer)
    commit            ``keep`` of every entry not dropped (in the region's order), then ``commit``

``ops`` (one op per group of entries; the op-level wrapper's rules write the text)::

    OP G              OP in drop | keep | merge | abstract for group G, the groups in order (A, B, ...: the
                      letter is forced, the op is the decision): every entry of group G gets OP (a group is
                      a kind and the writer's tags: "insight [score-jump]"; abstract: procedures only)
    commit            once every group has an op (forced): play the ops with ``plan_calls`` (``keep`` and
                      ``emit`` with the entries as provenance), then ``commit``. Out of turns, undecided
                      groups are kept.

    On a tool-contract-2 env (``ScienceWorld-v2``, ``ScienceWorldWindows-v1``: ``for_region(..., context=
    info["bank_context"])``) OP may also be ``synthesize`` (on groups of the region's own tasks with linked
    trajectories): the commit then plays the env's ``synthesize`` tool once per task of those entries and files
    its candidate (``play_ops``), reading each answer: :meth:`CommandState.apply` returns the calls up to the
    first ``synthesize`` and :meth:`CommandState.answer` the next ones, given each result. The listing carries the
    bank context (per task: covered or new, the older entries outside the region by kind, their age; per group,
    its entries' tasks).

Why two: under ``keep`` a policy that commits after only reading commits an empty region (the worst
outcome), so a 135M model's first lesson is "keep a lot", and the cheapest way to keep a lot is keep-all,
which is worth exactly 0 (a rollout that runs out of turns is committed by the trainer with the region as it
is: :meth:`CommandState.forced_commit`). Under ``drop`` the default is keep-all and every gain must come
from leaving out the right entries: the same choice ``dedupe`` makes, which is what the reward pays for. One
entry per ``drop``: sampled freely, the base model lists every number once it starts a list (in its first
step, 4 of 8 rollouts dropped the whole region), so each drop is its own decision and at most ``max_turns``
are made.

Entries are numbered 1..n in the region's order, zero-padded to two digits when n >= 10 ("03"), so that
no number's tokens are a prefix of another's: a segment ends where its tokens end.

Why ``ops``: ``keep`` and ``drop`` select; they cannot write the abstraction the oracle's gains come from, and
a 135M model spreads one reward over ~25 per-entry choices. Under ``ops`` a region is 3-5 groups, each one
decision among four ops, two of which write (``merge``: the procedures' consensus plus the distinct facts,
insights and pitfalls, one entry; ``abstract``: each procedure cut to its supported steps; docs/byo.md). And
no early commit: offered ``commit`` first, the untrained model chose it (keep-all, worth exactly 0) in 4 of 6
sampled episodes, so ``commit`` comes only after the last group.

A command becomes zero (``drop``, and ``ops`` but its commit), one or two (``commit`` under ``drop``) or a few
(``commit`` under ``ops``) env tool calls, so the env's budget, penalties and reward apply unchanged; the
command never reaches the env as text.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from collections.abc import Generator, Sequence

from dreamer_gym.envs.group_evidence import GroupEvidence, group_evidence
from dreamer_gym.envs.ops import OPS, OPS_V2, entry_classes, op_mask, play_ops, synthesis_tasks
from dreamer_gym.methods.grpo.bank_listing import SYNTHESIZE_LINE, context_lines, group_tasks
from dreamer_gym.memory.regions import parse_window
from dreamer_gym.memory.tokens import count_tokens

GROUP_OPS: tuple[str, ...] = ("drop", "keep", "merge", "abstract")  # the op-level wrapper's OPS, in its order
GROUP_OPS_V2: tuple[str, ...] = (*GROUP_OPS, "synthesize")  # on a tool-contract-2 env (its OPS_V2)
GRAMMARS: dict[str, tuple[str, ...]] = {"keep": ("read", "keep", "commit"), "drop": ("read", "drop", "commit"),
                                        "ops": (*GROUP_OPS, "commit")}
COMMANDS: tuple[str, ...] = GRAMMARS["keep"]
END = None  # the option that closes a command (the tokenizer's end-of-turn token)


@dataclass
class CommandState:
    """What the grammar needs to know about the episode so far: the region's ids and what is kept."""

    ids: list[str]
    kept: set[int] = field(default_factory=set)  # 1-based entry numbers
    read: set[int] = field(default_factory=set)
    commands: tuple[str, ...] = COMMANDS
    dropped: set[int] = field(default_factory=set)
    note: str = ""  # the answer to a command that made no env call (``drop``, and ``ops`` but its commit)
    groups: list[int] = field(default_factory=list)  # ``ops``: each entry's group (entry_classes)
    group_allowed: list[tuple[str, ...]] = field(default_factory=list)  # ``ops``: per group, its allowed ops
    group_ops: dict[int, str] = field(default_factory=dict)  # ``ops``: the op chosen per group so far
    region: list[dict[str, Any]] = field(default_factory=list)  # ``ops``: what plan_calls reads at commit
    limits: tuple[int, int] = (0, 0)  # ``ops``: the env's max_entry_tokens and max_emitted
    op_list: tuple[str, ...] = GROUP_OPS  # ``ops``: the env's ops (GROUP_OPS_V2 on a contract-2 env)
    program: Generator[dict[str, Any], str, Any] | None = None  # ``ops``: the commit's calls not yet sent
    stepwise: bool = False  # ``ops``: past a ``synthesize`` call, the commit's calls go one at a time

    @classmethod
    def of(cls, ids: list[str], grammar: str = "keep") -> CommandState:
        if grammar not in GRAMMARS:
            raise ValueError(f"Expected a grammar in {tuple(GRAMMARS)}, got {grammar!r}")
        if grammar == "ops":
            raise ValueError("the `ops` grammar needs the region: use CommandState.for_region")
        return cls(list(ids), commands=GRAMMARS[grammar])

    @classmethod
    def for_region(cls, region: list[dict[str, Any]], grammar: str = "keep", max_entry_tokens: int = 0,
                   max_emitted: int = 0, context: Sequence[dict[str, Any]] | None = None) -> CommandState:
        """The state of an episode on ``region``; ``ops`` also needs the env's limits (its config's
        ``max_entry_tokens`` and ``max_emitted``) to write what ``merge`` and ``abstract`` emit, and on a
        tool-contract-2 env its ``info["bank_context"]`` (``context``), which adds ``synthesize``."""
        ids = [e["id"] for e in region]
        if grammar != "ops":
            return cls.of(ids, grammar)
        groups = entry_classes(region).tolist() if region else []
        synthesizable = None if context is None else synthesis_tasks(region, list(context))
        mask = op_mask(region, max(len(region), 1), synthesizable)
        names = OPS if context is None else OPS_V2
        allowed = [tuple(op for k, op in enumerate(names) if all(mask[i, k] for i, g in enumerate(groups) if g == c))
                   for c in range(max(groups, default=-1) + 1)]
        return cls(ids, commands=GRAMMARS["ops"], groups=groups, group_allowed=allowed, region=list(region),
                   limits=(max_entry_tokens, max_emitted), op_list=GROUP_OPS if context is None else GROUP_OPS_V2)

    @property
    def by_group(self) -> bool:
        return bool(self.group_allowed)

    @property
    def drops(self) -> bool:
        """The ``drop`` grammar: the commit keeps every entry not dropped."""
        return self.commands == GRAMMARS["drop"]

    @property
    def holding(self) -> int:
        """How many entries the new region holds if committed now (``ops``: merged entries count as one)."""
        if self.by_group:
            ops = [self.group_ops.get(g, "keep") for g in self.groups]
            tasks = {e.get("family", "") for e, op in zip(self.region, ops) if op == "synthesize"}
            return sum(op in ("keep", "abstract") for op in ops) + int("merge" in ops) + len(tasks)
        return len(self.ids) - len(self.dropped) if self.drops else len(self.kept)

    @staticmethod
    def letter(group: int) -> str:
        """A, B, ..., Z, then AA, AB, ... (a region rarely has more than 5 groups; the letter is forced anyway)."""
        head, tail = divmod(group, 26)
        return (CommandState.letter(head - 1) if head else "") + chr(ord("A") + tail)

    def undecided(self, op: str | None = None) -> list[int]:
        """``ops``: the groups without an op yet (that allow ``op``)."""
        return [c for c, allowed in enumerate(self.group_allowed)
                if c not in self.group_ops and (op is None or op in allowed)]

    def number(self, i: int) -> str:
        return f"{i:02d}" if len(self.ids) >= 10 else str(i)

    def options(self, chosen: list[str]) -> list[str | None]:
        """The next segment's options after the segments ``chosen`` so far in this command (``END`` closes it)."""
        n = len(self.ids)
        if self.by_group:
            left = self.undecided()
            if not chosen:  # the next group's allowed ops; commit once every group has one
                return [op for op in self.op_list if op in self.group_allowed[left[0]]] if left else ["commit"]
            if chosen[0] == "commit" or len(chosen) == 2:
                return [END]
            return [f" {self.letter(left[0])}"]
        if not chosen:
            opts: list[str | None] = []
            for c in self.commands:
                if c == "keep" and len(self.kept) >= n:
                    continue
                if c == "drop" and len(self.dropped) >= n:
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
        if head == "drop":
            return [f" {self.number(i)}" for i in range(1, n + 1) if i not in self.dropped] if len(chosen) == 1 else [END]
        if head == "keep":
            listed = {int(s) for s in chosen[1:]}
            free = [f" {self.number(i)}" for i in range(1, n + 1) if i not in self.kept and i not in listed]
            return free if len(chosen) == 1 else [*free, END]
        raise ValueError(f"unknown command {head!r}")

    def apply(self, chosen: list[str]) -> list[str]:
        """The env tool calls (JSON strings) for a finished command, in order; updates the state. A ``drop``
        makes none (its answer is :attr:`note`); ``commit`` under ``drop`` keeps what is left, then commits."""
        if self.by_group:
            return self._apply_group(chosen)
        head, numbers = chosen[0], [int(s) for s in chosen[1:]]
        if head == "commit":
            commit = json.dumps({"tool": "commit"})
            if not self.drops:
                return [commit]
            rest = [i for i in range(1, len(self.ids) + 1) if i not in self.dropped]
            self.kept.update(rest)
            keep = json.dumps({"tool": "keep", "ids": [self.ids[i - 1] for i in rest]})
            return [keep, commit] if rest else [commit]
        if head == "read":
            self.read.add(numbers[0])
            return [json.dumps({"tool": "read_entry", "id": self.ids[numbers[0] - 1]})]
        if head == "keep":
            self.kept.update(numbers)
            return [json.dumps({"tool": "keep", "ids": [self.ids[i - 1] for i in numbers]})]
        if head == "drop":
            self.dropped.update(numbers)
            self.note = f"dropped {numbers[0]}; committing now keeps {self.holding} of {len(self.ids)}"
            return []
        raise ValueError(f"unknown command {head!r}")

    def _apply_group(self, chosen: list[str]) -> list[str]:
        if chosen[0] != "commit":
            group = self.undecided()[0]  # groups go in order: the letter names the next one
            if chosen[1].strip() != self.letter(group):
                raise ValueError(f"the next group is {self.letter(group)}, got {chosen[1].strip()!r}")
            self.group_ops[group] = chosen[0]
            members = sum(g == group for g in self.groups)
            left = " ".join(self.letter(c) for c in self.undecided()) or "none"
            self.note = (f"{chosen[0]} {self.letter(group)}: {members} entries; not yet chosen: {left} "
                         f"(kept unless chosen); committing now leaves {self.holding} entries")
            return []
        ops = [OPS_V2.index(self.group_ops.get(g, "keep")) for g in self.groups]
        self.kept = {i + 1 for i, op in enumerate(ops) if OPS_V2[op] in ("keep", "abstract")}
        self.dropped = {i + 1 for i, op in enumerate(ops) if OPS_V2[op] == "drop"}
        self.program = play_ops(ops, self.region, *self.limits)
        return self._calls(next(self.program, None))

    def _calls(self, call: dict[str, Any] | None) -> list[str]:
        """``call`` and the program's next calls up to its first ``synthesize``, from which on one call at a time
        (the program reads those answers: :meth:`answer` goes on), or to its end, then ``commit``."""
        out: list[str] = []
        while call is not None:
            out.append(json.dumps(call))
            self.stepwise = self.stepwise or call["tool"] == "synthesize"
            if self.stepwise:
                return out
            call = self._next("")
        self.program = None
        return [*out, json.dumps({"tool": "commit"})]

    def _next(self, result: str) -> dict[str, Any] | None:
        try:
            return self.program.send(result)  # type: ignore[union-attr]
        except StopIteration:
            return None

    def answer(self, result: str) -> list[str]:
        """The next env calls of a commit under ``ops``, given the last call's result (the observation's
        ``result``); ``[]`` when the commit is played out (always, but for a contract-2 env's ``synthesize``)."""
        if self.program is None:
            return []
        return self._calls(self._next(result))

    def forced_commit(self) -> list[str]:
        """The env calls of the trainer's commit when the turns ran out (the policy never committed). It
        deletes no entry the policy did not decide to delete: under ``keep`` (where only the policy's own
        commit drops what was not kept) every entry of the region is kept, so the region stays as it is (score
        delta 0, size term 0); under ``drop`` and ``ops`` it is the grammar's own commit (each ``drop N`` or
        group op is a finished decision; everything undecided is kept)."""
        if self.drops or self.by_group:
            return self.apply(["commit"])
        rest = [i for i in range(1, len(self.ids) + 1) if i not in self.kept]
        self.kept.update(rest)
        keep = [json.dumps({"tool": "keep", "ids": [self.ids[i - 1] for i in rest]})] if rest else []
        return [*keep, json.dumps({"tool": "commit"})]

    def key(self) -> str:
        """The env state a command acts on, as GiGPO's anchor: what is kept, or dropped, or the ops chosen per
        group (reads change no outcome)."""
        if self.by_group:
            return ",".join(f"{self.letter(c)}:{op}" for c, op in sorted(self.group_ops.items()))
        return ",".join(map(str, sorted(self.dropped if self.drops else self.kept)))


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


def group_evidence_label(evidence: GroupEvidence) -> str:
    """The evidence part of a group line: ``3 tasks (majority 0.60), 2 families`` (how many distinct goals
    the group's entries name; for procedures, the share of them whose goal is the majority's, which is all
    ``merge`` keeps; families only where there are several)."""
    parts = []
    if evidence.tasks:
        parts.append(f"{evidence.tasks} task{'s' if evidence.tasks > 1 else ''}"
                     + (f" (majority {evidence.support:.2f})" if evidence.support is not None else ""))
    if evidence.families > 1:
        parts.append(f"{evidence.families} families")
    return "".join(f", {p}" for p in parts)


def group_goals(evidence: GroupEvidence, shown: int = 3) -> str:
    """`` | tasks: GOAL (n); GOAL (n); +k more`` where a group names several goals, else empty."""
    if evidence.tasks < 2:
        return ""
    listed = [f"{_preview(goal, 8)} ({n})" for goal, n in evidence.goals[:shown]]
    more = [f"+{evidence.tasks - shown} more"] if evidence.tasks > shown else []
    return " | tasks: " + "; ".join(listed + more)


def group_listing(region: list[dict[str, Any]], groups: list[int], preview_words: int = 14,
                  context: Sequence[dict[str, Any]] | None = None) -> str:
    """The region as lettered groups: kind and tags, how many entries, the evidence of what a merge would
    lose (:func:`group_evidence_label`), tokens, the first entry's first words, and the goals of a group that
    names several (issue 31: without them, a group of one task and a group of five look alike). With a
    contract-2 env's ``context``, each group's tasks (:func:`group_tasks`)."""
    lines = []
    for c, evidence in enumerate(group_evidence(region, groups)):
        members = [e for e, g in zip(region, groups) if g == c]
        tags = ",".join(t for t in members[0].get("tags", ()) if not t.startswith("variation:"))
        label = members[0]["kind"] + (f" [{tags}]" if tags else "")
        tokens = sum(count_tokens(e["text"]) for e in members)
        tasks = "" if context is None else group_tasks(members, context)
        lines.append(f"{CommandState.letter(c)}. {label} x{len(members)}{group_evidence_label(evidence)}, {tokens}t: "
                     f"{_preview(members[0]['text'], preview_words)}{group_goals(evidence)}{tasks}")
    return "\n".join(lines)


SYSTEM_PROMPT = (
    "You consolidate an agent's memory. The region below is one task family's entries. Keep the entries that "
    "help an agent solve new tasks of this family, drop the rest, then commit. Shorter memory is better when it "
    "keeps what matters.\nCommands, one per turn:\n  read N - show entry N in full\n  keep N M ... - keep these "
    "entries\n  commit - finish"
)
SYSTEM_PROMPTS: dict[str, str] = {
    "keep": SYSTEM_PROMPT,
    "drop": (
        "You consolidate an agent's memory. The region below is one task family's entries. Drop the entries that "
        "are redundant or do not help an agent solve new tasks of this family, then commit: everything not "
        "dropped is kept. Shorter memory is better when it keeps what matters.\nCommands, one per turn:\n"
        "  read N - show entry N in full\n  drop N - leave entry N out\n  commit - finish"
    ),
    "ops": (
        "You consolidate an agent's memory. The region below is one task family's entries, in groups. Choose "
        "what to do with each group, then commit; a group not chosen is kept. Shorter memory is better when it "
        "keeps what matters.\nCommands, one per turn:\n  drop G - leave group G out\n  keep G - keep group G "
        "as it is\n  merge G - fold group G into one consolidated entry (the steps most procedures share: of a "
        "group of several tasks, only the majority task's, its share shown as majority; then the distinct facts "
        "and insights of every merged group)\n  abstract G - rewrite each procedure "
        "of group G as its steps that most procedures share\n  commit - finish"
    ),
}
def region_heading(family: str) -> str:
    """The listing's first words: ``Family: F.`` for a family region, ``Region: window:A-B.`` for a window
    (its entries are several tasks', so it must not read as one family's)."""
    return f"Region: {family}." if parse_window(family) is not None else f"Family: {family}."


def system_prompt(grammar: str, family: str, synthesize: bool = False) -> str:
    """``SYSTEM_PROMPTS[grammar]``, reworded for a window region (entries of several tasks, not one family's);
    ``synthesize``: the ``ops`` grammar on a tool-contract-2 env lists that op too."""
    text = SYSTEM_PROMPTS[grammar]
    if synthesize and grammar == "ops":
        text = text.replace("  commit - finish", f"{SYNTHESIZE_LINE}  commit - finish")
    if parse_window(family) is None:
        return text
    return (text.replace("one task family's entries", "what an agent wrote over a window of its sessions, "
                         "entries of several tasks")
            .replace("new tasks of this family", "new tasks like these"))


def first_user_message(family: str, region: list[dict[str, Any]], max_turns: int, preview_words: int = 14,
                       grammar: str = "keep", context: Sequence[dict[str, Any]] | None = None) -> str:
    """The listing shown once: ``family`` is the region's key (a family, or ``window:A-B``); under ``ops`` on a
    tool-contract-2 env (``context``: its ``info["bank_context"]``), with each group's tasks and the bank
    context (:func:`context_lines`)."""
    if grammar == "ops":
        groups = entry_classes(region).tolist() if region else []
        bank = "" if context is None else f"{context_lines(context)}\n"
        return (f"{region_heading(family)} {len(region)} entries in {max(groups, default=-1) + 1} groups:\n"
                f"{group_listing(region, groups, preview_words, context)}\n{bank}You have {max_turns} turns.")
    return (f"{region_heading(family)} {len(region)} entries:\n{region_listing(region, preview_words)}\n"
            f"You have {max_turns} turns.")


def result_message(result: str, error: str | None, kept: int, turns_left: int, chars: int = 400,
                   grammar: str = "keep") -> str:
    """The env's answer to one command, cut to ``chars`` (a read shows most of an entry); ``kept`` is what
    the new region would hold."""
    text = f"ERROR: {error}" if error else result
    status = {"keep": "Kept so far", "drop": "Left after drops"}.get(grammar, "Entries if committed")
    return f"{text[:chars]}\n{status}: {kept}. Turns left: {turns_left}."


def prompt_ids(tokenizer: Any, family: str, region: list[dict[str, Any]], max_turns: int,
               preview_words: int = 14, grammar: str = "keep",
               context: Sequence[dict[str, Any]] | None = None) -> list[int]:
    """The episode's prompt tokens: the instructions and the region listing, shown once; the assistant's turn.
    ``context``: a tool-contract-2 env's ``info["bank_context"]`` (the ``ops`` grammar shows it and offers
    ``synthesize``; None on older envs, whose prompts stay as they were)."""
    chat = [{"role": "system", "content": system_prompt(grammar, family, synthesize=context is not None)},
            {"role": "user", "content": first_user_message(family, region, max_turns, preview_words, grammar, context)}]
    ids = tokenizer.apply_chat_template(chat, tokenize=True, add_generation_prompt=True)
    return list(ids["input_ids"] if hasattr(ids, "keys") else ids)
