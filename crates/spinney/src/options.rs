//! What a user can set: per database (`Options`), per table (`TableOptions`),
//! per write (`WriteOptions`) and per read (`ReadOptions`).

use std::fmt;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::fs::{Fs, LogWrites, OsFs};
use crate::limits;

/// How much a commit promises to survive. After SQLite4 LSM's safety levels.
///
/// ```
/// # fn main() -> spinney::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// let db = spinney::Db::open(dir.path(), spinney::Options {
///     durability: spinney::Durability::Full, // each commit synced before it returns
///     ..spinney::Options::default()
/// })?;
/// let t = db.create_table("t", spinney::TableOptions::lsm())?;
/// t.put(b"k", b"v")?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Durability {
    /// The log is written in large pieces and never synced on commit. A crash
    /// of the process or the machine may lose recent commits; what survives is
    /// always a prefix of the commits, never a corrupt or partial one.
    Off,
    /// Each commit is handed to the operating system before it returns, so a
    /// crash of the process loses nothing; the log is synced at flushes and on
    /// close, so a crash of the machine may lose the commits since.
    #[default]
    Normal,
    /// Each commit is synced to storage before it returns. Concurrent
    /// committers share one sync (group commit).
    Full,
}

/// The structure that stores a table.
///
/// ```
/// # fn main() -> spinney::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
/// let t = db.create_table("t", spinney::TableOptions::btree())?;
/// assert_eq!(t.options().kind, spinney::TableKind::Btree);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum TableKind {
    /// A log-structured merge tree: writes go to a memtable and are flushed
    /// to sorted files that compaction merges.
    #[default]
    Lsm,
    /// A B+tree of pages changed in place in memory and written
    /// copy-on-write at checkpoints.
    Btree,
}

impl TableKind {
    /// The lowercase name ("lsm", "btree").
    ///
    /// ```
    /// assert_eq!(spinney::TableKind::Btree.name(), "btree");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            TableKind::Lsm => "lsm",
            TableKind::Btree => "btree",
        }
    }
}

/// Block compression of a table's files.
///
/// ```
/// # fn main() -> spinney::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
/// let t = db.create_table("t", spinney::TableOptions {
///     compression: spinney::Compression::Zstd,
///     ..spinney::TableOptions::lsm()
/// })?;
/// t.put(b"k", &[b'x'; 1000])?;
/// db.flush()?;
/// assert_eq!(t.get(b"k")?, Some(vec![b'x'; 1000]));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Compression {
    /// Blocks are stored as they are.
    #[default]
    None,
    /// LZ4 (fast, moderate ratio).
    Lz4,
    /// Zstandard at level 3 (slower, better ratio).
    Zstd,
}

impl Compression {
    /// The lowercase name ("none", "lz4", "zstd").
    ///
    /// ```
    /// assert_eq!(spinney::Compression::Lz4.name(), "lz4");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
        }
    }
}

/// How recovery treats a damaged write-ahead log.
///
/// ```
/// # fn main() -> spinney::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
/// db.close()?;
/// drop(db);
/// let db = spinney::Db::open(dir.path(), spinney::Options {
///     wal_recovery: spinney::WalRecovery::PointInTime,
///     ..spinney::Options::default()
/// })?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum WalRecovery {
    /// A torn record at the very end of the log (a crash in the middle of an
    /// append) is dropped; damage anywhere else is `Error::Corruption`.
    #[default]
    TornTailOnly,
    /// Recovery stops at the first damaged record and keeps everything
    /// before it, giving the state at some earlier point in time. Commits
    /// after the damage are lost; use it to open a database that
    /// `TornTailOnly` refuses.
    PointInTime,
}

/// How an LSM table merges its sorted runs.
///
/// ```
/// assert_eq!(spinney::CompactionOptions::leveled().style, spinney::CompactionStyle::Leveled);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum CompactionStyle {
    /// L0 holds overlapping sorted runs; each deeper level is one sorted run
    /// `fanout` times larger than the one above. Few runs to search, more
    /// rewriting (RocksDB's and LevelDB's default).
    #[default]
    Leveled,
    /// Sorted runs of similar size are merged together into a larger run
    /// (size-tiered, as WiredTiger's LSM and Cassandra's STCS do). Fewer
    /// rewrites, more runs to search.
    Tiered,
}

