//! RocksDB as a `Store`, through its C API (Debian's librocksdb-dev 7.8,
//! linked as the system's `librocksdb.so`; the few functions used are
//! declared by hand in `ffi.rs`).
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
//! (`shim.cc`: the 7.8 C API has no `CompactFiles`, and its
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

mod config;
mod ffi;
mod session;
mod stats;
#[cfg(test)]
mod tests;

use std::ffi::{c_char, c_int, CStr, CString};
use std::path::Path;
use std::ptr;
use std::time::Duration;

use spinney::Durability;

use super::leveldb_shape::{c_path, check, owned};
use super::{EngineError, EngineResult, LsmShape, Session, Store, TableSpec};
use crate::{BenchError, Benchmark, Config, Engine, ShapeCounts};
pub(crate) use config::describe;
use config::{family_options_of, FamilySettings, Settings};
use ffi::Rocksdb;
use session::RocksSession;

/// The engine this build's RocksDB stands behind: Debian's 7.8, or the
/// current one librocksdb-sys bundles. The adapter is the same.
#[cfg(feature = "rocksdb")]
const ENGINE: Engine = Engine::Rocksdb;
#[cfg(not(feature = "rocksdb"))]
const ENGINE: Engine = Engine::RocksdbCurrent;

/// RocksDB's `PerfLevel::kDisable` (rocksdb/perf_level.h).
const PERF_LEVEL_DISABLE: c_int = 1;

owned!(
    Rocksdb;
    /// An open database; closing waits for its running background jobs.
    Db,
    ffi::rocksdb_t,
    ffi::rocksdb_close
);
owned!(
    Rocksdb;
    /// A column family handle; destroyed before the database closes.
    ColumnFamily,
    ffi::rocksdb_column_family_handle_t,
    ffi::rocksdb_column_family_handle_destroy
);
owned!(
    Rocksdb;
    Options,
    ffi::rocksdb_options_t,
    ffi::rocksdb_options_destroy
);
owned!(
    Rocksdb;
    TableOptions,
    ffi::rocksdb_block_based_table_options_t,
    ffi::rocksdb_block_based_options_destroy
);
owned!(Rocksdb; Cache, ffi::rocksdb_cache_t, ffi::rocksdb_cache_destroy);
owned!(
    Rocksdb;
    /// The wrapper of the process's default `Env` (destroying it leaves
    /// the `Env` itself alone).
    Env,
    ffi::rocksdb_env_t,
    ffi::rocksdb_env_destroy
);
owned!(
    Rocksdb;
    WriteOptions,
    ffi::rocksdb_writeoptions_t,
    ffi::rocksdb_writeoptions_destroy
);
owned!(
    Rocksdb;
    ReadOptions,
    ffi::rocksdb_readoptions_t,
    ffi::rocksdb_readoptions_destroy
);
owned!(
    Rocksdb;
    FlushOptions,
    ffi::rocksdb_flushoptions_t,
    ffi::rocksdb_flushoptions_destroy
);
owned!(
    Rocksdb;
    WriteBatch,
    ffi::rocksdb_writebatch_t,
    ffi::rocksdb_writebatch_destroy
);
owned!(
    Rocksdb;
    /// The handle of the perf context of the thread that made it.
    PerfContext,
    ffi::rocksdb_perfcontext_t,
    ffi::rocksdb_perfcontext_destroy
);

/// A RocksDB error saying `message`, in the lab's terms.
fn peer(message: String) -> EngineError {
    EngineError::peer(ENGINE, message)
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
        let path = c_path(dir)?;
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
            ffi::rocksdb_options_set_allow_mmap_reads(db_options.ptr(), u8::from(s.mmap_reads));
            ffi::rocksdb_options_set_use_direct_reads(db_options.ptr(), u8::from(s.direct_reads));
            ffi::rocksdb_options_set_use_direct_io_for_flush_and_compaction(
                db_options.ptr(),
                u8::from(s.direct_writes),
            );
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
        check::<Rocksdb>(err, "open the database")?;
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
            check::<Rocksdb>(err, "flush")?;
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
                    check::<Rocksdb>(err, &what)?;
                    break;
                }
                if outcome == ffi::COMPACTION_BUSY && attempts < BUSY_ATTEMPTS {
                    // The message only says which file was busy.
                    let _ = check::<Rocksdb>(err, &what);
                    self.wait_for_compaction()?;
                    continue;
                }
                check::<Rocksdb>(err, &what)?;
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
    check::<Rocksdb>(err, "list the column families")?;
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
        Ok(Box::new(RocksSession::new(self)?))
    }

    fn wait_for_background(&self) -> EngineResult<()> {
        self.wait_for_compaction()
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
