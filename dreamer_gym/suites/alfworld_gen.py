"""Offline generator of ALFWorld-engine games: GENERATED games, never the official ALFWorld splits.

`alfworld-download` needs GitHub, so the official games are often out of reach. The `alfworld` wheel
ships everything else a game is made of: the PDDL domain and text grammar, 120 room layouts (the
receptacles of each AI2-THOR floor plan and the object types in it), the object/receptacle
compatibility table and the goal templates. This module writes ALFRED-style problems from those
(objects placed only where the compatibility table allows, goals from the goal library), and keeps a
game only when the real hand-coded ALFWorld expert wins it on the real TextWorld engine; the expert's
walkthrough is recorded as the gold path.

Determinism: a game is a function of (task type, variation id) alone. Every draw comes from a numpy
Generator seeded with (generator version, task type, variation, attempt); the expert's own
``random.choice`` calls are served by a ``random.Random`` seeded the same way; files are written with
sorted keys. Same id, same bytes.

Splits are disjoint variation-id ranges, and their room layouts are disjoint too: train uses ALFRED's
train floor plans, dev and test its held-out ones (odd numbers dev, even numbers test), so a memory
written on train layouts has to transfer to unseen rooms.
"""
from __future__ import annotations

import json
import logging
import os
import random
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium.error import DependencyNotInstalled

from dreamer_gym.errors import SuiteError
from dreamer_gym.paths import cache_root
from dreamer_gym.suites.base import SPLITS

logger = logging.getLogger(__name__)

GENERATOR_VERSION = 1  # bump when a game's content changes for the same id; it names the cache folder
SUITE_NAME = "alfworld-gen"
GENERATED_NOTE = "Generated offline by dreamer_gym from the alfworld package data; NOT an official ALFWorld game."

# ALFWorld's six task types, numbered as in alfworld.agents.environment.alfred_tw_env.TASK_TYPES
TASK_TYPES: tuple[str, ...] = (
    "pick_and_place_simple",
    "look_at_obj_in_light",
    "pick_clean_then_place_in_recep",
    "pick_heat_then_place_in_recep",
    "pick_cool_then_place_in_recep",
    "pick_two_obj_and_place",
)
# disjoint variation-id ranges per split, the same for every task type
SPLIT_RANGES: dict[str, range] = {"train": range(0, 1000), "dev": range(1000, 1100), "test": range(2000, 2100)}
MAX_ATTEMPTS = 60  # problems drawn per variation before giving up (pick_two: the expert wins ~30% of draws)
MAX_EXPERT_STEPS = 50  # ALFWorld's usual episode limit: a gold path must fit in it

# the appliance each task needs, and receptacle types that make no sense as its destination
_NEEDS: dict[str, str | None] = {
    "pick_and_place_simple": None,
    "look_at_obj_in_light": None,
    "pick_clean_then_place_in_recep": "SinkBasin",
    "pick_heat_then_place_in_recep": "Microwave",
    "pick_cool_then_place_in_recep": "Fridge",
    "pick_two_obj_and_place": None,
}
_ACTION_PROPERTY = {  # object property the task needs (constants.VAL_ACTION_OBJECTS key)
    "pick_clean_then_place_in_recep": "Cleanable",
    "pick_heat_then_place_in_recep": "Heatable",
    "pick_cool_then_place_in_recep": "Coolable",
}
_LAMP = "DeskLamp"  # floor lamps stand on the floor, which the PDDL domain cannot toggle from: desk lamps only
_LAMP_HOLDERS = ("Desk", "Dresser", "SideTable", "Shelf", "CoffeeTable", "TVStand", "DiningTable")
_PDDL_ESCAPES = {"-": "_minus_", "#": "-", "|": "_bar_", "+": "_plus_", ".": "_dot_", ",": "_comma_"}
_PDDL_ESCAPE_RE = re.compile("|".join(re.escape(k) for k in _PDDL_ESCAPES))


