//! `Db::stats`: counters of the write path and background work, the shape of
//! every table, the cache, and the I/O done through the `Fs`.

use std::fmt;
use std::sync::atomic::Ordering;

use super::{Core, DbInner};
use crate::btree::{BtreeShape, BtreeTable};
use crate::cache::CacheStats;
use crate::error::Result;
use crate::fs::IoStatsSnapshot;
use crate::limits::LSM_LEVELS;
use crate::lsm::compaction;
use crate::lsm::table::{LsmTable, SuperVersion};
use crate::options::{CompactionStyle, TableKind};

/// One level of an LSM table, with its compaction figures (after RocksDB's
/// `rocksdb.stats`). The figures of a level count the compactions that wrote
/// into it; L0's count flushes.
///
/// ```
/// # fn main() -> spinney::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
/// let t = db.create_table("t", spinney::TableOptions::lsm())?;
/// t.put(b"k", b"v")?;
/// db.flush()?;
/// let l0: &spinney::LevelStats = &db.stats().tables[0].levels[0];
/// assert_eq!(l0.files, 1);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct LevelStats {
    /// The level number.
    pub level: usize,
    /// Number of SSTs (for L0, of sorted runs).
    pub files: usize,
    /// Bytes of those files.
    pub bytes: u64,
    /// Compaction score: 1 or more means the level is due for compaction
    /// (L0: runs over the trigger; deeper: bytes over the target).
    pub score: f64,
    /// Target size in bytes (leveled tables, levels at or below the base level).
    pub target_bytes: u64,
    /// Compactions into this level (trivial moves included).
    pub compactions: u64,
    /// Of those, files moved down without a rewrite.
    pub trivial_moves: u64,
    /// Seconds spent in those compactions (for L0, in flushes).
    pub seconds: f64,
    /// Bytes read from the level above by compactions into this level (RocksDB's Rn).
    pub read_above_bytes: u64,
    /// Bytes read from this level by compactions into it (RocksDB's Rnp1).
    pub read_here_bytes: u64,
    /// Bytes written into this level (for L0, by flushes).
    pub written_bytes: u64,
}

impl LevelStats {
    /// Bytes written per byte read from the level above (for L0: 1 when
    /// anything was flushed). RocksDB's W-Amp column.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// for i in 0..2000u32 {
    ///     t.put(&i.to_be_bytes(), &[7; 100])?;
    /// }
    /// db.flush()?;
    /// t.compact_all()?;
    /// let stats = db.stats();
    /// let l0 = &stats.tables[0].levels[0];
    /// assert_eq!(l0.write_amplification(), 1.0); // flushed once
    /// # Ok(()) }
    /// ```
    pub fn write_amplification(&self) -> f64 {
        if self.level == 0 {
            return if self.written_bytes > 0 { 1.0 } else { 0.0 };
        }
        if self.read_above_bytes == 0 {
            return 0.0;
        }
        self.written_bytes as f64 / self.read_above_bytes as f64
    }
}

/// Figures of one table.
///
/// ```
/// # fn main() -> spinney::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
/// let t = db.create_table("t", spinney::TableOptions::lsm())?;
/// t.put(b"k", b"v")?;
/// db.flush()?;
/// let s: spinney::TableStats = db.stats().tables.remove(0);
/// assert_eq!((s.name.as_str(), s.flushes), ("t", 1));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct TableStats {
    /// The table's name.
    pub name: String,
    /// The table's kind.
    pub kind: TableKind,
    /// "leveled" or "tiered" (LSM tables; empty for B-tree tables).
    pub compaction_style: String,
    /// The shape now.
    pub shape: Shape,
    /// L0 first, then each deeper level.
    pub levels: Vec<LevelStats>,
    /// Memtables flushed, and the seconds it took.
    pub flushes: u64,
    /// Seconds spent flushing.
    pub flush_seconds: f64,
    /// Compactions run, and the seconds they took.
    pub compactions: u64,
    /// Seconds spent compacting.
    pub compaction_seconds: f64,
    /// Bytes of user data flushed over bytes written to every level: the
    /// table's write amplification (0 before the first flush).
    pub write_amplification: f64,
    /// Bloom filter checks by point reads.
    pub bloom_checks: u64,
    /// Checks that ruled a file out (useful negatives).
    pub bloom_useful: u64,
    /// Estimated bytes compaction must rewrite to bring the levels within
    /// their targets.
    pub pending_compaction_bytes: u64,
    /// Figures of a B-tree table (None for an LSM table).
    pub btree: Option<BtreeStats>,
}

