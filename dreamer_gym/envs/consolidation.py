"""`ConsolidationEnv`: rewrite one working region of a memory bank through tool calls; the reward is
how a downstream agent then does on held-out episodes (see docs/env.md for the full contract)."""
from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from dreamer_gym.agents import check_agent_available
from dreamer_gym.envs.config import ConsolidationConfig
from dreamer_gym.contract.frozen import check_frozen
from dreamer_gym.envs.bank_context import context_dicts, render_context
from dreamer_gym.envs.observation import RegionView, entry_dict
from dreamer_gym.envs.spaces import ToolCallSpace, sanitize, text_space
from dreamer_gym.envs.tools import ToolError, Workspace, parse_action, tools_for
from dreamer_gym.errors import ConfigError, FrozenParameterError, RewardServiceError
from dreamer_gym.memory import MemoryBank, bank_at
from dreamer_gym.service import (
    CommitRequest,
    CommitResult,
    EpisodeTicket,
    PublicPool,
    RewardService,
    make_reward_service,
)
from dreamer_gym.store import Store
from dreamer_gym.suites.registry import check_available

REGION_CHARS = 32_768
RESULT_CHARS = 8_192
ACTION_CHARS = 16_384
RESET_OPTIONS: tuple[str, ...] = ("bank", "family", "region")


