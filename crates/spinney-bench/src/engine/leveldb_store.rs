//! LevelDB as a `Store`, through its C API (Debian's libleveldb-dev 1.23,
//! linked as the system's `libleveldb.so`; the few functions used are
//! declared by hand in `ffi` below).
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

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::marker::PhantomData;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr::{self, NonNull};

use spinney::{Compression, Durability};

use super::{Batch, Engine, EngineError, EngineResult, Op, Seek, Session, Store, TableSpec};
use crate::{BenchError, Benchmark, Config, ShapeCounts};

/// The file beside LevelDB's own that names the run's tables, one a line,
/// in order: the key layout depends on them.
const TABLES_FILE: &str = "spinney-bench-tables";

/// The most tables one database holds: their index is a one-byte prefix.
const TABLES_MAX: usize = 256;

/// The declarations of the C API functions the adapter calls, from
/// `/usr/include/leveldb/c.h` of 1.23.
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
        pub fn leveldb_filterpolicy_create_bloom(
            bits_per_key: c_int,
        ) -> *mut leveldb_filterpolicy_t;
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
        pub fn leveldb_iter_key(iter: *const leveldb_iterator_t, klen: *mut usize)
            -> *const c_char;
        pub fn leveldb_iter_value(
            iter: *const leveldb_iterator_t,
            vlen: *mut usize,
        ) -> *const c_char;
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
    /// An open database; closing waits for the running compaction.
    Db,
    ffi::leveldb_t,
    ffi::leveldb_close
);
owned!(
    Options,
    ffi::leveldb_options_t,
    ffi::leveldb_options_destroy
);
owned!(Cache, ffi::leveldb_cache_t, ffi::leveldb_cache_destroy);
owned!(
    /// A filter policy: the options only point at it, so it must outlive
    /// the database.
    FilterPolicy,
    ffi::leveldb_filterpolicy_t,
    ffi::leveldb_filterpolicy_destroy
);
owned!(
    WriteOptions,
    ffi::leveldb_writeoptions_t,
    ffi::leveldb_writeoptions_destroy
);
owned!(
    ReadOptions,
    ffi::leveldb_readoptions_t,
    ffi::leveldb_readoptions_destroy
);
owned!(
    WriteBatch,
    ffi::leveldb_writebatch_t,
    ffi::leveldb_writebatch_destroy
);

/// A LevelDB error saying `message`, in the lab's terms.
fn peer(message: String) -> EngineError {
    EngineError::peer(Engine::Leveldb, message)
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
    unsafe { ffi::leveldb_free(err.cast::<c_void>()) };
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
        let path = CString::new(dir.as_os_str().as_bytes()).map_err(|_| {
            BenchError::Config(format!("the path {} holds a NUL byte", dir.display()))
        })?;
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
        check(err, "open the database")?;
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
        if value.is_null() {
            return None;
        }
        // SAFETY: a non-NULL result is a malloc()ed C string now ours; it
        // is read, then freed once.
        let text = unsafe { CStr::from_ptr(value) }
            .to_string_lossy()
            .into_owned();
        // SAFETY: as above.
        unsafe { ffi::leveldb_free(value.cast::<c_void>()) };
        Some(text)
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
        // SAFETY: plain constructors.
        let batch = WriteBatch::new(
            unsafe { ffi::leveldb_writebatch_create() },
            "create a write batch",
        )?;
        // SAFETY: a plain constructor.
        let read_options = ReadOptions::new(
            unsafe { ffi::leveldb_readoptions_create() },
            "create read options",
        )?;
        Ok(Box::new(LevelSession {
            store: self,
            batch,
            read_options,
            key: Vec::new(),
        }))
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

/// One thread's handle: the store, and a batch, read options and a key
/// buffer reused from call to call.
struct LevelSession<'a> {
    store: &'a LevelStore,
    batch: WriteBatch,
    read_options: ReadOptions,
    /// The stored form of the key at hand.
    key: Vec<u8>,
}

