//! RocksDB as a `Store`, through its C API (Debian's librocksdb-dev 7.8,
//! linked as the system's `librocksdb.so`; the few functions used are
//! declared by hand in `ffi` below).
//!
//! Each table of the run is a column family: a table named `default` is
//! RocksDB's default column family, the others are created on first open
//! and found again on reopen (`rocksdb_list_column_families`: RocksDB
//! refuses to open a database without naming every column family it
//! holds, so those the run did not ask for are opened too, untouched). A
//! batch is one `rocksdb_writebatch_t` of `_cf` puts and deletes, so a
//! commit is atomic across tables.
//!
//! What the adapter sets (the lab's fair budget), and nothing else:
//! - block cache: one LRU cache of `--cache_size` bytes, shared by every
//!   column family's block-based tables;
//! - bloom filter: `--bloom_bits` bits per key (a table's own bits where
//!   its `TableSpec` sets them; 0 for none), as a *full* filter
//!   (`rocksdb_filterpolicy_create_bloom_full`, one filter per SST). That
//!   is what RocksDB 7.8's db_bench builds for `--bloom_bits`: it calls
//!   `NewBloomFilterPolicy(bits)`, and its `--help` has no
//!   `use_block_based_filter` flag any more (only `use_ribbon_filter`,
//!   false by default), the block-based filter having been retired in 7.0;
//! - compression: `--compression_type` none, lz4 or zstd (zstd at
//!   RocksDB's default level, 3), for every level;
//! - `write_buffer_size`: `--write_buffer_size` bytes, per column family;
//! - `max_background_jobs`: `--background_threads`, at least 1 (0, where
//!   spinney's writers would do the work themselves, becomes 1: RocksDB
//!   always works in the background). RocksDB gives a quarter of the jobs,
//!   at least one, to flushes and the rest, at least one, to compactions,
//!   and the default `Env`'s two thread pools (HIGH for flushes, LOW for
//!   compactions) are sized to match, so 1 job means 2 threads at most;
//! - durability (`WriteOptions`): `Durability::Normal` is the WAL on with
//!   `sync=false`; `Full` (`--sync=1`) is `sync=true`, an fdatasync of the
//!   WAL per commit group; `Off` (`--disable_wal=1`) is `disableWAL`, as
//!   db_bench's own `--disable_wal`: no log at all, so what was not
//!   flushed is lost in a crash (RocksDB flushes it on a clean close).
//!   With `sync=false` every commit group still reaches the OS before the
//!   write returns: `log::Writer::AddRecord` ends with a `Flush()` of the
//!   WAL's `WritableFileWriter` (a `write()` system call) unless
//!   `manual_wal_flush` is set, and it is not (db/log_writer.cc; checked
//!   with strace: one `write` on the WAL per commit, no `fdatasync`);
//! - `max_write_buffer_number`: `--max_write_buffer_number` (2 in the lab,
//!   RocksDB's default; spinney's tables are held to the same count);
//! - the tree's shape, spinney's leveled one (`CompactionOptions::leveled`):
//!   `level_compaction_dynamic_level_bytes` on, a 64 MiB base level
//!   (`max_bytes_for_level_base`), 8 MiB SSTs (`target_file_size_base`),
//!   rather than 7.8's defaults for far larger databases (a static 256 MiB
//!   L1 and 64 MiB SSTs);
//! - seeks: each session keeps an iterator per table and refreshes it
//!   before each seek (`Iterator::Refresh`, through the shim: 7.8's C API
//!   lacks it), as spinney's sessions keep a cursor.
//!
//! RocksDB's defaults kept, the ones that shape the figures: leveled
//! compaction (`kMinOverlappingRatio`), 7 levels, ×10 per level, L0
//! compaction at 4 files, slowdown at 20 and stop at 36, `max_open_files`
//! -1 (every SST open, so index and filter blocks stay in table readers'
//! memory, outside the block cache: `cache_index_and_filter_blocks` is
//! false), 4 KiB blocks, `format_version` 5, `verify_checksums` on reads,
//! no `bytes_per_sync`, concurrent memtable writes on, pipelined writes
//! off (db_bench turns them on; the lab does not copy db_bench's own
//! settings).
//!
//! Operations: `flush` is `rocksdb_flush_cf` of every column family,
//! waiting; `compact` and `compactall` are a full-range
//! `rocksdb_compact_range_cf` of every table with the default
//! `bottommost_level_compaction` (`kIfHaveCompactionFilter`): every level
//! is merged into the lowest level holding data, which is then one sorted
//! run as spinney's `compact_all` leaves it, without the second rewrite
//! of that level that `kForce` would add. `compact0` and `compact1`
//! compact every file of L0 (L1) of every table into L1 (L2) with
//! `DB::CompactFiles`, as db_bench's do, through the C++ shim
//! (`rocksdb_shim.cc`: the 7.8 C API has no `CompactFiles`, and its
//! `CompactRange` always takes every level); the output level's
//! overlapping files join the compaction, and with levels sized
//! statically (the default) L1 is always the level below L0. When a
//! background compaction holds some of the files, the adapter waits for
//! it and tries again. `waitforcompaction` polls the properties (7.8's C
//! API has no `WaitForCompact`). `checkpoint` is not supported: RocksDB's
//! Checkpoint copies the database, a different thing from spinney's
//! B-tree checkpoint.
//!
//! A table whose spec holds its shape (`TableSpec::hold_shape`, the
//! lsm-shape scenario) is a column family with `disable_auto_compactions`,
//! L0 triggers (compaction, slowdown, stop) all at spinney's
//! `L0_TRIGGER_MAX` and `level_compaction_dynamic_level_bytes` off (the
//! default, set to be sure): only the flushes of full memtables run on
//! their own. `TableSpec::write_buffer_bytes` sets the column family's
//! `write_buffer_size`.
//!
//! Read counts (`Session::start_read_counts`) come from RocksDB's perf
//! context of the session's thread, at `kEnableCount` while counting and
//! back at `kDisable` after. The columns: bloom checks are
//! `bloom_sst_hit_count + bloom_sst_miss_count` (full filters consulted:
//! "hit" is "may match"), bloom negatives `bloom_sst_miss_count`, keys
//! compared `user_key_comparison_count` (every call of RocksDB's user
//! comparator wrapper: memtable and block searches, and also the merging
//! iterator's heap and the binary searches that pick a level's file, which
//! spinney leaves out), blocks from cache `block_cache_hit_count` and from
//! storage `block_read_count` (index and filter blocks live in the table
//! readers, outside the cache, so both count data blocks). Trees searched
//! has no counter of its own and depends on what was read: for seeks,
//! `seek_child_seek_count` (one per child of the merging iterator:
//! memtables, each L0 file, one per non-empty level, as spinney counts);
//! for gets on a table with filters, `get_from_memtable_count` (non-empty
//! memtables searched; spinney also counts an empty one) plus the filters
//! consulted (one per SST whose key range holds the key); for gets on a
//! table without, `get_from_memtable_count` plus the data blocks read
//! from cache or storage, an upper bound (an SST searched reads one data
//! block, or two when the key falls between a block's last key and the
//! index's separator); for a mix of those, or scans, `None`.
//!
//! Thread-safety: RocksDB's `DB`, column family handles and cache are
//! thread-safe, and the options are only read once the database is open;
//! the `Store` is shared by every thread. A session belongs to one thread
//! and owns its write batch and read options.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::marker::PhantomData;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr::{self, NonNull};
use std::time::Duration;

use spinney::{Compression, Durability};

use super::{
    Batch, Engine, EngineError, EngineResult, LsmShape, Op, ReadCounts, Seek, Session, Store,
    TableSpec,
};
use crate::{BenchError, Benchmark, Config, ShapeCounts};

/// The engine this build's RocksDB stands behind: Debian's 7.8, or the
/// current one librocksdb-sys bundles. The adapter is the same.
#[cfg(feature = "rocksdb")]
const ENGINE: Engine = Engine::Rocksdb;
#[cfg(not(feature = "rocksdb"))]
const ENGINE: Engine = Engine::RocksdbCurrent;

/// RocksDB's `PerfLevel::kDisable` (rocksdb/perf_level.h).
const PERF_LEVEL_DISABLE: c_int = 1;

/// The declarations of the C API functions the adapter calls, from
/// `/usr/include/rocksdb/c.h` of 7.8.
mod ffi {
    use std::ffi::{c_char, c_int, c_void};

    macro_rules! opaque {
        ($($name:ident),* $(,)?) => {
            $(
                /// An opaque handle of the C API.
                #[repr(C)]
                pub struct $name {
                    _private: [u8; 0],
                }
            )*
        };
    }

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

    /// `rocksdb_enable_count` of c.h's perf levels (rocksdb_shim.cc checks
    /// this number and the metrics' against c.h when it compiles).
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
        pub fn rocksdb_options_set_max_bytes_for_level_base(
            options: *mut rocksdb_options_t,
            n: u64,
        );
        pub fn rocksdb_options_set_target_file_size_base(options: *mut rocksdb_options_t, n: u64);
        pub fn rocksdb_options_set_max_write_buffer_number(
            options: *mut rocksdb_options_t,
            n: c_int,
        );
        pub fn rocksdb_options_set_block_based_table_factory(
            options: *mut rocksdb_options_t,
            table_options: *mut rocksdb_block_based_table_options_t,
        );

