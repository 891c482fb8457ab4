/*
 * What lmdb_bench.c and leveldb_bench.c share: the lab's keys, values and
 * random numbers, the command line, the clock and db_bench's result line.
 *
 * The keys and values are made exactly as spinney-bench makes them
 * (crates/spinney-bench/src/keys.rs and bench/workloads.rs), so that a run
 * of a C program and a run of the lab with the same --seed write and read
 * the same keys in the same order, with the same value bytes:
 *
 * - Random numbers: rand 0.8's SmallRng on 64-bit targets, which is
 *   xoshiro256++ seeded from a u64 by PCG32 (rand_core 0.6's
 *   seed_from_u64), and its gen_range for u64 and u8 (a widening multiply
 *   with rejection, so exactly uniform).
 * - Each benchmark draws its own stream: the generator is seeded from
 *   --seed, the benchmark's position in --benchmarks and the thread (here
 *   always thread 0), mixed by SplitMix64's finaliser, as the lab's
 *   worker_rng. A write benchmark first draws one u64 for its value
 *   buffer's seed, then the keys; readrandom draws only keys. Keys are
 *   numbers drawn uniformly from [0, num).
 * - A key is the number as 16 zero-padded decimal digits (%016llu).
 * - Values: a buffer of at least 1 MiB made of 100-byte pieces, each 50
 *   random printable bytes written twice (so it compresses to about half);
 *   each value is the next 100 bytes of it, starting over at its beginning
 *   when fewer remain.
 *
 * --seed=0 draws a new seed per process (from the clock and the process id,
 * as the lab does) and prints it on stderr.
 *
 * Every function is static: each program includes this header once.
 */
#ifndef SPINNEY_FAIRNESS_BENCH_COMMON_H
#define SPINNEY_FAIRNESS_BENCH_COMMON_H

#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The lab's default key and value sizes, the only ones these programs make. */
#define KEY_BYTES 16
#define VALUE_BYTES 100
/* The value buffer: far larger than a block or a page, as db_bench's. */
#define VALUE_BUFFER_BYTES (1u << 20)
#define PIECE_BYTES 100
#define PIECE_RANDOM_BYTES 50
/* Benchmarks one run may list. */
#define BENCHMARKS_MAX 16

/* Prints "<program>: <message>" on stderr and exits with status 1. */
static const char *program_name = "bench";

static void die(const char *format, ...) {
    va_list args;
    va_start(args, format);
    fprintf(stderr, "%s: ", program_name);
    vfprintf(stderr, format, args);
    fputc('\n', stderr);
    va_end(args);
    exit(1);
}

/* SplitMix64's finaliser: the lab's keys::mix. */
static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* xoshiro256++, the generator behind rand 0.8's SmallRng on 64-bit. */
struct rng {
    uint64_t s[4];
};

