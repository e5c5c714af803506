"""`MemoryConsolidationParallel-ScienceWorld-v1` (and the superseded `-v0`): several consolidators at once on
disjoint regions of one bank, a PettingZoo ``ParallelEnv``. The contract is docs/env.md, "The parallel (PettingZoo) env".

Each agent is one :class:`~dreamer_gym.envs.consolidation.ConsolidationEnv` over its own region (one family
of the reset's bank), with the single-agent tools and observation, plus a shared message board (``post``,
``read_board``; the board is in every observation). All agents share one reward service. An agent that has
committed (or run out of calls) stays in the episode, its actions ignored, until every agent has; then the
joint bank (every region replaced) is scored once (:meth:`~dreamer_gym.service.referee.Referee.commit_joint`)
and every agent receives the shared score change plus its own size term, components in its info.
"""
from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding

try:
    from pettingzoo import ParallelEnv
except ImportError as exc:  # pragma: no cover - the extra is in the Makefile's set
    raise ImportError("the parallel env needs PettingZoo: pip install 'dreamer-gym[pettingzoo]' "
                      "(pettingzoo==1.27.0)") from exc

from dreamer_gym.envs.config import ConsolidationConfig
from dreamer_gym.envs.consolidation import REGION_CHARS, ConsolidationEnv
from dreamer_gym.envs.spaces import ToolCallSpace, sanitize, text_space
from dreamer_gym.envs.tools import ToolError
from dreamer_gym.errors import ConfigError
from dreamer_gym.service import RewardService, make_reward_service

BOARD_CHARS = 8_192
POST_CHARS = 320
RESET_OPTIONS: tuple[str, ...] = ("bank", "families")
BOARD_TOOLS: dict[str, str] = {
    "post": '{"tool": "post", "text": TEXT} - write to the board every agent sees (at most 320 characters)',
    "read_board": '{"tool": "read_board"} - the whole board as this call\'s result',
}
PARALLEL_IDS: dict[str, str] = {  # the single-agent id each parallel id is made of (-v0: superseded, see docs/env.md)
    "MemoryConsolidationParallel-ScienceWorld-v1": "MemoryConsolidation-ScienceWorld-v1",
    "MemoryConsolidationParallel-ScienceWorld-v0": "MemoryConsolidation-ScienceWorld-v0",
}


