"""The SQLite store: bank versions are write-once, the eval cache round-trips, files persist."""
from __future__ import annotations

import sqlite3
import threading

import pytest

from dreamer_gym.errors import StoreError
from dreamer_gym.memory import MemoryBank, MemoryEntry, Provenance
from dreamer_gym.store import Store


def make_bank(n: int = 5, tag: str = "") -> MemoryBank:
    return MemoryBank(
        MemoryEntry("fact", f"fact {tag}{i}", "fam", ("t",), (Provenance("t1", i, i + 1),), session=i % 3,
                    supersedes=(f"eold{i}",))
        for i in range(n)
    )


@pytest.fixture
def store():
    s = Store()
    yield s
    s.close()


def test_put_bank_is_idempotent(store):
    bank = make_bank()
    assert store.put_bank(bank, meta={"a": 1}) == bank.hash
    assert store.put_bank(bank, parent="bother", meta={"b": 2}) == bank.hash
    assert store.bank_hashes() == [bank.hash]
    assert store.bank_parent(bank.hash) is None  # the first write wins; a repeat changes nothing
    # a bank built from the same entries in another order is the same version
    assert store.put_bank(MemoryBank(reversed(bank.entries))) == bank.hash
    assert store.bank_hashes() == [bank.hash]


def test_get_bank_roundtrip(store):
    bank, child = make_bank(), make_bank(3, "x")
    store.put_bank(bank)
    store.put_bank(child, parent=bank.hash)
    back = store.get_bank(bank.hash)
    assert back == bank
    assert [e.to_dict() for e in back] == [e.to_dict() for e in bank]  # session, tags, supersedes kept
    assert store.get_bank(child.hash) == child and store.bank_parent(child.hash) == bank.hash
    assert store.bank_hashes() == sorted([bank.hash, child.hash])
    assert store.has_bank(child.hash) and not store.has_bank("bnope")
    with pytest.raises(KeyError, match="bnope"):
        store.get_bank("bnope")
    empty = MemoryBank([])
    store.put_bank(empty)
    assert store.get_bank(empty.hash) == empty and len(store.get_bank(empty.hash)) == 0


def test_banks_sharing_entries(store):
    a, b = make_bank(4), make_bank(6)  # b's entries include all of a's
    store.put_bank(a)
    store.put_bank(b)
    assert store.get_bank(a.hash) == a and store.get_bank(b.hash) == b


# every SQL path that would rewrite a stored version: (statement, its arguments for a stored bank)
REFUSED = {
    "update-bank": ("UPDATE banks SET parent='bevil' WHERE hash=?", lambda b: (b.hash,)),
    "update-bank-meta": ("UPDATE banks SET meta='{}' WHERE hash=?", lambda b: (b.hash,)),
    "delete-bank": ("DELETE FROM banks WHERE hash=?", lambda b: (b.hash,)),
    "replace-bank": ("INSERT OR REPLACE INTO banks VALUES (?, 'bevil', '{}')", lambda b: (b.hash,)),
    "delete-bank-entries": ("DELETE FROM bank_entries WHERE bank=?", lambda b: (b.hash,)),
    "update-bank-entries": ("UPDATE bank_entries SET entry='eevil' WHERE bank=? AND entry=?",
                            lambda b: (b.hash, b.entries[0].id)),
    "replace-bank-entries": ("INSERT OR REPLACE INTO bank_entries VALUES (?, ?)", lambda b: (b.hash, b.entries[0].id)),
    "update-entries": ("UPDATE entries SET body='{}' WHERE id IN (SELECT entry FROM bank_entries WHERE bank=?)",
                       lambda b: (b.hash,)),
    "delete-entries": ("DELETE FROM entries WHERE id=?", lambda b: (b.entries[0].id,)),
    "replace-entries": ("INSERT OR REPLACE INTO entries VALUES (?, '{}')", lambda b: (b.entries[0].id,)),
}


@pytest.mark.parametrize("sql,args", REFUSED.values(), ids=REFUSED.keys())
def test_stored_versions_cannot_be_rewritten_with_raw_sql(store, sql, args):
    bank = make_bank()
    store.put_bank(bank, meta={"k": "v"})
    with pytest.raises(sqlite3.IntegrityError, match="immutable"):
        store._db.execute(sql, args(bank))
    assert store.has_bank(bank.hash) and store.bank_parent(bank.hash) is None
    assert store.get_bank(bank.hash) == bank


@pytest.mark.parametrize("sql,args", REFUSED.values(), ids=REFUSED.keys())
def test_stored_versions_cannot_be_rewritten_through_the_writer(store, sql, args):
    bank = make_bank()
    store.put_bank(bank)
    with pytest.raises(StoreError, match="immutable"):
        store._write([(sql, args(bank))])
    assert store.get_bank(bank.hash) == bank
    store.put_bank(make_bank(2, "y"))  # the rollback left the connection usable
    assert len(store.bank_hashes()) == 2


