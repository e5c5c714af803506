"""The sandbox's self-test, from inside: ``python -m dreamer_gym.leaderboard.sandbox_probe REQUEST_JSON``.

:meth:`dreamer_gym.leaderboard.sandbox.Sandbox.self_test` starts this in the sandbox with the paths it must not
be able to open (a file under a cover, and a canary: a copy of package data planted outside the allow-list) and
the simulators it must not import. The probe tries each, and the network, and prints one JSON line: what it
could do (``leaks``), and everything of other processes it can read (``seen``: each ``/proc/*/environ`` and
``/proc/*/cmdline``, its own environment), in which the board looks for the canary variable it set in the
environment it launched bubblewrap with. The board decides; the probe only reports, so a probe that is not
sandboxed at all cannot pass by printing "ok".
"""
from __future__ import annotations

import importlib
import json
import os
import socket
import sys
from pathlib import Path


def readable(path: str) -> bool:
    try:
        with open(path, "rb") as handle:
            handle.read(1)
    except OSError:
        return False
    return True


def seen() -> list[str]:
    """What this process can read of every process in its pid namespace, and its own environment."""
    out = [f"{k}={v}" for k, v in os.environ.items()]
    for proc in Path("/proc").glob("[0-9]*"):
        for name in ("environ", "cmdline"):
            try:
                out.append((proc / name).read_bytes().replace(b"\0", b" ").decode("utf-8", "replace"))
            except OSError:
                continue
    return out


def probe(request: dict[str, list[str]]) -> dict[str, object]:
    leaks = [f"a hidden file is readable: {p}" for p in request["hidden"] if readable(p)]
    leaks += [f"a file outside the allow-list is readable: {p}" for p in request["canaries"] if readable(p)]
    for name in request["simulators"]:
        try:
            importlib.import_module(name)
            leaks.append(f"the simulator package {name} imports")
        except ImportError:
            pass
    try:
        socket.create_connection(("1.1.1.1", 53), timeout=3).close()
        leaks.append("the network is reachable")
    except OSError:
        pass
    import dreamer_gym.consolidators  # noqa: F401 - the package and the child's imports work in here
    import dreamer_gym.leaderboard.sandbox_child  # noqa: F401

    return {"leaks": leaks, "seen": seen(), "uid": os.getuid(), "pid": os.getpid()}


if __name__ == "__main__":
    print(json.dumps(probe(json.loads(sys.argv[1]))))
