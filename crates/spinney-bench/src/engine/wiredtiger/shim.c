/*
 * WiredTiger's C API as plain functions, for the spinney-bench adapter
 * (ffi.rs beside it declares these functions by hand).
 *
 * Why a shim: WiredTiger's handles (WT_CONNECTION, WT_SESSION, WT_CURSOR)
 * are structs of function pointers, so calling them from Rust would mean
 * mirroring those structs' layouts field by field. Each function here makes
 * one such call (or a short fixed sequence of them) and returns WiredTiger's
 * code unchanged: 0, WT_NOTFOUND, WT_ROLLBACK, WT_PANIC or an errno. The
 * Rust side decides what a code means.
 *
 * Keys and values: tables are created with key_format=u,value_format=u, so
 * a key or a value is a WT_ITEM, passed here as (pointer, length).
 * WiredTiger does not copy what set_key and set_value are given until the
 * operation that uses it, so every function sets and uses them within the
 * one call. The pointers handed back (a value, a key, a statistic's
 * description) point into WiredTiger's memory and stay valid only until the
 * next call on the same cursor.
 *
 * Error messages: WiredTiger gives the detail of an error (which
 * configuration key it refused, which file it could not open) only to the
 * event handler. The handler here writes each message to stderr, as
 * WiredTiger's default handler does (a message from one of WiredTiger's own
 * threads has no caller to reach), and keeps the calling thread's last one so
 * that the Rust error can quote it. Every function forgets the thread's
 * previous message first, so a kept message belongs to the last call.
 *
 * Thread-safety: WiredTiger's. A connection is shared by all threads; a
 * session and its cursors are used by one thread at a time. The kept
 * message is per thread.
 */

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <wiredtiger.h>

static _Thread_local char last_message[1024];
static _Thread_local int has_last_message;

static void
forget_message(void)
{
	has_last_message = 0;
}

static int
handle_error(WT_EVENT_HANDLER *handler, WT_SESSION *session, int error,
    const char *message)
{
	(void)handler;
	(void)session;
	(void)error;
	fprintf(stderr, "wiredtiger: %s\n", message);
	snprintf(last_message, sizeof(last_message), "%s", message);
	has_last_message = 1;
	return (0);
}

/* Informational messages (only with verbose=, which the adapter never sets),
 * to stderr rather than WiredTiger's stdout, which db_bench's lines use. */
static int
handle_message(WT_EVENT_HANDLER *handler, WT_SESSION *session,
    const char *message)
{
	(void)handler;
	(void)session;
	fprintf(stderr, "wiredtiger: %s\n", message);
	return (0);
}

static int
handle_progress(WT_EVENT_HANDLER *handler, WT_SESSION *session,
    const char *operation, uint64_t progress)
{
	(void)handler;
	(void)session;
	(void)operation;
	(void)progress;
	return (0);
}

static int
handle_close(WT_EVENT_HANDLER *handler, WT_SESSION *session,
    WT_CURSOR *cursor)
{
	(void)handler;
	(void)session;
	(void)cursor;
	return (0);
}

/*
 * Every callback is set: WiredTiger writes its defaults into the callbacks
 * left NULL, and this one struct is shared by every connection (the tests
 * open several at once).
 */
static WT_EVENT_HANDLER event_handler = {
	handle_error, handle_message, handle_progress, handle_close
};

/* The calling thread's message from its last call into this file, or NULL. */
const char *
spinney_wt_last_message(void)
{
	return (has_last_message ? last_message : NULL);
}

int
spinney_wt_open(const char *home, const char *config, WT_CONNECTION **connp)
{
	forget_message();
	return (wiredtiger_open(home, &event_handler, config, connp));
}

/* Closes the connection and every session still open on it. */
int
spinney_wt_close(WT_CONNECTION *conn)
{
	forget_message();
	return (conn->close(conn, NULL));
}

int
spinney_wt_open_session(WT_CONNECTION *conn, const char *config,
    WT_SESSION **sessionp)
{
	forget_message();
	return (conn->open_session(conn, NULL, config, sessionp));
}

/* Closes the session and every cursor still open on it. */
int
spinney_wt_close_session(WT_SESSION *session)
{
	forget_message();
	return (session->close(session, NULL));
}

