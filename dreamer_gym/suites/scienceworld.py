"""ScienceWorld adapter: one warm, heap-capped JVM per instance, reused across episodes with `load()`.

Why not `ScienceWorldEnv.step`? It rebuilds the full valid-action list (600-9,000 strings) on every
step, ~99 of ~121 ms. This adapter calls the server directly and never asks for that list.
"""
from __future__ import annotations

import logging
import os
import re
import subprocess
import threading
from collections.abc import Mapping, Sequence
from functools import lru_cache

import numpy as np
from gymnasium.error import DependencyNotInstalled

from dreamer_gym.errors import SuiteError
from dreamer_gym.suites.base import SPLITS, EpisodeTask, StepOutcome
from dreamer_gym.suites.jvm_archive import archive_opts
from dreamer_gym.suites.spec import AcquisitionProfile, OracleProcedure, SuiteSpec

logger = logging.getLogger(__name__)

# -Xmx1g + SerialGC: without a cap the JVM grows to 3.6-4.7 GB after ~13 tasks (RECIPES.md).
# hashCode=2: every identity hash code is 1. The simulator iterates identity-hashed sets, so with the
# default per-thread random hash codes its gold paths (drawer vs glass jar) and some electrical scores
# vary between JVM launches, and a rebuilt bank pool does not reproduce its hash. A global counter
# (hashCode=3) was not enough (py4j's threads interleave allocations); a constant makes iteration
# follow insertion order. Measured: same speed (32.8 vs 32.6 ms a step), same agent scores.
DEFAULT_JAVA_OPTS: tuple[str, ...] = (
    "-Xmx1g", "-XX:+UseSerialGC", "-XX:+UnlockExperimentalVMOptions", "-XX:hashCode=2",
)
# the task families of the training pool: ones the memory-following agent can play (docs/design-notes.md
# says why boil, melt and find-animal were dropped and how the others were chosen)
FAMILIES: tuple[str, ...] = (
    "chemistry-mix", "find-living-thing", "find-non-living-thing", "find-plant", "grow-plant", "power-component",
    "use-thermometer",
)
# whole topics held out of every training pool, id and episode: only the held-out pool and tracks see them
HELD_OUT_FAMILIES: tuple[str, ...] = (
    "identify-life-stages-1", "lifespan-longest-lived", "lifespan-longest-lived-then-shortest-lived",
    "lifespan-shortest-lived",
)
# ScienceWorld's own topics (the major number of its task ids: 1-1 boil ... 10-2 mendelian genetics)
TOPICS: dict[str, str] = {
    "use-thermometer": "measurement", "power-component": "electricity", "find-living-thing": "classification",
    "find-non-living-thing": "classification", "find-plant": "classification", "find-animal": "classification",
    "grow-plant": "grow", "chemistry-mix": "chemistry", "lifespan-longest-lived": "lifespan",
    "lifespan-shortest-lived": "lifespan", "lifespan-longest-lived-then-shortest-lived": "lifespan",
    "identify-life-stages-1": "life stages", "identify-life-stages-2": "life stages",
    # candidates for a DEV track (issue 31, research/dev_topics.py): topics neither training nor the test track holds
    "boil": "matter", "melt": "matter", "freeze": "matter", "change-the-state-of-matter-of": "matter",
    "inclined-plane-determine-angle": "forces", "inclined-plane-friction-named-surfaces": "forces",
    "inclined-plane-friction-unnamed-surfaces": "forces", "mendelian-genetics-known-plant": "genetics",
    "mendelian-genetics-unknown-plant": "genetics",
}
_ITEM_BLOCK = re.compile(r"(you see: ?\n|Here you see: ?\n|You also see:\n)((?:\t.*(?:\n|$))+)")


def _import_scienceworld():  # noqa: ANN202 - module object
    try:
        import scienceworld  # noqa: F401
        from py4j.java_gateway import CallbackServerParameters, GatewayParameters, JavaGateway, launch_gateway
        from scienceworld.constants import BASEPATH, JAR_PATH
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise DependencyNotInstalled(
            'ScienceWorld is not installed: run pip install "dreamer-gym[scienceworld]" (needs Java 17)'
        ) from exc
    return JavaGateway, GatewayParameters, CallbackServerParameters, launch_gateway, BASEPATH, JAR_PATH


