//! The WiredTiger adapter: `wiredtiger-btree` (row-store B-tree tables) and
//! `wiredtiger-lsm` (LSM tables with bloom filters), on Debian's
//! libwiredtiger 3.2.1 through the C shim `wiredtiger_shim.c`, whose plain
//! functions are declared by hand in `ffi` below.
//!
//! What the adapter sets; everything else is WiredTiger's default, named
//! here so that a figure says what ran.
//! - Connection (`wiredtiger_open`): `create`, `cache_size` from
//!   `--cache_size` (WiredTiger takes 1 MB to 10 TB), `log=(enabled=true)`
//!   (defaults kept: 100 MB log files, archived after checkpoints,
//!   preallocated, not compressed; so the directory holds 300 MB of log
//!   files from the start, one in use and two preallocated, and the lab's
//!   database size counts them), `transaction_sync` from the durability
//!   (below), `eviction=(threads_min=1,threads_max=N)` with N =
//!   `--background_threads` clamped to WiredTiger's 1..=20 (0 becomes 1;
//!   WiredTiger's default is 1..=8; application threads also evict when the
//!   cache passes its default triggers, 95% full or 20% dirty),
//!   `statistics=(fast)` for the stats, shape and merge waits, and
//!   `session_max` = max(100, threads + 64), as WiredTiger's own threads
//!   take sessions too (the LSM manager opens 20). Kept: no periodic
//!   checkpoints (`checkpoint=(wait=0)`), `checkpoint_sync=true`, eviction
//!   targets 80% full and 5% dirty, `mmap=true`.
//! - LSM tables also set `lsm_manager=(worker_thread_max=N+1)` with N =
//!   `--background_threads`, clamped to WiredTiger's 3..=20: the count
//!   includes the manager thread, which only schedules work, so 0, 1 and 2
//!   all become 2 workers (one for switches and flushes, one for flushes,
//!   bloom filters and merges); `lsm_manager=(merge=true)` is the default.
//! - Tables: `table:NAME` with `key_format=u,value_format=u` (raw bytes,
//!   compared with memcmp). A B-tree keeps WiredTiger's page defaults:
//!   `allocation_size=4KB`, `leaf_page_max=32KB`, `internal_page_max=4KB`,
//!   `memory_page_max=5MB` (at most a tenth of the cache), `split_pct=90`,
//!   `prefix_compression=false`, `checksum=uncompressed`; `--page_size` is
//!   not applied. An LSM table sets `type=lsm,lsm=(chunk_size=W,bloom=B,
//!   bloom_bit_count=K)`: W = `--write_buffer_size` (WiredTiger takes 512 KB
//!   to 500 MB), K = the table's bloom bits (2 to 1000; 0 turns bloom
//!   filters off). Kept: `bloom_hash_count=8`, `bloom_oldest=false` (no
//!   filter on the oldest chunk), `merge_max=15`, `merge_min=0` (half of
//!   merge_max), `chunk_max=5GB`, `auto_throttle=true`,
//!   `chunk_count_limit=0`; WiredTiger builds a chunk's filter after the
//!   chunk is flushed and when merges write a new chunk. Compression: only
//!   `none` (Debian builds WiredTiger with the snappy and zlib extensions
//!   only; lz4 and zstd are refused). An existing table keeps the settings
//!   it was created with: WiredTiger stores them in its metadata.
//! - Sessions: `isolation=snapshot` (WiredTiger's default is
//!   read-committed, under which two transactions writing the same key do
//!   not conflict and can interleave; see `SESSION_CONFIG`).
//!
//! Writes: a batch of one entry is one auto-commit write (WiredTiger itself
//! retries it while it conflicts with another transaction); a larger batch
//! is one explicit transaction across its tables, retried while WiredTiger
//! rolls it back for a conflict (`ROLLBACK_RETRY_WAIT_MAX`). Puts overwrite
//! (cursors keep `overwrite=true`), so deleting a missing key is no error.
//! WiredTiger refuses empty keys: reads of one find nothing, a put of one is
//! an error. A read (`get`, `seek`, `scan`) resets its cursor when done, so
//! that it pins no snapshot or page and the next read sees the latest data.
//!
//! Durability, from WiredTiger's "Commit-level durability" page
//! (src/docs/tune-durability.dox) and its source (conn_log.c
//! `__logmgr_sync_cfg`, log.c `__log_write_internal`, the log server
//! thread):
//! - `Normal` (the lab's default: written to the OS at each commit, not
//!   synced), B-tree: `transaction_sync=(enabled=true,method=none)`. A commit
//!   returns once its log records have been written with write(2) (WT's
//!   WT_LOG_FLUSH: it waits for the log's write LSN to pass its records); no
//!   sync. Survives a crash of the process, not of the machine. The LSM
//!   runs as `Off` instead: with `method=none` WiredTiger 3.2.1 deadlocks
//!   a fast load into an LSM tree (see `effective_durability`).
//! - `Full` (`--sync=1`): `transaction_sync=(enabled=true,method=fsync)`. A
//!   commit returns once the log is fsync'ed past its records; concurrent
//!   commits share a sync (WiredTiger's group commit).
//! - `Off` (`--disable_wal=1`): `transaction_sync=(enabled=false)`. The log
//!   is kept (every table is logged), but a commit only copies its records
//!   into WiredTiger's in-memory log buffer (a 256 KB slot, switched once it
//!   holds 128 KB) and returns without writing them. They reach the OS when
//!   the slot fills, when a checkpoint or another sync forces the log out,
//!   or when the log server thread forces out buffered writes; it does so
//!   each time it wakes, every 50 ms while commits arrive and up to 1 s when
//!   idle. They are synced only at log file switches, checkpoints and close.
//!   A crash of the process may lose the commits of the last 50 ms (of the
//!   last second, after an idle spell).
//!
//! strace of fillseq, 2,000 commits of one entry on the B-tree: `Normal`
//! made 2,079 pwrite calls and 80 syncs (the syncs of creating the files,
//! of the checkpoint and of close), `Full` 2,077 pwrites and 2,092 syncs,
//! `Off` 70 pwrites and 79 syncs; and `Off` at 100 commits a second wrote
//! the log every 50 ms.
//!
//! In every mode a checkpoint syncs the log and the data files, and the
//! log file left by a switch is synced before it is closed.
//!
//! Operations (`Store::operation`):
//! - `checkpoint` and `flush` run `WT_SESSION::checkpoint` (all tables):
//!   it writes every dirty page and syncs the files, which is what makes
//!   in-memory data durable without the log. For an LSM tree the checkpoint
//!   includes the chunks not yet on disk, the in-memory chunk among them
//!   (lsm_tree.c `__wt_lsm_tree_worker`), so their data reaches disk; but
//!   the in-memory chunk is not switched: it stays the chunk that takes
//!   writes, and it becomes an on-disk chunk only when full or at compact.
//! - `compact` and `compactall` run `WT_SESSION::compact` on every table
//!   (timeout 1200 s, its default). On a B-tree it moves blocks from the
//!   end of the file into free space nearer its start and truncates the
//!   file; it does nothing unless at least 1 MB and 10% of the file can be
//!   won (block_compact.c). On an LSM tree it forces the in-memory chunk to
//!   disk, then waits while merges run with WiredTiger's merge
//!   aggressiveness raised, until a merge finds nothing to do (lsm_tree.c
//!   `__wt_lsm_compact`). A tree of one chunk is left as it is, and one
//!   with fewer on-disk chunks than merge_min (7) may be too: observed,
//!   the first merge attempt runs before the aggressiveness is raised,
//!   finds nothing, and compact takes that as done.
//! - `compact0` and `compact1` are not supported: WiredTiger's LSM has
//!   merge generations, not levels, and no call to merge one of them.
//! - `waitforcompaction` (LSM only; not supported on a B-tree): WiredTiger
//!   has no "merges pending" signal, so the adapter waits until, for
//!   `MERGES_QUIET` (2 s), no LSM work has shown in its statistics: the
//!   rows merged, the chunks of every table and the bytes written by the
//!   block manager all stayed still (its count of work units done does not
//!   serve: the LSM manager queues units every 10 ms that find nothing to
//!   do). A flush, a bloom filter or a merge writes, so a still count means
//!   none ran; the LSM manager may still start a merge later, when more
//!   chunks reach disk.
//!
//! Thread-safety: a `WT_CONNECTION` is shared by all threads, and
//! `WiredTigerStore` is `Send + Sync` through it. A `WT_SESSION` and its
//! cursors must not be used by two threads at once (WiredTiger's
//! "Multithreading" page), so each `WiredTigerSession` owns one session and
//! belongs to one thread, and the store's operations and printouts each
//! open a session of their own. Sessions borrow the store, so none is open
//! when `close` closes the connection; dropping the store closes it too.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::marker::PhantomData;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr::{self, NonNull};
use std::time::{Duration, Instant};

use spinney::{Compression, Durability};

use super::{Batch, Engine, EngineError, EngineResult, Op, Seek, Session, Store, TableSpec};
use crate::{BenchError, Benchmark, Config, ShapeCounts};

/// The shim's functions and WiredTiger's own plain functions (its handles
/// stay opaque: only the shim looks inside them).
mod ffi {
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
}

use ffi::{WT_NOTFOUND, WT_ROLLBACK};

/// Statistics keys the adapter reads (wiredtiger.h's `WT_STAT_CONN_*` and
/// `WT_STAT_DSRC_*`), with the descriptions WiredTiger gives them; the test
/// `wiredtiger_codes_and_statistics_keys_match_the_header` checks each pair.
mod stat {
    pub const LSM_WORK_QUEUE_APP: i32 = 1000;
    pub const LSM_WORK_QUEUE_MANAGER: i32 = 1001;
    pub const LSM_ROWS_MERGED: i32 = 1002;
    pub const LSM_CHECKPOINT_THROTTLE: i32 = 1003;
    pub const LSM_MERGE_THROTTLE: i32 = 1004;
    pub const LSM_WORK_QUEUE_SWITCH: i32 = 1005;
    pub const LSM_WORK_UNITS_DONE: i32 = 1007;
    pub const BLOCK_BYTE_READ: i32 = 1026;
    pub const BLOCK_BYTE_WRITE: i32 = 1027;
    pub const BLOCK_BYTE_WRITE_CHECKPOINT: i32 = 1028;
    pub const CACHE_BYTES_INUSE: i32 = 1037;
    pub const CACHE_BYTES_READ: i32 = 1040;
    pub const CACHE_BYTES_WRITE: i32 = 1041;
    pub const CACHE_BYTES_MAX: i32 = 1103;
    pub const CACHE_EVICTION_DIRTY: i32 = 1105;
    pub const CACHE_EVICTION_APP: i32 = 1112;
    pub const CACHE_READ: i32 = 1117;
    pub const CACHE_WRITE: i32 = 1129;
    pub const CACHE_BYTES_DIRTY: i32 = 1134;
    pub const CACHE_EVICTION_CLEAN: i32 = 1136;
    pub const LOG_BYTES_WRITTEN: i32 = 1233;
    pub const LOG_FLUSH: i32 = 1235;
    pub const LOG_SYNC: i32 = 1246;
    pub const LOG_WRITES: i32 = 1250;
    pub const TXN_CHECKPOINT: i32 = 1384;
    pub const TXN_COMMIT: i32 = 1398;
    pub const TXN_ROLLBACK: i32 = 1399;

    pub const BLOOM_FALSE_POSITIVE: i32 = 2000;
    pub const BLOOM_HIT: i32 = 2001;
    pub const BLOOM_MISS: i32 = 2002;
    pub const BLOOM_COUNT: i32 = 2005;
    pub const LSM_CHUNK_COUNT: i32 = 2006;
    pub const LSM_GENERATION_MAX: i32 = 2007;
    pub const LSM_LOOKUP_NO_BLOOM: i32 = 2008;
    pub const BLOOM_SIZE: i32 = 2011;
    pub const BLOCK_SIZE: i32 = 2020;
    pub const BTREE_MAXIMUM_DEPTH: i32 = 2034;