/// Figures of a B-tree table: its pages in the cache and on disk, and its
/// checkpoints.
///
/// ```
/// # fn main() -> spinney::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
/// let t = db.create_table("t", spinney::TableOptions::btree())?;
/// t.put(b"k", b"v")?;
/// db.checkpoint()?;
/// let b: spinney::BtreeStats = db.stats().tables[0].btree.clone().unwrap();
/// assert!(b.checkpoints >= 1 && b.page_size == 8192);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct BtreeStats {
    /// Levels from the root to the leaves.
    pub height: u32,
    /// Pages in the file (headers and free pages included).
    pub file_pages: u64,
    /// Free pages (now, or after the next checkpoint).
    pub free_pages: u64,
    /// Of the free pages, those the durable image may still read:
    /// reusable once the next checkpoint is durable.
    pub image_pages: u64,
    /// Vacuums run by the idle database (`Options::vacuum_after_idle`).
    pub idle_vacuums: u64,
    /// The page size.
    pub page_size: u64,
    /// Page reads served by the cache.
    pub pages_from_cache: u64,
    /// Pages read from the file.
    pub pages_from_storage: u64,
    /// Of those, leaves read through the file's memory map and not cached
    /// (`Options::mmap_reads`).
    pub pages_mapped: u64,
    /// Pages written (by eviction, checkpoint, and overflow values).
    pub pages_written: u64,
    /// Bytes of those writes.
    pub page_bytes_written: u64,
    /// Clean pages evicted from the cache.
    pub evictions_clean: u64,
    /// Dirty pages written out to be evicted before a checkpoint.
    pub evictions_dirty: u64,
    /// Checkpoints written.
    pub checkpoints: u64,
    /// Seconds spent in them.
    pub checkpoint_seconds: f64,
    /// Pages they wrote (dirty pages and free maps).
    pub checkpoint_pages: u64,
    /// Bytes they wrote.
    pub checkpoint_bytes: u64,
}

/// The shape of an LSM table: what a read must search.
///
/// ```
/// # fn main() -> spinney::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
/// let t = db.create_table("t", spinney::TableOptions::lsm())?;
/// t.put(b"k", b"v")?;
/// let shape: spinney::Shape = t.shape()?;
/// println!("{shape}"); // a table of its trees
/// assert_eq!(shape.memtable_entries, 1);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Shape {
    /// Entries in the active memtable.
    pub memtable_entries: u64,
    /// Bytes of the active memtable.
    pub memtable_bytes: u64,
    /// Frozen memtables waiting for flush.
    pub immutable_memtables: usize,
    /// Bytes of those.
    pub immutable_bytes: u64,
    /// Sorted runs in L0.
    pub l0_runs: usize,
    /// Bytes of L0.
    pub l0_bytes: u64,
    /// Levels 1 and deeper, each with its file count and bytes (empty ones included).
    pub levels: Vec<ShapeLevel>,
    /// Range tombstones kept, in the memtables and flushed
    /// (`WriteBatch::delete_range`): each costs reads a search, until
    /// compaction drops what it hides and then it.
    pub range_tombstones: usize,
    /// For a B-tree table, its shape (and the LSM fields are empty).
    pub btree: Option<BtreeShape>,
}

impl Shape {
    /// Trees a point read may search: memtables, L0 runs, non-empty levels.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// t.put(b"k", b"v")?;
    /// db.flush()?;
    /// // The memtable and one L0 run.
    /// assert_eq!(t.shape()?.trees(), 2);
    /// # Ok(()) }
    /// ```
    pub fn trees(&self) -> usize {
        if self.btree.is_some() {
            return 1;
        }
        1 + self.immutable_memtables
            + self.l0_runs
            + self.levels.iter().filter(|l| l.files > 0).count()
    }
}

