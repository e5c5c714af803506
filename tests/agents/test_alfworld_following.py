"""The memory-following agent on ALFWorld-engine games: goal reading, fact reading, and that its score
moves with what memory says (real engine, real generated games; the same family's dev games)."""
from __future__ import annotations

import pytest

from dreamer_gym.agents import AgentConfig, MemoryFollowingAgent
from dreamer_gym.agents.alfworld_following import Goal, parse_goal, read_priors, seen_items
from dreamer_gym.consolidators.oracle import as_prose
from dreamer_gym.memory import MemoryEntry, Provenance
from dreamer_gym.suites.alfworld import PROCEDURES, ALFWorldSuite
from dreamer_gym.suites.base import EpisodeTask

PROV = (Provenance("t0", 0, 1),)


@pytest.mark.parametrize(
    ("text", "goal"),
    [
        ("Your task is to: put some pan on fridge.", Goal("put", "pan", "fridge")),
        ("Your task is to: put a plate in sidetable.", Goal("put", "plate", "sidetable")),
        ("Your task is to: examine the cd with the desklamp.", Goal("look", "cd", "desklamp")),
        ("Your task is to: look at mug under the desklamp.", Goal("look", "mug", "desklamp")),
        ("Your task is to: clean some soapbar and put it in cart.", Goal("clean", "soapbar", "cart")),
        ("Your task is to: put a clean potato in microwave.", Goal("clean", "potato", "microwave")),
        ("Your task is to: heat some cup and put it in sinkbasin.", Goal("hot", "cup", "sinkbasin")),
        ("Your task is to: put a cool egg in diningtable.", Goal("cool", "egg", "diningtable")),
        ("Your task is to: find two keychain and put them in coffeetable.", Goal("two", "keychain", "coffeetable")),
        ("To put two <object> in <receptacle>", Goal("two", "<object>", "<receptacle>")),
        ("To put a hot apple 1 in fridge 1", Goal("hot", "apple 1", "fridge 1")),
    ],
)
def test_goal_templates(text, goal):
    assert parse_goal(text) == goal


def test_unreadable_goal_is_none():
    assert parse_goal("Your task is to: boil water.") is None


def test_priors_from_raw_and_abstract_facts():
    priors = read_priors([
        "The mug 1 can be found in the countertop 2.",
        "A mug is usually found in the cabinet, countertop or coffeemachine. An apple is usually found in the fridge.",
    ])
    assert priors["mug"] == ["countertop", "cabinet", "coffeemachine"]
    assert priors["apple"] == ["fridge"]


def test_seen_items():
    assert seen_items("You arrive at desk 1. On the desk 1, you see a mug 1, an apple 2, and a pen 3.") == [
        "mug 1", "apple 2", "pen 3"]
    assert seen_items("You open the drawer 1. The drawer 1 is open. In it, you see nothing.") == []


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    # the session's cache of generated games, shared with tests/suites/test_alfworld.py (issue 39: CI time)
    s = ALFWorldSuite(source="generated", cache_dir=tmp_path_factory.getbasetemp() / "alfworld-gen-dev")
    yield s
    s.close()


def _procedure(family: str, prose: bool = False) -> MemoryEntry:
    goal, steps = PROCEDURES[family].goal, PROCEDURES[family].steps
    text = f"To {goal}. " + as_prose(steps) if prose else f"To {goal}: {steps}."
    return MemoryEntry("procedure", text, family, (), PROV, 0)


@pytest.mark.alfworld
@pytest.mark.parametrize("family", ["pick_clean_then_place_in_recep", "look_at_obj_in_light"])
def test_score_moves_with_memory(suite, family):
    """No memory: the literal reading cannot clean or switch a lamp on. The abstract procedure, in list
    or prose form, solves the same game; another family's procedure does not."""
    agent = MemoryFollowingAgent(AgentConfig(max_steps=50))
    task = EpisodeTask(family, 1000)
    empty = agent.play(suite, task, [])
    listed = agent.play(suite, task, [_procedure(family)])
    prose = agent.play(suite, task, [_procedure(family, prose=True)])
    wrong = agent.play(suite, task, [MemoryEntry("procedure", f"To {PROCEDURES[family].goal}: "
                                                 f"{PROCEDURES['pick_heat_then_place_in_recep'].steps}.",
                                                 family, (), PROV, 0)])
    assert empty.score == 0.0
    assert listed.score == 100.0 and listed.success
    assert prose.actions == listed.actions
    assert wrong.score == 0.0
    # deterministic: the same inputs give the same episode
    assert agent.play(suite, task, [_procedure(family)]).actions == listed.actions


@pytest.mark.alfworld
def test_verbatim_procedure_is_read_by_analogy(suite):
    """A raw procedure written on another game carries over through its own goal: the object and target types
    that goal names stand for this task's ("apple 3" -> a cup, "cabinet 2" -> the fridge). A note with no
    goal to align teaches nothing about another object, and another kind of task's steps do not solve this one."""
    family = "pick_heat_then_place_in_recep"
    task = EpisodeTask(family, 1000)
    suite.start(task)
    assert suite.task_description() == "Your task is to: put a hot cup in fridge."

    def steps(obj: str, verb: str = "heat", appliance: str = "microwave") -> str:
        return (f"look, go to countertop 1, go to drawer 1, take {obj} 3 from countertop 1, go to {appliance} 1, "
                f"{verb} {obj} 3 with {appliance} 1, go to cabinet 2, move {obj} 3 to cabinet 2.")

    def note(text: str) -> MemoryEntry:
        return MemoryEntry("procedure", text, family, (), PROV, 0)

    agent = MemoryFollowingAgent(AgentConfig(max_steps=50))
    assert agent.play(suite, task, []).score == 0.0
    same = agent.play(suite, task, [note("To heat some cup and put it in cabinet: " + steps("cup"))])
    assert same.score == 100.0 and any(a.startswith("heat cup") for a in same.actions)
    other = agent.play(suite, task, [note("To heat some apple and put it in cabinet: " + steps("apple"))])
    assert other.score == 100.0 and any(a.startswith("heat cup") for a in other.actions)
    assert not any(a.startswith("move") and "cabinet" in a for a in other.actions)  # cabinet -> fridge
    assert agent.play(suite, task, [note(steps("apple"))]).score == 0.0  # no goal: nothing to align
    cool = note("To cool some apple and put it in cabinet: " + steps("apple", "cool", "fridge"))
    assert agent.play(suite, task, [cool]).score == 0.0