    /// Connection statistics of the `stats` printout, in its order.
    pub const CONNECTION_PRINTOUT: [i32; 20] = [
        CACHE_BYTES_MAX,
        CACHE_BYTES_INUSE,
        CACHE_BYTES_DIRTY,
        CACHE_BYTES_READ,
        CACHE_BYTES_WRITE,
        CACHE_READ,
        CACHE_WRITE,
        CACHE_EVICTION_CLEAN,
        CACHE_EVICTION_DIRTY,
        CACHE_EVICTION_APP,
        BLOCK_BYTE_READ,
        BLOCK_BYTE_WRITE,
        BLOCK_BYTE_WRITE_CHECKPOINT,
        LOG_BYTES_WRITTEN,
        LOG_WRITES,
        LOG_FLUSH,
        LOG_SYNC,
        TXN_COMMIT,
        TXN_ROLLBACK,
        TXN_CHECKPOINT,
    ];

    /// The LSM manager's statistics (kept by the connection) in the
    /// printout of an LSM store.
    pub const LSM_CONNECTION_PRINTOUT: [i32; 7] = [
        LSM_ROWS_MERGED,
        LSM_WORK_UNITS_DONE,
        LSM_WORK_QUEUE_APP,
        LSM_WORK_QUEUE_MANAGER,
        LSM_WORK_QUEUE_SWITCH,
        LSM_MERGE_THROTTLE,
        LSM_CHECKPOINT_THROTTLE,
    ];

    /// Statistics of an LSM table in the `stats` printout.
    pub const LSM_TABLE_PRINTOUT: [i32; 8] = [
        LSM_CHUNK_COUNT,
        LSM_GENERATION_MAX,
        BLOOM_COUNT,
        BLOOM_SIZE,
        BLOOM_HIT,
        BLOOM_MISS,
        BLOOM_FALSE_POSITIVE,
        LSM_LOOKUP_NO_BLOOM,
    ];

    /// Statistics of a B-tree table in the `stats` printout.
    pub const BTREE_TABLE_PRINTOUT: [i32; 2] = [BTREE_MAXIMUM_DEPTH, BLOCK_SIZE];
}

/// Bytes in a MiB, for the settings WiredTiger states in MB.
const MIB: u64 = 1 << 20;

/// WiredTiger's range of `cache_size` (1 MB to 10 TB).
const CACHE_SIZE_MIN: u64 = MIB;
const CACHE_SIZE_MAX: u64 = 10 << 40;

/// WiredTiger's range of an LSM tree's `chunk_size` (512 KB to 500 MB).
const CHUNK_SIZE_MIN: u64 = 512 << 10;
const CHUNK_SIZE_MAX: u64 = 500 << 20;

/// WiredTiger's range of `bloom_bit_count`.
const BLOOM_BITS_MIN: u32 = 2;
const BLOOM_BITS_MAX: u32 = 1000;

/// WiredTiger's default `bloom_hash_count`, which the adapter keeps.
const BLOOM_HASHES: u32 = 8;

/// WiredTiger's range of `eviction=(threads_max)`.
const EVICTION_THREADS_MIN: usize = 1;
const EVICTION_THREADS_MAX: usize = 20;

/// WiredTiger's range of `lsm_manager=(worker_thread_max)`, which counts
/// the manager thread.
const LSM_THREADS_MIN: usize = 3;
const LSM_THREADS_MAX: usize = 20;

/// WiredTiger's default `session_max`, kept unless the run's threads need
/// more; the margin is for WiredTiger's own threads (the LSM manager alone
/// opens 20 sessions) and the adapter's short-lived sessions.
const SESSIONS_DEFAULT: usize = 100;
const SESSIONS_MARGIN: usize = 64;

/// How long a batch that WiredTiger rolls back (`WT_ROLLBACK`: a conflict
/// with a concurrent transaction writing the same key, under snapshot
/// isolation) is retried before the error is reported. WiredTiger's answer
/// to WT_ROLLBACK is to retry the transaction, and it retries a conflicting
/// auto-commit write (a batch of one) itself without limit; two of the
/// lab's batches collide for the time one takes to commit, far below this.
const ROLLBACK_RETRY_WAIT_MAX: Duration = Duration::from_secs(10);

/// The longest pause between two retries of a rolled-back batch; the
/// pauses double from a microsecond up to it.
const ROLLBACK_PAUSE_MAX: Duration = Duration::from_millis(10);

/// `waitforcompaction`: how long the LSM statistics must stay still, how
/// often they are read, and how long to wait at most (WT_SESSION::compact's
/// own default timeout).
const MERGES_QUIET: Duration = Duration::from_secs(2);
const MERGES_POLL: Duration = Duration::from_millis(100);
const MERGES_WAIT_MAX: Duration = Duration::from_secs(1200);

/// Every session's configuration. Snapshot isolation (WiredTiger's default
/// is read-committed) makes two transactions that write the same key
/// conflict: the later gets WT_ROLLBACK and is retried, so concurrent
/// batches apply one after the other, as a commit log would order them.
/// Under read-committed WiredTiger checks no conflict, and two batches
/// writing the same keys could leave some keys with one batch's values and
/// others with the other's.
const SESSION_CONFIG: &CStr = c"isolation=snapshot";

/// Bytes of table metadata the adapter reads (WiredTiger's are far shorter).
const METADATA_BYTES_MAX: usize = 4096;

/// Opens (creating if need be) the WiredTiger database in `dir` with
/// `tables`, as `engine`'s kind.
pub(crate) fn open(
    engine: Engine,
    config: &Config,
    dir: &Path,
    tables: &[TableSpec],
) -> Result<Box<dyn Store>, BenchError> {
    WiredTigerStore::open(engine, config, dir, tables).map(|s| Box::new(s) as Box<dyn Store>)
}

/// WiredTiger's version, such as "3.2.1".
pub(crate) fn version() -> String {
    let (mut major, mut minor, mut patch) = (0, 0, 0);
    // SAFETY: wiredtiger_version only writes the three integers it is given
    // and returns a pointer to a static string, which is not read here.
    unsafe { ffi::wiredtiger_version(&mut major, &mut minor, &mut patch) };
    format!("{major}.{minor}.{patch}")
}

/// One line naming what the adapter sets for `config`.
pub(crate) fn describe(config: &Config) -> String {
    let common = format!(
        "cache {}, {}, compression {}, eviction threads up to {}",
        megabytes(config.cache_size),
        durability_words(effective_durability(config.engine, config.durability)),
        config.compression.name(),
        eviction_threads(config.background_threads),
    );
    match config.engine {
        Engine::WiredtigerLsm => {
            let bloom = match config.bloom_bits {
                0 => "no bloom filters".to_string(),
                bits => format!("bloom {bits} bits/key ({BLOOM_HASHES} hashes)"),
            };
            let asked = config.write_buffer_size as u64;
            let chunk = match lsm_chunk_size(config) {
                Ok(chunk) if chunk < asked => format!(
                    "chunk {} (--write_buffer_size {} leaves too little of the cache for three chunks)",
                    megabytes(chunk),
                    megabytes(asked)
                ),
                _ => format!("chunk {}", megabytes(asked)),
            };
            format!(
                "wiredtiger lsm table, {bloom}, {chunk}, {common}, lsm workers {} + manager",
                lsm_threads(config.background_threads) - 1,
            )
        }
        _ => format!(
            "wiredtiger btree table (row store, leaf pages 32 KB, internal pages 4 KB: WiredTiger's defaults, --page_size not applied), {common}"
        ),
    }
}

/// `bytes` as "64 MB" (or "1.5 MB"), in MiB as db_bench's MB are.
fn megabytes(bytes: u64) -> String {
    if bytes.is_multiple_of(MIB) {
        format!("{} MB", bytes / MIB)
    } else {
        format!("{:.1} MB", bytes as f64 / MIB as f64)
    }
}

/// The durability WiredTiger runs `engine` with for `durability`. An LSM
/// tree cannot write its log at each commit without a sync: in WiredTiger
/// 3.2.1 `method=none` deadlocks a fast load (seen at 2,000,000 sequential
/// puts, every time within seconds: a bloom filter's creation waits on the
/// log write of its metadata change while the writer waits for a chunk
/// switch that waits on the tree's lock), so the LSM without `--sync`
/// buffers its log as with `--disable_wal`: the log server writes it out
/// within about 50 ms, a weaker promise than writing at each commit.
fn effective_durability(engine: Engine, durability: Durability) -> Durability {
    match (engine, durability) {
        (Engine::WiredtigerLsm, Durability::Normal) => Durability::Off,
        (_, durability) => durability,
    }
}

/// The `transaction_sync` setting of a durability.
fn transaction_sync(durability: Durability) -> &'static str {
    match durability {
        Durability::Off => "transaction_sync=(enabled=false)",
        Durability::Normal => "transaction_sync=(enabled=true,method=none)",
        Durability::Full => "transaction_sync=(enabled=true,method=fsync)",
    }
}

/// What `transaction_sync` makes of a commit, in the words of `describe`.
fn durability_words(durability: Durability) -> &'static str {
    match durability {
        Durability::Off => "log on, buffered and written within about 50 ms, not synced",
        Durability::Normal => "log on, written at each commit, not synced",
        Durability::Full => "log on, synced at each commit",
    }
}

/// `eviction=(threads_max)` for `--background_threads`.
fn eviction_threads(background_threads: usize) -> usize {
    background_threads.clamp(EVICTION_THREADS_MIN, EVICTION_THREADS_MAX)
}

/// `lsm_manager=(worker_thread_max)` for `--background_threads`: that many
/// workers plus the manager thread.
fn lsm_threads(background_threads: usize) -> usize {
    background_threads
        .saturating_add(1)
        .clamp(LSM_THREADS_MIN, LSM_THREADS_MAX)
}

/// The `wiredtiger_open` configuration for `config`; an option WiredTiger
/// cannot honour is a usage error naming it.
fn connection_config(engine: Engine, config: &Config) -> Result<String, BenchError> {
    match config.compression {
        Compression::None => {}
        other => {
            return Err(BenchError::Config(format!(
                "--compression_type={}: Debian's WiredTiger {} has only the snappy and zlib compressors (no lz4, no zstd); run {engine} with --compression_type=none",
                other.name(),
                version()
            )))
        }
    }
    if !(CACHE_SIZE_MIN..=CACHE_SIZE_MAX).contains(&config.cache_size) {
        return Err(BenchError::Config(format!(
            "--cache_size={}: WiredTiger's cache_size takes {CACHE_SIZE_MIN} bytes (1 MB) to 10 TB",
            config.cache_size
        )));
    }
    let mut text = format!(
        "create,cache_size={},session_max={},log=(enabled=true),{},eviction=(threads_min=1,threads_max={}),statistics=(fast)",
        config.cache_size,
        config
            .threads
            .saturating_add(SESSIONS_MARGIN)
            .max(SESSIONS_DEFAULT),
        transaction_sync(effective_durability(engine, config.durability)),
        eviction_threads(config.background_threads),
    );
    if engine == Engine::WiredtigerLsm {
        text.push_str(&format!(
            ",lsm_manager=(worker_thread_max={})",
            lsm_threads(config.background_threads)
        ));
    }
    Ok(text)
}

/// Cache a WiredTiger LSM tree wants beside three chunks: a leaf page for
/// each participant of up to three concurrent merges of `merge_max` (15)
/// chunks, with 32 KB leaf pages (lsm_tree.c, `__lsm_tree_open_check`).
const LSM_MERGE_CACHE_BYTES: u64 = 3 * 15 * 32 * 1024;