impl LevelSession<'_> {
    /// A new iterator over the database (a view as of now).
    fn iterator(&self) -> EngineResult<Iter<'_>> {
        // SAFETY: the database and read options are live; the iterator is
        // destroyed before the session, so before the store.
        let raw =
            unsafe { ffi::leveldb_create_iterator(self.store.db.ptr(), self.read_options.ptr()) };
        let ptr = NonNull::new(raw)
            .ok_or_else(|| peer("create an iterator: the C API returned NULL".into()))?;
        Ok(Iter {
            ptr,
            prefix: None,
            _store: PhantomData,
        })
    }

    /// A new iterator over table `table` only.
    fn table_iterator(&self, table: usize) -> EngineResult<Iter<'_>> {
        self.store.check_table(table)?;
        let mut iter = self.iterator()?;
        if self.store.prefixed {
            // Fits: open refuses more than TABLES_MAX tables.
            iter.prefix = Some(table as u8);
        }
        Ok(iter)
    }
}

impl Session for LevelSession<'_> {
    fn write(&mut self, batch: &Batch) -> EngineResult<()> {
        // SAFETY: the batch is this session's own.
        unsafe { ffi::leveldb_writebatch_clear(self.batch.ptr()) };
        for op in batch.ops() {
            match op {
                Op::Put { table, key, value } => {
                    self.store.check_table(table)?;
                    encode(self.store.prefixed, table, key, &mut self.key);
                    // SAFETY: the batch is live; the call copies the key
                    // and value.
                    unsafe {
                        ffi::leveldb_writebatch_put(
                            self.batch.ptr(),
                            self.key.as_ptr().cast::<c_char>(),
                            self.key.len(),
                            value.as_ptr().cast::<c_char>(),
                            value.len(),
                        )
                    };
                }
                Op::Delete { table, key } => {
                    self.store.check_table(table)?;
                    encode(self.store.prefixed, table, key, &mut self.key);
                    // SAFETY: as for the put.
                    unsafe {
                        ffi::leveldb_writebatch_delete(
                            self.batch.ptr(),
                            self.key.as_ptr().cast::<c_char>(),
                            self.key.len(),
                        )
                    };
                }
                Op::DeleteRange { table, start, end } => {
                    // LevelDB has no range delete: the keys of the range as
                    // the database holds them now, each deleted in the batch.
                    encode(self.store.prefixed, table, start, &mut self.key);
                    let mut keys = Vec::new();
                    let mut iter = self.table_iterator(table)?;
                    iter.seek(&self.key);
                    while let Some((k, _)) = iter.entry() {
                        if k >= end {
                            break;
                        }
                        keys.push(k.to_vec());
                        iter.next();
                    }
                    iter.status("read a range")?;
                    drop(iter);
                    for k in keys {
                        encode(self.store.prefixed, table, &k, &mut self.key);
                        // SAFETY: as for the put.
                        unsafe {
                            ffi::leveldb_writebatch_delete(
                                self.batch.ptr(),
                                self.key.as_ptr().cast::<c_char>(),
                                self.key.len(),
                            )
                        };
                    }
                }
            }
        }
        let mut err = ptr::null_mut();
        // SAFETY: the database, options and batch are live for the call.
        unsafe {
            ffi::leveldb_write(
                self.store.db.ptr(),
                self.store.write_options.ptr(),
                self.batch.ptr(),
                &mut err,
            )
        };
        check(err, "write a batch")
    }

    fn get(&mut self, table: usize, key: &[u8]) -> EngineResult<Option<usize>> {
        self.store.check_table(table)?;
        encode(self.store.prefixed, table, key, &mut self.key);
        let mut len = 0usize;
        let mut err = ptr::null_mut();
        // SAFETY: the database and options are live; the key is read
        // during the call only.
        let value = unsafe {
            ffi::leveldb_get(
                self.store.db.ptr(),
                self.read_options.ptr(),
                self.key.as_ptr().cast::<c_char>(),
                self.key.len(),
                &mut len,
                &mut err,
            )
        };
        if !value.is_null() {
            // SAFETY: a found value is a malloc()ed copy now ours; only its
            // length is used, and it is freed once.
            unsafe { ffi::leveldb_free(value.cast::<c_void>()) };
        }
        check(err, "get")?;
        Ok((!value.is_null()).then_some(len))
    }

    fn seek(&mut self, table: usize, key: &[u8], steps: usize) -> EngineResult<Seek> {
        encode(self.store.prefixed, table, key, &mut self.key);
        let mut iter = self.table_iterator(table)?;
        iter.seek(&self.key);
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
        let mut iter = self.table_iterator(table)?;
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
}

