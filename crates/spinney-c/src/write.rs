//! Reads and writes of keys: get, put, delete, delete_range, write
//! batches and transactions.

use std::ffi::c_char;

use spinney::{Transaction, WriteBatch};

use crate::db::{spinney_db_t, spinney_snapshot_t, spinney_table_t};
use crate::{c_bytes, handle, handle_mut, invalid, put_out, run, slice, spinney_status, CResult};

/// Writes collected to be applied together, across tables, by
/// spinney_write: all or nothing, also across a crash.
pub struct spinney_batch_t {
    batch: WriteBatch,
}

/// A transaction: reads at its snapshot with its own writes over them,
/// and commits whole or not at all (snapshot isolation, the first
/// committer wins).
pub struct spinney_txn_t {
    /// None once committed or rolled back.
    txn: Option<Transaction>,
}

fn found(
    value: Option<Vec<u8>>,
    out: *mut *mut c_char,
    out_len: *mut usize,
) -> CResult<spinney_status> {
    let Some(v) = value else {
        return Ok(spinney_status::SPINNEY_NOT_FOUND);
    };
    if out.is_null() {
        return invalid("value (the out-pointer) is NULL");
    }
    put_out(out_len, v.len());
    put_out(out, c_bytes(&v));
    Ok(spinney_status::SPINNEY_OK)
}

/// Reads `key` into the caller's buffer: SPINNEY_OK with the value's
/// length in *value_len, SPINNEY_NOT_FOUND, or SPINNEY_BUFFER_TOO_SMALL
/// (nothing copied; *value_len is the length needed). `snapshot` NULL:
/// the current state.
#[no_mangle]
pub extern "C" fn spinney_get(
    table: *const spinney_table_t,
    snapshot: *const spinney_snapshot_t,
    key: *const c_char,
    key_len: usize,
    buffer: *mut c_char,
    buffer_len: usize,
    value_len: *mut usize,
    errptr: *mut *mut c_char,
) -> spinney_status {
    put_out(value_len, 0);
    run(errptr, || {
        let t = handle(table, "table")?;
        let key = slice(key, key_len, "key")?;
        let value = read(t, snapshot, key)?;
        let Some(v) = value else {
            return Ok(spinney_status::SPINNEY_NOT_FOUND);
        };
        put_out(value_len, v.len());
        if v.len() > buffer_len {
            return Ok(spinney_status::SPINNEY_BUFFER_TOO_SMALL);
        }
        if buffer.is_null() && !v.is_empty() {
            return invalid("buffer is NULL");
        }
        // SAFETY: the caller's buffer holds buffer_len >= v.len() bytes.
        unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), buffer.cast::<u8>(), v.len()) };
        Ok(spinney_status::SPINNEY_OK)
    })
}

fn read(
    t: &spinney_table_t,
    snapshot: *const spinney_snapshot_t,
    key: &[u8],
) -> CResult<Option<Vec<u8>>> {
    Ok(match snapshot.is_null() {
        true => t.table.get(key)?,
        false => handle(snapshot, "snapshot")?.snapshot.get(&t.table, key)?,
    })
}

/// Reads `key` into memory spinney allocates: SPINNEY_OK with *value (free
/// it with spinney_free; NUL-terminated, the NUL not counted) and
/// *value_len, or SPINNEY_NOT_FOUND. `snapshot` NULL: the current state.
#[no_mangle]
pub extern "C" fn spinney_get_alloc(
    table: *const spinney_table_t,
    snapshot: *const spinney_snapshot_t,
    key: *const c_char,
    key_len: usize,
    value: *mut *mut c_char,
    value_len: *mut usize,
    errptr: *mut *mut c_char,
) -> spinney_status {
    put_out(value, std::ptr::null_mut());
    put_out(value_len, 0);
    run(errptr, || {
        let t = handle(table, "table")?;
        let key = slice(key, key_len, "key")?;
        found(read(t, snapshot, key)?, value, value_len)
    })
}

