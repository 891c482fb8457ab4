//! What a user can set: per database (`Options`), per table (`TableOptions`),
//! per write (`WriteOptions`) and per read (`ReadOptions`).

use std::fmt;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::fs::{Fs, OsFs};
use crate::limits;

/// How much a commit promises to survive. After SQLite4 LSM's safety levels.
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TableKind {
    /// A log-structured merge tree: writes go to a memtable and are flushed
    /// to sorted files that compaction merges.
    #[default]
    Lsm,
    /// A B+tree of pages updated in place. Not yet available.
    Btree,
}

impl TableKind {
    /// The lowercase name ("lsm", "btree").
    pub fn name(self) -> &'static str {
        match self {
            TableKind::Lsm => "lsm",
            TableKind::Btree => "btree",
        }
    }
}

/// Block compression of a table's files.
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
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
        }
    }
}

/// How recovery treats a damaged write-ahead log.
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

/// Options of one table, fixed when it is created and kept in the catalog.
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
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            kind: TableKind::Lsm,
            compression: Compression::None,
            bloom_bits_per_key: 10,
            block_size: 4096,
            write_buffer_size: 8 << 20,
        }
    }
}

impl TableOptions {
    /// Defaults for an LSM table.
    pub fn lsm() -> Self {
        TableOptions::default()
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
        Ok(())
    }
}

/// Options of a database, given at each open.
#[derive(Clone)]
pub struct Options {
    /// Create the directory and an empty database when none exists.
    pub create_if_missing: bool,
    /// Refuse to open a database that already exists.
    pub error_if_exists: bool,
    /// The durability of commits that do not say otherwise.
    pub durability: Durability,
    /// Bytes of blocks the cache may keep, shared by all tables.
    pub cache_size: u64,
    /// How recovery treats a damaged log.
    pub wal_recovery: WalRecovery,
    /// A log segment is closed and a new one begun past this size.
    pub wal_segment_size: u64,
    /// Size in bytes at which the manifest (the log of table and file
    /// changes) is rolled: the next change goes to a new manifest that begins
    /// with one record of the whole state, and the old one is deleted. When
    /// that whole-state record is more than half this size, the manifest is
    /// rolled at twice the record's size instead, so that a large catalog is
    /// not rewritten at every change. At least 4 KiB; 64 MiB by default.
    pub max_manifest_size: u64,
    /// The file system. `OsFs` unless a test injects faults.
    pub fs: Arc<dyn Fs>,
}

impl fmt::Debug for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Options")
            .field("create_if_missing", &self.create_if_missing)
            .field("error_if_exists", &self.error_if_exists)
            .field("durability", &self.durability)
            .field("cache_size", &self.cache_size)
            .field("wal_recovery", &self.wal_recovery)
            .field("wal_segment_size", &self.wal_segment_size)
            .field("max_manifest_size", &self.max_manifest_size)
            .field("fs", &self.fs)
            .finish()
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            create_if_missing: true,
            error_if_exists: false,
            durability: Durability::Normal,
            cache_size: 64 << 20,
            wal_recovery: WalRecovery::TornTailOnly,
            wal_segment_size: limits::WAL_SEGMENT_BYTES_DEFAULT,
            max_manifest_size: limits::MANIFEST_BYTES_DEFAULT,
            fs: Arc::new(OsFs::new()),
        }
    }
}

impl Options {
    pub(crate) fn validate(&self) -> Result<()> {
        if self.wal_segment_size < limits::WAL_BLOCK_BYTES as u64 {
            return Err(Error::invalid(format!(
                "wal_segment_size {} is below one log block ({} bytes)",
                self.wal_segment_size,
                limits::WAL_BLOCK_BYTES
            )));
        }
        if self.max_manifest_size < limits::MANIFEST_BYTES_MIN {
            return Err(Error::invalid(format!(
                "max_manifest_size {} is below the minimum of {} bytes",
                self.max_manifest_size,
                limits::MANIFEST_BYTES_MIN
            )));
        }
        Ok(())
    }
}

/// Options of one write.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// Overrides the database's durability for this commit.
    pub durability: Option<Durability>,
}
