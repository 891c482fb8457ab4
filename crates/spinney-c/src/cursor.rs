//! Cursors: a movable position in a table, over one consistent state.

use std::ffi::c_char;
use std::ops::Bound;

use spinney::{Cursor, ReadOptions};

use crate::db::{spinney_snapshot_t, spinney_table_t};
use crate::{handle, handle_mut, invalid, put_out, run, slice, spinney_status};

/// A cursor over a table (spinney::Cursor): not positioned until a seek.
pub struct spinney_cursor_t {
    cursor: Cursor,
}

fn make(
    table: *const spinney_table_t,
    snapshot: *const spinney_snapshot_t,
    lower: Bound<Vec<u8>>,
    upper: Bound<Vec<u8>>,
    cursor: *mut *mut spinney_cursor_t,
) -> crate::CResult<spinney_status> {
    let t = handle(table, "table")?;
    if cursor.is_null() {
        return invalid("cursor (the out-pointer) is NULL");
    }
    let snapshot = match snapshot.is_null() {
        true => None,
        false => Some(&handle(snapshot, "snapshot")?.snapshot),
    };
    let options = ReadOptions {
        snapshot,
        lower,
        upper,
    };
    let c = t.table.cursor_with(&options)?;
    put_out(
        cursor,
        Box::into_raw(Box::new(spinney_cursor_t { cursor: c })),
    );
    Ok(spinney_status::SPINNEY_OK)
}

/// A cursor over the keys of `table` in [lower, upper): `lower` NULL (with
/// length 0) for no lower bound, `upper` NULL for no upper bound;
/// `snapshot` NULL for the state as of now. Free with
/// spinney_cursor_destroy.
#[no_mangle]
pub extern "C" fn spinney_cursor_create(
    table: *const spinney_table_t,
    snapshot: *const spinney_snapshot_t,
    lower: *const c_char,
    lower_len: usize,
    upper: *const c_char,
    upper_len: usize,
    cursor: *mut *mut spinney_cursor_t,
    errptr: *mut *mut c_char,
) -> spinney_status {
    put_out(cursor, std::ptr::null_mut());
    run(errptr, || {
        let bound = |p: *const c_char, len: usize, what: &str, included: bool| {
            Ok::<_, crate::Failure>(match p.is_null() {
                true => Bound::Unbounded,
                false if included => Bound::Included(slice(p, len, what)?.to_vec()),
                false => Bound::Excluded(slice(p, len, what)?.to_vec()),
            })
        };
        let lower = bound(lower, lower_len, "lower", true)?;
        let upper = bound(upper, upper_len, "upper", false)?;
        make(table, snapshot, lower, upper, cursor)
    })
}

/// A cursor over the keys of `table` that begin with `prefix`.
#[no_mangle]
pub extern "C" fn spinney_cursor_create_prefix(
    table: *const spinney_table_t,
    snapshot: *const spinney_snapshot_t,
    prefix: *const c_char,
    prefix_len: usize,
    cursor: *mut *mut spinney_cursor_t,
    errptr: *mut *mut c_char,
) -> spinney_status {
    put_out(cursor, std::ptr::null_mut());
    run(errptr, || {
        let prefix = slice(prefix, prefix_len, "prefix")?.to_vec();
        let upper = successor(&prefix).map_or(Bound::Unbounded, Bound::Excluded);
        make(table, snapshot, Bound::Included(prefix), upper, cursor)
    })
}

/// The smallest key above every key that begins with `prefix`: the prefix
/// with its last byte below 0xff raised by one and what follows dropped;
/// None when there is none (empty, or every byte 0xff).
fn successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let last = prefix.iter().rposition(|&b| b != 0xff)?;
    let mut s = prefix[..=last].to_vec();
    if let Some(b) = s.last_mut() {
        *b += 1;
    }
    Some(s)
}

/// Frees a cursor (NULL is ignored).
#[no_mangle]
pub extern "C" fn spinney_cursor_destroy(cursor: *mut spinney_cursor_t) {
    if !cursor.is_null() {
        // SAFETY: made by spinney_cursor_create(_prefix), destroyed once.
        drop(unsafe { Box::from_raw(cursor) });
    }
}

fn step(cursor: *mut spinney_cursor_t, f: impl FnOnce(&mut Cursor)) {
    crate::run_or((), || {
        if let Ok(c) = handle_mut(cursor, "cursor") {
            f(&mut c.cursor);
        }
    })
}

