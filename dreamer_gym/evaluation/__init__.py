"""Evaluation: the downstream agent plays held-out episodes with a bank. The expensive part, so it is
cached (per episode, keyed by agent config, suite, task, variation, seed and the retrieved entries),
played by an executor (in this process, or local worker processes each with one warm simulator; see
:mod:`~dreamer_gym.evaluation.executors`) and resumable (each finished episode is stored at once; a dead
worker's episode is re-run on a fresh one).

Modules: ``episodes`` (what is played), ``play`` (one episode, robust to simulator crashes), ``executors``
(the protocol, the in-process executor, the registry), ``process_executor`` (local worker processes),
``evaluator`` (retrieval, cache, delegation). The executor conformance check is
:func:`dreamer_gym.testing.check_executor`.
"""
from dreamer_gym._moved import forward_names
from dreamer_gym.evaluation.episodes import EvalEpisode, EvalTask, round_robin_episodes
from dreamer_gym.evaluation.evaluator import EvalStats, Evaluator
from dreamer_gym.evaluation.executors import (
    EXECUTORS,
    Executor,
    InProcessExecutor,
    executor_choices,
    make_executor,
    register_executor,
    resolve_executor,
)
from dreamer_gym.evaluation.play import Simulator, play_guarded, warm_task
from dreamer_gym.evaluation.process_executor import LocalProcessExecutor

# moved up to dreamer_gym.testing (issue 28): served from there, with a warning, until 0.3
_moved = forward_names(__name__, "dreamer_gym.testing", ("ExecutorCheckError", "check_executor"))


def __getattr__(name: str) -> object:
    if name == "EXECUTOR_CHOICES":  # kept for older imports; live, as executor_choices()
        return executor_choices()
    return _moved(name)


__all__ = [
    "EXECUTORS", "EXECUTOR_CHOICES", "EvalEpisode", "EvalStats", "EvalTask", "Evaluator", "Executor",
    "InProcessExecutor", "LocalProcessExecutor", "Simulator",
    "executor_choices", "make_executor", "play_guarded", "register_executor", "resolve_executor", "round_robin_episodes", "warm_task",
]
