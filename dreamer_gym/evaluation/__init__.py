"""Evaluation: the downstream agent plays held-out episodes with a bank. The expensive part, so it is
cached (per episode, keyed by agent config, suite, task, variation, seed and the retrieved entries),
played by an executor (in this process, or local worker processes each with one warm simulator; see
:mod:`~dreamer_gym.evaluation.executors`) and resumable (each finished episode is stored at once; a dead
worker's episode is re-run on a fresh one).

Modules: ``episodes`` (what is played), ``play`` (one episode, robust to simulator crashes), ``executors``
(the protocol, the in-process executor, the registry), ``process_pool`` (local worker processes),
``evaluator`` (retrieval, cache, delegation), ``check`` (the executor conformance check).
"""
from dreamer_gym.evaluation.check import ExecutorCheckError, check_executor
from dreamer_gym.evaluation.episodes import EvalEpisode, EvalTask, round_robin_episodes
from dreamer_gym.evaluation.evaluator import EvalStats, Evaluator
from dreamer_gym.evaluation.executors import (
    EXECUTOR_CHOICES,
    EXECUTORS,
    Executor,
    InProcessExecutor,
    make_executor,
    resolve_executor,
)
from dreamer_gym.evaluation.play import Simulator, play_guarded, warm_task
from dreamer_gym.evaluation.process_pool import LocalProcessExecutor

__all__ = [
    "EXECUTORS", "EXECUTOR_CHOICES", "EvalEpisode", "EvalStats", "EvalTask", "Evaluator", "Executor",
    "ExecutorCheckError", "InProcessExecutor", "LocalProcessExecutor", "Simulator", "check_executor",
    "make_executor", "play_guarded", "resolve_executor", "round_robin_episodes", "warm_task",
]