/// Moves to the first key (within the bounds).
#[no_mangle]
pub extern "C" fn spinney_cursor_seek_to_first(cursor: *mut spinney_cursor_t) {
    step(cursor, Cursor::seek_to_first);
}

/// Moves to the last key (within the bounds).
#[no_mangle]
pub extern "C" fn spinney_cursor_seek_to_last(cursor: *mut spinney_cursor_t) {
    step(cursor, Cursor::seek_to_last);
}

/// Runs a seek to `key`.
fn seek_with(
    cursor: *mut spinney_cursor_t,
    key: *const c_char,
    key_len: usize,
    errptr: *mut *mut c_char,
    seek: fn(&mut Cursor, &[u8]),
) -> spinney_status {
    run(errptr, || {
        let c = handle_mut(cursor, "cursor")?;
        seek(&mut c.cursor, slice(key, key_len, "key")?);
        Ok(spinney_status::SPINNEY_OK)
    })
}

/// Moves to the first key at or after `key`.
#[no_mangle]
pub extern "C" fn spinney_cursor_seek(
    cursor: *mut spinney_cursor_t,
    key: *const c_char,
    key_len: usize,
    errptr: *mut *mut c_char,
) -> spinney_status {
    seek_with(cursor, key, key_len, errptr, Cursor::seek)
}

/// Moves to the last key at or before `key`.
#[no_mangle]
pub extern "C" fn spinney_cursor_seek_for_prev(
    cursor: *mut spinney_cursor_t,
    key: *const c_char,
    key_len: usize,
    errptr: *mut *mut c_char,
) -> spinney_status {
    seek_with(cursor, key, key_len, errptr, Cursor::seek_for_prev)
}

/// Moves to the next key (the cursor must be valid).
#[no_mangle]
pub extern "C" fn spinney_cursor_next(cursor: *mut spinney_cursor_t) {
    step(cursor, Cursor::next);
}

/// Moves to the previous key (the cursor must be valid).
#[no_mangle]
pub extern "C" fn spinney_cursor_prev(cursor: *mut spinney_cursor_t) {
    step(cursor, Cursor::prev);
}

/// 1 when the cursor is on a key, else 0 (at an end, after an error, or
/// for NULL).
#[no_mangle]
pub extern "C" fn spinney_cursor_valid(cursor: *const spinney_cursor_t) -> i32 {
    crate::run_or(0, || {
        handle(cursor, "cursor").map_or(0, |c| i32::from(c.cursor.valid()))
    })
}

/// The key the cursor is on (*len its length): owned by the cursor, valid
/// until it next moves or is destroyed. NULL when the cursor is not valid.
#[no_mangle]
pub extern "C" fn spinney_cursor_key(
    cursor: *const spinney_cursor_t,
    len: *mut usize,
) -> *const c_char {
    entry_part(cursor, len, Cursor::key)
}

/// The value the cursor is on, as spinney_cursor_key.
#[no_mangle]
pub extern "C" fn spinney_cursor_value(
    cursor: *const spinney_cursor_t,
    len: *mut usize,
) -> *const c_char {
    entry_part(cursor, len, Cursor::value)
}

fn entry_part(
    cursor: *const spinney_cursor_t,
    len: *mut usize,
    part: fn(&Cursor) -> &[u8],
) -> *const c_char {
    put_out(len, 0);
    crate::run_or(std::ptr::null(), || match handle(cursor, "cursor") {
        Ok(c) if c.cursor.valid() => {
            let bytes = part(&c.cursor);
            put_out(len, bytes.len());
            bytes.as_ptr().cast()
        }
        _ => std::ptr::null(),
    })
}

/// SPINNEY_OK, or the error that ended the cursor (a cursor that is not
/// valid is at an end only if its status is SPINNEY_OK).
#[no_mangle]
pub extern "C" fn spinney_cursor_status(
    cursor: *const spinney_cursor_t,
    errptr: *mut *mut c_char,
) -> spinney_status {
    run(errptr, || {
        handle(cursor, "cursor")?.cursor.status()?;
        Ok(spinney_status::SPINNEY_OK)
    })
}

#[cfg(test)]
mod tests {
    use super::successor;

    #[test]
    fn a_prefix_successor_is_the_least_key_above_the_prefix() {
        assert_eq!(successor(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(successor(b"a\xff\xff"), Some(b"b".to_vec()));
        assert_eq!(successor(b"\xff"), None);
        assert_eq!(successor(b""), None);
    }
}
