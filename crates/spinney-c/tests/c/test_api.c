/*
 * Calls every function of include/spinney.h and checks what each returns;
 * frees everything it is given, so that AddressSanitizer's leak check (or
 * valgrind's) finds nothing. Built and run by scripts/test-c.sh:
 *
 *   test_api DIR    (DIR: an empty directory it may write in)
 *
 * Exits 0 when every check holds; otherwise prints the failed check.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spinney.h"

static int checks = 0;

#define CHECK(cond)                                                            \
    do {                                                                       \
        checks++;                                                              \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__,  \
                    #cond);                                                    \
            exit(1);                                                           \
        }                                                                      \
    } while (0)

static char *err = NULL;

static void expect(spinney_status got, spinney_status want, const char *what,
                   int line) {
    checks++;
    if (got != want) {
        fprintf(stderr, "line %d: %s: %s, expected %s (%s)\n", line, what,
                spinney_status_name(got), spinney_status_name(want),
                err ? err : "no message");
        exit(1);
    }
    if (want == SPINNEY_OK || want == SPINNEY_NOT_FOUND ||
        want == SPINNEY_BUFFER_TOO_SMALL) {
        if (err != NULL) {
            fprintf(stderr, "line %d: %s: a message with %s\n", line, what,
                    spinney_status_name(got));
            exit(1);
        }
    } else if (err == NULL) {
        fprintf(stderr, "line %d: %s: %s without a message\n", line, what,
                spinney_status_name(got));
        exit(1);
    }
    spinney_free(err);
    err = NULL;
}

#define EXPECT(call, want) expect((call), (want), #call, __LINE__)

static void put(spinney_table_t *t, const char *k, const char *v) {
    EXPECT(spinney_put(t, k, strlen(k), v, strlen(v), &err), SPINNEY_OK);
}

/* The value of k in t (through snapshot s if not NULL), or NULL; freed by
 * the caller with spinney_free. */
static char *get(spinney_table_t *t, spinney_snapshot_t *s, const char *k) {
    char *v = NULL;
    size_t len = 0;
    spinney_status st = spinney_get_alloc(t, s, k, strlen(k), &v, &len, &err);
    if (st == SPINNEY_NOT_FOUND) {
        expect(st, SPINNEY_NOT_FOUND, "get_alloc", __LINE__);
        CHECK(v == NULL);
        return NULL;
    }
    expect(st, SPINNEY_OK, "get_alloc", __LINE__);
    CHECK(strlen(v) == len);
    return v;
}

static int value_is(spinney_table_t *t, spinney_snapshot_t *s, const char *k,
                    const char *want) {
    char *v = get(t, s, k);
    int same = (v == NULL && want == NULL) ||
               (v != NULL && want != NULL && strcmp(v, want) == 0);
    spinney_free(v);
    return same;
}