impl CompactionStyle {
    /// The lowercase name ("leveled", "tiered").
    ///
    /// ```
    /// assert_eq!(spinney::CompactionStyle::Tiered.name(), "tiered");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            CompactionStyle::Leveled => "leveled",
            CompactionStyle::Tiered => "tiered",
        }
    }
}

/// How an LSM table compacts. Part of the table's options, kept in the catalog.
///
/// ```
/// # fn main() -> spinney::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
/// let t = db.create_table("t", spinney::TableOptions {
///     compaction: spinney::CompactionOptions { l0_trigger: 8, ..spinney::CompactionOptions::leveled() },
///     ..spinney::TableOptions::lsm()
/// })?;
/// assert_eq!(t.options().compaction.l0_trigger, 8);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactionOptions {
    /// Leveled or tiered.
    pub style: CompactionStyle,
    /// Leveled: L0 runs that start a compaction into the first level below.
    /// Tiered: sorted runs that start a merge.
    pub l0_trigger: u32,
    /// Leveled: each level's target size is this many times the one above.
    pub fanout: u32,
    /// Leveled: target size of the first level below L0, in bytes.
    pub level_base_bytes: u64,
    /// Leveled: size the levels from the last one up (RocksDB's
    /// `level_compaction_dynamic_level_bytes`): the last level's size decides
    /// the targets of the others, and L0 compacts into the highest level
    /// whose target reaches `level_base_bytes / fanout`; the levels above it
    /// stay empty. Keeps the space overhead near `1 / fanout`.
    pub dynamic_level_bytes: bool,
    /// Leveled: compaction output files are cut near this size, in bytes.
    pub target_file_size: u64,
    /// Tiered: a run joins a merge when it is at most this many percent
    /// larger than the runs before it together (RocksDB's universal
    /// `size_ratio`).
    pub size_ratio_percent: u32,
    /// Tiered: fewest runs merged by a size-ratio merge.
    pub min_merge_width: u32,
    /// Tiered: most runs merged by a size-ratio merge.
    pub max_merge_width: u32,
    /// Tiered: when the runs other than the oldest exceed this many percent
    /// of the oldest, every run is merged into one (bounds space amplification).
    pub max_size_amplification_percent: u32,
}

impl Default for CompactionOptions {
    fn default() -> Self {
        CompactionOptions::leveled()
    }
}

impl CompactionOptions {
    /// Leveled defaults: L0 trigger 4, fanout 10, 64 MiB base level, dynamic
    /// level sizing, 8 MiB files.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions {
    ///     compaction: spinney::CompactionOptions { fanout: 8, ..spinney::CompactionOptions::leveled() },
    ///     ..spinney::TableOptions::lsm()
    /// })?;
    /// assert_eq!(t.options().compaction.fanout, 8);
    /// # Ok(()) }
    /// ```
    pub fn leveled() -> Self {
        CompactionOptions {
            style: CompactionStyle::Leveled,
            l0_trigger: 4,
            fanout: 10,
            level_base_bytes: 64 << 20,
            dynamic_level_bytes: true,
            target_file_size: 8 << 20,
            size_ratio_percent: 1,
            min_merge_width: 2,
            max_merge_width: 32,
            max_size_amplification_percent: 200,
        }
    }

    /// Tiered defaults: merge at 4 runs, size ratio 1%, widths 2 to 32,
    /// full merge past 200% space amplification.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions {
    ///     compaction: spinney::CompactionOptions::tiered(),
    ///     ..spinney::TableOptions::lsm()
    /// })?;
    /// assert_eq!(t.options().compaction.style, spinney::CompactionStyle::Tiered);
    /// # Ok(()) }
    /// ```
    pub fn tiered() -> Self {
        CompactionOptions {
            style: CompactionStyle::Tiered,
            ..CompactionOptions::leveled()
        }
    }