int
spinney_wt_create(WT_SESSION *session, const char *uri, const char *config)
{
	forget_message();
	return (session->create(session, uri, config));
}

/*
 * Copies the metadata of `key` (such as "colgroup:NAME", whose value names
 * the table's data source) into `out`, truncated to `out_len` bytes with a
 * terminating NUL. WT_NOTFOUND when there is no such object.
 */
int
spinney_wt_metadata(WT_SESSION *session, const char *key, char *out,
    size_t out_len)
{
	WT_CURSOR *cursor;
	const char *value;
	int ret, close_ret;

	forget_message();
	if ((ret = session->open_cursor(
	    session, "metadata:", NULL, NULL, &cursor)) != 0)
		return (ret);
	cursor->set_key(cursor, key);
	if ((ret = cursor->search(cursor)) == 0 &&
	    (ret = cursor->get_value(cursor, &value)) == 0 && out_len > 0)
		snprintf(out, out_len, "%s", value);
	close_ret = cursor->close(cursor);
	return (ret != 0 ? ret : close_ret);
}

int
spinney_wt_open_cursor(WT_SESSION *session, const char *uri,
    WT_CURSOR **cursorp)
{
	forget_message();
	return (session->open_cursor(session, uri, NULL, NULL, cursorp));
}

int
spinney_wt_close_cursor(WT_CURSOR *cursor)
{
	forget_message();
	return (cursor->close(cursor));
}

int
spinney_wt_begin(WT_SESSION *session)
{
	forget_message();
	return (session->begin_transaction(session, NULL));
}

/* Commits with the connection's transaction_sync setting. */
int
spinney_wt_commit(WT_SESSION *session)
{
	forget_message();
	return (session->commit_transaction(session, NULL));
}

int
spinney_wt_rollback(WT_SESSION *session)
{
	forget_message();
	return (session->rollback_transaction(session, NULL));
}

static void
set_key(WT_CURSOR *cursor, const void *key, size_t key_len)
{
	WT_ITEM item;

	memset(&item, 0, sizeof(item));
	item.data = key;
	item.size = key_len;
	cursor->set_key(cursor, &item);
}

/* Inserts or overwrites (cursors keep WiredTiger's default overwrite=true). */
int
spinney_wt_insert(WT_CURSOR *cursor, const void *key, size_t key_len,
    const void *value, size_t value_len)
{
	WT_ITEM item;

	forget_message();
	set_key(cursor, key, key_len);
	memset(&item, 0, sizeof(item));
	item.data = value;
	item.size = value_len;
	cursor->set_value(cursor, &item);
	return (cursor->insert(cursor));
}

/* Removes the key; with overwrite=true a missing key is not an error. */
int
spinney_wt_remove(WT_CURSOR *cursor, const void *key, size_t key_len)
{
	forget_message();
	set_key(cursor, key, key_len);
	return (cursor->remove(cursor));
}

/*
 * Deletes the keys in [start, end) of the table `uri` with
 * WT_SESSION::truncate between two cursors: one on the first key at or
 * after `start`, one on the last key before `end`. Nothing when no key lies
 * between (or `end` is empty). Runs in the session's transaction, if any.
 */
int
spinney_wt_truncate_range(WT_SESSION *session, const char *uri,
    const void *start, size_t start_len, const void *end, size_t end_len)
{
	WT_CURSOR *lo, *hi;
	int cmp, exact, ret, t_ret;

	forget_message();
	if (end_len == 0)
		return (0);
	lo = hi = NULL;
	if ((ret = session->open_cursor(session, uri, NULL, NULL, &lo)) != 0)
		return (ret);
	if ((ret = session->open_cursor(session, uri, NULL, NULL, &hi)) != 0)
		goto done;
	set_key(lo, start, start_len);
	ret = lo->search_near(lo, &exact);
	if (ret == 0 && exact < 0)
		ret = lo->next(lo);
	if (ret != 0)
		goto done;
	set_key(hi, end, end_len);
	ret = hi->search_near(hi, &exact);
	if (ret == 0 && exact >= 0)
		ret = hi->prev(hi);
	if (ret != 0)
		goto done;
	if ((ret = lo->compare(lo, hi, &cmp)) != 0 || cmp > 0)
		goto done;
	ret = session->truncate(session, NULL, lo, hi, NULL);
done:
	if (ret == WT_NOTFOUND)
		ret = 0;
	if (hi != NULL && (t_ret = hi->close(hi)) != 0 && ret == 0)
		ret = t_ret;
	if (lo != NULL && (t_ret = lo->close(lo)) != 0 && ret == 0)
		ret = t_ret;
	return (ret);
}