/// One level beyond L0 in a `Shape`.
///
/// ```
/// # fn main() -> spinney::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
/// let t = db.create_table("t", spinney::TableOptions::lsm())?;
/// t.put(b"k", b"v")?;
/// t.compact_all()?;
/// let shape = t.shape()?;
/// let deepest: &spinney::ShapeLevel = shape.levels.iter().rev().find(|l| l.files > 0).unwrap();
/// assert_eq!(deepest.files, 1);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ShapeLevel {
    /// The level number (1 and up).
    pub level: usize,
    /// SSTs in the level.
    pub files: usize,
    /// Bytes of those files.
    pub bytes: u64,
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(b) = &self.btree {
            writeln!(f, "B-tree     height {}", b.height)?;
            writeln!(
                f,
                "pages      {} leaf, {} branch, {} overflow, {} free ({} bytes each)",
                b.leaf_pages, b.branch_pages, b.overflow_pages, b.free_pages, b.page_size
            )?;
            writeln!(
                f,
                "free       {} reusable now, {} once the next checkpoint is durable",
                b.free_pages.saturating_sub(b.image_pages),
                b.image_pages
            )?;
            writeln!(f, "entries    {}", b.entries)?;
            writeln!(f, "fill       {:.1}%", b.fill * 100.0)?;
            return writeln!(f, "file       {} bytes", b.file_bytes);
        }
        writeln!(
            f,
            "{:<10} {:>8} {:>14} {:>14}",
            "tree", "count", "entries", "bytes"
        )?;
        writeln!(
            f,
            "{:<10} {:>8} {:>14} {:>14}",
            "memtable", 1, self.memtable_entries, self.memtable_bytes
        )?;
        writeln!(
            f,
            "{:<10} {:>8} {:>14} {:>14}",
            "immutable", self.immutable_memtables, "", self.immutable_bytes
        )?;
        writeln!(
            f,
            "{:<10} {:>8} {:>14} {:>14}",
            "L0", self.l0_runs, "", self.l0_bytes
        )?;
        for l in &self.levels {
            writeln!(
                f,
                "{:<10} {:>8} {:>14} {:>14}",
                format!("L{}", l.level),
                l.files,
                "",
                l.bytes
            )?;
        }
        if self.range_tombstones > 0 {
            writeln!(f, "{:<10} {:>8}", "range del", self.range_tombstones)?;
        }
        Ok(())
    }
}

/// A copy of the database's figures at one moment.
///
/// ```
/// # fn main() -> spinney::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
/// let t = db.create_table("t", spinney::TableOptions::lsm())?;
/// t.put(b"k", b"v")?;
/// let stats: spinney::Stats = db.stats();
/// assert!(stats.commits >= 1);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Stats {
    /// Batches committed.
    pub commits: u64,
    /// Commit groups (each led by one writer, sharing one log write).
    pub commit_groups: u64,
    /// Syncs of the log.
    pub wal_syncs: u64,
    /// Bytes of records appended to the log.
    pub wal_bytes: u64,
    /// The newest sequence number (`Snapshot::seqno`) that the log has
    /// synced: the commit that took it and every commit before it survive
    /// a power loss. Under `Normal` and `Off` the commits after it are
    /// those a power loss may lose.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?; // Normal
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// t.put(b"k", b"v")?;
    /// assert!(db.stats().synced_seqno < db.snapshot().seqno());
    /// db.flush()?; // syncs the log
    /// assert_eq!(db.stats().synced_seqno, db.snapshot().seqno());
    /// # Ok(()) }
    /// ```
    pub synced_seqno: u64,
    /// Memtables flushed.
    pub flushes: u64,
    /// Bytes of SSTs written by flushes.
    pub flush_bytes: u64,
    /// Compactions run (trivial moves included).
    pub compactions: u64,
    /// Compactions that moved a file down without rewriting it.
    pub trivial_moves: u64,
    /// Bytes of entries read by compactions.
    pub compaction_bytes_read: u64,
    /// Bytes of SSTs written by compactions.
    pub compaction_bytes_written: u64,
    /// Times a commit group was slowed down (1 ms each) by backpressure.
    pub slowdowns: u64,
    /// Total time of those slowdowns, in microseconds.
    pub slowdown_micros: u64,
    /// Times a writer waited for background work (a stop).
    pub stops: u64,
    /// Total time writers waited in stops, in microseconds.
    pub stop_micros: u64,
    /// Jobs running now.
    pub running_jobs: usize,
    /// Times the manifest was rolled to a new file while the database ran
    /// (the new manifest written at open is not counted).
    pub manifest_rolls: u64,
    /// The block cache.
    pub cache: CacheStats,
    /// I/O through the file system.
    pub io: IoStatsSnapshot,
    /// Every table's figures.
    pub tables: Vec<TableStats>,
    /// Why the database refuses writes, if it does.
    pub read_only_reason: Option<String>,
}