        pub fn rocksdb_block_based_options_create() -> *mut rocksdb_block_based_table_options_t;
        pub fn rocksdb_block_based_options_destroy(
            options: *mut rocksdb_block_based_table_options_t,
        );
        pub fn rocksdb_block_based_options_set_block_cache(
            options: *mut rocksdb_block_based_table_options_t,
            cache: *mut rocksdb_cache_t,
        );
        /// Takes ownership of `policy`.
        pub fn rocksdb_block_based_options_set_filter_policy(
            options: *mut rocksdb_block_based_table_options_t,
            policy: *mut rocksdb_filterpolicy_t,
        );
        pub fn rocksdb_filterpolicy_create_bloom_full(
            bits_per_key: f64,
        ) -> *mut rocksdb_filterpolicy_t;

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
        pub fn rocksdb_iter_key(iter: *const rocksdb_iterator_t, klen: *mut usize)
            -> *const c_char;
        pub fn rocksdb_iter_value(
            iter: *const rocksdb_iterator_t,
            vlen: *mut usize,
        ) -> *const c_char;
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
        pub fn rocksdb_perfcontext_metric(
            context: *mut rocksdb_perfcontext_t,
            metric: c_int,
        ) -> u64;
        pub fn rocksdb_perfcontext_destroy(context: *mut rocksdb_perfcontext_t);
    }

    // rocksdb_shim.cc, compiled by build.rs.
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
}

/// Declares an owning wrapper of a C handle, destroyed once in `Drop`.
macro_rules! owned {
    ($(#[$doc:meta])* $name:ident, $raw:ty, $destroy:path) => {
        $(#[$doc])*
        struct $name(NonNull<$raw>);

        impl $name {
            /// Takes ownership of `raw`, just returned by a create call;
            /// NULL (which the C API never returns short of a crash) is an
            /// error naming `what`.
            fn new(raw: *mut $raw, what: &str) -> EngineResult<$name> {
                NonNull::new(raw)
                    .map($name)
                    .ok_or_else(|| peer(format!("{what}: the C API returned NULL")))
            }

            fn ptr(&self) -> *mut $raw {
                self.0.as_ptr()
            }
        }

        impl Drop for $name {
            fn drop(&mut self) {
                // SAFETY: the pointer came from the matching create call,
                // this value is its only owner, and it is destroyed here
                // once.
                unsafe { $destroy(self.0.as_ptr()) }
            }
        }
    };
}

owned!(
    /// An open database; closing waits for its running background jobs.
    Db,
    ffi::rocksdb_t,
    ffi::rocksdb_close
);
owned!(
    /// A column family handle; destroyed before the database closes.
    ColumnFamily,
    ffi::rocksdb_column_family_handle_t,
    ffi::rocksdb_column_family_handle_destroy
);
owned!(
    Options,
    ffi::rocksdb_options_t,
    ffi::rocksdb_options_destroy
);
owned!(
    TableOptions,
    ffi::rocksdb_block_based_table_options_t,
    ffi::rocksdb_block_based_options_destroy
);
owned!(Cache, ffi::rocksdb_cache_t, ffi::rocksdb_cache_destroy);
owned!(
    /// The wrapper of the process's default `Env` (destroying it leaves
    /// the `Env` itself alone).
    Env,
    ffi::rocksdb_env_t,
    ffi::rocksdb_env_destroy
);
owned!(
    WriteOptions,
    ffi::rocksdb_writeoptions_t,
    ffi::rocksdb_writeoptions_destroy
);
owned!(
    ReadOptions,
    ffi::rocksdb_readoptions_t,
    ffi::rocksdb_readoptions_destroy
);
owned!(
    FlushOptions,
    ffi::rocksdb_flushoptions_t,
    ffi::rocksdb_flushoptions_destroy
);
owned!(
    WriteBatch,
    ffi::rocksdb_writebatch_t,
    ffi::rocksdb_writebatch_destroy
);
owned!(
    /// The handle of the perf context of the thread that made it.
    PerfContext,
    ffi::rocksdb_perfcontext_t,
    ffi::rocksdb_perfcontext_destroy
);

/// A RocksDB error saying `message`, in the lab's terms.
fn peer(message: String) -> EngineError {
    EngineError::peer(ENGINE, message)
}

/// Turns what the C API left in an `errptr` into an error naming `what`
/// failed, freeing the library's string; `Ok` when it left NULL.
fn check(err: *mut c_char, what: &str) -> EngineResult<()> {
    if err.is_null() {
        return Ok(());
    }
    // SAFETY: a non-NULL errptr is a NUL-terminated string the library
    // malloc()ed for the caller; it is read here and freed once, with the
    // library's own free.
    let message = unsafe { CStr::from_ptr(err) }
        .to_string_lossy()
        .into_owned();
    // SAFETY: as above; nothing reads `err` after this.
    unsafe { ffi::rocksdb_free(err.cast::<c_void>()) };
    Err(peer(format!("{what}: {message}")))
}

/// The `len` bytes at `data`, or none when the library gave no pointer.
///
/// # Safety
/// A non-NULL `data` must point at `len` readable bytes that stay put for
/// `'a`.
unsafe fn bytes<'a>(data: *const c_char, len: usize) -> &'a [u8] {
    if data.is_null() || len == 0 {
        return &[];
    }
    // SAFETY: the caller vouches for `data` and `len`.
    unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) }
}

/// What the adapter sets, derived from the configuration alone, so that
/// `open` and `describe` cannot disagree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Settings {
    cache_bytes: usize,
    bloom_bits: u32,
    compression: Compression,
    write_buffer_bytes: usize,
    background_jobs: c_int,
    /// RocksDB's share of the jobs for flushes (the HIGH pool).
    flush_threads: c_int,
    /// And for compactions (the LOW pool).
    compaction_threads: c_int,
    durability: Durability,
    /// `max_write_buffer_number`: memtables per column family.
    write_buffers: c_int,
    /// The tree's shape, as spinney's leveled tables have it.
    shape: Shape,
}

/// A leveled tree's shape in RocksDB's terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Shape {
    /// `level_compaction_dynamic_level_bytes`.
    dynamic_level_bytes: bool,
    /// `max_bytes_for_level_base`.
    level_base_bytes: u64,
    /// `target_file_size_base`.
    target_file_size: u64,
}

impl Settings {
    fn of(config: &Config) -> Settings {
        let background_jobs =
            c_int::try_from(config.background_threads.max(1)).unwrap_or(c_int::MAX);
        // RocksDB's own split of max_background_jobs (DBImpl::GetBGJobLimits):
        // a quarter, at least one, for flushes; the rest, at least one, for
        // compactions.
        let flush_threads = (background_jobs / 4).max(1);
        let compaction_threads = (background_jobs - flush_threads).max(1);
        Settings {
            cache_bytes: usize::try_from(config.cache_size).unwrap_or(usize::MAX),
            bloom_bits: config.bloom_bits,
            compression: config.compression,
            write_buffer_bytes: config.write_buffer_size,
            background_jobs,
            flush_threads,
            compaction_threads,
            durability: config.durability,
            write_buffers: c_int::try_from(config.write_buffers).unwrap_or(c_int::MAX),
            shape: {
                let leveled = spinney::CompactionOptions::leveled();
                Shape {
                    dynamic_level_bytes: leveled.dynamic_level_bytes,
                    level_base_bytes: leveled.level_base_bytes,
                    target_file_size: leveled.target_file_size,
                }
            },
        }
    }

    fn compression_type(&self) -> c_int {
        match self.compression {
            Compression::None => ffi::NO_COMPRESSION,
            Compression::Lz4 => ffi::LZ4_COMPRESSION,
            Compression::Zstd => ffi::ZSTD_COMPRESSION,
        }
    }

    fn durability_text(&self) -> &'static str {
        match self.durability {
            Durability::Off => "WAL off (disableWAL, as db_bench --disable_wal)",
            Durability::Normal => "WAL on, sync=false (each commit written to the OS)",
            Durability::Full => "WAL on, sync=true",
        }
    }
}

/// Opens (creating if need be) the RocksDB database in `dir` with a
/// column family per table.
pub(crate) fn open(
    config: &Config,
    dir: &Path,
    tables: &[TableSpec],
) -> Result<Box<dyn Store>, BenchError> {
    RocksStore::open(config, dir, tables).map(|s| Box::new(s) as Box<dyn Store>)
}

/// The version of the RocksDB linked (Debian's 7.8.3, or the current one
/// librocksdb-sys bundles), as the library itself reports it.
pub(crate) fn version() -> String {
    let mut buf = [0 as c_char; 64];
    // SAFETY: the shim writes at most `buf.len()` bytes, NUL-terminated.
    unsafe { ffi::spinney_rocksdb_version(buf.as_mut_ptr(), buf.len()) };
    // SAFETY: `buf` is NUL-terminated (its last byte at the latest).
    let text = unsafe { CStr::from_ptr(buf.as_ptr()) };
    match text.to_str() {
        Ok(v) if !v.is_empty() => v.to_string(),
        _ => "(RocksDB did not say its version)".to_string(),
    }
}