/// The LSM chunk size for `config`: `--write_buffer_size`, made smaller
/// when the cache cannot hold three chunks and the merges' pages (which
/// WiredTiger requires), as a WiredTiger user with that cache would have
/// to. A cache too small for three chunks of WiredTiger's smallest size is
/// a usage error.
fn lsm_chunk_size(config: &Config) -> Result<u64, BenchError> {
    let asked = config.write_buffer_size as u64;
    if !(CHUNK_SIZE_MIN..=CHUNK_SIZE_MAX).contains(&asked) {
        return Err(BenchError::Config(format!(
            "--write_buffer_size={asked}: WiredTiger's LSM chunk_size takes {CHUNK_SIZE_MIN} bytes (512 KB) to {CHUNK_SIZE_MAX} bytes (500 MB)"
        )));
    }
    // Whole 64 KiB units, so that the figure reads well in the header.
    let fits =
        config.cache_size.saturating_sub(LSM_MERGE_CACHE_BYTES) / 3 / (64 << 10) * (64 << 10);
    if fits < CHUNK_SIZE_MIN {
        return Err(BenchError::Config(format!(
            "--cache_size={}: a WiredTiger LSM tree needs a cache of at least {} bytes (three chunks of 512 KB and {LSM_MERGE_CACHE_BYTES} bytes for merges)",
            config.cache_size,
            3 * CHUNK_SIZE_MIN + LSM_MERGE_CACHE_BYTES
        )));
    }
    Ok(asked.min(fits))
}

/// The `WT_SESSION::create` configuration of a table.
fn table_config(engine: Engine, config: &Config, spec: &TableSpec) -> Result<String, BenchError> {
    const FORMATS: &str = "key_format=u,value_format=u";
    if engine != Engine::WiredtigerLsm {
        return Ok(FORMATS.to_string());
    }
    let chunk = lsm_chunk_size(config)?;
    let bloom = match spec.bloom_bits.unwrap_or(config.bloom_bits) {
        0 => "bloom=false".to_string(),
        bits if (BLOOM_BITS_MIN..=BLOOM_BITS_MAX).contains(&bits) => {
            format!("bloom=true,bloom_bit_count={bits}")
        }
        bits => {
            return Err(BenchError::Config(format!(
                "--bloom_bits={bits} (table '{}'): WiredTiger's LSM bloom filters take {BLOOM_BITS_MIN} to {BLOOM_BITS_MAX} bits per key, or 0 for none",
                spec.name
            )))
        }
    };
    Ok(format!(
        "{FORMATS},type=lsm,lsm=(chunk_size={chunk},{bloom})"
    ))
}

/// WiredTiger's words for `code` in the call `what`, with the detail its
/// event handler gave this thread during that call. Called right after the
/// failing call, before any other call into the shim forgets the detail.
fn failure_text(what: &str, code: c_int) -> String {
    // SAFETY: wiredtiger_strerror returns a NUL-terminated string: static
    // for WiredTiger's codes and the system's errnos, in a static buffer
    // for an unknown code, which is copied out at once.
    let words = unsafe {
        let text = ffi::wiredtiger_strerror(code);
        if text.is_null() {
            String::from("unknown error")
        } else {
            CStr::from_ptr(text).to_string_lossy().into_owned()
        }
    };
    let mut message = format!("{what}: {words} ({code})");
    // SAFETY: the shim returns NULL or its thread-local NUL-terminated
    // buffer, which only this thread's next call into the shim changes;
    // it is copied out at once.
    let detail = unsafe {
        let text = ffi::spinney_wt_last_message();
        (!text.is_null()).then(|| CStr::from_ptr(text).to_string_lossy().into_owned())
    };
    if let Some(detail) = detail {
        // WiredTiger opens its messages with "[time][process:thread], ":
        // noise in an error that is read once.
        let detail = match detail.strip_prefix('[') {
            Some(rest) => rest.split_once("], ").map_or(rest, |(_, text)| text),
            None => &detail,
        };
        message.push_str("; WiredTiger said: ");
        message.push_str(detail.trim_end());
    }
    message
}

/// A WiredTiger call that failed: its code and the message naming it.
#[derive(Debug)]
struct Failure {
    code: c_int,
    message: String,
}

impl Failure {
    /// The failure of the call `what` with `code`.
    fn of(code: c_int, what: &str) -> Failure {
        Failure {
            code,
            message: failure_text(what, code),
        }
    }

    fn into_error(self, engine: Engine) -> EngineError {
        EngineError::peer(engine, self.message)
    }
}

/// `Ok` for 0, else the failure of the call `what` (named only on failure,
/// so that the hot paths allocate nothing).
fn call(code: c_int, what: impl FnOnce() -> String) -> Result<(), Failure> {
    if code == 0 {
        Ok(())
    } else {
        Err(Failure::of(code, &what()))
    }
}

/// A path or name as a C string; a NUL in it is a usage error.
fn c_string(what: &str, text: &[u8]) -> Result<CString, BenchError> {
    CString::new(text).map_err(|_| {
        BenchError::Config(format!(
            "{what} '{}' holds a NUL byte, which WiredTiger cannot take",
            String::from_utf8_lossy(text)
        ))
    })
}

/// One table of the store.
struct Table {
    name: String,
    /// `table:NAME`.
    uri: CString,
    /// `statistics:table:NAME`.
    statistics_uri: CString,
}

/// An open `WT_CONNECTION`. Closing it closes every session still open on
/// it; the borrow in `SessionHandle` makes sure there is none.
struct Connection {
    ptr: NonNull<ffi::Connection>,
    engine: Engine,
}

// SAFETY: WiredTiger's WT_CONNECTION methods are thread-safe, and a
// connection handle may be shared by threads (its "Multithreading" page).
unsafe impl Send for Connection {}
// SAFETY: as for Send: every method used through `&Connection`
// (open_session) is thread-safe.
unsafe impl Sync for Connection {}

impl Connection {
    fn open(engine: Engine, home: &CStr, config: &CStr) -> Result<Connection, Failure> {
        let mut conn = ptr::null_mut();
        // SAFETY: both strings are NUL-terminated and live across the call;
        // on success WiredTiger stores a connection handle in `conn`.
        let code = unsafe { ffi::spinney_wt_open(home.as_ptr(), config.as_ptr(), &mut conn) };
        call(code, || {
            format!("wiredtiger_open with \"{}\"", config.to_string_lossy())
        })?;
        NonNull::new(conn)
            .map(|ptr| Connection { ptr, engine })
            .ok_or_else(|| Failure {
                code: 0,
                message: "wiredtiger_open succeeded without a connection".into(),
            })
    }

    /// A new session on the connection, with snapshot isolation (see
    /// `SESSION_CONFIG`).
    fn session(&self) -> EngineResult<SessionHandle<'_>> {
        let mut session = ptr::null_mut();
        // SAFETY: the connection is open (it is closed only by consuming
        // `self`), WT_CONNECTION::open_session is thread-safe, and the
        // configuration is a NUL-terminated static string.
        let code = unsafe {
            ffi::spinney_wt_open_session(self.ptr.as_ptr(), SESSION_CONFIG.as_ptr(), &mut session)
        };
        call(code, || "open a WiredTiger session".into()).map_err(|f| f.into_error(self.engine))?;
        NonNull::new(session)
            .map(|ptr| SessionHandle {
                ptr,
                engine: self.engine,
                _connection: PhantomData,
            })
            .ok_or_else(|| EngineError::peer(self.engine, "open_session gave no session"))
    }

    /// Closes the connection (WiredTiger checkpoints every table and syncs
    /// the log first).
    fn close(self) -> EngineResult<()> {
        let ptr = self.ptr;
        let engine = self.engine;
        std::mem::forget(self);
        // SAFETY: the connection is open, and `self` is forgotten, so it is
        // closed once; no session borrows it (they borrow `self`).
        let code = unsafe { ffi::spinney_wt_close(ptr.as_ptr()) };
        call(code, || "close the WiredTiger database".into()).map_err(|f| f.into_error(engine))
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        // SAFETY: as in `close`, which forgets `self` so that this runs only
        // for a connection that was not closed. An error cannot be reported
        // from drop; the shim has written WiredTiger's message to stderr.
        let _ = unsafe { ffi::spinney_wt_close(self.ptr.as_ptr()) };
    }
}

/// An open `WT_SESSION`, closed (with its cursors) on drop. It must not be
/// used by two threads at once; `&mut self` on the calls that change it
/// and the absence of `Sync` see to that.
struct SessionHandle<'c> {
    ptr: NonNull<ffi::Session>,
    engine: Engine,
    _connection: PhantomData<&'c Connection>,
}

impl SessionHandle<'_> {
    fn create(&mut self, uri: &CStr, config: &CStr) -> EngineResult<()> {
        // SAFETY: the session is open and used by this thread only; both
        // strings are NUL-terminated and live across the call.
        let code =
            unsafe { ffi::spinney_wt_create(self.ptr.as_ptr(), uri.as_ptr(), config.as_ptr()) };
        call(code, || {
            format!(
                "create {} with \"{}\"",
                uri.to_string_lossy(),
                config.to_string_lossy()
            )
        })
        .map_err(|f| f.into_error(self.engine))
    }

    /// The metadata WiredTiger keeps for `key`, if it has the object.
    fn metadata(&mut self, key: &CStr) -> EngineResult<Option<String>> {
        let mut out = vec![0u8; METADATA_BYTES_MAX];
        // SAFETY: the session is open and used by this thread only; `key`
        // is NUL-terminated; the shim writes at most `out.len()` bytes into
        // `out`, NUL included.
        let code = unsafe {
            ffi::spinney_wt_metadata(
                self.ptr.as_ptr(),
                key.as_ptr(),
                out.as_mut_ptr().cast(),
                out.len(),
            )
        };
        if code == WT_NOTFOUND {
            return Ok(None);
        }
        call(code, || {
            format!("read the metadata of {}", key.to_string_lossy())
        })
        .map_err(|f| f.into_error(self.engine))?;
        let text = CStr::from_bytes_until_nul(&out)
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(Some(text))
    }

    fn open_cursor(&mut self, uri: &CStr) -> EngineResult<NonNull<ffi::Cursor>> {
        let mut cursor = ptr::null_mut();
        // SAFETY: the session is open and used by this thread only; `uri` is
        // NUL-terminated. The cursor lives until the session closes.
        let code =
            unsafe { ffi::spinney_wt_open_cursor(self.ptr.as_ptr(), uri.as_ptr(), &mut cursor) };
        call(code, || {
            format!("open a cursor on {}", uri.to_string_lossy())
        })
        .map_err(|f| f.into_error(self.engine))?;
        NonNull::new(cursor)
            .ok_or_else(|| EngineError::peer(self.engine, "open_cursor gave no cursor"))
    }

    fn checkpoint(&mut self) -> EngineResult<()> {
        // SAFETY: the session is open and used by this thread only.
        let code = unsafe { ffi::spinney_wt_checkpoint(self.ptr.as_ptr()) };
        call(code, || "checkpoint".into()).map_err(|f| f.into_error(self.engine))
    }

    fn compact(&mut self, uri: &CStr) -> EngineResult<()> {
        // SAFETY: the session is open and used by this thread only; `uri` is
        // NUL-terminated.
        let code = unsafe { ffi::spinney_wt_compact(self.ptr.as_ptr(), uri.as_ptr()) };
        call(code, || format!("compact {}", uri.to_string_lossy()))
            .map_err(|f| f.into_error(self.engine))
    }

    /// A statistics cursor on `uri` ("statistics:" or
    /// "statistics:table:NAME"), holding the values of this moment.
    fn statistics(&mut self, uri: &CStr) -> EngineResult<Statistics<'_>> {
        let mut cursor = ptr::null_mut();
        // SAFETY: the session is open and used by this thread only; `uri` is
        // NUL-terminated.
        let code = unsafe {
            ffi::spinney_wt_open_statistics(self.ptr.as_ptr(), uri.as_ptr(), &mut cursor)
        };
        call(code, || {
            format!("open a statistics cursor on {}", uri.to_string_lossy())
        })
        .map_err(|f| f.into_error(self.engine))?;
        let ptr = NonNull::new(cursor)
            .ok_or_else(|| EngineError::peer(self.engine, "open_cursor gave no cursor"))?;
        Ok(Statistics {
            ptr,
            engine: self.engine,
            _session: PhantomData,
        })
    }
}