def sort_listings(observation: str) -> str:
    """Sort the tab-indented object/door listings, which the JVM may emit in any order."""

    def _sort(match: re.Match[str]) -> str:
        lines = [ln for ln in match.group(2).split("\n") if ln]
        tail = "\n" if match.group(2).endswith("\n") else ""
        return match.group(1) + "\n".join(sorted(lines)) + tail

    return _ITEM_BLOCK.sub(_sort, observation)


class ScienceWorldSuite:
    """A :class:`~dreamer_gym.suites.base.TaskSuite` over the real ScienceWorld simulator."""

    name = "scienceworld"
    families: tuple[str, ...] = FAMILIES  # the ones the memory-following agent plays; variations() takes any task

    def __init__(
        self, step_limit: int = 100, java_opts: tuple[str, ...] = DEFAULT_JAVA_OPTS, class_archive: bool = True
    ) -> None:
        if step_limit <= 0:
            raise ValueError(f"Expected `step_limit` to be a positive int, got {step_limit}")
        self.step_limit = step_limit
        self.java_opts = tuple(java_opts)
        # map the shared class archive (jvm_archive.py): ~1 s less per JVM start, same simulator
        self.class_archive = class_archive
        self._gateway = None
        self._server = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._task: EpisodeTask | None = None
        self._done = False
        self._task_names: tuple[str, ...] | None = None

    # --- lifecycle ---------------------------------------------------------------------------------
    @property
    def server(self):  # noqa: ANN201 - py4j proxy
        """The JVM-side `PythonInterface`, started on first use (so constructing a suite is free)."""
        if self._server is None:
            self._launch()
        return self._server

    @property
    def java_pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    def _launch(self) -> None:
        JavaGateway, GatewayParameters, CallbackServerParameters, launch_gateway, basepath, jar = _import_scienceworld()
        from py4j.java_gateway import find_jar_path

        py4j_jar = find_jar_path()
        archive = archive_opts(os.pathsep.join((py4j_jar, jar))) if self.class_archive else ()
        port, proc = launch_gateway(
            jarpath=py4j_jar, classpath=jar, die_on_exit=True, cwd=basepath,
            javaopts=[*self.java_opts, *archive], return_proc=True,
        )
        gateway = JavaGateway(
            gateway_parameters=GatewayParameters(auto_field=True, port=port),
            callback_server_parameters=CallbackServerParameters(port=0, daemonize=True),
            java_process=proc,
        )
        python_port = gateway.get_callback_server().get_listening_port()
        gateway.java_gateway_server.resetCallbackClient(
            gateway.java_gateway_server.getCallbackClient().getAddress(), python_port
        )
        self._gateway, self._proc = gateway, proc
        self._server = gateway.jvm.scienceworld.runtime.pythonapi.PythonInterface()
        logger.info("ScienceWorld JVM started (pid %s, opts %s)", proc.pid, " ".join([*self.java_opts, *archive]))

    def close(self) -> None:
        """Shut the gateway and make sure the JVM process is gone."""
        gateway, proc = self._gateway, self._proc
        self._gateway = self._server = self._proc = None
        if gateway is not None:
            try:
                gateway.shutdown()
            except Exception:  # noqa: BLE001 - the JVM may already be dead; we kill it below
                logger.debug("gateway shutdown failed", exc_info=True)
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)

    def __enter__(self) -> ScienceWorldSuite:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    # --- protocol ------------------------------------------------------------------------------------
    def task_names(self) -> tuple[str, ...]:
        """Task names, read once per JVM (each item is a py4j round trip)."""
        if self._task_names is None:
            self._task_names = tuple(sorted(str(t) for t in self.server.getTaskNames()))
        return self._task_names

    def variations(self, family: str, split: str) -> tuple[int, ...]:
        if split not in SPLITS:
            raise ValueError(f"Expected `split` to be one of {SPLITS}, got {split!r}")
        return _variations(self, family, split)

    def _load(self, task: EpisodeTask, gold: bool = False) -> None:
        if task.family not in self.task_names():
            raise ValueError(f"Unknown ScienceWorld task {task.family!r}; known: {self.task_names()}")
        try:
            self.server.load(task.family, int(task.variation), "", gold)
        except Exception as exc:  # py4j errors carry the Java stack
            raise SuiteError(f"ScienceWorld could not load {task}: {exc}") from exc

    def start(self, task: EpisodeTask) -> str:
        self._load(task)
        self._task, self._done = task, False
        return sort_listings(str(self.server.step("look around")))

    def task_description(self) -> str:
        return str(self.server.getTaskDescription())

    def step(self, action: str) -> StepOutcome:
        if self._task is None:
            raise RuntimeError("call start() before step()")
        server = self.server
        observation = sort_listings(str(server.step(action)))
        score = float(round(100 * server.getScore()))
        done = bool(server.getCompleted()) or score < 0 or int(server.getNumMoves()) >= self.step_limit
        self._done = done
        return StepOutcome(observation, score, done)

    def inventory(self) -> str:
        return sort_listings(str(self.server.freeActionInventory()))

    def look(self) -> str:
        return sort_listings(str(self.server.freeActionLook()))

    def valid_actions(self) -> tuple[str, ...]:
        """Every action the simulator would accept now (sorted; hundreds to a few thousand)."""
        return tuple(sorted({str(a) for a in self.server.getValidActionObjectCombinations()}))

    def num_moves(self) -> int:
        return int(self.server.getNumMoves())

    def gold_path(self, task: EpisodeTask) -> tuple[str, ...]:
        self._load(task, gold=True)
        path = tuple(str(a) for a in self.server.getGoldActionSequence())
        self._task = None
        return path


