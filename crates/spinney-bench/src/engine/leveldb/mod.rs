//! LevelDB as a `Store`, through its C API (Debian's libleveldb-dev 1.23,
//! linked as the system's `libleveldb.so`; the few functions used are
//! declared by hand in `ffi.rs`).
//!
//! LevelDB has one key space and no column families. With one table, its
//! keys are stored as they are. With several, each stored key starts with
//! one byte, the table's index (so at most 256 tables), which reads strip
//! again; seeks and scans of a table stay within its prefix. The layout
//! therefore depends on the list of tables, which the adapter writes to
//! `TABLES_FILE` beside LevelDB's files and checks on every later open
//! (LevelDB leaves files it does not know alone).
//!
//! What the adapter sets (the lab's fair budget), and nothing else:
//! - block cache: `leveldb_cache_create_lru` of `--cache_size` bytes;
//! - bloom filter: LevelDB's bloom policy of `--bloom_bits` bits per key
//!   (0 for none). LevelDB has one filter policy for the whole database,
//!   so tables whose `TableSpec`s ask for different bits are refused;
//! - compression: none (LevelDB's default is snappy); `--compression_type`
//!   lz4 or zstd is a usage error, as LevelDB 1.23 has only snappy;
//! - `write_buffer_size`: `--write_buffer_size` bytes (LevelDB clips it to
//!   64 KiB..1 GiB); memtables: LevelDB always has two, the active one and
//!   one being flushed, so `--max_write_buffer_number` other than 2 is a
//!   usage error;
//! - `max_file_size`: spinney's SST size (`CompactionOptions::leveled`'s
//!   `target_file_size`, 8 MiB), the nearest LevelDB offers to spinney's
//!   tree shape: its L1 of 10 MiB, ×10 per level, is compiled in;
//! - background threads: none to set. LevelDB's default `Env` runs every
//!   flush and compaction of the process on one background thread;
//!   `--background_threads` does not change it;
//! - durability (`leveldb_writeoptions_set_sync`): `Durability::Normal` is
//!   the log with `sync=false`, `Full` (`--sync=1`) is `sync=true` (an
//!   fdatasync of the log per commit group), and `Off` (`--disable_wal=1`)
//!   is the same as `Normal`: LevelDB cannot write without its log. With
//!   `sync=false` every commit group still reaches the OS before the write
//!   returns: `log::Writer::AddRecord` appends to the log file and then
//!   calls `Flush()`, which on POSIX is a `write()` of the file's buffer
//!   (db/log_writer.cc, util/env_posix.cc; checked with strace: one
//!   `write` on the .log file per commit, no `fdatasync`).
//!
//! LevelDB's defaults kept, the ones that shape the figures: leveled
//! compaction only, 7 levels, L1 of 10 MiB and ×10 per level (compiled
//! in), L0 compaction at 4 files, writes slowed at 8
//! and stopped at 12 (compiled in), `max_open_files` 1000 (the table cache;
//! index and filter blocks live there, outside the block cache), 4 KiB
//! blocks, no checksum verification on reads, a flushed memtable placed up
//! to level 2 when it overlaps nothing there.
//!
//! Operations: `flush` is `leveldb_compact_range` over the empty key
//! alone: `DBImpl::CompactRange` begins by writing the memtable out and
//! waiting for it (`TEST_CompactMemTable`, the same memtable compaction as
//! LevelDB's own), then compacts only the files holding the empty key,
//! which the lab never writes. `compact` and `compactall` are a full-range
//! `leveldb_compact_range`: every level merged into the lowest holding
//! data, one sorted run. `compact0`, `compact1` and `waitforcompaction`
//! are not supported: the C API has no per-level compaction and no way to
//! wait for background work. `checkpoint` is not supported: LevelDB has
//! none. `leveldb_compact_range` returns no status; a failure shows in
//! the next write, which LevelDB then refuses.
//!
//! Thread-safety: LevelDB's `DB` and cache are thread-safe and the options
//! are only read once the database is open; the `Store` is shared by
//! every thread. A session belongs to one thread and owns its write batch,
//! read options and key buffer.

mod ffi;
mod session;
#[cfg(test)]
mod tests;

use std::ffi::{c_char, c_int, CStr, CString};
use std::path::Path;
use std::ptr;

use spinney::{Compression, Durability};

use super::leveldb_shape::{c_path, check, owned, take_string};
use super::{EngineError, EngineResult, Session, Store, TableSpec};
use crate::{BenchError, Benchmark, Config, Engine, ShapeCounts};
use ffi::Leveldb;
use session::LevelSession;

