"""The evidence a policy sees before it merges a group (issue 31): goals read off the writer's sentences, how
many tasks a group holds, the merge rule's support share; in GRPO's `ops` listing and the op-level features.
No JVM: regions are built from the writer's own sentences (acquisition.write_entries) and the shipped pool."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from dreamer_gym.envs.group_evidence import entry_evidence, entry_goal, group_evidence
from dreamer_gym.envs.observation import entry_dict
from dreamer_gym.envs.op_rules import merge_text
from dreamer_gym.envs.ops import entry_classes
from dreamer_gym.envs.wrappers import ENTRY_FEATURES, GROUP_FEATURES, check_features, entry_features
from dreamer_gym.errors import ConfigError
from dreamer_gym.memory import MemoryEntry
from dreamer_gym.memory.regions import select_region
from dreamer_gym.methods.grpo.commands import SYSTEM_PROMPTS, first_user_message, system_prompt
from dreamer_gym.methods.oplevel.trainer import CHECKPOINT_FILE, OpLevelConfig, OpPolicy, load_policy
from dreamer_gym.pool import load_pool

BULB = "turn on the red light bulb"
THERMO = "measure the temperature of unknown substance B, which is located around the living room"
BULB_STEPS = "open door to workshop, go to workshop, connect battery to red light bulb, focus on red light bulb"
THERMO_STEPS = "go to living room, pick up thermometer, focus on unknown substance B, use thermometer on substance B"


def _entry(n: int, kind: str, text: str, family: str, tags: tuple[str, ...], session: int = 0) -> dict:
    return {"id": f"e{n}", "kind": kind, "text": text, "family": family, "session": session, "tags": list(tags),
            "provenance": [{"trajectory_id": f"t{n}", "start": 0, "end": 5}]}


def _mixed_window() -> list[dict]:
    """A window's entries in the writer's words: 3 power-component and 2 use-thermometer procedures, their
    score-jump insights, a pitfall, a failure and two location facts."""
    region = [_entry(i, "procedure", f"To {BULB}: {BULB_STEPS}.", "power-component", ("verbatim", f"variation:{i}"), i)
              for i in range(3)]
    region += [_entry(3 + i, "procedure", f"To {THERMO}: {THERMO_STEPS}.", "use-thermometer",
                      ("verbatim", f"variation:{i}"), i) for i in range(2)]
    region += [
        _entry(5, "insight", f"While trying to {BULB}, 'focus on red light bulb' raised the score from 13 to 63.",
               "power-component", ("score-jump",)),
        _entry(6, "insight", f"While trying to {THERMO}, 'go to living room' raised the score from 3 to 9.",
               "use-thermometer", ("score-jump",)),
        _entry(7, "insight", f"While trying to {BULB}, 'go to workshop' raised the score from 0 to 13.",
               "power-component", ("score-jump",)),
        _entry(8, "pitfall", f"Do not focus on air when trying to {THERMO}: the score dropped to -100.",
               "use-thermometer", ("score-drop",)),
        _entry(9, "insight", f"An attempt to {THERMO} failed after 20 steps (score -100).", "use-thermometer",
               ("failure",)),
        _entry(10, "fact", "The red light bulb can be found in the workshop.", "power-component", ("location",)),
        _entry(11, "fact", "The thermometer can be found in the kitchen.", "use-thermometer", ("location",)),
    ]
    return region


def test_goals_are_read_off_each_of_the_writer_s_sentences() -> None:
    region = _mixed_window()
    goals = [entry_goal(e) for e in region]
    thermo = THERMO.lower()
    assert goals[:5] == [BULB] * 3 + [thermo] * 2  # procedures: "To GOAL: ..."
    assert goals[5:10] == [BULB, thermo, BULB, thermo, thermo]  # goals with commas stay whole
    assert goals[10:] == [None, None]  # location facts name no goal
    chemistry = "While trying to use chemistry to create the substance 'blue paper', 'read recipe' raised the score from 25 to 33."
    assert entry_goal({"kind": "insight", "text": chemistry}) == "use chemistry to create the substance 'blue paper'"


def test_a_one_task_group_loses_nothing_to_a_merge_and_a_two_task_group_reports_its_majority() -> None:
    region = _mixed_window()
    one_task = region[:3]
    (single,) = group_evidence(one_task, [0, 0, 0])
    assert (single.tasks, single.support, single.families, single.procedures) == (1, 1.0, 1, 3)

    groups = entry_classes(region).tolist()
    evidence = group_evidence(region, groups)
    procedures = evidence[groups[0]]
    assert procedures.entries == 5 and procedures.tasks == 2 and procedures.families == 2
    assert procedures.support == pytest.approx(0.6) and procedures.goals[0] == (BULB, 3)
    facts = evidence[groups[10]]
    assert facts.tasks == 0 and facts.support is None and facts.families == 2
    # what the support share says is what the merge rule does: the majority task's steps, the other's lost
    kind, text = merge_text(region[:5], region, max_tokens=320)
    assert kind == "procedure" and text.startswith(f"To {BULB}:") and "thermometer" not in text


def test_entries_see_their_group_s_goals_their_share_and_the_region_s_families() -> None:
    region = _mixed_window()
    rows = entry_evidence(region, entry_classes(region).tolist())
    assert [(r.group_goals, r.goal_share) for r in rows[:5]] == [(2, 0.6)] * 3 + [(2, 0.4)] * 2
    assert rows[5].group_goals == 2 and rows[5].goal_share == pytest.approx(2 / 3)  # score-jump: 2 bulb, 1 thermo
    assert rows[5].group_support == 1.0  # no procedures: majority merging drops no task there
    assert rows[10].goal_share == 0.0 and rows[0].group_support == pytest.approx(0.6)
    assert {r.region_families for r in rows} == {2}
    assert {r.region_families for r in entry_evidence([{**e, "family": ""} for e in region], [0] * 12)} == {0}


def test_entry_features_append_the_group_columns() -> None:
    region = _mixed_window()
    feats = entry_features(region, max_entries=16)
    col = {name: i for i, name in enumerate(ENTRY_FEATURES)}
    assert ENTRY_FEATURES[-len(GROUP_FEATURES):] == GROUP_FEATURES and feats.shape == (16, len(ENTRY_FEATURES))
    assert feats[0, col["group_goals"]] == 2 and feats[0, col["goal_share"]] == pytest.approx(0.6)
    assert feats[3, col["goal_share"]] == pytest.approx(0.4) and feats[3, col["group_support"]] == pytest.approx(0.6)
    assert feats[:12, col["region_families"]].tolist() == [2.0] * 12 and feats[12:].sum() == 0
    same_task = entry_features(region[:3], max_entries=4)
    assert same_task[:3, col["group_goals"]].tolist() == [1.0] * 3 and same_task[0, col["group_support"]] == 1.0


def test_the_ops_listing_shows_tasks_majority_and_goals_and_names_a_window_a_region() -> None:
    region = _mixed_window()
    message = first_user_message("window:0-3", region, 6, grammar="ops")
    lines = message.splitlines()
    assert lines[0] == "Region: window:0-3. 12 entries in 5 groups:"
    procedure = next(line for line in lines if "procedure [verbatim]" in line)
    assert "x5, 2 tasks (majority 0.60), 2 families, " in procedure
    assert f"| tasks: {BULB} (3); measure the temperature of unknown substance b, which ... (2)" in procedure
    fact = next(line for line in lines if "fact [location]" in line)
    assert "x2, 2 families, " in fact and "tasks" not in fact
    assert "one task family's entries" not in system_prompt("ops", "window:0-3")
    assert "several tasks" in system_prompt("ops", "window:0-3")


def _item(entry: MemoryEntry) -> dict:
    """An ``info["region"]`` item with its family (whether or not this version's ``entry_dict`` adds it)."""
    return {**entry_dict(entry), "family": entry.family}


def test_a_family_region_keeps_its_heading_and_prompt_and_shows_one_task() -> None:
    pool = load_pool("scienceworld-v0")
    bank = pool.banks[0]
    family = [_item(bank.get(i)) for i in select_region(bank, "grow-plant").entry_ids]
    message = first_user_message("grow-plant", family, 6, grammar="ops")
    assert message.startswith("Family: grow-plant. ") and "| tasks:" not in message
    assert "procedure [verbatim] x4, 1 task (majority 1.00), " in message
    assert system_prompt("ops", "grow-plant") == SYSTEM_PROMPTS["ops"]
    assert first_user_message("grow-plant", family, 6).startswith("Family: grow-plant. ")
    # the same bank cut by time window: the procedures of several tasks sit in one group
    window = [_item(bank.get(i)) for i in select_region(bank, "window:2-3").entry_ids]
    groups = entry_classes(window).tolist()
    procedures = group_evidence(window, groups)[groups[[e["kind"] for e in window].index("procedure")]]
    assert procedures.tasks > 2 and procedures.support < 0.5 and procedures.families > 2


def test_a_checkpoint_of_the_old_feature_width_fails_with_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"trained on 15 entry features.*has 19.*group_goals.*Retrain"):
        check_features(15, "old.zip")
    check_features(len(ENTRY_FEATURES), "sb3.zip")
    check_features(list(ENTRY_FEATURES), "policy.pt")
    old = tmp_path / "checkpoint-7"
    old.mkdir()
    policy = OpPolicy(n_features=15)  # saved before issue 31: no feature list, 15 columns
    torch.save({"state_dict": policy.state_dict(), "config": OpLevelConfig().to_dict(), "step": 7}, old / CHECKPOINT_FILE)
    with pytest.raises(ConfigError, match=r"checkpoint-7.*15 entry features.*Retrain"):
        load_policy(old)


DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_docs_list_every_feature_and_quote_the_window_listing() -> None:
    """docs/env.md's feature table has a row per ENTRY_FEATURES column; docs/grpo.md's window listing is what
    first_user_message writes for bank 0 of scienceworld-v0 cut as window:2-3."""
    table = (DOCS / "env.md").read_text()
    assert [name for name in ENTRY_FEATURES if name not in table.replace("`, `", "` | `")] == []
    assert all(f"| `{name}` |" in table for name in GROUP_FEATURES)
    bank = load_pool("scienceworld-v0").banks[0]
    window = [_item(bank.get(i)) for i in select_region(bank, "window:2-3").entry_ids]
    page = (DOCS / "grpo.md").read_text()
    quoted = first_user_message("window:2-3", window, 6, grammar="ops").splitlines()[:4]
    assert [line for line in quoted if line not in page] == []
