"""Offline generator of ALFWorld-engine games: GENERATED games, never the official ALFWorld splits.

`alfworld-download` needs GitHub, so the official games are often out of reach. The `alfworld` wheel
ships everything else a game is made of: the PDDL domain and text grammar, 120 room layouts (the
receptacles of each AI2-THOR floor plan and the object types in it), the object/receptacle
compatibility table and the goal templates. This package writes ALFRED-style problems from those
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

No mutable state lives at module level: engines belong to an :class:`EnginePool` and the expert's engine
to an :class:`Expert`, each owned by whoever plays or generates (an
:class:`~dreamer_gym.suites.alfworld.ALFWorldSuite` owns one of each). What is cached per process is
read-only (the wheel's layouts and tables, parsed grammars, PDDL translations).

Modules: :mod:`~.engine` (alfworld import, the lean engine, :class:`EnginePool`), :mod:`~.layouts` (room
layouts, split floor plans, compatibility tables), :mod:`~.goals` (task types, id splits, the seeded draw
of a :class:`GameSpec`), :mod:`~.pddl` (the files a spec becomes), :mod:`~.expert` (the hand-coded
expert), :mod:`~.generation` (generation and the cache).
"""

from dreamer_gym.suites.alfworld_gen.engine import (
    EnginePool,
    import_engine,
    lean_env_class,
    lean_state_class,
    make_engine,
)
from dreamer_gym.suites.alfworld_gen.expert import MAX_EXPERT_STEPS, Expert
from dreamer_gym.suites.alfworld_gen.generation import (
    MAX_ATTEMPTS,
    SUITE_NAME,
    GeneratedGame,
    default_cache_dir,
    game_dir,
    generate,
)
from dreamer_gym.suites.alfworld_gen.goals import (
    GENERATOR_VERSION,
    SPLIT_RANGES,
    TASK_TYPES,
    GameSpec,
    feasible_scenes,
    goal_candidates,
    sample_spec,
    split_of,
    variations,
)
from dreamer_gym.suites.alfworld_gen.layouts import Layout, Receptacle, alfred_tables, load_layouts, split_scenes
from dreamer_gym.suites.alfworld_gen.pddl import GENERATED_NOTE, game_data, render_problem, traj_data

__all__ = [
    "GENERATED_NOTE",
    "GENERATOR_VERSION",
    "MAX_ATTEMPTS",
    "MAX_EXPERT_STEPS",
    "SPLIT_RANGES",
    "SUITE_NAME",
    "TASK_TYPES",
    "EnginePool",
    "Expert",
    "GameSpec",
    "GeneratedGame",
    "Layout",
    "Receptacle",
    "alfred_tables",
    "default_cache_dir",
    "feasible_scenes",
    "game_data",
    "game_dir",
    "generate",
    "goal_candidates",
    "import_engine",
    "lean_env_class",
    "lean_state_class",
    "load_layouts",
    "make_engine",
    "render_problem",
    "sample_spec",
    "split_of",
    "split_scenes",
    "traj_data",
    "variations",
]
