"""ALFWorld adapter on the real TextWorld engine (``PddlEnv``), for official or generated games.

- ``source="official"`` (suite ``alfworld``): the games `alfworld-download` puts in
  ``$ALFWORLD_DATA/json_2.1.1/{train,valid_seen,valid_unseen}``, as splits train / dev / test.
- ``source="generated"`` (suite ``alfworld-gen``): games from :mod:`dreamer_gym.suites.alfworld_gen`,
  generated offline and checked by the real expert. They are NOT the official splits.

Why not ``AlfredTWEnv``? It runs each game through ``textworld.gym`` in a worker process and gathers
every info (facts, expert plan) per step. Stock ``PddlEnv`` itself re-derives every admissible command
through the grammar parser on every step (~90-150 ms a step in a kitchen) and translates the PDDL four
times per start. This adapter keeps one in-process lean ``PddlEnv``
(:func:`~dreamer_gym.suites.alfworld_gen.lean_env_class`: same observations and commands, checked by a
test; ~20 ms a step) wrapped in ALFWorld's demangler for object names, and asks only for ``won`` and
the admissible commands. Families are ALFWorld's six task types; scores are 0 or 100 (won), on
ScienceWorld's 0..100 scale.
"""
from __future__ import annotations

import json
import logging
import os
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from dreamer_gym.errors import SuiteError
from dreamer_gym.suites import alfworld_gen
from dreamer_gym.suites.alfworld_gen import TASK_TYPES
from dreamer_gym.suites.base import SPLITS, EpisodeTask, StepOutcome
from dreamer_gym.suites.spec import AcquisitionProfile, OracleProcedure, SuiteSpec

logger = logging.getLogger(__name__)

SOURCES = ("official", "generated")
OFFICIAL_SPLITS: dict[str, str] = {"train": "train", "dev": "valid_seen", "test": "valid_unseen"}
_BANNER = "-= Welcome to TextWorld, ALFRED! =-"
_TASK_MARK = "Your task is to: "
_SOLVABLE = re.compile(rb'"solvable"\s*:\s*true')


def official_games_dir(data_dir: str | os.PathLike[str] | None = None) -> Path:
    """``json_2.1.1`` under ``data_dir``, ``$ALFWORLD_DATA`` or alfworld's default ``~/.cache/alfworld``.

    Read before importing ``alfworld``: its import sets ``ALFWORLD_DATA`` to the default when unset.
    """
    root = Path(data_dir or os.environ.get("ALFWORLD_DATA") or Path.home() / ".cache" / "alfworld")
    games = root / "json_2.1.1"
    missing = [s for s in OFFICIAL_SPLITS.values() if not (games / s).is_dir()]
    if missing:
        raise SuiteError(
            f"ALFWorld's official games are not in {games} (missing {missing}): run `alfworld-download` "
            "(it needs GitHub) and set ALFWORLD_DATA to the folder it filled, or use the suite "
            "'alfworld-gen' (generated games, not the official splits)"
        )
    return games


@dataclass(frozen=True)
class _OfficialIndex:
    """Solvable official games by family and split; variation ids index one sorted list of all three splits."""

    paths: dict[int, Path]
    by_split: dict[tuple[str, str], tuple[int, ...]]


def _index_official(games: Path) -> _OfficialIndex:
    entries: list[tuple[int, str, str, Path]] = []
    for order, (split, folder) in enumerate(OFFICIAL_SPLITS.items()):
        for game_file in sorted((games / folder).glob("*/*/game.tw-pddl")):
            task_dir = game_file.parent.parent.name  # e.g. pick_and_place_simple-Apple-None-CounterTop-1
            family = task_dir.split("-", 1)[0]
            if family not in TASK_TYPES or "movable" in task_dir or "Sliced" in task_dir:
                continue  # ALFWorld itself skips movable-receptacle and sliced games
            if not (game_file.parent / "traj_data.json").is_file() or not _SOLVABLE.search(game_file.read_bytes()):
                continue
            entries.append((order, family, split, game_file))
    paths: dict[int, Path] = {}
    by_split: dict[tuple[str, str], list[int]] = {}
    for variation, (_, family, split, game_file) in enumerate(entries):
        paths[variation] = game_file
        by_split.setdefault((family, split), []).append(variation)
    if not paths:
        raise SuiteError(f"No solvable ALFWorld games under {games}; rerun `alfworld-download` (ALFWORLD_DATA)")
    return _OfficialIndex(paths, {k: tuple(v) for k, v in by_split.items()})


