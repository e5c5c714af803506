"""Helpers shared by the test modules (importable as ``helpers``: pytest puts tests/ on sys.path)."""
from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

# the smallest evaluation that still mixes the region's family with another one
SMALL: dict[str, Any] = {"eval_in_family": 1, "eval_other": 1}


def call(tool: str, **args: Any) -> str:
    """One tool call as the JSON string the env takes."""
    return json.dumps({"tool": tool, **args})


def make_env(env_id: str, **kwargs: Any) -> gym.Env:
    """The id's env with the small evaluation config (kwargs override it): an experiment, not the id
    (``ConsolidationEnv.experiment``; its commits say ``comparable: False``), wrapped as ``gym.make`` wraps."""
    from gymnasium.wrappers.common import OrderEnforcing, PassiveEnvChecker

    from dreamer_gym.envs.consolidation import ConsolidationEnv

    return OrderEnforcing(PassiveEnvChecker(ConsolidationEnv.experiment(env_id, **{**SMALL, **kwargs})))


def assert_same(a: Any, b: Any, path: str = "") -> None:
    """Deep equality for observations and infos (numpy arrays compared with ``np.array_equal``)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        assert isinstance(a, np.ndarray) and isinstance(b, np.ndarray), f"{path}: {type(a)} vs {type(b)}"
        assert a.dtype == b.dtype and np.array_equal(a, b), f"{path}: {a!r} != {b!r}"
    elif isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), f"{path}: keys {sorted(a)} != {sorted(b)}"
        for k in a:
            assert_same(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), f"{path}: {a!r} != {b!r}"
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{path}[{i}]")
    else:
        assert type(a) is type(b) and a == b, f"{path}: {a!r} != {b!r}"


def play_actions(suite: Any, task: Any, actions: Sequence[str]) -> Any:
    """Start ``task`` and play ``actions`` until one ends the episode; the last StepOutcome."""
    suite.start(task)
    outcome = None
    for action in actions:
        outcome = suite.step(action)
        if outcome.done:
            break
    assert outcome is not None
    return outcome


def assert_check_env_clean(env_id: str, **kwargs: Any) -> None:
    """Gymnasium's ``check_env`` passes on ``env_id`` without a single warning."""
    import warnings

    from gymnasium.utils.env_checker import check_env

    env = gym.make(env_id, **kwargs)  # the id itself (check_env never commits, so its evaluation size is moot)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            check_env(env.unwrapped)
        assert [str(w.message) for w in caught] == []
    finally:
        env.close()


# --- processes -------------------------------------------------------------------------------------------
def _stat(pid: int) -> tuple[int, str] | None:
    """(parent pid, state letter) of ``pid``, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as fh:
            raw = fh.read()
    except OSError:
        return None
    rest = raw[raw.rindex(")") + 2 :].split()
    return int(rest[1]), rest[0]


def _cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return [p.decode(errors="replace") for p in fh.read().split(b"\0") if p]
    except OSError:
        return []


def pid_alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (a dead child nobody reaped yet counts as gone)."""
    st = _stat(pid)
    return st is not None and st[1] not in ("Z", "X")


def descendants(root: int | None = None) -> set[int]:
    """Live pids whose parent chain reaches ``root`` (default: this process)."""
    root = os.getpid() if root is None else root
    parents: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = _stat(int(name))
            if st is not None and st[1] not in ("Z", "X"):
                parents[int(name)] = st[0]
    out: set[int] = set()
    for pid in parents:
        p, seen = pid, 0
        while p in parents and seen < 64:
            p, seen = parents[p], seen + 1
            if p == root:
                out.add(pid)
                break
    return out


def is_scienceworld_jvm(pid: int) -> bool:
    cmd = _cmdline(pid)
    return bool(cmd) and os.path.basename(cmd[0]).startswith("java") and any("py4j" in c for c in cmd)


def child_jvms(root: int | None = None) -> set[int]:
    """ScienceWorld (py4j gateway) JVMs started below ``root`` (default: this process)."""
    return {p for p in descendants(root) if is_scienceworld_jvm(p)}


def wait_gone(pids: set[int], timeout: float = 15.0) -> set[int]:
    """Wait for ``pids`` to exit; return those still alive after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    alive = {p for p in pids if pid_alive(p)}
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = {p for p in alive if pid_alive(p)}
    return alive