/// One line naming what the adapter sets for `config`.
pub(crate) fn describe(config: &Config) -> String {
    let s = Settings::of(config);
    let bloom = if s.bloom_bits == 0 {
        "no bloom filter".to_string()
    } else {
        format!("full bloom filter {} bits/key", s.bloom_bits)
    };
    format!(
        "leveled LSM, a column family per table; LRU block cache {:.1} MB, {bloom}, compression {}, write_buffer_size {:.1} MB, max_write_buffer_number {}, level_compaction_dynamic_level_bytes {}, max_bytes_for_level_base {} MiB, target_file_size_base {} MiB, max_background_jobs {} ({} flush + {} compaction threads), {}; RocksDB's defaults otherwise",
        s.cache_bytes as f64 / 1_048_576.0,
        s.compression.name(),
        s.write_buffer_bytes as f64 / 1_048_576.0,
        s.write_buffers,
        s.shape.dynamic_level_bytes,
        s.shape.level_base_bytes >> 20,
        s.shape.target_file_size >> 20,
        s.background_jobs,
        s.flush_threads,
        s.compaction_threads,
        s.durability_text(),
    )
}

/// An open RocksDB database and its tables' column families.
pub(crate) struct RocksStore {
    // Fields drop in order: the column family handles, then the database
    // (closing it), then what it was opened with.
    /// Every column family the database holds, the run's tables and the
    /// others (RocksDB needs them all open).
    families: Vec<ColumnFamily>,
    db: Db,
    write_options: WriteOptions,
    /// Each table's index in `families`, in the order given to `open`.
    tables: Vec<usize>,
    /// Each table's name and bloom bits per key (0: no filter), in the
    /// same order.
    table_names: Vec<String>,
    bloom_bits: Vec<u32>,
    _family_options: Vec<Options>,
    _db_options: Options,
    _cache: Cache,
    _env: Env,
}

// SAFETY: RocksDB's DB, column family handles, cache and Env are made to be
// used from any thread at once; the options objects are only read (by
// RocksDB's const calls) once the database is open. Nothing in the store is
// tied to the thread that made it.
unsafe impl Send for RocksStore {}
// SAFETY: as for Send: every call made through `&RocksStore` is one RocksDB
// documents as thread-safe.
unsafe impl Sync for RocksStore {}

impl RocksStore {
    fn open(config: &Config, dir: &Path, specs: &[TableSpec]) -> Result<RocksStore, BenchError> {
        let settings = Settings::of(config);
        let path = CString::new(dir.as_os_str().as_bytes()).map_err(|_| {
            BenchError::Config(format!("the path {} holds a NUL byte", dir.display()))
        })?;
        let mut wanted: Vec<CString> = Vec::with_capacity(specs.len());
        for spec in specs {
            let name = CString::new(spec.name.as_str()).map_err(|_| {
                BenchError::Config(format!("the table name {:?} holds a NUL byte", spec.name))
            })?;
            if wanted.contains(&name) {
                return Err(BenchError::Config(format!(
                    "the table '{}' is given twice",
                    spec.name
                )));
            }
            wanted.push(name);
        }
        Self::open_families(&settings, dir, &path, specs, wanted).map_err(BenchError::engine(
            format!("open RocksDB in {}", dir.display()),
        ))
    }

    fn open_families(
        s: &Settings,
        dir: &Path,
        path: &CStr,
        specs: &[TableSpec],
        wanted: Vec<CString>,
    ) -> EngineResult<RocksStore> {
        // SAFETY: plain constructors with no arguments.
        let env = Env::new(
            unsafe { ffi::rocksdb_create_default_env() },
            "create the Env",
        )?;
        // SAFETY: `env` wraps the live default Env; the setters only resize
        // its thread pools.
        unsafe {
            ffi::rocksdb_env_set_background_threads(env.ptr(), s.compaction_threads);
            ffi::rocksdb_env_set_high_priority_background_threads(env.ptr(), s.flush_threads);
        }
        // SAFETY: a plain constructor.
        let cache = Cache::new(
            unsafe { ffi::rocksdb_cache_create_lru(s.cache_bytes) },
            "create the block cache",
        )?;
        // SAFETY: a plain constructor.
        let db_options = Options::new(unsafe { ffi::rocksdb_options_create() }, "create options")?;
        // SAFETY: `db_options` and `env` are live; the Env outlives the
        // database (the store drops it last).
        unsafe {
            ffi::rocksdb_options_set_create_if_missing(db_options.ptr(), 1);
            ffi::rocksdb_options_set_create_missing_column_families(db_options.ptr(), 1);
            ffi::rocksdb_options_set_max_background_jobs(db_options.ptr(), s.background_jobs);
            ffi::rocksdb_options_set_env(db_options.ptr(), env.ptr());
        }

        // The column families to open: `default` (always there), the
        // tables, then any other the database already holds.
        let mut names: Vec<CString> = vec![c"default".to_owned()];
        for name in wanted {
            if !names.contains(&name) {
                names.push(name);
            }
        }
        for name in existing_families(&db_options, dir, path)? {
            if !names.contains(&name) {
                names.push(name);
            }
        }
        let mut family_options = Vec::with_capacity(names.len());
        for name in &names {
            let spec = specs
                .iter()
                .find(|spec| spec.name.as_bytes() == name.to_bytes());
            family_options.push(family_options_of(s, &cache, &FamilySettings::of(s, spec))?);
        }
        let count = c_int::try_from(names.len())
            .map_err(|_| peer(format!("{} column families are too many", names.len())))?;
        let name_ptrs: Vec<*const c_char> = names.iter().map(|n| n.as_ptr()).collect();
        let option_ptrs: Vec<*const ffi::rocksdb_options_t> = family_options
            .iter()
            .map(|o| o.ptr().cast_const())
            .collect();
        let mut handles: Vec<*mut ffi::rocksdb_column_family_handle_t> =
            vec![ptr::null_mut(); names.len()];
        let mut err = ptr::null_mut();
        // SAFETY: every pointer is live for the call; the three arrays
        // hold `count` entries each, and `handles` has room for `count`
        // handles, which the call fills on success.
        let raw = unsafe {
            ffi::rocksdb_open_column_families(
                db_options.ptr(),
                path.as_ptr(),
                count,
                name_ptrs.as_ptr(),
                option_ptrs.as_ptr(),
                handles.as_mut_ptr(),
                &mut err,
            )
        };
        check(err, "open the database")?;
        let db = Db::new(raw, "open the database")?;
        let families = handles
            .into_iter()
            .map(|h| ColumnFamily::new(h, "open a column family"))
            .collect::<EngineResult<Vec<_>>>()?;
        let tables = specs
            .iter()
            .map(|spec| {
                names
                    .iter()
                    .position(|n| n.to_bytes() == spec.name.as_bytes())
                    .ok_or_else(|| {
                        peer(format!("the column family '{}' was not opened", spec.name))
                    })
            })
            .collect::<EngineResult<Vec<_>>>()?;
        // SAFETY: a plain constructor, then setters on the live options.
        let write_options = WriteOptions::new(
            unsafe { ffi::rocksdb_writeoptions_create() },
            "create write options",
        )?;
        // SAFETY: `write_options` is live.
        unsafe {
            ffi::rocksdb_writeoptions_set_sync(
                write_options.ptr(),
                u8::from(s.durability == Durability::Full),
            );
            ffi::rocksdb_writeoptions_disable_WAL(
                write_options.ptr(),
                c_int::from(s.durability == Durability::Off),
            );
        }
        let bloom_bits = specs
            .iter()
            .map(|spec| FamilySettings::of(s, Some(spec)).bloom_bits)
            .collect();
        let table_names = specs.iter().map(|spec| spec.name.clone()).collect();
        Ok(RocksStore {
            families,
            db,
            write_options,
            tables,
            table_names,
            bloom_bits,
            _family_options: family_options,
            _db_options: db_options,
            _cache: cache,
            _env: env,
        })
    }

    /// The column family of table `index`.
    fn family(&self, index: usize) -> EngineResult<&ColumnFamily> {
        self.tables
            .get(index)
            .and_then(|&i| self.families.get(i))
            .ok_or_else(|| {
                peer(format!(
                    "no table number {index} (the store has {})",
                    self.tables.len()
                ))
            })
    }

    /// A string property of a column family; `None` when RocksDB does not
    /// know it.
    fn property(&self, family: &ColumnFamily, name: &CStr) -> Option<String> {
        // SAFETY: the database and handle are live, `name` is a C string.
        let value =
            unsafe { ffi::rocksdb_property_value_cf(self.db.ptr(), family.ptr(), name.as_ptr()) };
        if value.is_null() {
            return None;
        }
        // SAFETY: a non-NULL result is a malloc()ed C string now ours; it
        // is read, then freed once.
        let text = unsafe { CStr::from_ptr(value) }
            .to_string_lossy()
            .into_owned();
        // SAFETY: as above.
        unsafe { ffi::rocksdb_free(value.cast::<c_void>()) };
        Some(text)
    }

    /// An integer property of a column family; `None` when RocksDB does
    /// not know it.
    fn int_property(&self, family: &ColumnFamily, name: &CStr) -> Option<u64> {
        let mut value = 0u64;
        // SAFETY: the database and handle are live, `name` is a C string,
        // `value` is a place for the result.
        let status = unsafe {
            ffi::rocksdb_property_int_cf(self.db.ptr(), family.ptr(), name.as_ptr(), &mut value)
        };
        (status == 0).then_some(value)
    }

    fn require_int(&self, family: &ColumnFamily, name: &CStr) -> EngineResult<u64> {
        self.int_property(family, name).ok_or_else(|| {
            peer(format!(
                "RocksDB does not know the property {}",
                name.to_string_lossy()
            ))
        })
    }

    /// The background errors RocksDB has counted since the open (the
    /// property is the database's, read through any column family).
    fn background_errors(&self) -> EngineResult<u64> {
        match self.families.first() {
            Some(f) => self.require_int(f, c"rocksdb.background-errors"),
            None => Ok(0),
        }
    }

