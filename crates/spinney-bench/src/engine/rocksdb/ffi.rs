//! The declarations of the C API functions the RocksDB adapter calls,
//! from `/usr/include/rocksdb/c.h` of 7.8, and of the functions of its C++
//! shim (`shim.cc`, compiled by build.rs).
//!
//! The `#[link]` applies to the `rocksdb` feature (Debian's shared
//! library) only: with `rocksdb-current`, librocksdb-sys links its own
//! static library, which defines the same symbols.

use std::ffi::{c_char, c_int, c_uchar, c_void};

use crate::engine::leveldb_shape::{
    opaque, Free, IterBytes, IterError, IterMove, IterSeek, IterValid, Library,
};
use crate::lineup::Engine;

opaque!(
    rocksdb_t,
    rocksdb_options_t,
    rocksdb_block_based_table_options_t,
    rocksdb_cache_t,
    rocksdb_filterpolicy_t,
    rocksdb_env_t,
    rocksdb_column_family_handle_t,
    rocksdb_writeoptions_t,
    rocksdb_readoptions_t,
    rocksdb_flushoptions_t,
    rocksdb_writebatch_t,
    rocksdb_iterator_t,
    rocksdb_pinnableslice_t,
    rocksdb_perfcontext_t,
);

/// `rocksdb_enable_count` of c.h's perf levels (shim.cc checks this
/// number and the metrics' against c.h when it compiles).
pub const PERF_LEVEL_ENABLE_COUNT: c_int = 2;

/// The perf context metrics of c.h that `ReadCounts` is read from.
pub const USER_KEY_COMPARISON_COUNT: c_int = 0;
pub const BLOCK_CACHE_HIT_COUNT: c_int = 1;
pub const BLOCK_READ_COUNT: c_int = 2;
pub const GET_FROM_MEMTABLE_COUNT: c_int = 16;
pub const SEEK_CHILD_SEEK_COUNT: c_int = 24;
pub const BLOOM_SST_HIT_COUNT: c_int = 44;
pub const BLOOM_SST_MISS_COUNT: c_int = 45;

/// What `spinney_rocksdb_compact_level` returns.
pub const COMPACTED: c_int = 0;
pub const COMPACTION_BUSY: c_int = 1;

/// `rocksdb_no_compression` and friends of c.h.
pub const NO_COMPRESSION: c_int = 0;
pub const LZ4_COMPRESSION: c_int = 4;
pub const ZSTD_COMPRESSION: c_int = 7;

