"""Playing one episode robustly, wherever it runs (this process or a worker): a lazily built simulator
that is rebuilt after a crash, and :func:`play_guarded`, which turns failures into recorded results."""
from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from dreamer_gym.agents import DownstreamAgent, EpisodeResult
from dreamer_gym.errors import LLMError
from dreamer_gym.interrupts import is_interrupt
from dreamer_gym.memory import MemoryEntry
from dreamer_gym.suites import SuiteSpec, get_suite_spec
from dreamer_gym.suites.base import EpisodeTask, TaskSuite

logger = logging.getLogger(__name__)


def warm_task(suite: TaskSuite) -> EpisodeTask:
    """A cheap task that starts the suite's simulator (its JVM, engine or browser): its spec's."""
    return get_suite_spec(suite.name).first_task(suite)


class Simulator:
    """One suite adapter built from ``spec`` on first use; :meth:`discard` drops a crashed one so the
    next :meth:`get` builds a fresh one."""

    def __init__(self, spec: SuiteSpec, suite_kwargs: Mapping[str, Any] | None = None) -> None:
        self.spec = spec
        self.suite_kwargs = dict(suite_kwargs or {})
        self.suite: TaskSuite | None = None

    def get(self) -> TaskSuite:
        if self.suite is None:
            self.suite = self.spec.make(**self.suite_kwargs)
        return self.suite

    def warm(self) -> None:
        """Start the simulator and play the spec's warm-up actions, so the first real episode meets a
        running process (and a warm JIT)."""
        suite = self.get()
        suite.start(self.spec.first_task(suite))
        for action in self.spec.warm_actions:
            suite.step(action)

    def discard(self) -> None:
        """Close the adapter after a failure (it may be dead already)."""
        suite, self.suite = self.suite, None
        if suite is not None:
            try:
                suite.close()
            except Exception:  # noqa: BLE001 - already dead
                pass

    def close(self) -> None:
        suite, self.suite = self.suite, None
        if suite is not None:
            suite.close()


def play_guarded(
    simulator: Simulator, agent: DownstreamAgent, task: EpisodeTask, entries: Sequence[MemoryEntry], seed: int,
) -> EpisodeResult:
    """Play one episode; if the simulator fails, restart it and try once more, then record the failure
    as a result with ``error`` set (score 0, never cached) so the evaluation goes on. An LLM failure
    (server down, timeout) is recorded at once: restarting the simulator would not help. An interrupt is no
    failure: it goes on up as a KeyboardInterrupt, whatever error py4j dressed it in."""
    error = ""
    for _attempt in range(2):
        try:
            return agent.play(simulator.get(), task, entries, seed)
        except LLMError as exc:
            logger.warning("episode %s failed in the LLM backend: %s", task, exc)
            return EpisodeResult(task, 0.0, 0.0, 0, False, (), error=f"{type(exc).__name__}: {exc}"[:500])
        except Exception as exc:  # noqa: BLE001 - a simulator crash must not end the sweep
            if is_interrupt(exc):  # Ctrl-C in disguise (py4j re-raises it as another error): not a crash
                raise KeyboardInterrupt from exc
            error = f"{type(exc).__name__}: {exc}"[:500]
            logger.warning("episode %s failed (%s); restarting the simulator", task, error)
            simulator.discard()
    return EpisodeResult(task, 0.0, 0.0, 0, False, (), error=error)
