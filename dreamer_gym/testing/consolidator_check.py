"""`check_consolidator`: does a policy keep the consolidator contract before it is run by name or submitted?

Shipped, as Gymnasium ships ``check_env`` and the suites ship ``check_suite``. It plays a few real
episodes and checks what the runner and the env rely on, which is the whole documented protocol
(:class:`~dreamer_gym.consolidators.base.Consolidator`): ``actions(env, obs, info)`` that returns an iterator
of action strings the env's action space contains, no exception from the policy, an episode that ends. A
``name`` attribute is not part of it (a policy runs under its registered name, as the CLI runs it); the
report uses it as a label when it is there, the class name otherwise. It reports what a user wants to know
before a long run: invalid calls, tool calls used, returns, and whether the same seed gives the same calls
(``deterministic``). Failures raise :class:`ConsolidatorCheckError` naming what came; a bad *tool call* is
not a failure (the env answers it), it is counted.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from dreamer_gym.consolidators.base import call
from dreamer_gym.errors import DreamerGymError


class ConsolidatorCheckError(DreamerGymError, AssertionError):
    """A consolidator breaks the contract; the message names the policy, the episode and what came."""


@dataclass
class ConsolidatorReport:
    """What :func:`check_consolidator` saw, one entry per episode where a list."""

    name: str  # the policy's ``name`` if it has one, else its class name: a label for messages, not a contract
    returns: list[float] = field(default_factory=list)
    tool_calls: list[int] = field(default_factory=list)
    invalid_calls: list[int] = field(default_factory=list)
    deterministic: bool | None = None  # None: not checked (repeat=False)

    @property
    def invalid_rate(self) -> float:
        return sum(self.invalid_calls) / max(sum(self.tool_calls), 1)


def _fail(name: str, where: str, message: str) -> ConsolidatorCheckError:
    return ConsolidatorCheckError(f"consolidator {name!r}, {where}: {message}")


def _label(policy: Any) -> str:
    """What messages call ``policy``: its ``name`` when that is a non-empty string, else its class name."""
    name = getattr(policy, "name", None)
    return name if isinstance(name, str) and name else type(policy).__name__


def _play(env: gym.Env, policy: Any, name: str, seed: int, family: str | None) -> tuple[list[str], dict[str, Any]]:
    """One episode like :func:`~dreamer_gym.consolidators.base.run_episode`, checking every action."""
    where = f"episode seed={seed}"
    obs, info = env.reset(seed=seed, options={"family": family} if family else None)
    try:
        calls = policy.actions(env, obs, info)
    except Exception as exc:  # noqa: BLE001 - reported with what raised
        raise _fail(name, where, f"actions(env, obs, info) raised {type(exc).__name__}: {exc}") from exc
    if not isinstance(calls, Iterator):
        raise _fail(name, where, f"actions() must return an iterator (a generator) of tool calls, got "
                                 f"{type(calls).__name__}")
    send = getattr(calls, "send", None)
    sent: list[str] = []
    total, first = 0.0, True
    while True:
        try:
            action = next(calls) if first or send is None else send((obs, info))
        except StopIteration:
            action = call("commit")  # a policy that stops early gets a commit, as run_episode does
        except Exception as exc:  # noqa: BLE001
            raise _fail(name, f"{where}, call {len(sent) + 1}", f"the policy raised {type(exc).__name__}: {exc}") from exc
        first = False
        if not isinstance(action, str):
            raise _fail(name, f"{where}, call {len(sent) + 1}", f"expected a JSON string, got {type(action).__name__}")
        if not env.action_space.contains(action):
            raise _fail(name, f"{where}, call {len(sent) + 1}", f"the action is not in the env's action space "
                                                               f"(over {env.action_space.max_length} characters or "
                                                               f"outside its charset): {action[:80]!r}")
        sent.append(action)
        obs, reward, terminated, truncated, info = env.step(action)
        total += float(reward)
        if terminated or truncated:
            info["return"] = total
            return sent, info


def check_consolidator(policy: Any, env: gym.Env, *, seeds: tuple[int, ...] = (0, 1), family: str | None = None,
                       repeat: bool = True) -> ConsolidatorReport:
    """Play one episode per seed (and the first again when ``repeat``) on ``env``; raise
    :class:`ConsolidatorCheckError` on a breach, return a :class:`ConsolidatorReport` otherwise."""
    name = _label(policy)
    if not callable(getattr(policy, "actions", None)):
        raise _fail(name, "the policy", "has no actions(env, obs, info) method")
    report = ConsolidatorReport(name)
    first_calls: list[str] | None = None
    for seed in seeds:
        sent, info = _play(env, policy, name, seed, family)
        first_calls = sent if first_calls is None else first_calls
        report.returns.append(float(info["return"]))
        report.tool_calls.append(len(sent))
        report.invalid_calls.append(int(info["invalid_calls"]))
    if repeat and seeds:
        again, _ = _play(env, policy, name, seeds[0], family)
        report.deterministic = again == first_calls
    return report
