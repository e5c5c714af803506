"""The ALFWorld engine: the real TextWorld ``PddlEnv``, made lean, and a pool of idle engines.

It exists apart from the generator because the suite plays on it too: importing alfworld/textworld
lazily (:func:`import_engine`), the lean env and state classes (same observations and admissible
commands as stock ``PddlEnv``, a fraction of the cost), and :class:`EnginePool`, which the object that
plays games owns (an :class:`~dreamer_gym.suites.alfworld.ALFWorldSuite`). Engines are pooled, not
thrown away, because each maps its own copy of Fast Downward's library that nothing unmaps safely.
"""
from __future__ import annotations

import json
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

from gymnasium.error import DependencyNotInstalled


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


class EnginePool:
    """Idle lean engines, handed out and taken back; thread-safe.

    Each ``PddlEnv`` maps its own 34 MB copy of Fast Downward's library and nothing unmaps it safely
    (``close_lib`` then loading another copy segfaults), so engines are reused rather than rebuilt: a pool
    holds as many as its users ever had open at once. Share one pool between suites to reuse engines across
    them; an engine dropped by :meth:`close` is freed by Python but its library copy stays mapped until the
    process exits.

    Example::

        pool = EnginePool()
        env = pool.acquire()  # an idle engine, or a new one
        env.load(str(game_file)); state = env.reset()
        pool.release(env)     # back for the next acquire()
    """

    def __init__(self, facts: bool = False) -> None:
        self.facts = facts  # whether new engines gather the state's facts (the suite needs none)
        self._idle: list[Any] = []
        self._lock = threading.Lock()

    def acquire(self) -> Any:
        """An idle engine of this pool, or a new one (:func:`make_engine`)."""
        with self._lock:
            if self._idle:
                return self._idle.pop()
        return make_engine(facts=self.facts)

    def release(self, env: Any) -> None:
        """Give ``env`` back; the next :meth:`acquire` reuses it."""
        with self._lock:
            self._idle.append(env)

    def close(self) -> None:
        """Drop the idle engines. The pool stays usable: the next :meth:`acquire` makes a new engine."""
        with self._lock:
            self._idle.clear()

    def __len__(self) -> int:
        """How many idle engines the pool holds."""
        with self._lock:
            return len(self._idle)