impl Drop for SessionHandle<'_> {
    fn drop(&mut self) {
        // SAFETY: the session is open, and the connection outlives it (the
        // borrow 'c). Closing it closes its cursors, which nothing uses
        // afterwards: they are kept only beside this handle. An error cannot
        // be reported from drop; the shim has written it to stderr.
        let _ = unsafe { ffi::spinney_wt_close_session(self.ptr.as_ptr()) };
    }
}

/// A statistics cursor, closed on drop; it borrows its session mutably,
/// so the session does nothing else meanwhile.
struct Statistics<'s> {
    ptr: NonNull<ffi::Cursor>,
    engine: Engine,
    _session: PhantomData<&'s mut ()>,
}

impl Statistics<'_> {
    /// The description and value of the statistic `key`; `None` when this
    /// cursor has no such key (a B-tree has no LSM statistics).
    fn get(&mut self, key: i32) -> EngineResult<Option<(String, i64)>> {
        let mut description = ptr::null();
        let mut value = 0i64;
        // SAFETY: the cursor is open and its session is borrowed by `self`;
        // the shim sets the two outputs on success.
        let code = unsafe {
            ffi::spinney_wt_statistic(self.ptr.as_ptr(), key, &mut description, &mut value)
        };
        if code == WT_NOTFOUND {
            return Ok(None);
        }
        call(code, || format!("read statistic {key}")).map_err(|f| f.into_error(self.engine))?;
        Ok(Some((self.text(description), value)))
    }

    /// The value of the statistic `key` (0 when the cursor lacks it).
    fn value(&mut self, key: i32) -> EngineResult<i64> {
        Ok(self.get(key)?.map_or(0, |(_, v)| v))
    }

    fn text(&self, description: *const c_char) -> String {
        if description.is_null() {
            return String::new();
        }
        // SAFETY: WiredTiger's descriptions are static NUL-terminated strings.
        unsafe { CStr::from_ptr(description) }
            .to_string_lossy()
            .into_owned()
    }
}

impl Drop for Statistics<'_> {
    fn drop(&mut self) {
        // SAFETY: the cursor is open and its session outlives it (borrowed).
        let _ = unsafe { ffi::spinney_wt_close_cursor(self.ptr.as_ptr()) };
    }
}

/// The store: one connection and the run's tables.
pub(crate) struct WiredTigerStore {
    engine: Engine,
    tables: Vec<Table>,
    conn: Connection,
    /// The database directory (the tables' files are in it).
    dir: std::path::PathBuf,
}

impl WiredTigerStore {
    fn open(
        engine: Engine,
        config: &Config,
        dir: &Path,
        specs: &[TableSpec],
    ) -> Result<WiredTigerStore, BenchError> {
        let connection = c_string(
            "the WiredTiger configuration",
            connection_config(engine, config)?.as_bytes(),
        )?;
        let mut table_configs = Vec::with_capacity(specs.len());
        for spec in specs {
            table_configs.push(c_string(
                "the table configuration",
                table_config(engine, config, spec)?.as_bytes(),
            )?);
        }
        let home = c_string("the database directory", dir.as_os_str().as_bytes())?;
        let context = format!("open the {engine} database in {}", dir.display());
        let conn =
            Connection::open(engine, &home, &connection).map_err(|f| BenchError::Engine {
                context: context.clone(),
                error: f.into_error(engine),
            })?;
        let mut tables = Vec::with_capacity(specs.len());
        {
            let mut session = conn
                .session()
                .map_err(BenchError::engine(context.clone()))?;
            for (spec, table_config) in specs.iter().zip(&table_configs) {
                let table = Table {
                    name: spec.name.clone(),
                    uri: c_string("the table name", format!("table:{}", spec.name).as_bytes())?,
                    statistics_uri: c_string(
                        "the table name",
                        format!("statistics:table:{}", spec.name).as_bytes(),
                    )?,
                };
                let colgroup = c_string(
                    "the table name",
                    format!("colgroup:{}", spec.name).as_bytes(),
                )?;
                match session
                    .metadata(&colgroup)
                    .map_err(BenchError::engine(context.clone()))?
                {
                    None => session
                        .create(&table.uri, table_config)
                        .map_err(BenchError::engine(context.clone()))?,
                    Some(metadata) => {
                        let found = existing_engine(&metadata);
                        if found != Some(engine) {
                            return Err(BenchError::Config(format!(
                                "the table '{}' in {} is not a {engine} table ({}); pass --engine={} or use another --db",
                                spec.name,
                                dir.display(),
                                match found {
                                    Some(e) => format!("it is a {e} table"),
                                    None => format!("WiredTiger's metadata: {metadata}"),
                                },
                                found.map_or("wiredtiger-btree|wiredtiger-lsm", Engine::name),
                            )));
                        }
                    }
                }
                tables.push(table);
            }
        }
        Ok(WiredTigerStore {
            engine,
            tables,
            conn,
            dir: dir.to_path_buf(),
        })
    }

    fn table(&self, index: usize) -> EngineResult<&Table> {
        self.tables
            .get(index)
            .ok_or_else(|| EngineError::peer(self.engine, format!("no table number {index}")))
    }

    /// Waits until no LSM merge, flush or bloom filter has shown in the
    /// statistics for `MERGES_QUIET` (see the module header).
    fn wait_for_merges(&self) -> EngineResult<()> {
        let mut session = self.conn.session()?;
        let start = Instant::now();
        let mut last = self.merge_signs(&mut session)?;
        let mut still_since = Instant::now();
        loop {
            std::thread::sleep(MERGES_POLL);
            let now = self.merge_signs(&mut session)?;
            if now != last {
                last = now;
                still_since = Instant::now();
            } else if still_since.elapsed() >= MERGES_QUIET {
                return Ok(());
            }
            if start.elapsed() >= MERGES_WAIT_MAX {
                return Err(EngineError::peer(
                    self.engine,
                    format!(
                        "waitforcompaction: the LSM trees were still merging after {} s",
                        MERGES_WAIT_MAX.as_secs()
                    ),
                ));
            }
        }
    }

    /// What moves while LSM work runs: rows merged, block bytes written, and
    /// each table's chunk count.
    fn merge_signs(&self, session: &mut SessionHandle<'_>) -> EngineResult<Vec<i64>> {
        let mut signs = Vec::with_capacity(2 + self.tables.len());
        {
            let mut connection = session.statistics(c"statistics:")?;
            signs.push(connection.value(stat::LSM_ROWS_MERGED)?);
            signs.push(connection.value(stat::BLOCK_BYTE_WRITE)?);
        }
        for table in &self.tables {
            signs.push(
                session
                    .statistics(&table.statistics_uri)?
                    .value(stat::LSM_CHUNK_COUNT)?,
            );
        }
        Ok(signs)
    }

    /// The `stats` printout: a selection of the connection's statistics
    /// and of table 0's, in WiredTiger's words.
    fn statistics_text(&self) -> EngineResult<String> {
        let mut session = self.conn.session()?;
        let mut text = String::from("WiredTiger statistics (connection)\n");
        let lsm = self.engine == Engine::WiredtigerLsm;
        {
            let lsm_keys: &[i32] = if lsm {
                &stat::LSM_CONNECTION_PRINTOUT
            } else {
                &[]
            };
            let mut connection = session.statistics(c"statistics:")?;
            for &key in stat::CONNECTION_PRINTOUT.iter().chain(lsm_keys) {
                if let Some((description, value)) = connection.get(key)? {
                    text.push_str(&format!("  {description}: {value}\n"));
                }
            }
        }
        let table = self.table(0)?;
        text.push_str(&format!("WiredTiger statistics (table {})\n", table.name));
        let keys: &[i32] = if lsm {
            &stat::LSM_TABLE_PRINTOUT
        } else {
            &stat::BTREE_TABLE_PRINTOUT
        };
        let mut statistics = session.statistics(&table.statistics_uri)?;
        for &key in keys {
            if let Some((description, value)) = statistics.get(key)? {
                text.push_str(&format!("  {description}: {value}\n"));
            }
        }
        Ok(text)
    }

    /// The LSM shape of table 0: chunks, bloom filters, merge generations.
    fn lsm_shape(&self) -> EngineResult<LsmShape> {
        let mut session = self.conn.session()?;
        let table = self.table(0)?;
        let mut statistics = session.statistics(&table.statistics_uri)?;
        Ok(LsmShape {
            chunks: statistics.value(stat::LSM_CHUNK_COUNT)?,
            bloom_filters: statistics.value(stat::BLOOM_COUNT)?,
            bloom_bytes: statistics.value(stat::BLOOM_SIZE)?,
            generation_max: statistics.value(stat::LSM_GENERATION_MAX)?,
        })
    }
}

/// Which engine made a table, from its column group's metadata (WiredTiger
/// keeps the data source there: `source="lsm:NAME"` for an LSM tree,
/// `source="file:NAME.wt"` for a B-tree).
fn existing_engine(colgroup_metadata: &str) -> Option<Engine> {
    if colgroup_metadata.contains("source=\"lsm:") {
        Some(Engine::WiredtigerLsm)
    } else if colgroup_metadata.contains("source=\"file:") {
        Some(Engine::WiredtigerBtree)
    } else {
        None
    }
}

/// An LSM tree's shape, from its statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct LsmShape {
    chunks: i64,
    bloom_filters: i64,
    bloom_bytes: i64,
    generation_max: i64,
}

/// True when `file` holds data of the table `name`: a B-tree's `NAME.wt`,
/// an LSM tree's chunks `NAME-NNNNNN.lsm` and their bloom filters
/// `NAME-NNNNNN.bf`.
fn is_table_file(file: &str, name: &str) -> bool {
    if file.strip_prefix(name) == Some(".wt") {
        return true;
    }
    let Some(rest) = file.strip_prefix(name).and_then(|r| r.strip_prefix('-')) else {
        return false;
    };
    let digits = rest
        .strip_suffix(".lsm")
        .or_else(|| rest.strip_suffix(".bf"));
    digits.is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}

impl Store for WiredTigerStore {
    /// A B-tree table truncates a range (`WT_SESSION::truncate` between two
    /// cursors); the lab does not ask it of WiredTiger's LSM.
    fn deletes_ranges(&self) -> bool {
        self.engine == Engine::WiredtigerBtree
    }

    /// The bytes of the tables' files (B-tree files, LSM chunks and their
    /// bloom filters), as the directory lists them now.
    fn table_bytes(&self, tables: &[usize]) -> Option<u64> {
        let names: Vec<&str> = tables
            .iter()
            .filter_map(|&t| self.tables.get(t).map(|t| t.name.as_str()))
            .collect();
        let entries = std::fs::read_dir(&self.dir).ok()?;
        Some(
            entries
                .flatten()
                .filter(|e| {
                    let file = e.file_name();
                    let file = file.to_string_lossy();
                    names.iter().any(|n| is_table_file(&file, n))
                })
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum(),
        )
    }