/// An iterator over the database, or over one table's prefix of it; it
/// must not outlive the store.
struct Iter<'a> {
    ptr: NonNull<ffi::leveldb_iterator_t>,
    /// The table's prefix byte when the tables share the key space: the
    /// iterator then shows only that table's entries, their keys without
    /// it.
    prefix: Option<u8>,
    _store: PhantomData<&'a LevelStore>,
}

impl Iter<'_> {
    fn seek(&mut self, stored_key: &[u8]) {
        // SAFETY: the iterator is live; the key is read during the call.
        unsafe {
            ffi::leveldb_iter_seek(
                self.ptr.as_ptr(),
                stored_key.as_ptr().cast::<c_char>(),
                stored_key.len(),
            )
        }
    }

    /// To the table's first entry.
    fn seek_to_first(&mut self) {
        match self.prefix {
            Some(p) => self.seek(&[p]),
            // SAFETY: the iterator is live.
            None => unsafe { ffi::leveldb_iter_seek_to_first(self.ptr.as_ptr()) },
        }
    }

    /// To the table's last entry: the one before the next table's first
    /// key, or the database's last.
    fn seek_to_last(&mut self) {
        match self.prefix {
            Some(p) if p < u8::MAX => {
                self.seek(&[p + 1]);
                if self.valid() {
                    self.prev();
                } else {
                    // SAFETY: the iterator is live.
                    unsafe { ffi::leveldb_iter_seek_to_last(self.ptr.as_ptr()) }
                }
            }
            // SAFETY: the iterator is live.
            _ => unsafe { ffi::leveldb_iter_seek_to_last(self.ptr.as_ptr()) },
        }
    }

    fn valid(&self) -> bool {
        // SAFETY: the iterator is live.
        unsafe { ffi::leveldb_iter_valid(self.ptr.as_ptr()) != 0 }
    }

    /// The stored key and value the iterator is on; `None` past either
    /// end of the database.
    fn raw_entry(&self) -> Option<(&[u8], &[u8])> {
        if !self.valid() {
            return None;
        }
        let (mut klen, mut vlen) = (0usize, 0usize);
        // SAFETY: the iterator is live and valid; the key and value stay
        // put until it moves, which needs `&mut self`, so not while the
        // returned slices are borrowed.
        unsafe {
            let key = ffi::leveldb_iter_key(self.ptr.as_ptr(), &mut klen);
            let value = ffi::leveldb_iter_value(self.ptr.as_ptr(), &mut vlen);
            Some((bytes(key, klen), bytes(value, vlen)))
        }
    }

    /// The table's key (without its prefix) and value the iterator is on;
    /// `None` past either end of the table.
    fn entry(&self) -> Option<(&[u8], &[u8])> {
        let (key, value) = self.raw_entry()?;
        match self.prefix {
            None => Some((key, value)),
            Some(p) => match key.split_first() {
                Some((&first, rest)) if first == p => Some((rest, value)),
                _ => None,
            },
        }
    }

    fn next(&mut self) {
        if self.valid() {
            // SAFETY: the iterator is live and valid, as Next requires.
            unsafe { ffi::leveldb_iter_next(self.ptr.as_ptr()) }
        }
    }

    fn prev(&mut self) {
        if self.valid() {
            // SAFETY: the iterator is live and valid, as Prev requires.
            unsafe { ffi::leveldb_iter_prev(self.ptr.as_ptr()) }
        }
    }

    /// The iterator's error, if reading failed, as an error of `what`.
    fn status(&self, what: &str) -> EngineResult<()> {
        let mut err = ptr::null_mut();
        // SAFETY: the iterator is live; `err` is a place for the result.
        unsafe { ffi::leveldb_iter_get_error(self.ptr.as_ptr(), &mut err) };
        check(err, what)
    }
}

