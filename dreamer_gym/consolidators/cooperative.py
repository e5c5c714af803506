"""Consolidators on the parallel (PettingZoo) env: a runner that plays one consolidator per agent, and the
cooperative baseline ``board-dedupe``, which uses the board.

Why a cooperative baseline can win: each agent sees only its own region, and the same generic note (an
insight true of every task, a shared fact) is often written once per family. Independent ``dedupe`` agents
each keep their copy, so the joint bank holds it several times; ``board-dedupe`` agents post what they keep
and the higher-ranked agent drops what a lower-ranked one already keeps. Whether the smaller joint bank
scores as well is what the shared reward measures (docs/env.md, "The parallel (PettingZoo) env").
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import gymnasium as gym

from dreamer_gym.consolidators.base import Consolidator, call
from dreamer_gym.consolidators.fixed import DedupeConsolidator, _jaccard
from dreamer_gym.envs.parallel import POST_CHARS, ConsolidationParallelEnv

SHARED_KINDS = ("insight", "pitfall", "fact")  # the kinds a note of one family may share with another's


class BoardDedupeConsolidator:
    """Dedupe within the region, post up to ``max_posts`` kept notes of :data:`SHARED_KINDS` (every agent
    posts for exactly ``max_posts`` calls, so all posts are on the board at the same step), then drop the
    kept notes that near-duplicate (token Jaccard >= ``threshold``) a post of a lower-ranked agent."""

    name = "board-dedupe"

    def __init__(self, threshold: float = 0.8, max_posts: int = 12) -> None:
        self.threshold, self.max_posts = threshold, max_posts

    def _kept(self, region: list[dict[str, Any]]) -> list[dict[str, Any]]:
        entries = sorted(region, key=lambda e: (-e["session"], e["id"]))
        kept: list[dict[str, Any]] = []
        for entry in entries:
            if all(e["kind"] != entry["kind"] or _jaccard(e["text"], entry["text"]) < self.threshold for e in kept):
                kept.append(entry)
        return kept

    def actions(self, env: gym.Env, obs: dict[str, Any], info: dict[str, Any]) -> Iterator[str]:
        kept = self._kept(info["region"])
        shared = [e for e in kept if e["kind"] in SHARED_KINDS and len(e["text"]) <= POST_CHARS][: self.max_posts]
        for i in range(self.max_posts):
            obs, info = yield (call("post", text=shared[i]["text"]) if i < len(shared) else call("read_board"))
        rank = info["agents"].index(info["agent"])
        earlier = [p["text"] for p in info["board_posts"] if info["agents"].index(p["agent"]) < rank]
        keep = [e for e in kept if e["kind"] not in SHARED_KINDS
                or all(_jaccard(e["text"], text) < self.threshold for text in earlier)]
        yield call("keep", ids=[e["id"] for e in keep])
        yield call("commit")


def run_parallel_episode(env: ConsolidationParallelEnv, policies: Mapping[str, Consolidator] | Consolidator,
                         seed: int | None = None, options: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """Reset, then feed each agent's consolidator its own observations until the joint commit. One
    consolidator for all agents, or one per agent. Returns each agent's final info with its summed reward
    under ``"return"``. A consolidator that stops early gets a commit appended; a committed agent waits."""
    obs, infos = env.reset(seed=seed, options=options)
    per_agent = {a: policies[a] if isinstance(policies, Mapping) else policies for a in env.agents}
    calls = {a: per_agent[a].actions(env.agent_env(a), obs[a], infos[a]) for a in env.agents}
    pending = {a: next(calls[a], call("commit")) for a in env.agents}
    returns = dict.fromkeys(env.agents, 0.0)
    final: dict[str, dict[str, Any]] = {}
    while env.agents:
        obs, rewards, terminated, truncated, infos = env.step({a: pending.get(a, call("read_board")) for a in env.agents})
        for agent, reward in rewards.items():
            returns[agent] += reward
        for agent in list(pending):
            if not env.agents:
                break
            if infos[agent]["waiting"]:
                pending.pop(agent)  # committed: nothing more to send
                continue
            send = getattr(calls[agent], "send", None)
            try:
                pending[agent] = send((obs[agent], infos[agent])) if send is not None else next(calls[agent])
            except StopIteration:
                pending[agent] = call("commit")
        final = infos
    return {a: {**final[a], "return": returns[a]} for a in final}


__all__ = ["BoardDedupeConsolidator", "DedupeConsolidator", "run_parallel_episode"]