    fn session(&self) -> EngineResult<Box<dyn Session + '_>> {
        Ok(Box::new(WiredTigerSession {
            store: self,
            handle: self.conn.session()?,
            cursors: vec![None; self.tables.len()],
            rollback_wait_max: ROLLBACK_RETRY_WAIT_MAX,
        }))
    }

    fn operation(&self, op: Benchmark) -> EngineResult<bool> {
        match op {
            Benchmark::Flush | Benchmark::Checkpoint => self.conn.session()?.checkpoint()?,
            Benchmark::Compact | Benchmark::CompactAll => {
                let mut session = self.conn.session()?;
                for table in &self.tables {
                    session.compact(&table.uri)?;
                }
            }
            Benchmark::WaitForCompaction if self.engine == Engine::WiredtigerLsm => {
                self.wait_for_merges()?
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn printout(&self, what: Benchmark) -> EngineResult<Option<String>> {
        match what {
            Benchmark::Stats => self.statistics_text().map(Some),
            Benchmark::Shape if self.engine == Engine::WiredtigerLsm => {
                let shape = self.lsm_shape()?;
                Ok(Some(format!(
                    "LSM tree {}: {} chunks (highest merge generation {}), {} bloom filters of {} bytes in all\n",
                    self.table(0)?.name,
                    shape.chunks,
                    shape.generation_max,
                    shape.bloom_filters,
                    shape.bloom_bytes
                )))
            }
            _ => Ok(None),
        }
    }

    /// For an LSM tree, its chunks (every chunk is a sorted run, so both
    /// `l0_runs` and `sst_files`); a B-tree's shape is not read (WiredTiger
    /// counts pages only with its costly `tree_walk` statistics).
    /// Nothing: the time series reads the shape every second while the
    /// benchmark runs, and in WiredTiger 3.2.1 a statistics cursor on an
    /// LSM table, opened while the LSM manager switches chunks and builds
    /// bloom filters, was seen to deadlock with them (the sampler blocked
    /// on the tree's lock, a switch on the same lock, a bloom filter's
    /// creation waiting on the log, the writer waiting for the switch).
    fn shape_counts(&self) -> ShapeCounts {
        ShapeCounts::default()
    }

    fn close(self: Box<Self>) -> EngineResult<()> {
        let WiredTigerStore { conn, .. } = *self;
        conn.close()
    }
}

/// One thread's session: a `WT_SESSION` and a cursor per table, opened at
/// first use and kept (WiredTiger caches them in the session anyway).
struct WiredTigerSession<'a> {
    store: &'a WiredTigerStore,
    handle: SessionHandle<'a>,
    /// Closed with the session, never on their own.
    cursors: Vec<Option<NonNull<ffi::Cursor>>>,
    /// `ROLLBACK_RETRY_WAIT_MAX`, shorter in a test.
    rollback_wait_max: Duration,
}

impl WiredTigerSession<'_> {
    fn cursor(&mut self, table: usize) -> EngineResult<NonNull<ffi::Cursor>> {
        match self.cursors.get(table) {
            Some(Some(cursor)) => Ok(*cursor),
            Some(None) => {
                let cursor = self.handle.open_cursor(&self.store.table(table)?.uri)?;
                if let Some(slot) = self.cursors.get_mut(table) {
                    *slot = Some(cursor);
                }
                Ok(cursor)
            }
            None => Err(EngineError::peer(
                self.store.engine,
                format!("no table number {table}"),
            )),
        }
    }

    fn error(&self, failure: Failure) -> EngineError {
        failure.into_error(self.store.engine)
    }

    /// Releases the cursor's position (and the snapshot and page it pins).
    fn reset(&self, cursor: NonNull<ffi::Cursor>) -> Result<(), Failure> {
        // SAFETY: the cursor belongs to this thread's open session.
        call(unsafe { ffi::spinney_wt_reset(cursor.as_ptr()) }, || {
            "reset a cursor".into()
        })
    }

    /// The bytes of the key and value of the entry `cursor` is on.
    fn entry_bytes(&self, cursor: NonNull<ffi::Cursor>) -> Result<u64, Failure> {
        let (mut key, mut key_len, mut value, mut value_len) = (ptr::null(), 0, ptr::null(), 0);
        // SAFETY: the cursor belongs to this thread's open session and is
        // positioned; the shim sets the four outputs on success.
        let code = unsafe {
            ffi::spinney_wt_entry(
                cursor.as_ptr(),
                &mut key,
                &mut key_len,
                &mut value,
                &mut value_len,
            )
        };
        call(code, || "read the entry under a cursor".into())?;
        Ok((key_len + value_len) as u64)
    }

    /// Applies the batch once: one write in its own implicit transaction
    /// (`single`), or all of them in one explicit transaction.
    fn apply(&mut self, batch: &Batch, single: bool) -> Result<(), Failure> {
        if !single {
            // SAFETY: the session is open and used by this thread only.
            call(
                unsafe { ffi::spinney_wt_begin(self.handle.ptr.as_ptr()) },
                || "begin a transaction".into(),
            )?;
        }
        for op in batch.ops() {
            if let Err(failure) = self.apply_one(op) {
                if single {
                    // The failed write's implicit transaction is rolled back
                    // by WiredTiger; only the cursor's hold on the key goes.
                    if let Ok(cursor) = self.cursor(op_table(op)) {
                        let _ = self.reset(cursor);
                    }
                } else {
                    // SAFETY: a transaction is running in this session.
                    let _ = unsafe { ffi::spinney_wt_rollback(self.handle.ptr.as_ptr()) };
                }
                return Err(failure);
            }
        }
        if !single {
            // SAFETY: a transaction is running in this session. When the
            // commit fails, WiredTiger has rolled the transaction back.
            call(
                unsafe { ffi::spinney_wt_commit(self.handle.ptr.as_ptr()) },
                || "commit a transaction".into(),
            )?;
        }
        Ok(())
    }

    fn apply_one(&mut self, op: Op<'_>) -> Result<(), Failure> {
        let cursor = self.cursor(op_table(op)).map_err(|e| Failure {
            code: 0,
            message: e.to_string(),
        })?;
        match op {
            Op::Put { key: [], .. } => Err(Failure {
                code: 0,
                message: "insert: WiredTiger does not store an empty key".into(),
            }),
            // No empty key can be there to delete.
            Op::Delete { key: [], .. } => Ok(()),
            Op::DeleteRange { table, start, end } => {
                let uri = match self.store.table(table) {
                    Ok(t) => t.uri.clone(),
                    Err(e) => {
                        return Err(Failure {
                            code: 0,
                            message: e.to_string(),
                        })
                    }
                };
                // SAFETY: the session is open and used by this thread only;
                // `uri` is NUL-terminated and the keys live across the call.
                let code = unsafe {
                    ffi::spinney_wt_truncate_range(
                        self.handle.ptr.as_ptr(),
                        uri.as_ptr(),
                        start.as_ptr().cast::<c_void>(),
                        start.len(),
                        end.as_ptr().cast::<c_void>(),
                        end.len(),
                    )
                };
                call(code, || "truncate a range".into())
            }
            Op::Put { key, value, .. } => {
                // SAFETY: the cursor belongs to this thread's open session;
                // key and value live across the call, and WiredTiger is done
                // with them when it returns.
                let code = unsafe {
                    ffi::spinney_wt_insert(
                        cursor.as_ptr(),
                        key.as_ptr().cast::<c_void>(),
                        key.len(),
                        value.as_ptr().cast::<c_void>(),
                        value.len(),
                    )
                };
                call(code, || "insert".into())
            }
            Op::Delete { key, .. } => {
                // SAFETY: as for the insert.
                let code = unsafe {
                    ffi::spinney_wt_remove(
                        cursor.as_ptr(),
                        key.as_ptr().cast::<c_void>(),
                        key.len(),
                    )
                };
                // With overwrite=true a missing key is not an error; the
                // check is for safety should a cursor ever be opened without.
                if code == WT_NOTFOUND {
                    return Ok(());
                }
                call(code, || "remove".into())
            }
        }
    }

    /// The value of `key`, copied (the tests compare values).
    #[cfg(test)]
    fn value(&mut self, table: usize, key: &[u8]) -> EngineResult<Option<Vec<u8>>> {
        let cursor = self.cursor(table)?;
        let (mut value, mut value_len) = (ptr::null(), 0usize);
        // SAFETY: as in `get`.
        let code = unsafe {
            ffi::spinney_wt_search(
                cursor.as_ptr(),
                key.as_ptr().cast(),
                key.len(),
                &mut value,
                &mut value_len,
            )
        };
        let found = match code {
            0 if value_len == 0 => Some(Vec::new()),
            // SAFETY: on success the value is `value_len` bytes in
            // WiredTiger's memory, valid until the next call on the cursor.
            0 => {
                Some(unsafe { std::slice::from_raw_parts(value.cast::<u8>(), value_len) }.to_vec())
            }
            WT_NOTFOUND => None,
            code => return Err(self.error(Failure::of(code, "search"))),
        };
        self.reset(cursor).map_err(|f| self.error(f))?;
        Ok(found)
    }
}

fn op_table(op: Op<'_>) -> usize {
    match op {
        Op::Put { table, .. } | Op::Delete { table, .. } | Op::DeleteRange { table, .. } => table,
    }
}

impl Session for WiredTigerSession<'_> {
    fn write(&mut self, batch: &Batch) -> EngineResult<()> {
        let mut ops = batch.ops();
        let single = match (ops.next(), ops.next()) {
            (None, _) => return Ok(()),
            (Some(_), None) => true,
            (Some(_), Some(_)) => false,
        };
        let start = Instant::now();
        let mut retries = 0u32;
        loop {
            match self.apply(batch, single) {
                Ok(()) => return Ok(()),
                Err(f) if f.code == WT_ROLLBACK && start.elapsed() < self.rollback_wait_max => {
                    let pause = Duration::from_micros(1 << retries.min(20));
                    std::thread::sleep(pause.min(ROLLBACK_PAUSE_MAX));
                    retries += 1;
                }
                Err(mut f) => {
                    if retries > 0 {
                        f.message.push_str(&format!(
                            " (retried {retries} times over {:.1} s)",
                            start.elapsed().as_secs_f64()
                        ));
                    }
                    return Err(self.error(f));
                }
            }
        }
    }

    fn get(&mut self, table: usize, key: &[u8]) -> EngineResult<Option<usize>> {
        let cursor = self.cursor(table)?;
        if key.is_empty() {
            // WiredTiger refuses empty keys, so it holds none.
            return Ok(None);
        }
        let (mut value, mut value_len) = (ptr::null(), 0usize);
        // SAFETY: the cursor belongs to this thread's open session; the key
        // lives across the call; the shim sets the outputs on success.
        let code = unsafe {
            ffi::spinney_wt_search(
                cursor.as_ptr(),
                key.as_ptr().cast::<c_void>(),
                key.len(),
                &mut value,
                &mut value_len,
            )
        };
        let found = match code {
            0 => Some(value_len),
            WT_NOTFOUND => None,
            code => {
                let failure = Failure::of(code, "search");
                let _ = self.reset(cursor);
                return Err(self.error(failure));
            }
        };
        // The next read takes a fresh snapshot, and this one pins nothing.
        self.reset(cursor).map_err(|f| self.error(f))?;
        Ok(found)
    }

    fn seek(&mut self, table: usize, key: &[u8], steps: usize) -> EngineResult<Seek> {
        let cursor = self.cursor(table)?;
        let result = self.seek_from(cursor, key, steps);
        let reset = self.reset(cursor);
        let seek = result.map_err(|f| self.error(f))?;
        reset.map_err(|f| self.error(f))?;
        Ok(seek)
    }

    fn scan(
        &mut self,
        table: usize,
        forward: bool,
        visit: &mut dyn FnMut(u64) -> bool,
    ) -> EngineResult<()> {
        let cursor = self.cursor(table)?;
        let result = self.scan_from(cursor, forward, visit);
        let reset = self.reset(cursor);
        result.map_err(|f| self.error(f))?;
        reset.map_err(|f| self.error(f))
    }
}

