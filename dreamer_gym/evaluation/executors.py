"""Where evaluation episodes are played: the :class:`Executor` protocol, the in-process executor and the
registry that picks one by name (``ConsolidationConfig.executor``).

An executor is built from the suite's :class:`~dreamer_gym.suites.SuiteSpec` (the spec itself, not its
name, so a suite registered at run time plays anywhere its pieces import), the suite's constructor
arguments and the downstream agent's :class:`~dreamer_gym.agents.AgentConfig`. It receives picklable
:class:`~dreamer_gym.evaluation.episodes.EvalTask` items and returns one
:class:`~dreamer_gym.agents.EpisodeResult` per task, in order. It never raises for a failed episode: the
result carries ``error`` (see :func:`~dreamer_gym.evaluation.play.play_guarded`). Caching is the
evaluator's job, not the executor's.

Adding one = one class and one line in :data:`EXECUTORS` (as ``ray``, :mod:`~dreamer_gym.evaluation.ray_executor`, did);
:func:`~dreamer_gym.evaluation.check.check_executor` checks it.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from dreamer_gym.agents import AgentConfig, DownstreamAgent, EpisodeResult, make_agent
from dreamer_gym.errors import ConfigError
from dreamer_gym.evaluation.episodes import EvalTask
from dreamer_gym.evaluation.play import Simulator, play_guarded
from dreamer_gym.suites import SuiteSpec, register_suite
from dreamer_gym.suites.base import TaskSuite

OnResult = Callable[[EvalTask, EpisodeResult], None]


@runtime_checkable
class Executor(Protocol):
    """Plays evaluation episodes. ``restarts`` counts the workers it has replaced since it was built."""

    restarts: int

    def run(self, tasks: Sequence[EvalTask], on_result: OnResult | None = None) -> list[EpisodeResult]:
        """Play ``tasks``; one result per task, in order. ``on_result(task, result)`` is called once per
        task as soon as its result is known (in any order), so the caller can store it at once."""
        ...

    def warm_up(self) -> None:
        """Start every worker and its simulator now rather than on the first episode."""
        ...

    def worker_pids(self) -> list[int]:
        """PIDs of the live local processes that play episodes ([] when there are none)."""
        ...

    def close(self) -> None:
        """Stop every worker and simulator; the executor may be used again afterwards (it restarts)."""
        ...


class InProcessExecutor:
    """Plays in this process, one episode after another, on one lazily started simulator.

    ``agent`` may be given to share one already built (e.g. an LLM agent holding a loaded model); otherwise
    one is built from ``agent_config``.
    """

    def __init__(self, spec: SuiteSpec, suite_kwargs: Mapping[str, Any] | None = None,
                 agent_config: AgentConfig | None = None, *, agent: DownstreamAgent | None = None) -> None:
        register_suite(spec)  # the agent looks the spec up by name; a different spec under that name raises
        self.spec = spec
        self.agent = agent if agent is not None else make_agent(agent_config or AgentConfig())
        self.simulator = Simulator(spec, suite_kwargs)
        self.restarts = 0

    @property
    def suite(self) -> TaskSuite | None:
        """The live adapter, if one was started."""
        return self.simulator.suite

    def run(self, tasks: Sequence[EvalTask], on_result: OnResult | None = None) -> list[EpisodeResult]:
        out = []
        for task in tasks:
            result = play_guarded(self.simulator, self.agent, task.task, task.entries, task.seed)
            if on_result is not None:
                on_result(task, result)
            out.append(result)
        return out

    def warm_up(self) -> None:
        self.simulator.warm()

    def worker_pids(self) -> list[int]:
        return []

    def close(self) -> None:
        self.simulator.close()


# --- the registry: name -> builder(spec, suite_kwargs, agent_config, *, workers, max_restarts, agent, **options) ---
def _in_process(spec: SuiteSpec, suite_kwargs: Mapping[str, Any], agent_config: AgentConfig, *, workers: int,
                max_restarts: int, agent: DownstreamAgent | None, **options: Any) -> Executor:
    return InProcessExecutor(spec, suite_kwargs, agent_config, agent=agent)


def _local_processes(spec: SuiteSpec, suite_kwargs: Mapping[str, Any], agent_config: AgentConfig, *,
                     workers: int, max_restarts: int, agent: DownstreamAgent | None, **options: Any) -> Executor:
    from dreamer_gym.evaluation.process_executor import LocalProcessExecutor

    return LocalProcessExecutor(spec, suite_kwargs, agent_config, workers=workers, max_restarts=max_restarts)


def _ray_actors(spec: SuiteSpec, suite_kwargs: Mapping[str, Any], agent_config: AgentConfig, *, workers: int,
                max_restarts: int, agent: DownstreamAgent | None, **options: Any) -> Executor:
    from dreamer_gym.evaluation.ray_executor import RayExecutor

    return RayExecutor(spec, suite_kwargs, agent_config, actors=workers, max_restarts=max_restarts, **options)


EXECUTORS: dict[str, Callable[..., Executor]] = {"inprocess": _in_process, "process": _local_processes,
                                                 "ray": _ray_actors}
EXECUTOR_CHOICES: tuple[str, ...] = ("auto", *EXECUTORS)


def resolve_executor(name: str, workers: int) -> str:
    """The registered executor ``name`` means with ``workers`` worker processes ("auto": in-process for 0,
    the local process pool otherwise). Raises ConfigError for an unknown name or a contradiction."""
    if name not in EXECUTOR_CHOICES:
        raise ConfigError(f"Expected `executor` to be one of {EXECUTOR_CHOICES}, got {name!r}")
    if name == "auto":
        return "inprocess" if workers == 0 else "process"
    if name == "inprocess" and workers != 0:
        raise ConfigError(f"executor='inprocess' plays in this process, but workers={workers}; "
                          "set workers=0, or executor='process' (or 'auto') to use worker processes")
    if name in ("process", "ray") and workers < 1:
        what = "worker processes" if name == "process" else "Ray actors"
        raise ConfigError(f"executor={name!r} needs workers >= 1 ({what}), got {workers}; "
                          "set workers, or executor='inprocess' (or 'auto') to play in this process")
    return name


def make_executor(name: str, spec: SuiteSpec, suite_kwargs: Mapping[str, Any] | None = None,
                  agent_config: AgentConfig | None = None, *, workers: int = 0, max_restarts: int = 3,
                  agent: DownstreamAgent | None = None, **options: Any) -> Executor:
    """Build the executor ``name`` (see :func:`resolve_executor`). ``agent`` is shared by executors that play
    in this process; the others build theirs from ``agent_config`` where they run. ``options`` go to the
    executor's class (ray: ``address``, ``batch_size``, ``cpus_per_actor``)."""
    builder = EXECUTORS[resolve_executor(name, workers)]
    return builder(spec, dict(suite_kwargs or {}), agent_config or AgentConfig(), workers=workers,
                   max_restarts=max_restarts, agent=agent, **options)
