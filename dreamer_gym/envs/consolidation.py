"""`ConsolidationEnv`: rewrite one working region of a memory bank through tool calls; the reward is
how a downstream agent then does on held-out episodes (see docs/env.md for the full contract)."""
from __future__ import annotations

import dataclasses
import json
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from dreamer_gym.agents import EpisodeResult
from dreamer_gym.envs.config import ConsolidationConfig
from dreamer_gym.envs.spaces import sanitize, text_space
from dreamer_gym.envs.tools import TOOLS, ToolError, Workspace, parse_action
from dreamer_gym.errors import FrozenParameterError
from dreamer_gym.evaluation import EvalEpisode, Evaluator
from dreamer_gym.memory import count_tokens, select_by_family
from dreamer_gym.pool import BankPool, load_or_build_pool
from dreamer_gym.store import Store
from dreamer_gym.suites.availability import check_available
from dreamer_gym.suites.base import EpisodeTask

REGION_CHARS = 32_768
RESULT_CHARS = 8_192
ACTION_CHARS = 16_384


def _mean(results: list[EpisodeResult]) -> float:
    return float(np.mean([r.score for r in results])) if results else 0.0


class ConsolidationEnv(gym.Env[dict[str, Any], str]):
    """One episode = one consolidation of one region; see the module docstring."""

    metadata = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(self, render_mode: str | None = None, frozen: dict[str, Any] | None = None, **kwargs: Any) -> None:
        """``frozen`` comes from registration: the values that define the registered id. gym.make merges
        user kwargs over the spec's, so an override shows up here as a value that differs from it."""
        if render_mode not in (None, "ansi"):
            raise ValueError(f"Expected `render_mode` to be None or 'ansi', got {render_mode!r}")
        for name, value in (frozen or {}).items():
            if kwargs.get(name, value) != value:
                raise FrozenParameterError(
                    f"`{name}` is frozen at {value!r} for this env id (got {kwargs[name]!r}); it defines what "
                    "the reward measures. Use a leaderboard track for other splits, or ConsolidationEnv(...) "
                    "directly for experiments."
                )
        self.render_mode = render_mode
        self.config = ConsolidationConfig(**kwargs)
        check_available(self.config.suite)  # official data or servers missing: fail now, naming the fix
        self.observation_space = spaces.Dict(
            {
                "region": text_space(REGION_CHARS),
                "result": text_space(RESULT_CHARS),
                "budget": spaces.Box(0, self._budget_high(), shape=(4,), dtype=np.int64),
            }
        )
        self.action_space = text_space(ACTION_CHARS)
        self._pool: BankPool | None = None
        self._store: Store | None = None
        self._evaluator: Evaluator | None = None
        self._ws: Workspace | None = None
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
                cfg.suite, cfg.agent_config(), self.store, cfg.workers
            )
        return self._evaluator

    # --- gym API -------------------------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        options = options or {}
        pool, rng = self.pool, self.np_random
        bank_index = int(options.get("bank", rng.integers(len(pool.banks))))
        bank = pool.banks[bank_index]
        families = sorted({e.family for e in bank})
        family = options.get("family") or families[int(rng.integers(len(families)))]
        if family not in families:
            raise ValueError(f"Expected `options['family']` to be one of {families}, got {family!r}")
        region = select_by_family(bank, family, self.config.max_region_entries)
        if not self.store.has_bank(bank.hash):  # first use of this bank: store it with its evidence
            self.store.put_trajectories(pool.trajectories.values())
            self.store.put_bank(bank, meta={"pool": pool.hash, "index": bank_index})
        self._ws = Workspace(bank, region, pool.trajectories, family, self.config.max_emitted, self.config.max_entry_tokens)
        self._render_region()
        self._episodes = self._draw_episodes(family, rng)
        self._calls_left = self.config.max_tool_calls
        self._last_result = "Region loaded. Inspect it, emit a compact replacement set, then commit."
        self._last_error = None
        self._invalid = 0
        self._done = False
        return self._obs(), self._info()

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
            commit_info = self._commit()
            reward += commit_info["reward_components"]["score_delta"] + commit_info["reward_components"]["size"]
            self._done = True
        info = self._info()
        info.update(commit_info)
        return self._obs(), float(reward), terminated, truncated, info

    def _commit(self) -> dict[str, Any]:
        ws = self._ws
        assert ws is not None  # noqa: S101 - internal invariant, checked by step()
        new_bank = ws.bank.replace(ws.region.entry_ids, ws.emitted)
        self.store.put_bank(new_bank, parent=ws.bank.hash, meta={"region": ws.region.name})
        before = self.evaluator.evaluate(ws.bank, self._episodes)
        after = before if new_bank == ws.bank else self.evaluator.evaluate(new_bank, self._episodes)
        tokens_before = sum(count_tokens(ws.bank.get(i).text) for i in ws.region.entry_ids)  # type: ignore[union-attr]
        tokens_after = sum(count_tokens(e.text) for e in ws.emitted)
        score_before, score_after = _mean(before), _mean(after)
        size = -self.config.size_coef * (tokens_after - tokens_before) / max(tokens_before, 1)
        self._last_result = (
            f"Committed {len(ws.emitted)} entries. Score {score_before:.1f} -> {score_after:.1f}; "
            f"region tokens {tokens_before} -> {tokens_after}."
        )
        return {
            "score_before": score_before,
            "score_after": score_after,
            "success_before": float(np.mean([r.success for r in before])) if before else 0.0,
            "success_after": float(np.mean([r.success for r in after])) if after else 0.0,
            "size_before": {"entries": len(ws.region.entry_ids), "tokens": tokens_before},
            "size_after": {"entries": len(ws.emitted), "tokens": tokens_after},
            "reward_components": {"score_delta": (score_after - score_before) / 100.0, "size": size},
            "episode_errors": [r.error for r in (*before, *after) if r.error],
            "reward_agent": dataclasses.asdict(self.evaluator.agent_config),  # incl. the LLM, never a key
            # what the score was measured on; "alfworld-gen" games are generated, never the official splits
            "suite": self.config.suite,
            "pool_hash": self.pool.hash,
            "bank_before": ws.bank.hash,
            "bank_after": new_bank.hash,
            "episodes": [
                {"family": e.task.family, "variation": e.task.variation, "before": b.score, "after": a.score}
                for e, b, a in zip(self._episodes, before, after)
            ],
        }

    # --- observation ---------------------------------------------------------------------------------------------
    def _render_region(self) -> None:
        """Render the read-only part once per reset (it cannot change during the episode)."""
        ws = self._ws
        assert ws is not None  # noqa: S101 - called from reset()
        lines = [f"Region {ws.region.name}: {len(ws.entries)} entries (read-only evidence)"]
        for entry in ws.entries.values():
            prov = ", ".join(f"{p.trajectory_id}[{p.start}-{p.end}]" for p in entry.provenance)
            lines.append(f"{entry.id} ({entry.kind}, session {entry.session}) {entry.text}  <- {prov}")
        self._region_head = sanitize("\n".join(lines), REGION_CHARS)
        self._region_dicts = [
            {"id": e.id, "kind": e.kind, "text": e.text, "provenance": [p.to_dict() for p in e.provenance],
             "session": e.session}
            for e in ws.entries.values()
        ]

    def region_text(self) -> str:
        ws = self._ws
        if ws is None:
            return ""
        lines = [self._region_head, f"New region so far ({len(ws.emitted)}):"]
        lines += [f"  #{i} {e.id} ({e.kind}) {e.text}" for i, e in enumerate(ws.emitted)]
        return "\n".join(lines)

    def _obs(self) -> dict[str, Any]:
        ws = self._ws
        emitted = 0 if ws is None else len(ws.emitted)
        budget = np.array(
            [max(self._calls_left, 0), self.config.max_emitted - (0 if ws is None else ws.n_new), emitted, 0 if ws is None else len(ws.entries)],
            dtype=np.int64,
        )
        return {
            "region": sanitize(self.region_text(), REGION_CHARS),
            "result": sanitize(self._last_result, RESULT_CHARS),
            "budget": budget,
        }

    def _info(self) -> dict[str, Any]:
        ws = self._ws
        return {
            "region": [] if ws is None else [dict(d) for d in self._region_dicts],
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
