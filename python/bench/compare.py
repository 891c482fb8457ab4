"""Puts and gets per second from Python: spinney (both kinds), py-lmdb and
plyvel (LevelDB), through the same loop, for docs/bindings.md.

    python python/bench/compare.py [N]      (default N = 200000)

Each engine gets a fresh directory. N puts, one commit each, of 16-byte keys
in a shuffled order with 100-byte values, then N gets of them in another
order. Nothing is synced per write: spinney at durability "normal" (each
commit handed to the OS), LMDB with sync=False (MDB_NOSYNC, as the lab runs
it), LevelDB with its default (sync=False). Caches: spinney's 256 MiB,
LMDB's map 1 GiB, LevelDB's block cache 256 MiB.
Needs `pip install lmdb plyvel` besides spinney.
"""

import random
import shutil
import sys
import tempfile
import time


def keys(n, seed):
    order = list(range(n))
    random.Random(seed).shuffle(order)
    return [b"%016d" % i for i in order]


def spinney_engine(kind):
    def make(path):
        import spinney

        db = spinney.open(path, cache_size=256 << 20)
        t = db.table("t", kind)
        return t.put, t.get, db.close

    return make


def lmdb_engine(path):
    import lmdb

    env = lmdb.open(path, map_size=1 << 30, sync=False)

    def put(k, v):
        with env.begin(write=True) as txn:
            txn.put(k, v)

    def get(k):
        with env.begin() as txn:
            return txn.get(k)

    return put, get, env.close


def leveldb_engine(path):
    import plyvel

    db = plyvel.DB(path, create_if_missing=True, lru_cache_size=256 << 20)
    return db.put, db.get, db.close


def run(name, make, n):
    directory = tempfile.mkdtemp(prefix="spinney-py-bench-")
    try:
        put, get, close = make(directory + "/db")
        value = b"v" * 100
        writes, reads = keys(n, 1), keys(n, 2)
        start = time.perf_counter()
        for k in writes:
            put(k, value)
        put_s = time.perf_counter() - start
        start = time.perf_counter()
        found = 0
        for k in reads:
            if get(k) is not None:
                found += 1
        get_s = time.perf_counter() - start
        close()
        assert found == n, f"{name}: {found} of {n} found"
        print(f"| {name} | {n / put_s:,.0f} | {n / get_s:,.0f} |", flush=True)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    print(f"{n:,} puts and gets, one commit each\n")
    print("| engine | puts/s | gets/s |")
    print("|---|---|---|")
    run("spinney B-tree", spinney_engine("btree"), n)
    run("spinney LSM", spinney_engine("lsm"), n)
    run("LMDB (py-lmdb)", lmdb_engine, n)
    run("LevelDB (plyvel)", leveldb_engine, n)


if __name__ == "__main__":
    main()
