"""The consolidator's side of a verified run: ``python -m dreamer_gym.leaderboard.sandbox_child NAME``, inside the
bubblewrap sandbox (:mod:`dreamer_gym.leaderboard.sandbox`).

It builds the named consolidator and plays each region with :func:`~dreamer_gym.consolidators.run_episode`
on a :class:`ProxyEnv`, whose ``reset`` and ``step`` are JSON lines to and from the board's process: the real
env, its reward service, the simulator and the pool stay outside. Why a proxy rather than the env: everything
the env holds (the pool, the service handle) is one attribute away from the policy that steps it.

Wire format (one JSON object a line; the protocol's own descriptors, so a consolidator's ``print`` goes to
stderr and cannot forge a message):

- board -> child: ``{"hello": {"config": {...}}}`` once, then per region ``{"reset": {"obs", "info"}}``, after
  each action ``{"step": {"obs", "info"}}``, and ``{"close": true}`` at the end. A ``reset`` or ``close``
  that comes while the child waits for a step ends the episode (terminated).
- child -> board: ``{"ready": {"name", "llm"}}`` once the consolidator is built, ``{"action": TEXT}`` per tool
  call, ``{"error": "Type: message", "usage": {...}}`` when the consolidator raised (an import the sandbox hides,
  a file it cannot open, a connection it cannot make, a limit it hit): the board reports it as a failure, never
  as a score, naming the limit from ``usage`` (:func:`usage`: what the child held when it failed).
"""
from __future__ import annotations

import json
import os
import sys
import traceback
from types import SimpleNamespace
from typing import IO, Any

import numpy as np

from dreamer_gym.consolidators.base import Consolidator, run_episode

MAX_LINE = 4 * 2**20  # bytes a message may take; a region's listing and info are far below


def plain(value: Any) -> Any:
    """JSON for what an env puts in obs and info (numpy arrays and scalars)."""
    if isinstance(value, np.ndarray | np.generic):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON: an env's obs and info hold text, numbers and lists")


def encode(message: dict[str, Any]) -> str:
    return json.dumps(message, default=plain, allow_nan=False) + "\n"


def build(name: str) -> Consolidator:
    """A registered consolidator (``dedupe``, ``oplevel:CKPT``, an entry point), else ``module:attr`` of the
    submitter's code (a class or factory, called with no arguments)."""
    import importlib

    from dreamer_gym.consolidators import consolidator_names, make_consolidator
    from dreamer_gym.consolidators.registry import split_name

    if split_name(name)[0] in consolidator_names() or ":" not in name:
        return make_consolidator(name)
    module, attr = name.split(":", 1)
    return getattr(importlib.import_module(module), attr)()


def usage() -> dict[str, float]:
    """What this process and its sandbox held when the consolidator failed: its data segment and peak resident
    memory (MiB), what ``/tmp`` holds (MiB) and the tasks running in the sandbox, for the board's message."""
    out: dict[str, float] = {}
    try:
        status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines() if ":" in line)
        out["data_mb"] = round(int(status["VmData"].split()[0]) / 1024, 1)
        out["peak_mb"] = round(int(status["VmHWM"].split()[0]) / 1024, 1)
        out["tasks"] = sum(len(os.listdir(f"/proc/{p}/task")) for p in os.listdir("/proc") if p.isdigit())
    except (OSError, KeyError, ValueError):
        pass
    try:
        tmp = os.statvfs("/tmp")
        out["tmp_mb"] = round((tmp.f_blocks - tmp.f_bfree) * tmp.f_frsize / 2**20, 1)
    except OSError:
        pass
    return out


def llm_info(consolidator: object) -> dict[str, str] | None:
    """What model an LLM consolidator ran (its own ``llm_info()``), for the submission's ``llm`` block."""
    info = getattr(consolidator, "llm_info", None)
    return {k: str(v) for k, v in info().items()} if callable(info) else None


class ProxyEnv:
    """What the consolidator sees as its env: ``reset``/``step`` over the pipe, the track's ``config`` as a
    read-only namespace, ``unwrapped`` itself. No pool, no service: the region comes in ``info["region"]``."""

    def __init__(self, inbox: IO[str], outbox: IO[str], config: dict[str, Any]) -> None:
        self._inbox, self._outbox = inbox, outbox
        self.config = SimpleNamespace(**config)
        self.pending: dict[str, Any] | None = None  # a reset or close that ended the last episode
        self._last: tuple[dict[str, Any], dict[str, Any]] = ({}, {})

    @property
    def unwrapped(self) -> ProxyEnv:
        return self

    def receive(self) -> dict[str, Any]:
        if self.pending is not None:
            message, self.pending = self.pending, None
            return message
        line = self._inbox.readline(MAX_LINE)
        return json.loads(line) if line else {"close": True}

    def _observed(self, part: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        obs = dict(part["obs"])
        if "budget" in obs:
            obs["budget"] = np.asarray(obs["budget"], dtype=np.int64)
        self._last = (obs, part["info"])
        return self._last

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):  # noqa: ANN201
        """The board resets the real env (its seed and region, not the consolidator's); this reads what it saw."""
        message = self.receive()
        if "reset" not in message:
            raise RuntimeError(f"expected a reset from the board, got {sorted(message)}")
        return self._observed(message["reset"])

    def step(self, action: str):  # noqa: ANN201
        self._outbox.write(encode({"action": str(action)}))
        self._outbox.flush()
        message = self.receive()
        if "step" in message:
            obs, info = self._observed(message["step"])
            return obs, 0.0, False, False, info  # a track withholds rewards until its ledger is handed out
        self.pending = message  # the board moved on: the episode ended with that action
        obs, info = self._last
        return obs, 0.0, True, False, info

    def close(self) -> None:
        return None


def serve(name: str, inbox: IO[str], outbox: IO[str]) -> int:
    """Build ``name``, answer ``ready``, play regions until the board closes; an exception becomes ``error``."""
    def say(message: dict[str, Any]) -> None:
        outbox.write(encode(message))
        outbox.flush()

    try:
        hello = json.loads(inbox.readline(MAX_LINE) or "{}")
        consolidator = build(name)
        say({"ready": {"name": str(getattr(consolidator, "name", name)), "llm": llm_info(consolidator)}})
        env = ProxyEnv(inbox, outbox, hello.get("hello", {}).get("config", {}))
        while "close" not in (message := env.receive()):
            env.pending = message
            run_episode(env, consolidator)
    except Exception as exc:  # noqa: BLE001 - whatever the consolidator raised is the board's report
        traceback.print_exc(file=sys.stderr)
        say({"error": f"{type(exc).__name__}: {exc}", "usage": usage()})
        return 1
    return 0


def main() -> int:
    # the protocol keeps its own copies of stdin/stdout; the consolidator's prints go to stderr
    inbox = os.fdopen(os.dup(0), "r", encoding="utf-8")
    outbox = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return serve(sys.argv[1], inbox, outbox)


if __name__ == "__main__":
    raise SystemExit(main())
