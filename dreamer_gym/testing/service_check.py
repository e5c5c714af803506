"""`check_service`: does a reward service keep the contract the env, the vector envs and the tracks rely on?

A :class:`~dreamer_gym.service.services.RewardService` hands out the public pool and scores commits. What
the rest of the package relies on, checked here on real commits: the public pool names the config's suite
and pool; a commit that keeps its region as it was pays exactly 0.0 (nothing changed, nothing is played
twice); the same request gives the same result, alone or in ``commit_many``; a request naming no bank or
no region raises :class:`~dreamer_gym.errors.RewardServiceError` and the service still answers; a
withholding (track) service pays ``None`` and hands its ledger out once, one record per commit, then
refuses commits; a service whose episodes cannot run raises
:class:`~dreamer_gym.errors.EvaluationFailed` with the reasons instead of paying. Failures raise
:class:`ServiceCheckError` naming the property and what came. The check does not close the service.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dreamer_gym.errors import DreamerGymError, EvaluationFailed, RewardServiceError
from dreamer_gym.memory import MemoryBank, select_by_family
from dreamer_gym.service import CommitRequest, CommitResult, PublicPool

MEMBERS = ("config", "withhold", "public_pool", "commit", "commit_many", "commit_joint", "finish", "stats", "close")


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


def _requests(pool: PublicPool, max_region_entries: int, seed: int) -> tuple[MemoryBank, CommitRequest, CommitRequest]:
    bank = pool.banks[0]
    for family in pool.families:
        region = select_by_family(bank, family, max_region_entries)
        if region.entry_ids:
            kept = tuple(bank.get(i) for i in region.entry_ids)
            return bank, CommitRequest(0, family, seed, kept), CommitRequest(0, family, seed, ())  # type: ignore[arg-type]
    raise ServiceCheckError(f"bank 0 of pool {pool.hash} has no region of any family {pool.families}")


def _failing(checker: _Checker, keep: CommitRequest, drop: CommitRequest) -> None:
    for prop, fn, arg in (("commit(keep-all) whose episodes fail", checker.service.commit, keep),
                          ("commit_many whose episodes fail", checker.service.commit_many, [keep, drop])):
        exc = checker.raises(prop, EvaluationFailed, fn, arg)
        errors = getattr(exc, "errors", None)
        if not isinstance(errors, tuple) or not errors or not all(isinstance(e, str) and e for e in errors):
            raise checker.fail(prop, f"EvaluationFailed must carry the reasons in `errors`, got {errors!r}")
    checker.call("public_pool() after a failed evaluation", checker.service.public_pool)
    checker.report.passed.append("failed evaluation raises EvaluationFailed")


def check_service(service: Any, *, seed: int = 0, episodes_fail: bool = False) -> ServiceReport:
    """Commit on the first region of bank 0 of ``service``'s pool (keep-all, drop-all, each twice, alone and
    in ``commit_many``), send requests it must refuse, then ``finish()``; raise :class:`ServiceCheckError`
    on a breach, return a :class:`ServiceReport` otherwise. A withholding service is sealed afterwards.

    ``episodes_fail=True`` checks the failure path instead, on a service whose simulator you know fails every
    evaluation episode: each commit must raise :class:`EvaluationFailed` with its reasons, and the service
    must still answer."""
    report = ServiceReport(type(service).__name__)
    missing = [m for m in MEMBERS if not hasattr(service, m)]
    if missing:
        raise ServiceCheckError(f"service {report.name!r}: expected the RewardService protocol's members, missing {missing}")
    checker = _Checker(service, report)
    pool = checker.public_pool()
    bank, keep, drop = _requests(pool, service.config.max_region_entries, seed)
    if episodes_fail:
        _failing(checker, keep, drop)
        return report
    kept = checker.result("commit(keep-all)", checker.call("commit(keep-all)", service.commit, keep), bank, False)
    if not service.withhold and kept.reward != 0.0:
        raise checker.fail("commit(keep-all)", f"keeping the region as it was must pay exactly 0.0, paid {kept.reward!r}")
    dropped = checker.result("commit(drop-all)", checker.call("commit(drop-all)", service.commit, drop), bank, True)
    report.passed.append("keep-all pays 0.0" if not service.withhold else "withheld rewards")
    again = checker.call("commit(drop-all) again", service.commit, drop)
    many = checker.call("commit_many([keep-all, drop-all])", service.commit_many, [keep, drop])
    if again != dropped or many != [kept, dropped]:
        raise checker.fail("same request, same result", f"commit(drop-all) gave {dropped.reward!r}, then {again.reward!r}"
                                                         f"; commit_many gave {[r.reward for r in many]!r} for "
                                                         f"[{kept.reward!r}, {dropped.reward!r}]")
    report.passed.append("same request, same result")
    checker.raises("commit(bank_index out of range)", RewardServiceError, service.commit,
                   CommitRequest(len(pool.banks), keep.family, seed, ()))
    checker.raises("commit(a family with no region)", RewardServiceError, service.commit,
                   CommitRequest(0, "no-such-family", seed, ()))
    checker.call("public_pool() after refused requests", service.public_pool)
    report.passed.append("bad requests raise RewardServiceError")
    stats = checker.call("stats()", service.stats)
    if not isinstance(stats, dict) or not all(isinstance(k, str) and isinstance(v, int) for k, v in stats.items()):
        raise checker.fail("stats()", f"expected a dict of str -> int, got {stats!r:.200}")
    report.passed.append("stats")
    if not service.withhold:
        checker.raises("finish() of a paying service", RewardServiceError, service.finish)
        report.passed.append("finish")
        return report
    ledger = checker.call("finish()", service.finish)
    if not isinstance(ledger, list) or len(ledger) != 5 or not all(isinstance(r, dict) for r in ledger):
        raise checker.fail("finish()", f"expected one record per commit (5), got {ledger!r:.300}")
    checker.raises("finish() twice", RewardServiceError, service.finish)
    checker.raises("commit after finish()", RewardServiceError, service.commit, keep)
    report.passed.append("finish")
    return report
