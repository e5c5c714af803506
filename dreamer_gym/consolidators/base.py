"""The consolidator protocol and a runner that plays one env episode with it."""
from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Protocol

import gymnasium as gym


class Consolidator(Protocol):
    """A policy on `ConsolidationEnv`: yields one JSON tool call at a time.

    ``actions`` is usually a generator; :func:`run_episode` sends it ``(obs, info)`` after each step, so
    a policy that reacts to tool results writes ``obs, info = yield action`` (others ignore it).

    That method is the whole protocol. A ``name`` attribute is optional (the built-ins have one, for printing):
    a policy is known by the name it is registered under, and the leaderboard names a row by that name or
    ``--name``, never by an attribute of the object."""

    def actions(self, env: gym.Env, obs: dict[str, Any], info: dict[str, Any]) -> Iterator[str]: ...


def call(tool: str, **args: Any) -> str:
    return json.dumps({"tool": tool, **args})


def run_episode(env: gym.Env, policy: Consolidator, seed: int | None = None,
                options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Reset, feed the policy's tool calls until the episode ends; return the final info with the
    summed reward under ``"return"``. A policy that stops early gets a commit appended."""
    obs, info = env.reset(seed=seed, options=options)
    total = 0.0
    calls = policy.actions(env, obs, info)
    send = getattr(calls, "send", None)
    action = next(calls, call("commit"))
    while True:
        obs, reward, terminated, truncated, info = env.step(action)
        total += reward
        if terminated or truncated:
            info["return"] = total
            return info
        try:
            action = send((obs, info)) if send is not None else next(calls)
        except StopIteration:
            action = call("commit")