// Debian's shared library; librocksdb-sys links its own static one.
#[cfg_attr(feature = "rocksdb", link(name = "rocksdb"))]
extern "C" {
    pub fn rocksdb_set_perf_level(level: c_int);
    pub fn rocksdb_options_create() -> *mut rocksdb_options_t;
    pub fn rocksdb_options_destroy(options: *mut rocksdb_options_t);
    pub fn rocksdb_options_set_create_if_missing(options: *mut rocksdb_options_t, v: u8);
    pub fn rocksdb_options_set_create_missing_column_families(
        options: *mut rocksdb_options_t,
        v: u8,
    );
    pub fn rocksdb_options_set_max_background_jobs(options: *mut rocksdb_options_t, n: c_int);
    pub fn rocksdb_options_set_env(options: *mut rocksdb_options_t, env: *mut rocksdb_env_t);
    pub fn rocksdb_options_set_allow_mmap_reads(options: *mut rocksdb_options_t, v: c_uchar);
    pub fn rocksdb_options_set_use_direct_reads(options: *mut rocksdb_options_t, v: c_uchar);
    pub fn rocksdb_options_set_use_direct_io_for_flush_and_compaction(
        options: *mut rocksdb_options_t,
        v: c_uchar,
    );
    pub fn rocksdb_options_set_write_buffer_size(options: *mut rocksdb_options_t, s: usize);
    pub fn rocksdb_options_set_compression(options: *mut rocksdb_options_t, t: c_int);
    pub fn rocksdb_options_set_disable_auto_compactions(
        options: *mut rocksdb_options_t,
        disable: c_int,
    );
    pub fn rocksdb_options_set_level0_file_num_compaction_trigger(
        options: *mut rocksdb_options_t,
        n: c_int,
    );
    pub fn rocksdb_options_set_level0_slowdown_writes_trigger(
        options: *mut rocksdb_options_t,
        n: c_int,
    );
    pub fn rocksdb_options_set_level0_stop_writes_trigger(
        options: *mut rocksdb_options_t,
        n: c_int,
    );
    pub fn rocksdb_options_set_level_compaction_dynamic_level_bytes(
        options: *mut rocksdb_options_t,
        v: u8,
    );
    pub fn rocksdb_options_set_max_bytes_for_level_base(options: *mut rocksdb_options_t, n: u64);
    pub fn rocksdb_options_set_target_file_size_base(options: *mut rocksdb_options_t, n: u64);
    pub fn rocksdb_options_set_max_write_buffer_number(options: *mut rocksdb_options_t, n: c_int);
    pub fn rocksdb_options_set_block_based_table_factory(
        options: *mut rocksdb_options_t,
        table_options: *mut rocksdb_block_based_table_options_t,
    );

    pub fn rocksdb_block_based_options_create() -> *mut rocksdb_block_based_table_options_t;
    pub fn rocksdb_block_based_options_destroy(options: *mut rocksdb_block_based_table_options_t);
    pub fn rocksdb_block_based_options_set_block_cache(
        options: *mut rocksdb_block_based_table_options_t,
        cache: *mut rocksdb_cache_t,
    );
    /// Takes ownership of `policy`.
    pub fn rocksdb_block_based_options_set_filter_policy(
        options: *mut rocksdb_block_based_table_options_t,
        policy: *mut rocksdb_filterpolicy_t,
    );
    pub fn rocksdb_filterpolicy_create_bloom_full(bits_per_key: f64)
        -> *mut rocksdb_filterpolicy_t;

    pub fn rocksdb_cache_create_lru(capacity: usize) -> *mut rocksdb_cache_t;
    pub fn rocksdb_cache_destroy(cache: *mut rocksdb_cache_t);

    pub fn rocksdb_create_default_env() -> *mut rocksdb_env_t;
    pub fn rocksdb_env_destroy(env: *mut rocksdb_env_t);
    pub fn rocksdb_env_set_background_threads(env: *mut rocksdb_env_t, n: c_int);
    pub fn rocksdb_env_set_high_priority_background_threads(env: *mut rocksdb_env_t, n: c_int);

    pub fn rocksdb_list_column_families(
        options: *const rocksdb_options_t,
        name: *const c_char,
        len: *mut usize,
        errptr: *mut *mut c_char,
    ) -> *mut *mut c_char;
    pub fn rocksdb_list_column_families_destroy(list: *mut *mut c_char, len: usize);
    pub fn rocksdb_open_column_families(
        options: *const rocksdb_options_t,
        name: *const c_char,
        num_column_families: c_int,
        column_family_names: *const *const c_char,
        column_family_options: *const *const rocksdb_options_t,
        column_family_handles: *mut *mut rocksdb_column_family_handle_t,
        errptr: *mut *mut c_char,
    ) -> *mut rocksdb_t;
    pub fn rocksdb_column_family_handle_destroy(handle: *mut rocksdb_column_family_handle_t);
    pub fn rocksdb_close(db: *mut rocksdb_t);

    pub fn rocksdb_writeoptions_create() -> *mut rocksdb_writeoptions_t;
    pub fn rocksdb_writeoptions_destroy(options: *mut rocksdb_writeoptions_t);
    pub fn rocksdb_writeoptions_set_sync(options: *mut rocksdb_writeoptions_t, v: u8);
    pub fn rocksdb_writeoptions_disable_WAL(options: *mut rocksdb_writeoptions_t, v: c_int);
    pub fn rocksdb_readoptions_create() -> *mut rocksdb_readoptions_t;
    pub fn rocksdb_readoptions_destroy(options: *mut rocksdb_readoptions_t);
    pub fn rocksdb_flushoptions_create() -> *mut rocksdb_flushoptions_t;
    pub fn rocksdb_flushoptions_destroy(options: *mut rocksdb_flushoptions_t);
    pub fn rocksdb_flushoptions_set_wait(options: *mut rocksdb_flushoptions_t, v: u8);

    pub fn rocksdb_writebatch_create() -> *mut rocksdb_writebatch_t;
    pub fn rocksdb_writebatch_destroy(batch: *mut rocksdb_writebatch_t);
    pub fn rocksdb_writebatch_clear(batch: *mut rocksdb_writebatch_t);
    pub fn rocksdb_writebatch_put_cf(
        batch: *mut rocksdb_writebatch_t,
        cf: *mut rocksdb_column_family_handle_t,
        key: *const c_char,
        klen: usize,
        val: *const c_char,
        vlen: usize,
    );
    pub fn rocksdb_writebatch_delete_cf(
        batch: *mut rocksdb_writebatch_t,
        cf: *mut rocksdb_column_family_handle_t,
        key: *const c_char,
        klen: usize,
    );
    pub fn rocksdb_writebatch_delete_range_cf(
        batch: *mut rocksdb_writebatch_t,
        cf: *mut rocksdb_column_family_handle_t,
        start_key: *const c_char,
        start_key_len: usize,
        end_key: *const c_char,
        end_key_len: usize,
    );
    pub fn rocksdb_write(
        db: *mut rocksdb_t,
        options: *const rocksdb_writeoptions_t,
        batch: *mut rocksdb_writebatch_t,
        errptr: *mut *mut c_char,
    );

    pub fn rocksdb_get_pinned_cf(
        db: *mut rocksdb_t,
        options: *const rocksdb_readoptions_t,
        cf: *mut rocksdb_column_family_handle_t,
        key: *const c_char,
        keylen: usize,
        errptr: *mut *mut c_char,
    ) -> *mut rocksdb_pinnableslice_t;
    pub fn rocksdb_pinnableslice_value(
        slice: *const rocksdb_pinnableslice_t,
        vlen: *mut usize,
    ) -> *const c_char;
    pub fn rocksdb_pinnableslice_destroy(slice: *mut rocksdb_pinnableslice_t);

    pub fn rocksdb_create_iterator_cf(
        db: *mut rocksdb_t,
        options: *const rocksdb_readoptions_t,
        cf: *mut rocksdb_column_family_handle_t,
    ) -> *mut rocksdb_iterator_t;
    pub fn rocksdb_iter_destroy(iter: *mut rocksdb_iterator_t);
    pub fn rocksdb_iter_valid(iter: *const rocksdb_iterator_t) -> u8;
    pub fn rocksdb_iter_seek_to_first(iter: *mut rocksdb_iterator_t);
    pub fn rocksdb_iter_seek_to_last(iter: *mut rocksdb_iterator_t);
    pub fn rocksdb_iter_seek(iter: *mut rocksdb_iterator_t, k: *const c_char, klen: usize);
    pub fn rocksdb_iter_next(iter: *mut rocksdb_iterator_t);
    pub fn rocksdb_iter_prev(iter: *mut rocksdb_iterator_t);
    pub fn rocksdb_iter_key(iter: *const rocksdb_iterator_t, klen: *mut usize) -> *const c_char;
    pub fn rocksdb_iter_value(iter: *const rocksdb_iterator_t, vlen: *mut usize) -> *const c_char;
    pub fn rocksdb_iter_get_error(iter: *const rocksdb_iterator_t, errptr: *mut *mut c_char);

    pub fn rocksdb_flush_cf(
        db: *mut rocksdb_t,
        options: *const rocksdb_flushoptions_t,
        cf: *mut rocksdb_column_family_handle_t,
        errptr: *mut *mut c_char,
    );
    pub fn rocksdb_compact_range_cf(
        db: *mut rocksdb_t,
        cf: *mut rocksdb_column_family_handle_t,
        start_key: *const c_char,
        start_key_len: usize,
        limit_key: *const c_char,
        limit_key_len: usize,
    );
    pub fn rocksdb_property_value_cf(
        db: *mut rocksdb_t,
        cf: *mut rocksdb_column_family_handle_t,
        propname: *const c_char,
    ) -> *mut c_char;
    pub fn rocksdb_property_int_cf(
        db: *mut rocksdb_t,
        cf: *mut rocksdb_column_family_handle_t,
        propname: *const c_char,
        out_val: *mut u64,
    ) -> c_int;

    pub fn rocksdb_free(ptr: *mut c_void);

    /// The calling thread's perf context (the handle wraps a pointer to
    /// thread-local storage: it must stay in that thread).
    pub fn rocksdb_perfcontext_create() -> *mut rocksdb_perfcontext_t;
    pub fn rocksdb_perfcontext_reset(context: *mut rocksdb_perfcontext_t);
    pub fn rocksdb_perfcontext_metric(context: *mut rocksdb_perfcontext_t, metric: c_int) -> u64;
    pub fn rocksdb_perfcontext_destroy(context: *mut rocksdb_perfcontext_t);
}

