"""SQLite persistence: bank versions, entries, trajectories and the evaluation cache.

Every write is one transaction. A bank version, once stored, is never rewritten: storing the same
hash again is a no-op, and the schema has no UPDATE path for banks or entries.
"""
from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from dreamer_gym.errors import StoreError
from dreamer_gym.memory import MemoryBank, MemoryEntry, Trajectory

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (id TEXT PRIMARY KEY, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS banks (hash TEXT PRIMARY KEY, parent TEXT, meta TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS bank_entries (bank TEXT NOT NULL, entry TEXT NOT NULL,
    PRIMARY KEY (bank, entry));
CREATE TABLE IF NOT EXISTS trajectories (id TEXT PRIMARY KEY, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS eval_cache (key TEXT PRIMARY KEY, body TEXT NOT NULL);
CREATE TRIGGER IF NOT EXISTS banks_immutable BEFORE UPDATE ON banks
    BEGIN SELECT RAISE(ABORT, 'stored bank versions are immutable'); END;
CREATE TRIGGER IF NOT EXISTS bank_entries_immutable BEFORE DELETE ON bank_entries
    BEGIN SELECT RAISE(ABORT, 'stored bank versions are immutable'); END;
CREATE TRIGGER IF NOT EXISTS entries_immutable BEFORE UPDATE ON entries
    BEGIN SELECT RAISE(ABORT, 'stored entries are immutable'); END;
CREATE TRIGGER IF NOT EXISTS banks_undeletable BEFORE DELETE ON banks
    BEGIN SELECT RAISE(ABORT, 'stored bank versions are immutable'); END;
CREATE TRIGGER IF NOT EXISTS bank_entries_fixed BEFORE UPDATE ON bank_entries
    BEGIN SELECT RAISE(ABORT, 'stored bank versions are immutable'); END;
CREATE TRIGGER IF NOT EXISTS entries_undeletable BEFORE DELETE ON entries
    BEGIN SELECT RAISE(ABORT, 'stored entries are immutable'); END;
"""


class Store:
    """A thread-safe handle on one SQLite file (``":memory:"`` for a throwaway store)."""

    def __init__(self, path: str | Path = ":memory:") -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL" if self.path != ":memory:" else "PRAGMA journal_mode=MEMORY")
        self._db.execute("PRAGMA recursive_triggers=ON")  # so INSERT OR REPLACE fires the delete triggers
        self._db.execute("PRAGMA busy_timeout=30000")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _write(self, statements: Iterable[tuple[str, tuple[Any, ...]]]) -> None:
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                for sql, args in statements:
                    self._db.execute(sql, args)
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                self._db.execute("ROLLBACK")
                raise StoreError(f"store write failed and was rolled back: {exc}") from exc

    # --- banks ---------------------------------------------------------------------------------
    def put_bank(self, bank: MemoryBank, parent: str | None = None, meta: dict[str, Any] | None = None) -> str:
        """Store a bank version (idempotent by hash: banks are content-addressed, so a concurrent writer of
        the same hash writes the same rows, and INSERT OR IGNORE makes the race harmless)."""
        if self.has_bank(bank.hash):
            return bank.hash
        statements: list[tuple[str, tuple[Any, ...]]] = [
            ("INSERT OR IGNORE INTO entries VALUES (?, ?)", (e.id, json.dumps(e.to_dict(), sort_keys=True)))
            for e in bank
        ]
        statements.append(("INSERT OR IGNORE INTO banks VALUES (?, ?, ?)", (bank.hash, parent, json.dumps(meta or {}))))
        statements += [("INSERT OR IGNORE INTO bank_entries VALUES (?, ?)", (bank.hash, e.id)) for e in bank]
        self._write(statements)
        return bank.hash

    def has_bank(self, bank_hash: str) -> bool:
        with self._lock:
            return self._db.execute("SELECT 1 FROM banks WHERE hash=?", (bank_hash,)).fetchone() is not None

    def get_bank(self, bank_hash: str) -> MemoryBank:
        with self._lock:
            rows = self._db.execute(
                "SELECT e.body FROM bank_entries b JOIN entries e ON e.id=b.entry WHERE b.bank=?", (bank_hash,)
            ).fetchall()
            known = self._db.execute("SELECT 1 FROM banks WHERE hash=?", (bank_hash,)).fetchone()
        if known is None:
            raise KeyError(f"no stored bank {bank_hash!r}")
        bank = MemoryBank(MemoryEntry.from_dict(json.loads(r[0])) for r in rows)
        if bank.hash != bank_hash:
            raise StoreError(f"stored bank {bank_hash} reloads as {bank.hash}: the store is corrupt")
        return bank

    def bank_hashes(self) -> list[str]:
        with self._lock:
            return [r[0] for r in self._db.execute("SELECT hash FROM banks ORDER BY hash")]

    def bank_parent(self, bank_hash: str) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT parent FROM banks WHERE hash=?", (bank_hash,)).fetchone()
        return None if row is None else row[0]

    # --- trajectories ----------------------------------------------------------------------------
    def put_trajectories(self, trajectories: Iterable[Trajectory]) -> None:
        self._write(
            ("INSERT OR IGNORE INTO trajectories VALUES (?, ?)", (t.id, json.dumps(t.to_dict(), sort_keys=True)))
            for t in trajectories
        )

    def get_trajectory(self, trajectory_id: str) -> Trajectory | None:
        with self._lock:
            row = self._db.execute("SELECT body FROM trajectories WHERE id=?", (trajectory_id,)).fetchone()
        return None if row is None else Trajectory.from_dict(json.loads(row[0]))

    # --- evaluation cache --------------------------------------------------------------------------
    def get_cached(self, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
        keys = list(keys)
        found: dict[str, dict[str, Any]] = {}
        with self._lock:
            for i in range(0, len(keys), 500):
                chunk = keys[i : i + 500]
                marks = ",".join("?" * len(chunk))
                for key, body in self._db.execute(f"SELECT key, body FROM eval_cache WHERE key IN ({marks})", chunk):
                    found[key] = json.loads(body)
        return found

    def put_cached(self, key: str, value: dict[str, Any]) -> None:
        self._write([("INSERT OR REPLACE INTO eval_cache VALUES (?, ?)", (key, json.dumps(value, sort_keys=True)))])