@lru_cache(maxsize=256)
def _variations(suite: ScienceWorldSuite, family: str, split: str) -> tuple[int, ...]:
    suite._load(EpisodeTask(family, 0))
    getter = {"train": "getVariationsTrain", "dev": "getVariationsDev", "test": "getVariationsTest"}[split]
    return tuple(sorted(int(v) for v in getattr(suite.server, getter)()))


def java_available() -> bool:
    """Whether a `java` binary is on PATH (the Makefile installs one with apt when it is not)."""
    return any(os.access(os.path.join(p, "java"), os.X_OK) for p in os.environ.get("PATH", "").split(os.pathsep))


def check_available() -> None:
    """ScienceWorld needs its package and a `java` binary (``make setup`` installs Java 17 with apt)."""
    import importlib.util

    if importlib.util.find_spec("scienceworld") is None:
        raise DependencyNotInstalled('ScienceWorld is not installed: run pip install "dreamer-gym[scienceworld]"')
    if not java_available():
        raise SuiteError("ScienceWorld needs Java 17 and no `java` is on PATH: run `make setup` "
                         "(or apt-get install default-jre-headless)")


# --- acquisition: how the noisy expert strays here ---------------------------------------------------------
_FATAL_FOCUS = ("focus on wall", "focus on air", "focus on agent")
_ROOMS = ("hallway", "kitchen", "bathroom", "living room", "bedroom", "workshop", "greenhouse")


def _detour(rng: np.random.Generator, gold: Sequence[str]) -> list[str]:
    room = _ROOMS[int(rng.integers(len(_ROOMS)))]
    return [f"open door to {room}", "look around"]


def _wrong(rng: np.random.Generator, gold: Sequence[str]) -> str:
    return _FATAL_FOCUS[int(rng.integers(len(_FATAL_FOCUS)))] if rng.random() < 0.3 else "pick up wall"


PROFILE = AcquisitionProfile(
    detour=_detour, wrong=_wrong, never_skip=("go to", "focus on"),
    location=re.compile(r"You move to the ([a-z ]+)\."), picked=re.compile(r"(?:pick up|focus on) (.+)$"),
    failed=("No known action",),
)

# --- the oracle: abstractions of TRAIN gold paths, written by hand in the open -----------------------------
# matter (also a candidate): the substance is named by the task's verb ("boil ice cream"); TRAIN fills the pot
# at the sink (water) or from the fridge (juices), so the abstraction keeps what every variation shares
_INTO_POT = ("go to kitchen, pick up thermometer, open cupboard, pick up metal pot, look around, open fridge, "
             "open freezer, focus on <substance named>, move <substance named> to metal pot, pick up metal pot, ")