    fn validate(&self) -> Result<()> {
        let check = |ok: bool, what: String| {
            if ok {
                Ok(())
            } else {
                Err(Error::invalid(what))
            }
        };
        check(
            (1..=limits::L0_TRIGGER_MAX).contains(&self.l0_trigger),
            format!(
                "l0_trigger {} is outside 1..={}",
                self.l0_trigger,
                limits::L0_TRIGGER_MAX
            ),
        )?;
        check(
            (2..=limits::FANOUT_MAX).contains(&self.fanout),
            format!(
                "fanout {} is outside 2..={}",
                self.fanout,
                limits::FANOUT_MAX
            ),
        )?;
        check(
            self.level_base_bytes >= limits::WRITE_BUFFER_BYTES_MIN as u64,
            format!(
                "level_base_bytes {} is below {}",
                self.level_base_bytes,
                limits::WRITE_BUFFER_BYTES_MIN
            ),
        )?;
        check(
            (limits::WRITE_BUFFER_BYTES_MIN as u64..=limits::TARGET_FILE_BYTES_MAX)
                .contains(&self.target_file_size),
            format!(
                "target_file_size {} is outside {}..={}",
                self.target_file_size,
                limits::WRITE_BUFFER_BYTES_MIN,
                limits::TARGET_FILE_BYTES_MAX
            ),
        )?;
        check(
            self.size_ratio_percent <= 10_000,
            format!(
                "size_ratio_percent {} is above 10000",
                self.size_ratio_percent
            ),
        )?;
        check(
            2 <= self.min_merge_width && self.min_merge_width <= self.max_merge_width,
            format!(
                "merge widths {}..={} must satisfy 2 <= min <= max",
                self.min_merge_width, self.max_merge_width
            ),
        )?;
        check(
            self.max_merge_width <= limits::L0_TRIGGER_MAX * 4,
            format!(
                "max_merge_width {} is above {}",
                self.max_merge_width,
                limits::L0_TRIGGER_MAX * 4
            ),
        )?;
        check(
            self.max_size_amplification_percent >= 1,
            "max_size_amplification_percent must be at least 1".to_string(),
        )
    }
}

/// Options of one table, fixed when it is created and kept in the catalog.
///
/// ```
/// # fn main() -> spinney::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
/// let t = db.create_table("t", spinney::TableOptions {
///     bloom_bits_per_key: 16,
///     write_buffer_size: 16 << 20,
///     ..spinney::TableOptions::lsm()
/// })?;
/// assert_eq!(t.options().bloom_bits_per_key, 16);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableOptions {
    /// The table's structure.
    pub kind: TableKind,
    /// Compression of data blocks.
    pub compression: Compression,
    /// Bloom filter bits per key; 0 builds no filter. 10 gives about 1%
    /// false positives.
    pub bloom_bits_per_key: u32,
    /// Target size of an uncompressed data block, in bytes.
    pub block_size: usize,
    /// Size a memtable grows to before it is frozen and flushed, in bytes.
    pub write_buffer_size: usize,
    /// How the table compacts (LSM tables).
    pub compaction: CompactionOptions,
    /// The size of a page (B-tree tables): a power of two from 4 KiB to
    /// 32 KiB. A user key may be up to about a quarter of it.
    pub page_size: usize,
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            kind: TableKind::Lsm,
            compression: Compression::None,
            bloom_bits_per_key: 10,
            block_size: 4096,
            write_buffer_size: 8 << 20,
            compaction: CompactionOptions::leveled(),
            page_size: 8 << 10,
        }
    }
}

impl TableOptions {
    /// Defaults for an LSM table with leveled compaction.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("events", spinney::TableOptions::lsm())?;
    /// assert_eq!(t.options().kind, spinney::TableKind::Lsm);
    /// # Ok(()) }
    /// ```
    pub fn lsm() -> Self {
        TableOptions::default()
    }

    /// Defaults for a B-tree table.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("accounts", spinney::TableOptions {
    ///     page_size: 16384,
    ///     ..spinney::TableOptions::btree()
    /// })?;
    /// assert_eq!(t.options().kind, spinney::TableKind::Btree);
    /// # Ok(()) }
    /// ```
    pub fn btree() -> Self {
        TableOptions {
            kind: TableKind::Btree,
            ..TableOptions::default()
        }
    }

    /// Defaults for an LSM table with tiered compaction.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("log", spinney::TableOptions::tiered())?;
    /// assert_eq!(t.options().compaction.style, spinney::CompactionStyle::Tiered);
    /// # Ok(()) }
    /// ```
    pub fn tiered() -> Self {
        TableOptions {
            compaction: CompactionOptions::tiered(),
            ..TableOptions::default()
        }
    }