impl Stats {
    /// Stalls of either kind: slowdowns plus stops.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let stats = db.stats();
    /// assert_eq!(stats.stalls(), stats.slowdowns + stats.stops);
    /// # Ok(()) }
    /// ```
    pub fn stalls(&self) -> u64 {
        self.slowdowns + self.stops
    }
}

/// An LSM table's shape now.
pub(super) fn lsm_shape(t: &LsmTable) -> Shape {
    shape_of(&t.super_version())
}

/// A B-tree table's shape now, read from every page.
pub(super) fn btree_shape(t: &BtreeTable) -> Result<Shape> {
    Ok(Shape {
        btree: Some(t.shape()?),
        ..Shape::default()
    })
}

fn shape_of(sv: &SuperVersion) -> Shape {
    let v = &sv.version;
    Shape {
        memtable_entries: sv.mem.table.len() as u64,
        memtable_bytes: sv.mem.approximate_bytes() as u64,
        immutable_memtables: sv.imms.len(),
        immutable_bytes: sv.imms.iter().map(|m| m.approximate_bytes() as u64).sum(),
        l0_runs: v.level(0).len(),
        l0_bytes: v.level_bytes(0),
        range_tombstones: v.range_dels.list.len()
            + std::iter::once(&sv.mem)
                .chain(&sv.imms)
                .map(|m| m.range_dels().len())
                .sum::<usize>(),
        levels: (1..LSM_LEVELS)
            .map(|n| ShapeLevel {
                level: n,
                files: v.level(n).len(),
                bytes: v.level_bytes(n),
            })
            .collect(),
        btree: None,
    }
}

pub(super) fn btree_stats(t: &BtreeTable) -> TableStats {
    let (height, file_pages, free_pages, image_pages) = t.quick_shape();
    let c = &t.store.file.counters;
    let k = &t.counters;
    let get = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    TableStats {
        name: t.name.clone(),
        kind: TableKind::Btree,
        btree: Some(BtreeStats {
            height,
            file_pages,
            free_pages,
            image_pages,
            idle_vacuums: get(&k.idle_vacuums),
            page_size: t.store.file.page_size as u64,
            pages_from_cache: c.from_cache.get(),
            pages_from_storage: get(&c.from_storage),
            pages_mapped: get(&c.from_map),
            pages_written: get(&c.written),
            page_bytes_written: get(&c.bytes_written),
            evictions_clean: get(&c.evictions_clean),
            evictions_dirty: get(&c.evictions_dirty),
            checkpoints: get(&k.checkpoints),
            checkpoint_seconds: get(&k.micros) as f64 / 1e6,
            checkpoint_pages: get(&k.pages),
            checkpoint_bytes: get(&k.bytes),
        }),
        ..TableStats::default()
    }
}

