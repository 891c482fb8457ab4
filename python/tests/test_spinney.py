"""The Python package: mapping, ranges, batches, transactions, snapshots,
figures, errors, threads, and a process killed while it writes."""

import collections.abc
import os
import shelve
import signal
import subprocess
import sys
import threading
import time

import pytest

import spinney


@pytest.fixture
def db(tmp_path):
    with spinney.open(tmp_path / "db", background_threads=1) as d:
        yield d


@pytest.mark.parametrize("kind", ["lsm", "btree"])
def test_a_table_is_a_mutable_mapping_of_bytes(db, kind):
    t = db.table("t", kind)
    assert t.name == "t" and t.kind == kind
    assert isinstance(t, collections.abc.MutableMapping)
    t[b"b"] = b"2"
    t[b"a"] = b"1"
    t.put(b"c", b"3")
    assert t[b"a"] == b"1" and t.get(b"b") == b"2"
    assert t.get(b"z") is None and t.get(b"z", b"d") == b"d"
    with pytest.raises(KeyError):
        t[b"z"]
    assert b"a" in t and b"z" not in t
    assert list(t) == [b"a", b"b", b"c"] and len(t) == 3
    assert list(t.keys()) == [b"a", b"b", b"c"]
    assert list(t.values()) == [b"1", b"2", b"3"]
    assert dict(t.items()) == {b"a": b"1", b"b": b"2", b"c": b"3"}
    del t[b"b"]
    with pytest.raises(KeyError):
        del t[b"b"]
    t.delete(b"b")  # no error when absent
    assert t.pop(b"a") == b"1" and t.pop(b"a", b"gone") == b"gone"
    with pytest.raises(KeyError):
        t.pop(b"a")
    assert t.setdefault(b"x", b"9") == b"9" and t.setdefault(b"x", b"0") == b"9"
    t.update({b"m": b"1"}, n=b"2")
    t.update([(b"o", b"3")])
    assert dict(t.items()) == {b"c": b"3", b"m": b"1", b"n": b"2", b"o": b"3", b"x": b"9"}
    assert t.popitem() == (b"c", b"3")
    t.clear()
    assert len(t) == 0
    with pytest.raises(KeyError):
        t.popitem()


def test_ranges_and_prefixes_both_ways(db):
    t = db.table("t", "btree")
    for k in [b"a1", b"a2", b"a3", b"b1", b"\xff\xff"]:
        t[k] = k.upper()
    assert [k for k, _ in t.range(b"a2", b"b1")] == [b"a2", b"a3"]
    assert [k for k, _ in t.range(b"a2", b"b1", reverse=True)] == [b"a3", b"a2"]
    assert [k for k, _ in t.range(start=b"b")] == [b"b1", b"\xff\xff"]
    assert [k for k, _ in t.range(end=b"a2")] == [b"a1"]
    assert list(t.prefix(b"a", reverse=True))[0] == (b"a3", b"A3")
    assert [k for k, _ in t.prefix(b"\xff")] == [b"\xff\xff"]
    t.delete_range(b"a1", b"a3")
    assert list(t) == [b"a3", b"b1", b"\xff\xff"]


def test_shelve_works_on_a_table(db):
    t = db.table("shelf")
    with shelve.Shelf(t) as s:
        s["config"] = {"retries": 3, "hosts": ["a", "b"]}
        s["n"] = 42
    with shelve.Shelf(db.table("shelf")) as s:
        assert s["config"]["hosts"] == ["a", "b"] and s["n"] == 42
        assert sorted(s.keys()) == ["config", "n"] and "n" in s


def test_tables_are_listed_created_and_dropped(db):
    db.table("a")
    db.create_table("b", "btree", page_size=4096, compression="lz4")
    with pytest.raises(spinney.TableExistsError):
        db.create_table("b")
    assert db.tables() == ["a", "b"]
    db.drop_table("a")
    assert db.tables() == ["b"]
    with pytest.raises(spinney.NoSuchTableError) as e:
        db.drop_table("a")
    assert isinstance(e.value, KeyError) and isinstance(e.value, spinney.Error)


