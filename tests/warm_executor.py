"""One real ScienceWorld JVM for several runs of a test: a registered in-process executor that outlives each run.

A track run, a study run or a re-score builds its evaluator's executor from the config's ``executor`` name and
closes it at the end, so each run starts its own simulator (a ScienceWorld JVM: 2-4 s of both cores on the CI
machine). Where a test makes several runs and the runs are not what it isolates (a board built from four rows, a
study cut and resumed, one cache filled by three consolidators), ``with warm_executor() as name:`` registers an
executor ``name`` (pass ``executor=name``, with the in-process service) whose runs play their misses on one
:class:`~dreamer_gym.evaluation.InProcessExecutor` per suite and agent: the same real simulator and agent, the
episodes played as before, started once. Leaving the block unregisters the name and closes the simulator.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from dreamer_gym.agents import AgentConfig, DownstreamAgent
from dreamer_gym.evaluation.executors import EXECUTORS, InProcessExecutor, register_executor
from dreamer_gym.suites import SuiteSpec


class WarmExecutor(InProcessExecutor):
    """An in-process executor that a run's ``close`` leaves running; :meth:`shut` closes it."""

    def close(self) -> None:
        """Kept warm for the next run (the block that made it shuts it)."""

    def shut(self) -> None:
        super().close()


@contextmanager
def warm_executor(name: str = "warm-test") -> Iterator[str]:
    """Register ``name`` as an executor whose builds share one warm in-process executor per (suite, suite
    arguments, agent config) for the block; yields the name."""
    made: dict[str, WarmExecutor] = {}

    def build(spec: SuiteSpec, suite_kwargs: Mapping[str, Any], agent_config: AgentConfig, *, workers: int,
              max_restarts: int, agent: DownstreamAgent | None, **options: Any) -> WarmExecutor:
        key = repr((spec.name, sorted(suite_kwargs.items()), agent_config, sorted(options.items())))
        if key not in made:
            made[key] = WarmExecutor(spec, suite_kwargs, agent_config)
        return made[key]

    register_executor(name, build)
    try:
        yield name
    finally:
        EXECUTORS.unregister(name)
        for executor in made.values():
            executor.shut()