    fn flush(&self) -> EngineResult<()> {
        // SAFETY: a plain constructor, then a setter on the live options.
        let options = FlushOptions::new(
            unsafe { ffi::rocksdb_flushoptions_create() },
            "create flush options",
        )?;
        // SAFETY: `options` is live.
        unsafe { ffi::rocksdb_flushoptions_set_wait(options.ptr(), 1) };
        for family in &self.families {
            let mut err = ptr::null_mut();
            // SAFETY: every handle is live for the call.
            unsafe { ffi::rocksdb_flush_cf(self.db.ptr(), options.ptr(), family.ptr(), &mut err) };
            check(err, "flush")?;
        }
        Ok(())
    }

    fn compact_all(&self) -> EngineResult<()> {
        // The C API drops CompactRange's status, so a failure shows only
        // as a background error counted meanwhile.
        let errors_before = self.background_errors()?;
        for &i in &self.tables {
            let Some(family) = self.families.get(i) else {
                continue;
            };
            // SAFETY: the database and handle are live; NULL bounds with
            // length 0 mean the whole key range.
            unsafe {
                ffi::rocksdb_compact_range_cf(
                    self.db.ptr(),
                    family.ptr(),
                    ptr::null(),
                    0,
                    ptr::null(),
                    0,
                )
            };
        }
        if self.background_errors()? > errors_before {
            return Err(peer(
                "compact: RocksDB recorded a background error during the compaction (see its LOG file in the database directory)".into(),
            ));
        }
        Ok(())
    }

    /// Compacts every file of `level` of every table into `level + 1`
    /// (compact0, compact1). A background compaction holding some of the
    /// files is waited for, and the compaction tried again, up to
    /// `BUSY_ATTEMPTS` times.
    fn compact_level(&self, level: c_int) -> EngineResult<()> {
        const BUSY_ATTEMPTS: usize = 10;
        for (table, &i) in self.tables.iter().enumerate() {
            let Some(family) = self.families.get(i) else {
                continue;
            };
            let mut attempts = 0;
            loop {
                attempts += 1;
                let mut err = ptr::null_mut();
                // SAFETY: the database and handle are live for the call;
                // the shim only reads their `rep` pointers and leaves any
                // message in `err`.
                let outcome = unsafe {
                    ffi::spinney_rocksdb_compact_level(self.db.ptr(), family.ptr(), level, &mut err)
                };
                let name = self.table_names.get(table).map_or("?", String::as_str);
                let what = format!("compact L{level} of table '{name}'");
                if outcome == ffi::COMPACTED {
                    check(err, &what)?;
                    break;
                }
                if outcome == ffi::COMPACTION_BUSY && attempts < BUSY_ATTEMPTS {
                    // The message only says which file was busy.
                    let _ = check(err, &what);
                    self.wait_for_compaction()?;
                    continue;
                }
                check(err, &what)?;
                return Err(peer(format!("{what}: failed without a message")));
            }
        }
        Ok(())
    }

    /// Waits until no flush or compaction is running or pending in any
    /// column family, polling (7.8's C API has no WaitForCompact).
    fn wait_for_compaction(&self) -> EngineResult<()> {
        const POLL: Duration = Duration::from_millis(5);
        let errors_before = self.background_errors()?;
        loop {
            let mut busy = false;
            for family in &self.families {
                for name in [
                    c"rocksdb.compaction-pending",
                    c"rocksdb.mem-table-flush-pending",
                    c"rocksdb.num-running-compactions",
                    c"rocksdb.num-running-flushes",
                ] {
                    busy |= self.require_int(family, name)? > 0;
                }
            }
            if !busy {
                return Ok(());
            }
            // A background error stops RocksDB's background work, so the
            // pending work would never end.
            if self.background_errors()? > errors_before {
                return Err(peer(
                    "wait for compaction: RocksDB recorded a background error and stopped its background work (see its LOG file in the database directory)".into(),
                ));
            }
            std::thread::sleep(POLL);
        }
    }
}

/// What one column family is given beyond the settings all share: its
/// table's spec, or the configuration's options for a column family the
/// run did not ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FamilySettings {
    bloom_bits: u32,
    write_buffer_bytes: usize,
    hold_shape: bool,
}

impl FamilySettings {
    fn of(s: &Settings, spec: Option<&TableSpec>) -> FamilySettings {
        FamilySettings {
            bloom_bits: spec.and_then(|t| t.bloom_bits).unwrap_or(s.bloom_bits),
            write_buffer_bytes: spec
                .and_then(|t| t.write_buffer_bytes)
                .unwrap_or(s.write_buffer_bytes),
            hold_shape: spec.is_some_and(|t| t.hold_shape),
        }
    }
}

/// The L0 triggers of a held shape: spinney's largest L0 trigger, which its
/// held tables get too, for compaction, slowdown and stop alike (RocksDB
/// wants slowdown >= compaction and stop >= slowdown).
const HELD_L0_TRIGGER: c_int = spinney::limits::L0_TRIGGER_MAX as c_int;
const _: () = assert!(HELD_L0_TRIGGER > 0);

/// The options of one column family: the shared cache, the bloom filter,
/// the write buffer and the compression, and a held shape's compaction
/// settings.
fn family_options_of(
    s: &Settings,
    cache: &Cache,
    family: &FamilySettings,
) -> EngineResult<Options> {
    let bloom_bits = family.bloom_bits;
    // SAFETY: plain constructors.
    let options = Options::new(unsafe { ffi::rocksdb_options_create() }, "create options")?;
    // SAFETY: a plain constructor.
    let table = TableOptions::new(
        unsafe { ffi::rocksdb_block_based_options_create() },
        "create block-based table options",
    )?;
    if bloom_bits > 0 {
        // SAFETY: a plain constructor.
        let policy = unsafe { ffi::rocksdb_filterpolicy_create_bloom_full(f64::from(bloom_bits)) };
        if policy.is_null() {
            return Err(peer(
                "create the bloom filter policy: the C API returned NULL".into(),
            ));
        }
        // SAFETY: `table` is live; the call takes ownership of `policy`
        // (c.cc resets the options' shared_ptr with it), so it is never
        // destroyed here.
        unsafe { ffi::rocksdb_block_based_options_set_filter_policy(table.ptr(), policy) };
    }
    // SAFETY: all handles are live; the block cache is shared (the table
    // options keep their own reference), and the table factory copies the
    // table options, which are destroyed when `table` drops.
    unsafe {
        ffi::rocksdb_block_based_options_set_block_cache(table.ptr(), cache.ptr());
        ffi::rocksdb_options_set_block_based_table_factory(options.ptr(), table.ptr());
        ffi::rocksdb_options_set_write_buffer_size(options.ptr(), family.write_buffer_bytes);
        ffi::rocksdb_options_set_compression(options.ptr(), s.compression_type());
        ffi::rocksdb_options_set_max_write_buffer_number(options.ptr(), s.write_buffers);
    }
    if !family.hold_shape {
        // The tree's shape is spinney's (`--level_base_bytes` and the
        // others: RocksDB's names), not 7.8's defaults for far larger
        // databases (a 256 MiB L1, 64 MiB files, static levels).
        // SAFETY: `options` is live; the setters take plain values.
        unsafe {
            ffi::rocksdb_options_set_level_compaction_dynamic_level_bytes(
                options.ptr(),
                u8::from(s.shape.dynamic_level_bytes),
            );
            ffi::rocksdb_options_set_max_bytes_for_level_base(
                options.ptr(),
                s.shape.level_base_bytes,
            );
            ffi::rocksdb_options_set_target_file_size_base(options.ptr(), s.shape.target_file_size);
        }
    }
    if family.hold_shape {
        // SAFETY: `options` is live; the setters take plain values.
        unsafe {
            ffi::rocksdb_options_set_disable_auto_compactions(options.ptr(), 1);
            ffi::rocksdb_options_set_level0_file_num_compaction_trigger(
                options.ptr(),
                HELD_L0_TRIGGER,
            );
            ffi::rocksdb_options_set_level0_slowdown_writes_trigger(options.ptr(), HELD_L0_TRIGGER);
            ffi::rocksdb_options_set_level0_stop_writes_trigger(options.ptr(), HELD_L0_TRIGGER);
            ffi::rocksdb_options_set_level_compaction_dynamic_level_bytes(options.ptr(), 0);
        }
    }
    Ok(options)
}

/// The column families of the database in `dir`, none when there is no
/// database yet.
fn existing_families(options: &Options, dir: &Path, path: &CStr) -> EngineResult<Vec<CString>> {
    if !dir.join("CURRENT").exists() {
        return Ok(Vec::new());
    }
    let mut len = 0usize;
    let mut err = ptr::null_mut();
    // SAFETY: the options and path are live; `len` and `err` are places
    // for the results.
    let list = unsafe {
        ffi::rocksdb_list_column_families(options.ptr(), path.as_ptr(), &mut len, &mut err)
    };
    check(err, "list the column families")?;
    if list.is_null() {
        return Ok(Vec::new());
    }
    let names = (0..len)
        .map(|i| {
            // SAFETY: the list holds `len` NUL-terminated names, alive
            // until the list is destroyed below.
            unsafe { CStr::from_ptr(*list.add(i)) }.to_owned()
        })
        .collect();
    // SAFETY: the list and its length as the C API returned them, freed
    // once.
    unsafe { ffi::rocksdb_list_column_families_destroy(list, len) };
    Ok(names)
}