/// Writes `key` = `value`.
#[no_mangle]
pub extern "C" fn spinney_put(
    table: *const spinney_table_t,
    key: *const c_char,
    key_len: usize,
    value: *const c_char,
    value_len: usize,
    errptr: *mut *mut c_char,
) -> spinney_status {
    run(errptr, || {
        let t = handle(table, "table")?;
        t.table.put(
            slice(key, key_len, "key")?,
            slice(value, value_len, "value")?,
        )?;
        Ok(spinney_status::SPINNEY_OK)
    })
}

/// Deletes `key` (no error if it is absent).
#[no_mangle]
pub extern "C" fn spinney_delete(
    table: *const spinney_table_t,
    key: *const c_char,
    key_len: usize,
    errptr: *mut *mut c_char,
) -> spinney_status {
    run(errptr, || {
        handle(table, "table")?
            .table
            .delete(slice(key, key_len, "key")?)?;
        Ok(spinney_status::SPINNEY_OK)
    })
}

/// Deletes every key in [start, end).
#[no_mangle]
pub extern "C" fn spinney_delete_range(
    table: *const spinney_table_t,
    start: *const c_char,
    start_len: usize,
    end: *const c_char,
    end_len: usize,
    errptr: *mut *mut c_char,
) -> spinney_status {
    run(errptr, || {
        let t = handle(table, "table")?;
        let (start, end) = (
            slice(start, start_len, "start")?,
            slice(end, end_len, "end")?,
        );
        t.table.delete_range(start..end)?;
        Ok(spinney_status::SPINNEY_OK)
    })
}

/// An empty batch; free with spinney_batch_destroy.
#[no_mangle]
pub extern "C" fn spinney_batch_create() -> *mut spinney_batch_t {
    crate::run_or(std::ptr::null_mut(), || {
        Box::into_raw(Box::new(spinney_batch_t {
            batch: WriteBatch::new(),
        }))
    })
}

/// Frees a batch (NULL is ignored); what it holds is not written.
#[no_mangle]
pub extern "C" fn spinney_batch_destroy(batch: *mut spinney_batch_t) {
    if !batch.is_null() {
        // SAFETY: made by spinney_batch_create, destroyed once.
        drop(unsafe { Box::from_raw(batch) });
    }
}

/// Adds `key` = `value` in `table` to the batch.
#[no_mangle]
pub extern "C" fn spinney_batch_put(
    batch: *mut spinney_batch_t,
    table: *const spinney_table_t,
    key: *const c_char,
    key_len: usize,
    value: *const c_char,
    value_len: usize,
    errptr: *mut *mut c_char,
) -> spinney_status {
    run(errptr, || {
        let (b, t) = (handle_mut(batch, "batch")?, handle(table, "table")?);
        let (k, v) = (
            slice(key, key_len, "key")?,
            slice(value, value_len, "value")?,
        );
        b.batch.put(&t.table, k, v);
        Ok(spinney_status::SPINNEY_OK)
    })
}

/// Adds a delete of `key` in `table` to the batch.
#[no_mangle]
pub extern "C" fn spinney_batch_delete(
    batch: *mut spinney_batch_t,
    table: *const spinney_table_t,
    key: *const c_char,
    key_len: usize,
    errptr: *mut *mut c_char,
) -> spinney_status {
    run(errptr, || {
        let (b, t) = (handle_mut(batch, "batch")?, handle(table, "table")?);
        b.batch.delete(&t.table, slice(key, key_len, "key")?);
        Ok(spinney_status::SPINNEY_OK)
    })
}

/// Adds a delete of every key in [start, end) of `table` to the batch.
#[no_mangle]
pub extern "C" fn spinney_batch_delete_range(
    batch: *mut spinney_batch_t,
    table: *const spinney_table_t,
    start: *const c_char,
    start_len: usize,
    end: *const c_char,
    end_len: usize,
    errptr: *mut *mut c_char,
) -> spinney_status {
    run(errptr, || {
        let (b, t) = (handle_mut(batch, "batch")?, handle(table, "table")?);
        let (start, end) = (
            slice(start, start_len, "start")?,
            slice(end, end_len, "end")?,
        );
        b.batch.delete_range(&t.table, start..end);
        Ok(spinney_status::SPINNEY_OK)
    })
}

