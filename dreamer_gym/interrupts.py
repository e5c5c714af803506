"""What a Ctrl-C may and may not do: one line from the command, nothing from its helpers, no half-written file.

Why this module: a terminal sends SIGINT to every process of its foreground group, so without care each helper
process (the reward service, an evaluation worker, the ScienceWorld JVM that py4j drives) meets the interrupt on
its own, mid-request, and prints its own traceback; py4j even turns a KeyboardInterrupt into an ordinary error
(``'GatewayConnection' object has no attribute 'shutdown_socket'``), which the episode guard then took for a
crashed simulator and restarted it. The rule kept here: **only the process the user started handles SIGINT**;
a helper is started with SIGINT ignored (:func:`started_ignoring_sigint`: an ignored signal stays ignored
across ``exec``, and neither Python nor the JVM installs its handler over it), and its owner stops it when the
interrupt unwinds through ``close()``. :func:`is_interrupt` recognises an interrupt in disguise (an error
raised while a KeyboardInterrupt was being handled), and :func:`write_text_atomic` writes a result file whole
or not at all (a temporary file renamed over the target).
"""
from __future__ import annotations

import contextlib
import os
import signal
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path


def is_interrupt(exc: BaseException | None) -> bool:
    """``exc`` is a KeyboardInterrupt, or was raised from or while handling one (py4j's disguise)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


@contextlib.contextmanager
def started_ignoring_sigint() -> Iterator[None]:
    """Processes started inside this block ignore SIGINT (their owner handles Ctrl-C and stops them).

    SIGINT is ignored in this process only for the block (the few milliseconds a fork and exec take); off the
    main thread, where a handler cannot be set, nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` whole or not at all: a temporary file in the same folder, renamed over ``path``
    (an interrupted write leaves the old file, or none, never half of the new one). Creates the folder."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return target
