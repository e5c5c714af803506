"""`check_suite`: does a suite keep the contract the rest of the package relies on?

Shipped, as Gymnasium ships ``check_env``, so a user who writes a suite can check it before plugging it
in. Three layers, each failure naming the piece and what it returned:

1. the spec (no simulator): references import, the profile's callables answer, the prompt loads, the
   spec pickles (evaluation workers receive it);
2. availability: a suite that cannot run here must say why and how to fix it; the live checks are then
   reported as skipped, not passed;
3. the adapter, live: protocol members, families and disjoint splits, start/step/look/inventory, a bad
   action answered as an observation, deterministic starts, the gold path solving its task, the
   acquisition writer and the memory-following reader running on a real episode, close.

It lives in :mod:`dreamer_gym.testing`, above the suites, acquisition and the agents it drives (issue 28:
a check inside the room it checks pulled those imports backwards).
"""
from __future__ import annotations

import pickle
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dreamer_gym.acquisition import AcquisitionConfig, noisy_expert_actions, play, write_entries
from dreamer_gym.agents import AgentConfig, EpisodeResult
from dreamer_gym.errors import DreamerGymError
from dreamer_gym.registry import resolve
from dreamer_gym.suites.base import SPLITS, EpisodeTask, StepOutcome, TaskSuite
from dreamer_gym.suites.registry import get_suite_spec
from dreamer_gym.suites.spec import AcquisitionProfile, OracleProcedure, SuiteSpec

_BAD_ACTION = "xyzzy plugh frobnicate"  # no suite's language has it
PROTOCOL_MEMBERS = ("name", "families", "variations", "start", "task_description", "step", "inventory", "look",
                    "valid_actions", "gold_path", "close")


class SuiteCheckError(DreamerGymError, AssertionError):
    """A suite breaks the contract; the message names the piece, what was expected and what came."""


@dataclass
class SuiteReport:
    """What :func:`check_suite` checked: ``passed`` names, ``skipped`` name -> why."""

    name: str
    available: bool = True
    unavailable_reason: str | None = None
    passed: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)


def _fail(spec: SuiteSpec, piece: str, message: str) -> SuiteCheckError:
    return SuiteCheckError(f"suite {spec.name!r}: {piece}: {message}")


def _call(spec: SuiteSpec, piece: str, fn: Callable[..., Any], *args: Any) -> Any:
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001 - reported with the piece that raised
        raise _fail(spec, piece, f"raised {type(exc).__name__}: {exc}") from exc


# --- 1. the spec -------------------------------------------------------------------------------------------
def _check_spec(spec: SuiteSpec, report: SuiteReport) -> None:
    adapter = _call(spec, "`adapter`", resolve, spec.adapter)
    if not callable(adapter):
        raise _fail(spec, "`adapter`", f"expected a class or callable, got {adapter!r}")
    follower = _call(spec, "`follower`", resolve, spec.follower)
    if not callable(getattr(follower, "play", None)):
        raise _fail(spec, "`follower`", f"expected a class with play(suite, task, entries), got {follower!r}")
    profile = spec.profile
    if not isinstance(profile, AcquisitionProfile):
        raise _fail(spec, "`profile`", f"expected an AcquisitionProfile, got {type(profile).__name__}")
    rng = np.random.default_rng(0)
    detour = _call(spec, "`profile.detour`", profile.detour, rng, ["look"])
    if not isinstance(detour, list) or not all(isinstance(a, str) for a in detour):
        raise _fail(spec, "`profile.detour`", f"expected a list of actions, got {detour!r}")
    wrong = _call(spec, "`profile.wrong`", profile.wrong, rng, ["look"])
    if not isinstance(wrong, str):
        raise _fail(spec, "`profile.wrong`", f"expected an action string, got {wrong!r}")
    for name in ("location", "picked"):
        if not isinstance(getattr(profile, name), re.Pattern):
            raise _fail(spec, f"`profile.{name}`", "expected a compiled re.Pattern")
    goal = _call(spec, "`profile.goal`", profile.goal, "Your task is to: do the thing. Then stop.")
    if not isinstance(goal, str) or not goal:
        raise _fail(spec, "`profile.goal`", f"expected the goal clause of a task text, got {goal!r}")
    prompt = _call(spec, "`agent_prompt`", spec.system_prompt)
    if not isinstance(prompt, str) or not prompt.strip():
        raise _fail(spec, "`agent_prompt`", "the LLM agent's system prompt is empty")
    for family, proc in spec.procedures.items():
        if not isinstance(proc, OracleProcedure) or not proc.steps.strip():
            raise _fail(spec, "`procedures`", f"{family!r}: expected an OracleProcedure with steps, got {proc!r}")
    if spec.check_available is not None:
        _call(spec, "`check_available`", resolve, spec.check_available)
    try:
        pickle.dumps(spec)
    except Exception as exc:  # noqa: BLE001 - lambdas, local classes
        raise _fail(spec, "the spec", f"does not pickle ({exc}); evaluation workers receive it: use module-level "
                                      "functions and classes, not lambdas or locals") from exc
    report.passed.append("spec")