/// The file beside LevelDB's own that names the run's tables, one a line,
/// in order: the key layout depends on them.
const TABLES_FILE: &str = "spinney-bench-tables";

/// The most tables one database holds: their index is a one-byte prefix.
const TABLES_MAX: usize = 256;

owned!(
    Leveldb;
    /// An open database; closing waits for the running compaction.
    Db,
    ffi::leveldb_t,
    ffi::leveldb_close
);
owned!(
    Leveldb;
    Options,
    ffi::leveldb_options_t,
    ffi::leveldb_options_destroy
);
owned!(Leveldb; Cache, ffi::leveldb_cache_t, ffi::leveldb_cache_destroy);
owned!(
    Leveldb;
    /// A filter policy: the options only point at it, so it must outlive
    /// the database.
    FilterPolicy,
    ffi::leveldb_filterpolicy_t,
    ffi::leveldb_filterpolicy_destroy
);
owned!(
    Leveldb;
    WriteOptions,
    ffi::leveldb_writeoptions_t,
    ffi::leveldb_writeoptions_destroy
);
owned!(
    Leveldb;
    ReadOptions,
    ffi::leveldb_readoptions_t,
    ffi::leveldb_readoptions_destroy
);
owned!(
    Leveldb;
    WriteBatch,
    ffi::leveldb_writebatch_t,
    ffi::leveldb_writebatch_destroy
);

/// A LevelDB error saying `message`, in the lab's terms.
fn peer(message: String) -> EngineError {
    EngineError::peer(Engine::Leveldb, message)
}

/// The stored form of `key` of `table` in `out`: the key itself, after
/// the table's prefix byte when the tables share the key space.
fn encode(prefixed: bool, table: usize, key: &[u8], out: &mut Vec<u8>) {
    out.clear();
    if prefixed {
        // Fits: open refuses more than TABLES_MAX tables.
        out.push(table as u8);
    }
    out.extend_from_slice(key);
}

/// The library's version, as it reports it.
pub(crate) fn version() -> String {
    // SAFETY: plain calls without arguments.
    let (major, minor) = unsafe { (ffi::leveldb_major_version(), ffi::leveldb_minor_version()) };
    format!("{major}.{minor}")
}

/// LevelDB's `max_file_size`: spinney's SST size.
fn file_bytes() -> usize {
    usize::try_from(spinney::CompactionOptions::leveled().target_file_size).unwrap_or(usize::MAX)
}

/// One line naming what the adapter sets for `config`.
pub(crate) fn describe(config: &Config) -> String {
    let bloom = if config.bloom_bits == 0 {
        "no bloom filter".to_string()
    } else {
        format!("bloom filter {} bits/key", config.bloom_bits)
    };
    let compression = match config.compression {
        Compression::None => "compression none".to_string(),
        other => format!(
            "compression {} (refused: LevelDB {} has only snappy)",
            other.name(),
            version()
        ),
    };
    let durability = match config.durability {
        Durability::Full => "log on, sync=true",
        Durability::Normal => "log on, sync=false (each commit written to the OS)",
        Durability::Off => {
            "log on, sync=false (LevelDB cannot disable its log: --disable_wal=1 is the same as 0)"
        }
    };
    format!(
        "leveled LSM, one key space (a one-byte prefix per table when there are several); LRU block cache {:.1} MB, {bloom}, {compression}, write_buffer_size {:.1} MB, 2 memtables (LevelDB's fixed), max_file_size {} MiB, one background thread (LevelDB's fixed), {durability}; LevelDB's defaults otherwise",
        config.cache_size as f64 / 1_048_576.0,
        config.write_buffer_size as f64 / 1_048_576.0,
        file_bytes() >> 20,
    )
}

/// Opens (creating if need be) the LevelDB database in `dir` holding
/// `tables`.
pub(crate) fn open(
    config: &Config,
    dir: &Path,
    tables: &[TableSpec],
) -> Result<Box<dyn Store>, BenchError> {
    LevelStore::open(config, dir, tables).map(|s| Box::new(s) as Box<dyn Store>)
}

/// An open LevelDB database holding the run's tables.
pub(crate) struct LevelStore {
    // Fields drop in order: the database first (closing it), then what it
    // was opened with, which it points at until then.
    db: Db,
    write_options: WriteOptions,
    /// The number of tables.
    tables: usize,
    /// True when there are several tables, each a one-byte key prefix.
    prefixed: bool,
    _options: Options,
    _filter: Option<FilterPolicy>,
    _cache: Cache,
}

