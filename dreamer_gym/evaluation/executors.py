"""Where evaluation episodes are played: the :class:`Executor` protocol, the in-process executor and the
registry that picks one by name (``ConsolidationConfig.executor``).

An executor is built from the suite's :class:`~dreamer_gym.suites.SuiteSpec` (the spec itself, not its
name, so a suite registered at run time plays anywhere its pieces import), the suite's constructor
arguments and the downstream agent's :class:`~dreamer_gym.agents.AgentConfig`. It receives picklable
:class:`~dreamer_gym.evaluation.episodes.EvalTask` items and returns one
:class:`~dreamer_gym.agents.EpisodeResult` per task, in order. It never raises for a failed episode: the
result carries ``error`` (see :func:`~dreamer_gym.evaluation.play.play_guarded`). Caching is the
evaluator's job, not the executor's.

Adding one = a builder ``(spec, suite_kwargs, agent_config, *, workers, max_restarts, agent, **options) ->
Executor`` registered by name: one line in :data:`EXECUTORS`' built-ins (as ``ray``,
:mod:`~dreamer_gym.evaluation.ray_executor`, did), :func:`register_executor` at run time, or an entry point in the
``dreamer_gym.executors`` group from another package. :func:`dreamer_gym.testing.check_executor` checks it.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from dreamer_gym.agents import AgentConfig, DownstreamAgent, EpisodeResult, make_agent
from dreamer_gym.errors import ConfigError
from dreamer_gym.evaluation.episodes import EvalTask
from dreamer_gym.evaluation.play import Simulator, play_guarded
from dreamer_gym.registry import Registry, callable_as
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


EXECUTORS: Registry[Callable[..., Executor]] = Registry(
    "executor", "dreamer_gym.executors", {
        "inprocess": _in_process,
        # named, not imported: those modules import this one (the Executor protocol), never the reverse
        "process": "dreamer_gym.evaluation.process_executor:local_processes",
        "ray": "dreamer_gym.evaluation.ray_executor:ray_actors",
    },
    option="executor", check=callable_as("a builder (spec, suite_kwargs, agent_config, *, workers, max_restarts, "
                                         "agent, **options) -> Executor"),
    how="dreamer_gym.evaluation.register_executor(name, builder) or an entry point in the 'dreamer_gym.executors' "
        "group (mine = \"my_pkg.executor:build\")")
# what needs worker processes (and what they are called), for resolve_executor's messages
_NEEDS_WORKERS = {"process": "worker processes", "ray": "Ray actors"}


def register_executor(name: str, builder: str | Callable[..., Executor], *, replace: bool = False) -> None:
    """Make ``builder`` (or a ``"module:attr"`` string naming it) the executor ``name``; ``executor=name`` then
    works in every config built afterwards. A builder is called as ``builder(spec, suite_kwargs, agent_config, *,
    workers, max_restarts, agent, **options)`` and returns an :class:`Executor`."""
    if name == "auto":
        raise ConfigError("Expected an executor name other than 'auto' (it picks inprocess or process by `workers`)")
    EXECUTORS.register(name, builder, replace=replace)


def executor_choices() -> tuple[str, ...]:
    """What ``executor`` may be now: "auto" and every registered executor (built-in, registered, entry point)."""
    return ("auto", *EXECUTORS.names())


def __getattr__(name: str) -> Any:
    if name == "EXECUTOR_CHOICES":  # kept for older imports; live, as executor_choices()
        return executor_choices()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def validate_executor(name: str) -> str:
    """``name`` if it is one of :func:`executor_choices`, else the ConfigError that lists them and how to add one."""
    if name != "auto" and name not in EXECUTORS:
        raise ConfigError(f"Expected `executor` to be one of {executor_choices()}, got {name!r}; register your own "
                          f"with {EXECUTORS.how_to()}")
    return name


def resolve_executor(name: str, workers: int) -> str:
    """The registered executor ``name`` means with ``workers`` worker processes ("auto": in-process for 0,
    the local process pool otherwise). Raises ConfigError for an unknown name or a contradiction."""
    if validate_executor(name) == "auto":
        return "inprocess" if workers == 0 else "process"
    if name == "inprocess" and workers != 0:
        raise ConfigError(f"executor='inprocess' plays in this process, but workers={workers}; "
                          "set workers=0, or executor='process' (or 'auto') to use worker processes")
    if name in _NEEDS_WORKERS and workers < 1:
        raise ConfigError(f"executor={name!r} needs workers >= 1 ({_NEEDS_WORKERS[name]}), got {workers}; "
                          "set workers, or executor='inprocess' (or 'auto') to play in this process")
    return name


def make_executor(name: str, spec: SuiteSpec, suite_kwargs: Mapping[str, Any] | None = None,
                  agent_config: AgentConfig | None = None, *, workers: int = 0, max_restarts: int = 3,
                  agent: DownstreamAgent | None = None, **options: Any) -> Executor:
    """Build the executor ``name`` (see :func:`resolve_executor`). ``agent`` is shared by executors that play
    in this process; the others build theirs from ``agent_config`` where they run. ``options`` go to the
    executor's class (ray: ``address``, ``batch_size``, ``cpus_per_actor``)."""
    builder = EXECUTORS.get(resolve_executor(name, workers))
    return builder(spec, dict(suite_kwargs or {}), agent_config or AgentConfig(), workers=workers,
                   max_restarts=max_restarts, agent=agent, **options)