impl Store for RocksStore {
    fn deletes_ranges(&self) -> bool {
        true
    }

    fn session(&self) -> EngineResult<Box<dyn Session + '_>> {
        // Sessions are made in the thread that uses them. RocksDB counts
        // perf-context events in every thread by default (a thread-local
        // update per operation); db_bench turns that off (`--perf_level`
        // 1, kDisable) in each of its threads, and so does the lab.
        // SAFETY: sets a thread-local level; any value is accepted.
        unsafe { ffi::rocksdb_set_perf_level(PERF_LEVEL_DISABLE) };
        // SAFETY: plain constructors.
        let batch = WriteBatch::new(
            unsafe { ffi::rocksdb_writebatch_create() },
            "create a write batch",
        )?;
        // SAFETY: a plain constructor.
        let read_options = ReadOptions::new(
            unsafe { ffi::rocksdb_readoptions_create() },
            "create read options",
        )?;
        Ok(Box::new(RocksSession {
            store: self,
            batch,
            read_options,
            counting: None,
            iterators: Vec::new(),
        }))
    }

    fn wait_for_background(&self) -> EngineResult<bool> {
        self.wait_for_compaction()?;
        Ok(true)
    }

    fn operation(&self, op: Benchmark) -> EngineResult<bool> {
        match op {
            Benchmark::Flush => self.flush()?,
            Benchmark::Compact | Benchmark::CompactAll => self.compact_all()?,
            Benchmark::Compact0 => self.compact_level(0)?,
            Benchmark::Compact1 => self.compact_level(1)?,
            Benchmark::WaitForCompaction => self.wait_for_compaction()?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn printout(&self, what: Benchmark) -> EngineResult<Option<String>> {
        let name = match what {
            Benchmark::Stats => c"rocksdb.stats",
            Benchmark::Shape => c"rocksdb.levelstats",
            _ => return Ok(None),
        };
        let family = self.family(0)?;
        self.property(family, name).map(Some).ok_or_else(|| {
            peer(format!(
                "RocksDB does not know the property {}",
                name.to_string_lossy()
            ))
        })
    }

    fn shape_counts(&self) -> ShapeCounts {
        let Ok(family) = self.family(0) else {
            return ShapeCounts::default();
        };
        let int = |name: &CStr| self.int_property(family, name).unwrap_or(0);
        let files_at = |level: usize| -> Option<usize> {
            let name = CString::new(format!("rocksdb.num-files-at-level{level}")).ok()?;
            self.property(family, &name)?.trim().parse().ok()
        };
        // The property is unknown past the last level, which ends the sum.
        let sst_files = (0..).map_while(files_at).sum();
        ShapeCounts {
            memtable_entries: int(c"rocksdb.num-entries-active-mem-table"),
            immutable_memtables: usize::try_from(int(c"rocksdb.num-immutable-mem-table"))
                .unwrap_or(usize::MAX),
            l0_runs: files_at(0).unwrap_or(0),
            sst_files,
            ..ShapeCounts::default()
        }
    }

    fn lsm_shape(&self, table: usize) -> EngineResult<Option<LsmShape>> {
        let family = self.family(table)?;
        let int = |name: &CStr| self.require_int(family, name);
        let files_at = |level: usize| -> Option<usize> {
            let name = CString::new(format!("rocksdb.num-files-at-level{level}")).ok()?;
            self.property(family, &name)?.trim().parse().ok()
        };
        let l0_runs = files_at(0)
            .ok_or_else(|| peer("RocksDB does not know rocksdb.num-files-at-level0".into()))?;
        // The property is unknown past the last level, which ends the list.
        let level_files = (1..).map_while(files_at).collect();
        Ok(Some(LsmShape {
            memtable_entries: int(c"rocksdb.num-entries-active-mem-table")?,
            memtable_bytes: int(c"rocksdb.cur-size-active-mem-table")?,
            immutable_memtables: usize::try_from(int(c"rocksdb.num-immutable-mem-table")?)
                .unwrap_or(usize::MAX),
            l0_runs,
            level_files,
        }))
    }

    fn close(self: Box<Self>) -> EngineResult<()> {
        // Dropping closes: the handles first, then the database, whose
        // close waits for the background jobs that are running (RocksDB
        // needs nothing more before it).
        drop(self);
        Ok(())
    }
}

/// One thread's handle: the store, and a batch and read options reused
/// from call to call.
struct RocksSession<'a> {
    store: &'a RocksStore,
    batch: WriteBatch,
    read_options: ReadOptions,
    /// While counting reads: the thread's perf context and what was read.
    counting: Option<Counting>,
    /// An iterator per table for seeks, kept and refreshed before each
    /// (`Iterator::Refresh`), as spinney's sessions keep a cursor and
    /// WiredTiger's and LMDB's theirs; made at the table's first seek.
    iterators: Vec<Option<Iter<'a>>>,
}

/// A session's read counting: its thread's perf context, and the reads
/// made since counting started, which decide what "trees searched" is
/// read from (see the module header).
struct Counting {
    context: PerfContext,
    gets_with_filter: u64,
    gets_without_filter: u64,
    seeks: u64,
    scans: u64,
}

impl Counting {
    fn metric(&self, metric: c_int) -> u64 {
        // SAFETY: the context is live and belongs to this thread (a session
        // stays in the thread that made it); any metric number is accepted.
        unsafe { ffi::rocksdb_perfcontext_metric(self.context.ptr(), metric) }
    }

    /// The counts in the lab's columns.
    fn counts(&self) -> ReadCounts {
        let memtables = self.metric(ffi::GET_FROM_MEMTABLE_COUNT);
        let bloom_hits = self.metric(ffi::BLOOM_SST_HIT_COUNT);
        let bloom_misses = self.metric(ffi::BLOOM_SST_MISS_COUNT);
        let from_cache = self.metric(ffi::BLOCK_CACHE_HIT_COUNT);
        let from_storage = self.metric(ffi::BLOCK_READ_COUNT);
        let trees_searched = match (
            self.gets_with_filter,
            self.gets_without_filter,
            self.seeks,
            self.scans,
        ) {
            (0, 0, 0, 0) => Some(0),
            (_, 0, 0, 0) => Some(memtables + bloom_hits + bloom_misses),
            (0, _, 0, 0) => Some(memtables + from_cache + from_storage),
            (0, 0, _, 0) => Some(self.metric(ffi::SEEK_CHILD_SEEK_COUNT)),
            _ => None,
        };
        ReadCounts {
            trees_searched,
            bloom_checks: Some(bloom_hits + bloom_misses),
            bloom_negatives: Some(bloom_misses),
            keys_compared: Some(self.metric(ffi::USER_KEY_COMPARISON_COUNT)),
            blocks_from_cache: Some(from_cache),
            blocks_from_storage: Some(from_storage),
        }
    }
}

impl Drop for RocksSession<'_> {
    fn drop(&mut self) {
        if self.counting.is_some() {
            // A session dropped while counting leaves its thread as the
            // session found it.
            // SAFETY: sets a thread-local level; any value is accepted.
            unsafe { ffi::rocksdb_set_perf_level(PERF_LEVEL_DISABLE) };
        }
    }
}

impl<'a> RocksSession<'a> {
    /// A new iterator over table `index` (a view as of now). It copies the
    /// read options, so it may outlive the session's; it lives no longer
    /// than the store.
    fn iterator(&self, index: usize) -> EngineResult<Iter<'a>> {
        let family = self.store.family(index)?;
        // SAFETY: the database, read options and handle are live; the
        // iterator is destroyed before the session, so before the store.
        let raw = unsafe {
            ffi::rocksdb_create_iterator_cf(
                self.store.db.ptr(),
                self.read_options.ptr(),
                family.ptr(),
            )
        };
        let ptr = NonNull::new(raw)
            .ok_or_else(|| peer("create an iterator: the C API returned NULL".into()))?;
        Ok(Iter {
            ptr,
            _store: PhantomData,
        })
    }
}