/* The keys a cursor walks forward from its first key, joined by ','. */
static void walk(spinney_cursor_t *c, char *out, size_t cap) {
    out[0] = '\0';
    for (spinney_cursor_seek_to_first(c); spinney_cursor_valid(c);
         spinney_cursor_next(c)) {
        size_t klen = 0, vlen = 0;
        const char *k = spinney_cursor_key(c, &klen);
        const char *v = spinney_cursor_value(c, &vlen);
        CHECK(k != NULL && v != NULL);
        if (out[0] != '\0') strncat(out, ",", cap - strlen(out) - 1);
        strncat(out, k, klen < cap - strlen(out) - 1 ? klen : cap - strlen(out) - 1);
    }
    EXPECT(spinney_cursor_status(c, &err), SPINNEY_OK);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_api DIR\n");
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/db", argv[1]);

    /* Options. */
    spinney_options_t *options = spinney_options_create();
    CHECK(options != NULL);
    EXPECT(spinney_options_set_create_if_missing(options, 1, &err), SPINNEY_OK);
    EXPECT(spinney_options_set_read_only(options, 0, &err), SPINNEY_OK);
    EXPECT(spinney_options_set_durability(options, SPINNEY_DURABILITY_FULL, &err),
           SPINNEY_OK);
    EXPECT(spinney_options_set_durability(options, 7, &err),
           SPINNEY_INVALID_ARGUMENT);
    EXPECT(spinney_options_set_cache_size(options, 8 << 20, &err), SPINNEY_OK);
    EXPECT(spinney_options_set_background_threads(options, 1, &err), SPINNEY_OK);
    EXPECT(spinney_options_set_cache_size(NULL, 1, &err),
           SPINNEY_INVALID_ARGUMENT);

    spinney_db_t *db = NULL;
    EXPECT(spinney_open(NULL, options, &db, &err), SPINNEY_INVALID_ARGUMENT);
    CHECK(db == NULL);
    EXPECT(spinney_open(path, options, &db, &err), SPINNEY_OK);
    CHECK(db != NULL);
    /* A second opener of the same directory is refused. */
    spinney_db_t *second = NULL;
    EXPECT(spinney_open(path, NULL, &second, &err), SPINNEY_LOCKED);
    CHECK(second == NULL);

    /* Tables of both kinds. */
    spinney_table_options_t *btree_options =
        spinney_table_options_create(SPINNEY_BTREE);
    CHECK(btree_options != NULL);
    CHECK(spinney_table_options_create(9) == NULL);
    EXPECT(spinney_table_options_set_page_size(btree_options, 4096, &err),
           SPINNEY_OK);
    EXPECT(spinney_table_options_set_compression(btree_options,
                                                 SPINNEY_COMPRESSION_LZ4, &err),
           SPINNEY_OK);
    EXPECT(spinney_table_options_set_compression(btree_options, 3, &err),
           SPINNEY_INVALID_ARGUMENT);
    spinney_table_options_t *lsm_options =
        spinney_table_options_create(SPINNEY_LSM);
    EXPECT(spinney_table_options_set_bloom_bits_per_key(lsm_options, 10, &err),
           SPINNEY_OK);
    EXPECT(spinney_table_options_set_write_buffer_size(lsm_options, 1 << 20, &err),
           SPINNEY_OK);
    EXPECT(spinney_table_options_set_compression(lsm_options,
                                                 SPINNEY_COMPRESSION_ZSTD, &err),
           SPINNEY_OK);

    spinney_table_t *accounts = NULL, *audit = NULL, *again = NULL;
    EXPECT(spinney_create_table(db, "accounts", btree_options, &accounts, &err),
           SPINNEY_OK);
    EXPECT(spinney_create_table(db, "accounts", btree_options, &again, &err),
           SPINNEY_TABLE_EXISTS);
    CHECK(again == NULL);
    EXPECT(spinney_open_table(db, "audit", lsm_options, &audit, &err), SPINNEY_OK);
    EXPECT(spinney_get_table(db, "nothing", &again, &err), SPINNEY_NO_SUCH_TABLE);
    EXPECT(spinney_get_table(db, "accounts", &again, &err), SPINNEY_OK);
    CHECK(spinney_table_kind(accounts) == SPINNEY_BTREE);
    CHECK(spinney_table_kind(again) == SPINNEY_BTREE);
    CHECK(spinney_table_kind(audit) == SPINNEY_LSM);
    CHECK(spinney_table_kind(NULL) == -1);
    spinney_table_destroy(again);
    again = NULL;
    spinney_table_options_destroy(btree_options);
    spinney_table_options_destroy(lsm_options);

    char **names = NULL;
    size_t count = 0;
    EXPECT(spinney_list_tables(db, &names, &count, &err), SPINNEY_OK);
    CHECK(count == 2);
    CHECK(strcmp(names[0], "accounts") == 0 && strcmp(names[1], "audit") == 0);
    spinney_free_names(names, count);

    /* Put, get (both ways), delete, delete_range. */
    put(accounts, "alice", "90");
    put(accounts, "bob", "110");
    put(accounts, "carol", "7");
    CHECK(value_is(accounts, NULL, "alice", "90"));
    char buffer[8];
    size_t len = 0;
    EXPECT(spinney_get(accounts, NULL, "bob", 3, buffer, sizeof buffer, &len, &err),
           SPINNEY_OK);
    CHECK(len == 3 && memcmp(buffer, "110", 3) == 0);
    EXPECT(spinney_get(accounts, NULL, "bob", 3, buffer, 2, &len, &err),
           SPINNEY_BUFFER_TOO_SMALL);
    CHECK(len == 3);
    EXPECT(spinney_get(accounts, NULL, "dave", 4, buffer, sizeof buffer, &len, &err),
           SPINNEY_NOT_FOUND);
    EXPECT(spinney_get(accounts, NULL, NULL, 4, buffer, sizeof buffer, &len, &err),
           SPINNEY_INVALID_ARGUMENT);
    EXPECT(spinney_delete(accounts, "carol", 5, &err), SPINNEY_OK);
    CHECK(value_is(accounts, NULL, "carol", NULL));
    put(audit, "0001", "alice->bob 10");
    put(audit, "0002", "bank->bob 5");
    put(audit, "0003", "x");
    EXPECT(spinney_delete_range(audit, "0002", 4, "0003", 4, &err), SPINNEY_OK);
    CHECK(value_is(audit, NULL, "0002", NULL));
    CHECK(value_is(audit, NULL, "0003", "x"));

    /* A batch across both tables. */
    spinney_batch_t *batch = spinney_batch_create();
    CHECK(batch != NULL);
    EXPECT(spinney_batch_put(batch, accounts, "dave", 4, "1", 1, &err), SPINNEY_OK);
    EXPECT(spinney_batch_delete(batch, accounts, "alice", 5, &err), SPINNEY_OK);
    EXPECT(spinney_batch_delete_range(batch, audit, "0000", 4, "0002", 4, &err),
           SPINNEY_OK);
    EXPECT(spinney_batch_put(batch, NULL, "k", 1, "v", 1, &err),
           SPINNEY_INVALID_ARGUMENT);
    CHECK(spinney_batch_count(batch) == 3);
    spinney_batch_clear(batch);
    CHECK(spinney_batch_count(batch) == 0);
    EXPECT(spinney_batch_put(batch, accounts, "dave", 4, "1", 1, &err), SPINNEY_OK);
    EXPECT(spinney_batch_delete(batch, accounts, "alice", 5, &err), SPINNEY_OK);
    EXPECT(spinney_batch_delete_range(batch, audit, "0000", 4, "0002", 4, &err),
           SPINNEY_OK);
    EXPECT(spinney_write(db, batch, &err), SPINNEY_OK);
    CHECK(spinney_batch_count(batch) == 0);
    spinney_batch_destroy(batch);
    CHECK(value_is(accounts, NULL, "dave", "1"));
    CHECK(value_is(accounts, NULL, "alice", NULL));
    CHECK(value_is(audit, NULL, "0001", NULL));

    /* A snapshot keeps its view. */
    spinney_snapshot_t *snapshot = spinney_snapshot_create(db);
    CHECK(snapshot != NULL);
    CHECK(spinney_snapshot_create(NULL) == NULL);
    put(accounts, "bob", "200");
    CHECK(value_is(accounts, snapshot, "bob", "110"));
    CHECK(value_is(accounts, NULL, "bob", "200"));

    /* Cursors: bounds, prefix, a snapshot, both ways. */
    put(accounts, "bobby", "3");
    char keys[256];
    spinney_cursor_t *c = NULL;
    EXPECT(spinney_cursor_create(accounts, NULL, NULL, 0, NULL, 0, &c, &err),
           SPINNEY_OK);
    walk(c, keys, sizeof keys);
    CHECK(strcmp(keys, "bob,bobby,dave") == 0);
    EXPECT(spinney_cursor_seek(c, "bobz", 4, &err), SPINNEY_OK);
    size_t klen = 0;
    CHECK(spinney_cursor_valid(c) &&
          memcmp(spinney_cursor_key(c, &klen), "dave", 4) == 0 && klen == 4);
    spinney_cursor_prev(c);
    CHECK(spinney_cursor_valid(c) &&
          memcmp(spinney_cursor_key(c, &klen), "bobby", 5) == 0);
    EXPECT(spinney_cursor_seek_for_prev(c, "bobz", 4, &err), SPINNEY_OK);
    CHECK(memcmp(spinney_cursor_key(c, &klen), "bobby", 5) == 0);
    spinney_cursor_seek_to_last(c);
    CHECK(memcmp(spinney_cursor_key(c, &klen), "dave", 4) == 0);
    spinney_cursor_next(c);
    CHECK(!spinney_cursor_valid(c));
    CHECK(spinney_cursor_key(c, &klen) == NULL && klen == 0);
    CHECK(spinney_cursor_value(c, &klen) == NULL);
    EXPECT(spinney_cursor_seek(c, NULL, 3, &err), SPINNEY_INVALID_ARGUMENT);
    spinney_cursor_destroy(c);
    EXPECT(spinney_cursor_create(accounts, NULL, "bob", 3, "dave", 4, &c, &err),
           SPINNEY_OK);
    walk(c, keys, sizeof keys);
    CHECK(strcmp(keys, "bob,bobby") == 0);
    spinney_cursor_destroy(c);
    EXPECT(spinney_cursor_create_prefix(accounts, NULL, "bob", 3, &c, &err),
           SPINNEY_OK);
    walk(c, keys, sizeof keys);
    CHECK(strcmp(keys, "bob,bobby") == 0);
    spinney_cursor_destroy(c);
    EXPECT(spinney_cursor_create(accounts, snapshot, NULL, 0, NULL, 0, &c, &err),
           SPINNEY_OK);
    walk(c, keys, sizeof keys);
    CHECK(strcmp(keys, "bob,dave") == 0);
    spinney_cursor_seek_to_first(c);
    size_t vlen = 0;
    const char *v = spinney_cursor_value(c, &vlen);
    CHECK(vlen == 3 && memcmp(v, "110", 3) == 0);
    spinney_cursor_destroy(c);
    spinney_snapshot_destroy(snapshot);

    /* Transactions: a commit, a conflict, a rollback. */
    spinney_txn_t *t1 = NULL, *t2 = NULL;
    EXPECT(spinney_txn_begin(db, &t1, &err), SPINNEY_OK);
    EXPECT(spinney_txn_begin(db, &t2, &err), SPINNEY_OK);
    char *val = NULL;
    EXPECT(spinney_txn_get_for_update(t1, accounts, "bob", 3, &val, &len, &err),
           SPINNEY_OK);
    CHECK(len == 3 && strcmp(val, "200") == 0);
    spinney_free(val);
    EXPECT(spinney_txn_put(t1, accounts, "bob", 3, "205", 3, &err), SPINNEY_OK);
    EXPECT(spinney_txn_get(t1, accounts, "bob", 3, &val, &len, &err), SPINNEY_OK);
    CHECK(strcmp(val, "205") == 0);
    spinney_free(val);
    EXPECT(spinney_txn_delete(t1, accounts, "dave", 4, &err), SPINNEY_OK);
    EXPECT(spinney_txn_get(t1, accounts, "dave", 4, &val, &len, &err),
           SPINNEY_NOT_FOUND);
    EXPECT(spinney_txn_delete_range(t1, audit, "0000", 4, "9999", 4, &err),
           SPINNEY_OK);
    EXPECT(spinney_txn_get_for_update(t2, accounts, "bob", 3, &val, &len, &err),
           SPINNEY_OK);
    spinney_free(val);
    EXPECT(spinney_txn_put(t2, accounts, "bob", 3, "0", 1, &err), SPINNEY_OK);
    EXPECT(spinney_txn_commit(t1, &err), SPINNEY_OK);
    EXPECT(spinney_txn_commit(t1, &err), SPINNEY_INVALID_ARGUMENT);
    EXPECT(spinney_txn_put(t1, accounts, "x", 1, "y", 1, &err),
           SPINNEY_INVALID_ARGUMENT);
    EXPECT(spinney_txn_commit(t2, &err), SPINNEY_CONFLICT);
    spinney_txn_destroy(t1);
    spinney_txn_destroy(t2);
    CHECK(value_is(accounts, NULL, "bob", "205"));
    CHECK(value_is(accounts, NULL, "dave", NULL));
    CHECK(value_is(audit, NULL, "0003", NULL));
    spinney_txn_t *t3 = NULL;
    EXPECT(spinney_txn_begin(db, &t3, &err), SPINNEY_OK);
    EXPECT(spinney_txn_put(t3, accounts, "erin", 4, "1", 1, &err), SPINNEY_OK);
    spinney_txn_rollback(t3);
    spinney_txn_destroy(t3);
    CHECK(value_is(accounts, NULL, "erin", NULL));
    /* A transaction destroyed without commit or rollback rolls back. */
    EXPECT(spinney_txn_begin(db, &t3, &err), SPINNEY_OK);
    EXPECT(spinney_txn_put(t3, accounts, "erin", 4, "2", 1, &err), SPINNEY_OK);
    spinney_txn_destroy(t3);
    CHECK(value_is(accounts, NULL, "erin", NULL));

    /* Figures, flush, drop. */
    char *json = NULL;
    EXPECT(spinney_stats_json(db, &json, &len, &err), SPINNEY_OK);
    CHECK(json != NULL && len == strlen(json) && json[0] == '{' &&
          strstr(json, "\"tables\"") != NULL);
    spinney_free(json);
    EXPECT(spinney_flush(db, &err), SPINNEY_OK);
    spinney_table_t *scratch = NULL;
    EXPECT(spinney_create_table(db, "scratch", NULL, &scratch, &err), SPINNEY_OK);
    EXPECT(spinney_drop_table(db, "scratch", &err), SPINNEY_OK);
    EXPECT(spinney_put(scratch, "k", 1, "v", 1, &err), SPINNEY_NO_SUCH_TABLE);
    spinney_table_destroy(scratch);
    EXPECT(spinney_drop_table(db, "scratch", &err), SPINNEY_NO_SUCH_TABLE);

    /* Close; handles outliving the database answer SPINNEY_CLOSED. */
    EXPECT(spinney_close(db, &err), SPINNEY_OK);
    EXPECT(spinney_put(accounts, "k", 1, "v", 1, &err), SPINNEY_CLOSED);
    spinney_table_destroy(accounts);
    spinney_table_destroy(audit);
    EXPECT(spinney_close(NULL, &err), SPINNEY_OK);

    /* Reopened read-only: the data is there, writes are refused. */
    EXPECT(spinney_options_set_read_only(options, 1, &err), SPINNEY_OK);
    EXPECT(spinney_open(path, options, &db, &err), SPINNEY_OK);
    EXPECT(spinney_get_table(db, "accounts", &accounts, &err), SPINNEY_OK);
    CHECK(value_is(accounts, NULL, "bob", "205"));
    EXPECT(spinney_put(accounts, "k", 1, "v", 1, &err), SPINNEY_READ_ONLY);
    spinney_table_destroy(accounts);
    EXPECT(spinney_close(db, &err), SPINNEY_OK);
    spinney_options_destroy(options);

    /* NULL is ignored by every destroy and free. */
    spinney_options_destroy(NULL);
    spinney_table_options_destroy(NULL);
    spinney_table_destroy(NULL);
    spinney_snapshot_destroy(NULL);
    spinney_batch_destroy(NULL);
    spinney_txn_destroy(NULL);
    spinney_cursor_destroy(NULL);
    spinney_free_names(NULL, 0);
    spinney_free(NULL);
    CHECK(strcmp(spinney_status_name(SPINNEY_CONFLICT), "SPINNEY_CONFLICT") == 0);
    CHECK(strcmp(spinney_status_name(99), "SPINNEY_UNKNOWN_STATUS") == 0);

    printf("test_api: %d checks passed\n", checks);
    return 0;
}