_MEASURE = ", use thermometer in inventory on <substance named>, wait1"
# forces (a DEV-track candidate): time the block down each plane (two `wait`s, 20 ticks; TRAIN's 20 `look at`
# steps make the entry 388 tokens, over the env's 320); the last focus is the agent's guess (it cannot compare two
# stopwatch readings): right on half the variations (100), wrong on the rest (-100, clipped to 0)
_TIME_TWO_PLANES = (
    "go to workshop, look around, pick up stopwatch, move block to <inclined plane 1>, activate stopwatch in inventory, "
    "wait, wait, deactivate stopwatch in inventory, examine stopwatch in inventory, move block to <inclined plane 2>, "
    "activate stopwatch in inventory, wait, wait, deactivate stopwatch in inventory, examine stopwatch in inventory, "
    "focus on <inclined plane 1>, wait1"
)
PROCEDURES: dict[str, OracleProcedure] = {family: OracleProcedure(steps) for family, steps in {
    "chemistry-mix": "go to kitchen, open cupboard, pick up metal pot, look around, pick up recipe, "
    "read recipe in inventory, look around, pick up <ingredient 1>, move <ingredient 1> to metal pot, "
    "pick up <ingredient 2>, move <ingredient 2> to metal pot, pick up <ingredient 3>, "
    "move <ingredient 3> to metal pot, mix metal pot, focus on <substance>",
    "find-animal": "go to outside, look around, focus on <animal>, pick up <animal>, go to kitchen, "
    "move <animal> in inventory to <color> box",
    "find-living-thing": "go to outside, look around, focus on <living thing>, pick up <living thing>, "
    "go to kitchen, move <living thing> in inventory to <color> box",
    "find-non-living-thing": "go to kitchen, look around, focus on <non-living thing>, "
    "move <non-living thing> to <color> box",
    "find-plant": "go to greenhouse, look around, focus on <plant>, pick up <plant>, go to <room>, "
    "move <plant> in inventory to <color> box",
    # the slot is named in the task's own words (articles drop out of read steps), so that the fact that
    # fills it ("Examples of an animal with longest life span: ...") is retrieved for the task
    "lifespan-longest-lived": "go to outside, look around, focus on <animal with longest life span>, wait1",
    "lifespan-shortest-lived": "go to outside, look around, focus on <animal with shortest life span>, wait1",
    "lifespan-longest-lived-then-shortest-lived": "go to outside, look around, "
    "focus on <animal with longest life span>, focus on <animal with shortest life span>, wait1",
    # ten wait1 per stage: one `wait` (10 ticks) advances the animal less, and nine fail 5 of 14 variations
    "identify-life-stages-1": "go to outside, look around, focus on <organism>"
    + (", look around" + ", wait1" * 10 + ", focus on <organism>") * 3 + ", wait1",
    "grow-plant": "go to <room>, look around, pick up seed jar, go to greenhouse, look around, "
    "move <seed> in seed jar to flower pot 1, focus on <seed> in flower pot 1"
    + ", activate sink, move jug to sink, pour jug into flower pot 1, deactivate sink, wait1, wait1, wait1, wait1" * 4,
    "use-thermometer": "go to kitchen, pick up thermometer, focus on thermometer in inventory, go to <room 1>, "
    "look around, pick up <unknown substance>, focus on <unknown substance> in inventory, go to <room 2>, "
    "look around, use thermometer in inventory on <unknown substance> in inventory, "
    "move <unknown substance> in inventory to <color> box, wait1",
    # <object>: what the task says to turn on (a light bulb on TRAIN; DEV and TEST also have motors, buzzers)
    "power-component": "go to workshop, look around, focus on <object>, "
    "connect battery anode to <wire 1> terminal 1, connect battery cathode to <wire 2> terminal 1, "
    "connect <wire 1> terminal 2 to cathode in <object>, "
    "connect <wire 2> terminal 2 to anode in <object>, wait1, wait1",
}.items()}
# DEV-track candidates (issue 31; research/dev_topics.py measures them). Kept out of the suite's oracle
# (SPEC.procedures): the wrong-procedures decoy takes "the next family in sorted order of the suite's
# procedures", so adding a family there would change what a recorded red-team policy writes. The research
# script registers a spec with them for its own process (`with_dev_topic_procedures`).
DEV_TOPIC_PROCEDURES: dict[str, OracleProcedure] = {family: OracleProcedure(steps) for family, steps in {
    "boil": _INTO_POT + "move metal pot to stove, activate stove" + _MEASURE * 12,
    "melt": _INTO_POT + "move metal pot to stove, activate stove" + _MEASURE * 6,
    "freeze": _INTO_POT + "move metal pot to freezer" + _MEASURE.replace("wait1", "wait") * 5,
    "inclined-plane-determine-angle": _TIME_TWO_PLANES,
    "inclined-plane-friction-named-surfaces": _TIME_TWO_PLANES,
}.items()}
# the agent cannot fill a slot from "change the state of matter of soap" (no verb before the substance), but it
# reads a concrete procedure by analogy between its goal and the task's (water -> soap), so this one is concrete
DEV_TOPIC_PROCEDURES["change-the-state-of-matter-of"] = OracleProcedure(
    (_INTO_POT + "move metal pot to stove, activate stove" + _MEASURE * 6).replace("<substance named>", "water"),
    goal="change the state of matter of water")