/// The operations in the batch (0 for NULL).
#[no_mangle]
pub extern "C" fn spinney_batch_count(batch: *const spinney_batch_t) -> usize {
    crate::run_or(0, || handle(batch, "batch").map_or(0, |b| b.batch.len()))
}

/// Empties the batch.
#[no_mangle]
pub extern "C" fn spinney_batch_clear(batch: *mut spinney_batch_t) {
    crate::run_or((), || {
        if let Ok(b) = handle_mut(batch, "batch") {
            b.batch.clear();
        }
    })
}

/// Applies the batch whole; it is empty afterwards, whatever the status,
/// and may be filled again.
#[no_mangle]
pub extern "C" fn spinney_write(
    db: *const spinney_db_t,
    batch: *mut spinney_batch_t,
    errptr: *mut *mut c_char,
) -> spinney_status {
    run(errptr, || {
        let (db, b) = (handle(db, "db")?, handle_mut(batch, "batch")?);
        db.db.write(std::mem::take(&mut b.batch))?;
        Ok(spinney_status::SPINNEY_OK)
    })
}

/// Begins a transaction; free *txn with spinney_txn_destroy (which rolls
/// back one not committed).
#[no_mangle]
pub extern "C" fn spinney_txn_begin(
    db: *const spinney_db_t,
    txn: *mut *mut spinney_txn_t,
    errptr: *mut *mut c_char,
) -> spinney_status {
    put_out(txn, std::ptr::null_mut());
    run(errptr, || {
        let db = handle(db, "db")?;
        if txn.is_null() {
            return invalid("txn (the out-pointer) is NULL");
        }
        let t = spinney_txn_t {
            txn: Some(db.db.begin()),
        };
        put_out(txn, Box::into_raw(Box::new(t)));
        Ok(spinney_status::SPINNEY_OK)
    })
}

fn open_txn<'a>(txn: *mut spinney_txn_t) -> CResult<&'a mut Transaction> {
    match handle_mut(txn, "txn")?.txn.as_mut() {
        Some(t) => Ok(t),
        None => invalid("the transaction has ended (committed or rolled back)"),
    }
}

/// A transaction's read of `key` into memory spinney allocates.
fn txn_read(
    txn: *mut spinney_txn_t,
    table: *const spinney_table_t,
    (key, key_len): (*const c_char, usize),
    (value, value_len): (*mut *mut c_char, *mut usize),
    errptr: *mut *mut c_char,
    read: impl FnOnce(&mut Transaction, &spinney::Table, &[u8]) -> spinney::Result<Option<Vec<u8>>>,
) -> spinney_status {
    put_out(value, std::ptr::null_mut());
    put_out(value_len, 0);
    run(errptr, || {
        let (tx, t) = (open_txn(txn)?, handle(table, "table")?);
        let v = read(tx, &t.table, slice(key, key_len, "key")?)?;
        found(v, value, value_len)
    })
}

/// Reads `key` as the transaction sees it (its snapshot, its own writes
/// over it), into memory freed with spinney_free; SPINNEY_NOT_FOUND if
/// absent.
#[no_mangle]
pub extern "C" fn spinney_txn_get(
    txn: *mut spinney_txn_t,
    table: *const spinney_table_t,
    key: *const c_char,
    key_len: usize,
    value: *mut *mut c_char,
    value_len: *mut usize,
    errptr: *mut *mut c_char,
) -> spinney_status {
    let read = |tx: &mut Transaction, t: &spinney::Table, k: &[u8]| tx.get(t, k);
    txn_read(txn, table, (key, key_len), (value, value_len), errptr, read)
}

