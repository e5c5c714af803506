"""`check_service`: does a reward service keep the contract the env, the vector envs and the tracks rely on?

A :class:`~dreamer_gym.service.services.RewardService` hands out the public pool, opens episodes (a ticket
per reset) and scores commits. What the rest of the package relies on, checked here on real commits: the
public pool names the config's suite and pool; a commit that keeps its region as it was pays exactly 0.0
(nothing changed, nothing is played twice); the same region and reset seed give the same result, alone or
in ``commit_many``; a commit is refused (:class:`~dreamer_gym.errors.RewardServiceError`) without a live
token, with a used one or with another region's, and so is an ``open`` or a commit naming no bank or no
region, and the service still answers; a withholding (track) service pays ``None``, opens each region once,
hands its ledger out once, one record per commit, then refuses commits; a service whose episodes cannot run
raises :class:`~dreamer_gym.errors.EvaluationFailed` with the reasons instead of paying. Failures raise
:class:`ServiceCheckError` naming the property and what came. The check does not close the service.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dreamer_gym.errors import DreamerGymError, EvaluationFailed, RewardServiceError
from dreamer_gym.memory import MemoryBank, select_by_family
from dreamer_gym.service import CommitRequest, CommitResult, EpisodeTicket, PublicPool

MEMBERS = ("config", "withhold", "public_pool", "open", "commit", "commit_many", "commit_joint", "finish", "stats",
           "close")


class ServiceCheckError(DreamerGymError, AssertionError):
    """A reward service breaks the contract; the message names the service, the property and what came."""


@dataclass
class ServiceReport:
    """What :func:`check_service` checked: ``passed`` property names; ``rewards`` what the commits paid."""

    name: str
    passed: list[str] = field(default_factory=list)
    rewards: dict[str, float | None] = field(default_factory=dict)


class _Checker:
    def __init__(self, service: Any, report: ServiceReport) -> None:
        self.service, self.report = service, report

    def fail(self, prop: str, message: str) -> ServiceCheckError:
        return ServiceCheckError(f"service {self.report.name!r}, {prop}: {message}")

    def call(self, prop: str, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return fn(*args)
        except Exception as exc:  # noqa: BLE001 - reported with the property that raised
            raise self.fail(prop, f"raised {type(exc).__name__}: {exc}") from exc

    def raises(self, prop: str, error: type[Exception], fn: Callable[..., Any], *args: Any) -> Exception:
        try:
            fn(*args)
        except error as exc:
            return exc
        except Exception as exc:  # noqa: BLE001
            raise self.fail(prop, f"expected {error.__name__}, got {type(exc).__name__}: {exc}") from exc
        raise self.fail(prop, f"expected {error.__name__}, nothing was raised")

    def public_pool(self) -> PublicPool:
        pool = self.call("public_pool()", self.service.public_pool)
        config = self.service.config
        if not isinstance(pool, PublicPool) or pool.suite != config.suite:
            raise self.fail("public_pool()", f"expected a PublicPool of suite {config.suite!r}, got {pool!r:.200}")
        if config.pool_hash is not None and pool.hash != config.pool_hash:
            raise self.fail("public_pool()", f"the pool hash is {pool.hash}, the config pins {config.pool_hash}")
        if not pool.banks or not all(isinstance(b, MemoryBank) for b in pool.banks) or not pool.families:
            raise self.fail("public_pool()", "expected banks (MemoryBank) and families")
        self.report.passed.append("public pool")
        return pool

    def result(self, prop: str, result: Any, bank: MemoryBank, changed: bool) -> CommitResult:
        if not isinstance(result, CommitResult) or not isinstance(result.info, dict):
            raise self.fail(prop, f"expected a CommitResult, got {result!r:.200}")
        if (result.bank_after != bank.hash) == (not changed):
            raise self.fail(prop, f"bank_after {result.bank_after} {'equals' if not changed else 'differs from'} "
                                  f"bank v0 ({bank.hash}) for a commit that {'changed' if changed else 'kept'} the region")
        if self.service.withhold:
            if result.reward is not None:
                raise self.fail(prop, f"a withholding (track) service must pay None, paid {result.reward!r}")
        elif not isinstance(result.reward, float) or not math.isfinite(result.reward):
            raise self.fail(prop, f"expected a finite float reward, got {result.reward!r}")
        self.report.rewards[prop] = result.reward
        return result

    def request(self, family: str, emitted: tuple[Any, ...], seed: int, bank_index: int = 0) -> CommitRequest:
        """A commit of ``emitted`` on (``bank_index``, ``family``) with a fresh ticket (``open`` at ``seed``)."""
        prop = f"open({bank_index}, {family!r}, {seed})"
        ticket = self.call(prop, self.service.open, bank_index, family, seed)
        if not isinstance(ticket, EpisodeTicket) or (ticket.bank_index, ticket.family) != (bank_index, family):
            raise self.fail(prop, f"expected an EpisodeTicket for bank {bank_index}, family {family!r}, got {ticket!r:.200}")
        return CommitRequest(bank_index, family, ticket.token, emitted)


def _regions(pool: PublicPool, max_region_entries: int) -> tuple[MemoryBank, list[tuple[str, tuple[Any, ...]]]]:
    """Bank 0 and its first two regions (family, entries)."""
    bank = pool.banks[0]
    regions = [(f, tuple(bank.get(i) for i in select_by_family(bank, f, max_region_entries).entry_ids))
               for f in pool.families]
    regions = [(f, entries) for f, entries in regions if entries]
    if len(regions) < 2:
        raise ServiceCheckError(f"bank 0 of pool {pool.hash} has {len(regions)} region(s); the check needs two")
    return bank, regions[:2]


def _failing(checker: _Checker, family: str, kept: tuple[Any, ...], seed: int) -> None:
    for prop, fn, args in (("commit(keep-all) whose episodes fail", checker.service.commit,
                            checker.request(family, kept, seed)),
                           ("commit_many whose episodes fail", checker.service.commit_many,
                            [checker.request(family, kept, seed), checker.request(family, (), seed)])):
        exc = checker.raises(prop, EvaluationFailed, fn, args)
        errors = getattr(exc, "errors", None)
        if not isinstance(errors, tuple) or not errors or not all(isinstance(e, str) and e for e in errors):
            raise checker.fail(prop, f"EvaluationFailed must carry the reasons in `errors`, got {errors!r}")
    checker.call("public_pool() after a failed evaluation", checker.service.public_pool)
    checker.report.passed.append("failed evaluation raises EvaluationFailed")


def _refusals(checker: _Checker, pool: PublicPool, regions: list[tuple[str, tuple[Any, ...]]], used: CommitRequest,
              seed: int) -> None:
    """Requests the service must refuse, and it still answers afterwards."""
    service, family, other = checker.service, regions[0][0], regions[1][0]
    checker.raises("commit with a used token", RewardServiceError, service.commit, used)
    checker.raises("commit with no token", RewardServiceError, service.commit, CommitRequest(0, family, "", ()))
    if not service.withhold:  # a track opens `other` once, for real; its foreign-token case is the same check
        foreign = checker.request(other, (), seed)
        checker.raises("commit with another region's token", RewardServiceError, service.commit,
                       CommitRequest(0, family, foreign.token, ()))
    checker.raises("open(bank_index out of range)", RewardServiceError, service.open, len(pool.banks), family, seed)
    checker.raises("open(a family with no region)", RewardServiceError, service.open, 0, "no-such-family", seed)
    checker.raises("commit(bank_index out of range)", RewardServiceError, service.commit,
                   CommitRequest(len(pool.banks), family, used.token, ()))
    checker.call("public_pool() after refused requests", service.public_pool)
    checker.report.passed.append("bad requests raise RewardServiceError")


def check_service(service: Any, *, seed: int = 0, episodes_fail: bool = False) -> ServiceReport:
    """Open and commit on the first two regions of bank 0 of ``service``'s pool (keep-all, drop-all, alone and
    in ``commit_many``), send requests it must refuse, then ``finish()``; raise :class:`ServiceCheckError`
    on a breach, return a :class:`ServiceReport` otherwise. A withholding service is sealed afterwards (and
    each of its regions is opened once: keep-all on the first, drop-all on the second).

    ``episodes_fail=True`` checks the failure path instead, on a service whose simulator you know fails every
    evaluation episode: each commit must raise :class:`EvaluationFailed` with its reasons, and the service
    must still answer."""
    report = ServiceReport(type(service).__name__)
    missing = [m for m in MEMBERS if not hasattr(service, m)]
    if missing:
        raise ServiceCheckError(f"service {report.name!r}: expected the RewardService protocol's members, missing {missing}")
    checker = _Checker(service, report)
    pool = checker.public_pool()
    bank, regions = _regions(pool, service.config.max_region_entries)
    family, kept_entries = regions[0]
    if episodes_fail:
        _failing(checker, family, kept_entries, seed)
        return report
    if service.withhold:
        return _check_withholding(checker, pool, bank, regions, seed)
    keep = checker.request(family, kept_entries, seed)
    kept = checker.result("commit(keep-all)", checker.call("commit(keep-all)", service.commit, keep), bank, False)
    if kept.reward != 0.0:
        raise checker.fail("commit(keep-all)", f"keeping the region as it was must pay exactly 0.0, paid {kept.reward!r}")
    drop = checker.request(family, (), seed)
    dropped = checker.result("commit(drop-all)", checker.call("commit(drop-all)", service.commit, drop), bank, True)
    report.passed.append("keep-all pays 0.0")
    again = checker.call("commit(drop-all) again", service.commit, checker.request(family, (), seed))
    many = checker.call("commit_many([keep-all, drop-all])", service.commit_many,
                        [checker.request(family, kept_entries, seed), checker.request(family, (), seed)])
    if again != dropped or many != [kept, dropped]:
        raise checker.fail("same request, same result", f"commit(drop-all) gave {dropped.reward!r}, then {again.reward!r}"
                                                         f"; commit_many gave {[r.reward for r in many]!r} for "
                                                         f"[{kept.reward!r}, {dropped.reward!r}]")
    report.passed.append("same request, same result")
    _refusals(checker, pool, regions, drop, seed)
    _stats(checker)
    checker.raises("finish() of a paying service", RewardServiceError, service.finish)
    report.passed.append("finish")
    return report


def _check_withholding(checker: _Checker, pool: PublicPool, bank: MemoryBank,
                       regions: list[tuple[str, tuple[Any, ...]]], seed: int) -> ServiceReport:
    service, report = checker.service, checker.report
    (family, kept_entries), (other, _) = regions
    keep = checker.request(family, kept_entries, seed)
    checker.result("commit(keep-all)", checker.call("commit(keep-all)", service.commit, keep), bank, False)
    checker.raises("open of a region opened already", RewardServiceError, service.open, 0, family, seed + 1)
    drop = checker.request(other, (), seed)
    checker.result("commit(drop-all)", checker.call("commit(drop-all)", service.commit, drop), bank, True)
    report.passed.append("withheld rewards, each region opens once")
    _refusals(checker, pool, regions, drop, seed)
    _stats(checker)
    ledger = checker.call("finish()", service.finish)
    if not isinstance(ledger, list) or len(ledger) != 2 or not all(isinstance(r, dict) for r in ledger):
        raise checker.fail("finish()", f"expected one record per commit (2), got {ledger!r:.300}")
    checker.raises("finish() twice", RewardServiceError, service.finish)
    checker.raises("open after finish()", RewardServiceError, service.open, 0, other, seed)
    checker.raises("commit after finish()", RewardServiceError, service.commit, keep)
    report.passed.append("finish")
    return report


def _stats(checker: _Checker) -> None:
    stats = checker.call("stats()", checker.service.stats)
    if not isinstance(stats, dict) or not all(isinstance(k, str) and isinstance(v, int) for k, v in stats.items()):
        raise checker.fail("stats()", f"expected a dict of str -> int, got {stats!r:.200}")
    checker.report.passed.append("stats")