/* Finds the key exactly; on success `value` points at its value. */
int
spinney_wt_search(WT_CURSOR *cursor, const void *key, size_t key_len,
    const void **value, size_t *value_len)
{
	WT_ITEM item;
	int ret;

	forget_message();
	set_key(cursor, key, key_len);
	if ((ret = cursor->search(cursor)) != 0)
		return (ret);
	memset(&item, 0, sizeof(item));
	if ((ret = cursor->get_value(cursor, &item)) != 0)
		return (ret);
	*value = item.data;
	*value_len = item.size;
	return (0);
}

/*
 * Positions the cursor at the key or a neighbour: `exact` is 0 on the key,
 * below 0 on the largest smaller key, above 0 on the smallest larger key.
 * WT_NOTFOUND when the table is empty.
 */
int
spinney_wt_search_near(WT_CURSOR *cursor, const void *key, size_t key_len,
    int *exact)
{
	forget_message();
	set_key(cursor, key, key_len);
	return (cursor->search_near(cursor, exact));
}

/* Steps forward (from no position: to the first entry); WT_NOTFOUND at the end. */
int
spinney_wt_next(WT_CURSOR *cursor)
{
	forget_message();
	return (cursor->next(cursor));
}

/* Steps back (from no position: to the last entry); WT_NOTFOUND at the start. */
int
spinney_wt_prev(WT_CURSOR *cursor)
{
	forget_message();
	return (cursor->prev(cursor));
}

/* Releases the cursor's position, and with it the snapshot and the page it pins. */
int
spinney_wt_reset(WT_CURSOR *cursor)
{
	forget_message();
	return (cursor->reset(cursor));
}

/* The key and value of the entry the cursor is positioned on. */
int
spinney_wt_entry(WT_CURSOR *cursor, const void **key, size_t *key_len,
    const void **value, size_t *value_len)
{
	WT_ITEM k, v;
	int ret;

	forget_message();
	memset(&k, 0, sizeof(k));
	memset(&v, 0, sizeof(v));
	if ((ret = cursor->get_key(cursor, &k)) != 0 ||
	    (ret = cursor->get_value(cursor, &v)) != 0)
		return (ret);
	*key = k.data;
	*key_len = k.size;
	*value = v.data;
	*value_len = v.size;
	return (0);
}

/* A checkpoint of every table (WiredTiger's defaults: unnamed, not forced). */
int
spinney_wt_checkpoint(WT_SESSION *session)
{
	forget_message();
	return (session->checkpoint(session, NULL));
}

/* WT_SESSION::compact with its default timeout (1200 s). */
int
spinney_wt_compact(WT_SESSION *session, const char *uri)
{
	forget_message();
	return (session->compact(session, uri, NULL));
}

/*
 * Opens a statistics cursor: "statistics:" for the connection, or
 * "statistics:table:NAME" for a table. Its values are gathered when it is
 * opened, at the level the connection's statistics= setting keeps.
 */
int
spinney_wt_open_statistics(WT_SESSION *session, const char *uri,
    WT_CURSOR **cursorp)
{
	forget_message();
	return (session->open_cursor(session, uri, NULL, NULL, cursorp));
}

/* One statistic by its key (a WT_STAT_CONN_* or WT_STAT_DSRC_* number). */
int
spinney_wt_statistic(WT_CURSOR *cursor, int key, const char **description,
    int64_t *value)
{
	const char *printable;
	int ret;

	forget_message();
	cursor->set_key(cursor, key);
	if ((ret = cursor->search(cursor)) != 0)
		return (ret);
	return (cursor->get_value(cursor, description, &printable, value));
}