def default_cache_dir() -> Path:
    return cache_root() / SUITE_NAME / f"v{GENERATOR_VERSION}"


# --- the alfworld package (lazy: importing it is only needed to generate or play) ---------------------------
@lru_cache(maxsize=1)
def import_engine() -> dict[str, Any]:
    """The pieces of alfworld/textworld this package uses, or DependencyNotInstalled with the pip command."""
    try:
        import textworld
        from alfworld.agents.environment import alfred_tw_env
        from alfworld.agents.expert import handcoded_expert
        from alfworld.gen import constants, goal_library
        from textworld.envs import PddlEnv
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise DependencyNotInstalled(
            f'ALFWorld is not installed ({exc}): run pip install "dreamer-gym[alfworld]" (compiles jericho and '
            "fast-downward, ~6 min)"
        ) from exc
    import alfworld.info

    return {
        "textworld": textworld, "PddlEnv": PddlEnv, "tw_env": alfred_tw_env, "expert": handcoded_expert,
        "constants": constants, "goal_library": goal_library, "domain": Path(alfworld.info.ALFRED_PDDL_PATH),
        "grammar": Path(alfworld.info.ALFRED_TWL2_PATH), "layouts": Path(constants.__file__).parent / "layouts",
    }


@lru_cache(maxsize=1)
def lean_env_class() -> type:
    """``PddlEnv`` with the same observations and admissible commands, at a fraction of the cost.

    Stock ``PddlEnv`` re-derives every admissible command through the grammar parser on every step
    (~30 tatsu parses, ~90-150 ms a step in a kitchen) and translates the PDDL four times per start
    (``load`` and ``reset`` each build a state, each state translates twice). ALFWorld's command
    templates read only static facts (the receptacle at a location), so a grounded action's command is
    fixed for a game: derive it once and reuse it. The first ``reset`` after ``load`` reuses the state
    ``load`` built, states translate once (:func:`lean_state_class`), translations and parsed grammars
    are cached per process. A test checks step by step that both engines say the same thing.
    """
    engine = import_engine()
    from textworld.core import GameState

    state_class = lean_state_class()

    class LeanPddlEnv(engine["PddlEnv"]):  # type: ignore[misc, valid-type]
        def load(self, filename_or_data: Any) -> None:
            data = json.loads(Path(filename_or_data).read_text())
            self._game_file, self._game_data = str(filename_or_data), data
            self.walkthrough = data.get("walkthrough")
            self._logic = _game_logic(data["pddl_domain"], data["grammar"])
            self._pddl_state = state_class(self.downward_lib, data["pddl_problem"], self._logic)
            self._entity_infos = self._get_entity_infos()
            self._commands: dict[tuple, str] = {}
            self._fresh_state = True

        def reset(self) -> Any:
            if not self._fresh_state:
                self._pddl_state = state_class(self.downward_lib, self._game_data["pddl_problem"], self._logic)
            self._fresh_state = False
            self.prev_state = None
            self.state = GameState()
            self._last_action = None
            self._moves = 0
            self.state.feedback = self._logic.grammar.derive("#intro#", self._context({}, {}))
            self.state.raw = self.state.feedback
            self._gather_infos()
            return self.state

        def _context(self, variables: dict, mapping: dict) -> dict[str, Any]:
            return {"state": self._pddl_state, "facts": list(self._pddl_state.facts), "variables": variables,
                    "mapping": mapping, "entity_infos": self._entity_infos}

        def _gather_infos(self) -> None:
            state = self._pddl_state
            self.state["won"] = state.check_goal()
            self.state["lost"] = False
            if self.request_infos.facts:
                self.state["_facts"] = list(state.facts)
                self.state["facts"] = list(map(self._get_human_readable_fact, self.state["_facts"]))
            self.state["last_action"] = None
            self.state["_last_action"] = self._last_action
            actions = list(state.all_applicable_actions())
            names = {k: info.name for k, info in self._entity_infos.items()}
            commands = []
            for action in actions:
                key = (action.name, tuple(sorted((ph.name, var.name) for ph, var in action.mapping.items())))
                if key not in self._commands:
                    variables = {ph.name: self._entity_infos[var.name] for ph, var in action.mapping.items()}
                    action.command_template = self._logic.grammar.derive(
                        action.command_template, self._context(variables, action.mapping)
                    )
                    self._commands[key] = action.format_command(names)
                commands.append(self._commands[key])
            self.state["_valid_actions"] = actions
            self.state["_valid_commands"] = commands
            self.state["admissible_commands"] = sorted(set(commands))
            if self.request_infos.moves:
                self.state["moves"] = self._moves

    return LeanPddlEnv