class ALFWorldSuite:
    """A :class:`~dreamer_gym.suites.base.TaskSuite` over real ALFWorld games (official or generated)."""

    families: tuple[str, ...] = TASK_TYPES

    def __init__(
        self,
        source: str = "official",
        data_dir: str | os.PathLike[str] | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        step_limit: int = 50,
        engine_pool: alfworld_gen.EnginePool | None = None,
    ) -> None:
        """Args:
            source: "official" (`alfworld-download`'s games) or "generated" (:mod:`~.alfworld_gen`).
            data_dir: where the official games are (default ``$ALFWORLD_DATA``).
            cache_dir: where generated games are cached (default :func:`~.alfworld_gen.default_cache_dir`).
            step_limit: moves before an episode ends unsolved.
            engine_pool: where this suite takes its engine from and gives it back to on :meth:`close`
                (default: a pool of its own). Share one between suites that open and close in turn to
                reuse their engines: each maps its own copy of Fast Downward, never unmapped.
        """
        if source not in SOURCES:
            raise ValueError(f"Expected `source` to be one of {SOURCES}, got {source!r}")
        if not isinstance(step_limit, int) or step_limit <= 0:
            raise ValueError(f"Expected `step_limit` to be a positive int, got {step_limit!r}")
        self.source = source
        self.name = "alfworld" if source == "official" else alfworld_gen.SUITE_NAME
        self.step_limit = step_limit
        # official: fail at once, before anything is imported, when the games are not there
        self._games = official_games_dir(data_dir) if source == "official" else None
        self.cache_dir = Path(cache_dir) if cache_dir else alfworld_gen.default_cache_dir()
        self.engine_pool = engine_pool if engine_pool is not None else alfworld_gen.EnginePool()
        self._expert = alfworld_gen.Expert()  # checks the games this suite generates; its engine is made on use
        self._env: Any = None
        self._state: Any = None
        self._task: EpisodeTask | None = None
        self._steps = 0
        self._description = ""
        self._files: dict[EpisodeTask, Path] = {}  # generated games already checked on disk

    # --- games ----------------------------------------------------------------------------------------------
    @cached_property
    def _official(self) -> _OfficialIndex:
        if self._games is None:
            raise RuntimeError("the official index exists only for source='official'")
        return _index_official(self._games)

    def _check(self, family: str, split: str | None = None) -> None:
        if family not in TASK_TYPES:
            raise ValueError(f"Expected `family` to be one of {TASK_TYPES}, got {family!r}")
        if split is not None and split not in SPLITS:
            raise ValueError(f"Expected `split` to be one of {SPLITS}, got {split!r}")

    def variations(self, family: str, split: str) -> tuple[int, ...]:
        self._check(family, split)
        if self.source == "generated":
            return alfworld_gen.variations(family, split)
        return self._official.by_split.get((family, split), ())

    def game_file(self, task: EpisodeTask) -> Path:
        """The ``game.tw-pddl`` of ``task`` (generated, expert-checked and cached on first use)."""
        self._check(task.family)
        if self.source == "generated":
            if task not in self._files:
                self._files[task] = alfworld_gen.generate(
                    task.family, task.variation, self.cache_dir, expert=self._expert
                ).game_file
            return self._files[task]
        path = self._official.paths.get(int(task.variation))
        if path is None or path.parent.parent.name.split("-", 1)[0] != task.family:
            raise ValueError(f"{task} is not an official ALFWorld game of family {task.family!r}")
        return path

    # --- lifecycle -----------------------------------------------------------------------------------------
    def close(self) -> None:
        """Give the engine back to :attr:`engine_pool`. It runs in-process (Fast Downward as a shared
        library): there is no child to reap. A closed suite can start again."""
        env, self._env, self._state, self._task = self._env, None, None, None
        if env is not None:
            self.engine_pool.release(env)

    def __enter__(self) -> ALFWorldSuite:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- protocol -----------------------------------------------------------------------------------------
    def start(self, task: EpisodeTask) -> str:
        """Load ``task``; the first observation is ALFWorld's room description (the task text is in
        :meth:`task_description`)."""
        game_file = self.game_file(task)  # may run the generator, which uses the engine: before our load
        if self._env is None:
            self._env = self.engine_pool.acquire()
        try:
            self._env.load(str(game_file))
            self._state = self._env.reset()
        except Exception as exc:  # noqa: BLE001 - Fast Downward/tatsu errors carry the cause
            self._task = None
            raise SuiteError(f"ALFWorld could not load {task} from {game_file}: {exc}") from exc
        self._task, self._steps = task, 0
        intro = str(self._state["feedback"])
        body, _, goal = intro.partition(_TASK_MARK)
        self._description = (_TASK_MARK + goal.strip()) if goal else ""
        return body.replace(_BANNER, "").strip()

    def task_description(self) -> str:
        return self._description

    def step(self, action: str) -> StepOutcome:
        if self._task is None or self._env is None:
            raise RuntimeError("call start() before step()")
        self._state, _, _ = self._env.step(action)
        self._steps += 1
        won = bool(self._state["won"])
        return StepOutcome(str(self._state["feedback"]), 100.0 if won else 0.0, won or self._steps >= self.step_limit)

    def _context(self) -> tuple[Any, dict[str, Any]]:
        if self._task is None or self._env is None:
            raise RuntimeError("call start() first")
        pddl = self._env.unwrapped
        state = pddl._pddl_state
        context = {"state": state, "facts": list(state.facts), "variables": {}, "mapping": {},
                   "entity_infos": pddl._entity_infos}
        return pddl._logic.grammar, context

    def inventory(self) -> str:
        """What the agent holds, from the game's own grammar, without spending a move."""
        grammar, context = self._context()
        return str(grammar.derive("#inventory.feedback#", context))

    def look(self) -> str:
        """What `look` would say, without spending a move."""
        grammar, context = self._context()
        return str(grammar.derive("#look.feedback#", context))

    def valid_actions(self) -> tuple[str, ...]:
        """ALFWorld's admissible commands now (sorted; tens of strings, computed by every step anyway)."""
        if self._state is None:
            raise RuntimeError("call start() first")
        return tuple(self._state["admissible_commands"])

    def num_moves(self) -> int:
        return self._steps

    def gold_path(self, task: EpisodeTask) -> tuple[str, ...]:
        """The walkthrough stored in the game file: the hand-coded expert's winning commands."""
        game_file = self.game_file(task)
        walkthrough = json.loads(game_file.read_text()).get("walkthrough")
        if not walkthrough:
            raise SuiteError(f"{game_file} has no walkthrough; regenerate it with `alfworld-generate`")
        return tuple(str(a) for a in walkthrough)


