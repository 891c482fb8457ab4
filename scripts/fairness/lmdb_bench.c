/*
 * lmdb_bench: db_bench's fillrandom, overwrite and readrandom on LMDB, used
 * straight through its C API, to check the lab's lmdb engine against (the
 * fairness check of docs/peers.md, run by scripts/fairness-peers.sh).
 *
 * LMDB ships no db_bench of its own. This program uses LMDB as lmdb.h
 * describes for this load, with the configuration of the lab's adapter
 * (crates/spinney-bench/src/engine/lmdb_store.rs), so that the two runs
 * differ only in the code around the library:
 *
 * - one environment in --db (data.mdb and lock.mdb), a map of 1 TiB (the
 *   file grows as pages are used; the map is address space), one named
 *   database, "default", as the lab names its benchmarks' table;
 * - flags MDB_NOTLS (read transactions belong to the transaction handle,
 *   not to the thread, as the adapter's sessions need), MDB_NOSYNC (each
 *   commit is written to the OS but not synced, the lab's default
 *   durability), MDB_WRITEMAP (the commit writes the map's pages in place
 *   instead of calling pwrite) and MDB_NORDAHEAD (no readahead on the map,
 *   which only brings in pages a random read does not want);
 *   --writemap=0 and --nordahead=0 leave either out, to see what each does;
 * - the writes: one write transaction per entry (mdb_txn_begin, mdb_put,
 *   mdb_txn_commit), batch size 1 as in the lab's default;
 * - the reads: one read-only transaction, reset after each get and renewed
 *   before the next (mdb_txn_reset and mdb_txn_renew), which lmdb.h names
 *   as the way to read again soon without allocating a transaction, and
 *   with MDB_NOTLS without taking the reader table's lock again; a reset
 *   transaction holds no snapshot, so it never keeps the writer from
 *   reusing pages.
 *
 * Keys, values and random numbers are the lab's (see bench_common.h): with
 * the same --seed both write and read the same keys in the same order.
 * Each benchmark's time covers its operations only; the environment is
 * opened before the first and synced and closed after the last, as the
 * lab's adapter does at close.
 *
 *   gcc -std=c99 -O2 -o lmdb_bench lmdb_bench.c -llmdb
 *   ./lmdb_bench --num=1000000 --db=/tmp/lmdb_bench --seed=0
 *
 * Flags: --num=N (1000000) entries, keys drawn from [0, N); --db=DIR
 * (required; data.mdb and lock.mdb in it are deleted first);
 * --seed=S (0: a new seed per process); --benchmarks=LIST (default
 * fillrandom,overwrite,readrandom); --writemap=0|1 and --nordahead=0|1
 * (default 1).
 */
#include "bench_common.h"

#include <sys/stat.h>

#include <lmdb.h>

/* The table name the lab gives its benchmarks' one table. */
static const char TABLE_NAME[] = "default";
/* The lab's map: far beyond any run (1 TiB of address space). */
static const size_t MAP_BYTES = (size_t)1 << 40;
/* The adapter's named-database limit with one table: the table plus one. */
static const MDB_dbi MAX_DBS = 2;
/* The adapter's reader slots: its most threads (1024) plus 8. */
static const unsigned int MAX_READERS = 1024 + 8;

/* Exits with LMDB's message for `rc` unless it is 0. */
static void check(int rc, const char *what) {
    if (rc != 0) {
        die("%s: %s (%d)", what, mdb_strerror(rc), rc);
    }
}

/* Creates directory `dir` unless it exists: LMDB opens an environment in
 * an existing directory only. */
static void make_dir(const char *dir) {
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        die("create %s: %s", dir, strerror(errno));
    }
}

/* Deletes LMDB's two files in `dir`, if there: a fresh database each run. */
static void remove_database(const char *dir) {
    static const char *const files[] = {"data.mdb", "lock.mdb"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[4096];
        int n = snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        if (n < 0 || (size_t)n >= sizeof path) {
            die("the path %s/%s is too long", dir, files[i]);
        }
        if (unlink(path) != 0 && errno != ENOENT) {
            die("delete %s: %s", path, strerror(errno));
        }
    }
}

/* Writes `num` entries with keys drawn uniformly from [0, num), one write
 * transaction each: fillrandom and overwrite (which differ only in
 * whether the keys are there already). */
static struct result write_random(MDB_env *env, MDB_dbi dbi, const char *name, uint64_t seed,
                                  uint64_t index, uint64_t num) {
    struct rng r;
    worker_rng(&r, seed, index, 0);
    struct values values;
    values_init(&values, rng_next(&r));
    char key[KEY_BYTES];
    struct result result = {name, 0, 0, 0.0, 0, 0};
    double start = now_seconds();
    for (uint64_t i = 0; i < num; i++) {
        write_key(rng_below(&r, num), key);
        MDB_val k = {KEY_BYTES, key};
        /* mdb_put copies the value; LMDB never writes through this pointer. */
        MDB_val v = {VALUE_BYTES, (void *)values_next(&values)};
        MDB_txn *txn = NULL;
        check(mdb_txn_begin(env, NULL, 0, &txn), "begin a write transaction");
        int rc = mdb_put(txn, dbi, &k, &v, 0);
        if (rc != 0) {
            mdb_txn_abort(txn);
            check(rc, "put");
        }
        /* mdb_txn_commit frees the transaction whatever it returns. */
        check(mdb_txn_commit(txn), "commit");
    }
    result.seconds = now_seconds() - start;
    result.ops = num;
    result.bytes = num * (KEY_BYTES + VALUE_BYTES);
    values_free(&values);
    return result;
}