// SAFETY: LevelDB's DB and cache are made to be used from any thread at
// once, and the options and filter policy are only read once the database
// is open. Nothing in the store is tied to the thread that made it.
unsafe impl Send for LevelStore {}
// SAFETY: as for Send: every call made through `&LevelStore` is one LevelDB
// documents as thread-safe.
unsafe impl Sync for LevelStore {}

impl LevelStore {
    fn open(config: &Config, dir: &Path, specs: &[TableSpec]) -> Result<LevelStore, BenchError> {
        if config.compression != Compression::None {
            return Err(BenchError::Config(format!(
                "--compression_type={}: LevelDB {} compresses only with snappy; run leveldb with --compression_type=none",
                config.compression.name(),
                version()
            )));
        }
        if config.write_buffers != 2 {
            return Err(BenchError::Config(format!(
                "--max_write_buffer_number={}: LevelDB always has 2 memtables (the active one and one being flushed); run leveldb with --max_write_buffer_number=2",
                config.write_buffers
            )));
        }
        if specs.len() > TABLES_MAX {
            return Err(BenchError::Config(format!(
                "LevelDB holds at most {TABLES_MAX} tables here (each is a one-byte key prefix); {} were given",
                specs.len()
            )));
        }
        let bloom_bits = one_bloom_bits(config, specs)?;
        check_tables_file(dir, specs)?;
        let path = c_path(dir)?;
        let store = Self::open_db(config, &path, specs.len(), bloom_bits).map_err(
            BenchError::engine(format!("open LevelDB in {}", dir.display())),
        )?;
        let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
        let file = dir.join(TABLES_FILE);
        if !file.exists() {
            std::fs::write(&file, names.join("\n"))
                .map_err(BenchError::io(format!("write {}", file.display())))?;
        }
        Ok(store)
    }

    fn open_db(
        config: &Config,
        path: &CStr,
        tables: usize,
        bloom_bits: u32,
    ) -> EngineResult<LevelStore> {
        let cache_bytes = usize::try_from(config.cache_size).unwrap_or(usize::MAX);
        // SAFETY: a plain constructor.
        let cache = Cache::new(
            unsafe { ffi::leveldb_cache_create_lru(cache_bytes) },
            "create the block cache",
        )?;
        let filter = if bloom_bits == 0 {
            None
        } else {
            let bits = c_int::try_from(bloom_bits).unwrap_or(c_int::MAX);
            // SAFETY: a plain constructor.
            let raw = unsafe { ffi::leveldb_filterpolicy_create_bloom(bits) };
            Some(FilterPolicy::new(raw, "create the bloom filter policy")?)
        };
        // SAFETY: a plain constructor.
        let options = Options::new(unsafe { ffi::leveldb_options_create() }, "create options")?;
        // SAFETY: the options are live; the cache and filter policy they
        // point at outlive the database (the store drops them after it).
        unsafe {
            ffi::leveldb_options_set_create_if_missing(options.ptr(), 1);
            ffi::leveldb_options_set_cache(options.ptr(), cache.ptr());
            if let Some(filter) = &filter {
                ffi::leveldb_options_set_filter_policy(options.ptr(), filter.ptr());
            }
            ffi::leveldb_options_set_write_buffer_size(options.ptr(), config.write_buffer_size);
            ffi::leveldb_options_set_max_file_size(options.ptr(), file_bytes());
            ffi::leveldb_options_set_compression(options.ptr(), ffi::NO_COMPRESSION);
        }
        let mut err = ptr::null_mut();
        // SAFETY: the options and path are live for the call.
        let raw = unsafe { ffi::leveldb_open(options.ptr(), path.as_ptr(), &mut err) };
        check::<Leveldb>(err, "open the database")?;
        let db = Db::new(raw, "open the database")?;
        // SAFETY: a plain constructor, then a setter on the live options.
        let write_options = WriteOptions::new(
            unsafe { ffi::leveldb_writeoptions_create() },
            "create write options",
        )?;
        // SAFETY: `write_options` is live.
        unsafe {
            ffi::leveldb_writeoptions_set_sync(
                write_options.ptr(),
                u8::from(config.durability == Durability::Full),
            )
        };
        Ok(LevelStore {
            db,
            write_options,
            tables,
            prefixed: tables > 1,
            _options: options,
            _filter: filter,
            _cache: cache,
        })
    }

    fn check_table(&self, table: usize) -> EngineResult<()> {
        if table < self.tables {
            Ok(())
        } else {
            Err(peer(format!(
                "no table number {table} (the store has {})",
                self.tables
            )))
        }
    }

    /// A property of the database; `None` when LevelDB does not know it.
    fn property(&self, name: &CStr) -> Option<String> {
        // SAFETY: the database is live, `name` is a C string.
        let value = unsafe { ffi::leveldb_property_value(self.db.ptr(), name.as_ptr()) };
        take_string::<Leveldb>(value)
    }