    /// Checks every field against `limits`.
    pub(crate) fn validate(&self) -> Result<()> {
        if self.bloom_bits_per_key > limits::BLOOM_BITS_PER_KEY_MAX {
            return Err(Error::invalid(format!(
                "bloom_bits_per_key {} is above the limit of {}",
                self.bloom_bits_per_key,
                limits::BLOOM_BITS_PER_KEY_MAX
            )));
        }
        if !(limits::BLOCK_BYTES_MIN..=limits::BLOCK_BYTES_MAX).contains(&self.block_size) {
            return Err(Error::invalid(format!(
                "block_size {} is outside {}..={}",
                self.block_size,
                limits::BLOCK_BYTES_MIN,
                limits::BLOCK_BYTES_MAX
            )));
        }
        if !(limits::WRITE_BUFFER_BYTES_MIN..=limits::WRITE_BUFFER_BYTES_MAX)
            .contains(&self.write_buffer_size)
        {
            return Err(Error::invalid(format!(
                "write_buffer_size {} is outside {}..={}",
                self.write_buffer_size,
                limits::WRITE_BUFFER_BYTES_MIN,
                limits::WRITE_BUFFER_BYTES_MAX
            )));
        }
        if !self.page_size.is_power_of_two()
            || !(limits::PAGE_BYTES_MIN..=limits::PAGE_BYTES_MAX).contains(&self.page_size)
        {
            return Err(Error::invalid(format!(
                "page_size {} is not a power of two in {}..={}",
                self.page_size,
                limits::PAGE_BYTES_MIN,
                limits::PAGE_BYTES_MAX
            )));
        }
        self.compaction.validate()
    }

    /// What differs between a table's options and `asked` among those
    /// fixed when the table was created (its kind, a B-tree's page size),
    /// said as "is ...; asked for ...".
    pub(crate) fn fixed_differs(&self, asked: &TableOptions) -> Option<String> {
        if self.kind != asked.kind {
            return Some(format!(
                "is a {:?} table; asked for a {:?} table",
                self.kind, asked.kind
            ));
        }
        if self.kind == TableKind::Btree && self.page_size != asked.page_size {
            return Some(format!(
                "has {}-byte pages; asked for {}-byte pages",
                self.page_size, asked.page_size
            ));
        }
        None
    }

    /// The longest user key the table takes.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let b = spinney::TableOptions::btree();
    /// let long = vec![b'k'; b.max_key_len() + 1];
    /// let t = db.create_table("t", b)?;
    /// assert!(t.put(&long, b"").is_err()); // refused, as `get` refuses it
    /// assert!(spinney::TableOptions::lsm().max_key_len() >= t.options().max_key_len());
    /// # Ok(()) }
    /// ```
    pub fn max_key_len(&self) -> usize {
        match self.kind {
            TableKind::Lsm => limits::KEY_BYTES_MAX,
            TableKind::Btree => limits::btree_key_bytes_max(self.page_size),
        }
    }
}

/// When writers to an LSM table slow down and when they wait, so that memory
/// and read cost stay bounded while background work is behind. Each
/// threshold is per table. Stalls are counted in `Stats`.
///
/// ```
/// # fn main() -> spinney::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// let db = spinney::Db::open(dir.path(), spinney::Options {
///     backpressure: spinney::Backpressure { l0_slowdown_runs: 30, ..spinney::Backpressure::default() },
///     ..spinney::Options::default()
/// })?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backpressure {
    /// Writers wait while a table has this many frozen memtables and a full
    /// active one (memory is then bounded by `max_immutable_memtables + 1`
    /// write buffers per table).
    pub max_immutable_memtables: usize,
    /// Each commit group waits 1 ms while a table has this many L0 runs.
    pub l0_slowdown_runs: usize,
    /// Writers wait while a table has this many L0 runs.
    pub l0_stop_runs: usize,
    /// Each commit group waits 1 ms while a table's estimated pending
    /// compaction bytes pass this.
    pub pending_compaction_slowdown_bytes: u64,
    /// Writers wait while a table's estimated pending compaction bytes pass this.
    pub pending_compaction_stop_bytes: u64,
}

impl Default for Backpressure {
    fn default() -> Self {
        Backpressure {
            max_immutable_memtables: 4,
            l0_slowdown_runs: 20,
            l0_stop_runs: 36,
            pending_compaction_slowdown_bytes: 64 << 30,
            pending_compaction_stop_bytes: 256 << 30,
        }
    }
}

