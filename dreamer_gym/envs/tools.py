"""Tool-call parsing and the tool implementations. Bad calls become :class:`ToolError` messages,
which the env turns into observations: nothing a policy sends can raise out of ``step``.

What a well-formed call is (names, argument types, ranges, unknown keys) is declared once in
:mod:`dreamer_gym.envs.toolspec` and checked by :func:`parse_action`; the :class:`Workspace` checks only
what depends on the region and the episode (ids in the region, budgets, token limits, step ranges)."""
from __future__ import annotations

import json
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from dreamer_gym.contract.definition import CHARS_PER_TOKEN
from dreamer_gym.contract.filing import filing_families
from dreamer_gym.envs.bank_context import bank_context
from dreamer_gym.envs.synthesis import synthesis_tasks, synthesize
from dreamer_gym.envs.toolspec import (
    LATEST_CONTRACT,
    MAX_PROVENANCE,
    SPECS,
    V0_PROVENANCE_SEEN,
    argument_error,
    check_contract,
    prompt_lines,
)
from dreamer_gym.memory import BM25Retriever, MemoryBank, MemoryEntry, Provenance, Trajectory, count_tokens
from dreamer_gym.memory.regions import Region, parse_window

# tool name -> the one line the prompts show (generated from the declarations in toolspec): contract 1's tools,
# which every id has; a contract-2 env (ScienceWorld-v2) adds `synthesize` (tools_for)
TOOLS: dict[str, str] = prompt_lines(1)
BANK_CONTEXT_CONTRACT = 2  # from this contract on: the whole bank read-only, `synthesize`, the bank context


def tools_for(contract: int) -> dict[str, str]:
    """Tool name -> prompt line of the tools an env of ``contract`` accepts."""
    return prompt_lines(contract)
MAX_TRAJECTORY_STEPS = 20
# CHARS_PER_TOKEN (the character cap per emitted entry = max_entry_tokens * it) is the reward contract's


class ToolError(Exception):
    """A bad tool call; its message goes back to the policy."""


@dataclass(frozen=True)
class ToolCall:
    name: str
    args: dict[str, Any]


def parse_action(action: Any, tools: Collection[str] = TOOLS, contract: int = LATEST_CONTRACT) -> ToolCall:
    """Accept ``{"tool": NAME, ...}`` or an OpenAI-style ``{"name": NAME, "arguments": {...}}``; ``tools`` are the
    names this env accepts (the PettingZoo env adds its own, whose handlers check their arguments). The arguments
    of a declared tool are checked against ``contract`` (:mod:`dreamer_gym.envs.toolspec`); in the OpenAI forms
    only ``arguments`` is the call, the envelope's other keys (``id``, ``type``) are not looked at."""
    if not isinstance(action, str):
        raise ToolError(f"expected the action to be a JSON string, got {type(action).__name__}")
    try:
        data = json.loads(action)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, and ValueError for >4300-digit integers
        raise ToolError(f"action is not valid JSON ({exc.__class__.__name__}): send one JSON object") from None
    if not isinstance(data, dict):
        raise ToolError(f"expected a JSON object, got {type(data).__name__}")
    if "function" in data and isinstance(data["function"], dict):  # {"type": "function", "function": {...}}
        data = data["function"]
    if "tool" in data:
        name, args = data["tool"], {k: v for k, v in data.items() if k != "tool"}
    elif "name" in data:
        name, args = data["name"], data.get("arguments", {})
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except (ValueError, RecursionError):
                raise ToolError("`arguments` is a string but not valid JSON") from None
    else:
        raise ToolError('missing "tool": expected {"tool": NAME, ...}')
    if not isinstance(name, str) or name not in tools:
        raise ToolError(f"unknown tool {str(name)[:40]!r}; tools: {sorted(tools)}")
    if not isinstance(args, dict):
        raise ToolError("tool arguments must be a JSON object")
    if name in SPECS:
        error = argument_error(name, args, check_contract(contract))
        if error is not None:
            raise ToolError(error)
    return ToolCall(name, args)


