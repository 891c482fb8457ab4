/*
 * leveldb_bench: db_bench's fillrandom, overwrite and readrandom on LevelDB,
 * through its C API (leveldb/c.h), to check the lab's leveldb engine
 * against (the fairness check of docs/peers.md, run by
 * scripts/fairness-peers.sh).
 *
 * Debian's libleveldb-dev ships no db_bench. This program does what
 * LevelDB's own db_bench (benchmarks/db_bench.cc) does for these three
 * benchmarks, in C, with the options of the lab's adapter
 * (crates/spinney-bench/src/engine/leveldb_store.rs), so that the two runs
 * differ only in the code around the library:
 *
 * - options: create_if_missing; an LRU block cache of --cache_size bytes;
 *   LevelDB's bloom filter policy of --bloom_bits bits per key (the filter
 *   the library's documentation recommends for random reads); no
 *   compression; write_buffer_size of --write_buffer_size bytes;
 *   max_file_size (the size of each table file) of --max_file_size bytes,
 *   when given; LevelDB's defaults otherwise;
 * - keys stored as they are: with one table the adapter adds no prefix;
 * - the writes: WriteOptions with sync=false (each write reaches the OS,
 *   not the disk), one entry per write, put in a write batch that is
 *   cleared and reused, as db_bench's WriteRandom does;
 * - the reads: default ReadOptions and leveldb_get, which returns a
 *   malloc()ed copy of the value, freed with leveldb_free.
 *
 * Keys, values and random numbers are the lab's (see bench_common.h): with
 * the same --seed both write and read the same keys in the same order.
 * Each benchmark's time covers its operations only; the database is opened
 * before the first and closed after the last (close waits for a running
 * compaction), and background compactions run on across benchmarks, as in
 * db_bench and the lab.
 *
 *   gcc -std=c99 -O2 -o leveldb_bench leveldb_bench.c -lleveldb
 *   ./leveldb_bench --num=1000000 --db=/tmp/leveldb_bench --seed=0
 *
 * Flags: --num=N (1000000) entries, keys drawn from [0, N); --db=DIR
 * (required; a database in it is destroyed first, as db_bench does);
 * --cache_size=BYTES (67108864); --bloom_bits=B (10; 0 for none);
 * --write_buffer_size=BYTES (8388608); --max_file_size=BYTES (0, the
 * default: LevelDB's own, 2 MiB); --seed=S (0: a new seed per process);
 * --benchmarks=LIST (default fillrandom,overwrite,readrandom).
 */
#include "bench_common.h"

#include <leveldb/c.h>

/* Exits with LevelDB's message if `err` holds one, freeing it. */
static void check(char *err, const char *what) {
    if (err != NULL) {
        fprintf(stderr, "%s: %s: %s\n", program_name, what, err);
        leveldb_free(err);
        exit(1);
    }
}

/* Exits if a constructor of the C API returned NULL. */
static void *created(void *handle, const char *what) {
    if (handle == NULL) {
        die("%s: the C API returned NULL", what);
    }
    return handle;
}

/* Writes `num` entries with keys drawn uniformly from [0, num), one write
 * each: fillrandom and overwrite. */
static struct result write_random(leveldb_t *db, const leveldb_writeoptions_t *options,
                                  leveldb_writebatch_t *batch, const char *name, uint64_t seed,
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
        leveldb_writebatch_clear(batch);
        /* The batch copies the key and value. */
        leveldb_writebatch_put(batch, key, KEY_BYTES, values_next(&values), VALUE_BYTES);
        char *err = NULL;
        leveldb_write(db, options, batch, &err);
        check(err, "write");
    }
    result.seconds = now_seconds() - start;
    result.ops = num;
    result.bytes = num * (KEY_BYTES + VALUE_BYTES);
    values_free(&values);
    return result;
}

/* Gets `num` keys drawn uniformly from [0, num). */
static struct result read_random(leveldb_t *db, const leveldb_readoptions_t *options,
                                 uint64_t seed, uint64_t index, uint64_t num) {
    struct rng r;
    worker_rng(&r, seed, index, 0);
    char key[KEY_BYTES];
    struct result result = {"readrandom", 0, 0, 0.0, 1, 0};
    double start = now_seconds();
    for (uint64_t i = 0; i < num; i++) {
        write_key(rng_below(&r, num), key);
        size_t len = 0;
        char *err = NULL;
        char *value = leveldb_get(db, options, key, KEY_BYTES, &len, &err);
        if (value != NULL) {
            result.found++;
            result.bytes += KEY_BYTES + len;
            leveldb_free(value);
        }
        check(err, "get");
    }
    result.seconds = now_seconds() - start;
    result.ops = num;
    return result;
}