impl Backpressure {
    fn validate(&self) -> Result<()> {
        if self.max_immutable_memtables == 0 {
            return Err(Error::invalid(
                "backpressure.max_immutable_memtables must be at least 1",
            ));
        }
        if self.l0_slowdown_runs == 0 || self.l0_slowdown_runs > self.l0_stop_runs {
            return Err(Error::invalid(format!(
                "backpressure: l0_slowdown_runs {} must be at least 1 and at most l0_stop_runs {}",
                self.l0_slowdown_runs, self.l0_stop_runs
            )));
        }
        if self.pending_compaction_slowdown_bytes > self.pending_compaction_stop_bytes {
            return Err(Error::invalid(format!(
                "backpressure: pending_compaction_slowdown_bytes {} is above pending_compaction_stop_bytes {}",
                self.pending_compaction_slowdown_bytes, self.pending_compaction_stop_bytes
            )));
        }
        Ok(())
    }
}

/// Options of a database, given at each open.
///
/// ```
/// # fn main() -> spinney::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// let db = spinney::Db::open(dir.path(), spinney::Options {
///     cache_size: 256 << 20,
///     background_threads: 1,
///     ..spinney::Options::default()
/// })?;
/// assert_eq!(db.path(), dir.path());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Options {
    /// Create the directory and an empty database when none exists.
    pub create_if_missing: bool,
    /// Refuse to open a database that already exists.
    pub error_if_exists: bool,
    /// Open an existing database without writing anything: a shared lock
    /// (other read-only openers may hold it too, a writer may not), the log
    /// replayed into memory only (no SST, checkpoint, manifest or log
    /// segment is written or removed, no page written back), no background
    /// work. Every write, flush, checkpoint, compaction and table change is
    /// refused with `Error::ReadOnly`. `create_if_missing` does not apply;
    /// `error_if_exists` is refused beside it. What the log held for B-tree
    /// tables stays in the cache, dirty, until the database is dropped,
    /// beside the cache's budget: the open may hold more than
    /// `cache_size`, by the pages the replay changed (those the log since
    /// each table's last checkpoint touches; `checkpoint_wal_bytes` bounds
    /// that log).
    pub read_only: bool,
    /// The durability of commits that do not say otherwise.
    pub durability: Durability,
    /// Bytes of blocks the cache may keep, shared by all tables.
    pub cache_size: u64,
    /// How recovery treats a damaged log.
    pub wal_recovery: WalRecovery,
    /// A log segment is closed and a new one begun past this size.
    pub wal_segment_size: u64,
    /// How the log's appends reach the operating system: through a shared
    /// memory map of the segment (the default on Linux: a commit makes no
    /// system call) or with `write()`, as LevelDB's and RocksDB's logs are.
    /// Both keep the same promise (`LogWrites`). The map makes commits of
    /// one small entry 1.5-1.9x faster; with commits of 100 entries
    /// `write()` was faster (docs/performance.md, "Batches"). A mapped
    /// segment holds its reserved space on disk until it is finished.
    pub log_writes: LogWrites,
    /// Read through memory maps, as LevelDB does on 64-bit machines,
    /// RocksDB with `allow_mmap_reads` and LMDB always. Off by default.
    /// - LSM tables' SST files (`Fs::open_mapped`): a block that misses the
    ///   cache is read in place in the map, its checksum checked there,
    ///   and not cached (a compressed block is decompressed and cached),
    ///   instead of read with a `pread` system call.
    /// - B-tree files (`PagedFile::map_for_reads`): a get or a cursor
    ///   reads a leaf that is not in the cache from the map and does not
    ///   cache it (the OS's page cache keeps it, as LMDB's pages), checking
    ///   its checksum on every read and its structure once per image
    ///   written. Inner pages and the writer go through the cache as
    ///   before. The leaves read count in the process's resident set while
    ///   the OS keeps them.
    ///
    /// With it on, an I/O error while reading through a map ends the
    /// process (SIGBUS) instead of returning `Error::Io`
    /// (docs/durability.md).
    pub mmap_reads: bool,
    /// Read SST blocks and B-tree pages around the OS's page cache (Linux
    /// `O_DIRECT`; RocksDB's `use_direct_reads`, WiredTiger's `direct_io`):
    /// the database's cache is then the only cache of its data
    /// (`fs/direct.rs`; a compaction reads its inputs ahead, up to 1 MiB).
    /// Off by default; refused with `mmap_reads`, and at open
    /// (`Error::Unsupported`) where the file system has no `O_DIRECT`.
    pub direct_reads: bool,
    /// Write flushes', compactions' and checkpoints' files around the OS's
    /// page cache (RocksDB's `use_direct_io_for_flush_and_compaction`),
    /// still synced with `fdatasync`. Off by default; refused where
    /// `direct_reads` is. The log and the manifest are written as usual.
    pub direct_writes: bool,
    /// Threads that run flushes and compactions. With 0, no thread is
    /// started: the work is done by writers (`autowork`) or by the
    /// application through `Db::work`.
    pub background_threads: usize,
    /// How much the background threads lower their CPU priority: the nice
    /// increment each applies to itself when it starts (0 to 19; 0 leaves
    /// it as the opening thread's). A commit waits for its writer thread
    /// alone, so when flushes and compactions compete with writers and
    /// readers for the cores, the foreground should win and the background
    /// take what is left; backpressure bounds the work that falls behind (a
    /// stopped writer runs the job it waits for itself). Linux only, where
    /// the nice value belongs to each thread; elsewhere it is ignored.
    /// 10 by default.
    pub background_nice: i32,
    /// With `background_threads == 0`: a writer whose commit leaves work
    /// pending does it before returning (SQLite4 LSM's autowork). With
    /// `false`, the application calls `Db::work`; a writer that would
    /// otherwise wait for work that no thread is doing does one job itself.
    pub autowork: bool,
    /// When writers slow down and wait.
    pub backpressure: Backpressure,
    /// Size in bytes at which the manifest (the log of table and file
    /// changes) is rolled: the next change goes to a new manifest that begins
    /// with one record of the whole state, and the old one is deleted. When
    /// that whole-state record is more than half this size, the manifest is
    /// rolled at twice the record's size instead, so that a large catalog is
    /// not rewritten at every change. At least 4 KiB; 64 MiB by default.
    pub max_manifest_size: u64,
    /// A B-tree table is checkpointed in the background once this many
    /// bytes have been added to the log since its last checkpoint (and by
    /// `Db::checkpoint`). The log is kept back to the oldest table's
    /// checkpoint, so this bounds replay at open. 64 MiB by default.
    pub checkpoint_wal_bytes: u64,
    /// After the database has taken no write and no read for this long, a
    /// background thread (or `Db::work`) looks at each B-tree table
    /// written since its last look and gives its space back when its live
    /// data is less than 60% of its file, and either its leaves are less
    /// than half live (deletes emptied them) or its free pages are more
    /// than a second image of the tree (estimated from its branches and 64
    /// of its leaves; the second image that copy-on-write checkpoints keep
    /// after a rewrite is left, as the next rewrite takes it again): it packs
    /// the leaves, moves the pages at the file's end down into free ones
    /// and cuts the file, as `compact_all` does. It works in slices of at
    /// most 256 leaves, each holding writers back for a few milliseconds,
    /// and goes on to its end if writes or reads come back meanwhile; it
    /// waits for idleness so as not to compete with them for the disk.
    /// Reads count as activity. 30 seconds by default: a table that
    /// deletes left mostly empty is its live data's size again within a
    /// minute of idle time. `None`: never; space is given back only by
    /// `compact_all` (freed pages are reused either way).
    pub vacuum_after_idle: Option<std::time::Duration>,
    /// Raise an existing database of an older format to the newest this
    /// build writes (`spinney::FORMAT_VERSION`) at this open: the new
    /// manifest and log segments are written in it. Off by default: a
    /// database keeps the format it has, whatever build opens it, so that
    /// the build that wrote it can still open it. Files already written
    /// are read as they are in either case; none is rewritten. Refused
    /// beside `read_only`. `spinney upgrade` does this from the command
    /// line; `Db::format_version` says what a database is in.
    pub upgrade_format: bool,
    /// The file system. `OsFs` unless a test injects faults.
    pub fs: Arc<dyn Fs>,
}