# --- 3. the adapter ----------------------------------------------------------------------------------------
def _outcome(spec: SuiteSpec, piece: str, value: Any) -> StepOutcome:
    if not isinstance(value, StepOutcome):
        raise _fail(spec, piece, f"expected a StepOutcome, got {type(value).__name__}")
    if not isinstance(value.observation, str) or not isinstance(value.done, bool):
        raise _fail(spec, piece, f"expected observation: str and done: bool, got {value!r}")
    if not isinstance(value.score, float) or not -100.0 <= value.score <= 100.0:
        raise _fail(spec, piece, f"expected a float score in [-100, 100], got {value.score!r}")
    return value


def _check_splits(spec: SuiteSpec, suite: TaskSuite, report: SuiteReport) -> None:
    for family in spec.families:
        seen: dict[int, str] = {}
        for split in SPLITS:
            vs = _call(spec, f"variations({family!r}, {split!r})", suite.variations, family, split)
            if not isinstance(vs, tuple) or not vs or not all(isinstance(v, int) for v in vs):
                raise _fail(spec, f"variations({family!r}, {split!r})", f"expected a non-empty tuple of ints, got {vs!r}")
            for v in vs:
                if v in seen:
                    raise _fail(spec, f"variations({family!r}, ...)",
                                f"variation {v} is in both {seen[v]!r} and {split!r}: splits must be disjoint")
                seen[v] = split
    try:
        suite.variations(spec.families[0], "validation")
    except ValueError:
        pass
    except Exception as exc:  # noqa: BLE001
        raise _fail(spec, "variations(..., 'validation')", f"expected ValueError, got {type(exc).__name__}") from exc
    else:
        raise _fail(spec, "variations(..., 'validation')", f"expected ValueError for a split not in {SPLITS}")
    for family in spec.procedures:
        if not _call(spec, f"variations({family!r}, 'train')", suite.variations, family, "train"):
            raise _fail(spec, "`procedures`", f"{family!r} has no TRAIN variations in this adapter")
    report.passed.append("families and splits")


def _check_episode(spec: SuiteSpec, suite: TaskSuite, task: EpisodeTask, report: SuiteReport) -> None:
    first = _call(spec, f"start({task})", suite.start, task)
    description = _call(spec, "task_description()", suite.task_description)
    if not isinstance(first, str) or not first.strip():
        raise _fail(spec, f"start({task})", f"expected the first observation as text, got {first!r}")
    if not isinstance(description, str) or not description.strip():
        raise _fail(spec, "task_description()", f"expected the task text, got {description!r}")
    for piece, fn in (("look()", suite.look), ("inventory()", suite.inventory)):
        if not isinstance(_call(spec, piece, fn), str):
            raise _fail(spec, piece, "expected text")
    _outcome(spec, f"step({spec.look_action!r})", _call(spec, f"step({spec.look_action!r})", suite.step, spec.look_action))
    bad = _outcome(spec, f"step({_BAD_ACTION!r})", _call(spec, f"step({_BAD_ACTION!r}) (a bad action must be "
                                                        "answered with an observation)", suite.step, _BAD_ACTION))
    if not bad.observation.strip():
        raise _fail(spec, f"step({_BAD_ACTION!r})", "a bad action must be answered with a message, got ''")
    valid = _call(spec, "valid_actions()", suite.valid_actions)
    if not isinstance(valid, tuple) or not all(isinstance(a, str) for a in valid):
        raise _fail(spec, "valid_actions()", f"expected a tuple of strings, got {type(valid).__name__}")
    again = _call(spec, f"start({task}) again", suite.start, task)
    if again != first or suite.task_description() != description:
        raise _fail(spec, f"start({task})", "two starts of the same task differ: starts must be deterministic "
                                            "(sort what the simulator returns in arbitrary order)")
    report.passed.append("episode")