int main(int argc, char **argv) {
    program_name = "leveldb_bench";
    struct flags f = default_flags();
    uint64_t cache_size = 67108864;
    uint64_t bloom_bits = 10;
    uint64_t write_buffer_size = 8388608;
    uint64_t max_file_size = 0;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if (common_flag(&f, argv[i])) {
            continue;
        } else if ((v = flag_value(argv[i], "cache_size")) != NULL) {
            cache_size = parse_u64("cache_size", v);
        } else if ((v = flag_value(argv[i], "bloom_bits")) != NULL) {
            bloom_bits = parse_u64("bloom_bits", v);
        } else if ((v = flag_value(argv[i], "write_buffer_size")) != NULL) {
            write_buffer_size = parse_u64("write_buffer_size", v);
        } else if ((v = flag_value(argv[i], "max_file_size")) != NULL) {
            max_file_size = parse_u64("max_file_size", v);
        } else {
            die("unknown argument '%s' (flags: --num=N --db=DIR --cache_size=BYTES "
                "--bloom_bits=B --write_buffer_size=BYTES --max_file_size=BYTES --seed=S "
                "--benchmarks=LIST)",
                argv[i]);
        }
    }
    check_common_flags(&f);
    if (bloom_bits > 1000) {
        die("--bloom_bits=%llu is beyond any use", (unsigned long long)bloom_bits);
    }
    uint64_t seed = resolve_seed(f.seed);
    fprintf(stderr,
            "LevelDB:    version %d.%d\nSeed:       %llu\nEntries:    %llu\nOptions:    LRU cache "
            "%llu bytes, bloom %llu bits/key, no compression, write_buffer_size %llu, "
            "max_file_size %llu%s, sync=false\n",
            leveldb_major_version(), leveldb_minor_version(), (unsigned long long)seed,
            (unsigned long long)f.num, (unsigned long long)cache_size,
            (unsigned long long)bloom_bits, (unsigned long long)write_buffer_size,
            (unsigned long long)(max_file_size > 0 ? max_file_size : 2097152),
            max_file_size > 0 ? "" : " (LevelDB's default)");

    leveldb_options_t *options = created(leveldb_options_create(), "create options");
    leveldb_cache_t *cache = created(leveldb_cache_create_lru((size_t)cache_size), "create the cache");
    leveldb_filterpolicy_t *filter = NULL;
    if (bloom_bits > 0) {
        filter = created(leveldb_filterpolicy_create_bloom((int)bloom_bits),
                         "create the bloom filter policy");
    }
    leveldb_options_set_create_if_missing(options, 1);
    leveldb_options_set_cache(options, cache);
    if (filter != NULL) {
        leveldb_options_set_filter_policy(options, filter);
    }
    leveldb_options_set_compression(options, leveldb_no_compression);
    leveldb_options_set_write_buffer_size(options, (size_t)write_buffer_size);
    if (max_file_size > 0) {
        leveldb_options_set_max_file_size(options, (size_t)max_file_size);
    }

    /* A fresh database, as db_bench makes one unless told to keep it;
     * destroying a directory that holds none succeeds. */
    char *err = NULL;
    leveldb_destroy_db(options, f.db, &err);
    check(err, "destroy the old database");
    leveldb_t *db = leveldb_open(options, f.db, &err);
    check(err, "open the database");
    created(db, "open the database");

    leveldb_writeoptions_t *write_options =
        created(leveldb_writeoptions_create(), "create write options");
    leveldb_writeoptions_set_sync(write_options, 0);
    leveldb_readoptions_t *read_options = created(leveldb_readoptions_create(), "create read options");
    leveldb_writebatch_t *batch = created(leveldb_writebatch_create(), "create a write batch");

    for (int i = 0; i < f.benchmark_count; i++) {
        const char *name = f.benchmarks[i];
        struct result result;
        if (strcmp(name, "readrandom") == 0) {
            result = read_random(db, read_options, seed, (uint64_t)i, f.num);
        } else {
            result = write_random(db, write_options, batch, name, seed, (uint64_t)i, f.num);
        }
        report(&result);
    }

    leveldb_writebatch_destroy(batch);
    leveldb_readoptions_destroy(read_options);
    leveldb_writeoptions_destroy(write_options);
    /* Closing waits for the running compaction; the cache and the filter
     * policy the options point at must outlive the database. */
    leveldb_close(db);
    leveldb_options_destroy(options);
    if (filter != NULL) {
        leveldb_filterpolicy_destroy(filter);
    }
    leveldb_cache_destroy(cache);
    return 0;
}
