"""`ConsolidationEnv`: rewrite one working region of a memory bank through tool calls; the reward is
how a downstream agent then does on held-out episodes (see docs/env.md for the full contract)."""
from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from dreamer_gym.agents import EpisodeResult
from dreamer_gym.envs.config import ConsolidationConfig
from dreamer_gym.envs.observation import RegionView, entry_dict
from dreamer_gym.envs.reward import RewardBreakdown, reward_from_results
from dreamer_gym.envs.spaces import ToolCallSpace, sanitize, text_space
from dreamer_gym.envs.tools import TOOLS, ToolError, Workspace, parse_action
from dreamer_gym.errors import ConfigError, FrozenParameterError
from dreamer_gym.evaluation import EvalEpisode, Evaluator
from dreamer_gym.memory import MemoryBank, count_tokens, select_by_family
from dreamer_gym.pool import BankPool, load_or_build_pool
from dreamer_gym.store import Store
from dreamer_gym.suites.base import EpisodeTask
from dreamer_gym.suites.registry import check_available

REGION_CHARS = 32_768
RESULT_CHARS = 8_192
ACTION_CHARS = 16_384
RESET_OPTIONS: tuple[str, ...] = ("bank", "family")


def _success(results: list[EpisodeResult]) -> float:
    return float(np.mean([r.success for r in results])) if results else 0.0


