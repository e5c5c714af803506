"""The op-level rules (what `merge` and `abstract` write), on hand-made regions: detours fall out, skipped
steps come back, other variations' names are read through the goal, and nothing exceeds the token limit."""
from __future__ import annotations

from dreamer_gym.envs.op_rules import abstract_text, consensus_steps, merge_text, parse_procedure, template
from dreamer_gym.memory.tokens import count_tokens


def _proc(i: int, text: str, session: int = 1) -> dict:
    return {"id": f"e{i}", "kind": "procedure", "text": text, "session": session, "tags": [], "provenance": []}


REGION = [
    # red bulb, with a detour ("pick up wall") and a wrong focus
    _proc(1, "To turn on the red light bulb: go to workshop, pick up wall, focus on red light bulb, "
          "connect battery anode to black wire terminal 1, focus on air, wait1."),
    # green bulb, skipped "go to workshop"
    _proc(2, "To turn on the green light bulb: focus on green light bulb, connect battery anode to blue wire terminal 1, wait1."),
    _proc(3, "To turn on the green light bulb: go to workshop, open door to hallway, focus on green light bulb, "
          "connect battery anode to orange wire terminal 1, wait1.", session=3),
    {"id": "f1", "kind": "fact", "text": "The battery can be found in the workshop.", "session": 1, "tags": [], "provenance": []},
]


def test_parse_procedure_reads_goal_and_steps_and_nothing_else() -> None:
    proc = parse_procedure(REGION[1])
    assert proc is not None and proc.goal == "turn on the green light bulb" and proc.steps[-1] == "wait1"
    assert parse_procedure(REGION[3]) is None


def test_consensus_drops_detours_restores_skipped_steps_and_reads_names_through_the_goal() -> None:
    procs = [p for p in map(parse_procedure, REGION) if p is not None]
    steps = consensus_steps(procs[1], procs)
    assert steps == ["go to workshop", "focus on green light bulb", "connect battery anode to blue wire terminal 1", "wait1"]
    # "focus on red light bulb" supports "focus on green light bulb": the goals say red <-> green
    assert consensus_steps(procs[0], procs) == ["go to workshop", "focus on red light bulb",
                                                "connect battery anode to black wire terminal 1", "wait1"]


def test_template_masks_words_not_in_every_procedure() -> None:
    common = frozenset({"connect", "battery", "anode", "to", "wire", "terminal", "1"})
    assert template("connect battery anode to blue wire terminal 1", common) == "connect battery anode to * wire terminal 1"


def test_merge_writes_one_procedure_then_the_merged_facts_within_the_token_limit() -> None:
    kind, text = merge_text(REGION, REGION, max_tokens=320)
    assert kind == "procedure" and text.startswith("To turn on the green light bulb: go to workshop, focus on green")
    assert text.endswith("The battery can be found in the workshop.")
    assert "pick up wall" not in text and "open door to hallway" not in text
    short = merge_text(REGION, REGION, max_tokens=14)[1]
    assert count_tokens(short) <= 14 and short.startswith("To turn on the green light bulb:")


def test_abstract_is_for_procedures_only() -> None:
    assert abstract_text(REGION[3], REGION, 320) is None
    assert abstract_text(REGION[0], REGION, 320) == ("To turn on the red light bulb: go to workshop, focus on red light bulb, "
                                                     "connect battery anode to black wire terminal 1, wait1.")
