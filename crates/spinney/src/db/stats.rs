//! `Db::stats`: counters of the write path and background work, the shape of
//! every table, the cache, and the I/O done through the `Fs`.

use std::fmt;
use std::sync::atomic::Ordering;

use super::DbInner;
use crate::cache::CacheStats;
use crate::fs::IoStatsSnapshot;

/// One level of an LSM table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LevelStats {
    /// Number of SSTs (for L0, of sorted runs).
    pub files: usize,
    /// Bytes of those files.
    pub bytes: u64,
}

/// The shape of one table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableStats {
    /// The table's name.
    pub name: String,
    /// Entries in the active memtable.
    pub memtable_entries: usize,
    /// Bytes of the active memtable.
    pub memtable_bytes: usize,
    /// Frozen memtables waiting for flush.
    pub immutable_memtables: usize,
    /// L0 first, then each deeper level.
    pub levels: Vec<LevelStats>,
}

/// A copy of the database's figures at one moment.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    /// Batches committed.
    pub commits: u64,
    /// Commit groups (each led by one writer, sharing one log write).
    pub commit_groups: u64,
    /// Syncs of the log.
    pub wal_syncs: u64,
    /// Bytes of records appended to the log.
    pub wal_bytes: u64,
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
    /// Times a writer waited for background work.
    pub stalls: u64,
    /// Total time writers waited, in microseconds.
    pub stall_micros: u64,
    /// Times the manifest was rolled to a new file while the database ran
    /// (the new manifest written at open is not counted).
    pub manifest_rolls: u64,
    /// The block cache.
    pub cache: CacheStats,
    /// I/O through the file system.
    pub io: IoStatsSnapshot,
    /// Every table's shape.
    pub tables: Vec<TableStats>,
    /// Why the database refuses writes, if it does.
    pub read_only_reason: Option<String>,
}

pub(super) fn collect(db: &DbInner) -> Stats {
    let c = &db.counters;
    let get = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    let tables = db
        .vs
        .lock()
        .tables
        .values()
        .map(|t| {
            let sv = t.super_version();
            TableStats {
                name: t.name.clone(),
                memtable_entries: sv.mem.table.len(),
                memtable_bytes: sv.mem.table.approximate_bytes(),
                immutable_memtables: sv.imms.len(),
                levels: (0..sv.version.levels.len())
                    .map(|n| LevelStats {
                        files: sv.version.level(n).len(),
                        bytes: sv.version.level_bytes(n),
                    })
                    .collect(),
            }
        })
        .collect();
    Stats {
        commits: get(&c.commits),
        commit_groups: get(&c.commit_groups),
        wal_syncs: get(&c.wal_syncs),
        wal_bytes: get(&c.wal_bytes),
        flushes: get(&c.flushes),
        flush_bytes: get(&c.flush_bytes),
        compactions: get(&c.compactions),
        trivial_moves: get(&c.trivial_moves),
        compaction_bytes_read: get(&c.compaction_bytes_read),
        compaction_bytes_written: get(&c.compaction_bytes_written),
        stalls: get(&c.stalls),
        stall_micros: get(&c.stall_micros),
        manifest_rolls: get(&c.manifest_rolls),
        cache: db.cache.stats(),
        io: db.fs.io_stats().snapshot(),
        tables,
        read_only_reason: db.read_only.lock().clone(),
    }
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
            "wal                {} bytes, {} syncs",
            self.wal_bytes, self.wal_syncs
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
            "stalls             {} ({} us)",
            self.stalls, self.stall_micros
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
            writeln!(f, "table {}", t.name)?;
            writeln!(
                f,
                "  memtable         {} entries, {} bytes; {} immutable",
                t.memtable_entries, t.memtable_bytes, t.immutable_memtables
            )?;
            writeln!(f, "  level  files        bytes")?;
            for (n, l) in t.levels.iter().enumerate() {
                if l.files > 0 {
                    writeln!(f, "  L{n:<5} {:>5} {:>12}", l.files, l.bytes)?;
                }
            }
        }
        Ok(())
    }
}