impl fmt::Debug for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Options")
            .field("create_if_missing", &self.create_if_missing)
            .field("error_if_exists", &self.error_if_exists)
            .field("read_only", &self.read_only)
            .field("durability", &self.durability)
            .field("cache_size", &self.cache_size)
            .field("wal_recovery", &self.wal_recovery)
            .field("wal_segment_size", &self.wal_segment_size)
            .field("log_writes", &self.log_writes)
            .field("mmap_reads", &self.mmap_reads)
            .field("direct_reads", &self.direct_reads)
            .field("direct_writes", &self.direct_writes)
            .field("background_threads", &self.background_threads)
            .field("background_nice", &self.background_nice)
            .field("autowork", &self.autowork)
            .field("backpressure", &self.backpressure)
            .field("max_manifest_size", &self.max_manifest_size)
            .field("checkpoint_wal_bytes", &self.checkpoint_wal_bytes)
            .field("vacuum_after_idle", &self.vacuum_after_idle)
            .field("upgrade_format", &self.upgrade_format)
            .field("fs", &self.fs)
            .finish()
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            create_if_missing: true,
            error_if_exists: false,
            read_only: false,
            durability: Durability::Normal,
            cache_size: 64 << 20,
            wal_recovery: WalRecovery::TornTailOnly,
            wal_segment_size: limits::WAL_SEGMENT_BYTES_DEFAULT,
            log_writes: LogWrites::default(),
            mmap_reads: false,
            direct_reads: false,
            direct_writes: false,
            background_threads: 2,
            background_nice: 10,
            autowork: true,
            backpressure: Backpressure::default(),
            max_manifest_size: limits::MANIFEST_BYTES_DEFAULT,
            checkpoint_wal_bytes: 64 << 20,
            vacuum_after_idle: Some(std::time::Duration::from_secs(30)),
            upgrade_format: false,
            fs: Arc::new(OsFs::new()),
        }
    }
}

