"""The referee: everything privileged about the reward, in whichever process hosts the service.

It holds the full bank pool (evaluation task texts, TRAIN gold paths), the evaluator with its simulator
and downstream agent, the evaluation cache and the episode tickets. It opens each episode (a ticket
whose token a commit must carry once; :mod:`~dreamer_gym.service.tickets`), draws the episodes from the
seed it derived at ``open``, rebuilds bank v1 from its own copy of bank v0, checks the new region against the limits, scores it with
:func:`~dreamer_gym.contract.reward.reward_from_results` (each agent's size term of a joint commit with
:func:`~dreamer_gym.contract.reward.size_term`) and answers with what the id's rules let the
policy see. In a track (``withhold=True``) it answers with no score at all and keeps the results in a
ledger that only :meth:`finish` hands out, once, after which it refuses commits; each region opens once.
"""
from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Collection
from typing import Any

import numpy as np

from dreamer_gym.agents import EpisodeResult
from dreamer_gym.contract.config import ConsolidationConfig
from dreamer_gym.contract.definition import CHARS_PER_TOKEN
from dreamer_gym.contract.filing import filing_families
from dreamer_gym.contract.frozen import budgets, comparable_id, reward_definition
from dreamer_gym.contract.reward import reward_from_results, size_term
from dreamer_gym.errors import EvaluationFailed, RewardServiceError
from dreamer_gym.evaluation import EvalEpisode, Evaluator
from dreamer_gym.memory import (
    MemoryBank,
    MemoryEntry,
    Region,
    bank_at,
    count_tokens,
    parse_window,
    region_task_mix,
)
from dreamer_gym.pool import BankPool, load_or_build_pool
from dreamer_gym.service.messages import CommitRequest, CommitResult, EpisodeTicket, PublicPool
from dreamer_gym.service.tickets import TicketBook
from dreamer_gym.store import Store
from dreamer_gym.suites.base import EpisodeTask


def draw_episodes(pool: BankPool, family: str, split: str, in_family: int, other: int,
                  rng: np.random.Generator) -> list[EvalEpisode]:
    """``in_family`` distinct variations of ``family`` and ``other`` episodes of other families (each drawn
    family first, then a variation of it), from ``rng``."""
    own = list(pool.variations(family, split))
    picks = [own[i] for i in sorted(rng.choice(len(own), size=min(in_family, len(own)), replace=False))]
    episodes = [EvalEpisode(EpisodeTask(family, v), pool.description(EpisodeTask(family, v), split)) for v in picks]
    return episodes + other_episodes(pool, {family}, split, other, rng)


def other_episodes(pool: BankPool, own: Collection[str], split: str, n: int,
                   rng: np.random.Generator) -> list[EvalEpisode]:
    """``n`` episodes of families not in ``own`` (each drawn family first, then a variation of it): the
    draws that punish an entry hijacking retrieval for other tasks."""
    others = [f for f in pool.families if f not in own]
    episodes = []
    for _ in range(n if others else 0):
        fam = others[int(rng.integers(len(others)))]
        vs = pool.variations(fam, split)
        task = EpisodeTask(fam, vs[int(rng.integers(len(vs)))])
        episodes.append(EvalEpisode(task, pool.description(task, split)))
    return episodes


def allocate(mix: dict[str, int], n: int, rng: np.random.Generator) -> list[str]:
    """``n`` families in proportion to ``mix`` by systematic sampling: each family gets the floor or the
    ceiling of its expected count (far less variance than ``n`` independent draws), one uniform draw."""
    families = sorted(f for f, w in mix.items() if w > 0)
    if not families or n < 1:
        return []
    bounds = np.cumsum([mix[f] for f in families]) / sum(mix[f] for f in families)
    points = (rng.random() + np.arange(n)) / n
    return [families[min(int(np.searchsorted(bounds, p, side="right")), len(families) - 1)] for p in points]


def draw_window_episodes(pool: BankPool, mix: dict[str, int], split: str, in_region: int, other: int,
                         rng: np.random.Generator) -> list[EvalEpisode]:
    """A window region's evaluation draw: ``in_region`` episodes of the region's tasks, in the proportions
    the agent met them (``mix``: family -> episodes; :func:`allocate`), distinct variations within a family
    while they last; then ``other`` episodes of families the window does not hold, as :func:`draw_episodes`."""
    counts = Counter(allocate(mix, in_region, rng))
    episodes = []
    for family in sorted(counts):
        own = list(pool.variations(family, split))
        order = [own[i] for i in rng.permutation(len(own))]
        for k in range(counts[family]):
            task = EpisodeTask(family, order[k % len(order)])
            episodes.append(EvalEpisode(task, pool.description(task, split)))
    return episodes + other_episodes(pool, set(mix), split, other, rng)