def test_a_batch_applies_whole_and_is_dropped_on_an_exception(db):
    a, b = db.table("a"), db.table("b", "btree")
    with db.batch() as batch:
        batch.put(a, b"k", b"1")
        batch.put(b, b"k", b"2")
        batch.delete(a, b"none")
        assert len(batch) == 3
    assert a[b"k"] == b"1" and b[b"k"] == b"2"
    with pytest.raises(RuntimeError):
        with db.batch() as batch:
            batch.put(a, b"k", b"changed")
            batch.delete_range(b, b"a", b"z")
            raise RuntimeError("abandon")
    assert a[b"k"] == b"1" and b[b"k"] == b"2"
    batch = db.batch()
    batch.delete_range(b, b"a", b"z")
    batch.write()
    assert b.get(b"k") is None
    with pytest.raises(ValueError):
        batch.put(a, b"x", b"y")


def test_transactions_commit_roll_back_and_conflict(db):
    t = db.table("t", "btree")
    t[b"bob"] = b"100"
    with db.transaction() as tx:
        bob = tx.get_for_update(t, b"bob")
        tx.put(t, b"bob", str(int(bob) + 5).encode())
        assert tx.get(t, b"bob") == b"105" and t[b"bob"] == b"100"
        tx.delete(t, b"nobody")
    assert t[b"bob"] == b"105"
    with pytest.raises(RuntimeError):
        with db.transaction() as tx:
            tx.put(t, b"bob", b"0")
            raise RuntimeError("abandon")
    assert t[b"bob"] == b"105"
    with pytest.raises(spinney.ConflictError):
        with db.transaction() as tx:
            tx.get_for_update(t, b"bob")
            t[b"bob"] = b"7"  # another commit, after the transaction began
            tx.put(t, b"bob", b"8")
    assert t[b"bob"] == b"7"
    tx = db.transaction()
    tx.delete_range(t, b"a", b"z")
    tx.rollback()
    with pytest.raises(ValueError):
        tx.commit()
    assert t[b"bob"] == b"7"

    attempts = []

    def add_one(tx):
        v = int(tx.get_for_update(t, b"bob"))
        if not attempts:
            t[b"bob"] = b"10"  # the first attempt loses
        attempts.append(v)
        tx.put(t, b"bob", str(v + 1).encode())
        return v + 1

    assert db.transact(add_one) == 11
    assert attempts == [7, 10] and t[b"bob"] == b"11"

    # A body that always loses runs as often as the engine's own
    # Db::transact would run it, then the conflict is raised.
    runs = []

    def always_loses(tx):
        tx.get_for_update(t, b"bob")
        runs.append(1)
        t[b"bob"] = str(len(runs)).encode()
        tx.put(t, b"bob", b"mine")

    with pytest.raises(spinney.ConflictError):
        db.transact(always_loses)
    assert len(runs) == spinney.TRANSACT_ATTEMPTS == 1000


def test_a_snapshot_keeps_its_view_until_closed(db):
    t = db.table("t")
    t[b"a"] = b"old"
    with db.snapshot() as snap:
        t[b"a"] = b"new"
        t[b"b"] = b"new"
        assert snap.get(t, b"a") == b"old" and snap.get(t, b"b") is None
        assert list(snap.range(t)) == [(b"a", b"old")]
        assert list(snap.prefix(t, b"a")) == [(b"a", b"old")]
    with pytest.raises(ValueError):
        snap.get(t, b"a")


def test_stats_are_a_dict(db):
    t = db.table("t", "btree")
    t[b"k"] = b"v"
    db.flush()
    stats = db.stats()
    assert isinstance(stats, dict)
    assert [table["name"] for table in stats["tables"]] == ["t"]


