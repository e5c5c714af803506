"""The memory-following agent on real ScienceWorld: its score moves with what memory says, not how."""
from __future__ import annotations

import pytest

from dreamer_gym.agents import AgentConfig, MemoryFollowingAgent
from dreamer_gym.consolidators.oracle import as_prose
from dreamer_gym.memory import MemoryEntry
from dreamer_gym.suites.base import EpisodeTask
from dreamer_gym.suites.scienceworld import PROCEDURES, ScienceWorldSuite

pytestmark = pytest.mark.jvm
FAMILY = "power-component"


@pytest.fixture(scope="module")
def suite():
    with ScienceWorldSuite() as s:
        yield s


def _formats(steps: str) -> dict[str, str]:
    items = [s.strip() for s in steps.split(",")]
    return {
        "comma list": f"To turn on the light bulb: {steps}.",
        "numbered": "How to turn on the light bulb:\n" + "\n".join(f"{i}. {s}" for i, s in enumerate(items, 1)),
        "prose": "To turn on the light bulb. " + as_prose(steps),
    }


def test_same_procedure_in_three_formats_scores_the_same(suite: ScienceWorldSuite) -> None:
    agent = MemoryFollowingAgent()
    task = EpisodeTask(FAMILY, suite.variations(FAMILY, "dev")[0])
    scores = {
        name: agent.play(suite, task, [MemoryEntry("procedure", text, FAMILY)]).score
        for name, text in _formats(PROCEDURES[FAMILY].steps).items()
    }
    assert len(set(scores.values())) == 1, scores
    assert scores["comma list"] == 100.0


def test_abstract_procedure_transfers_where_verbatim_and_empty_do_not(suite: ScienceWorldSuite) -> None:
    agent = MemoryFollowingAgent()
    train = EpisodeTask(FAMILY, suite.variations(FAMILY, "train")[0])
    verbatim = "To turn on the red light bulb: " + ", ".join(suite.gold_path(train))
    dev = [EpisodeTask(FAMILY, v) for v in suite.variations(FAMILY, "dev")[:2]]
    abstract = MemoryEntry("procedure", f"To turn on the light bulb: {PROCEDURES[FAMILY].steps}", FAMILY)
    on_train = agent.play(suite, train, [MemoryEntry("procedure", verbatim, FAMILY)]).score
    verbatim_dev = sum(agent.play(suite, t, [MemoryEntry("procedure", verbatim, FAMILY)]).score for t in dev)
    abstract_dev = sum(agent.play(suite, t, [abstract]).score for t in dev)
    empty_dev = sum(agent.play(suite, t, []).score for t in dev)
    assert on_train == 100.0  # a verbatim procedure helps on its own variation
    assert abstract_dev > verbatim_dev and abstract_dev > empty_dev


def test_pitfalls_are_obeyed_and_play_is_deterministic(suite: ScienceWorldSuite) -> None:
    task = EpisodeTask("find-non-living-thing", suite.variations("find-non-living-thing", "dev")[0])
    procedure = MemoryEntry("procedure", "To find a non-living thing: look around, focus on wall, wait1", task.family)
    pitfall = MemoryEntry("pitfall", "Do not focus on wall: it ends the task.", task.family)
    agent = MemoryFollowingAgent(AgentConfig(max_steps=10))
    without = agent.play(suite, task, [procedure])
    with_pitfall = agent.play(suite, task, [procedure, pitfall])
    assert "focus on wall" in without.actions
    assert "focus on wall" not in with_pitfall.actions
    assert agent.play(suite, task, [procedure, pitfall]) == with_pitfall


def test_a_note_naming_what_is_not_here_tries_what_other_notes_did(suite: ScienceWorldSuite) -> None:
    """Raw notes on one goal pool their experience: the parrot the note names is not outside in this
    variation, and another note says focusing on the giant tortoise finished the same task."""
    family, goal = "lifespan-longest-lived", "find the animal with the longest life span"
    task = EpisodeTask(family, suite.variations(family, "train")[2])
    agent = MemoryFollowingAgent()
    note = MemoryEntry("procedure", f"To {goal}: open door to outside, go to outside, focus on egg parrot.", family)
    other = MemoryEntry("insight", f"While trying to {goal}, 'focus on egg giant tortoise' raised the score "
                                   "from 50 to 100.", family)
    alone = agent.play(suite, task, [note])
    pooled = agent.play(suite, task, [note, other])
    assert alone.score < 100.0 and "focus on egg giant tortoise" not in alone.actions
    assert pooled.score == 100.0 and "focus on egg giant tortoise" in pooled.actions