impl Drop for Iter<'_> {
    fn drop(&mut self) {
        // SAFETY: the pointer came from leveldb_create_iterator, is owned
        // by this value alone and destroyed once, before the store.
        unsafe { ffi::leveldb_iter_destroy(self.ptr.as_ptr()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::conformance;

    /// A small configuration: a 1 MiB cache and 64 KiB memtables, so that
    /// a few hundred entries make SSTs.
    fn config() -> Config {
        Config {
            engine: Engine::Leveldb,
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

    fn open_error(config: &Config, dir: &Path, names: &[&str]) -> String {
        match open(config, dir, &specs(names)) {
            Ok(_) => panic!("open of {names:?} should fail"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn does_what_every_engine_does() {
        // Goal: the checks every adapter passes (see `conformance`), here
        // with two tables sharing LevelDB's one key space.
        conformance::all(&|dir: &Path| open_store(&config(), dir, &["default", "other"]));
    }

    #[test]
    fn seeks_land_on_their_key_and_stop_at_the_end_of_their_table() {
        // Goal: a seek finds an existing key, lands after a missing one
        // without finding it, counts the bytes of the user keys and values
        // it steps over, and stops at the end of its table even though the
        // next table's entries follow in the key space.
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open_store(&config(), dir.path(), &["default", "next"]);
        fill(store.as_ref(), 0, 10);
        fill(store.as_ref(), 1, 10);
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
        let s = session.seek(1, &key(9), 5).expect("seek");
        assert_eq!(
            s,
            Seek {
                found: true,
                bytes: 7 + 10
            }
        );
        drop(session);
        store.close().expect("close");
    }

    #[test]
    fn scans_run_in_order_both_ways_within_their_prefix() {
        // Goal: with three tables sharing the key space, a scan of each
        // sees only its own entries, in ascending order forward and
        // descending in reverse, the first and last tables included (their
        // reverse scans start from the next prefix or the database's end);
        // a visit that returns false stops the scan.
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open_store(&config(), dir.path(), &["a", "b", "c"]);
        fill(store.as_ref(), 0, 20);
        fill(store.as_ref(), 1, 7);
        fill(store.as_ref(), 2, 3);
        for (table, count) in [(0, 20u64), (1, 7), (2, 3)] {
            let expected: Vec<u64> = (0..count).map(|i| 7 + i + 1).collect();
            assert_eq!(scanned(store.as_ref(), table, true, usize::MAX), expected);
            let reversed: Vec<u64> = expected.iter().rev().copied().collect();
            assert_eq!(scanned(store.as_ref(), table, false, usize::MAX), reversed);
        }
        assert_eq!(scanned(store.as_ref(), 0, true, 3), [8, 9, 10]);
        store.close().expect("close");

        // An empty table between two full ones scans nothing either way.
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open_store(&config(), dir.path(), &["a", "b", "c"]);
        fill(store.as_ref(), 0, 5);
        fill(store.as_ref(), 2, 5);
        assert!(scanned(store.as_ref(), 1, true, usize::MAX).is_empty());
        assert!(scanned(store.as_ref(), 1, false, usize::MAX).is_empty());
        store.close().expect("close");
    }

    #[test]
    fn one_table_keeps_its_keys_unprefixed() {
        // Goal: with a single table the stored keys are the user's, so a
        // database of plain keys reads as that table.
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open_store(&config(), dir.path(), &["default"]);
        fill(store.as_ref(), 0, 4);
        let mut session = store.session().expect("session");
        let s = session.seek(0, &key(0), 10).expect("seek");
        assert_eq!(
            s,
            Seek {
                found: true,
                bytes: 4 * 7 + (1 + 2 + 3 + 4)
            }
        );
        drop(session);
        store.close().expect("close");
    }

    #[test]
    fn operations_do_what_they_claim_and_refuse_the_rest() {
        // Goal: flush writes the memtable out as an SST, compact leaves
        // no L0 file and keeps the data, and the operations LevelDB's C API
        // cannot do say so.
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open_store(&config(), dir.path(), &["default"]);
        fill(store.as_ref(), 0, 100);
        assert_eq!(store.shape_counts().sst_files, 0);
        assert!(store.operation(Benchmark::Flush).expect("flush"));
        assert!(
            store.shape_counts().sst_files >= 1,
            "{:?}",
            store.shape_counts()
        );
        fill(store.as_ref(), 0, 300);
        assert!(store.operation(Benchmark::Compact).expect("compact"));
        let shape = store.shape_counts();
        assert_eq!(shape.l0_runs, 0, "{shape:?}");
        assert!(shape.sst_files >= 1, "{shape:?}");
        assert!(store.operation(Benchmark::CompactAll).expect("compactall"));
        for op in [
            Benchmark::Compact0,
            Benchmark::Compact1,
            Benchmark::WaitForCompaction,
            Benchmark::Checkpoint,
            Benchmark::FillSeq,
        ] {
            assert!(!store.operation(op).expect("operation"), "{op}");
        }
        assert_eq!(scanned(store.as_ref(), 0, true, usize::MAX).len(), 300);
        for printout in [Benchmark::Stats, Benchmark::Shape] {
            let text = store
                .printout(printout)
                .expect("printout")
                .unwrap_or_default();
            assert!(text.contains("Compactions"), "{text}");
        }
        assert_eq!(store.printout(Benchmark::ReadSeq).expect("printout"), None);
        store.close().expect("close");
    }

    #[test]
    fn reopen_keeps_the_data_and_refuses_another_table_list() {
        // Goal: after a close the same tables find their data again, and a
        // different list of tables, whose keys would be read with the
        // wrong prefixes, is refused with a message saying why.
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open_store(&config(), dir.path(), &["default", "second"]);
        fill(store.as_ref(), 0, 30);
        fill(store.as_ref(), 1, 12);
        store.close().expect("close");

        let store = open_store(&config(), dir.path(), &["default", "second"]);
        assert_eq!(scanned(store.as_ref(), 0, true, usize::MAX).len(), 30);
        assert_eq!(scanned(store.as_ref(), 1, true, usize::MAX).len(), 12);
        store.close().expect("close");

        let message = open_error(&config(), dir.path(), &["second"]);
        assert!(
            message.contains("holds the tables [default, second]"),
            "{message}"
        );
    }

    #[test]
    fn options_leveldb_cannot_honour_are_usage_errors() {
        // Goal: lz4 and zstd, and tables asking for different bloom bits,
        // are refused before anything is created, as usage errors.
        let dir = tempfile::tempdir().expect("tempdir");
        for compression in [Compression::Lz4, Compression::Zstd] {
            let config = Config {
                compression,
                ..config()
            };
            match open(&config, dir.path(), &specs(&["default"])) {
                Err(BenchError::Config(m)) => assert!(m.contains("only with snappy"), "{m}"),
                Err(e) => panic!("not a usage error: {e}"),
                Ok(_) => panic!("{} was accepted", compression.name()),
            }
        }
        let mut tables = specs(&["a", "b"]);
        tables[1].bloom_bits = Some(0);
        match open(&config(), dir.path(), &tables) {
            Err(BenchError::Config(m)) => assert!(m.contains("one bloom filter policy"), "{m}"),
            Err(e) => panic!("not a usage error: {e}"),
            Ok(_) => panic!("different bloom bits were accepted"),
        }
        assert!(!dir.path().join("CURRENT").exists());
    }

    #[test]
    fn version_is_the_librarys() {
        // Goal: the version is what the loaded library reports (Debian's
        // 1.23).
        assert_eq!(version(), "1.23");
    }
}
