"""An append-only JSON-lines log of a long study's finished jobs, so a run that is cut resumes where it stopped.

The big rule-reward tables (thousands of commits, hours on two cores) outlive a session. Each finished job is
appended as one line the moment it ends (flushed and synced), under a header line that names the study's config
and its fingerprint. A rerun of the same config reads what is there and runs only the rest; a rerun of another
config is refused, naming the fields that differ, so two studies never mix in one table. The summary is a pure
function of the log, written when every job is in (or on demand, labelled partial).

A run killed mid-write leaves at most one truncated last line: reading ignores it, and the writer cuts it off
before appending. One writer at a time: the writer holds an exclusive lock on the file (a second run on the same
folder is refused, not interleaved).
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from dreamer_gym.errors import ConfigError

FORMAT = 1  # the log's own layout; a log of another layout is refused


def fingerprint(fields: Mapping[str, Any]) -> str:
    """A short hash of the fields that decide a study's records (canonical JSON: key order and tuple/list do not
    matter)."""
    return hashlib.sha256(json.dumps(fields, sort_keys=True, default=list).encode()).hexdigest()[:16]


def canonical(fields: Mapping[str, Any]) -> dict[str, Any]:
    """``fields`` as they read back from JSON (tuples become lists), so a config compares equal to its log."""
    return json.loads(json.dumps(dict(fields), sort_keys=True, default=list))


@dataclass(frozen=True)
class RecordLog:
    """A log as read: its header (``config``, ``fingerprint`` and whatever the study put there) and its lines
    after the header, in the order they were written."""

    path: Path
    header: dict[str, Any]
    lines: tuple[dict[str, Any], ...]

    @classmethod
    def read(cls, path: str | Path) -> RecordLog | None:
        """The log at ``path``, or None where there is none (or only a cut header); a truncated last line (a run
        killed mid-write) is left out."""
        path = Path(path)
        if not path.exists():
            return None
        parsed = []
        for text in path.read_bytes().split(b"\n"):
            if text.strip():
                try:
                    parsed.append(json.loads(text))
                except json.JSONDecodeError:
                    break  # only the last line can be cut; nothing after it was written
        if not parsed:
            return None
        header = parsed[0]
        if header.get("kind") != "header" or header.get("format") != FORMAT:
            raise ConfigError(f"{path} is not a study log of format {FORMAT} (its first line is not its header); "
                              "pass another output folder, or move the file away to start anew")
        return cls(path, header, tuple(parsed[1:]))

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [line for line in self.lines if line.get("kind") == kind]

    def check(self, fields: Mapping[str, Any]) -> None:
        """Refuse a config whose record-deciding ``fields`` differ from the log's, naming each field and both
        values."""
        mine, theirs = canonical(fields), self.header.get("config", {})
        if fingerprint(mine) == self.header.get("fingerprint") and mine == theirs:
            return
        differ = sorted(k for k in {*mine, *theirs} if mine.get(k) != theirs.get(k))
        said = "; ".join(f"`{k}`: the log has {json.dumps(theirs.get(k))}, this run {json.dumps(mine.get(k))}"
                         for k in differ)
        raise ConfigError(f"{self.path} holds the records of another config ({said}). Rerun with the log's "
                          "settings to resume it, or pass another output folder (or move the file away) to start a "
                          "new study")


class LogWriter:
    """Appends lines to an open, locked log; each line is on disk before :meth:`append` returns."""

    def __init__(self, handle: IO[bytes]) -> None:
        self._handle = handle

    def append(self, line: Mapping[str, Any]) -> None:
        self._handle.write(json.dumps(line, separators=(",", ":")).encode() + b"\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())


@contextmanager
def open_log(path: str | Path, header: Mapping[str, Any]) -> Iterator[LogWriter]:
    """Open the log at ``path`` for appending, locked for this process: a new log gets ``header`` (with
    ``kind``, ``format`` and the ``fingerprint`` of ``header["config"]``) as its first line; an existing one has a
    truncated last line cut off. The caller has checked the existing header (:meth:`RecordLog.check`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("ab+") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ConfigError(f"{path} is being written by another run (locked); wait for it, or pass another "
                              "output folder") from None
        handle.seek(0)
        data = handle.read()
        if data and not data.endswith(b"\n"):
            handle.truncate(data.rfind(b"\n") + 1)  # the line a killed run was writing
        writer = LogWriter(handle)
        if not data.strip(b"\n") or b"\n" not in data:
            handle.truncate(0)
            config = canonical(header["config"])
            writer.append({"kind": "header", "format": FORMAT, **header, "config": config,
                           "fingerprint": fingerprint(config)})
        try:
            yield writer
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