@lru_cache(maxsize=32)
def _translate(domain: str, problem: str) -> tuple[Any, str]:
    """Fast Downward's PDDL-to-SAS translation (~0.6 s a game), once per game and process: evaluation
    replays the same held-out games again and again."""
    import fast_downward

    return fast_downward.pddl2sas(domain, problem)


@lru_cache(maxsize=32)
def _game_logic(domain: str, grammar: str) -> Any:
    """The parsed domain and grammar (the same for every ALFWorld game but the task line)."""
    from textworld.envs.pddl import logic as pddl_logic

    return pddl_logic.GameLogic(domain=domain, grammar=grammar)


@lru_cache(maxsize=1)
def lean_state_class() -> type:
    """textworld 1.7.0's ``PddlState`` with a cached translation and without the second, "optimized"
    translation that only its planner (``replan``: policy commands, walkthroughs) uses."""
    from collections import Counter, defaultdict

    import textworld.logic
    from textworld.envs.pddl import logic as pddl_logic
    from textworld.logic import Proposition, Variable

    class LeanPddlState(pddl_logic.PddlState):
        def __init__(self, downward_lib: Any, pddl_problem: str, logic: Any) -> None:  # noqa: D107
            # same steps as PddlState.__init__ (textworld 1.7.0), minus load_sas_replan
            self._facts = defaultdict(set)
            self._vars_by_name = {}
            self._vars_by_type = defaultdict(set)
            self._var_counts = Counter()
            self._logic, self.downward_lib, self.pddl_problem = logic, downward_lib, pddl_problem
            self.task, self.sas = _translate(logic.domain, pddl_problem)
            self._actions = {a.name: a for a in self.task.actions}
            for type_ in self.task.types:
                try:
                    self._logic.types.add(textworld.logic.Type(type_.name, type_.supertype_names))
                except ValueError:
                    pass
            self.downward_lib.load_sas(self.sas.encode("utf-8"))
            self.name2type = {o.name: o.type_name for o in self.task.objects}
            facts = []
            for atom in self.task.init:
                if hasattr(atom, "predicate") and atom.predicate != "=":  # skip numeric fluents and equality
                    facts.append(Proposition(atom.predicate, [Variable(a, self.name2type[a]) for a in atom.args]))
            self.add_facts(facts)
            atoms = (pddl_logic.Atom * self.downward_lib.get_state_size())()
            self.downward_lib.get_state(atoms)
            self.add_facts([f for f in (a.get_fact(self.name2type) for a in atoms) if not f.is_negation])

        def replan(self, infos: Any) -> list[str]:
            raise NotImplementedError("the lean ALFWorld engine has no planner; use the game's walkthrough")

    return LeanPddlState


def make_engine(facts: bool = False) -> Any:
    """A lean ``PddlEnv`` wrapped in ALFWorld's demangler (object names as in ALFWorld: "apple 1")."""
    engine = import_engine()
    infos = engine["textworld"].EnvInfos(won=True, admissible_commands=True, facts=facts)
    return engine["tw_env"].AlfredDemangler(lean_env_class()(infos), shuffle=False)


_IDLE_ENGINES: list[Any] = []  # engines given back by closed suites, reused by the next ones
_ENGINES_LOCK = threading.Lock()