def test_bad_input_is_a_clear_error(db, tmp_path):
    t = db.table("t", "btree", page_size=4096)
    with pytest.raises(TypeError, match="key must be bytes, not str: encode it"):
        t["a"] = b"1"
    with pytest.raises(TypeError, match="value must be bytes, not int"):
        t[b"a"] = 1
    with pytest.raises(TypeError, match="key must be bytes, not NoneType"):
        t.get(None)
    with pytest.raises(TypeError):
        db.batch().put("not a table", b"k", b"v")
    with pytest.raises(ValueError, match="kind"):
        db.table("u", "hash")
    with pytest.raises(TypeError, match='unknown table option "pages"'):
        db.table("u", "btree", pages=3)
    with pytest.raises(ValueError, match="compression"):
        db.table("u", "btree", compression="gzip")
    with pytest.raises(ValueError, match="durability"):
        spinney.open(tmp_path / "other", durability="sometimes")
    with pytest.raises(spinney.InvalidArgumentError) as e:
        t[b"k" * 5000] = b"v"  # over a 4 KiB page's key limit
    assert isinstance(e.value, ValueError)
    with pytest.raises(spinney.LockedError):
        spinney.open(tmp_path / "db")  # the fixture's database, open


def test_read_only_and_closed_databases_refuse_writes(tmp_path):
    path = tmp_path / "db"
    with spinney.open(path) as db:
        db.table("t")[b"k"] = b"v"
    with spinney.open(path, read_only=True) as db:
        t = db.table("t")
        assert t[b"k"] == b"v"
        with pytest.raises(spinney.ReadOnlyError):
            t[b"k"] = b"w"
    db = spinney.open(path)
    t = db.table("t")
    db.close()
    with pytest.raises(spinney.ClosedError):
        t[b"k"] = b"w"
    with pytest.raises(spinney.Error):
        spinney.open(tmp_path / "missing", create_if_missing=False)


def test_threads_write_and_read_at_once(db):
    t = db.table("t", "btree")
    per_thread = 2000

    def work(n):
        for i in range(per_thread):
            t[b"%d-%06d" % (n, i)] = b"%d" % i
        for i in range(0, per_thread, 7):
            assert t[b"%d-%06d" % (n, i)] == b"%d" % i

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(t) == 4 * per_thread


def test_a_long_engine_call_lets_other_threads_run(db):
    # With the GIL held through a native call, no other Python thread runs
    # until it returns; released, the main thread keeps running beside it.
    t = db.table("t")
    with db.batch() as batch:
        for i in range(300_000):
            batch.put(t, b"%08d" % i, b"v" * 20)
    running = threading.Event()
    done = threading.Event()
    took = []

    def count():
        running.set()
        start = time.monotonic()
        assert len(t) == 300_000
        took.append(time.monotonic() - start)
        done.set()

    th = threading.Thread(target=count)
    th.start()
    running.wait()
    seen = []
    while not done.is_set():
        seen.append(time.monotonic())
    th.join()
    beside = seen[-1] - seen[0] if len(seen) > 1 else 0.0
    assert beside > took[0] / 2, f"the main thread ran {beside:.3f} s of the call's {took[0]:.3f} s"


WRITER = r"""
import sys, spinney
db = spinney.open(sys.argv[1], durability="full")
t = db.table("t", sys.argv[2])
i = 0
while True:
    with db.transaction() as tx:
        tx.put(t, b"%08d" % i, b"value %d" % i)
    print(i, flush=True)
    i += 1
"""


@pytest.mark.parametrize("kind", ["lsm", "btree"])
def test_a_process_killed_while_it_writes_keeps_what_it_acknowledged(tmp_path, kind):
    path = tmp_path / "db"
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), kind], stdout=subprocess.PIPE, text=True
    )
    acknowledged = -1
    for line in writer.stdout:
        acknowledged = int(line)
        if acknowledged >= 300:
            break
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()
    assert acknowledged >= 300
    with spinney.open(path) as db:
        t = db.table("t", kind)
        keys = list(t)
        for i in range(acknowledged + 1):
            assert t[b"%08d" % i] == b"value %d" % i
        # Nothing but whole commits, in order: a prefix of the writes.
        assert keys == [b"%08d" % i for i in range(len(keys))]
