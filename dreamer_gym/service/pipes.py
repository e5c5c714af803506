"""The reward service process's two pipes, and how its owner stops it (:mod:`dreamer_gym.service.services`)."""
from __future__ import annotations

import subprocess
from multiprocessing.connection import Connection
from typing import Any


class Duplex:
    """Two one-way pipes as one connection: read from one fd, write to the other."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self._r = Connection(read_fd, writable=False)
        self._w = Connection(write_fd, readable=False)

    def send(self, obj: Any) -> None:
        self._w.send(obj)

    def send_bytes(self, data: bytes) -> None:
        self._w.send_bytes(data)

    def recv(self) -> Any:
        return self._r.recv()

    def recv_bytes(self, maxlength: int | None = None) -> bytes:
        return self._r.recv_bytes(maxlength)

    def close(self) -> None:
        for c in (self._r, self._w):
            try:
                c.close()
            except OSError:
                pass


def stop(process: subprocess.Popen[bytes], conn: Duplex, timeout: float) -> None:
    """Wait up to ``timeout`` s for ``process`` to exit, then terminate it (it closes its simulators on
    SIGTERM), then kill it."""
    conn.close()
    for end, wait_s in ((None, timeout), (process.terminate, 10.0), (process.kill, 5.0)):
        if end is not None:
            end()
        try:
            process.wait(wait_s)
            return
        except subprocess.TimeoutExpired:
            continue
