"""`SuiteSpec`: everything suite-specific in one record, so generic code never branches on a suite's name.

A suite is one adapter class (the :class:`~dreamer_gym.suites.base.TaskSuite` protocol: start, step, score)
plus what the rest of the package must know of it: its families, the acquisition profile (how the noisy
expert strays, where the writer reads locations), the memory-following agent's reader for its commands,
the LLM agent's prompt, the oracle's procedures, availability and its fix, warm-up and default limits.
Pieces that live above ``suites/`` in the import order (agent readers) are named by ``"module:attr"``
strings and imported only when used, so a spec is cheap, picklable data.

Adding a suite = one module that defines the adapter and a ``SuiteSpec``, and one registry line
(:func:`~dreamer_gym.suites.registry.register_suite`, or an entry point in the ``dreamer_gym.suites``
group). :func:`dreamer_gym.testing.check_suite` checks a spec and its adapter.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dreamer_gym.registry import importable, resolve  # noqa: F401 - kept here for older imports
from dreamer_gym.suites.base import EpisodeTask, TaskSuite

_NEVER = re.compile(r"(?!)")


def _goal_clause(description: str) -> str:
    """The goal clause of a task text ("Your task is to: put a mug in shelf." -> "put a mug in shelf")."""
    return re.sub(r"^Your task is to:? ", "", description.split(".")[0]).strip()


def _no_detour(rng: np.random.Generator, gold: Sequence[str]) -> list[str]:
    return []


def _no_wrong(rng: np.random.Generator, gold: Sequence[str]) -> str:
    return gold[int(rng.integers(len(gold)))] if gold else "look"


@dataclass(frozen=True)
class AcquisitionProfile:
    """What acquisition needs to know of one simulator's language: how its noisy expert strays, and which
    patterns the rule-based writer reads locations from."""

    detour: Callable[[np.random.Generator, Sequence[str]], list[str]] = _no_detour
    wrong: Callable[[np.random.Generator, Sequence[str]], str] = _no_wrong
    never_skip: tuple[str, ...] = ()  # action prefixes the expert never drops
    location: re.Pattern[str] = _NEVER  # an observation saying where the agent now is (group 1: the place)
    picked: re.Pattern[str] = _NEVER  # an action that finds an object (group 1: object; group 2, if any: where)
    failed: tuple[str, ...] = ()  # observations saying the action did nothing
    goal: Callable[[str], str] = _goal_clause  # the goal clause of a task text


@dataclass(frozen=True)
class OracleProcedure:
    """One family's abstract procedure for the oracle consolidator, written in the open from TRAIN gold
    paths. ``goal`` is a template with the family's ``<slots>``; ``None`` uses the family's task text as
    the bank's trajectories word it."""

    steps: str
    goal: str | None = None