class ConsolidationParallelEnv(ParallelEnv):
    """See the module docstring. ``n_agents`` consolidators; the other keyword arguments are the
    single-agent env's (:class:`~dreamer_gym.envs.config.ConsolidationConfig` and ``frozen``)."""

    metadata = {"name": "memory_consolidation_parallel_v0", "render_modes": ["ansi"], "is_parallelizable": True}

    def __init__(self, n_agents: int = 2, render_mode: str | None = None, frozen: dict[str, Any] | None = None,
                 region_chars: int = REGION_CHARS, board_chars: int = BOARD_CHARS, **kwargs: Any) -> None:
        if isinstance(n_agents, bool) or not isinstance(n_agents, int) or n_agents < 1:
            raise ConfigError(f"Expected `n_agents` to be a positive int, got {n_agents!r}")
        if render_mode not in (None, "ansi"):
            raise ValueError(f"Expected `render_mode` to be None or 'ansi', got {render_mode!r}")
        self.render_mode = render_mode
        self.board_chars = board_chars
        self.config = ConsolidationConfig(**kwargs)
        self.service: RewardService = make_reward_service(self.config.service, self.config)
        self.possible_agents = [f"consolidator_{i}" for i in range(n_agents)]
        self.agents: list[str] = []
        self._subs = {
            agent: ConsolidationEnv(render_mode=render_mode, frozen=frozen, region_chars=region_chars,
                                    reward_service=self.service,
                                    extra_tools={"post": functools.partial(self._post, agent),
                                                 "read_board": self._read_board}, **kwargs)
            for agent in self.possible_agents
        }
        self._board: list[tuple[str, str]] = []
        self._waiting: dict[str, tuple[bool, bool]] = {}  # agent -> (terminated, truncated) of its commit
        self._last_obs: dict[str, dict[str, Any]] = {}
        self._last_info: dict[str, dict[str, Any]] = {}
        self._np_random, self._np_random_seed = seeding.np_random()
        sub = self._subs[self.possible_agents[0]]
        self._observation_space = spaces.Dict({**sub.observation_space.spaces, "board": text_space(board_chars)})
        self._action_spaces = {a: ToolCallSpace(self._subs[a].action_space.max_length) for a in self.possible_agents}

    # --- spaces: the same object per agent on every call (PettingZoo's API test checks identity) ----------------
    def observation_space(self, agent: str) -> spaces.Space:
        return self._observation_space

    def action_space(self, agent: str) -> spaces.Space:
        return self._action_spaces[agent]

    # --- the board ------------------------------------------------------------------------------------------------
    def _post(self, agent: str, args: dict[str, Any]) -> str:
        text = args.get("text")
        if not isinstance(text, str) or not text.strip():
            raise ToolError("`text` must be a non-empty string")
        if len(text) > POST_CHARS:
            raise ToolError(f"a post is at most {POST_CHARS} characters, got {len(text)}")
        self._board.append((agent, text))
        return f"Posted to the board ({len(self._board)} posts)."

    def _read_board(self, args: dict[str, Any]) -> str:
        return self.board_text() or "The board is empty."

    def board_text(self) -> str:
        """The board, newest posts kept when it is over ``board_chars``."""
        text = "\n".join(f"[{agent}] {post}" for agent, post in self._board)
        return sanitize(text[-self.board_chars:], self.board_chars)

    # --- PettingZoo API --------------------------------------------------------------------------------------------
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        """``options``: ``{"bank": i, "families": [one per agent]}``, both optional (other keys are ignored)."""
        if seed is not None:
            self._np_random, self._np_random_seed = seeding.np_random(seed)
        rng = self._np_random
        bank_index, families = self._choose_regions(options if isinstance(options, Mapping) else {}, rng)
        self.agents = list(self.possible_agents)
        self._board, self._waiting = [], {}
        for agent, family in zip(self.agents, families):
            obs, info = self._subs[agent].reset(seed=int(rng.integers(2**31 - 1)),
                                                options={"bank": bank_index, "family": family})
            self._remember(agent, obs, info)
        return self._observations(), {a: self._info(a) for a in self.agents}

    def _choose_regions(self, options: Mapping[str, Any], rng: np.random.Generator) -> tuple[int, list[str]]:
        pool = self._subs[self.possible_agents[0]].pool
        n_banks = len(pool.banks)
        drawn = int(rng.integers(n_banks))
        index = drawn if options.get("bank") is None else options["bank"]
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not 0 <= index < n_banks:
            raise ConfigError(f"Expected `options['bank']` to be an int in [0, {n_banks - 1}], got {index!r}")
        available = sorted({e.family for e in pool.banks[int(index)]})
        n = len(self.possible_agents)
        if n > len(available):
            raise ConfigError(f"{n} agents need {n} families in one bank; bank {index} has {len(available)}: "
                              "lower `n_agents`")
        drawn_families = [available[i] for i in rng.choice(len(available), size=n, replace=False)]
        families = options.get("families")
        if families is None:
            return int(index), drawn_families
        families = list(families)
        if len(families) != n or len(set(families)) != n or not set(families) <= set(available):
            raise ConfigError(f"Expected `options['families']` to be {n} distinct families of bank {index} "
                              f"({available}), got {families!r}")
        return int(index), families

    def step(self, actions: Mapping[str, str]):
        if not self.agents:
            raise RuntimeError("call reset() before step() (the episode is over)")
        rewards = dict.fromkeys(self.agents, 0.0)
        for agent in self.agents:
            if agent in self._waiting:
                continue  # committed: its action is ignored until every agent has committed
            sub = self._subs[agent]
            action = actions.get(agent, "")  # a live agent with no action: an invalid call, as in the single env
            obs, reward, terminated, truncated, info = sub.act(action)
            rewards[agent] += reward
            if sub.pending_commit is not None:
                self._waiting[agent] = (terminated, truncated)
            self._remember(agent, obs, info)
        terminations = dict.fromkeys(self.agents, False)
        truncations = dict.fromkeys(self.agents, False)
        if len(self._waiting) == len(self.agents):
            self._settle(rewards, terminations, truncations)
        observations = self._observations()
        infos = {a: self._info(a) for a in rewards}
        return observations, rewards, terminations, truncations, infos

    def _info(self, agent: str) -> dict[str, Any]:
        """The single-agent info, plus who this agent is, whether it waits, and the board as data."""
        return {**self._last_info[agent], "agent": agent, "agents": list(self.possible_agents),
                "waiting": agent in self._waiting and bool(self.agents),
                "board_posts": [{"agent": a, "text": t} for a, t in self._board]}

    def agent_env(self, agent: str) -> ConsolidationEnv:
        """The single-agent env behind ``agent`` (what a single-agent consolidator's ``actions`` receives)."""
        return self._subs[agent]

    def _settle(self, rewards: dict[str, float], terminations: dict[str, bool], truncations: dict[str, bool]) -> None:
        """Score the joint bank once and finish every agent's commit with its share."""
        agents = list(self.agents)
        requests = [self._subs[a].pending_commit for a in agents]
        bank = self._subs[agents[0]].pool.banks[requests[0].bank_index]  # type: ignore[union-attr]
        replaced = tuple(i for a in agents for i in self._subs[a].region_ids)
        joint = bank.replace(replaced, tuple(e for r in requests for e in r.emitted))  # type: ignore[union-attr]
        results = self.service.commit_joint(requests)  # type: ignore[arg-type]
        for agent, result in zip(agents, results):
            obs, reward, _, _, info = self._subs[agent].settle(result, expected_bank=joint.hash)
            rewards[agent] += reward
            terminations[agent], truncations[agent] = self._waiting[agent]
            self._remember(agent, obs, info)
        self.agents = []

    def _remember(self, agent: str, obs: dict[str, Any], info: dict[str, Any]) -> None:
        self._last_obs[agent] = obs
        self._last_info[agent] = info

    def _observations(self) -> dict[str, dict[str, Any]]:
        board = self.board_text()
        out = {}
        for agent in self._last_obs:
            obs = dict(self._last_obs[agent])
            if agent in self._waiting and self.agents:
                left = len(self.agents) - len(self._waiting)
                obs["result"] = f"Committed; waiting for {left} other agent(s) to commit. Actions are ignored."
            obs["board"] = board
            out[agent] = obs
        return {a: out[a] for a in self.possible_agents if a in out}

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        parts = [f"=== {agent} ===\n{self._subs[agent].render() or ''}" for agent in self.possible_agents]
        return "\n".join(parts) + f"\n=== board ===\n{self.board_text()}\n"

    def tool_schema(self) -> str:
        """The single-agent tools plus the board's."""
        return json.dumps({**json.loads(self._subs[self.possible_agents[0]].tool_schema()), **BOARD_TOOLS}, indent=1)

    def state(self) -> np.ndarray:  # pragma: no cover - text env: no global state array
        raise NotImplementedError("the env's state is text; see each agent's observation")

    def close(self) -> None:
        for sub in self._subs.values():
            sub.close()
        self.service.close()


def parallel_env(env_id: str = "MemoryConsolidationParallel-ScienceWorld-v1", n_agents: int = 2,
                 **kwargs: Any) -> ConsolidationParallelEnv:
    """The parallel id ``env_id``: the single-agent id's settings and frozen fields, ``n_agents`` agents;
    ``kwargs`` override free fields (a frozen one raises ``FrozenParameterError``, as ``gym.make`` does)."""
    from dreamer_gym.contract.ids import REGISTERED

    if env_id not in PARALLEL_IDS:
        raise ConfigError(f"Unknown parallel env id {env_id!r}; ids: {sorted(PARALLEL_IDS)}")
    spec = dict(REGISTERED[PARALLEL_IDS[env_id]])
    frozen = spec.pop("frozen", None)
    return ConsolidationParallelEnv(n_agents=n_agents, frozen=frozen, **{**spec, **kwargs})