impl Session for RocksSession<'_> {
    fn write(&mut self, batch: &Batch) -> EngineResult<()> {
        // SAFETY: the batch is this session's own.
        unsafe { ffi::rocksdb_writebatch_clear(self.batch.ptr()) };
        for op in batch.ops() {
            match op {
                Op::Put { table, key, value } => {
                    let family = self.store.family(table)?;
                    // SAFETY: the batch and handle are live; the call copies
                    // the key and value.
                    unsafe {
                        ffi::rocksdb_writebatch_put_cf(
                            self.batch.ptr(),
                            family.ptr(),
                            key.as_ptr().cast::<c_char>(),
                            key.len(),
                            value.as_ptr().cast::<c_char>(),
                            value.len(),
                        )
                    };
                }
                Op::Delete { table, key } => {
                    let family = self.store.family(table)?;
                    // SAFETY: as for the put.
                    unsafe {
                        ffi::rocksdb_writebatch_delete_cf(
                            self.batch.ptr(),
                            family.ptr(),
                            key.as_ptr().cast::<c_char>(),
                            key.len(),
                        )
                    };
                }
                Op::DeleteRange { table, start, end } => {
                    let family = self.store.family(table)?;
                    // SAFETY: as for the put; `[start, end)`, RocksDB's
                    // DeleteRange.
                    unsafe {
                        ffi::rocksdb_writebatch_delete_range_cf(
                            self.batch.ptr(),
                            family.ptr(),
                            start.as_ptr().cast::<c_char>(),
                            start.len(),
                            end.as_ptr().cast::<c_char>(),
                            end.len(),
                        )
                    };
                }
            }
        }
        let mut err = ptr::null_mut();
        // SAFETY: the database, options and batch are live for the call.
        unsafe {
            ffi::rocksdb_write(
                self.store.db.ptr(),
                self.store.write_options.ptr(),
                self.batch.ptr(),
                &mut err,
            )
        };
        check(err, "write a batch")
    }

    fn get(&mut self, table: usize, key: &[u8]) -> EngineResult<Option<usize>> {
        let family = self.store.family(table)?;
        if let Some(c) = &mut self.counting {
            if self.store.bloom_bits.get(table).is_some_and(|&b| b > 0) {
                c.gets_with_filter += 1;
            } else {
                c.gets_without_filter += 1;
            }
        }
        let mut err = ptr::null_mut();
        // SAFETY: the database, options and handle are live; the key is
        // read during the call only.
        let pinned = unsafe {
            ffi::rocksdb_get_pinned_cf(
                self.store.db.ptr(),
                self.read_options.ptr(),
                family.ptr(),
                key.as_ptr().cast::<c_char>(),
                key.len(),
                &mut err,
            )
        };
        let pinned = NonNull::new(pinned);
        // Destroys the pinned value on every path below.
        let _guard = pinned.map(PinnedValue);
        check(err, "get")?;
        let Some(pinned) = pinned else {
            return Ok(None);
        };
        let mut len = 0usize;
        // SAFETY: the pinned value is live; only its length is used.
        unsafe { ffi::rocksdb_pinnableslice_value(pinned.as_ptr(), &mut len) };
        Ok(Some(len))
    }

    fn seek(&mut self, table: usize, key: &[u8], steps: usize) -> EngineResult<Seek> {
        if let Some(c) = &mut self.counting {
            c.seeks += 1;
        }
        if self.iterators.len() <= table {
            self.iterators.resize_with(table + 1, || None);
        }
        let iter = match self.iterators[table].take() {
            Some(mut kept) => {
                kept.refresh()?;
                kept
            }
            None => self.iterator(table)?,
        };
        let iter = self.iterators[table].insert(iter);
        iter.seek(key);
        let mut seek = Seek {
            found: iter.entry().is_some_and(|(k, _)| k == key),
            bytes: 0,
        };
        for _ in 0..steps {
            let Some((k, v)) = iter.entry() else {
                break;
            };
            seek.bytes += (k.len() + v.len()) as u64;
            iter.next();
        }
        iter.status("seek")?;
        Ok(seek)
    }

    fn scan(
        &mut self,
        table: usize,
        forward: bool,
        visit: &mut dyn FnMut(u64) -> bool,
    ) -> EngineResult<()> {
        if let Some(c) = &mut self.counting {
            c.scans += 1;
        }
        let mut iter = self.iterator(table)?;
        if forward {
            iter.seek_to_first();
        } else {
            iter.seek_to_last();
        }
        while let Some((k, v)) = iter.entry() {
            if !visit((k.len() + v.len()) as u64) {
                break;
            }
            if forward {
                iter.next();
            } else {
                iter.prev();
            }
        }
        iter.status("scan")
    }

    fn start_read_counts(&mut self) -> EngineResult<bool> {
        let context = match self.counting.take() {
            Some(c) => c.context,
            // SAFETY: a plain constructor; the handle points at this
            // thread's perf context, and the session stays in this thread.
            None => PerfContext::new(
                unsafe { ffi::rocksdb_perfcontext_create() },
                "create a perf context",
            )?,
        };
        // SAFETY: sets this thread's level and zeroes its live context.
        unsafe {
            ffi::rocksdb_set_perf_level(ffi::PERF_LEVEL_ENABLE_COUNT);
            ffi::rocksdb_perfcontext_reset(context.ptr());
        }
        self.counting = Some(Counting {
            context,
            gets_with_filter: 0,
            gets_without_filter: 0,
            seeks: 0,
            scans: 0,
        });
        Ok(true)
    }

    fn take_read_counts(&mut self) -> EngineResult<Option<ReadCounts>> {
        let Some(counting) = self.counting.take() else {
            return Ok(None);
        };
        // Off again first, as every session of the lab runs (see `session`).
        // SAFETY: sets a thread-local level; any value is accepted.
        unsafe { ffi::rocksdb_set_perf_level(PERF_LEVEL_DISABLE) };
        Ok(Some(counting.counts()))
    }
}

/// A value `rocksdb_get_pinned_cf` found, destroyed on drop.
struct PinnedValue(NonNull<ffi::rocksdb_pinnableslice_t>);

impl Drop for PinnedValue {
    fn drop(&mut self) {
        // SAFETY: the pointer came from rocksdb_get_pinned_cf, is owned by
        // this value alone and destroyed once.
        unsafe { ffi::rocksdb_pinnableslice_destroy(self.0.as_ptr()) }
    }
}

/// An iterator over one column family, which must not outlive the store.
struct Iter<'a> {
    ptr: NonNull<ffi::rocksdb_iterator_t>,
    _store: PhantomData<&'a RocksStore>,
}

impl Iter<'_> {
    fn seek(&mut self, key: &[u8]) {
        // SAFETY: the iterator is live; the key is read during the call.
        unsafe {
            ffi::rocksdb_iter_seek(self.ptr.as_ptr(), key.as_ptr().cast::<c_char>(), key.len())
        }
    }

    fn seek_to_first(&mut self) {
        // SAFETY: the iterator is live.
        unsafe { ffi::rocksdb_iter_seek_to_first(self.ptr.as_ptr()) }
    }

    fn seek_to_last(&mut self) {
        // SAFETY: the iterator is live.
        unsafe { ffi::rocksdb_iter_seek_to_last(self.ptr.as_ptr()) }
    }

    fn valid(&self) -> bool {
        // SAFETY: the iterator is live.
        unsafe { ffi::rocksdb_iter_valid(self.ptr.as_ptr()) != 0 }
    }

    /// The key and value the iterator is on; `None` past either end. They
    /// borrow the iterator, so they are gone before it moves.
    fn entry(&self) -> Option<(&[u8], &[u8])> {
        if !self.valid() {
            return None;
        }
        let (mut klen, mut vlen) = (0usize, 0usize);
        // SAFETY: the iterator is live and valid; the key and value stay
        // put until it moves, which needs `&mut self`, so not while the
        // returned slices are borrowed.
        unsafe {
            let key = ffi::rocksdb_iter_key(self.ptr.as_ptr(), &mut klen);
            let value = ffi::rocksdb_iter_value(self.ptr.as_ptr(), &mut vlen);
            Some((bytes(key, klen), bytes(value, vlen)))
        }
    }

    fn next(&mut self) {
        if self.valid() {
            // SAFETY: the iterator is live and valid, as Next requires.
            unsafe { ffi::rocksdb_iter_next(self.ptr.as_ptr()) }
        }
    }

    fn prev(&mut self) {
        if self.valid() {
            // SAFETY: the iterator is live and valid, as Prev requires.
            unsafe { ffi::rocksdb_iter_prev(self.ptr.as_ptr()) }
        }
    }

    /// The iterator's error, if reading failed, as an error of `what`.
    /// Moves the iterator to the database as it is now.
    fn refresh(&mut self) -> EngineResult<()> {
        let mut err = ptr::null_mut();
        // SAFETY: the iterator is live; `err` is a place for the result.
        let rc = unsafe { ffi::spinney_rocksdb_iter_refresh(self.ptr.as_ptr(), &mut err) };
        check(err, "refresh an iterator")?;
        if rc != 0 {
            return Err(peer("refresh an iterator: failed without a message".into()));
        }
        Ok(())
    }

    fn status(&self, what: &str) -> EngineResult<()> {
        let mut err = ptr::null_mut();
        // SAFETY: the iterator is live; `err` is a place for the result.
        unsafe { ffi::rocksdb_iter_get_error(self.ptr.as_ptr(), &mut err) };
        check(err, what)
    }
}