def test_concurrent_put_of_the_same_bank_is_idempotent():
    """Many threads storing one new bank at once: no error, one version (the put used to race)."""
    bank = make_bank(40)
    for _ in range(30):
        store = Store()
        barrier = threading.Barrier(6)
        errors: list[BaseException] = []

        def put(store: Store = store, barrier: threading.Barrier = barrier, errors: list[BaseException] = errors) -> None:
            barrier.wait()
            try:
                store.put_bank(bank)
            except BaseException as exc:  # noqa: BLE001 - collected and re-raised below
                errors.append(exc)

        threads = [threading.Thread(target=put) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        try:
            assert errors == []
            assert store.bank_hashes() == [bank.hash] and store.get_bank(bank.hash) == bank
        finally:
            store.close()


def test_concurrent_put_from_two_handles_on_one_file(tmp_path):
    """Two handles (as two vector-env processes would have) storing the same banks on one file."""
    path = tmp_path / "shared.sqlite"
    banks = [make_bank(30, f"b{i}") for i in range(8)]
    handles = [Store(path) for _ in range(2)]
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(handles))

    def put_all(store: Store) -> None:
        barrier.wait()
        try:
            for b in banks:
                store.put_bank(b)
        except BaseException as exc:  # noqa: BLE001 - collected and re-raised below
            errors.append(exc)

    threads = [threading.Thread(target=put_all, args=(h,)) for h in handles]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert errors == []
        assert handles[0].bank_hashes() == sorted(b.hash for b in banks)
        assert all(handles[1].get_bank(b.hash) == b for b in banks)
    finally:
        for h in handles:
            h.close()


def test_eval_cache_put_get(store):
    assert store.get_cached(["k1", "k2"]) == {}
    value = {"score": 25.0, "actions": ["look around"], "nested": {"x": [1, 2]}}
    store.put_cached("k1", value)
    assert store.get_cached(["k1", "k2"]) == {"k1": value}
    store.put_cached("k1", {"score": 50.0})  # the cache is not a bank: overwriting a key is allowed
    assert store.get_cached({"k1"}) == {"k1": {"score": 50.0}}
    assert store.get_cached([]) == {}


def test_eval_cache_many_keys(store):
    for i in range(1203):  # more than the 500-key chunk of one SELECT
        store.put_cached(f"key{i}", {"i": i})
    got = store.get_cached(f"key{i}" for i in range(-5, 1210))
    assert len(got) == 1203 and all(got[f"key{i}"] == {"i": i} for i in range(1203))


def test_trajectories(store, pool):
    trajs = sorted(pool.trajectories.values(), key=lambda t: t.id)[:5]
    store.put_trajectories(trajs)
    store.put_trajectories(trajs)  # idempotent
    for t in trajs:
        back = store.get_trajectory(t.id)
        assert back == t and back.id == t.id and back.to_dict() == t.to_dict()
    assert store.get_trajectory("tnope") is None


def test_file_store_persists_across_instances(tmp_path, pool):
    path = tmp_path / "nested" / "dir" / "store.sqlite"  # parents are created
    bank, child = make_bank(), make_bank(2, "c")
    traj = next(iter(pool.trajectories.values()))
    first = Store(path)
    first.put_bank(bank, meta={"origin": "test"})
    first.put_bank(child, parent=bank.hash)
    first.put_trajectories([traj])
    first.put_cached("key", {"score": 8.0})
    first.close()
    assert path.exists()

    second = Store(path)
    try:
        assert second.bank_hashes() == sorted([bank.hash, child.hash])
        assert second.get_bank(bank.hash) == bank and second.get_bank(child.hash) == child
        assert second.bank_parent(child.hash) == bank.hash
        assert second.get_trajectory(traj.id) == traj
        assert second.get_cached(["key"]) == {"key": {"score": 8.0}}
        # the triggers are part of the file: still enforced after reopening
        with pytest.raises(sqlite3.IntegrityError, match="immutable"):
            second._db.execute("UPDATE banks SET parent='x' WHERE hash=?", (bank.hash,))
        assert second.put_bank(bank) == bank.hash and len(second.bank_hashes()) == 2
    finally:
        second.close()


def test_two_open_handles_on_one_file(tmp_path):
    path = tmp_path / "store.sqlite"
    a, b = Store(path), Store(path)
    try:
        bank = make_bank()
        a.put_bank(bank)
        assert b.has_bank(bank.hash) and b.get_bank(bank.hash) == bank
        assert b.put_bank(bank) == bank.hash
        b.put_cached("k", {"v": 1})
        assert a.get_cached(["k"]) == {"k": {"v": 1}}
    finally:
        a.close()
        b.close()