    fn files_at_level(&self, level: usize) -> Option<usize> {
        let name = CString::new(format!("leveldb.num-files-at-level{level}")).ok()?;
        self.property(&name)?.trim().parse().ok()
    }

    /// Compacts the user keys `[start, limit]`, each `None` for that end
    /// of the key space.
    fn compact_range(&self, start: Option<&[u8]>, limit: Option<&[u8]>) {
        let raw = |key: Option<&[u8]>| match key {
            Some(k) => (k.as_ptr().cast::<c_char>(), k.len()),
            None => (ptr::null(), 0),
        };
        let (start, start_len) = raw(start);
        let (limit, limit_len) = raw(limit);
        // SAFETY: the database is live; each bound is NULL (open end) or
        // points at its length of bytes, read during the call only.
        unsafe { ffi::leveldb_compact_range(self.db.ptr(), start, start_len, limit, limit_len) }
    }
}

/// The bloom bits of the database: the tables' (each its own or the
/// configuration's), which must agree, LevelDB having one filter policy.
fn one_bloom_bits(config: &Config, specs: &[TableSpec]) -> Result<u32, BenchError> {
    let bits_of = |spec: &TableSpec| spec.bloom_bits.unwrap_or(config.bloom_bits);
    let bits = specs.first().map_or(config.bloom_bits, bits_of);
    if let Some(other) = specs.iter().find(|s| bits_of(s) != bits) {
        return Err(BenchError::Config(format!(
            "LevelDB has one bloom filter policy for the whole database, but the table '{}' asks for {} bits per key and '{}' for {}",
            specs.first().map_or("", |s| s.name.as_str()),
            bits,
            other.name,
            bits_of(other)
        )));
    }
    Ok(bits)
}

/// Refuses to open a database whose key layout was made for other tables:
/// its tables file names another list, or it has none (made outside the
/// lab, so plain keys) and the run has several tables.
fn check_tables_file(dir: &Path, specs: &[TableSpec]) -> Result<(), BenchError> {
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    let file = dir.join(TABLES_FILE);
    match std::fs::read_to_string(&file) {
        Ok(text) => {
            let found: Vec<&str> = text.split('\n').collect();
            if found != names {
                return Err(BenchError::Config(format!(
                    "the LevelDB database in {} holds the tables [{}], but this run opens [{}]; the key layout (a prefix byte per table when there are several) depends on the list, so open it with the same tables or delete it",
                    dir.display(),
                    found.join(", "),
                    names.join(", ")
                )));
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if dir.join("CURRENT").exists() && names.len() > 1 {
                return Err(BenchError::Config(format!(
                    "the LevelDB database in {} was not made by the lab (it has no {TABLES_FILE} file), so its keys carry no table prefix; it can only be opened with one table",
                    dir.display()
                )));
            }
            Ok(())
        }
        Err(e) => Err(BenchError::io(format!("read {}", file.display()))(e)),
    }
}

impl Store for LevelStore {
    /// By deleting each key of the range (the engine has none).
    fn deletes_ranges(&self) -> bool {
        true
    }

    fn session(&self) -> EngineResult<Box<dyn Session + '_>> {
        Ok(Box::new(LevelSession::new(self)?))
    }

    fn operation(&self, op: Benchmark) -> EngineResult<bool> {
        match op {
            // The empty key: the memtable is written out first, and no
            // file holds that key (see the header).
            Benchmark::Flush => self.compact_range(Some(b""), Some(b"")),
            Benchmark::Compact | Benchmark::CompactAll => self.compact_range(None, None),
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn printout(&self, what: Benchmark) -> EngineResult<Option<String>> {
        match what {
            Benchmark::Stats | Benchmark::Shape => self
                .property(c"leveldb.stats")
                .map(Some)
                .ok_or_else(|| peer("LevelDB does not know the property leveldb.stats".into())),
            _ => Ok(None),
        }
    }

    fn shape_counts(&self) -> ShapeCounts {
        // LevelDB says nothing of its memtables; the levels hold every
        // table's files.
        ShapeCounts {
            l0_runs: self.files_at_level(0).unwrap_or(0),
            // The property is unknown past the last level, which ends the sum.
            sst_files: (0..).map_while(|level| self.files_at_level(level)).sum(),
            ..ShapeCounts::default()
        }
    }

    fn close(self: Box<Self>) -> EngineResult<()> {
        // Dropping closes the database, which waits for the running
        // compaction, then frees what it was opened with.
        drop(self);
        Ok(())
    }
}
