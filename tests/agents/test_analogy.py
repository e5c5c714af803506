"""Reading a concrete note by analogy (dreamer_gym/agents/analogy.py): the rules, then on real ScienceWorld."""
from __future__ import annotations

import pytest

from dreamer_gym.agents import MemoryFollowingAgent
from dreamer_gym.agents.analogy import Analogy, goal_mapping, rooms_named_for
from dreamer_gym.agents.reading import steps_from_outcomes
from dreamer_gym.memory import MemoryEntry
from dreamer_gym.suites.base import EpisodeTask


@pytest.mark.parametrize(("note_goal", "task_goal", "expected"), [
    ("turn on the red light bulb", "turn on the blue light bulb", {"red": "blue"}),
    ("grow a apple plant from seed", "grow a cherry plant from seed", {"apple": "cherry"}),
    ("use chemistry to create the substance 'salt water'", "use chemistry to create the substance 'smores'",
     {"salt water": "smores"}),
    ("measure the temperature of unknown substance B, which is located around the living room",
     "measure the temperature of unknown substance H, which is located around the bathroom",
     {"b": "h", "living room": "bathroom"}),
    ("turn on the light bulb", "turn on the blue light bulb", {}),  # an insertion names nothing to replace
    ("grow a <seed> plant from seed", "grow a cherry plant from seed", {}),  # a slot is not a name
    ("find a(n) living thing", "find a(n) living thing", {}),
])
def test_goal_alignment_maps_only_replaced_names(note_goal, task_goal, expected):
    assert goal_mapping(note_goal, task_goal) == expected


def test_apply_rewrites_whole_words_and_never_a_slot():
    analogy = Analogy.between("To grow a apple plant from seed: pick up apple seed", "grow a cherry plant from seed")
    assert analogy.apply("move apple seed in seed jar to flower pot 1") == "move cherry seed in seed jar to flower pot 1"
    assert analogy.apply("move <apple> to pineapple box") == "move <apple> to pineapple box"


def test_alternatives_offer_same_kind_objects_the_note_does_not_name():
    note = "To turn on the red light bulb: connect battery anode to green wire terminal 1, connect black wire terminal 2"
    analogy = Analogy.between(note, "turn on the red light bulb")
    known = ["battery", "black wire", "orange wire", "red light bulb"]
    found = list(analogy.alternatives("connect battery anode to green wire terminal 1", known))
    # black wire has its own part in the note: only orange wire may stand in for green wire
    assert found == [("green wire", "orange wire", "connect battery anode to orange wire terminal 1")]
    analogy.learn("green wire", "orange wire")
    assert analogy.apply("connect green wire terminal 2 to anode") == "connect orange wire terminal 2 to anode"


def test_facts_and_insights_are_read_as_hints_and_steps():
    facts = ["The red light bulb can be found in the workshop.", "The apple can be found in the kitchen."]
    assert rooms_named_for("focus on blue light bulb", facts) == ["workshop"]
    assert rooms_named_for("pick up thermometer", facts) == []
    goal, steps = steps_from_outcomes([
        "While trying to grow a apple plant from seed, 'focus on apple seed in flower pot 3' raised the score from 11 to 36.",
        "While trying to grow a apple plant from seed, 'pick up seed jar' raised the score from 2 to 4.",
        "While trying to grow a apple plant from seed, 'pick up seed jar' raised the score from 1 to 2.",
        "An attempt to grow a apple plant from seed failed after 30 steps (score 0).",
    ])
    assert goal == "grow a apple plant from seed"
    assert steps == ["pick up seed jar", "focus on apple seed in flower pot 3"]


@pytest.fixture(scope="module")
def scienceworld_suite():
    from dreamer_gym.suites.scienceworld import ScienceWorldSuite

    with ScienceWorldSuite() as suite:
        yield suite


@pytest.mark.jvm
def test_a_verbatim_train_note_now_transfers_in_part(scienceworld_suite):
    """Raw memory with value: a TRAIN gold path written verbatim (another bulb, other wires, another start
    room) lifts DEV episodes above no memory; the abstract procedure still does at least as well."""
    from dreamer_gym.suites.scienceworld import PROCEDURES

    suite, family = scienceworld_suite, "power-component"
    agent = MemoryFollowingAgent()
    train = EpisodeTask(family, suite.variations(family, "train")[0])
    suite.start(train)
    goal = suite.task_description().split(".")[0].replace("Your task is to ", "")
    verbatim = MemoryEntry("procedure", f"To {goal}: " + ", ".join(suite.gold_path(train)), family)
    abstract = MemoryEntry("procedure", f"To {goal}: {PROCEDURES[family].steps}", family)
    dev = [EpisodeTask(family, v) for v in suite.variations(family, "dev")[:3]]
    verbatim_dev = [agent.play(suite, t, [verbatim]).score for t in dev]
    empty_dev = [agent.play(suite, t, []).score for t in dev]
    abstract_dev = [agent.play(suite, t, [abstract]).score for t in dev]
    assert sum(verbatim_dev) > sum(empty_dev), (verbatim_dev, empty_dev)
    assert sum(abstract_dev) >= sum(verbatim_dev), (abstract_dev, verbatim_dev)


def test_the_reading_version_is_part_of_the_cache_key(monkeypatch):
    """A cache filled by an older reader is never served: bumping READING_VERSION changes every key."""
    from dreamer_gym.agents import memory_following

    key = MemoryFollowingAgent().cache_key
    monkeypatch.setattr(memory_following, "READING_VERSION", memory_following.READING_VERSION + 1)
    assert MemoryFollowingAgent().cache_key != key


def test_alternatives_never_take_a_command_word_for_part_of_a_name():
    """"focus on egg" with a turtle egg in sight: the phrase is "egg", not "on egg" (which would have
    rewritten the action to "focus turtle egg")."""
    analogy = Analogy.between("To focus on the life stages of the frog: focus on egg", "focus on the life stages of the turtle")
    found = list(analogy.alternatives("focus on egg", ["turtle egg"]))
    assert found == []  # a one-word phrase cannot hold the two-word name: nothing rather than a wrong rewrite
    found = list(analogy.alternatives("focus on frog egg", ["turtle egg"]))
    assert found == [("frog egg", "turtle egg", "focus on turtle egg")]
