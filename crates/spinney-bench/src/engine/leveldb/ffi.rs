//! The declarations of the C API functions the LevelDB adapter calls,
//! from `/usr/include/leveldb/c.h` of 1.23 (Debian's libleveldb-dev),
//! linked as the system's `libleveldb.so`.

use std::ffi::{c_char, c_int, c_void};

use crate::engine::leveldb_shape::{
    opaque, Free, IterBytes, IterError, IterMove, IterSeek, IterValid, Library,
};
use crate::lineup::Engine;

opaque!(
    leveldb_t,
    leveldb_options_t,
    leveldb_cache_t,
    leveldb_filterpolicy_t,
    leveldb_writeoptions_t,
    leveldb_readoptions_t,
    leveldb_writebatch_t,
    leveldb_iterator_t,
);

/// `leveldb_no_compression` of c.h.
pub const NO_COMPRESSION: c_int = 0;

#[link(name = "leveldb")]
extern "C" {
    pub fn leveldb_options_create() -> *mut leveldb_options_t;
    pub fn leveldb_options_destroy(options: *mut leveldb_options_t);
    pub fn leveldb_options_set_create_if_missing(options: *mut leveldb_options_t, v: u8);
    pub fn leveldb_options_set_cache(options: *mut leveldb_options_t, c: *mut leveldb_cache_t);
    pub fn leveldb_options_set_filter_policy(
        options: *mut leveldb_options_t,
        policy: *mut leveldb_filterpolicy_t,
    );
    pub fn leveldb_options_set_write_buffer_size(options: *mut leveldb_options_t, s: usize);
    pub fn leveldb_options_set_max_file_size(options: *mut leveldb_options_t, s: usize);
    pub fn leveldb_options_set_compression(options: *mut leveldb_options_t, t: c_int);

    pub fn leveldb_cache_create_lru(capacity: usize) -> *mut leveldb_cache_t;
    pub fn leveldb_cache_destroy(cache: *mut leveldb_cache_t);
    pub fn leveldb_filterpolicy_create_bloom(bits_per_key: c_int) -> *mut leveldb_filterpolicy_t;
    pub fn leveldb_filterpolicy_destroy(policy: *mut leveldb_filterpolicy_t);

    pub fn leveldb_open(
        options: *const leveldb_options_t,
        name: *const c_char,
        errptr: *mut *mut c_char,
    ) -> *mut leveldb_t;
    pub fn leveldb_close(db: *mut leveldb_t);

    pub fn leveldb_writeoptions_create() -> *mut leveldb_writeoptions_t;
    pub fn leveldb_writeoptions_destroy(options: *mut leveldb_writeoptions_t);
    pub fn leveldb_writeoptions_set_sync(options: *mut leveldb_writeoptions_t, v: u8);
    pub fn leveldb_readoptions_create() -> *mut leveldb_readoptions_t;
    pub fn leveldb_readoptions_destroy(options: *mut leveldb_readoptions_t);

    pub fn leveldb_writebatch_create() -> *mut leveldb_writebatch_t;
    pub fn leveldb_writebatch_destroy(batch: *mut leveldb_writebatch_t);
    pub fn leveldb_writebatch_clear(batch: *mut leveldb_writebatch_t);
    pub fn leveldb_writebatch_put(
        batch: *mut leveldb_writebatch_t,
        key: *const c_char,
        klen: usize,
        val: *const c_char,
        vlen: usize,
    );
    pub fn leveldb_writebatch_delete(
        batch: *mut leveldb_writebatch_t,
        key: *const c_char,
        klen: usize,
    );
    pub fn leveldb_write(
        db: *mut leveldb_t,
        options: *const leveldb_writeoptions_t,
        batch: *mut leveldb_writebatch_t,
        errptr: *mut *mut c_char,
    );
    pub fn leveldb_get(
        db: *mut leveldb_t,
        options: *const leveldb_readoptions_t,
        key: *const c_char,
        keylen: usize,
        vallen: *mut usize,
        errptr: *mut *mut c_char,
    ) -> *mut c_char;

    pub fn leveldb_create_iterator(
        db: *mut leveldb_t,
        options: *const leveldb_readoptions_t,
    ) -> *mut leveldb_iterator_t;
    pub fn leveldb_iter_destroy(iter: *mut leveldb_iterator_t);
    pub fn leveldb_iter_valid(iter: *const leveldb_iterator_t) -> u8;
    pub fn leveldb_iter_seek_to_first(iter: *mut leveldb_iterator_t);
    pub fn leveldb_iter_seek_to_last(iter: *mut leveldb_iterator_t);
    pub fn leveldb_iter_seek(iter: *mut leveldb_iterator_t, k: *const c_char, klen: usize);
    pub fn leveldb_iter_next(iter: *mut leveldb_iterator_t);
    pub fn leveldb_iter_prev(iter: *mut leveldb_iterator_t);
    pub fn leveldb_iter_key(iter: *const leveldb_iterator_t, klen: *mut usize) -> *const c_char;
    pub fn leveldb_iter_value(iter: *const leveldb_iterator_t, vlen: *mut usize) -> *const c_char;
    pub fn leveldb_iter_get_error(iter: *const leveldb_iterator_t, errptr: *mut *mut c_char);

    pub fn leveldb_compact_range(
        db: *mut leveldb_t,
        start_key: *const c_char,
        start_key_len: usize,
        limit_key: *const c_char,
        limit_key_len: usize,
    );
    pub fn leveldb_property_value(db: *mut leveldb_t, propname: *const c_char) -> *mut c_char;

    pub fn leveldb_free(ptr: *mut c_void);
    pub fn leveldb_major_version() -> c_int;
    pub fn leveldb_minor_version() -> c_int;
}

/// LevelDB as a library of LevelDB's shape: which of its functions the
/// shared code (`leveldb_shape`) calls.
pub enum Leveldb {}

impl Library for Leveldb {
    const ENGINE: Engine = Engine::Leveldb;
    type Iterator = leveldb_iterator_t;
    const FREE: Free = leveldb_free;
    const ITER_DESTROY: IterMove<leveldb_iterator_t> = leveldb_iter_destroy;
    const ITER_VALID: IterValid<leveldb_iterator_t> = leveldb_iter_valid;
    const ITER_SEEK_TO_FIRST: IterMove<leveldb_iterator_t> = leveldb_iter_seek_to_first;
    const ITER_SEEK_TO_LAST: IterMove<leveldb_iterator_t> = leveldb_iter_seek_to_last;
    const ITER_SEEK: IterSeek<leveldb_iterator_t> = leveldb_iter_seek;
    const ITER_NEXT: IterMove<leveldb_iterator_t> = leveldb_iter_next;
    const ITER_PREV: IterMove<leveldb_iterator_t> = leveldb_iter_prev;
    const ITER_KEY: IterBytes<leveldb_iterator_t> = leveldb_iter_key;
    const ITER_VALUE: IterBytes<leveldb_iterator_t> = leveldb_iter_value;
    const ITER_GET_ERROR: IterError<leveldb_iterator_t> = leveldb_iter_get_error;
}