impl WiredTigerSession<'_> {
    /// `seek` on a cursor with no position; the caller resets it.
    fn seek_from(
        &self,
        cursor: NonNull<ffi::Cursor>,
        key: &[u8],
        steps: usize,
    ) -> Result<Seek, Failure> {
        let mut exact: c_int = 0;
        // WiredTiger refuses empty keys; the first key at or after the
        // empty one is the first key, which cannot be it.
        let code = if key.is_empty() {
            exact = 1;
            // SAFETY: the cursor belongs to this thread's open session; it
            // has no position, so next goes to the first entry.
            unsafe { ffi::spinney_wt_next(cursor.as_ptr()) }
        } else {
            // SAFETY: the cursor belongs to this thread's open session; the
            // key lives across the call.
            unsafe {
                ffi::spinney_wt_search_near(
                    cursor.as_ptr(),
                    key.as_ptr().cast::<c_void>(),
                    key.len(),
                    &mut exact,
                )
            }
        };
        let mut valid = match code {
            0 => true,
            // An empty table.
            WT_NOTFOUND => false,
            code => return Err(Failure::of(code, "search_near")),
        };
        // search_near may land on the largest smaller key: the first key at
        // or after `key` is then the next one.
        if valid && exact < 0 {
            valid = self.step(cursor, true)?;
        }
        let mut seek = Seek {
            found: valid && exact == 0,
            bytes: 0,
        };
        for _ in 0..steps {
            if !valid {
                break;
            }
            seek.bytes += self.entry_bytes(cursor)?;
            valid = self.step(cursor, true)?;
        }
        Ok(seek)
    }

    /// `scan`: from no position, next and prev start at the first and the
    /// last entry; the caller resets the cursor after.
    fn scan_from(
        &self,
        cursor: NonNull<ffi::Cursor>,
        forward: bool,
        visit: &mut dyn FnMut(u64) -> bool,
    ) -> Result<(), Failure> {
        // A cursor left positioned would make the walk start from there.
        self.reset(cursor)?;
        while self.step(cursor, forward)? {
            if !visit(self.entry_bytes(cursor)?) {
                break;
            }
        }
        Ok(())
    }

    /// Moves the cursor one entry; false past the end (or the start).
    fn step(&self, cursor: NonNull<ffi::Cursor>, forward: bool) -> Result<bool, Failure> {
        // SAFETY: the cursor belongs to this thread's open session.
        let code = unsafe {
            if forward {
                ffi::spinney_wt_next(cursor.as_ptr())
            } else {
                ffi::spinney_wt_prev(cursor.as_ptr())
            }
        };
        match code {
            0 => Ok(true),
            WT_NOTFOUND => Ok(false),
            code => Err(Failure::of(code, if forward { "next" } else { "prev" })),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::conformance;

    #[test]
    fn both_kinds_do_what_every_engine_does() {
        // Goal: the checks every adapter passes (see `conformance`), on
        // WiredTiger's B-tree and LSM.
        for engine in ENGINES {
            conformance::all(&|dir: &Path| open_store(engine, dir));
        }
    }

    #[test]
    fn lsm_chunks_shrink_to_fit_the_cache() {
        // Goal: WiredTiger wants three chunks and the merges' pages in the
        // cache; a chunk that does not fit is made smaller, and a cache too
        // small for the smallest chunks is a usage error.
        let with = |cache_size: u64, write_buffer_size: usize| Config {
            cache_size,
            write_buffer_size,
            ..Config::default()
        };
        assert_eq!(lsm_chunk_size(&with(64 << 20, 8 << 20)).ok(), Some(8 << 20));
        let shrunk = lsm_chunk_size(&with(20 << 20, 8 << 20)).expect("fits");
        assert!(shrunk < 8 << 20 && 3 * shrunk + LSM_MERGE_CACHE_BYTES <= 20 << 20);
        assert_eq!(shrunk % (64 << 10), 0);
        let err = lsm_chunk_size(&with(2 << 20, 8 << 20)).expect_err("too small");
        assert!(matches!(err, BenchError::Config(_)), "{err}");
        assert!(
            Engine::WiredtigerLsm.cache_bytes_min() >= 3 * CHUNK_SIZE_MIN + LSM_MERGE_CACHE_BYTES
        );
    }

    #[test]
    fn table_files_are_told_apart() {
        // Goal: a table's bytes count its own files only, not another
        // table's whose name it begins, nor WiredTiger's own.
        assert!(is_table_file("default.wt", "default"));
        assert!(is_table_file("by_price-000012.lsm", "by_price"));
        assert!(is_table_file("by_price-000012.bf", "by_price"));
        assert!(!is_table_file("by_price_2-000012.lsm", "by_price"));
        assert!(!is_table_file("by_price-.lsm", "by_price"));
        assert!(!is_table_file("WiredTiger.wt", "default"));
        assert!(!is_table_file("default.wtx", "default"));
    }

    const ENGINES: [Engine; 2] = [Engine::WiredtigerBtree, Engine::WiredtigerLsm];

    fn config(engine: Engine) -> Config {
        Config {
            engine,
            threads: 4,
            progress: false,
            ..Config::default()
        }
    }

    fn specs() -> [TableSpec; 2] {
        [TableSpec::named("one"), TableSpec::named("two")]
    }

    fn open_store(engine: Engine, dir: &Path) -> Box<dyn Store> {
        open(engine, &config(engine), dir, &specs())
            .unwrap_or_else(|e| panic!("open {engine} in {}: {e}", dir.display()))
    }

    fn key(i: usize) -> Vec<u8> {
        format!("key{i:05}").into_bytes()
    }

    /// A value whose length tells which key and which version wrote it.
    fn value(i: usize, version: usize) -> Vec<u8> {
        vec![b'a' + (version % 26) as u8; 10 + i % 50 + 100 * version]
    }

    /// A write of `write`: table, key, and the value of a put (`None` for
    /// a delete).
    type Write<'a> = (usize, &'a [u8], Option<&'a [u8]>);

    fn write(session: &mut dyn Session, ops: &[Write<'_>]) {
        let mut batch = Batch::new();
        for &(table, k, v) in ops {
            match v {
                Some(v) => batch.put(table, k, v),
                None => batch.delete(table, k),
            }
        }
        session.write(&batch).expect("write");
    }

    #[test]
    fn wiredtiger_codes_and_statistics_keys_match_the_header() {
        // Goal: the codes and statistics keys written by hand in this file
        // are the library's. Method: WiredTiger's own words for each code,
        // and the description a statistics cursor gives each key.
        let words = |code| failure_text("probe", code);
        assert!(
            words(WT_NOTFOUND).contains("WT_NOTFOUND"),
            "{}",
            words(WT_NOTFOUND)
        );
        assert!(
            words(WT_ROLLBACK).contains("WT_ROLLBACK"),
            "{}",
            words(WT_ROLLBACK)
        );
        assert!(version().starts_with("3."), "{}", version());

        let dir = tempfile::tempdir().expect("tempdir");
        let store = WiredTigerStore::open(
            Engine::WiredtigerLsm,
            &config(Engine::WiredtigerLsm),
            dir.path(),
            &specs(),
        )
        .expect("open");
        let mut session = store.conn.session().expect("session");
        let expected_connection = [
            (
                stat::LSM_WORK_QUEUE_APP,
                "LSM: application work units currently queued",
            ),
            (
                stat::LSM_WORK_QUEUE_MANAGER,
                "LSM: merge work units currently queued",
            ),
            (stat::LSM_ROWS_MERGED, "LSM: rows merged in an LSM tree"),
            (
                stat::LSM_CHECKPOINT_THROTTLE,
                "LSM: sleep for LSM checkpoint throttle",
            ),
            (
                stat::LSM_MERGE_THROTTLE,
                "LSM: sleep for LSM merge throttle",
            ),
            (
                stat::LSM_WORK_QUEUE_SWITCH,
                "LSM: switch work units currently queued",
            ),
            (
                stat::LSM_WORK_UNITS_DONE,
                "LSM: tree maintenance operations executed",
            ),
            (stat::BLOCK_BYTE_READ, "block-manager: bytes read"),
            (stat::BLOCK_BYTE_WRITE, "block-manager: bytes written"),
            (
                stat::BLOCK_BYTE_WRITE_CHECKPOINT,
                "block-manager: bytes written for checkpoint",
            ),
            (
                stat::CACHE_BYTES_INUSE,
                "cache: bytes currently in the cache",
            ),
            (stat::CACHE_BYTES_READ, "cache: bytes read into cache"),
            (stat::CACHE_BYTES_WRITE, "cache: bytes written from cache"),
            (stat::CACHE_BYTES_MAX, "cache: maximum bytes configured"),
            (stat::CACHE_EVICTION_DIRTY, "cache: modified pages evicted"),
            (
                stat::CACHE_EVICTION_APP,
                "cache: pages evicted by application threads",
            ),
            (stat::CACHE_READ, "cache: pages read into cache"),
            (stat::CACHE_WRITE, "cache: pages written from cache"),
            (
                stat::CACHE_BYTES_DIRTY,
                "cache: tracked dirty bytes in the cache",
            ),
            (
                stat::CACHE_EVICTION_CLEAN,
                "cache: unmodified pages evicted",
            ),
            (stat::LOG_BYTES_WRITTEN, "log: log bytes written"),
            (stat::LOG_FLUSH, "log: log flush operations"),
            (stat::LOG_SYNC, "log: log sync operations"),
            (stat::LOG_WRITES, "log: log write operations"),
            (stat::TXN_CHECKPOINT, "transaction: transaction checkpoints"),
            (stat::TXN_COMMIT, "transaction: transactions committed"),
            (stat::TXN_ROLLBACK, "transaction: transactions rolled back"),
        ];
        {
            let mut statistics = session.statistics(c"statistics:").expect("statistics");
            for (key, description) in expected_connection {
                let found = statistics.get(key).expect("read").map(|(d, _)| d);
                assert_eq!(
                    found.as_deref(),
                    Some(description),
                    "connection statistic {key}"
                );
            }
            assert_eq!(
                statistics.value(stat::CACHE_BYTES_MAX).expect("read"),
                i64::try_from(Config::default().cache_size).expect("fits"),
                "the cache is the one configured"
            );
        }
        let expected_table = [
            (
                stat::BLOOM_FALSE_POSITIVE,
                "LSM: bloom filter false positives",
            ),
            (stat::BLOOM_HIT, "LSM: bloom filter hits"),
            (stat::BLOOM_MISS, "LSM: bloom filter misses"),
            (stat::BLOOM_COUNT, "LSM: bloom filters in the LSM tree"),
            (stat::LSM_CHUNK_COUNT, "LSM: chunks in the LSM tree"),
            (
                stat::LSM_GENERATION_MAX,
                "LSM: highest merge generation in the LSM tree",
            ),
            (
                stat::LSM_LOOKUP_NO_BLOOM,
                "LSM: queries that could have benefited from a Bloom filter that did not exist",
            ),
            (stat::BLOOM_SIZE, "LSM: total size of bloom filters"),
            (stat::BLOCK_SIZE, "block-manager: file size in bytes"),
            (stat::BTREE_MAXIMUM_DEPTH, "btree: maximum tree depth"),
        ];
        let uri = store.table(0).expect("table").statistics_uri.clone();
        let mut statistics = session.statistics(&uri).expect("statistics");
        for (key, description) in expected_table {
            let found = statistics.get(key).expect("read").map(|(d, _)| d);
            assert_eq!(found.as_deref(), Some(description), "table statistic {key}");
        }
    }

    #[test]
    fn puts_and_deletes_across_two_tables_read_back() {
        // Goal: batches of one entry (auto-commit) and of many (one
        // transaction across tables) land, puts overwrite, deletes remove,
        // and deleting a missing key is no error. Method: write, then read
        // every key back through `get` (lengths) and the values themselves.
        for engine in ENGINES {
            let dir = tempfile::tempdir().expect("tempdir");
            let store = open_store(engine, dir.path());
            let mut session = store.session().expect("session");
            let mut batch = Batch::new();
            for i in 0..100 {
                batch.put(i % 2, &key(i), &value(i, 0));
            }
            session.write(&batch).expect("batch of puts");
            write(session.as_mut(), &[(0, &key(0), Some(&value(0, 1)))]);
            write(
                session.as_mut(),
                &[(1, &key(1), None), (0, &key(2), None), (1, &key(777), None)],
            );
            write(session.as_mut(), &[(0, &key(999), None)]);
            write(
                session.as_mut(),
                &[
                    (1, &key(3), Some(&value(3, 2))),
                    (0, &key(4), Some(&value(4, 2))),
                ],
            );

            for i in 0..100 {
                let table = i % 2;
                let expected = match i {
                    0 => Some(value(0, 1)),
                    1 | 2 => None,
                    3 | 4 => Some(value(i, 2)),
                    _ => Some(value(i, 0)),
                };
                assert_eq!(
                    session.get(table, &key(i)).expect("get"),
                    expected.as_ref().map(Vec::len),
                    "{engine}: key {i} of table {table}"
                );
                // The other table never held this key.
                assert_eq!(
                    session.get(1 - table, &key(i)).expect("get"),
                    None,
                    "{engine}: key {i}"
                );
            }
            // WiredTiger refuses empty keys: none can be found or deleted,
            // and a put of one is an error.
            assert_eq!(session.get(0, b"").expect("get"), None);
            write(session.as_mut(), &[(0, b"", None)]);
            let mut empty = Batch::new();
            empty.put(0, b"", b"v");
            let refused = session.write(&empty).expect_err("an empty key");
            assert!(refused.to_string().contains("empty key"), "{refused}");
            drop(session);

            let mut session = WiredTigerSession {
                store: store_of(store.as_ref()),
                handle: store_of(store.as_ref()).conn.session().expect("session"),
                cursors: vec![None; 2],
                rollback_wait_max: ROLLBACK_RETRY_WAIT_MAX,
            };
            assert_eq!(
                session.value(0, &key(0)).expect("value"),
                Some(value(0, 1)),
                "{engine}"
            );
            assert_eq!(
                session.value(1, &key(3)).expect("value"),
                Some(value(3, 2)),
                "{engine}"
            );
            assert_eq!(
                session.value(1, &key(5)).expect("value"),
                Some(value(5, 0)),
                "{engine}"
            );
            drop(session);
            store.close().expect("close");
        }
    }

    /// The store behind a `dyn Store` these tests opened.
    fn store_of(store: &dyn Store) -> &WiredTigerStore {
        // SAFETY: every store these tests open comes from `open`, which
        // boxes a `WiredTigerStore`; the cast keeps the borrow's lifetime.
        unsafe { &*(store as *const dyn Store).cast::<WiredTigerStore>() }
    }

    #[test]
    fn seek_lands_on_or_after_the_key_and_steps_forward() {
        // Goal: a seek finds exactly its key, lands on the next key when
        // its key is missing, counts the bytes of up to `steps` entries
        // from there, and stops at the end of the table. Method: keys
        // key00000, key00002, ... key00018 with values of known lengths.
        for engine in ENGINES {
            let dir = tempfile::tempdir().expect("tempdir");
            let store = open_store(engine, dir.path());
            let mut session = store.session().expect("session");
            assert_eq!(
                session.seek(0, &key(0), 3).expect("seek"),
                Seek::default(),
                "{engine}: empty table"
            );
            let mut batch = Batch::new();
            for i in (0..20).step_by(2) {
                batch.put(0, &key(i), &value(i, 0));
            }
            session.write(&batch).expect("write");
            let bytes = |from: usize, count: usize| -> u64 {
                (from..20)
                    .step_by(2)
                    .take(count)
                    .map(|i| (key(i).len() + value(i, 0).len()) as u64)
                    .sum()
            };

            let exact = session.seek(0, &key(4), 3).expect("seek");
            assert_eq!(
                exact,
                Seek {
                    found: true,
                    bytes: bytes(4, 3)
                },
                "{engine}: on the key"
            );
            let missing = session.seek(0, &key(5), 2).expect("seek");
            assert_eq!(
                missing,
                Seek {
                    found: false,
                    bytes: bytes(6, 2)
                },
                "{engine}: after the key"
            );
            let first = session.seek(0, b"a", 1).expect("seek");
            assert_eq!(
                first,
                Seek {
                    found: false,
                    bytes: bytes(0, 1)
                },
                "{engine}: before the first"
            );
            let past_end = session.seek(0, &key(16), 10).expect("seek");
            assert_eq!(
                past_end,
                Seek {
                    found: true,
                    bytes: bytes(16, 2)
                },
                "{engine}: steps past the end"
            );
            let beyond = session.seek(0, &key(19), 5).expect("seek");
            assert_eq!(beyond, Seek::default(), "{engine}: beyond the last key");
            let empty = session.seek(0, b"", 2).expect("seek");
            assert_eq!(
                empty,
                Seek {
                    found: false,
                    bytes: bytes(0, 2)
                },
                "{engine}: the empty key"
            );
            let no_steps = session.seek(0, &key(8), 0).expect("seek");
            assert_eq!(
                no_steps,
                Seek {
                    found: true,
                    bytes: 0
                },
                "{engine}: no steps"
            );
            // The other table is empty.
            assert_eq!(
                session.seek(1, &key(4), 3).expect("seek"),
                Seek::default(),
                "{engine}"
            );
        }
    }

    #[test]
    fn scans_see_every_entry_in_order_both_ways() {
        // Goal: a scan visits every entry once, in key order forward and in
        // reverse order backward, and stops when `visit` says so. Method:
        // value lengths grow with the key, so the bytes visited give the
        // order; deleted keys must not show.
        for engine in ENGINES {
            let dir = tempfile::tempdir().expect("tempdir");
            let store = open_store(engine, dir.path());
            let mut session = store.session().expect("session");
            let mut batch = Batch::new();
            for i in 0..300 {
                batch.put(0, &key(i), &vec![b'v'; i]);
            }
            session.write(&batch).expect("write");
            write(
                session.as_mut(),
                &[(0, &key(7), None), (0, &key(299), None)],
            );
            let expected: Vec<u64> = (0..299)
                .filter(|&i| i != 7)
                .map(|i| (key(i).len() + i) as u64)
                .collect();

            let mut seen = Vec::new();
            session
                .scan(0, true, &mut |bytes| {
                    seen.push(bytes);
                    true
                })
                .expect("scan");
            assert_eq!(seen, expected, "{engine}: forward");

            seen.clear();
            session
                .scan(0, false, &mut |bytes| {
                    seen.push(bytes);
                    true
                })
                .expect("scan");
            let reversed: Vec<u64> = expected.iter().rev().copied().collect();
            assert_eq!(seen, reversed, "{engine}: backward");

            seen.clear();
            session
                .scan(0, true, &mut |bytes| {
                    seen.push(bytes);
                    seen.len() < 3
                })
                .expect("scan");
            assert_eq!(seen, expected[..3], "{engine}: stopped after three");
            // A stopped scan leaves no position behind: the next starts over.
            let mut count = 0;
            session
                .scan(0, true, &mut |_| {
                    count += 1;
                    true
                })
                .expect("scan");
            assert_eq!(count, expected.len(), "{engine}: a second scan");
        }
    }

    #[test]
    fn operations_run_and_levels_are_not_supported() {
        // Goal: flush, checkpoint and the compactions run and report true,
        // the level compactions report false (WiredTiger has no levels),
        // waitforcompaction runs only on the LSM, the printouts say
        // something, and the data survives all of it. Method: enough writes
        // to fill more LSM chunks of the smallest size (512 KB) than a merge
        // takes at least, so that compact has chunks to flush and merge.
        for engine in ENGINES {
            let dir = tempfile::tempdir().expect("tempdir");
            let config = Config {
                write_buffer_size: CHUNK_SIZE_MIN as usize,
                ..config(engine)
            };
            let store = open(engine, &config, dir.path(), &specs()).expect("open");
            let mut session = store.session().expect("session");
            let count = 60_000;
            let mut batch = Batch::new();
            for i in 0..count {
                batch.put(0, &key(i), &[b'x'; 100]);
                if batch.ops().count() == 500 {
                    session.write(&batch).expect("write");
                    batch.clear();
                }
            }
            session.write(&batch).expect("write");
            let lsm = engine == Engine::WiredtigerLsm;
            let chunks_before = if lsm {
                store_of(store.as_ref()).lsm_shape().expect("shape").chunks
            } else {
                0
            };

            for op in [
                Benchmark::Flush,
                Benchmark::Checkpoint,
                Benchmark::Compact,
                Benchmark::CompactAll,
            ] {
                assert!(store.operation(op).expect("operation"), "{engine}: {op}");
            }
            for op in [
                Benchmark::Compact0,
                Benchmark::Compact1,
                Benchmark::ReadRandom,
            ] {
                assert!(!store.operation(op).expect("operation"), "{engine}: {op}");
            }
            assert_eq!(
                store.operation(Benchmark::WaitForCompaction).expect("wait"),
                lsm,
                "{engine}"
            );

            let stats = store
                .printout(Benchmark::Stats)
                .expect("stats")
                .expect("some stats");
            assert!(
                stats.contains("cache: maximum bytes configured: 67108864"),
                "{engine}: {stats}"
            );
            assert!(
                stats.contains("transaction: transaction checkpoints"),
                "{engine}: {stats}"
            );
            let shape = store.printout(Benchmark::Shape).expect("shape");
            let counts = store.shape_counts();
            if lsm {
                let shape = shape.expect("an LSM shape");
                assert!(shape.contains("chunks"), "{shape}");
                // The writes filled more chunks than merge_min (7), some of
                // which background merges may have merged already (more so
                // on a loaded machine). Compact flushes the in-memory one
                // and merges; how far WiredTiger's compact of an LSM tree
                // gets while its own merge threads run varies from run to
                // run (on a loaded machine it once left as many chunks as
                // before, and once, under the whole test suite, one more:
                // the flush that runs first makes the in-memory chunk one
                // more, which no merge had taken yet), so the test holds it
                // to what it always does: a merge has run, and no chunk
                // was added but the flushed one.
                let tree = store_of(store.as_ref()).lsm_shape().expect("shape");
                assert!(chunks_before > 1, "{chunks_before} chunks before compact");
                assert!(tree.generation_max >= 1, "{tree:?}");
                assert!(
                    tree.chunks <= chunks_before + 1,
                    "{tree:?} after {chunks_before} chunks"
                );
            } else {
                assert_eq!(shape, None);
            }
            // The time series never reads WiredTiger's statistics (see
            // `shape_counts`).
            assert_eq!(counts, ShapeCounts::default());
            for i in (0..count).step_by(997) {
                assert_eq!(
                    session.get(0, &key(i)).expect("get"),
                    Some(100),
                    "{engine}: key {i}"
                );
            }
            assert_eq!(session.get(0, &key(count)).expect("get"), None);
            drop(session);
            store.close().expect("close");
        }
    }

    #[test]
    fn close_then_reopen_keeps_the_data() {
        // Goal: data survives a clean close, and a store dropped without
        // close (its connection closes in drop) reopens with its data.
        // Method: write, close or drop, reopen the directory, read back.
        for engine in ENGINES {
            let dir = tempfile::tempdir().expect("tempdir");
            let store = open_store(engine, dir.path());
            let mut session = store.session().expect("session");
            write(
                session.as_mut(),
                &[(0, b"kept", Some(b"one")), (1, b"also", Some(b"two!"))],
            );
            drop(session);
            store.close().expect("close");

            let store = open_store(engine, dir.path());
            let mut session = store.session().expect("session");
            assert_eq!(session.get(0, b"kept").expect("get"), Some(3), "{engine}");
            assert_eq!(session.get(1, b"also").expect("get"), Some(4), "{engine}");
            write(session.as_mut(), &[(0, b"later", Some(b"three"))]);
            drop(session);
            drop(store);

            let store = open_store(engine, dir.path());
            let mut session = store.session().expect("session");
            assert_eq!(session.get(0, b"later").expect("get"), Some(5), "{engine}");
            assert_eq!(session.get(0, b"kept").expect("get"), Some(3), "{engine}");
        }
    }

    #[test]
    fn threads_with_their_own_sessions_read_and_write_concurrently() {
        // Goal: several threads, each with its own session, write and read
        // at once without losing a write or seeing a torn batch. Method:
        // each thread writes its own keys in batches of ten across both
        // tables (a batch puts the same value length in both), and reads
        // keys of the others as it goes: a key in one table must have its
        // twin in the other.
        for engine in ENGINES {
            let dir = tempfile::tempdir().expect("tempdir");
            let store = open_store(engine, dir.path());
            let threads = 4;
            let per_thread = 1000;
            std::thread::scope(|scope| {
                for t in 0..threads {
                    let store = store.as_ref();
                    scope.spawn(move || {
                        let mut session = store.session().expect("session");
                        let mut batch = Batch::new();
                        for i in 0..per_thread {
                            let k = key(t * per_thread + i);
                            let v = value(i, 0);
                            batch.put(0, &k, &v);
                            batch.put(1, &k, &v);
                            if i % 10 == 9 {
                                session.write(&batch).expect("write");
                                batch.clear();
                            }
                            let other = key(((t + 1) % threads) * per_thread + i);
                            let a = session.get(0, &other).expect("get");
                            let b = session.get(1, &other).expect("get");
                            if let (Some(a), Some(b)) = (a, b) {
                                assert_eq!(a, b, "{engine}: twins differ");
                            }
                            if a.is_some() && b.is_none() {
                                // Table 1 is read after table 0, so it can
                                // only have gained entries since.
                                panic!("{engine}: a batch was seen in half");
                            }
                        }
                    });
                }
            });
            let mut session = store.session().expect("session");
            for t in 0..threads {
                for i in 0..per_thread {
                    let k = key(t * per_thread + i);
                    let expected = Some(value(i, 0).len());
                    assert_eq!(
                        session.get(0, &k).expect("get"),
                        expected,
                        "{engine}: {t}/{i}"
                    );
                    assert_eq!(
                        session.get(1, &k).expect("get"),
                        expected,
                        "{engine}: {t}/{i}"
                    );
                }
            }
            let mut count = 0;
            session
                .scan(1, true, &mut |_| {
                    count += 1;
                    true
                })
                .expect("scan");
            assert_eq!(count, threads * per_thread, "{engine}");
        }
    }

    #[test]
    fn a_write_conflict_is_retried_then_reported() {
        // Goal: a batch that collides with another transaction on the same
        // key (WiredTiger answers WT_ROLLBACK) is retried, reported with
        // WiredTiger's words once the retries run out without leaving half
        // of it applied, and succeeds once the other transaction is gone.
        // Method: one session holds an uncommitted put of a key while
        // another session writes a batch holding it.
        for engine in ENGINES {
            let dir = tempfile::tempdir().expect("tempdir");
            let store = open_store(engine, dir.path());
            let inner = store_of(store.as_ref());
            let mut holder = WiredTigerSession {
                store: inner,
                handle: inner.conn.session().expect("session"),
                cursors: vec![None; 2],
                rollback_wait_max: ROLLBACK_RETRY_WAIT_MAX,
            };
            // SAFETY: the holder's session is open and used by this thread.
            let begun = unsafe { ffi::spinney_wt_begin(holder.handle.ptr.as_ptr()) };
            assert_eq!(begun, 0);
            let held = Op::Put {
                table: 0,
                key: b"contended",
                value: b"held",
            };
            holder.apply_one(held).expect("the held put");

            // A batch of two runs in an explicit transaction, which gets the
            // conflict back. (A single put would not: WiredTiger retries a
            // conflicting auto-commit write itself, until the holder ends.)
            let mut other = WiredTigerSession {
                store: inner,
                handle: inner.conn.session().expect("session"),
                cursors: vec![None; 2],
                rollback_wait_max: Duration::from_millis(200),
            };
            let mut batch = Batch::new();
            batch.put(1, b"free", b"x");
            batch.put(0, b"contended", b"other");
            let error = other.write(&batch).expect_err(engine.name()).to_string();
            assert!(error.contains("WT_ROLLBACK"), "{engine}: {error}");
            assert!(error.contains(" times over 0.2 s)"), "{error}");
            assert_eq!(
                other.get(1, b"free").expect("get"),
                None,
                "{engine}: no half batch"
            );

            // SAFETY: a transaction is running in the holder's session.
            let rolled_back = unsafe { ffi::spinney_wt_rollback(holder.handle.ptr.as_ptr()) };
            assert_eq!(rolled_back, 0);
            other.write(&batch).expect("no conflict left");
            assert_eq!(
                other.get(0, b"contended").expect("get"),
                Some(5),
                "{engine}"
            );
            assert_eq!(other.get(1, b"free").expect("get"), Some(1), "{engine}");
        }
    }

    #[test]
    fn overlapping_batches_of_threads_stay_whole() {
        // Goal: threads whose batches write the same keys never leave a
        // batch half applied, whether or not their transactions collide.
        // Method: four threads write overlapping keys, each batch putting
        // one value length (the thread's) into both tables; at the end each
        // key must hold the same thread's value in both.
        for engine in ENGINES {
            let dir = tempfile::tempdir().expect("tempdir");
            let store = open_store(engine, dir.path());
            std::thread::scope(|scope| {
                for t in 0..4usize {
                    let store = store.as_ref();
                    scope.spawn(move || {
                        let mut session = store.session().expect("session");
                        let mut batch = Batch::new();
                        for round in 0..200 {
                            batch.clear();
                            for j in 0..10 {
                                let k = key((round * 7 + j * 13 + t) % 50);
                                batch.put(0, &k, &vec![b't'; 10 + t]);
                                batch.put(1, &k, &vec![b't'; 10 + t]);
                            }
                            session.write(&batch).expect("a batch");
                        }
                    });
                }
            });
            let mut session = store.session().expect("session");
            for i in 0..50 {
                let a = session.get(0, &key(i)).expect("get");
                assert!(a.is_some(), "{engine}: key {i}");
                assert_eq!(
                    a,
                    session.get(1, &key(i)).expect("get"),
                    "{engine}: key {i}"
                );
            }
        }
    }

    #[test]
    fn a_table_of_the_other_kind_is_a_usage_error() {
        // Goal: reopening a directory with the other WiredTiger engine is
        // refused with a message naming the right one, not silently run.
        let dir = tempfile::tempdir().expect("tempdir");
        open_store(Engine::WiredtigerBtree, dir.path())
            .close()
            .expect("close");
        match open(
            Engine::WiredtigerLsm,
            &config(Engine::WiredtigerLsm),
            dir.path(),
            &specs(),
        ) {
            Err(BenchError::Config(m)) => {
                assert!(m.contains("--engine=wiredtiger-btree"), "{m}")
            }
            Err(e) => panic!("wrong error: {e}"),
            Ok(_) => panic!("a B-tree table opened as an LSM table"),
        }
    }

    #[test]
    fn options_wiredtiger_cannot_honour_are_usage_errors() {
        // Goal: options outside what WiredTiger takes are refused before it
        // sees them, naming the flag.
        let dir = tempfile::tempdir().expect("tempdir");
        let refused =
            |config: Config, flag: &str| match open(config.engine, &config, dir.path(), &specs()) {
                Err(BenchError::Config(m)) => assert!(m.contains(flag), "{flag}: {m}"),
                Err(e) => panic!("{flag}: wrong error: {e}"),
                Ok(_) => panic!("{flag}: accepted"),
            };
        let lsm = config(Engine::WiredtigerLsm);
        refused(
            Config {
                compression: Compression::Lz4,
                ..config(Engine::WiredtigerBtree)
            },
            "--compression_type=lz4",
        );
        refused(
            Config {
                compression: Compression::Zstd,
                ..lsm.clone()
            },
            "--compression_type=zstd",
        );
        refused(
            Config {
                write_buffer_size: 4096,
                ..lsm.clone()
            },
            "--write_buffer_size=4096",
        );
        refused(
            Config {
                bloom_bits: 1,
                ..lsm.clone()
            },
            "--bloom_bits=1",
        );
        refused(
            Config {
                cache_size: 1000,
                ..lsm.clone()
            },
            "--cache_size=1000",
        );
        // Nothing was created by the refusals.
        assert!(!dir.path().join("WiredTiger").exists());
        // bloom_bits 0 turns the filters off rather than failing.
        let config = Config {
            bloom_bits: 0,
            ..lsm
        };
        let text =
            table_config(Engine::WiredtigerLsm, &config, &TableSpec::named("t")).expect("config");
        assert!(text.contains("bloom=false"), "{text}");
    }

    #[test]
    fn a_refused_open_says_what_wiredtiger_said() {
        // Goal: a WiredTiger error names the call, WiredTiger's words and
        // code, and the detail its event handler gave. Method: a database
        // "directory" that is a regular file.
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("not-a-directory");
        std::fs::write(&file, b"x").expect("write");
        match open(
            Engine::WiredtigerBtree,
            &config(Engine::WiredtigerBtree),
            &file,
            &specs(),
        ) {
            Err(BenchError::Engine { context, error }) => {
                let text = error.to_string();
                assert!(context.contains("not-a-directory"), "{context}");
                assert!(
                    text.starts_with("wiredtiger-btree: wiredtiger_open with"),
                    "{text}"
                );
                assert!(text.contains("WiredTiger said:"), "{text}");
                assert!(text.contains(" ("), "{text}");
            }
            Err(e) => panic!("wrong error: {e}"),
            Ok(_) => panic!("opened a database in a file"),
        }
    }

    #[test]
    fn describe_names_the_settings() {
        // Goal: the header line names what the adapter set.
        let lsm = describe(&Config {
            durability: Durability::Full,
            ..config(Engine::WiredtigerLsm)
        });
        assert_eq!(
            lsm,
            "wiredtiger lsm table, bloom 10 bits/key (8 hashes), chunk 8 MB, cache 64 MB, log on, synced at each commit, compression none, eviction threads up to 2, lsm workers 2 + manager"
        );
        let btree = describe(&Config {
            durability: Durability::Off,
            background_threads: 0,
            ..config(Engine::WiredtigerBtree)
        });
        assert!(
            btree.starts_with("wiredtiger btree table (row store"),
            "{btree}"
        );
        assert!(
            btree.contains("log on, buffered and written within about 50 ms, not synced"),
            "{btree}"
        );
        assert!(btree.contains("eviction threads up to 1"), "{btree}");
        assert_eq!(lsm_threads(0), 3);
        assert_eq!(lsm_threads(5), 6);
        assert_eq!(lsm_threads(100), 20);
        let text = connection_config(Engine::WiredtigerLsm, &config(Engine::WiredtigerLsm))
            .expect("config");
        assert_eq!(
            text,
            "create,cache_size=67108864,session_max=100,log=(enabled=true),transaction_sync=(enabled=false),eviction=(threads_min=1,threads_max=2),statistics=(fast),lsm_manager=(worker_thread_max=3)"
        );
    }
}