pub(super) fn table_stats(t: &LsmTable) -> TableStats {
    // One super version for every figure, so the shape and the levels agree.
    let sv = t.super_version();
    let shape = shape_of(&sv);
    let v = &sv.version;
    let opts = &t.options.compaction;
    let scores = compaction::level_scores(v, opts);
    let targets =
        (opts.style == CompactionStyle::Leveled).then(|| compaction::level_targets(v, opts));
    let counters = *t.counters.lock();
    let levels: Vec<LevelStats> = (0..LSM_LEVELS)
        .map(|n| {
            let c = counters.levels.get(n).copied().unwrap_or_default();
            LevelStats {
                level: n,
                files: v.level(n).len(),
                bytes: v.level_bytes(n),
                score: scores.get(n).copied().unwrap_or(0.0),
                target_bytes: targets
                    .as_ref()
                    .filter(|t| n >= t.base_level.max(1))
                    .and_then(|t| t.targets.get(n).copied())
                    .unwrap_or(0),
                compactions: if n == 0 {
                    counters.flushes
                } else {
                    c.compactions
                },
                trivial_moves: c.trivial_moves,
                seconds: if n == 0 {
                    counters.flush_micros as f64 / 1e6
                } else {
                    c.micros as f64 / 1e6
                },
                read_above_bytes: c.read_above,
                read_here_bytes: c.read_here,
                written_bytes: c.written,
            }
        })
        .collect();
    let flushed = counters.levels[0].written;
    let written: u64 = counters.levels.iter().map(|l| l.written).sum();
    TableStats {
        name: t.name.clone(),
        kind: TableKind::Lsm,
        btree: None,
        compaction_style: opts.style.name().to_string(),
        shape,
        flushes: counters.flushes,
        flush_seconds: counters.flush_micros as f64 / 1e6,
        compactions: counters.levels.iter().skip(1).map(|l| l.compactions).sum(),
        compaction_seconds: counters
            .levels
            .iter()
            .skip(1)
            .map(|l| l.micros)
            .sum::<u64>() as f64
            / 1e6,
        write_amplification: if flushed > 0 {
            written as f64 / flushed as f64
        } else {
            0.0
        },
        levels,
        bloom_checks: t.bloom_checks.get(),
        bloom_useful: t.bloom_negatives.get(),
        pending_compaction_bytes: sv.pressure.pending_compaction_bytes,
    }
}