impl Drop for Iter<'_> {
    fn drop(&mut self) {
        // SAFETY: the pointer came from rocksdb_create_iterator_cf, is
        // owned by this value alone and destroyed once, before the store.
        unsafe { ffi::rocksdb_iter_destroy(self.ptr.as_ptr()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small configuration: a 1 MiB cache and 64 KiB memtables, so that
    /// a few hundred entries make SSTs.
    fn config() -> Config {
        Config {
            engine: ENGINE,
            cache_size: 1 << 20,
            write_buffer_size: 64 << 10,
            ..Config::default()
        }
    }

    fn specs(names: &[&str]) -> Vec<TableSpec> {
        names.iter().map(|n| TableSpec::named(n)).collect()
    }

    fn open_store(config: &Config, dir: &Path, names: &[&str]) -> Box<dyn Store> {
        match open(config, dir, &specs(names)) {
            Ok(store) => store,
            Err(e) => panic!("open failed: {e}"),
        }
    }

    fn key(i: usize) -> Vec<u8> {
        format!("key{i:04}").into_bytes()
    }

    /// Puts `count` keys into `table`, the value of key i being i + 1
    /// bytes long (so that a scan's byte counts show its order).
    fn fill(store: &dyn Store, table: usize, count: usize) {
        let mut session = store.session().expect("session");
        let mut batch = Batch::new();
        for i in 0..count {
            batch.put(table, &key(i), &vec![b'v'; i + 1]);
            if batch.ops().count() == 50 {
                session.write(&batch).expect("write");
                batch.clear();
            }
        }
        session.write(&batch).expect("write");
    }

    fn scanned(store: &dyn Store, table: usize, forward: bool, limit: usize) -> Vec<u64> {
        let mut session = store.session().expect("session");
        let mut seen = Vec::new();
        session
            .scan(table, forward, &mut |bytes| {
                seen.push(bytes);
                seen.len() < limit
            })
            .expect("scan");
        seen
    }

    #[test]
    fn batches_of_puts_and_deletes_span_two_tables() {
        // Goal: one batch writes both column families, a delete in the
        // same batch wins over an earlier put, and a key of one table is
        // not seen in the other.
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open_store(&config(), dir.path(), &["default", "other"]);
        let mut session = store.session().expect("session");
        let mut batch = Batch::new();
        batch.put(0, b"a", b"one");
        batch.put(1, b"a", b"table-one");
        batch.put(0, b"b", b"two");
        batch.put(1, b"only-in-1", b"x");
        session.write(&batch).expect("write");
        batch.clear();
        batch.delete(0, b"b");
        batch.put(0, b"c", b"three!");
        session.write(&batch).expect("write");

        assert_eq!(session.get(0, b"a").expect("get"), Some(3));
        assert_eq!(session.get(1, b"a").expect("get"), Some(9));
        assert_eq!(session.get(0, b"b").expect("get"), None);
        assert_eq!(session.get(0, b"c").expect("get"), Some(6));
        assert_eq!(session.get(0, b"only-in-1").expect("get"), None);
        assert_eq!(session.get(1, b"only-in-1").expect("get"), Some(1));
        assert!(session.get(2, b"a").is_err(), "table 2 does not exist");
        drop(session);
        store.close().expect("close");
    }

    #[test]
    fn seeks_land_on_their_key_and_step_past_the_end() {
        // Goal: a seek finds an existing key, lands after a missing one
        // without finding it, counts the bytes of the entries it steps
        // over, and stops at the end of the table.
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open_store(&config(), dir.path(), &["default"]);
        fill(store.as_ref(), 0, 10);
        let mut session = store.session().expect("session");
        // key0003's value is 4 bytes, key0004's 5, key0005's 6.
        let s = session.seek(0, &key(3), 3).expect("seek");
        assert_eq!(
            s,
            Seek {
                found: true,
                bytes: (7 + 4) + (7 + 5) + (7 + 6)
            }
        );
        let s = session.seek(0, b"key0003x", 1).expect("seek");
        assert_eq!(
            s,
            Seek {
                found: false,
                bytes: 7 + 5
            }
        );
        // Two entries remain from key0008: 10 steps read only those.
        let s = session.seek(0, &key(8), 10).expect("seek");
        assert_eq!(
            s,
            Seek {
                found: true,
                bytes: (7 + 9) + (7 + 10)
            }
        );
        let s = session.seek(0, b"zzz", 5).expect("seek");
        assert_eq!(
            s,
            Seek {
                found: false,
                bytes: 0
            }
        );
        let s = session.seek(0, &key(0), 0).expect("seek");
        assert_eq!(
            s,
            Seek {
                found: true,
                bytes: 0
            }
        );
        drop(session);
        store.close().expect("close");
    }

    #[test]
    fn scans_run_in_order_both_ways_within_their_table() {
        // Goal: a forward scan sees the keys in ascending order and a
        // reverse one in descending order (value lengths grow with the
        // key), both see only their own table's entries, and a visit that
        // returns false stops the scan.
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open_store(&config(), dir.path(), &["default", "other"]);
        fill(store.as_ref(), 0, 20);
        fill(store.as_ref(), 1, 5);
        let expected: Vec<u64> = (0..20).map(|i| 7 + i + 1).collect();
        assert_eq!(scanned(store.as_ref(), 0, true, usize::MAX), expected);
        let reversed: Vec<u64> = expected.iter().rev().copied().collect();
        assert_eq!(scanned(store.as_ref(), 0, false, usize::MAX), reversed);
        assert_eq!(scanned(store.as_ref(), 1, true, usize::MAX).len(), 5);
        assert_eq!(scanned(store.as_ref(), 0, true, 3), [8, 9, 10]);
        store.close().expect("close");
    }

    #[test]
    fn operations_do_what_they_claim_and_refuse_the_rest() {
        // Goal: flush empties the memtable into an L0 SST, compact leaves
        // no L0 file and keeps the data, compact0 and compact1 run,
        // waitforcompaction returns, and the operations RocksDB has no
        // equivalent of say so.
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open_store(&config(), dir.path(), &["default", "other"]);
        fill(store.as_ref(), 0, 300);
        fill(store.as_ref(), 1, 10);
        assert!(store.shape_counts().memtable_entries > 0);
        assert!(store.operation(Benchmark::Flush).expect("flush"));
        let shape = store.shape_counts();
        assert_eq!(shape.memtable_entries, 0);
        assert!(shape.l0_runs >= 1 && shape.sst_files >= 1, "{shape:?}");
        assert!(store.operation(Benchmark::Compact).expect("compact"));
        let shape = store.shape_counts();
        assert_eq!(shape.l0_runs, 0, "{shape:?}");
        assert!(shape.sst_files >= 1, "{shape:?}");
        assert!(store.operation(Benchmark::CompactAll).expect("compactall"));
        assert!(store.operation(Benchmark::Compact0).expect("compact0"));
        assert!(store.operation(Benchmark::Compact1).expect("compact1"));
        assert!(store.operation(Benchmark::WaitForCompaction).expect("wait"));
        for op in [Benchmark::Checkpoint, Benchmark::FillSeq] {
            assert!(!store.operation(op).expect("operation"), "{op}");
        }
        assert_eq!(scanned(store.as_ref(), 0, true, usize::MAX).len(), 300);
        let stats = store
            .printout(Benchmark::Stats)
            .expect("stats")
            .unwrap_or_default();
        assert!(stats.contains("Compaction Stats"), "{stats}");
        let shape = store
            .printout(Benchmark::Shape)
            .expect("shape")
            .unwrap_or_default();
        assert!(shape.contains("Level"), "{shape}");
        assert_eq!(store.printout(Benchmark::ReadSeq).expect("printout"), None);
        store.close().expect("close");
    }

    /// The files of table `table` per level, L0 first.
    fn files_per_level(store: &dyn Store, table: usize) -> Vec<usize> {
        let shape = store
            .lsm_shape(table)
            .expect("shape")
            .expect("RocksDB reports its shape");
        std::iter::once(shape.l0_runs)
            .chain(shape.level_files)
            .collect()
    }

    /// Overwrites keys `0..count` of `table` (values one byte longer than
    /// `fill`'s, so that a scan still sees `count` entries).
    fn overwrite(store: &dyn Store, table: usize, count: usize) {
        let mut session = store.session().expect("session");
        let mut batch = Batch::new();
        for i in 0..count {
            batch.put(table, &key(i), &vec![b'w'; i + 2]);
        }
        session.write(&batch).expect("write");
    }

    #[test]
    fn compact0_and_compact1_move_files_down_one_level() {
        // Goal: compact0 merges every L0 file of every table into L1,
        // together with the L1 files they overlap; compact1 merges L1 into
        // L2; neither loses or duplicates an entry, and with nothing to
        // compact both do nothing. Method: flush L0 files by hand and
        // count the files per level after each operation. The tables are
        // held still, so that only these operations move files (RocksDB
        // 8 and later, with dynamic level sizes, also drain a level above
        // the base level by themselves).
        let dir = tempfile::tempdir().expect("tempdir");
        let held: Vec<TableSpec> = ["default", "other"]
            .iter()
            .map(|name| TableSpec {
                hold_shape: true,
                ..TableSpec::named(name)
            })
            .collect();
        let store = open(&config(), dir.path(), &held).expect("open");
        let store = store.as_ref();
        assert!(store
            .operation(Benchmark::Compact0)
            .expect("empty compact0"));
        fill(store, 0, 300);
        fill(store, 1, 40);
        assert!(store.operation(Benchmark::Flush).expect("flush"));
        overwrite(store, 0, 150);
        assert!(store.operation(Benchmark::Flush).expect("flush"));
        assert_eq!(files_per_level(store, 0)[..3], [2, 0, 0]);
        assert_eq!(files_per_level(store, 1)[..3], [1, 0, 0]);

        assert!(store.operation(Benchmark::Compact0).expect("compact0"));
        for table in [0, 1] {
            let files = files_per_level(store, table);
            assert_eq!((files[0], files[2]), (0, 0), "table {table}: {files:?}");
            assert!(files[1] >= 1, "table {table}: {files:?}");
        }
        // A new L0 file overlapping L1 joins it there: L1 stays one sorted
        // run (RocksDB would refuse overlapping files in L1).
        overwrite(store, 0, 300);
        assert!(store.operation(Benchmark::Flush).expect("flush"));
        assert!(store.operation(Benchmark::Compact0).expect("compact0"));
        assert_eq!(files_per_level(store, 0)[0], 0);

        assert!(store.operation(Benchmark::Compact1).expect("compact1"));
        for table in [0, 1] {
            let files = files_per_level(store, table);
            assert_eq!((files[0], files[1]), (0, 0), "table {table}: {files:?}");
            assert!(files[2] >= 1, "table {table}: {files:?}");
        }
        assert!(store
            .operation(Benchmark::Compact1)
            .expect("empty compact1"));
        assert_eq!(scanned(store, 0, true, usize::MAX).len(), 300);
        assert_eq!(scanned(store, 1, true, usize::MAX).len(), 40);
        let mut session = store.session().expect("session");
        assert_eq!(session.get(0, &key(299)).expect("get"), Some(301));
        drop(session);
    }

    /// Two tables held still, with 64 KiB memtables: `bloom` with filters
    /// and `plain` without.
    fn held_specs() -> Vec<TableSpec> {
        ["bloom", "plain"]
            .iter()
            .zip([10, 0])
            .map(|(name, bits)| TableSpec {
                bloom_bits: Some(bits),
                write_buffer_bytes: Some(64 << 10),
                hold_shape: true,
                ..TableSpec::named(name)
            })
            .collect()
    }

    #[test]
    fn a_held_shape_keeps_its_l0_files_until_asked() {
        // Goal: with the shape held, ten L0 files (past RocksDB's default
        // trigger of four) stay in L0 after waiting for compactions, and
        // compact0 still moves them. Method: flush ten times, wait, count.
        let dir = tempfile::tempdir().expect("tempdir");
        let store = match open(&config(), dir.path(), &held_specs()) {
            Ok(store) => store,
            Err(e) => panic!("open failed: {e}"),
        };
        let store = store.as_ref();
        for _ in 0..10 {
            overwrite(store, 0, 20);
            assert!(store.operation(Benchmark::Flush).expect("flush"));
        }
        assert!(store.operation(Benchmark::WaitForCompaction).expect("wait"));
        assert_eq!(files_per_level(store, 0)[..2], [10, 0]);
        assert!(store.operation(Benchmark::Compact0).expect("compact0"));
        assert_eq!(files_per_level(store, 0)[..2], [0, 1]);
    }

    /// This thread's perf context's count of key comparisons, read without
    /// changing the level or resetting it.
    fn thread_comparisons() -> u64 {
        // SAFETY: a plain constructor; the handle is used and destroyed in
        // this thread.
        let context = PerfContext::new(unsafe { ffi::rocksdb_perfcontext_create() }, "perf")
            .expect("perf context");
        // SAFETY: the context is live and this thread's.
        unsafe { ffi::rocksdb_perfcontext_metric(context.ptr(), ffi::USER_KEY_COMPARISON_COUNT) }
    }

    #[test]
    fn read_counts_follow_the_reads_and_stop_after() {
        // Goal: while a session counts, gets on a table with filters
        // count filter checks and trees, gets on one without count data
        // blocks as trees, seeks count the merging iterator's children,
        // a mix gives no tree count; after `take_read_counts` the thread
        // counts nothing. Method: three L0 files and a memtable, read
        // keys that exist only in the oldest file.
        let dir = tempfile::tempdir().expect("tempdir");
        let store = match open(&config(), dir.path(), &held_specs()) {
            Ok(store) => store,
            Err(e) => panic!("open failed: {e}"),
        };
        let store = store.as_ref();
        fill(store, 0, 100);
        fill(store, 1, 100);
        assert!(store.operation(Benchmark::Flush).expect("flush"));
        for round in 0..3 {
            let mut session = store.session().expect("session");
            let mut batch = Batch::new();
            for table in [0, 1] {
                batch.put(table, format!("key{round}a").as_bytes(), b"x");
                batch.put(table, format!("key{round}z").as_bytes(), b"x");
            }
            session.write(&batch).expect("write");
            drop(session);
            if round < 2 {
                assert!(store.operation(Benchmark::Flush).expect("flush"));
            }
        }
        // L0: three files whose ranges all hold key0050; a memtable too.
        assert_eq!(files_per_level(store, 0)[0], 3);
        let mut session = store.session().expect("session");
        assert_eq!(session.take_read_counts().expect("take"), None);

        assert!(session.start_read_counts().expect("start"));
        for _ in 0..10 {
            assert!(session.get(0, &key(50)).expect("get").is_some());
        }
        let with = session.take_read_counts().expect("take").expect("counts");
        // Per get: the memtable, then three filters (two say no), one
        // data block.
        assert_eq!(with.bloom_checks, Some(30));
        assert_eq!(with.bloom_negatives, Some(20));
        assert_eq!(with.trees_searched, Some(40));
        assert_eq!(
            with.blocks_from_cache
                .zip(with.blocks_from_storage)
                .map(|(c, s)| c + s),
            Some(10)
        );
        assert!(with.keys_compared.is_some_and(|k| k > 0));

        assert!(session.start_read_counts().expect("start"));
        for _ in 0..10 {
            assert!(session.get(1, &key(50)).expect("get").is_some());
        }
        let without = session.take_read_counts().expect("take").expect("counts");
        assert_eq!(without.bloom_checks, Some(0));
        // The memtable and a data block of each of the three files (or
        // two blocks of one: an upper bound).
        let trees = without.trees_searched.expect("trees");
        assert!((40..=70).contains(&trees), "{without:?}");

        assert!(session.start_read_counts().expect("start"));
        for _ in 0..10 {
            assert!(session.seek(0, &key(50), 3).expect("seek").found);
        }
        let seeks = session.take_read_counts().expect("take").expect("counts");
        // The memtable, three L0 files: four children per seek.
        assert_eq!(seeks.trees_searched, Some(40));

        assert!(session.start_read_counts().expect("start"));
        session.get(0, &key(1)).expect("get");
        session.seek(0, &key(1), 1).expect("seek");
        let mixed = session.take_read_counts().expect("take").expect("counts");
        assert_eq!(mixed.trees_searched, None);
        assert!(mixed.keys_compared.is_some());

        let before = thread_comparisons();
        for i in 0..20 {
            session.get(1, &key(i)).expect("get");
        }
        assert_eq!(thread_comparisons(), before, "counting is off again");
    }

    #[test]
    fn reopen_keeps_the_data_and_the_column_families() {
        // Goal: after a close, the tables' column families are found
        // again, whether the run names all of them, some (RocksDB must
        // still open the others), or adds a new one.
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open_store(&config(), dir.path(), &["default", "second"]);
        fill(store.as_ref(), 0, 30);
        fill(store.as_ref(), 1, 12);
        store.close().expect("close");

        let store = open_store(&config(), dir.path(), &["second"]);
        assert_eq!(scanned(store.as_ref(), 0, true, usize::MAX).len(), 12);
        store.close().expect("close");

        let store = open_store(&config(), dir.path(), &["default", "second", "third"]);
        assert_eq!(scanned(store.as_ref(), 0, true, usize::MAX).len(), 30);
        assert_eq!(scanned(store.as_ref(), 1, true, usize::MAX).len(), 12);
        assert_eq!(scanned(store.as_ref(), 2, true, usize::MAX).len(), 0);
        store.close().expect("close");
    }

    #[test]
    fn writes_without_the_wal_survive_a_clean_close() {
        // Goal: with --disable_wal=1 nothing is logged, and RocksDB's
        // close flushes the memtable, so a reopen still finds the data.
        let dir = tempfile::tempdir().expect("tempdir");
        let config = Config {
            durability: Durability::Off,
            ..config()
        };
        let store = open_store(&config, dir.path(), &["default"]);
        fill(store.as_ref(), 0, 40);
        store.close().expect("close");
        let store = open_store(&config, dir.path(), &["default"]);
        assert_eq!(scanned(store.as_ref(), 0, true, usize::MAX).len(), 40);
        store.close().expect("close");
    }

    #[test]
    fn sessions_in_several_threads_work_at_once() {
        // Goal: four threads, each with its own session, write and read
        // their own keys at the same time; every write is there after.
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open_store(&config(), dir.path(), &["default"]);
        let shared: &dyn Store = store.as_ref();
        std::thread::scope(|scope| {
            for t in 0..4 {
                scope.spawn(move || {
                    let mut session = shared.session().expect("session");
                    let mut batch = Batch::new();
                    for i in 0..250 {
                        let k = format!("t{t}-{i:04}");
                        batch.clear();
                        batch.put(0, k.as_bytes(), b"value");
                        session.write(&batch).expect("write");
                        assert_eq!(session.get(0, k.as_bytes()).expect("get"), Some(5));
                        let s = session.seek(0, k.as_bytes(), 1).expect("seek");
                        assert!(s.found);
                    }
                });
            }
        });
        assert_eq!(scanned(shared, 0, true, usize::MAX).len(), 1000);
        store.close().expect("close");
    }

    #[test]
    fn background_threads_follow_rocksdb_split_of_jobs() {
        // Goal: 0 background threads still gives RocksDB one job (one
        // flush and one compaction thread), and more jobs are split a
        // quarter to flushes as RocksDB does.
        let jobs = |n| {
            let s = Settings::of(&Config {
                background_threads: n,
                ..config()
            });
            (s.background_jobs, s.flush_threads, s.compaction_threads)
        };
        assert_eq!(jobs(0), (1, 1, 1));
        assert_eq!(jobs(2), (2, 1, 1));
        assert_eq!(jobs(8), (8, 2, 6));
        assert!(describe(&config()).contains("max_background_jobs 2"));
    }

    #[test]
    fn version_names_the_loaded_library() {
        // Goal: the version comes from the librocksdb file this process
        // linked: Debian's 7.8, or the bundled 11.8 of librocksdb-sys.
        let expected = if cfg!(feature = "rocksdb") {
            "7.8."
        } else {
            "11.8."
        };
        assert!(version().starts_with(expected), "{}", version());
    }
}
