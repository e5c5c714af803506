"""Reading memory text: one procedure yields the same actions whatever its format, so the downstream
agent (and hence the reward) responds to what a memory says, not to how it is laid out."""
from __future__ import annotations

import re

import pytest

from dreamer_gym.agents.reading import command_words, extract_actions, fill, forbidden_actions, parallel_steps, slots
from dreamer_gym.consolidators.oracle import as_prose
from dreamer_gym.envs.config import DEFAULT_FAMILIES
from dreamer_gym.suites.scienceworld import PROCEDURES

FAMILIES = sorted(PROCEDURES)


def steps_of(procedure: str) -> list[str]:
    return [s.strip() for s in procedure.split(",") if s.strip()]


def numbered(steps: list[str], style: str = "{i}. {s}") -> str:
    return "\n".join(style.format(i=i, s=s) for i, s in enumerate(steps, start=1))


def goals(pool) -> list[str]:
    """Every task goal in the pool, worded as the oracle consolidator words it ("find a(n) living thing",
    "use chemistry to create ...", "turn on the red light bulb")."""
    texts = {t.task_description for t in pool.trajectories.values()}
    texts |= {d for split in pool.task_texts.values() for fam in split.values() for d in fam.values()}
    return sorted({t.split(".")[0].replace("Your task is to ", "").strip() for t in texts})


@pytest.mark.parametrize("family", FAMILIES)
def test_same_actions_from_list_prose_and_numbered_steps(family):
    procedure = PROCEDURES[family].steps
    steps = steps_of(procedure)
    as_list = extract_actions(procedure)
    assert as_list == steps  # the abstract procedures are written article-free, one action per item
    assert extract_actions(as_prose(procedure)) == as_list
    assert extract_actions(numbered(steps)) == as_list
    assert extract_actions(numbered(steps, "Step {i}: {s}")) == as_list
    assert extract_actions(numbered(steps, "{i}) {s}")) == as_list
    assert extract_actions("; ".join(steps)) == as_list
    assert extract_actions(" -> ".join(steps)) == as_list
    assert extract_actions(procedure.upper()) == as_list  # case does not matter


@pytest.mark.parametrize("family", FAMILIES)
def test_goal_header_is_not_an_action(pool, family):
    """The oracle writes "To <goal>: <steps>." and its prose decoy "To <goal>. First, ..."; no task goal
    ("use chemistry to create ...", "turn on the green light bulb") may become a step."""
    procedure = PROCEDURES[family].steps
    expected = steps_of(procedure)
    all_goals = goals(pool)
    assert len(all_goals) >= len(pool.families)
    for goal in all_goals:
        assert extract_actions(f"To {goal}: {procedure}.") == expected, goal
        assert extract_actions(f"To {goal}. " + as_prose(procedure)) == expected, goal
        assert extract_actions(f"To {goal}:\n" + "\n".join(f"- {s}" for s in expected)) == expected, goal


@pytest.mark.parametrize("family", FAMILIES)
def test_numbered_steps_after_a_header(pool, family):
    """'header:\n1. step' (a colon used to swallow the newline, and "1" was read as an answer action)."""
    expected = steps_of(PROCEDURES[family].steps)
    for goal in goals(pool):
        assert extract_actions(f"To {goal}:\n" + numbered(expected)) == expected, goal
    assert extract_actions("Steps:\n" + numbered(expected)) == expected
    assert extract_actions("Procedure: " + ", ".join(expected)) == expected


def test_prose_connectives_and_articles():
    text = ("First, go to the kitchen. After that, open the cupboard and then pick up a tin cup. "
            "Next you should look around. Finally, focus on the <substance>.")
    assert extract_actions(text) == ["go to kitchen", "open cupboard", "pick up tin cup", "look around",
                                     "focus on <substance>"]


def test_text_without_actions():
    assert extract_actions("") == []
    assert extract_actions("Animals are usually found outside.") == []
    assert extract_actions("\n\n;;,,") == []


