"""Generation with a cache: the game for (task type, variation), drawn until the expert wins one.

It exists to tie the pieces together and to own the disk: :func:`generate` draws a problem
(:mod:`.goals`), writes its files (:mod:`.pddl`), keeps it only when the :class:`~.expert.Expert` wins it
within :data:`~.expert.MAX_EXPERT_STEPS`, records the expert's walkthrough as the gold path and caches
the game under :func:`default_cache_dir` (or a folder the caller names). Files appear in the cache only
whole (written to a temporary folder, then renamed), so concurrent generators agree.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from dreamer_gym.errors import SuiteError
from dreamer_gym.paths import cache_root
from dreamer_gym.suites.alfworld_gen.engine import import_engine
from dreamer_gym.suites.alfworld_gen.expert import Expert
from dreamer_gym.suites.alfworld_gen.goals import (
    GENERATOR_VERSION,
    check_task_type,
    draw_seed,
    sample_spec,
    split_of,
)
from dreamer_gym.suites.alfworld_gen.pddl import game_data, to_json, traj_data

logger = logging.getLogger(__name__)

SUITE_NAME = "alfworld-gen"
MAX_ATTEMPTS = 60  # problems drawn per variation before giving up (pick_two: the expert wins ~30% of draws)


def default_cache_dir() -> Path:
    """Where generated games are cached: ``alfworld-gen/v{GENERATOR_VERSION}`` under
    :func:`~dreamer_gym.paths.cache_root`."""
    return cache_root() / SUITE_NAME / f"v{GENERATOR_VERSION}"


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


def generate(
    task_type: str, variation: int, cache_dir: Path | None = None, expert: Expert | None = None
) -> GeneratedGame:
    """The game for (task type, variation): from the cache, or drawn, checked by the expert and cached.

    Files are written to a temporary folder inside the cache and renamed into place, so a reader never
    sees half a game and two processes generating the same id agree (the loser's copy is dropped).

    Args:
        task_type: one of :data:`~.goals.TASK_TYPES`.
        variation: a variation id in one of :data:`~.goals.SPLIT_RANGES`.
        cache_dir: the cache root (default: :func:`default_cache_dir`).
        expert: the expert that checks drawn problems. Pass one to generate many games: without it, a call
            that misses the cache builds an expert engine of its own (~34 MB that stays mapped).
    """
    check_task_type(task_type)
    split_of(variation)  # validates the id
    folder = game_dir(task_type, variation, cache_dir)
    cached = _load_cached(task_type, variation, folder)
    if cached is not None:
        return cached
    import_engine()  # DependencyNotInstalled before anything is written
    folder.parent.mkdir(parents=True, exist_ok=True)
    expert = expert if expert is not None else Expert()
    started = time.perf_counter()
    for attempt in range(MAX_ATTEMPTS):
        spec = sample_spec(task_type, variation, attempt)
        tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{folder.name}-", dir=folder.parent))
        try:
            (tmp / "traj_data.json").write_text(to_json(traj_data(spec)))
            (tmp / "game.tw-pddl").write_text(to_json(game_data(spec, None)))
            walkthrough = expert.walkthrough(tmp / "game.tw-pddl", draw_seed(task_type, variation, attempt))
            if walkthrough is None:
                continue
            (tmp / "game.tw-pddl").write_text(to_json(game_data(spec, walkthrough)))
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