def _check_gold(spec: SuiteSpec, suite: TaskSuite, task: EpisodeTask, report: SuiteReport) -> tuple[str, ...]:
    gold = _call(spec, f"gold_path({task})", suite.gold_path, task)
    if not isinstance(gold, tuple) or not gold or not all(isinstance(a, str) for a in gold):
        raise _fail(spec, f"gold_path({task})", f"expected a non-empty tuple of actions, got {gold!r}")
    _call(spec, f"start({task})", suite.start, task)
    outcome = None
    for action in gold:
        outcome = _outcome(spec, f"step({action!r})", _call(spec, f"step({action!r})", suite.step, action))
        if outcome.done:
            break
    if outcome is None or outcome.score < 100.0:
        raise _fail(spec, f"gold_path({task})", f"replaying it scored {outcome and outcome.score}, expected 100")
    report.passed.append("gold path solves")
    return gold


def _check_readers(spec: SuiteSpec, suite: TaskSuite, task: EpisodeTask, gold: tuple[str, ...] | None,
                   report: SuiteReport) -> None:
    if gold is not None:
        config = AcquisitionConfig(families=spec.families)
        actions = _call(spec, "acquisition (noisy expert)", noisy_expert_actions, gold, np.random.default_rng(0),
                        2.0, config, spec.profile)
        traj = _call(spec, "acquisition (play)", play, suite, task, actions, 0)
        entries = _call(spec, "acquisition (writer)", write_entries, traj, spec.profile)
        if not entries:
            raise _fail(spec, "acquisition (writer)", "wrote no entry for a played episode")
        report.passed.append("acquisition")
    follower = spec.follower_class()(AgentConfig(max_steps=spec.agent_max_steps, top_k=spec.agent_top_k))
    result = _call(spec, "`follower`.play", follower.play, suite, task, [])
    if not isinstance(result, EpisodeResult) or not 0.0 <= result.score <= 100.0:
        raise _fail(spec, "`follower`.play", f"expected an EpisodeResult with a score in [0, 100], got {result!r}")
    report.passed.append("memory-following reader")


def check_suite(suite: SuiteSpec | str, *, live: bool = True, solve: bool = True,
                adapter_kwargs: dict[str, Any] | None = None) -> SuiteReport:
    """Check a suite (its spec or registered name); raise :class:`SuiteCheckError` on the first breach.

    ``live=False`` checks the spec only; ``solve=False`` skips replaying a gold path and acquisition.
    A suite that cannot run here (``check_available`` raises) passes the spec layer and reports the
    live layer as skipped with the reason, which must name a fix."""
    spec = get_suite_spec(suite) if isinstance(suite, str) else suite
    if not isinstance(spec, SuiteSpec):
        raise TypeError(f"Expected a SuiteSpec or a registered suite name, got {type(suite).__name__}")
    report = SuiteReport(spec.name)
    _check_spec(spec, report)
    try:
        spec.ensure_available()
    except Exception as exc:  # noqa: BLE001 - SuiteError, DependencyNotInstalled, ...: the reason is reported
        reason = str(exc).strip()
        if len(reason) < 20:
            raise _fail(spec, "`check_available`", f"raised {type(exc).__name__} without saying how to fix it: "
                                                   f"{reason!r}") from exc
        report.available, report.unavailable_reason = False, reason
        report.skipped["live"] = f"unavailable here: {reason}"
        return report
    if not live:
        report.skipped["live"] = "live=False"
        return report
    adapter = _call(spec, "`adapter`(...)", spec.make, **(adapter_kwargs or {}))
    try:
        missing = [m for m in PROTOCOL_MEMBERS if not hasattr(adapter, m)]
        if missing:
            raise _fail(spec, "the adapter", f"lacks TaskSuite members {missing}")
        if adapter.name != spec.name:
            raise _fail(spec, "the adapter", f"is named {adapter.name!r}, expected {spec.name!r}")
        absent = sorted(set(spec.families) - set(adapter.families))
        if absent:
            raise _fail(spec, "the adapter's `families`", f"lacks the spec's families {absent}")
        _check_splits(spec, adapter, report)
        task = spec.first_task(adapter)
        _check_episode(spec, adapter, task, report)
        gold = None
        if solve and spec.has_gold_paths:
            gold = _check_gold(spec, adapter, task, report)
        elif not spec.has_gold_paths:
            report.skipped["gold path solves"] = "the suite has no gold paths (has_gold_paths=False)"
        _check_readers(spec, adapter, task, gold, report)
    finally:
        _call(spec, "close()", adapter.close)
    _call(spec, "close() twice", adapter.close)
    report.passed.append("close")
    return report