impl Options {
    /// The transfers of B-tree files and new SSTs that go around the OS's
    /// page cache.
    pub(crate) fn direct_io(&self) -> crate::fs::DirectIo {
        crate::fs::DirectIo {
            reads: self.direct_reads,
            writes: self.direct_writes,
        }
    }

    pub(crate) fn validate(&self) -> Result<()> {
        if self.read_only && self.error_if_exists {
            return Err(Error::invalid(
                "read_only and error_if_exists contradict each other: a read-only open needs an existing database",
            ));
        }
        if self.read_only && self.upgrade_format {
            return Err(Error::invalid(
                "read_only and upgrade_format contradict each other: an upgrade writes a new manifest",
            ));
        }
        if self.wal_segment_size < limits::WAL_BLOCK_BYTES as u64 {
            return Err(Error::invalid(format!(
                "wal_segment_size {} is below one log block ({} bytes)",
                self.wal_segment_size,
                limits::WAL_BLOCK_BYTES
            )));
        }
        if self.background_threads > limits::BACKGROUND_THREADS_MAX {
            return Err(Error::invalid(format!(
                "background_threads {} is above the limit of {}",
                self.background_threads,
                limits::BACKGROUND_THREADS_MAX
            )));
        }
        if !(0..=limits::BACKGROUND_NICE_MAX).contains(&self.background_nice) {
            return Err(Error::invalid(format!(
                "background_nice {} is outside 0 to {}",
                self.background_nice,
                limits::BACKGROUND_NICE_MAX
            )));
        }
        if self.mmap_reads && self.direct_reads {
            return Err(Error::invalid(
                "mmap_reads and direct_reads contradict each other: a memory map reads through the OS's page cache",
            ));
        }
        if self.checkpoint_wal_bytes == 0 {
            return Err(Error::invalid("checkpoint_wal_bytes must be at least 1"));
        }
        if self.max_manifest_size < limits::MANIFEST_BYTES_MIN {
            return Err(Error::invalid(format!(
                "max_manifest_size {} is below the minimum of {} bytes",
                self.max_manifest_size,
                limits::MANIFEST_BYTES_MIN
            )));
        }
        self.backpressure.validate()
    }
}

/// Options of one write.
///
/// ```
/// # fn main() -> spinney::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
/// let t = db.create_table("t", spinney::TableOptions::lsm())?;
/// // This one commit synced, whatever the database's durability.
/// let full = spinney::WriteOptions { durability: Some(spinney::Durability::Full) };
/// let mut batch = spinney::WriteBatch::new();
/// batch.put(&t, b"k", b"v");
/// db.write_with(batch, full)?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// Overrides the database's durability for this commit.
    pub durability: Option<Durability>,
}
