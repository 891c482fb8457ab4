/* Puts and gets through the C API, for docs/bindings.md's overhead figure;
 * examples/bench.rs does the same through the Rust API.
 *
 *   bench DIR KIND N    (KIND: lsm or btree)
 *
 * N puts of 16-byte keys (a permutation of 0..N) and 100-byte values, then
 * N gets of them in another order; prints the ops/s of each. */
#define _POSIX_C_SOURCE 199309L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "spinney.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void check(spinney_status s, char *err, const char *what) {
    if (s != SPINNEY_OK) {
        fprintf(stderr, "%s: %s %s\n", what, spinney_status_name(s), err ? err : "");
        exit(1);
    }
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: bench DIR lsm|btree N\n");
        return 2;
    }
    uint64_t n = strtoull(argv[3], NULL, 10);
    int kind = strcmp(argv[2], "btree") == 0 ? SPINNEY_BTREE : SPINNEY_LSM;
    char *err = NULL;
    spinney_options_t *o = spinney_options_create();
    check(spinney_options_set_cache_size(o, 1ull << 30, &err), err, "cache");
    spinney_db_t *db = NULL;
    check(spinney_open(argv[1], o, &db, &err), err, "open");
    spinney_options_destroy(o);
    spinney_table_options_t *to = spinney_table_options_create(kind);
    spinney_table_t *t = NULL;
    check(spinney_create_table(db, "t", to, &t, &err), err, "create_table");
    spinney_table_options_destroy(to);

    char key[24], value[100];
    memset(value, 'v', sizeof value);
    double start = now();
    for (uint64_t i = 0; i < n; i++) {
        snprintf(key, sizeof key, "%016llu", (unsigned long long)((i * 2654435761u) % n));
        check(spinney_put(t, key, 16, value, sizeof value, &err), err, "put");
    }
    double put_s = now() - start;
    char buffer[256];
    size_t len = 0;
    uint64_t found = 0;
    start = now();
    for (uint64_t i = 0; i < n; i++) {
        snprintf(key, sizeof key, "%016llu", (unsigned long long)((i * 40503u) % n));
        spinney_status s = spinney_get(t, NULL, key, 16, buffer, sizeof buffer, &len, &err);
        if (s == SPINNEY_OK) found++;
        else if (s != SPINNEY_NOT_FOUND) check(s, err, "get");
    }
    double get_s = now() - start;
    printf("c    %s: put %.0f ops/s, get %.0f ops/s (%llu found)\n", argv[2], n / put_s,
           n / get_s, (unsigned long long)found);
    spinney_table_destroy(t);
    check(spinney_close(db, &err), err, "close");
    return 0;
}
