"""`check_executor`: does an evaluation executor keep the contract the evaluator relies on?

Shipped, as ``check_suite`` is, so whoever writes an executor (a service client, Ray) can check it before
plugging it in. Each failure names the method and what it returned.
"""
from __future__ import annotations

from collections.abc import Sequence

from dreamer_gym.agents import EpisodeResult
from dreamer_gym.errors import DreamerGymError
from dreamer_gym.evaluation.episodes import EvalTask
from dreamer_gym.evaluation.executors import Executor


class ExecutorCheckError(DreamerGymError, AssertionError):
    """An executor breaks the contract; the message names the method, what was expected and what came."""


def check_executor(executor: Executor, tasks: Sequence[EvalTask],
                   reference: Sequence[EpisodeResult] | None = None) -> list[EpisodeResult]:
    """Run ``tasks`` on ``executor`` and check: the protocol's members exist; ``run`` neither raises for a
    failed episode nor loses one, returning one :class:`EpisodeResult` per task, in order; ``on_result`` is
    called once per task with that same result; the results equal ``reference`` where given (e.g. the
    in-process executor's). Returns the results. Does not close the executor."""
    name = type(executor).__name__
    if not isinstance(executor, Executor):
        missing = [m for m in ("run", "warm_up", "worker_pids", "close", "restarts") if not hasattr(executor, m)]
        raise ExecutorCheckError(f"{name}: expected the Executor protocol's members, missing {missing}")
    seen: list[tuple[EvalTask, EpisodeResult]] = []
    try:
        results = executor.run(list(tasks), on_result=lambda task, result: seen.append((task, result)))
    except Exception as exc:  # noqa: BLE001 - reported as the contract it breaks
        raise ExecutorCheckError(f"{name}.run raised {type(exc).__name__}: {exc}; a failed episode must come "
                                 "back as a result with `error` set") from exc
    if not isinstance(results, list) or not all(isinstance(r, EpisodeResult) for r in results):
        raise ExecutorCheckError(f"{name}.run: expected a list of EpisodeResult, got {results!r:.300}")
    if [r.task for r in results] != [t.task for t in tasks]:
        raise ExecutorCheckError(f"{name}.run: expected results for {[t.task for t in tasks]} in that order, "
                                 f"got {[r.task for r in results]}")
    by_key = {t.key: r for t, r in zip(tasks, results)}
    if sorted(t.key for t, _ in seen) != sorted(t.key for t in tasks):
        raise ExecutorCheckError(f"{name}.run: expected on_result once per task ({len(tasks)} calls), got "
                                 f"{len(seen)} for keys {[t.key for t, _ in seen]}")
    wrong = [t.key for t, r in seen if by_key[t.key] != r]
    if wrong:
        raise ExecutorCheckError(f"{name}.run: on_result got other results than run returned for {wrong}")
    if reference is not None and list(reference) != results:
        diff = [t.key for t, r, ref in zip(tasks, results, reference) if r != ref]
        raise ExecutorCheckError(f"{name}.run: results differ from the reference for {diff or 'the count'}")
    pids = executor.worker_pids()
    if not isinstance(pids, list) or not all(isinstance(p, int) for p in pids):
        raise ExecutorCheckError(f"{name}.worker_pids: expected a list of ints, got {pids!r}")
    if not isinstance(executor.restarts, int) or executor.restarts < 0:
        raise ExecutorCheckError(f"{name}.restarts: expected an int >= 0, got {executor.restarts!r}")
    return results
