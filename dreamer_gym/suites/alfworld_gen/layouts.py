"""Room layouts and what may go where: the data the ``alfworld`` wheel ships, read once per process.

It exists so the generator's draws (:mod:`.goals`) and its PDDL writer (:mod:`.pddl`) read the same
read-only facts: the 120 AI2-THOR floor plans (each plan's receptacles, where the agent stands to use
them, and the object types in it), which floor plans each split may use (train: ALFRED's train plans;
dev/test: its held-out ones, odd numbers dev, even numbers test), and ALFRED's object/receptacle
compatibility tables. Everything here is cached and never changes after it is read.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from dreamer_gym.errors import SuiteError
from dreamer_gym.suites.alfworld_gen.engine import import_engine
from dreamer_gym.suites.base import SPLITS


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


# --- what may go where ---------------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def alfred_tables() -> dict[str, Any]:
    """ALFRED's tables of what may go where (receptacle type -> object types), object properties and the
    PDDL type lists, from ``alfworld.gen.constants``."""
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