pub(super) fn collect(db: &DbInner) -> Stats {
    let c = &db.counters;
    let get = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    let tables: Vec<Core> = db.vs.lock().tables.values().cloned().collect();
    // The catalog is ordered by name.
    let table_figures: Vec<TableStats> = tables.iter().map(Core::stats).collect();
    Stats {
        commits: get(&c.commits),
        commit_groups: get(&c.commit_groups),
        wal_syncs: get(&c.wal_syncs),
        wal_bytes: get(&c.wal_bytes),
        synced_seqno: db.wal.lock().synced_seqno,
        flushes: get(&c.flushes),
        flush_bytes: get(&c.flush_bytes),
        compactions: get(&c.compactions),
        trivial_moves: get(&c.trivial_moves),
        compaction_bytes_read: get(&c.compaction_bytes_read),
        compaction_bytes_written: get(&c.compaction_bytes_written),
        slowdowns: get(&c.slowdowns),
        slowdown_micros: get(&c.slowdown_micros),
        stops: get(&c.stops),
        stop_micros: get(&c.stop_micros),
        running_jobs: db.bg.lock().running,
        manifest_rolls: get(&c.manifest_rolls),
        cache: db.cache.stats(),
        io: db.fs.io_stats().snapshot(),
        tables: table_figures,
        read_only_reason: db.read_only.lock().clone(),
    }
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "commits            {} in {} groups",
            self.commits, self.commit_groups
        )?;
        writeln!(
            f,
            "wal                {} bytes, {} syncs, synced through seqno {}",
            self.wal_bytes, self.wal_syncs, self.synced_seqno
        )?;
        writeln!(
            f,
            "flushes            {} ({} bytes)",
            self.flushes, self.flush_bytes
        )?;
        writeln!(
            f,
            "compactions        {} ({} trivial moves), read {} bytes, wrote {} bytes",
            self.compactions,
            self.trivial_moves,
            self.compaction_bytes_read,
            self.compaction_bytes_written
        )?;
        writeln!(
            f,
            "stalls             {} slowdowns ({} us), {} stops ({} us)",
            self.slowdowns, self.slowdown_micros, self.stops, self.stop_micros
        )?;
        writeln!(f, "manifest rolls     {}", self.manifest_rolls)?;
        writeln!(
            f,
            "cache              {} / {} bytes, {} hits, {} misses, {} evictions",
            self.cache.usage_bytes,
            self.cache.capacity_bytes,
            self.cache.hits,
            self.cache.misses,
            self.cache.evictions
        )?;
        writeln!(
            f,
            "io                 read {} bytes in {} requests, wrote {} bytes in {} requests, {} syncs",
            self.io.bytes_read, self.io.read_requests, self.io.bytes_written, self.io.write_requests, self.io.syncs
        )?;
        if let Some(reason) = &self.read_only_reason {
            writeln!(f, "READ-ONLY          {reason}")?;
        }
        for t in &self.tables {
            writeln!(f)?;
            if let Some(b) = &t.btree {
                writeln!(f, "table {} (B-tree)", t.name)?;
                writeln!(
                    f,
                    "  height {}, {} pages of {} bytes ({} free, {} of them after the next checkpoint)",
                    b.height, b.file_pages, b.page_size, b.free_pages, b.image_pages
                )?;
                writeln!(
                    f,
                    "  pages read: {} from cache, {} from storage ({} through the map); written: {} ({} bytes)",
                    b.pages_from_cache,
                    b.pages_from_storage,
                    b.pages_mapped,
                    b.pages_written,
                    b.page_bytes_written
                )?;
                writeln!(
                    f,
                    "  evictions: {} clean, {} dirty; checkpoints: {} ({:.2} s, {} pages, {} bytes)",
                    b.evictions_clean,
                    b.evictions_dirty,
                    b.checkpoints,
                    b.checkpoint_seconds,
                    b.checkpoint_pages,
                    b.checkpoint_bytes
                )?;
                continue;
            }
            writeln!(f, "table {} ({} compaction)", t.name, t.compaction_style)?;
            writeln!(
                f,
                "  memtable {} entries, {} bytes; {} immutable ({} bytes)",
                t.shape.memtable_entries,
                t.shape.memtable_bytes,
                t.shape.immutable_memtables,
                t.shape.immutable_bytes
            )?;
            writeln!(
                f,
                "  {:<5} {:>6} {:>10} {:>6} {:>10} {:>10} {:>10} {:>10} {:>6} {:>9} {:>7} {:>6}",
                "Level",
                "Files",
                "Size(MB)",
                "Score",
                "Read(MB)",
                "Rn(MB)",
                "Rnp1(MB)",
                "Write(MB)",
                "W-Amp",
                "Comp(sec)",
                "Comp(n)",
                "Moved"
            )?;
            for l in &t.levels {
                if l.files == 0 && l.compactions == 0 {
                    continue;
                }
                writeln!(
                    f,
                    "  {:<5} {:>6} {:>10.1} {:>6.2} {:>10.1} {:>10.1} {:>10.1} {:>10.1} {:>6.1} {:>9.2} {:>7} {:>6}",
                    format!("L{}", l.level),
                    l.files,
                    mb(l.bytes),
                    l.score,
                    mb(l.read_above_bytes + l.read_here_bytes),
                    mb(l.read_above_bytes),
                    mb(l.read_here_bytes),
                    mb(l.written_bytes),
                    l.write_amplification(),
                    l.seconds,
                    l.compactions,
                    l.trivial_moves
                )?;
            }
            writeln!(
                f,
                "  flushes {} ({:.2} s), compactions {} ({:.2} s), write amplification {:.2}, pending compaction {} bytes",
                t.flushes,
                t.flush_seconds,
                t.compactions,
                t.compaction_seconds,
                t.write_amplification,
                t.pending_compaction_bytes
            )?;
            writeln!(
                f,
                "  bloom filter: {} checks, {} useful",
                t.bloom_checks, t.bloom_useful
            )?;
        }
        Ok(())
    }
}
