"""Rendering a drawn problem to the files ALFWorld reads: ``game.tw-pddl`` and ``traj_data.json``.

It exists so that writing files holds no randomness: a :class:`~.goals.GameSpec` becomes a PDDL problem
in the shape of ALFWorld's ``initial_state.pddl`` (every list sorted), a game file with the wheel's PDDL
domain and text grammar, and the ``traj_data.json`` the hand-coded expert reads; JSON is written with
sorted keys. Same spec, same bytes. Every file says it is generated, not an official ALFWorld game.
"""
from __future__ import annotations

import json
import re
from typing import Any

from dreamer_gym.suites.alfworld_gen.engine import import_engine
from dreamer_gym.suites.alfworld_gen.goals import GENERATOR_VERSION, GameSpec, split_of
from dreamer_gym.suites.alfworld_gen.layouts import alfred_tables, load_layouts

GENERATED_NOTE = "Generated offline by dreamer_gym from the alfworld package data; NOT an official ALFWorld game."
_PDDL_ESCAPES = {"-": "_minus_", "#": "-", "|": "_bar_", "+": "_plus_", ".": "_dot_", ",": "_comma_"}
_PDDL_ESCAPE_RE = re.compile("|".join(re.escape(k) for k in _PDDL_ESCAPES))


def _pddl_name(raw: str) -> str:
    return _PDDL_ESCAPE_RE.sub(lambda m: _PDDL_ESCAPES[m.group(0)], raw)


def _loc(pose: tuple[int, int, int, int]) -> str:
    return _pddl_name("loc|{}|{}|{}|{}".format(*pose))


def render_problem(spec: GameSpec) -> str:
    """The PDDL problem, in the shape of ALFWorld's ``initial_state.pddl`` (sorted, so byte-stable)."""
    tables = alfred_tables()
    layout = load_layouts()[spec.scene]
    recs = {r.object_id: r for r in layout.receptacles}
    actions = tables["actions"]
    objects = ["agent1 - agent"]
    objects += [f"{t}Type - otype" for t in tables["otypes"]] + [f"{t}Type - rtype" for t in tables["rtypes"]]
    objects += sorted(f"{_pddl_name(oid)} - object" for oid, _, _ in spec.placements)
    objects += sorted(f"{_pddl_name(r.object_id)} - receptacle" for r in layout.receptacles)
    locations = sorted({_loc(r.pose) for r in layout.receptacles} | {_loc(spec.agent_pose)})
    objects += [f"{loc} - location" for loc in locations]

    init = ["(= (total-cost) 0)", f"(atLocation agent1 {_loc(spec.agent_pose)})"]
    for r in layout.receptacles:
        name = _pddl_name(r.object_id)
        init += [f"(receptacleType {name} {r.rtype}Type)", f"(receptacleAtLocation {name} {_loc(r.pose)})"]
        if r.rtype in tables["openable"]:
            init.append(f"(openable {name})")
    present = sorted({otype for _, otype, _ in spec.placements})
    for rtype in sorted(layout.receptacle_types):
        init += [f"(canContain {rtype}Type {o}Type)" for o in present if o in tables["val"].get(rtype, ())]
    for oid, otype, holder in spec.placements:
        name = _pddl_name(oid)
        init += [
            f"(objectType {name} {otype}Type)", f"(inReceptacle {name} {_pddl_name(holder)})",
            f"(objectAtLocation {name} {_loc(recs[holder].pose)})",
        ]
        if otype in tables["pickupable"]:
            init.append(f"(pickupable {name})")
        if otype in tables["movable"]:
            init.append(f"(isReceptacleObject {name})")
        for prop, pred in (("Cleanable", "cleanable"), ("Heatable", "heatable"), ("Coolable", "coolable"),
                           ("Sliceable", "sliceable"), ("Toggleable", "toggleable")):
            if otype in actions[prop]:
                init.append(f"({pred} {name})")
    goal = import_engine()["goal_library"].gdict[spec.task_type]["pddl"]
    goal = goal.format(obj=spec.object_target, recep=spec.parent_target, toggle=spec.toggle_target, mrecep="")
    goal = goal.replace("#", "-")  # the goal library writes types as "?r # receptacle"
    problem_id = f"dreamer_gym_gen_{spec.task_type}_{spec.variation}_{spec.attempt}"
    return (
        f"(define (problem {problem_id})\n(:domain alfred)\n(:objects\n        "
        + "\n        ".join(objects)
        + "\n        )\n(:init\n        "
        + "\n        ".join(sorted(set(init)))
        + "\n        )\n"
        + goal.strip()
        + "\n"
    )


def traj_data(spec: GameSpec) -> dict[str, Any]:
    """The ``traj_data.json`` the hand-coded expert reads (task type and targets), plus provenance."""
    return {
        "task_type": spec.task_type,
        "task_id": f"gen_v{GENERATOR_VERSION}_{spec.task_type}_{spec.variation}",
        "pddl_params": {
            "object_target": spec.object_target, "parent_target": spec.parent_target,
            "toggle_target": spec.toggle_target, "mrecep_target": "", "object_sliced": False,
        },
        "scene": {"floor_plan": f"FloorPlan{spec.scene}", "scene_num": spec.scene},
        "task_desc": spec.task_text,
        "dreamer_gym": {
            "generated": True, "note": GENERATED_NOTE, "generator_version": GENERATOR_VERSION,
            "variation": spec.variation, "attempt": spec.attempt, "split": split_of(spec.variation),
        },
    }


def game_data(spec: GameSpec, walkthrough: list[str] | None) -> dict[str, Any]:
    engine = import_engine()
    grammar = engine["grammar"].read_text().replace("UNKNOWN GOAL", spec.task_text)
    return {
        "pddl_domain": engine["domain"].read_text(),
        "grammar": grammar,
        "pddl_problem": render_problem(spec),
        "solvable": walkthrough is not None,
        "walkthrough": walkthrough,
        "dreamer_gym_generated": GENERATED_NOTE,
    }


def to_json(data: dict[str, Any]) -> str:
    """The bytes a game's files are written with: sorted keys, one-space indent."""
    return json.dumps(data, sort_keys=True, indent=1) + "\n"
