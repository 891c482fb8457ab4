//! The declarations of the parts of LMDB's C API the adapter uses, from
//! lmdb.h of 0.9: its handles, the structs it fills in, its flags and
//! codes, and its functions.
//!
//! The `#[link]` applies to the `lmdb` feature (Debian's shared library)
//! only: with `lmdb-current`, lmdb-master-sys links its own static
//! library, which defines the same symbols.

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::ptr;

#[repr(C)]
pub(super) struct MdbEnv {
    _private: [u8; 0],
}

#[repr(C)]
pub(super) struct MdbTxn {
    _private: [u8; 0],
}

#[repr(C)]
pub(super) struct MdbCursor {
    _private: [u8; 0],
}

pub(super) type MdbDbi = c_uint;

#[repr(C)]
pub(super) struct MdbVal {
    pub(super) mv_size: usize,
    pub(super) mv_data: *mut c_void,
}

impl MdbVal {
    pub(super) fn empty() -> MdbVal {
        MdbVal {
            mv_size: 0,
            mv_data: ptr::null_mut(),
        }
    }

    /// A value pointing at `bytes`; LMDB only reads through it (puts copy).
    pub(super) fn of(bytes: &[u8]) -> MdbVal {
        MdbVal {
            mv_size: bytes.len(),
            mv_data: bytes.as_ptr().cast_mut().cast(),
        }
    }

    /// The bytes LMDB pointed the value at.
    ///
    /// # Safety
    /// The value must come from LMDB in a transaction that is still open,
    /// and the slice must not outlive it.
    pub(super) unsafe fn bytes<'a>(&self) -> &'a [u8] {
        if self.mv_size == 0 || self.mv_data.is_null() {
            return &[];
        }
        // SAFETY: LMDB points mv_data at mv_size bytes of its map, valid
        // until the transaction ends (the caller's promise).
        unsafe { std::slice::from_raw_parts(self.mv_data.cast::<u8>(), self.mv_size) }
    }
}

#[repr(C)]
#[derive(Default)]
pub(super) struct MdbStat {
    pub(super) ms_psize: c_uint,
    pub(super) ms_depth: c_uint,
    pub(super) ms_branch_pages: usize,
    pub(super) ms_leaf_pages: usize,
    pub(super) ms_overflow_pages: usize,
    pub(super) ms_entries: usize,
}

#[repr(C)]
pub(super) struct MdbEnvInfo {
    pub(super) _me_mapaddr: *mut c_void,
    pub(super) me_mapsize: usize,
    pub(super) me_last_pgno: usize,
    pub(super) me_last_txnid: usize,
    pub(super) me_maxreaders: c_uint,
    pub(super) me_numreaders: c_uint,
}

// Flags and codes of lmdb.h (0.9).
pub(super) const MDB_NOSYNC: c_uint = 0x10000;
pub(super) const MDB_RDONLY: c_uint = 0x20000;
pub(super) const MDB_NOTLS: c_uint = 0x200000;
pub(super) const MDB_WRITEMAP: c_uint = 0x80000;
pub(super) const MDB_NORDAHEAD: c_uint = 0x800000;
pub(super) const MDB_CREATE: c_uint = 0x40000;
pub(super) const MDB_NOTFOUND: c_int = -30798;

// Cursor operations (the MDB_cursor_op enum's values).
pub(super) const MDB_FIRST: c_int = 0;
pub(super) const MDB_LAST: c_int = 6;
pub(super) const MDB_NEXT: c_int = 8;
pub(super) const MDB_PREV: c_int = 12;
pub(super) const MDB_SET_RANGE: c_int = 17;

// Debian's shared library; lmdb-master-sys links its own static one.
#[cfg_attr(feature = "lmdb", link(name = "lmdb"))]
extern "C" {
    pub(super) fn mdb_version(
        major: *mut c_int,
        minor: *mut c_int,
        patch: *mut c_int,
    ) -> *const c_char;
    pub(super) fn mdb_strerror(err: c_int) -> *const c_char;
    pub(super) fn mdb_env_create(env: *mut *mut MdbEnv) -> c_int;
    pub(super) fn mdb_env_set_mapsize(env: *mut MdbEnv, size: usize) -> c_int;
    pub(super) fn mdb_env_set_maxdbs(env: *mut MdbEnv, dbs: MdbDbi) -> c_int;
    pub(super) fn mdb_env_set_maxreaders(env: *mut MdbEnv, readers: c_uint) -> c_int;
    pub(super) fn mdb_env_open(
        env: *mut MdbEnv,
        path: *const c_char,
        flags: c_uint,
        mode: c_uint,
    ) -> c_int;
    pub(super) fn mdb_env_close(env: *mut MdbEnv);
    pub(super) fn mdb_env_sync(env: *mut MdbEnv, force: c_int) -> c_int;
    pub(super) fn mdb_env_stat(env: *mut MdbEnv, stat: *mut MdbStat) -> c_int;
    pub(super) fn mdb_env_info(env: *mut MdbEnv, info: *mut MdbEnvInfo) -> c_int;
    pub(super) fn mdb_txn_begin(
        env: *mut MdbEnv,
        parent: *mut MdbTxn,
        flags: c_uint,
        txn: *mut *mut MdbTxn,
    ) -> c_int;
    pub(super) fn mdb_txn_commit(txn: *mut MdbTxn) -> c_int;
    pub(super) fn mdb_txn_abort(txn: *mut MdbTxn);
    pub(super) fn mdb_txn_reset(txn: *mut MdbTxn);
    pub(super) fn mdb_txn_renew(txn: *mut MdbTxn) -> c_int;
    pub(super) fn mdb_dbi_open(
        txn: *mut MdbTxn,
        name: *const c_char,
        flags: c_uint,
        dbi: *mut MdbDbi,
    ) -> c_int;
    pub(super) fn mdb_stat(txn: *mut MdbTxn, dbi: MdbDbi, stat: *mut MdbStat) -> c_int;
    pub(super) fn mdb_get(
        txn: *mut MdbTxn,
        dbi: MdbDbi,
        key: *mut MdbVal,
        data: *mut MdbVal,
    ) -> c_int;
    pub(super) fn mdb_put(
        txn: *mut MdbTxn,
        dbi: MdbDbi,
        key: *mut MdbVal,
        data: *mut MdbVal,
        flags: c_uint,
    ) -> c_int;
    pub(super) fn mdb_del(
        txn: *mut MdbTxn,
        dbi: MdbDbi,
        key: *mut MdbVal,
        data: *mut MdbVal,
    ) -> c_int;
    pub(super) fn mdb_cursor_open(
        txn: *mut MdbTxn,
        dbi: MdbDbi,
        cursor: *mut *mut MdbCursor,
    ) -> c_int;
    pub(super) fn mdb_cursor_close(cursor: *mut MdbCursor);
    pub(super) fn mdb_cursor_renew(txn: *mut MdbTxn, cursor: *mut MdbCursor) -> c_int;
    pub(super) fn mdb_cursor_get(
        cursor: *mut MdbCursor,
        key: *mut MdbVal,
        data: *mut MdbVal,
        op: c_int,
    ) -> c_int;
    pub(super) fn mdb_cursor_del(cursor: *mut MdbCursor, flags: c_uint) -> c_int;
}
