"""What a generated game asks for: the task types, the variation-id splits and the seeded draw of one problem.

It exists to keep every random choice of the generator in one place. A problem (:class:`GameSpec`: the
room, the target and destination, where every object starts, where the agent stands, the task text) is
drawn by :func:`sample_spec` from a numpy Generator seeded with (:data:`GENERATOR_VERSION`, task type,
variation, attempt) and nothing else, so the same id always draws the same problem. Objects go only
where ALFRED's compatibility table allows, goals come from ALFWorld's goal library.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from dreamer_gym.errors import SuiteError
from dreamer_gym.suites.alfworld_gen.engine import import_engine
from dreamer_gym.suites.alfworld_gen.layouts import Layout, Receptacle, alfred_tables, load_layouts, split_scenes
from dreamer_gym.suites.base import SPLITS

GENERATOR_VERSION = 1  # bump when a game's content changes for the same id; it names the cache folder

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


def split_of(variation: int) -> str:
    for split, ids in SPLIT_RANGES.items():
        if variation in ids:
            return split
    raise ValueError(f"Expected a variation id in {dict(SPLIT_RANGES)}, got {variation}")


def variations(task_type: str, split: str) -> tuple[int, ...]:
    check_task_type(task_type)
    if split not in SPLITS:
        raise ValueError(f"Expected `split` to be one of {SPLITS}, got {split!r}")
    return tuple(SPLIT_RANGES[split])


def check_task_type(task_type: str) -> None:
    if task_type not in TASK_TYPES:
        raise ValueError(f"Expected `family` to be one of {TASK_TYPES}, got {task_type!r}")


def _placeable(layout: Layout) -> dict[str, tuple[Receptacle, ...]]:
    """Object types of the scene that some receptacle of the scene can hold -> those receptacles."""
    val = alfred_tables()["val"]
    out = {}
    for otype in sorted(layout.object_types & alfred_tables()["pickupable"]):
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
    tables = alfred_tables()
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


def draw_seed(task_type: str, variation: int, attempt: int) -> list[int]:
    return [GENERATOR_VERSION, TASK_TYPES.index(task_type), int(variation), int(attempt)]


def sample_spec(task_type: str, variation: int, attempt: int) -> GameSpec:
    """Draw one problem for (task type, variation, attempt) from its own seeded Generator."""
    check_task_type(task_type)
    rng = np.random.default_rng(draw_seed(task_type, variation, attempt))
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