# --- acquisition: how the noisy expert strays here ---------------------------------------------------------
def _places(gold: Sequence[str]) -> list[str]:
    """The receptacles a gold path visits: known to exist in its game (detours go there)."""
    return sorted({a[len("go to "):] for a in gold if a.startswith("go to ")}) or ["countertop 1"]


def _detour(rng: Any, gold: Sequence[str]) -> list[str]:
    places = _places(gold)
    place = places[int(rng.integers(len(places)))]
    return [f"go to {place}", "look"] if rng.random() < 0.5 else [f"go to {place}", f"examine {place}"]


def _wrong(rng: Any, gold: Sequence[str]) -> str:
    places = _places(gold)
    place = places[int(rng.integers(len(places)))]
    return f"take {place} from {place}" if rng.random() < 0.5 else f"use {place}"


PROFILE = AcquisitionProfile(
    detour=_detour, wrong=_wrong,
    never_skip=("go to", "take", "move", "put", "open", "clean", "heat", "cool", "use"),
    location=re.compile(r"You arrive at ([a-z]+ \d+)\."), picked=re.compile(r"take ([a-z]+ \d+) from ([a-z]+ \d+)$"),
    failed=("Nothing happens",),
)

# --- the oracle: (goal, steps) per task type, written from the walkthroughs of generated TRAIN games. The
# expert's search (the "go to" steps before a take) becomes one "<object location>" step; where things
# usually are comes from the facts below, mined from the same walkthroughs.
_TAKE = "go to <object location>, take <object> from <object location>"
_PUT = "go to <receptacle>, move <object> to <receptacle>"
PROCEDURES: dict[str, OracleProcedure] = {
    "pick_and_place_simple": OracleProcedure(f"{_TAKE}, {_PUT}", "put a <object> in <receptacle>"),
    "look_at_obj_in_light": OracleProcedure(f"{_TAKE}, go to <lamp location>, use <lamp>",
                                            "look at <object> under the <lamp>"),
    "pick_clean_then_place_in_recep": OracleProcedure(
        f"{_TAKE}, go to sinkbasin 1, clean <object> with sinkbasin 1, {_PUT}", "put a clean <object> in <receptacle>"),
    "pick_heat_then_place_in_recep": OracleProcedure(
        f"{_TAKE}, go to microwave 1, heat <object> with microwave 1, {_PUT}", "put a hot <object> in <receptacle>"),
    "pick_cool_then_place_in_recep": OracleProcedure(
        f"{_TAKE}, go to fridge 1, cool <object> with fridge 1, {_PUT}", "put a cool <object> in <receptacle>"),
    "pick_two_obj_and_place": OracleProcedure(f"{_TAKE}, {_PUT}, {_TAKE}, {_PUT}", "put two <object> in <receptacle>"),
}