class ConsolidationEnv(gym.Env[dict[str, Any], str]):
    """One episode = one consolidation of one region; the contract is docs/env.md.

    Example:
        >>> env = gym.make("MemoryConsolidation-ScienceWorld-v0")
        >>> obs, info = env.reset(seed=0, options={"family": "grow-plant"})
        >>> obs, reward, terminated, truncated, info = env.step('{"tool": "commit"}')

    Change log (within ``-v0``; rewards and pool hashes unchanged): reset options are checked
    (``ConfigError``); a region listing over ``region_chars`` hides entries from its end instead of cutting
    the new region; ``info["region"]`` items carry ``tags``; ``action_space.sample()`` draws JSON tool calls.
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(self, render_mode: str | None = None, frozen: dict[str, Any] | None = None,
                 region_chars: int = REGION_CHARS, **kwargs: Any) -> None:
        """``frozen`` comes from registration: the values that define the registered id. gym.make merges
        user kwargs over the spec's, so an override shows up here as a value that differs from it.
        ``region_chars`` caps the observation's ``region`` text (it changes no reward)."""
        if render_mode not in (None, "ansi"):
            raise ValueError(f"Expected `render_mode` to be None or 'ansi', got {render_mode!r}")
        for name, value in (frozen or {}).items():
            if kwargs.get(name, value) != value:
                raise FrozenParameterError(
                    f"`{name}` is frozen at {value!r} for this env id (got {kwargs[name]!r}); it defines what "
                    "the reward measures. For experiments construct dreamer_gym.envs.consolidation."
                    "ConsolidationEnv(...) directly; to share a setting, register a new id with gym.register."
                )
        if isinstance(region_chars, bool) or not isinstance(region_chars, int) or region_chars < 1_000:
            raise ConfigError(f"Expected `region_chars` to be an int >= 1000, got {region_chars!r}")
        self.render_mode = render_mode
        self.region_chars = region_chars
        self.config = ConsolidationConfig(**kwargs)
        check_available(self.config.suite)  # official data or servers missing: fail now, naming the fix
        self.observation_space = spaces.Dict(
            {
                "region": text_space(region_chars),
                "result": text_space(RESULT_CHARS),
                "budget": spaces.Box(0, self._budget_high(), shape=(4,), dtype=np.int64),
            }
        )
        self.action_space = ToolCallSpace(ACTION_CHARS)
        self._pool: BankPool | None = None
        self._store: Store | None = None
        self._evaluator: Evaluator | None = None
        self._ws: Workspace | None = None
        self._view = RegionView("", [], region_chars)
        self._region_dicts: list[dict[str, Any]] = []
        self._episodes: list[EvalEpisode] = []
        self._calls_left = 0
        self._last_result = ""
        self._last_error: str | None = None
        self._invalid = 0
        self._done = True

    def _budget_high(self) -> int:
        cfg = self.config
        return max(1_000_000, cfg.max_tool_calls, cfg.max_emitted, cfg.max_region_entries)

    # --- lazily built heavy parts -------------------------------------------------------------------------
    @property
    def pool(self) -> BankPool:
        if self._pool is None:
            self._pool = load_or_build_pool(self.config.pool, self.config.suite, self.config.pool_hash)
        return self._pool

    @property
    def store(self) -> Store:
        if self._store is None:
            self._store = Store(self.config.store_path)
        return self._store

    @property
    def evaluator(self) -> Evaluator:
        if self._evaluator is None:
            cfg = self.config
            self._evaluator = Evaluator(
                cfg.suite, cfg.agent_config(), self.store, cfg.workers, executor=cfg.executor
            )
        return self._evaluator

    # --- gym API -------------------------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """``options``: ``{"bank": i, "family": name}``, both optional; bad ones raise ``ConfigError``."""
        super().reset(seed=seed)
        pool, rng = self.pool, self.np_random
        bank_index, family = self._choose_region(options, rng)
        bank = pool.banks[bank_index]
        region = select_by_family(bank, family, self.config.max_region_entries)
        if not self.store.has_bank(bank.hash):  # first use of this bank: store it with its evidence
            self.store.put_trajectories(pool.trajectories.values())
            self.store.put_bank(bank, meta={"pool": pool.hash, "index": bank_index})
        self._ws = Workspace(bank, region, pool.trajectories, family, self.config.max_emitted, self.config.max_entry_tokens)
        self._view = RegionView(region.name, list(self._ws.entries.values()), self.region_chars)
        self._region_dicts = [entry_dict(e) for e in self._ws.entries.values()]
        self._episodes = self._draw_episodes(family, rng)
        self._calls_left = self.config.max_tool_calls
        self._last_result = "Region loaded. Inspect it, emit a compact replacement set, then commit."
        self._last_error = None
        self._invalid = 0
        self._done = False
        return self._obs(), self._info()

    def _choose_region(self, options: Mapping[str, Any] | None, rng: np.random.Generator) -> tuple[int, str]:
        """The bank index and family: from ``options`` where given (checked), else drawn from ``rng``."""
        options = {} if options is None else options
        if not isinstance(options, Mapping):
            raise ConfigError(f"Expected `options` to be a dict with keys {list(RESET_OPTIONS)} or None, "
                              f"got {type(options).__name__}")
        unknown = sorted(map(str, set(options) - set(RESET_OPTIONS)))
        if unknown:
            raise ConfigError(f"Unknown reset option(s) {unknown}; the options are {list(RESET_OPTIONS)}")
        n_banks = len(self.pool.banks)
        drawn = int(rng.integers(n_banks))  # drawn even when given, so the later draws do not move
        index = drawn if options.get("bank") is None else options["bank"]
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not 0 <= index < n_banks:
            raise ConfigError(f"Expected `options['bank']` to be an int in [0, {n_banks - 1}] (the pool holds "
                              f"{n_banks} banks), got {index!r}")
        families = sorted({e.family for e in self.pool.banks[int(index)]})
        family = options.get("family")
        if family is None:
            family = families[int(rng.integers(len(families)))]
        elif family not in families:
            raise ConfigError(f"Expected `options['family']` to be one of {families}, got {family!r}")
        return int(index), family

    def _draw_episodes(self, family: str, rng: np.random.Generator) -> list[EvalEpisode]:
        split, pool, cfg = self.config.split, self.pool, self.config
        own = list(pool.variations(family, split))
        picks = [own[i] for i in sorted(rng.choice(len(own), size=min(cfg.eval_in_family, len(own)), replace=False))]
        episodes = [EvalEpisode(EpisodeTask(family, v), pool.description(EpisodeTask(family, v), split)) for v in picks]
        others = [f for f in pool.families if f != family]
        for _ in range(cfg.eval_other if others else 0):
            fam = others[int(rng.integers(len(others)))]
            vs = pool.variations(fam, split)
            task = EpisodeTask(fam, vs[int(rng.integers(len(vs)))])
            episodes.append(EvalEpisode(task, pool.description(task, split)))
        return episodes

    def step(self, action: str):
        if self._ws is None or self._done:
            raise RuntimeError("call reset() before step() (the episode is over)")
        self._calls_left -= 1
        reward, terminated, truncated = 0.0, False, False
        self._last_error = None
        commit_info: dict[str, Any] = {}
        try:
            call = parse_action(action)
            if call.name == "commit":
                terminated = True
            else:
                self._last_result = getattr(self._ws, call.name)(call.args)
        except ToolError as exc:
            self._invalid += 1
            self._last_error = str(exc)
            self._last_result = f"ERROR: {exc}"
            reward -= self.config.invalid_penalty
        if not terminated and self._calls_left <= 0:
            truncated = True
        if terminated or truncated:
            commit_info, breakdown = self._commit()
            reward += breakdown.total
            self._done = True
        info = self._info()
        info.update(commit_info)
        return self._obs(), float(reward), terminated, truncated, info

    def _commit(self) -> tuple[dict[str, Any], RewardBreakdown]:
        """Store the new bank, evaluate both banks, score the difference; the commit info and the reward."""
        ws = self._ws
        assert ws is not None  # noqa: S101 - internal invariant, checked by step()
        new_bank = self._store_new_bank(ws)
        before, after = self._evaluate(ws.bank, new_bank)
        tokens_before = sum(count_tokens(e.text) for e in ws.entries.values())
        tokens_after = sum(count_tokens(e.text) for e in ws.emitted)
        in_family = [e.task.family == ws.family for e in self._episodes]
        breakdown = reward_from_results(before, after, tokens_before, tokens_after, self.config.size_coef, in_family)
        self._last_result = (
            f"Committed {len(ws.emitted)} entries. Score {breakdown.score_before:.1f} -> {breakdown.score_after:.1f}; "
            f"region tokens {tokens_before} -> {tokens_after}."
        )
        return self._commit_info(ws, new_bank, before, after, breakdown, (tokens_before, tokens_after)), breakdown

    def _store_new_bank(self, ws: Workspace) -> MemoryBank:
        """Bank v1 = v0 without the region, plus the new region; stored as a new version (parent: v0)."""
        new_bank = ws.bank.replace(ws.region.entry_ids, ws.emitted)
        self.store.put_bank(new_bank, parent=ws.bank.hash, meta={"region": ws.region.name})
        return new_bank

    def _evaluate(self, old: MemoryBank, new: MemoryBank) -> tuple[list[EpisodeResult], list[EpisodeResult]]:
        """The downstream agent on this reset's episodes with each bank (one run when they are equal)."""
        before = self.evaluator.evaluate(old, self._episodes)
        after = before if new == old else self.evaluator.evaluate(new, self._episodes)
        return before, after

    def _commit_info(self, ws: Workspace, new_bank: MemoryBank, before: list[EpisodeResult],
                     after: list[EpisodeResult], reward: RewardBreakdown, tokens: tuple[int, int]) -> dict[str, Any]:
        return {
            "score_before": reward.score_before,
            "score_after": reward.score_after,
            "success_before": _success(before),
            "success_after": _success(after),
            "size_before": {"entries": len(ws.region.entry_ids), "tokens": tokens[0]},
            "size_after": {"entries": len(ws.emitted), "tokens": tokens[1]},
            "reward_components": reward.components(),
            "score_delta_parts": reward.score_delta_parts(),
            "episode_errors": [r.error for r in (*before, *after) if r.error],
            "reward_agent": dataclasses.asdict(self.evaluator.agent_config),  # incl. the LLM, never a key
            # what the score was measured on; "alfworld-gen" games are generated, never the official splits
            "suite": self.config.suite,
            "pool_hash": self.pool.hash,
            "bank_before": ws.bank.hash,
            "bank_after": new_bank.hash,
            "episodes": [
                {"family": e.task.family, "variation": e.task.variation, "in_family": e.task.family == ws.family,
                 "before": b.score, "after": a.score}
                for e, b, a in zip(self._episodes, before, after)
            ],
        }

    # --- observation ---------------------------------------------------------------------------------------------
    def region_text(self) -> str:
        """The observation's ``region``: the listing, then the new region so far (sanitised, within the cap)."""
        return "" if self._ws is None else self._view.text(self._ws.emitted)

    def _obs(self) -> dict[str, Any]:
        ws = self._ws
        emitted, n_new, size = (0, 0, 0) if ws is None else (len(ws.emitted), ws.n_new, len(ws.entries))
        budget = np.array([max(self._calls_left, 0), self.config.max_emitted - n_new, emitted, size], dtype=np.int64)
        return {
            "region": self.region_text(),  # sanitised and fitted to the cap by the region view
            "result": sanitize(self._last_result, RESULT_CHARS),
            "budget": budget,
        }

    def _info(self) -> dict[str, Any]:
        ws = self._ws
        return {
            "region": [{**d, "provenance": [dict(p) for p in d["provenance"]], "tags": list(d["tags"])}
                       for d in self._region_dicts],
            "family": None if ws is None else ws.family,
            "last_error": self._last_error,
            "invalid_calls": self._invalid,
            "tool_calls_left": max(self._calls_left, 0),
            "emitted": [] if ws is None else [e.to_dict() for e in ws.emitted],
        }

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        obs = self._obs()
        return f"{obs['region']}\n--- last result ---\n{obs['result']}\n--- budget {obs['budget'].tolist()} ---\n"

    def tool_schema(self) -> str:
        return json.dumps(TOOLS, indent=1)

    def close(self) -> None:
        if self._evaluator is not None:
            self._evaluator.close()
            self._evaluator = None
        if self._store is not None:
            self._store.close()
            self._store = None