# family -> the category of its 1st, 2nd, ... focus target (the last one repeats)
CATEGORY: dict[str, tuple[str, ...]] = {
    "find-animal": ("animal",), "find-living-thing": ("living thing",), "find-non-living-thing": ("non-living thing",),
    "find-plant": ("plant",),
    "lifespan-longest-lived": ("animal with longest life span",),
    "lifespan-shortest-lived": ("animal with shortest life span",),
    "lifespan-longest-lived-then-shortest-lived": ("animal with longest life span", "animal with shortest life span"),
}
_STAGE = re.compile(r"^(?:egg |baby |adult |young )+| egg$| in .*$")


def category_facts(family: str, train_gold: Mapping[str, Mapping[int, Sequence[str]]]) -> list[str]:
    """Facts mined from ``family``'s TRAIN gold paths: which objects belong to each focus target's category
    ("Examples of an animal with longest life span: parrot, elephant.")."""
    categories = CATEGORY.get(family)
    if not categories:
        return []
    seen: dict[str, list[str]] = {c: [] for c in categories}
    for path in train_gold.get(family, {}).values():
        targets = [m.group(1) for a in path if (m := re.match(r"focus on (.+)$", a))]
        for i, target in enumerate(targets):
            name = _STAGE.sub("", target).strip()
            bucket = seen[categories[min(i, len(categories) - 1)]]
            if name and name not in bucket:
                bucket.append(name)
    return [f"Examples of {'an' if c[0] in 'aeiou' else 'a'} {c}: " + ", ".join(names) + "."
            for c, names in seen.items() if names]


SPEC = SuiteSpec(
    name="scienceworld",
    adapter="dreamer_gym.suites.scienceworld:ScienceWorldSuite",
    families=FAMILIES,
    held_out_families=HELD_OUT_FAMILIES,
    topics=TOPICS,
    description="ScienceWorld (AllenAI), the real simulator on a heap-capped JVM",
    extra="scienceworld",
    profile=PROFILE,
    follower="dreamer_gym.agents.memory_following:ScienceWorldFollowing",
    agent_prompt="agent_system",
    idle_action="look around",
    look_action="look around",
    warm_actions=("look around", "inventory", "look around"),
    warm_task=EpisodeTask("find-non-living-thing", 0),
    procedures=PROCEDURES,
    oracle_facts=category_facts,
    requires=("scienceworld",),
    check_available=check_available,
    agent_max_steps=80,
    # 10, not 6 (issue 11): one raw trajectory writes ~10 "raised the score" notes, so six entries held less
    # than one trajectory's notes and raw memory's value was retrieval's, not the notes' (docs/validity.md)
    agent_top_k=10,
)