def _kind(name: str) -> str:
    return re.sub(r" \d+$", "", name)


def _or_list(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


def location_facts(family: str, train_gold: Mapping[str, Mapping[int, Sequence[str]]], max_facts: int = 3,
                   per_fact: int = 6) -> list[str]:
    """Where the objects of ``family``'s TRAIN walkthroughs were taken from, by type, counted over every
    family's walkthroughs ("A mug is usually found in the cabinet, countertop or coffeemachine.")."""
    places: dict[str, Counter[str]] = {}
    for paths in train_gold.values():
        for path in paths.values():
            for action in path:
                m = re.match(r"take (.+?) from (.+)$", action)
                if m:
                    places.setdefault(_kind(m.group(1)), Counter())[_kind(m.group(2))] += 1
    mine = Counter(_kind(m.group(1)) for path in train_gold.get(family, {}).values() for a in path
                   if (m := re.match(r"take (.+?) from (.+)$", a)))
    sentences = [f"A {obj} is usually found in the {_or_list([p for p, _ in places[obj].most_common(3)])}."
                 for obj, _ in mine.most_common(max_facts * per_fact)]
    sentences += _lamp_facts(train_gold.get(family, {}))
    return [" ".join(sentences[i: i + per_fact]) for i in range(0, len(sentences), per_fact)]


def _lamp_facts(paths: Mapping[int, Sequence[str]]) -> list[str]:
    """Where the walkthroughs found the lamp they switched on (the receptacle visited last before ``use``):
    the lamp is never taken, so :func:`location_facts`' count of takes never says where it stands."""
    places: dict[str, Counter[str]] = {}
    for path in paths.values():
        at = None
        for action in path:
            if action.startswith("go to "):
                at = _kind(action[len("go to "):])
            lamp = re.match(r"use (.+)$", action)
            if lamp and at:
                places.setdefault(_kind(lamp.group(1)), Counter())[at] += 1
    return [f"A {lamp} is usually found in the {_or_list([p for p, _ in c.most_common(3)])}."
            for lamp, c in sorted(places.items())]


def check_official_available() -> None:
    """The official games must be on disk (``alfworld-download``); names the fix when they are not."""
    official_games_dir()


_SHARED = {
    "families": TASK_TYPES,
    "extra": "alfworld",
    "requires": ("alfworld", "textworld"),
    "profile": PROFILE,
    "follower": "dreamer_gym.agents.alfworld_following:ALFWorldFollowing",
    "agent_prompt": "agent_system_alfworld",
    "idle_action": "look",
    "look_action": "look",
    "warm_actions": ("look", "inventory"),
    "procedures": PROCEDURES,
    "oracle_facts": location_facts,
    "agent_max_steps": 50,  # ALFWorld's usual episode limit, which the suite enforces too
}
GENERATED_SPEC = SuiteSpec(
    name="alfworld-gen", adapter="dreamer_gym.suites.alfworld:ALFWorldSuite", adapter_kwargs={"source": "generated"},
    description="ALFWorld-engine games generated offline and checked by the real expert (NOT the official splits)",
    **_SHARED,
)
OFFICIAL_SPEC = SuiteSpec(
    name="alfworld", adapter="dreamer_gym.suites.alfworld:ALFWorldSuite", adapter_kwargs={"source": "official"},
    description="ALFWorld's official games from $ALFWORLD_DATA (`alfworld-download`)",
    check_available=check_official_available, **_SHARED,
)