@dataclass(frozen=True)
class SuiteSpec:
    """One suite's record. Only ``name``, ``adapter`` and ``families`` are required; the rest has
    defaults that suit a simple text simulator.

    Example (a whole suite in one module)::

        SPEC = SuiteSpec(name="toy", adapter="my_pkg.toy:ToySuite", families=("fetch", "light"),
                         procedures={"fetch": OracleProcedure("take <item>, go to door")})
        register_suite(SPEC)
    """

    name: str
    adapter: str | Callable[..., TaskSuite]  # "module:Class", or a callable returning a TaskSuite
    families: tuple[str, ...]  # the families a pool holds by default (acquisition, the oracle, tracks)
    # whole topics no training pool, reset, region or episode may touch; only held-out pools and tracks
    held_out_families: tuple[str, ...] = ()
    topics: Mapping[str, str] = field(default_factory=dict)  # family -> topic (held out by whole topics)
    adapter_kwargs: Mapping[str, Any] = field(default_factory=dict)  # fixed constructor arguments
    description: str = ""
    extra: str | None = None  # the pip extra that installs the simulator
    # top-level modules the adapter imports: missing ones fail `gym.make` at once, naming `extra`, before a
    # commit could play episodes that cannot run (checked with find_spec: nothing is imported)
    requires: tuple[str, ...] = ()
    profile: AcquisitionProfile = field(default_factory=AcquisitionProfile)
    # the memory-following agent's reader for this suite's commands: a class built with (AgentConfig) whose
    # `play(suite, task, entries)` returns an EpisodeResult; the default follows a procedure's steps literally
    follower: str = "dreamer_gym.agents.generic_following:GenericFollowing"
    agent_prompt: str = "agent_system"  # LLM agent: the packaged system prompt (dreamer_gym/prompts/<name>.md)
    agent_prompt_text: str | None = None  # ... or the prompt itself (a suite outside the package)
    idle_action: str = "look"  # what an agent sends when it has nothing to say
    look_action: str = "look"  # the action that shows the surroundings
    warm_actions: tuple[str, ...] = ("look", "inventory")  # played once per worker to warm the simulator
    warm_task: EpisodeTask | None = None  # a cheap task to start the simulator (None: first family, train)
    # the oracle's, per family (may cover families beyond the default pool's, which the adapter also plays)
    procedures: Mapping[str, OracleProcedure] = field(default_factory=dict)
    # the oracle's facts for a family, from every family's TRAIN gold paths (family -> variation -> path)
    oracle_facts: Callable[[str, Mapping[str, Mapping[int, Sequence[str]]]], list[str]] | None = None
    # raises SuiteError / DependencyNotInstalled naming the fix when the suite cannot run here (cheap)
    check_available: str | Callable[[], None] | None = None
    agent_max_steps: int = 80  # default downstream-agent steps per episode
    agent_top_k: int = 6  # default entries retrieved into the agent's context
    has_gold_paths: bool = True  # False: the suite has no oracle (WebArena); the oracle consolidator cannot run

    def __post_init__(self) -> None:
        from dreamer_gym.errors import ConfigError

        if not isinstance(self.name, str) or not re.fullmatch(r"[a-z0-9][a-z0-9_-]*", self.name or ""):
            raise ConfigError(f"Expected `name` to be a lower-case id such as 'my-suite', got {self.name!r}")
        if not self.families or not all(isinstance(f, str) and f for f in self.families):
            raise ConfigError(f"Expected `families` to be a non-empty tuple of names, got {self.families!r}")
        object.__setattr__(self, "families", tuple(self.families))
        object.__setattr__(self, "held_out_families", tuple(self.held_out_families))
        object.__setattr__(self, "requires", tuple(self.requires))
        shared = set(self.families) & set(self.held_out_families)
        if shared:
            raise ConfigError(f"Families {sorted(shared)} are both training (`families`) and `held_out_families`")
        split_topics = {self.topics.get(f) for f in self.families} & {self.topics.get(f) for f in self.held_out_families}
        if split_topics - {None}:
            raise ConfigError(f"Topics {sorted(split_topics - {None})} have families on both sides: hold out "
                              "whole topics (move every family of the topic to `held_out_families`)")
        for name in ("agent_max_steps", "agent_top_k"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ConfigError(f"Expected `{name}` to be a positive int, got {getattr(self, name)!r}")

    def make(self, **kwargs: Any) -> TaskSuite:
        """A new adapter (constructing one must start nothing heavy)."""
        return resolve(self.adapter)(**{**self.adapter_kwargs, **kwargs})

    def ensure_available(self) -> None:
        """Fail at once, naming the fix, when the suite cannot run on this machine (nothing is started)."""
        missing = [m for m in self.requires if not importable(m)]
        if missing:
            from gymnasium.error import DependencyNotInstalled

            fix = f'pip install "dreamer-gym[{self.extra}]"' if self.extra else f"install {', '.join(missing)}"
            raise DependencyNotInstalled(f"The {self.name} suite needs {', '.join(missing)} (not installed): "
                                         f"run {fix}")
        if self.check_available is not None:
            resolve(self.check_available)()

    def first_task(self, suite: TaskSuite) -> EpisodeTask:
        """The warm-up task: ``warm_task``, else the first family's first TRAIN variation."""
        if self.warm_task is not None:
            return self.warm_task
        return EpisodeTask(self.families[0], suite.variations(self.families[0], "train")[0])

    def follower_class(self) -> type:
        return resolve(self.follower)

    def system_prompt(self) -> str:
        if self.agent_prompt_text is not None:
            return self.agent_prompt_text
        from dreamer_gym.prompts import load_prompt

        return load_prompt(self.agent_prompt)