def acquire_engine() -> Any:
    """An idle engine of this process, or a new one. Each ``PddlEnv`` maps its own 34 MB copy of Fast
    Downward's library and nothing unmaps it safely (``close_lib`` then loading another copy segfaults),
    so engines are reused: a process holds as many as it ever had suites open at once."""
    with _ENGINES_LOCK:
        if _IDLE_ENGINES:
            return _IDLE_ENGINES.pop()
    return make_engine()


def release_engine(env: Any) -> None:
    with _ENGINES_LOCK:
        _IDLE_ENGINES.append(env)


# --- layouts ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Receptacle:
    object_id: str  # AI2-THOR id, e.g. "Cabinet|+00.68|+00.50|-02.20"
    rtype: str
    pose: tuple[int, int, int, int]  # grid x, grid z, rotation/90, horizon: where the agent stands to use it


@dataclass(frozen=True)
class Layout:
    scene: int
    scene_type: str  # Kitchen, LivingRoom, Bedroom, Bathroom
    receptacles: tuple[Receptacle, ...]
    object_types: frozenset[str]

    @property
    def receptacle_types(self) -> frozenset[str]:
        return frozenset(r.rtype for r in self.receptacles)


def _receptacle_type(object_id: str) -> str:
    parts = object_id.split("|")
    return parts[-1] if parts[-1].endswith("Basin") else parts[0]  # "Sink|x|y|z|SinkBasin" -> SinkBasin