/* Gets `num` keys drawn uniformly from [0, num), each in the read-only
 * transaction `txn` renewed for it and reset after it. */
static struct result read_random(MDB_txn *txn, MDB_dbi dbi, uint64_t seed, uint64_t index,
                                 uint64_t num) {
    struct rng r;
    worker_rng(&r, seed, index, 0);
    char key[KEY_BYTES];
    struct result result = {"readrandom", 0, 0, 0.0, 1, 0};
    double start = now_seconds();
    for (uint64_t i = 0; i < num; i++) {
        write_key(rng_below(&r, num), key);
        MDB_val k = {KEY_BYTES, key};
        MDB_val v = {0, NULL};
        check(mdb_txn_renew(txn), "renew the read transaction");
        int rc = mdb_get(txn, dbi, &k, &v);
        if (rc == 0) {
            result.found++;
            result.bytes += KEY_BYTES + v.mv_size;
        } else if (rc != MDB_NOTFOUND) {
            check(rc, "get");
        }
        mdb_txn_reset(txn);
    }
    result.seconds = now_seconds() - start;
    result.ops = num;
    return result;
}

int main(int argc, char **argv) {
    program_name = "lmdb_bench";
    struct flags f = default_flags();
    int writemap = 1;
    int nordahead = 1;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if (common_flag(&f, argv[i])) {
            continue;
        } else if ((v = flag_value(argv[i], "writemap")) != NULL) {
            writemap = parse_u64("writemap", v) != 0;
        } else if ((v = flag_value(argv[i], "nordahead")) != NULL) {
            nordahead = parse_u64("nordahead", v) != 0;
        } else {
            die("unknown argument '%s' (flags: --num=N --db=DIR --seed=S "
                "--benchmarks=LIST --writemap=0|1 --nordahead=0|1)",
                argv[i]);
        }
    }
    check_common_flags(&f);
    uint64_t seed = resolve_seed(f.seed);
    unsigned int flags = MDB_NOTLS | MDB_NOSYNC;
    if (writemap) {
        flags |= MDB_WRITEMAP;
    }
    if (nordahead) {
        flags |= MDB_NORDAHEAD;
    }
    fprintf(stderr,
            "LMDB:       %s\nSeed:       %llu\nEntries:    %llu\nFlags:      MDB_NOTLS | "
            "MDB_NOSYNC%s%s\n",
            mdb_version(NULL, NULL, NULL), (unsigned long long)seed, (unsigned long long)f.num,
            writemap ? " | MDB_WRITEMAP" : "", nordahead ? " | MDB_NORDAHEAD" : "");

    make_dir(f.db);
    remove_database(f.db);
    MDB_env *env = NULL;
    check(mdb_env_create(&env), "create the environment");
    check(mdb_env_set_mapsize(env, MAP_BYTES), "set the map size");
    check(mdb_env_set_maxdbs(env, MAX_DBS), "set the named databases");
    check(mdb_env_set_maxreaders(env, MAX_READERS), "set the readers");
    check(mdb_env_open(env, f.db, flags, 0644), "open the environment");

    /* A named database opened in a write transaction keeps its handle for
     * the environment's life once the transaction commits. */
    MDB_txn *txn = NULL;
    MDB_dbi dbi = 0;
    check(mdb_txn_begin(env, NULL, 0, &txn), "begin a write transaction");
    int rc = mdb_dbi_open(txn, TABLE_NAME, MDB_CREATE, &dbi);
    if (rc != 0) {
        mdb_txn_abort(txn);
        check(rc, "open the table");
    }
    check(mdb_txn_commit(txn), "commit the table");

    /* The read transaction is made once, outside the timing, and kept
     * reset between reads. */
    MDB_txn *read_txn = NULL;
    check(mdb_txn_begin(env, NULL, MDB_RDONLY, &read_txn), "begin the read transaction");
    mdb_txn_reset(read_txn);

    for (int i = 0; i < f.benchmark_count; i++) {
        const char *name = f.benchmarks[i];
        struct result result;
        if (strcmp(name, "readrandom") == 0) {
            result = read_random(read_txn, dbi, seed, (uint64_t)i, f.num);
        } else {
            result = write_random(env, dbi, name, seed, (uint64_t)i, f.num);
        }
        report(&result);
    }

    mdb_txn_abort(read_txn);
    /* With MDB_NOSYNC nothing forces the last commits to disk: sync at the
     * end, as the adapter does when the lab closes the store. */
    check(mdb_env_sync(env, 1), "sync the environment");
    mdb_env_close(env);
    return 0;
}
