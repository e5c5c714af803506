"""ALFWorld's real hand-coded expert, playing a generated game to decide whether it is kept.

It exists because a generated game is kept only when the expert wins it, and its winning commands are
the game's gold path. :class:`Expert` plays through ALFWorld's own ``AlfredExpert`` wrapper, as
`alfworld-generate` does, on a lean engine of its own that it builds on first use and reloads per game;
whoever holds the :class:`Expert` (a suite, or one :func:`~.generation.generate` call) decides how long
that engine lives. The expert breaks ties with the ``random`` module; those calls are served by a
``random.Random`` seeded from the game's id, so a walkthrough depends on the game alone.
"""
from __future__ import annotations

import logging
import random
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from dreamer_gym.suites.alfworld_gen.engine import import_engine, make_engine

logger = logging.getLogger(__name__)

MAX_EXPERT_STEPS = 50  # ALFWorld's usual episode limit: a gold path must fit in it

# Guards alfworld's own global state, not ours: each expert run swaps the ``random`` attribute of
# alfworld's handcoded_expert module for a seeded Random, so expert runs are serialised process-wide.
_EXPERT_RANDOM_LOCK = threading.Lock()


@contextmanager
def _seeded_expert_random(seed: list[int]) -> Iterator[None]:
    """Serve the expert module's ``random.choice`` calls from a seeded Random; the process RNG is untouched."""
    module = import_engine()["expert"]
    with _EXPERT_RANDOM_LOCK:
        saved = module.random
        module.random = random.Random(int(np.random.SeedSequence(seed).generate_state(1)[0]))
        try:
            yield
        finally:
            module.random = saved


class Expert:
    """ALFWorld's hand-coded expert on a lean engine of its own.

    The engine is made on first use and kept for every later game: engines are never thrown away (see
    :class:`~.engine.EnginePool`), and it is not one a pool hands out for play, because ``AlfredExpert``
    switches on the facts the expert reads. Thread-safe: runs are serialised by the expert's lock.

    Example::

        expert = Expert()
        commands = expert.walkthrough(game_file, seed=[1, 0, 1000, 0])  # None when the expert loses
    """

    def __init__(self) -> None:
        self._env: Any = None  # AlfredExpert(lean engine), built on first use (under _EXPERT_RANDOM_LOCK)

    def _engine(self) -> Any:
        if self._env is None:
            tw_env = import_engine()["tw_env"]
            self._env = tw_env.AlfredExpert(make_engine(), expert_type=tw_env.AlfredExpertType.HANDCODED)
        return self._env

    def walkthrough(self, game_file: Path, seed: list[int], max_steps: int = MAX_EXPERT_STEPS) -> list[str] | None:
        """Play ``game_file`` with the expert, its ``random`` seeded by ``seed``; the commands when it wins
        within ``max_steps``, else None."""
        commands: list[str] = []
        with _seeded_expert_random(seed):  # holds _EXPERT_RANDOM_LOCK
            env = self._engine()
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