class ConsolidationEnv(gym.Env[dict[str, Any], str]):
    """One episode = one consolidation of one region; the contract is docs/env.md.

    Example:
        >>> env = gym.make("MemoryConsolidation-ScienceWorld-v1")
        >>> obs, info = env.reset(seed=0, options={"family": "grow-plant"})
        >>> obs, reward, terminated, truncated, info = env.step('{"tool": "commit"}')

    Change log (within ``-v0``; rewards and pool hashes unchanged): reset options are checked
    (``ConfigError``); a region listing over ``region_chars`` hides entries from its end instead of cutting
    the new region; ``info["region"]`` items carry ``tags``; ``action_space.sample()`` draws JSON tool calls.
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(self, render_mode: str | None = None, frozen: dict[str, Any] | None = None,
                 region_chars: int = REGION_CHARS, reward_service: RewardService | None = None,
                 extra_tools: Mapping[str, Callable[[dict[str, Any]], str]] | None = None, **kwargs: Any) -> None:
        """``frozen`` comes from registration: the values that define the registered id. gym.make merges
        user kwargs over the spec's, so an override shows up here as a value that differs from it.
        ``region_chars`` caps the observation's ``region`` text (it changes no reward). ``reward_service``:
        one built by the caller (a track's), which the env uses and does not close; by default the env
        builds ``config.service`` on first reset and closes it. ``extra_tools``: tool name -> handler of its
        arguments, returning the result text or raising ``ToolError`` (the PettingZoo env's board); a call
        to one costs a tool call like any other."""
        if render_mode not in (None, "ansi"):
            raise ValueError(f"Expected `render_mode` to be None or 'ansi', got {render_mode!r}")
        if isinstance(region_chars, bool) or not isinstance(region_chars, int) or region_chars < 1_000:
            raise ConfigError(f"Expected `region_chars` to be an int >= 1000, got {region_chars!r}")
        self.render_mode = render_mode
        self.region_chars = region_chars
        self._extra_tools = dict(extra_tools or {})
        try:
            self.config = ConsolidationConfig(**kwargs)
        except ConfigError:  # e.g. split="train": say first that the id does not allow changing it at all
            changed = [k for k, v in (frozen or {}).items() if k in kwargs and kwargs[k] != v]
            if changed:
                raise FrozenParameterError(
                    f"`{changed[0]}` is frozen at {frozen[changed[0]]!r} for this env id (got {kwargs[changed[0]]!r}); "  # type: ignore[index]
                    "it defines what the reward measures. For experiments construct dreamer_gym.envs.consolidation."
                    "ConsolidationEnv(...) directly; to share a setting, register a new id with gym.register."
                ) from None
            raise
        if frozen is not None:  # before anything loads: a changed reward field fails first, naming itself
            check_frozen(self.config, frozen)
        self.tools = tools_for(self.config.tool_contract)  # tool name -> prompt line: this id's tools
        clash = sorted(set(self._extra_tools) & set(self.tools))
        if clash:
            raise ConfigError(f"`extra_tools` may not redefine the env's tools {clash}")
        self._tool_names = (*self.tools, *self._extra_tools)
        # a simulator, browser, data, server or model stack missing: fail now, naming the fix, rather than at
        # the first commit, whose episodes could not run
        check_available(self.config.suite)
        check_agent_available(self.config.agent_config())
        self.observation_space = spaces.Dict(
            {
                "region": text_space(region_chars),
                "result": text_space(RESULT_CHARS),
                "budget": spaces.Box(0, self._budget_high(), shape=(4,), dtype=np.int64),
            }
        )
        self.action_space = ToolCallSpace(ACTION_CHARS)
        if reward_service is not None and reward_service.config != self.config:
            raise ConfigError("`reward_service` was built for another config; build it from this env's config")
        self._service: RewardService | None = reward_service
        self._owns_service = reward_service is None
        self._pool: PublicPool | None = None
        self._store: Store | None = None
        self._evidence_stored = False  # the pool's trajectories are in the store (written once per store)
        self._ws: Workspace | None = None
        self._view = RegionView("", [], region_chars)
        self._region_dicts: list[dict[str, Any]] = []
        self._bank_index = 0
        self._episode_seed = 0
        self._ticket: EpisodeTicket | None = None
        self._calls_left = 0
        self._last_result = ""
        self._last_error: str | None = None
        self._invalid = 0
        self._done = True
        self._pending: tuple[CommitRequest, str, float, bool, bool] | None = None

    @classmethod
    def experiment(cls, env_id: str, **overrides: Any) -> ConsolidationEnv:
        """An experiment on a registered id: its settings with ``overrides``, any field included. Not the id:
        where an override changes what the reward measures, commits say ``comparable: False`` (``gym.make``
        of the id itself refuses such overrides with ``FrozenParameterError``)."""
        from dreamer_gym.contract.ids import REGISTERED

        if env_id not in REGISTERED:
            raise ConfigError(f"Unknown env id {env_id!r}; registered: {sorted(REGISTERED)}")
        kwargs = {k: v for k, v in REGISTERED[env_id].items() if k != "frozen"}
        return cls(**{**kwargs, **overrides})

    def _budget_high(self) -> int:
        cfg = self.config
        return max(1_000_000, cfg.max_tool_calls, cfg.max_emitted, cfg.max_region_entries)

    # --- lazily built heavy parts -------------------------------------------------------------------------
    @property
    def service(self) -> RewardService:
        """The reward service (``config.service``, started on first use)."""
        if self._service is None:
            self._service = make_reward_service(self.config.service, self.config)
        return self._service

    @property
    def pool(self) -> PublicPool:
        """The banks and the TRAIN trajectories, as the service hands them out (no evaluation task text)."""
        if self._pool is None:
            self._pool = self.service.public_pool()
        return self._pool

    @property
    def store(self) -> Store:
        if self._store is None:
            self._store = Store(self.config.store_path)
        return self._store

    # --- gym API -------------------------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """``options``: ``{"bank": i, "region": key}``, both optional (``"family": name`` is the same as
        ``"region"`` on a pool cut by family); bad ones raise ``ConfigError``."""
        super().reset(seed=seed)
        pool, rng = self.pool, self.np_random
        bank_index, family = self._choose_region(options, rng)
        episode_seed = int(rng.integers(2**63 - 1))  # the service derives the evaluation draw from it
        ticket = self.service.open(bank_index, family, episode_seed)  # its token commits this episode, once
        bank = bank_at(pool.banks[bank_index], family)  # a window's: the bank when the window closed
        region = pool.region_scheme.select(bank, family, pool.trajectories, self.config.max_region_entries)
        if not self.store.has_bank(bank.hash):  # first use of this bank: store it with its evidence
            if not self._evidence_stored:  # once: every window of a bank is a bank of its own (16 ms a write)
                self.store.put_trajectories(pool.trajectories.values())
                self._evidence_stored = True
            self.store.put_bank(bank, meta={"pool": pool.hash, "index": bank_index})
        self._ws = Workspace(bank, region, pool.trajectories, family, self.config.max_emitted, self.config.max_entry_tokens,
                             contract=self.config.tool_contract, own_window_families=self.config.window_own_families,
                             suite=self.config.suite)
        self._view = RegionView(region.name, list(self._ws.entries.values()), self.region_chars,
                                context=render_context(self._ws.context) if self._ws.context else "")
        self._region_dicts = [entry_dict(e) for e in self._ws.entries.values()]
        self._bank_index = bank_index
        self._episode_seed, self._ticket = episode_seed, ticket
        self._calls_left = self.config.max_tool_calls
        self._last_result = "Region loaded. Inspect it, emit a compact replacement set, then commit."
        self._last_error = None
        self._invalid = 0
        self._done = False
        self._pending = None
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
        keys = self.pool.region_keys(int(index))  # a family pool: its families, sorted; a window pool: windows
        windows = self.pool.region_scheme.kind == "window"
        if options.get("family") is not None and options.get("region") is not None:
            raise ConfigError("Pass `options['region']` or `options['family']`, not both")
        if windows and options.get("family") is not None:
            raise ConfigError(f"This pool cuts its banks into time windows, not families: pass "
                              f"`options['region']`, one of {list(keys)}")
        name = "region" if options.get("region") is not None else "family"
        key = options.get(name)
        if key is None:
            key = keys[int(rng.integers(len(keys)))]
        elif key not in keys:
            raise ConfigError(f"Expected `options[{name!r}]` to be one of {list(keys)}, got {key!r}")
        return int(index), key

    def step(self, action: str):
        obs, reward, terminated, truncated, info = self.act(action)
        if self._pending is None:
            return obs, reward, terminated, truncated, info
        return self.settle(self.service.commit(self._pending[0]))

    # --- batched commits (a trainer scores a whole batch in one evaluation run) ---------------------------------
    def act(self, action: str):
        """:meth:`step` up to the commit: where this call commits (or runs out of calls) it returns with
        ``info["commit_pending"]`` True and :attr:`pending_commit` set, and scores nothing. The caller sends the
        pending requests of many envs to ``service.commit_many`` and hands each env its result through
        :meth:`settle`, which returns what :meth:`step` would have (same reward, same infos)."""
        if self._ws is None or self._done or self._pending is not None:
            raise RuntimeError("call reset() before step() (the episode is over)")
        self._calls_left -= 1
        reward, terminated, truncated = 0.0, False, False
        self._last_error = None
        try:
            call = parse_action(action, self._tool_names, self.config.tool_contract)
            if call.name == "commit":
                terminated = True
            elif call.name in self._extra_tools:
                self._last_result = self._extra_tools[call.name](call.args)
            else:
                self._last_result = getattr(self._ws, call.name)(call.args)
        except ToolError as exc:
            self._invalid += 1
            self._last_error = str(exc)
            self._last_result = f"ERROR: {exc}"
            reward -= self.config.invalid_penalty
        if not terminated and self._calls_left <= 0:
            truncated = True
        info = self._info()
        if terminated or truncated:
            ws = self._ws
            new_bank = self._store_new_bank(ws)
            token = self._ticket.token  # type: ignore[union-attr] - reset opened it
            request = CommitRequest(self._bank_index, ws.family, token, tuple(ws.emitted), self._invalid)
            self._pending = (request, new_bank.hash, float(reward), terminated, truncated)
            info["commit_pending"] = True
        return self._obs(), float(reward), terminated, truncated, info

    @property
    def region_ids(self) -> tuple[str, ...]:
        """The ids of the working region this episode replaces (() before the first reset)."""
        return () if self._ws is None else tuple(self._ws.region.entry_ids)

    @property
    def pending_commit(self) -> CommitRequest | None:
        """The commit :meth:`act` left for the caller to score, if any."""
        return None if self._pending is None else self._pending[0]

    def settle(self, result: CommitResult, expected_bank: str | None = None):
        """Finish the pending commit with the service's ``result`` for it: the ``(obs, reward, terminated,
        truncated, info)`` that :meth:`step` returns for the committing call. ``expected_bank``: the bank v1
        the result must name when it is not this env's own (a joint commit's, every agent's region replaced)."""
        if self._pending is None:
            raise RuntimeError("settle() finishes a commit that act() left pending; there is none")
        request, bank_hash, reward, terminated, truncated = self._pending
        bank_hash = expected_bank or bank_hash
        if result.bank_after != bank_hash:
            raise RewardServiceError(f"the reward service scored bank {result.bank_after}, not this commit's "
                                     f"{bank_hash}: the service and the env hold different pools (or the results "
                                     "of a batch went to the wrong envs)")
        self._pending = None
        self._done = True
        info = result.info
        if result.reward is None:
            self._last_result = f"Committed {len(request.emitted)} entries (the score of this track is withheld)."
        else:
            self._last_result = (
                f"Committed {len(request.emitted)} entries. Score {info['score_before']:.1f} -> {info['score_after']:.1f}; "
                f"region tokens {info['size_before']['tokens']} -> {info['size_after']['tokens']}."
            )
            reward += float(result.reward)
        out = self._info()
        out.update(info)
        return self._obs(), float(reward), terminated, truncated, out

    def _store_new_bank(self, ws: Workspace) -> MemoryBank:
        """Bank v1 = v0 without the region, plus the new region; stored as a new version (parent: v0)."""
        new_bank = ws.bank.replace(ws.region.entry_ids, ws.emitted)
        self.store.put_bank(new_bank, parent=ws.bank.hash, meta={"region": ws.region.name})
        return new_bank

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
            # which bank v0 the region comes from: GRPO groups and logs key on it (the hash names it exactly)
            "bank": None if ws is None else self._bank_index,
            "bank_hash": None if ws is None else ws.bank.hash,
            "last_error": self._last_error,
            "invalid_calls": self._invalid,
            "tool_calls_left": max(self._calls_left, 0),
            "emitted": [] if ws is None else [e.to_dict() for e in ws.emitted],
            # tool contract 2: per task of the region, what the bank holds of it outside the region
            **({"bank_context": context_dicts(ws.context)} if ws is not None and ws.sees_bank else {}),
        }

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        obs = self._obs()
        return f"{obs['region']}\n--- last result ---\n{obs['result']}\n--- budget {obs['budget'].tolist()} ---\n"

    def tool_schema(self) -> str:
        return json.dumps(self.tools, indent=1)

    def close(self) -> None:
        if self._service is not None and self._owns_service:
            self._service.close()
            self._service = None
            self._pool = None
        if self._store is not None:
            self._store.close()
            self._store = None
            self._evidence_stored = False