static uint64_t rotl64(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t rng_next(struct rng *r) {
    uint64_t result = rotl64(r->s[0] + r->s[3], 23) + r->s[0];
    uint64_t t = r->s[1] << 17;
    r->s[2] ^= r->s[0];
    r->s[3] ^= r->s[1];
    r->s[1] ^= r->s[2];
    r->s[0] ^= r->s[3];
    r->s[2] ^= t;
    r->s[3] = rotl64(r->s[3], 45);
    return result;
}

/* One step of PCG32 (rand_core 0.6's seed_from_u64 filler). */
static uint32_t pcg32_next(uint64_t *state) {
    *state = *state * UINT64_C(6364136223846793005) + UINT64_C(11634580027462260723);
    uint64_t s = *state;
    uint32_t xorshifted = (uint32_t)(((s >> 18) ^ s) >> 27);
    unsigned rot = (unsigned)(s >> 59);
    return (xorshifted >> rot) | (xorshifted << ((32 - rot) & 31));
}

/* xoshiro256++'s own seeding from a u64 (four SplitMix64 outputs), which
 * rand uses only for a seed of all zero bytes. */
static void rng_seed_splitmix(struct rng *r, uint64_t state) {
    for (int i = 0; i < 4; i++) {
        state += UINT64_C(0x9E3779B97F4A7C15);
        r->s[i] = mix64(state);
    }
}

/* SmallRng::seed_from_u64 (rand_core 0.6's default): eight PCG32 outputs
 * fill the 32 seed bytes, read as four little-endian u64 words. */
static void rng_seed(struct rng *r, uint64_t state) {
    for (int i = 0; i < 4; i++) {
        uint64_t low = pcg32_next(&state);
        uint64_t high = pcg32_next(&state);
        r->s[i] = low | (high << 32);
    }
    if ((r->s[0] | r->s[1] | r->s[2] | r->s[3]) == 0) {
        rng_seed_splitmix(r, 0);
    }
}

/* A number uniform in [0, range), range > 0: rand 0.8's gen_range(0..range)
 * for u64 (Lemire's multiply, rejecting the low products of the zone's
 * complement, so there is no bias). */
static uint64_t rng_below(struct rng *r, uint64_t range) {
    int shift = __builtin_clzll(range);
    uint64_t zone = (range << shift) - 1;
    for (;;) {
        /* GCC's 128-bit integer: the full product of two 64-bit numbers. */
        __extension__ typedef unsigned __int128 u128;
        u128 m = (u128)rng_next(r) * range;
        if ((uint64_t)m <= zone) {
            return (uint64_t)(m >> 64);
        }
    }
}

/* rand 0.8's gen_range(0..range) for u8: a u32 (the high half of a u64)
 * with the exact rejection zone of the small types. */
static uint8_t rng_below_u8(struct rng *r, uint8_t range) {
    uint32_t reject = (uint32_t)((UINT32_MAX - (uint32_t)range + 1) % range);
    uint32_t zone = UINT32_MAX - reject;
    for (;;) {
        uint32_t v = (uint32_t)(rng_next(r) >> 32);
        uint64_t m = (uint64_t)v * range;
        if ((uint32_t)m <= zone) {
            return (uint8_t)(m >> 32);
        }
    }
}

/* The generator of one benchmark's thread: the lab's keys::worker_rng. */
static void worker_rng(struct rng *r, uint64_t seed, uint64_t benchmark_index, uint64_t thread) {
    rng_seed(r, mix64(seed ^ (benchmark_index * UINT64_C(0x9E3779B97F4A7C15)) ^
                      ((thread + 1) * UINT64_C(0xBF58476D1CE4E5B9))));
}

/* --seed=0: a seed of this process's own, as the lab's Config::resolve_seed. */
static uint64_t resolve_seed(uint64_t seed) {
    if (seed != 0) {
        return seed;
    }
    struct timespec now;
    if (clock_gettime(CLOCK_REALTIME, &now) != 0) {
        die("clock_gettime: %s", strerror(errno));
    }
    uint64_t nanos = (uint64_t)now.tv_sec * UINT64_C(1000000000) + (uint64_t)now.tv_nsec;
    uint64_t mixed = mix64(nanos ^ ((uint64_t)getpid() << 32));
    return mixed == 0 ? 1 : mixed;
}

/* The key of entry k: 16 zero-padded decimal digits, the bytes
 * snprintf("%016llu") makes, written digit by digit as the lab does (a
 * printf per operation would add its own cost to the library's). */
static void write_key(uint64_t k, char key[KEY_BYTES]) {
    for (int i = KEY_BYTES - 1; i >= 0; i--) {
        key[i] = (char)('0' + k % 10);
        k /= 10;
    }
}

/* Compressible value bytes, handed out 100 at a time. */
struct values {
    char *data;
    size_t len;
    size_t pos;
};

/* The lab's ValueGenerator::new(seed, 100). */
static void values_init(struct values *v, uint64_t seed) {
    struct rng r;
    rng_seed(&r, seed);
    size_t target = VALUE_BUFFER_BYTES;
    v->data = malloc(target + PIECE_BYTES);
    if (v->data == NULL) {
        die("out of memory for the value buffer");
    }
    v->len = 0;
    v->pos = 0;
    while (v->len < target) {
        char *piece = v->data + v->len;
        for (int i = 0; i < PIECE_RANDOM_BYTES; i++) {
            piece[i] = (char)(' ' + rng_below_u8(&r, 95));
        }
        memcpy(piece + PIECE_RANDOM_BYTES, piece, PIECE_BYTES - PIECE_RANDOM_BYTES);
        v->len += PIECE_BYTES;
    }
}

/* The next value: 100 bytes of the buffer, from its start when fewer remain. */
static const char *values_next(struct values *v) {
    if (v->pos + VALUE_BYTES > v->len) {
        v->pos = 0;
    }
    const char *value = v->data + v->pos;
    v->pos += VALUE_BYTES;
    return value;
}

static void values_free(struct values *v) {
    free(v->data);
    v->data = NULL;
}

/* Seconds on a clock that does not jump. */
static double now_seconds(void) {
    struct timespec now;
    if (clock_gettime(CLOCK_MONOTONIC, &now) != 0) {
        die("clock_gettime: %s", strerror(errno));
    }
    return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

/* What one benchmark did, for its db_bench line. */
struct result {
    const char *name;
    uint64_t ops;
    uint64_t bytes;
    double seconds;
    int is_read;
    uint64_t found;
};

/* db_bench's line (RocksDB's form, with ops/sec, as the lab prints it):
 * micros per operation, operations per second, MB/s of the keys and values
 * written or found, and for reads how many keys were found. */
static void report(const struct result *r) {
    uint64_t ops = r->ops > 0 ? r->ops : 1;
    double seconds = r->seconds > 1e-9 ? r->seconds : 1e-9;
    char extra[128] = "";
    int used = 0;
    if (r->bytes > 0) {
        used = snprintf(extra, sizeof extra, " %6.1f MB/s", (double)r->bytes / 1048576.0 / seconds);
    }
    if (r->is_read) {
        snprintf(extra + used, sizeof extra - (size_t)used, " (%llu of %llu found)",
                 (unsigned long long)r->found, (unsigned long long)r->ops);
    }
    printf("%-12s : %11.3f micros/op %llu ops/sec;%s\n", r->name, seconds * 1e6 / (double)ops,
           (unsigned long long)((double)ops / seconds), extra);
    if (fflush(stdout) != 0) {
        die("write the result: %s", strerror(errno));
    }
}

/* The command line both programs take. */
struct flags {
    uint64_t num;
    uint64_t seed;
    const char *db;
    const char *benchmarks[BENCHMARKS_MAX];
    int benchmark_count;
};

/* Parses an unsigned decimal number of flag `name`, or exits. */
static uint64_t parse_u64(const char *name, const char *text) {
    char *end = NULL;
    errno = 0;
    if (*text == '\0' || *text == '-') {
        die("--%s=%s is not a number of 0 or more", name, text);
    }
    unsigned long long v = strtoull(text, &end, 10);
    if (errno != 0 || end == NULL || *end != '\0') {
        die("--%s=%s is not a number of 0 or more", name, text);
    }
    return (uint64_t)v;
}

/* If `arg` is --name=VALUE, returns VALUE; otherwise NULL. */
static const char *flag_value(const char *arg, const char *name) {
    size_t n = strlen(name);
    if (strncmp(arg, "--", 2) == 0 && strncmp(arg + 2, name, n) == 0 && arg[2 + n] == '=') {
        return arg + 3 + n;
    }
    return NULL;
}

/* Splits --benchmarks=LIST into `f`, keeping only the three this program
 * runs; the list's order is the run's order (and sets each one's seed). */
static void parse_benchmarks(struct flags *f, const char *list) {
    static char copy[256];
    if (strlen(list) >= sizeof copy) {
        die("--benchmarks is too long");
    }
    strcpy(copy, list);
    f->benchmark_count = 0;
    char *save = NULL;
    for (char *name = strtok_r(copy, ",", &save); name != NULL; name = strtok_r(NULL, ",", &save)) {
        if (strcmp(name, "fillrandom") != 0 && strcmp(name, "overwrite") != 0 &&
            strcmp(name, "readrandom") != 0) {
            die("--benchmarks: '%s' is not one of fillrandom, overwrite, readrandom", name);
        }
        if (f->benchmark_count == BENCHMARKS_MAX) {
            die("--benchmarks lists more than %d benchmarks", BENCHMARKS_MAX);
        }
        f->benchmarks[f->benchmark_count++] = name;
    }
    if (f->benchmark_count == 0) {
        die("--benchmarks names no benchmark");
    }
}

/* The flags before any is read: 1,000,000 entries, a new seed, the three
 * benchmarks in db_bench's order. */
static struct flags default_flags(void) {
    struct flags f = {1000000, 0, NULL, {"fillrandom", "overwrite", "readrandom"}, 3};
    return f;
}

/* Takes `arg` into `f` if it is one of the flags both programs have
 * (--num, --seed, --db, --benchmarks): 1 if it was, 0 if not. */
static int common_flag(struct flags *f, const char *arg) {
    const char *v;
    if ((v = flag_value(arg, "num")) != NULL) {
        f->num = parse_u64("num", v);
    } else if ((v = flag_value(arg, "seed")) != NULL) {
        f->seed = parse_u64("seed", v);
    } else if ((v = flag_value(arg, "db")) != NULL) {
        f->db = v;
    } else if ((v = flag_value(arg, "benchmarks")) != NULL) {
        parse_benchmarks(f, v);
    } else {
        return 0;
    }
    return 1;
}

/* Exits unless the common flags make a run: a directory, and a number of
 * entries that 16 decimal digits hold (below 10^16). */
static void check_common_flags(const struct flags *f) {
    if (f->db == NULL || *f->db == '\0') {
        die("--db=DIR is required");
    }
    if (f->num == 0) {
        die("--num must be at least 1");
    }
    if (f->num > UINT64_C(10000000000000000)) {
        die("--num=%llu does not fit in 16-digit keys", (unsigned long long)f->num);
    }
}

#endif