@dataclass
class Workspace:
    """One consolidation episode's state: the read-only region and what has been emitted so far."""

    bank: MemoryBank
    region: Region
    trajectories: dict[str, Trajectory]
    family: str
    max_emitted: int
    max_entry_tokens: int
    emitted: list[MemoryEntry] = field(default_factory=list)
    contract: int = LATEST_CONTRACT  # the tool contract the calls were checked against (how provenance is read)
    own_window_families: bool = False  # ConsolidationConfig.window_own_families (dreamer_gym.contract.filing)
    suite: str = "scienceworld"  # whose acquisition profile reads a trajectory's goal (synthesize)

    def __post_init__(self) -> None:
        self.entries: dict[str, MemoryEntry] = {i: self.bank.get(i) for i in self.region.entry_ids}  # type: ignore[misc]
        self.linked: set[str] = {p.trajectory_id for e in self.entries.values() for p in e.provenance}
        self._retriever = BM25Retriever(list(self.entries.values()))
        self._bank_retriever: BM25Retriever | None = None  # contract 2's search over the bank, built on first use
        self.context: tuple[Any, ...] = ()  # contract 2: dreamer_gym.envs.bank_context.TaskContext per own task
        if self.contract >= BANK_CONTEXT_CONTRACT:
            self.context = bank_context(self.bank, self.region, self.family, self.trajectories)

    @property
    def sees_bank(self) -> bool:
        """Contract 2 on: read_entry and search reach the whole bank (read-only outside the region)."""
        return self.contract >= BANK_CONTEXT_CONTRACT

    def entry_family(self, provenance: tuple[Provenance, ...]) -> str:
        """The family an emitted entry is filed under: the region's, or on a window region (which mixes
        tasks) the family most of its cited trajectories were played for (ties: the first in name order;
        no citation: the region's most common family). With ``own_window_families``, a family the window's
        own sessions did not play (an older retrieved entry's) is a :class:`ToolError`: the window's
        evaluation never draws from it (:mod:`dreamer_gym.contract.filing`)."""
        if parse_window(self.family) is None:
            return self.family
        cited = Counter(self.trajectories[p.trajectory_id].family for p in provenance
                        if p.trajectory_id in self.trajectories)
        allowed = filing_families(self.bank, self.family, self.region, self.own_window_families)
        if not cited:
            cited = Counter(e.family for e in self.entries.values() if e.family in allowed)
        family = min(cited, key=lambda f: (-cited[f], f)) if cited else ""
        if self.own_window_families and family not in allowed:
            raise ToolError(f"this entry would be filed under {family!r}, the family most of its cited trajectories "
                            f"were played for, which window {self.family!r}'s own sessions did not play; a new entry "
                            f"is filed under one of {sorted(allowed)}: cite the window's own trajectories")
        return family

    # The methods take arguments that parse_action has checked against the tool contract.
    def _entry(self, args: dict[str, Any]) -> MemoryEntry:
        entry_id = args["id"]
        if entry_id not in self.entries:
            raise ToolError(f"no entry {entry_id[:40]!r} in this region")
        return self.entries[entry_id]

    def read_entry(self, args: dict[str, Any]) -> str:
        entry_id = args["id"]
        if self.sees_bank and entry_id not in self.entries:
            outside = self.bank.get(entry_id)
            if outside is None:
                raise ToolError(f"no entry {entry_id[:40]!r} in this bank")
            return json.dumps({**outside.to_dict(), "in_region": False, "read_only": True}, ensure_ascii=False)
        entry = self._entry(args).to_dict()
        return json.dumps({**entry, "in_region": True} if self.sees_bank else entry, ensure_ascii=False)

    def read_trajectory(self, args: dict[str, Any]) -> str:
        traj_id = args["id"]
        if traj_id not in self.linked or traj_id not in self.trajectories:
            raise ToolError(f"trajectory {traj_id[:40]!r} is not linked from this region's provenance")
        traj = self.trajectories[traj_id]
        start = args.get("start", 0)
        end = args.get("end", min(start + MAX_TRAJECTORY_STEPS - 1, len(traj.steps) - 1))
        if start < 0 or end < start or start >= len(traj.steps):
            raise ToolError(f"bad step range [{start}, {end}] for a trajectory of {len(traj.steps)} steps")
        end = min(end, start + MAX_TRAJECTORY_STEPS - 1, len(traj.steps) - 1)
        lines = [f"trajectory {traj.id} ({traj.family} v{traj.variation}): {traj.task_description}"]
        for i in range(start, end + 1):
            s = traj.steps[i]
            lines.append(f"[{i}] > {s.action} | score {s.score:g} | {s.observation[:200]}")
        return "\n".join(lines)

    def search(self, args: dict[str, Any]) -> str:
        query, k = args["query"], args.get("k", 5)
        if not self.sees_bank or args.get("scope", "bank") == "region":
            hits = self._retriever.top_k(query[:2000], k)
            mark = (lambda e: "[region] ") if self.sees_bank else (lambda e: "")
        else:
            if self._bank_retriever is None:
                self._bank_retriever = BM25Retriever(list(self.bank.entries))
            hits = self._bank_retriever.top_k(query[:2000], k)
            mark = lambda e: "[region] " if e.id in self.entries else f"[bank, read-only, {e.family}, session {e.session}] "  # noqa: E731
        return "\n".join(f"{mark(e)}{e.id} ({e.kind}) {e.text[:160]}" for e in hits) or "no matches"

    def synthesize(self, args: dict[str, Any]) -> str:
        """One candidate entry from the region's linked trajectories of ``task`` (:mod:`dreamer_gym.envs.synthesis`):
        returned with the ``emit`` call that files it, never written."""
        linked = [self.trajectories[t] for t in sorted(self.linked) if t in self.trajectories]
        task = args["task"]
        tasks = synthesis_tasks(linked)
        if task not in tasks:
            raise ToolError(f"task {task[:40]!r}: no trajectory linked from this region was played for it; the "
                            f"region's tasks are {list(tasks)}")
        allowed = filing_families(self.bank, self.family, self.region, self.own_window_families)
        if parse_window(self.family) is not None and self.own_window_families and task not in allowed:
            raise ToolError(f"task {task!r} is not one window {self.family!r}'s own sessions played, so an entry of it "
                            f"cannot be filed here; synthesize one of {sorted(allowed)}")
        candidate = synthesize(linked, task, which=args.get("trajectories", "success"),
                               min_support=float(args.get("min_support", 0.5)), kind=args.get("kind", "procedure"),
                               max_tokens=self.max_entry_tokens, suite=self.suite)
        which, support = args.get("trajectories", "success"), float(args.get("min_support", 0.5))
        if candidate is None:
            hint = "a lower min_support" + ("" if which == "all" else ' or trajectories="all"')
            return (f"no candidate: no {args.get('kind', 'procedure')} holds in more than a {support:g} share of the "
                    f"{which} trajectories of {task!r} linked from this region (try {hint})")
        provenance = [p.to_dict() for p in candidate.provenance]
        out: dict[str, Any] = {"candidate": {"kind": candidate.kind, "text": candidate.text, "task": candidate.task,
                                             "support": candidate.support, "provenance": provenance}}
        same = next((e.id for e in self.entries.values() if e.kind == candidate.kind and e.text == candidate.text), None)
        if same is not None:  # e.g. one successful run: its aligned steps are the writer's verbatim procedure
            out["same_as"] = same
            out["keep"] = json.dumps({"tool": "keep", "ids": [same]})
        else:
            out["emit"] = json.dumps({"tool": "emit", "kind": candidate.kind, "text": candidate.text,
                                      "provenance": provenance}, ensure_ascii=False)
        return json.dumps(out, ensure_ascii=False)

    @property
    def n_new(self) -> int:
        """Entries written by `emit` (kept entries are carried over and do not use the emit budget)."""
        return sum(1 for e in self.emitted if e.id not in self.entries)

    def _check_room(self) -> None:
        if self.n_new >= self.max_emitted:
            raise ToolError(f"emit budget: at most {self.max_emitted} new entries; retract one or commit")

    def keep(self, args: dict[str, Any]) -> str:
        ids = args["ids"]
        if isinstance(ids, str):  # tool contract 0 takes one id as a string
            ids = [ids]
        unknown = [i for i in ids if i not in self.entries]
        if unknown:
            raise ToolError(f"not in this region: {[u[:40] for u in unknown[:5]]}")
        present = {e.id for e in self.emitted}
        new = [self.entries[i] for i in dict.fromkeys(ids) if i not in present]
        self.emitted.extend(new)
        return f"kept {len(new)} entries; the new region holds {len(self.emitted)}"

    def _provenance(self, raw: list[Any]) -> tuple[Provenance, ...]:
        out: list[Provenance] = []
        seen = V0_PROVENANCE_SEEN if self.contract == 0 else MAX_PROVENANCE  # contract 1 refuses more
        for item in raw[:seen]:  # contract 0 ignored the items past its 32
            if isinstance(item, str):
                if item not in self.entries:
                    raise ToolError(f"provenance {item[:40]!r} is not an entry of this region")
                out.extend(self.entries[item].provenance)
            else:  # {trajectory_id, start, end}; contract 0 reads a missing bound as 0
                tid = item["trajectory_id"]
                if tid not in self.linked:
                    raise ToolError(f"provenance trajectory {tid[:40]!r} is not linked from this region")
                start, end = item.get("start", 0), item.get("end", 0)
                if not 0 <= start <= end < len(self.trajectories[tid].steps):
                    raise ToolError(f"provenance range [{start}, {end}] is outside trajectory {tid}")
                out.append(Provenance(tid, start, end))
        return tuple(sorted(set(out)))

    def emit(self, args: dict[str, Any]) -> str:
        kind = args["kind"]
        text = args["text"].strip()
        if not text:
            raise ToolError("`text` is blank (only whitespace)")
        tokens = count_tokens(text)
        if tokens > self.max_entry_tokens:
            raise ToolError(f"entry has {tokens} tokens; the limit is {self.max_entry_tokens}")
        if len(text) > self.max_entry_tokens * CHARS_PER_TOKEN:  # one 100k-letter "word" is one token
            raise ToolError(f"entry has {len(text)} characters; the limit is {self.max_entry_tokens * CHARS_PER_TOKEN}")
        provenance = self._provenance(args["provenance"])
        self._check_room()
        entry = MemoryEntry(kind, text, self.entry_family(provenance), ("consolidated",), provenance,
                            supersedes=self.region.entry_ids)
        if entry.id in {e.id for e in self.emitted} or entry.id in self.entries:
            raise ToolError(f"entry {entry.id} is already in the region or the new region: use keep")
        self.emitted.append(entry)
        return f"emitted #{len(self.emitted) - 1} ({entry.id}); the new region holds {len(self.emitted)}"

    def retract(self, args: dict[str, Any]) -> str:
        index = args["index"]
        if not 0 <= index < len(self.emitted):
            raise ToolError(f"`index` must be in [0, {len(self.emitted) - 1}]" if self.emitted else "nothing emitted yet")
        gone = self.emitted.pop(index)
        return f"retracted {gone.id}; the new region holds {len(self.emitted)}"