// shim.cc, compiled by build.rs.
extern "C" {
    /// Compacts every file of `level` into `level + 1`
    /// (`DB::CompactFiles`): `COMPACTED` (also when the level is
    /// empty), `COMPACTION_BUSY` when a background compaction holds
    /// some of the files, or -1; both failures leave a message in
    /// `errptr`.
    pub fn spinney_rocksdb_compact_level(
        db: *mut rocksdb_t,
        cf: *mut rocksdb_column_family_handle_t,
        level: c_int,
        errptr: *mut *mut c_char,
    ) -> c_int;

    /// `Iterator::Refresh`: the iterator moves to the database as it is
    /// now (its position is lost; seek again). 0, or -1 with a message
    /// in `errptr`.
    pub fn spinney_rocksdb_iter_refresh(
        iter: *mut rocksdb_iterator_t,
        errptr: *mut *mut c_char,
    ) -> c_int;

    /// The version of the RocksDB linked ("11.8.1"), as the library
    /// reports it, NUL-terminated in `out` (`cap` bytes).
    pub fn spinney_rocksdb_version(out: *mut c_char, cap: usize);
}

/// RocksDB as a library of LevelDB's shape: which of its functions the
/// shared code (`leveldb_shape`) calls.
pub enum Rocksdb {}

