"""`check_agent`: does a downstream agent keep the contract the evaluator and its cache rely on?

The evaluator retrieves entries for each episode with ``agent.retrieve`` (once per bank and task text,
cached by the bank's hash), keys the evaluation cache by ``agent.cache_key`` and the retrieved ids, and
stores whatever ``agent.play`` returns. So an agent must: retrieve only entries of the bank it is given (at
most ``top_k``, the same ones whether or not an ``index_key`` names the bank, with no leftover from a bank
retrieved before), keep a stable ``cache_key``, and play an episode into an :class:`EpisodeResult` in range
(score in [0, 100], the clip of the raw score; steps within ``max_steps``), the same result for the same
bank, task and seed, whatever it played in between. :func:`check_agent` plays real episodes on a real suite
and raises :class:`AgentCheckError` naming the property and what came.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from dreamer_gym.agents import EpisodeResult
from dreamer_gym.errors import DreamerGymError
from dreamer_gym.memory import MemoryBank, MemoryEntry
from dreamer_gym.suites.base import EpisodeTask, TaskSuite
from dreamer_gym.suites.registry import get_suite_spec
from dreamer_gym.suites.spec import SuiteSpec

MEMBERS = ("config", "cache_key", "retrieve", "play")


class AgentCheckError(DreamerGymError, AssertionError):
    """An agent breaks the contract; the message names the agent, the property and what came."""


@dataclass
class AgentReport:
    """What :func:`check_agent` checked: ``passed`` property names and the results it played, in order."""

    name: str
    suite: str
    passed: list[str] = field(default_factory=list)
    results: list[EpisodeResult] = field(default_factory=list)


def default_banks(spec: SuiteSpec) -> tuple[MemoryBank, MemoryBank]:
    """Two disjoint banks for ``spec``: its abstract procedures (the oracle's) and one note per family, each
    with a few general notes (a lexical retriever needs more than two documents to rank anything)."""
    def filler(what: str) -> list[MemoryEntry]:
        return [MemoryEntry("fact", f"{what} {i}: every action is answered with an observation.") for i in range(4)]

    procedures = [MemoryEntry("procedure", f"To {proc.goal or family}: {proc.steps}.", family)
                  for family, proc in spec.procedures.items()]
    notes = [MemoryEntry("insight", f"In {family}, read the task text closely before the first action.", family)
             for family in spec.families]
    return MemoryBank(procedures + filler("General note")), MemoryBank(notes + filler("Reminder"))


class _Checker:
    """One run of :func:`check_agent`; each method checks one property and records it."""

    def __init__(self, agent: Any, suite: TaskSuite, report: AgentReport) -> None:
        self.agent, self.suite, self.report = agent, suite, report

    def fail(self, prop: str, message: str) -> AgentCheckError:
        return AgentCheckError(f"agent {self.report.name!r} on suite {self.report.suite!r}, {prop}: {message}")

    def call(self, prop: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - reported with the property that raised
            raise self.fail(prop, f"raised {type(exc).__name__}: {exc}") from exc

    def members(self) -> None:
        missing = [m for m in MEMBERS if not hasattr(self.agent, m)]
        if missing:
            raise self.fail("the DownstreamAgent protocol", f"missing members {missing}")
        config = self.agent.config
        for name in ("top_k", "max_steps"):
            value = getattr(config, name, None)
            if not isinstance(value, int) or value < 1:
                raise self.fail("`config`", f"expected `{name}` to be a positive int, got {value!r}")
        key = self.agent.cache_key
        if not isinstance(key, str) or not key or self.agent.cache_key != key:
            raise self.fail("`cache_key`", f"expected the same non-empty string on every read, got {key!r}")
        self.report.passed.append("members")

    def retrieval(self, descriptions: Sequence[str], banks: Sequence[MemoryBank]) -> dict[tuple[int, int], list[MemoryEntry]]:
        """Retrieve for every (task text, bank), interleaving banks, then again: the given bank's entries only."""
        top_k, got = self.agent.config.top_k, {}
        for rounds in range(2):
            for t, description in enumerate(descriptions):
                for b, bank in enumerate(banks):
                    where = f"retrieve(task {t}, bank {bank.hash}{' again' if rounds else ''})"
                    out = self.call(where, self.agent.retrieve, description, list(bank.entries), index_key=bank.hash)
                    if not isinstance(out, list) or not all(isinstance(e, MemoryEntry) for e in out):
                        raise self.fail(where, f"expected a list of MemoryEntry, got {out!r:.200}")
                    foreign = [e.id for e in out if e.id not in bank]
                    if foreign:
                        raise self.fail(where, f"returned entries that are not in the bank it was given: {foreign}")
                    if len(out) > top_k or len({e.id for e in out}) != len(out):
                        raise self.fail(where, f"expected at most top_k={top_k} distinct entries, got {[e.id for e in out]}")
                    if rounds and out != got[t, b]:
                        raise self.fail(where, "differs from the first retrieval: retrieval must be deterministic")
                    got[t, b] = out
        unkeyed = self.call("retrieve(index_key=None)", self.agent.retrieve, descriptions[0], list(banks[0].entries))
        if unkeyed != got[0, 0]:
            raise self.fail("retrieve(index_key=None)", "differs from the same retrieval with the bank's hash as "
                                                        "`index_key`: the key may only cache, never change the result")
        if self.call("retrieve(empty bank)", self.agent.retrieve, descriptions[0], []) != []:
            raise self.fail("retrieve(empty bank)", "expected [] from a bank with no entries")
        self.report.passed.append("retrieval")
        return got

    def play(self, task: EpisodeTask, entries: Sequence[MemoryEntry], seed: int) -> EpisodeResult:
        where = f"play({task}, {len(entries)} entries, seed={seed})"
        result = self.call(where, self.agent.play, self.suite, task, list(entries), seed)
        if not isinstance(result, EpisodeResult) or result.task != task:
            raise self.fail(where, f"expected an EpisodeResult for {task}, got {result!r:.300}")
        clipped = min(max(result.raw_score, 0.0), 100.0)
        if not 0.0 <= result.score <= 100.0 or result.score != clipped:
            raise self.fail(where, f"expected score = raw_score clipped to [0, 100] ({clipped}), got {result.score!r}")
        max_steps = self.agent.config.max_steps
        if not isinstance(result.steps, int) or not 0 <= result.steps <= max_steps:
            raise self.fail(where, f"expected steps in [0, max_steps={max_steps}], got {result.steps!r}")
        if result.actions and len(result.actions) != result.steps:
            raise self.fail(where, f"{result.steps} steps but {len(result.actions)} actions recorded")
        if not isinstance(result.success, bool) or (result.success and result.score < 100.0):
            raise self.fail(where, f"expected success: bool, True only at score 100, got {result.success!r} "
                                   f"at {result.score}")
        if result.error is not None:
            raise self.fail(where, f"an episode that ran must have error None, got {result.error!r} (a failure the "
                                   "agent cannot play through is raised: the executor records it)")
        self.report.results.append(result)
        return result


def _tasks(spec: SuiteSpec, suite: TaskSuite) -> list[EpisodeTask]:
    return [EpisodeTask(family, suite.variations(family, "dev")[0]) for family in spec.families[:2]]


def check_agent(agent: Any, suite: str | SuiteSpec | TaskSuite = "scienceworld", *,
                banks: Sequence[MemoryBank] | None = None, tasks: Sequence[EpisodeTask] | None = None,
                seed: int = 0, suite_kwargs: dict[str, Any] | None = None) -> AgentReport:
    """Check ``agent`` on real episodes of ``suite`` (a registered name, a spec, or a started adapter, which
    stays open); raise :class:`AgentCheckError` on the first breach, return an :class:`AgentReport`.

    ``banks`` (two or more, default :func:`default_banks`) are retrieved from in turn; ``tasks`` (default: the
    first DEV variation of the suite's first two families) are played with their retrieved entries, then the
    first again after the others: it must give the same result (no state survives an episode)."""
    owned = not hasattr(suite, "step")
    if owned:
        spec = suite if isinstance(suite, SuiteSpec) else get_suite_spec(str(suite))
        adapter = spec.make(**(suite_kwargs or {}))
    else:
        adapter, spec = suite, get_suite_spec(suite.name)  # type: ignore[union-attr]
    banks = list(banks) if banks is not None else list(default_banks(spec))
    if len(banks) < 2:
        raise ValueError(f"Expected `banks` to hold at least two banks (retrieval must not mix them), got {len(banks)}")
    report = AgentReport(type(agent).__name__, spec.name)
    checker = _Checker(agent, adapter, report)
    try:
        checker.members()
        tasks = list(tasks) if tasks is not None else _tasks(spec, adapter)
        descriptions = []
        for task in tasks:
            checker.call(f"suite.start({task})", adapter.start, task)
            descriptions.append(adapter.task_description())
        retrieved = checker.retrieval(descriptions, banks)
        plays = [(task, retrieved[t, t % len(banks)]) for t, task in enumerate(tasks)]
        first = [checker.play(task, entries, seed) for task, entries in plays]
        report.passed.append("episodes in range")
        again = checker.play(*plays[0], seed)
        if again != first[0]:
            raise checker.fail("determinism", f"the same bank, task and seed gave {first[0]} and then, after other "
                                              f"episodes, {again}: an episode must depend on its inputs only")
        report.passed.append("determinism")
    finally:
        if owned:
            adapter.close()
    return report