def require_complete(before: list[EpisodeResult], after: list[EpisodeResult]) -> None:
    """Raise :class:`EvaluationFailed` when any episode of a commit did not run: a reward computed from them
    would be the size term plus zeros, a number that looks like a measurement. Each reason is named once."""
    results = [*before, *after]
    errors = [r.error for r in results if r.error]
    if not errors:
        return
    reasons = tuple(dict.fromkeys(errors))
    more = f" (and {len(reasons) - 1} other reason(s))" if len(reasons) > 1 else ""
    raise EvaluationFailed(
        f"{len(errors)} of {len(results)} evaluation episodes did not run, so this commit has no reward: "
        f"{reasons[0]}{more}. Fix the cause (a missing extra, a dead simulator, an LLM backend that times out: see "
        "`errors`) and reset; nothing was scored", reasons)


def _success(results: list[EpisodeResult]) -> float:
    return float(np.mean([r.success for r in results])) if results else 0.0


class Referee:
    """Scores commits for one reward definition (``config``); see the module docstring."""

    def __init__(self, config: ConsolidationConfig, withhold: bool = False,
                 episode_secret: str | bytes | None = None) -> None:
        self.config = config
        self.withhold = withhold
        self._tickets = TicketBook(episode_secret, withhold)
        self._pool: BankPool | None = None
        self._store: Store | None = None
        self._evaluator: Evaluator | None = None
        self._ledger: list[dict[str, Any]] = []
        self._snapshot_cache: dict[tuple[int, str], MemoryBank] = {}  # (bank, window) -> bank_at
        self._sealed = False
        self._comparable_id = comparable_id(config)

    @property
    def pool(self) -> BankPool:
        if self._pool is None:
            self._pool = load_or_build_pool(self.config.pool, self.config.suite, self.config.pool_hash)
        return self._pool

    @property
    def evaluator(self) -> Evaluator:
        if self._evaluator is None:
            cfg = self.config
            self._store = Store(cfg.store_path)
            self._evaluator = Evaluator(cfg.suite, cfg.agent_config(), self._store, cfg.workers, executor=cfg.executor,
                                        executor_options=cfg.executor_options(), progress=cfg.progress)
        return self._evaluator

    # --- requests ----------------------------------------------------------------------------------------------
    def public_pool(self) -> PublicPool:
        pool = self.pool
        return PublicPool(pool.suite, pool.hash, pool.families, pool.banks, dict(pool.trajectories), pool.region_scheme)

    def open(self, bank_index: int, family: str, seed: int) -> EpisodeTicket:
        """Start an episode on region (``bank_index``, ``family``) whose evaluation draw comes from reset
        ``seed``: the ticket whose token its commit carries. A track opens each region once."""
        self._refuse_if_sealed()
        old = self._bank(bank_index, family)
        if not isinstance(family, str) or not self._region(old, family).entry_ids:
            raise RewardServiceError(f"open: bank {bank_index} has no region {family!r} (no entries of that family, "
                                     "or of that window of sessions)")
        return self._tickets.open(int(bank_index), family, seed)

    def reopen(self, tickets: list[tuple[str, int, str, int]]) -> None:
        """Re-issue the live tickets of a service that died (token, bank, family, reset seed), so its requests
        replay; only a service that pays per commit restarts (a track's raises instead)."""
        if self.withhold:
            raise RewardServiceError("a track's reward service does not restart, so it re-opens nothing")
        for token, bank_index, family, seed in tickets:
            self._tickets.open(bank_index, family, seed, token=token)

    def commit(self, request: CommitRequest) -> CommitResult:
        return self.commit_many([request])[0]

    def commit_many(self, requests: list[CommitRequest]) -> list[CommitResult]:
        """Score several commits with ONE evaluation run (their episodes play side by side on the workers;
        what two of them share, such as a GRPO group's bank v0, plays once). Same results as one
        :meth:`commit` after another."""
        self._refuse_if_sealed()
        requests = _checked(requests)
        prepared = [self._prepare(r) for r in requests]
        self._tickets.spend([r.token for r in requests])
        jobs = [job for old, new, _, episodes in prepared for job in ((old, episodes), (new, episodes))]
        played = self.evaluator.evaluate_many(jobs)
        for i in range(len(requests)):
            require_complete(played[2 * i], played[2 * i + 1])
        return [self._score(request, *p, played[2 * i], played[2 * i + 1])
                for i, (request, p) in enumerate(zip(requests, prepared))]

    def commit_joint(self, requests: list[CommitRequest]) -> list[CommitResult]:
        """Several agents' commits on disjoint regions (distinct families) of ONE bank, scored as one bank v1:
        every region replaced at once, played on the union of the regions' episode draws. Each agent's reward
        is the shared score change of the joint bank (the agents' families pay in full, other families only
        cost, as in :meth:`commit`) plus its own region's size term. The PettingZoo env's reward."""
        self._refuse_if_sealed()
        if self.withhold:
            raise RewardServiceError("a joint commit pays per commit; a withholding (track) service does not")
        requests = _checked(requests)
        if not requests:
            raise RewardServiceError("a joint commit needs at least one request")
        if len({r.bank_index for r in requests}) != 1:
            raise RewardServiceError(f"a joint commit is on one bank, got banks {sorted({r.bank_index for r in requests})}")
        if any(parse_window(r.family) is not None for r in requests):
            raise RewardServiceError("a joint commit's regions are families; window regions overlap, so each "
                                     "commits on its own")
        if len({r.family for r in requests}) != len(requests):
            raise RewardServiceError(f"a joint commit's regions must be disjoint (one family each), got "
                                     f"{[r.family for r in requests]}")
        prepared = [self._prepare(r) for r in requests]
        self._tickets.spend([r.token for r in requests])
        old = prepared[0][0]
        new = old.replace(tuple(i for _, _, ids, _ in prepared for i in ids),
                          tuple(e for r in requests for e in r.emitted))
        episodes = [e for _, _, _, eps in prepared for e in eps]
        before, after = self.evaluator.evaluate_many([(old, episodes), (new, episodes)])
        after = before if new == old else after
        require_complete(before, after)
        families = {r.family for r in requests}
        in_family = [e.task.family in families for e in episodes]
        cfg = self.config
        tokens = [(sum(count_tokens(old.get(i).text) for i in ids),  # type: ignore[union-attr]
                   sum(count_tokens(e.text) for e in r.emitted)) for r, (_, _, ids, _) in zip(requests, prepared)]
        shared = reward_from_results(before, after, sum(t[0] for t in tokens), sum(t[1] for t in tokens),
                                     cfg.size_coef, in_family)
        joint = {
            "bank_before": old.hash, "bank_after": new.hash, "score_before": shared.score_before,
            "score_after": shared.score_after, "success_before": _success(before), "success_after": _success(after),
            "score_delta_parts": shared.score_delta_parts(), "families": [r.family for r in requests],
            "episode_errors": [r.error for r in (*before, *after) if r.error],
            "reward_definition": reward_definition(cfg), "env_id": self._comparable_id, "suite": cfg.suite,
            "pool_hash": self.pool.hash,
        }
        out = []
        for request, (ids, (t_before, t_after)) in zip(requests, zip((p[2] for p in prepared), tokens)):
            size = size_term(t_before, t_after, cfg.size_coef)
            out.append(CommitResult(new.hash, shared.score_delta + size, {
                **joint,
                "reward_components": {"shared_score_delta": shared.score_delta, "size": size},
                "size_before": {"entries": len(ids), "tokens": t_before},
                "size_after": {"entries": len(request.emitted), "tokens": t_after},
            }))
        return out

    def _prepare(self, request: CommitRequest) -> tuple[MemoryBank, MemoryBank, tuple[str, ...], list[EvalEpisode]]:
        """Bank v0 and v1, the region's ids and the evaluation episodes of one commit (checked)."""
        cfg, pool = self.config, self.pool
        old = self._bank(request.bank_index, request.family)
        seed = self._tickets.check(request.bank_index, request.family, request.token)
        region = self._region(old, request.family)
        if not region.entry_ids:
            raise RewardServiceError(f"bank {request.bank_index} has no region {request.family!r}")
        self._check_region(old, region, request)
        new = old.replace(region.entry_ids, request.emitted)
        rng = np.random.default_rng(seed)
        if parse_window(request.family) is None:
            episodes = draw_episodes(pool, request.family, cfg.split, cfg.eval_in_family, cfg.eval_other, rng)
        else:
            episodes = draw_window_episodes(pool, self._task_mix(old, region), cfg.split, cfg.eval_in_family,
                                            cfg.eval_other, rng)
        return old, new, region.entry_ids, episodes

    def _task_mix(self, bank: MemoryBank, region: Region) -> dict[str, int]:
        """The region's tasks the evaluation can play (a family without DEV/TEST variations in this pool
        is left out), in the proportions the agent met them."""
        return {f: n for f, n in region_task_mix(bank, region).items()
                if self.pool.variations(f, self.config.split)}

    def _region_families(self, request: CommitRequest) -> frozenset[str]:
        """The families whose episodes count as the region's own (``in_family`` of the reward rule)."""
        if parse_window(request.family) is None:
            return frozenset({request.family})
        old = self._bank(request.bank_index, request.family)
        return frozenset(self._task_mix(old, self._region(old, request.family)))

    def _score(self, request: CommitRequest, old: MemoryBank, new: MemoryBank, region_ids: tuple[str, ...],
               episodes: list[EvalEpisode], before: list[EpisodeResult], after: list[EpisodeResult]) -> CommitResult:
        cfg, pool = self.config, self.pool
        after = before if new == old else after
        tokens = (sum(count_tokens(old.get(i).text) for i in region_ids),  # type: ignore[union-attr]
                  sum(count_tokens(e.text) for e in request.emitted))
        own = self._region_families(request)
        in_family = [e.task.family in own for e in episodes]
        reward = reward_from_results(before, after, tokens[0], tokens[1], cfg.size_coef, in_family)
        sizes = {"size_before": {"entries": len(region_ids), "tokens": tokens[0]},
                 "size_after": {"entries": len(request.emitted), "tokens": tokens[1]}}
        common = {
            **sizes,
            "reward_definition": reward_definition(cfg),
            "budgets": budgets(cfg),
            "env_id": self._comparable_id,
            "comparable": self._comparable_id is not None,
            "reward_agent": dataclasses.asdict(self.evaluator.agent_config),  # incl. the LLM, never a key
            # what the score was measured on; "alfworld-gen" games are generated, never the official splits
            "suite": cfg.suite,
            "pool_hash": pool.hash,
            "bank_before": old.hash,
            "bank_after": new.hash,
        }
        if self.withhold:
            self._ledger.append({
                "bank_index": request.bank_index, "family": request.family, "invalid_calls": request.invalid_calls,
                "score_before": reward.score_before, "score_after": reward.score_after,
                "reward": reward.total - cfg.invalid_penalty * request.invalid_calls,
                "reward_components": reward.components(), "score_delta_parts": reward.score_delta_parts(),
                "episodes": [{"family": e.task.family, "variation": e.task.variation, "in_family": f,
                              "before": b.score, "after": a.score}
                             for e, f, b, a in zip(episodes, in_family, before, after)],
                "episode_errors": [r.error for r in (*before, *after) if r.error], **sizes,
            })
            return CommitResult(new.hash, None, {**common, "reward_withheld": True})
        info = {
            **common,
            "score_before": reward.score_before,
            "score_after": reward.score_after,
            "success_before": _success(before),
            "success_after": _success(after),
            "reward_components": reward.components(),
            "score_delta_parts": reward.score_delta_parts(),
            "episode_errors": [r.error for r in (*before, *after) if r.error],
            "episodes": [{"family": e.task.family, "variation": e.task.variation, "in_family": f,
                          "before": b.score, "after": a.score}
                         for e, f, b, a in zip(episodes, in_family, before, after)],
        }
        return CommitResult(new.hash, reward.total, info)

    def finish(self) -> list[dict[str, Any]]:
        """The ledger of a withheld (track) run, once; the referee takes no commits afterwards."""
        if not self.withhold:
            raise RewardServiceError("finish() hands out a track's ledger; this service pays rewards per commit")
        if self._sealed:
            raise RewardServiceError("finish() was called already: a track's ledger is handed out once")
        self._sealed = True
        ledger, self._ledger = self._ledger, []
        return ledger

    def stats(self) -> dict[str, int]:
        """Evaluation-cache hits and misses, worker restarts, failures (no task content)."""
        s = self.evaluator.stats
        return {"hits": s.hits, "misses": s.misses, "worker_restarts": s.worker_restarts, "failures": s.failures}

    def worker_pids(self) -> list[int]:
        return [] if self._evaluator is None else self._evaluator.worker_pids()

    def close(self) -> None:
        if self._evaluator is not None:
            self._evaluator.close()
            self._evaluator = None
        if self._store is not None:
            self._store.close()
            self._store = None

    # --- checks ---------------------------------------------------------------------------------------------------
    def _refuse_if_sealed(self) -> None:
        if self._sealed:
            raise RewardServiceError("this track's results were handed out (finish()); it takes no more commits")

    def _bank(self, index: int, key: str | None = None) -> MemoryBank:
        """Bank v0 of a commit on region ``key`` (a window's: the bank when the window closed, ``bank_at``)."""
        banks = self.pool.banks
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not 0 <= index < len(banks):
            raise RewardServiceError(f"`bank_index` must be an int in [0, {len(banks) - 1}], got {index!r}")
        return banks[int(index)] if not isinstance(key, str) else self._snapshots(int(index), key)

    def _region(self, bank: MemoryBank, key: str) -> Region:
        """Region ``key`` of bank v0 ``bank`` under the pool's scheme (a window's retrieved entries included)."""
        return self.pool.region_scheme.select(bank, key, self.pool.trajectories, self.config.max_region_entries)

    def _snapshots(self, index: int, key: str) -> MemoryBank:
        """:func:`bank_at`, kept per (bank, window): rebuilding a bank hashes every entry id again."""
        if parse_window(key) is None:
            return self.pool.banks[index]
        if (index, key) not in self._snapshot_cache:
            self._snapshot_cache[(index, key)] = bank_at(self.pool.banks[index], key)
        return self._snapshot_cache[(index, key)]

    def _check_region(self, old: MemoryBank, region: Region, request: CommitRequest) -> None:
        """The env's tools enforce these limits; the referee checks them again on what it is asked to score."""
        cfg, ids, region_ids = self.config, set(), set(region.entry_ids)
        # a window region mixes tasks: the families a new entry may be filed under (contract.filing)
        families = filing_families(old, request.family, region, cfg.window_own_families)
        new = 0
        for e in request.emitted:
            if not isinstance(e, MemoryEntry):
                raise RewardServiceError(f"emitted items must be MemoryEntry objects, got {type(e).__name__}")
            _check_entry(e)
            if e.id in ids:
                raise RewardServiceError(f"entry {e.id} is emitted twice")
            ids.add(e.id)
            if e.id in region_ids:
                if e != old.get(e.id):
                    raise RewardServiceError(f"kept entry {e.id} differs from the region's")
                continue
            new += 1
            if e.family not in families:
                own = " its own sessions played" if cfg.window_own_families and parse_window(request.family) else ""
                raise RewardServiceError(f"new entry {e.id} is of family {e.family!r}, not one of the families "
                                         f"region {request.family!r}{own}: {sorted(families)}")
            if count_tokens(e.text) > cfg.max_entry_tokens or len(e.text) > cfg.max_entry_tokens * CHARS_PER_TOKEN:
                raise RewardServiceError(f"new entry {e.id} is over max_entry_tokens={cfg.max_entry_tokens}")
        if new > cfg.max_emitted:
            raise RewardServiceError(f"{new} new entries; max_emitted is {cfg.max_emitted}")


def _checked(requests: object) -> list[CommitRequest]:
    """A batch as a list of :class:`CommitRequest` (a request from another process may be anything)."""
    if not isinstance(requests, (list, tuple)) or not all(isinstance(r, CommitRequest) for r in requests):
        raise RewardServiceError(f"expected a list of CommitRequest, got {type(requests).__name__}")
    return list(requests)


def _check_entry(entry: MemoryEntry) -> None:
    """An entry as its constructor would build it: an unpickled one may carry any id or field types."""
    try:
        fields_ok = all(isinstance(x, str) for x in (entry.kind, entry.text, entry.family, *entry.tags))
        rebuilt = MemoryEntry.from_dict(entry.to_dict()) if fields_ok else None
    except (AttributeError, KeyError, TypeError, ValueError):
        rebuilt = None
    if rebuilt is None or rebuilt != entry or rebuilt.id != entry.id:
        raise RewardServiceError(f"entry {getattr(entry, 'id', '?')!r} is not what MemoryEntry builds from its fields "
                                 "(a forged id or field type); emit entries through the env's tools")
