"""`check_agent` passes the built-in memory-following agent on real suites and names each breach of the
downstream-agent contract (real agents with one defect each, on the real latency suite)."""
from __future__ import annotations

from collections.abc import Sequence

import pytest

from dreamer_gym.agents import AgentConfig, EpisodeResult, MemoryFollowingAgent
from dreamer_gym.memory import MemoryEntry
from dreamer_gym.suites.base import EpisodeTask, TaskSuite
from dreamer_gym.testing import AgentCheckError, check_agent

PROPERTIES = ["members", "retrieval", "episodes in range", "determinism"]


@pytest.mark.parametrize("suite", ["latency", pytest.param("scienceworld", marks=pytest.mark.jvm)])
def test_the_memory_following_agent_passes(suite: str) -> None:
    report = check_agent(MemoryFollowingAgent(AgentConfig(max_steps=20)), suite)
    assert report.passed == PROPERTIES and report.suite == suite
    assert len(report.results) == 3 and report.results[0] == report.results[2]
    assert all(r.steps > 0 for r in report.results)  # real episodes were played
    if suite == "latency":  # the procedure bank solves the game: its first task was played with it
        assert report.results[0].score == 100.0 and report.results[1].score < 100.0


class RemembersTheFirstBank(MemoryFollowingAgent):
    """Retrieves from the first bank it ever saw for a task text, whatever bank it is given (a cache keyed by
    the task text only)."""

    def __init__(self, config: AgentConfig) -> None:
        super().__init__(config)
        self.seen: dict[str, list[MemoryEntry]] = {}

    def retrieve(self, description: str, entries: Sequence[MemoryEntry], index_key: str | None = None) -> list[MemoryEntry]:
        return self.seen.setdefault(description, super().retrieve(description, entries, index_key))


class ReadsMemoryOnce(MemoryFollowingAgent):
    """Reads its memory in its first episode only: a flag that survives the episode."""

    read = False

    def play(self, suite: TaskSuite, task: EpisodeTask, entries: Sequence[MemoryEntry], seed: int = 0) -> EpisodeResult:
        entries, self.read = ([] if self.read else entries), True
        return super().play(suite, task, entries, seed)


class OverClaims(MemoryFollowingAgent):
    """Reports success on every episode."""

    def play(self, suite: TaskSuite, task: EpisodeTask, entries: Sequence[MemoryEntry], seed: int = 0) -> EpisodeResult:
        result = super().play(suite, task, entries, seed)
        return EpisodeResult(task, result.score, result.raw_score, result.steps, True, result.actions)


@pytest.mark.parametrize(("agent", "message"), [
    (RemembersTheFirstBank(AgentConfig(max_steps=3)), r"retrieve\(task 0, bank b\w+\): returned entries that are not in the bank"),
    (ReadsMemoryOnce(AgentConfig(max_steps=3)), r"determinism: the same bank, task and seed gave"),
    (OverClaims(AgentConfig(max_steps=1)), r"play\(.*\): expected success: bool, True only at score 100, got True at 0.0"),
], ids=["retrieval-leaks-banks", "state-across-episodes", "success-without-score"])
def test_check_agent_names_each_breach(agent: MemoryFollowingAgent, message: str) -> None:
    with pytest.raises(AgentCheckError, match=rf"agent '{type(agent).__name__}' on suite 'latency', {message}"):
        check_agent(agent, "latency")


def test_check_agent_needs_two_banks() -> None:
    with pytest.raises(ValueError, match="at least two banks"):
        check_agent(MemoryFollowingAgent(), "latency", banks=[])