impl Library for Rocksdb {
    const ENGINE: Engine = super::ENGINE;
    type Iterator = rocksdb_iterator_t;
    const FREE: Free = rocksdb_free;
    const ITER_DESTROY: IterMove<rocksdb_iterator_t> = rocksdb_iter_destroy;
    const ITER_VALID: IterValid<rocksdb_iterator_t> = rocksdb_iter_valid;
    const ITER_SEEK_TO_FIRST: IterMove<rocksdb_iterator_t> = rocksdb_iter_seek_to_first;
    const ITER_SEEK_TO_LAST: IterMove<rocksdb_iterator_t> = rocksdb_iter_seek_to_last;
    const ITER_SEEK: IterSeek<rocksdb_iterator_t> = rocksdb_iter_seek;
    const ITER_NEXT: IterMove<rocksdb_iterator_t> = rocksdb_iter_next;
    const ITER_PREV: IterMove<rocksdb_iterator_t> = rocksdb_iter_prev;
    const ITER_KEY: IterBytes<rocksdb_iterator_t> = rocksdb_iter_key;
    const ITER_VALUE: IterBytes<rocksdb_iterator_t> = rocksdb_iter_value;
    const ITER_GET_ERROR: IterError<rocksdb_iterator_t> = rocksdb_iter_get_error;
}