def _pose(raw: list[float]) -> tuple[int, int, int, int]:
    x, z, rotation, horizon = raw
    return round(x / 0.25), round(z / 0.25), (round(rotation) // 90) % 4, round(horizon)


@lru_cache(maxsize=1)
def load_layouts() -> dict[int, Layout]:
    """The 120 floor plans the wheel ships, by scene number."""
    engine = import_engine()
    constants, folder = engine["constants"], engine["layouts"]
    layouts: dict[int, Layout] = {}
    for path in sorted(folder.glob("FloorPlan*-openable.json")):
        scene = int(re.search(r"FloorPlan(\d+)-", path.name).group(1))  # type: ignore[union-attr]
        scene_type = next(t for t, nums in constants.SCENE_TYPE.items() if scene in nums)
        openable = json.loads(path.read_text())
        objects = json.loads((folder / f"FloorPlan{scene}-objects.json").read_text())
        receptacles = tuple(
            Receptacle(oid, _receptacle_type(oid), _pose(pose)) for oid, pose in sorted(openable.items())
        )
        layouts[scene] = Layout(scene, scene_type, receptacles, frozenset(objects))
    if len(layouts) != 120:
        raise SuiteError(f"Expected 120 room layouts in {folder}, found {len(layouts)}; reinstall alfworld==0.4.2")
    return layouts


def split_scenes(split: str) -> tuple[int, ...]:
    """Floor plans of a split: ALFRED's train scenes for train; its held-out scenes, odd for dev, even for test."""
    if split not in SPLITS:
        raise ValueError(f"Expected `split` to be one of {SPLITS}, got {split!r}")
    constants = import_engine()["constants"]
    if split == "train":
        return tuple(sorted(constants.TRAIN_SCENE_NUMBERS))
    parity = 1 if split == "dev" else 0
    return tuple(sorted(s for s in constants.TEST_SCENE_NUMBERS if s % 2 == parity))


def split_of(variation: int) -> str:
    for split, ids in SPLIT_RANGES.items():
        if variation in ids:
            return split
    raise ValueError(f"Expected a variation id in {dict(SPLIT_RANGES)}, got {variation}")


def variations(task_type: str, split: str) -> tuple[int, ...]:
    _check_task_type(task_type)
    if split not in SPLITS:
        raise ValueError(f"Expected `split` to be one of {SPLITS}, got {split!r}")
    return tuple(SPLIT_RANGES[split])


def _check_task_type(task_type: str) -> None:
    if task_type not in TASK_TYPES:
        raise ValueError(f"Expected `family` to be one of {TASK_TYPES}, got {task_type!r}")


# --- what may go where ---------------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def _tables() -> dict[str, Any]:
    c = import_engine()["constants"]
    val = {r: frozenset(o for o in objs if "Sliced" not in o) for r, objs in c.VAL_RECEPTACLE_OBJECTS.items()}
    static = frozenset(c.RECEPTACLES) - frozenset(c.MOVABLE_RECEPTACLES)
    return {
        "val": val,  # receptacle type -> object types it can hold
        "pickupable": frozenset().union(*val.values()),
        "movable": frozenset(c.MOVABLE_RECEPTACLES),
        "openable": frozenset(c.OPENABLE_CLASS_LIST),
        "actions": {k: frozenset(v) for k, v in c.VAL_ACTION_OBJECTS.items()},
        "rtypes": tuple(sorted(static)),
        "otypes": tuple(sorted(frozenset(c.OBJECTS_SET) - static)),
        "goals_valid": {k: frozenset(v) for k, v in c.GOALS_VALID.items()},
    }


def _placeable(layout: Layout) -> dict[str, tuple[Receptacle, ...]]:
    """Object types of the scene that some receptacle of the scene can hold -> those receptacles."""
    val = _tables()["val"]
    out = {}
    for otype in sorted(layout.object_types & _tables()["pickupable"]):
        holders = tuple(r for r in layout.receptacles if otype in val.get(r.rtype, ()))
        if holders:
            out[otype] = holders
    return out


def _lamp_holders(layout: Layout) -> tuple[Receptacle, ...]:
    if _LAMP not in layout.object_types:
        return ()
    return tuple(r for r in layout.receptacles if r.rtype in _LAMP_HOLDERS)


def goal_candidates(task_type: str, layout: Layout) -> tuple[tuple[str, str], ...]:
    """(object type, destination type) pairs the task can use in this layout (destination "" for the lamp task)."""
    tables = _tables()
    if layout.scene_type not in tables["goals_valid"][task_type]:
        return ()
    placeable = _placeable(layout)
    if task_type == "look_at_obj_in_light":
        return tuple((o, "") for o in placeable) if _lamp_holders(layout) else ()
    need = _NEEDS[task_type]
    if need is not None and need not in layout.receptacle_types:
        return ()
    allowed = tables["actions"][_ACTION_PROPERTY[task_type]] if task_type in _ACTION_PROPERTY else None
    pairs = []
    for otype, holders in placeable.items():
        if allowed is not None and otype not in allowed:
            continue
        for rtype in sorted(layout.receptacle_types):
            # the destination must hold it, must not be the appliance, and must leave somewhere else to start from
            if rtype == need or otype not in tables["val"].get(rtype, ()):
                continue
            if any(h.rtype != rtype for h in holders):
                pairs.append((otype, rtype))
    return tuple(pairs)


@lru_cache(maxsize=64)
def feasible_scenes(task_type: str, split: str) -> tuple[int, ...]:
    layouts = load_layouts()
    return tuple(s for s in split_scenes(split) if goal_candidates(task_type, layouts[s]))


# --- one problem ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GameSpec:
    """Everything drawn for one game; rendering it to files is deterministic."""

    task_type: str
    variation: int
    attempt: int
    scene: int
    object_target: str
    parent_target: str  # "" for look_at_obj_in_light
    toggle_target: str  # "" unless look_at_obj_in_light
    placements: tuple[tuple[str, str, str], ...]  # (object id, object type, receptacle id), sorted
    agent_pose: tuple[int, int, int, int]
    task_text: str


def _seed(task_type: str, variation: int, attempt: int) -> list[int]:
    return [GENERATOR_VERSION, TASK_TYPES.index(task_type), int(variation), int(attempt)]


def sample_spec(task_type: str, variation: int, attempt: int) -> GameSpec:
    """Draw one problem for (task type, variation, attempt) from its own seeded Generator."""
    _check_task_type(task_type)
    rng = np.random.default_rng(_seed(task_type, variation, attempt))
    split = split_of(variation)
    scenes = feasible_scenes(task_type, split)
    if not scenes:
        raise SuiteError(f"No {split} layout can host {task_type}; the alfworld layouts look incomplete")
    layout = load_layouts()[scenes[int(rng.integers(len(scenes)))]]
    pairs = goal_candidates(task_type, layout)
    targets = sorted({o for o, _ in pairs})
    target = targets[int(rng.integers(len(targets)))]
    parents = sorted(r for o, r in pairs if o == target)
    parent = parents[int(rng.integers(len(parents)))]

    placements: list[tuple[str, str, str]] = []
    for otype, holders in _placeable(layout).items():
        low = 2 if (otype == target and task_type == "pick_two_obj_and_place") else 1
        count = int(rng.integers(low, 4))  # ALFRED places up to 3 instances of a type
        if otype == target:  # start anywhere but the destination, so the goal is not already met
            holders = tuple(h for h in holders if h.rtype != parent)
        for k in range(count):
            holder = holders[int(rng.integers(len(holders)))]
            placements.append((f"{otype}|gen|{k + 1:02d}", otype, holder.object_id))
    toggle = ""
    if _LAMP in layout.object_types and _lamp_holders(layout):
        holders = _lamp_holders(layout)
        placements.append((f"{_LAMP}|gen|01", _LAMP, holders[int(rng.integers(len(holders)))].object_id))
        toggle = _LAMP if task_type == "look_at_obj_in_light" else ""

    taken = {r.pose for r in layout.receptacles}
    while True:  # the agent starts in the middle of the room, at no receptacle
        pose = (int(rng.integers(-20, 21)), int(rng.integers(-20, 21)), int(rng.integers(4)), 30)
        if pose not in taken:
            break
    templates = import_engine()["goal_library"].gdict[task_type]["templates"]
    template = templates[int(rng.integers(len(templates)))]
    text = template.format(obj=target.lower(), recep=parent.lower(), toggle=toggle.lower(), mrecep="")
    return GameSpec(
        task_type, int(variation), int(attempt), layout.scene, target, parent, toggle,
        tuple(sorted(placements)), pose, text,
    )


def _pddl_name(raw: str) -> str:
    return _PDDL_ESCAPE_RE.sub(lambda m: _PDDL_ESCAPES[m.group(0)], raw)


def _loc(pose: tuple[int, int, int, int]) -> str:
    return _pddl_name("loc|{}|{}|{}|{}".format(*pose))


def render_problem(spec: GameSpec) -> str:
    """The PDDL problem, in the shape of ALFWorld's ``initial_state.pddl`` (sorted, so byte-stable)."""
    tables = _tables()
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


def _dump(data: dict[str, Any]) -> str:
    return json.dumps(data, sort_keys=True, indent=1) + "\n"


# --- the real expert ---------------------------------------------------------------------------------------
_EXPERT_LOCK = threading.Lock()


@contextmanager
def _seeded_expert_random(seed: list[int]) -> Iterator[None]:
    """Serve the expert module's ``random.choice`` calls from a seeded Random; the process RNG is untouched."""
    module = import_engine()["expert"]
    with _EXPERT_LOCK:
        saved = module.random
        module.random = random.Random(int(np.random.SeedSequence(seed).generate_state(1)[0]))
        try:
            yield
        finally:
            module.random = saved


_EXPERT_ENGINE: list[Any] = []  # one engine for every expert run of the process (guarded by _EXPERT_LOCK)


def _expert_engine() -> Any:
    """ALFWorld's ``AlfredExpert`` wrapper on a lean engine, made once per process and reloaded per game
    (see :func:`acquire_engine` for why engines are never thrown away)."""
    if not _EXPERT_ENGINE:
        tw_env = import_engine()["tw_env"]
        _EXPERT_ENGINE.append(tw_env.AlfredExpert(make_engine(), expert_type=tw_env.AlfredExpertType.HANDCODED))
    return _EXPERT_ENGINE[0]


def expert_walkthrough(game_file: Path, seed: list[int], max_steps: int = MAX_EXPERT_STEPS) -> list[str] | None:
    """Play ``game_file`` with ALFWorld's hand-coded expert through its own ``AlfredExpert`` wrapper, as
    `alfworld-generate` does; the commands when it wins within ``max_steps``, else None."""
    commands: list[str] = []
    with _seeded_expert_random(seed):  # holds _EXPERT_LOCK
        env = _expert_engine()
        env.load(str(game_file))  # a problem the engine cannot load is a generator bug: it raises
        state = env.reset()
        try:
            for _ in range(max_steps):
                command = state["extra.expert_plan"][0]
                state, _, done = env.step(command)
                commands.append(command)
                if state["won"]:
                    return commands
                if done:
                    return None
        except Exception as exc:  # noqa: BLE001 - the expert gives up by raising (timeout, failed, ...)
            logger.debug("expert failed on %s after %d steps: %r", game_file, len(commands), exc)
            return None
    return None


# --- generation with a cache -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class GeneratedGame:
    task_type: str
    variation: int
    game_file: Path  # game.tw-pddl; traj_data.json sits beside it
    walkthrough: tuple[str, ...]
    scene: int
    attempts: int  # problems drawn until the expert won one


def game_dir(task_type: str, variation: int, cache_dir: Path | None = None) -> Path:
    return Path(cache_dir or default_cache_dir()) / task_type / f"{int(variation):05d}"


def _load_cached(task_type: str, variation: int, folder: Path) -> GeneratedGame | None:
    game_file = folder / "game.tw-pddl"
    if not game_file.is_file() or not (folder / "traj_data.json").is_file():
        return None
    data = json.loads(game_file.read_text())
    traj = json.loads((folder / "traj_data.json").read_text())
    return GeneratedGame(
        task_type, variation, game_file, tuple(data["walkthrough"]), int(traj["scene"]["scene_num"]),
        int(traj["dreamer_gym"]["attempt"]) + 1,
    )


def generate(task_type: str, variation: int, cache_dir: Path | None = None) -> GeneratedGame:
    """The game for (task type, variation): from the cache, or drawn, checked by the expert and cached.

    Files are written to a temporary folder inside the cache and renamed into place, so a reader never
    sees half a game and two processes generating the same id agree (the loser's copy is dropped).
    """
    _check_task_type(task_type)
    split_of(variation)  # validates the id
    folder = game_dir(task_type, variation, cache_dir)
    cached = _load_cached(task_type, variation, folder)
    if cached is not None:
        return cached
    import_engine()  # DependencyNotInstalled before anything is written
    folder.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    for attempt in range(MAX_ATTEMPTS):
        spec = sample_spec(task_type, variation, attempt)
        tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{folder.name}-", dir=folder.parent))
        try:
            (tmp / "traj_data.json").write_text(_dump(traj_data(spec)))
            (tmp / "game.tw-pddl").write_text(_dump(game_data(spec, None)))
            walkthrough = expert_walkthrough(tmp / "game.tw-pddl", _seed(task_type, variation, attempt))
            if walkthrough is None:
                continue
            (tmp / "game.tw-pddl").write_text(_dump(game_data(spec, walkthrough)))
            try:
                os.rename(tmp, folder)
            except OSError:  # another process won the race; its files are identical
                if _load_cached(task_type, variation, folder) is None:
                    raise
            logger.info(
                "generated %s/%s (FloorPlan%d, attempt %d) in %.1f s", task_type, variation, spec.scene, attempt,
                time.perf_counter() - started,
            )
            return GeneratedGame(task_type, variation, folder / "game.tw-pddl", tuple(walkthrough), spec.scene,
                                 attempt + 1)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    raise SuiteError(
        f"The ALFWorld expert won none of {MAX_ATTEMPTS} generated problems for {task_type}/{variation}; "
        "this points to a generator bug (report it with the task type and variation id)"
    )
