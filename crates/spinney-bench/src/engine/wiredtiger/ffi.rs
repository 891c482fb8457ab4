//! The declarations of the WiredTiger adapter's C functions: those of its
//! shim (`shim.c`, compiled and linked by build.rs with Debian's
//! `libwiredtiger.so`), and WiredTiger's own plain functions. Its handles
//! stay opaque: only the shim looks inside them.

use std::ffi::{c_char, c_int, c_void};
use std::marker::{PhantomData, PhantomPinned};

/// `WT_CONNECTION`, only ever behind a pointer.
#[repr(C)]
pub struct Connection {
    _opaque: [u8; 0],
    _marker: PhantomData<(*mut u8, PhantomPinned)>,
}

/// `WT_SESSION`, only ever behind a pointer.
#[repr(C)]
pub struct Session {
    _opaque: [u8; 0],
    _marker: PhantomData<(*mut u8, PhantomPinned)>,
}

/// `WT_CURSOR`, only ever behind a pointer.
#[repr(C)]
pub struct Cursor {
    _opaque: [u8; 0],
    _marker: PhantomData<(*mut u8, PhantomPinned)>,
}

/// wiredtiger.h's codes; `wiredtiger_codes_and_statistics_keys_match_the_header`
/// checks them against the library.
pub const WT_ROLLBACK: c_int = -31800;
pub const WT_NOTFOUND: c_int = -31803;

extern "C" {
    pub fn spinney_wt_last_message() -> *const c_char;
    pub fn spinney_wt_open(
        home: *const c_char,
        config: *const c_char,
        conn: *mut *mut Connection,
    ) -> c_int;
    pub fn spinney_wt_close(conn: *mut Connection) -> c_int;
    pub fn spinney_wt_open_session(
        conn: *mut Connection,
        config: *const c_char,
        session: *mut *mut Session,
    ) -> c_int;
    pub fn spinney_wt_close_session(session: *mut Session) -> c_int;
    pub fn spinney_wt_create(
        session: *mut Session,
        uri: *const c_char,
        config: *const c_char,
    ) -> c_int;
    pub fn spinney_wt_metadata(
        session: *mut Session,
        key: *const c_char,
        out: *mut c_char,
        out_len: usize,
    ) -> c_int;
    pub fn spinney_wt_open_cursor(
        session: *mut Session,
        uri: *const c_char,
        cursor: *mut *mut Cursor,
    ) -> c_int;
    pub fn spinney_wt_close_cursor(cursor: *mut Cursor) -> c_int;
    pub fn spinney_wt_begin(session: *mut Session) -> c_int;
    pub fn spinney_wt_commit(session: *mut Session) -> c_int;
    pub fn spinney_wt_rollback(session: *mut Session) -> c_int;
    pub fn spinney_wt_insert(
        cursor: *mut Cursor,
        key: *const c_void,
        key_len: usize,
        value: *const c_void,
        value_len: usize,
    ) -> c_int;
    pub fn spinney_wt_remove(cursor: *mut Cursor, key: *const c_void, key_len: usize) -> c_int;
    pub fn spinney_wt_truncate_range(
        session: *mut Session,
        uri: *const c_char,
        start: *const c_void,
        start_len: usize,
        end: *const c_void,
        end_len: usize,
    ) -> c_int;
    pub fn spinney_wt_search(
        cursor: *mut Cursor,
        key: *const c_void,
        key_len: usize,
        value: *mut *const c_void,
        value_len: *mut usize,
    ) -> c_int;
    pub fn spinney_wt_search_near(
        cursor: *mut Cursor,
        key: *const c_void,
        key_len: usize,
        exact: *mut c_int,
    ) -> c_int;
    pub fn spinney_wt_next(cursor: *mut Cursor) -> c_int;
    pub fn spinney_wt_prev(cursor: *mut Cursor) -> c_int;
    pub fn spinney_wt_reset(cursor: *mut Cursor) -> c_int;
    pub fn spinney_wt_entry(
        cursor: *mut Cursor,
        key: *mut *const c_void,
        key_len: *mut usize,
        value: *mut *const c_void,
        value_len: *mut usize,
    ) -> c_int;
    pub fn spinney_wt_checkpoint(session: *mut Session) -> c_int;
    pub fn spinney_wt_compact(session: *mut Session, uri: *const c_char) -> c_int;
    pub fn spinney_wt_open_statistics(
        session: *mut Session,
        uri: *const c_char,
        cursor: *mut *mut Cursor,
    ) -> c_int;
    pub fn spinney_wt_statistic(
        cursor: *mut Cursor,
        key: c_int,
        description: *mut *const c_char,
        value: *mut i64,
    ) -> c_int;
    // WiredTiger's plain functions, called directly.
    pub fn wiredtiger_strerror(error: c_int) -> *const c_char;
    pub fn wiredtiger_version(
        major: *mut c_int,
        minor: *mut c_int,
        patch: *mut c_int,
    ) -> *const c_char;
}