@pytest.mark.parametrize("family", DEFAULT_FAMILIES)
def test_train_gold_paths_read_back_verbatim(pool, family):
    """A gold path written out as a list or numbered steps reads back as the same actions, including the
    "0" answers to ambiguity questions (lower-cased: ScienceWorld's parser ignores case)."""
    assert pool.train_gold[family]
    for path in pool.train_gold[family].values():
        expected = [re.sub(r"\s+", " ", re.sub(r"\b(?:the|a|an)\b\s*", "", a.lower())).strip() for a in path]
        assert extract_actions(", ".join(path)) == expected
        assert extract_actions(numbered(list(path))) == expected


def test_forbidden_actions_from_pitfalls():
    banned = forbidden_actions([
        "Do not focus on the wall before reading the recipe.",
        "Avoid: pick up the thermometer; never go to the hallway",
        "You must not activate the stove until the pot is full.",
        "Don't wait1 when the plant is dry. Use the sink instead of pour the jug.",
        "Focus on the red box.",  # no warning: nothing banned
        "Never focus on <animal> in the wrong room.",  # slots are never banned
    ])
    assert banned == {"focus on wall", "pick up thermometer", "go to hallway", "activate stove", "wait1", "pour jug"}
    assert forbidden_actions([]) == set()
    assert forbidden_actions(["Look around first, then open the door."]) == set()


def test_slots_and_fill():
    step = "move <seed> in seed jar to <pot 1>"
    assert slots(step) == ["seed", "pot 1"]
    assert fill(step, {"seed": "apple seed", "pot 1": "flower pot 1"}) == "move apple seed in seed jar to flower pot 1"
    assert fill(step, {"seed": "apple seed"}) == "move apple seed in seed jar to <pot 1>"  # unbound slots stay
    assert slots(fill(step, {})) == ["seed", "pot 1"]
    assert slots("look around") == [] and fill("look around", {"x": "y"}) == "look around"
    assert slots("<" + "x" * 41 + ">") == []  # slot names are short
    [action] = extract_actions("connect <wire 1> terminal 2 to cathode in <color> light bulb")
    assert slots(action) == ["wire 1", "color"]


GOAL = "find the animal with the longest life span"
NOTES = [
    f"To {GOAL}: go to outside, focus on egg parrot.",
    f"While trying to {GOAL}, 'focus on crocodile' raised the score from 50 to 100.",
    f"While trying to {GOAL}, 'focus on egg giant tortoise' raised the score from 0 to 100.",
    f"While trying to {GOAL}, then the shortest life span, 'focus on ant' raised the score from 50 to 100.",
    f"While trying to {GOAL}, 'go to outside' raised the score from 0 to 50.",
    f"To {GOAL}, then the shortest life span: focus on baby baby brown bear, focus on chameleon.",
]


def test_parallel_steps_are_same_goal_same_stage_same_command():
    """What other notes on the same goal did at this point: another goal's notes (even a longer goal that starts
    the same), another command, and notes from a later stage of the score never count."""
    assert command_words("focus on egg parrot") == "focus on" and command_words("hello") is None
    at_50 = parallel_steps("focus on baby baby elephant", 0, NOTES, GOAL, 50.0)
    assert at_50 == ["focus on egg parrot", "focus on crocodile", "focus on egg giant tortoise"]
    assert parallel_steps("focus on baby baby elephant", 0, NOTES, GOAL, 0.0) == [
        "focus on egg parrot", "focus on egg giant tortoise"]  # 50 -> 100 is a later stage than a score of 0
    assert parallel_steps("focus on egg parrot", 0, NOTES, GOAL, 50.0) == ["focus on crocodile", "focus on egg giant tortoise"]
    assert parallel_steps("focus on baby baby elephant", 1, NOTES[:1], GOAL, 50.0) == []  # no second focus step
    assert parallel_steps("pick up egg parrot", 0, NOTES, GOAL, 50.0) == []
    assert parallel_steps("focus on x", 0, NOTES, "find the animal with the shortest life span", 50.0) == []
