/* spinney from C: a B-tree table, a batch, a transaction, a cursor. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spinney.h"

static int fail(const char *what, spinney_status s, char *err) {
    fprintf(stderr, "%s: %s: %s\n", what, spinney_status_name(s), err ? err : "");
    spinney_free(err);
    return 1;
}

int main(void) {
    char *err = NULL;
    spinney_db_t *db = NULL;
    spinney_status s = spinney_open("hello.db", NULL, &db, &err);
    if (s != SPINNEY_OK) return fail("open", s, err);

    spinney_table_options_t *btree = spinney_table_options_create(SPINNEY_BTREE);
    spinney_table_t *accounts = NULL;
    s = spinney_open_table(db, "accounts", btree, &accounts, &err);
    spinney_table_options_destroy(btree);
    if (s != SPINNEY_OK) return fail("open_table", s, err);

    /* All or nothing, also across a crash. */
    spinney_batch_t *batch = spinney_batch_create();
    spinney_batch_put(batch, accounts, "alice", 5, "90", 2, &err);
    spinney_batch_put(batch, accounts, "bob", 3, "110", 3, &err);
    s = spinney_write(db, batch, &err);
    spinney_batch_destroy(batch);
    if (s != SPINNEY_OK) return fail("write", s, err);

    /* A transaction; SPINNEY_CONFLICT means: run it again. */
    spinney_txn_t *txn = NULL;
    char *bob = NULL;
    size_t len = 0;
    spinney_txn_begin(db, &txn, &err);
    s = spinney_txn_get_for_update(txn, accounts, "bob", 3, &bob, &len, &err);
    if (s == SPINNEY_OK) {
        char more[32];
        int n = snprintf(more, sizeof more, "%d", atoi(bob) + 5);
        spinney_txn_put(txn, accounts, "bob", 3, more, (size_t)n, &err);
        spinney_free(bob);
    }
    s = spinney_txn_commit(txn, &err);
    spinney_txn_destroy(txn);
    if (s != SPINNEY_OK) return fail("commit", s, err);

    spinney_cursor_t *c = NULL;
    spinney_cursor_create(accounts, NULL, NULL, 0, NULL, 0, &c, &err);
    for (spinney_cursor_seek_to_first(c); spinney_cursor_valid(c); spinney_cursor_next(c)) {
        size_t klen, vlen;
        const char *k = spinney_cursor_key(c, &klen);
        const char *v = spinney_cursor_value(c, &vlen);
        printf("%.*s = %.*s\n", (int)klen, k, (int)vlen, v);
    }
    s = spinney_cursor_status(c, &err);
    spinney_cursor_destroy(c);
    if (s != SPINNEY_OK) return fail("cursor", s, err);

    spinney_table_destroy(accounts);
    s = spinney_close(db, &err);
    if (s != SPINNEY_OK) return fail("close", s, err);
    return 0;
}