/// spinney_txn_get, and the commit conflicts if another commit wrote
/// `key` after the transaction began.
#[no_mangle]
pub extern "C" fn spinney_txn_get_for_update(
    txn: *mut spinney_txn_t,
    table: *const spinney_table_t,
    key: *const c_char,
    key_len: usize,
    value: *mut *mut c_char,
    value_len: *mut usize,
    errptr: *mut *mut c_char,
) -> spinney_status {
    let read = |tx: &mut Transaction, t: &spinney::Table, k: &[u8]| tx.get_for_update(t, k);
    txn_read(txn, table, (key, key_len), (value, value_len), errptr, read)
}

/// Writes `key` = `value` in the transaction.
#[no_mangle]
pub extern "C" fn spinney_txn_put(
    txn: *mut spinney_txn_t,
    table: *const spinney_table_t,
    key: *const c_char,
    key_len: usize,
    value: *const c_char,
    value_len: usize,
    errptr: *mut *mut c_char,
) -> spinney_status {
    run(errptr, || {
        let (tx, t) = (open_txn(txn)?, handle(table, "table")?);
        let (k, v) = (
            slice(key, key_len, "key")?,
            slice(value, value_len, "value")?,
        );
        tx.put(&t.table, k, v)?;
        Ok(spinney_status::SPINNEY_OK)
    })
}

/// Deletes `key` in the transaction.
#[no_mangle]
pub extern "C" fn spinney_txn_delete(
    txn: *mut spinney_txn_t,
    table: *const spinney_table_t,
    key: *const c_char,
    key_len: usize,
    errptr: *mut *mut c_char,
) -> spinney_status {
    run(errptr, || {
        let (tx, t) = (open_txn(txn)?, handle(table, "table")?);
        tx.delete(&t.table, slice(key, key_len, "key")?)?;
        Ok(spinney_status::SPINNEY_OK)
    })
}

/// Deletes every key in [start, end) in the transaction.
#[no_mangle]
pub extern "C" fn spinney_txn_delete_range(
    txn: *mut spinney_txn_t,
    table: *const spinney_table_t,
    start: *const c_char,
    start_len: usize,
    end: *const c_char,
    end_len: usize,
    errptr: *mut *mut c_char,
) -> spinney_status {
    run(errptr, || {
        let (tx, t) = (open_txn(txn)?, handle(table, "table")?);
        let (start, end) = (
            slice(start, start_len, "start")?,
            slice(end, end_len, "end")?,
        );
        tx.delete_range(&t.table, start..end)?;
        Ok(spinney_status::SPINNEY_OK)
    })
}

/// Commits: SPINNEY_OK, or SPINNEY_CONFLICT when a commit since the
/// transaction began wrote a key it wrote or read for update (nothing is
/// written; begin again). The transaction has ended either way; destroy
/// it.
#[no_mangle]
pub extern "C" fn spinney_txn_commit(
    txn: *mut spinney_txn_t,
    errptr: *mut *mut c_char,
) -> spinney_status {
    run(errptr, || {
        let t = handle_mut(txn, "txn")?;
        match t.txn.take() {
            Some(tx) => tx.commit()?,
            None => return invalid("the transaction has ended (committed or rolled back)"),
        }
        Ok(spinney_status::SPINNEY_OK)
    })
}

/// Rolls back: nothing of the transaction is written. Ends it; destroy it.
#[no_mangle]
pub extern "C" fn spinney_txn_rollback(txn: *mut spinney_txn_t) {
    crate::run_or((), || {
        if let Ok(t) = handle_mut(txn, "txn") {
            if let Some(tx) = t.txn.take() {
                tx.rollback();
            }
        }
    })
}

/// Frees a transaction (NULL is ignored), rolling it back if it has not
/// ended.
#[no_mangle]
pub extern "C" fn spinney_txn_destroy(txn: *mut spinney_txn_t) {
    if !txn.is_null() {
        // SAFETY: made by spinney_txn_begin, destroyed once.
        drop(unsafe { Box::from_raw(txn) });
    }
}
