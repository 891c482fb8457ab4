//! The benchmarks of `--benchmarks`, by db_bench's names, and what kind
//! of step each is: a workload that writes or reads, an operation on the
//! database, or a printout.
//!
//! Thread-safety: plain values.

use std::fmt;

/// One benchmark of `--benchmarks`: a workload, or an operation on the
/// database (flush, compaction, checkpoint) or a printout (stats, shape).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Benchmark {
    /// Write `num` entries in key order into a fresh database.
    FillSeq,
    /// Write `num` entries in key order, `--batch_size` (1000 if not given)
    /// per batch, into a fresh database.
    FillSeqBatch,
    /// Write `num` entries at random keys into a fresh database.
    FillRandom,
    /// db_bench's `fillbatch`: `num` entries in key order, 1000 per batch,
    /// into a fresh database.
    FillBatch,
    /// Write `num` entries at random keys into the current database.
    Overwrite,
    /// Read `reads` entries in key order with one cursor per thread.
    ReadSeq,
    /// Read `reads` entries in reverse key order.
    ReadReverse,
    /// Get `reads` random keys.
    ReadRandom,
    /// Get `reads` keys that do not exist.
    ReadMissing,
    /// `--threads` readers doing readrandom while one writer overwrites
    /// random keys, rate-limited by `--writes_per_second`.
    ReadWhileWriting,
    /// Seek to `reads` random keys, then step `--seek_nexts` times.
    SeekRandom,
    /// Delete `num` random keys.
    DeleteRandom,
    /// Delete `num / range_tombstone_width` ranges of
    /// `--range_tombstone_width` keys, each from a random key, one range a
    /// commit: spinney's and RocksDB's range deletes, WiredTiger's B-tree
    /// truncate; LMDB, LevelDB, fjall and redb have none, and delete each
    /// key of the range in the commit (as their users do); WiredTiger's
    /// LSM reports it not supported.
    DeleteRange,
    /// `Db::flush`.
    Flush,
    /// Compact the whole key range (`Table::compact_all`).
    Compact,
    /// Compact L0 into the level below (`Table::compact_level(0)`).
    Compact0,
    /// Compact L1 into L2 (`Table::compact_level(1)`).
    Compact1,
    /// The same as `compact`: everything into one sorted run.
    CompactAll,
    /// `Db::wait_for_compaction`.
    WaitForCompaction,
    /// `Db::checkpoint` (B-tree tables).
    Checkpoint,
    /// Print `Db::stats`.
    Stats,
    /// Print `Table::shape`.
    Shape,
}

impl Benchmark {
    /// Every benchmark, in the order `--help` lists them.
    pub const ALL: [Benchmark; 22] = [
        Benchmark::FillSeq,
        Benchmark::FillSeqBatch,
        Benchmark::FillRandom,
        Benchmark::FillBatch,
        Benchmark::Overwrite,
        Benchmark::ReadSeq,
        Benchmark::ReadReverse,
        Benchmark::ReadRandom,
        Benchmark::ReadMissing,
        Benchmark::ReadWhileWriting,
        Benchmark::SeekRandom,
        Benchmark::DeleteRandom,
        Benchmark::DeleteRange,
        Benchmark::Flush,
        Benchmark::Compact,
        Benchmark::Compact0,
        Benchmark::Compact1,
        Benchmark::CompactAll,
        Benchmark::WaitForCompaction,
        Benchmark::Checkpoint,
        Benchmark::Stats,
        Benchmark::Shape,
    ];

    /// The db_bench name.
    pub fn name(self) -> &'static str {
        match self {
            Benchmark::FillSeq => "fillseq",
            Benchmark::FillSeqBatch => "fillseqbatch",
            Benchmark::FillRandom => "fillrandom",
            Benchmark::FillBatch => "fillbatch",
            Benchmark::Overwrite => "overwrite",
            Benchmark::ReadSeq => "readseq",
            Benchmark::ReadReverse => "readreverse",
            Benchmark::ReadRandom => "readrandom",
            Benchmark::ReadMissing => "readmissing",
            Benchmark::ReadWhileWriting => "readwhilewriting",
            Benchmark::SeekRandom => "seekrandom",
            Benchmark::DeleteRandom => "deleterandom",
            Benchmark::DeleteRange => "deleterange",
            Benchmark::Flush => "flush",
            Benchmark::Compact => "compact",
            Benchmark::Compact0 => "compact0",
            Benchmark::Compact1 => "compact1",
            Benchmark::CompactAll => "compactall",
            Benchmark::WaitForCompaction => "waitforcompaction",
            Benchmark::Checkpoint => "checkpoint",
            Benchmark::Stats => "stats",
            Benchmark::Shape => "shape",
        }
    }

    /// The benchmark called `name`, if there is one.
    pub fn from_name(name: &str) -> Option<Benchmark> {
        Benchmark::ALL.into_iter().find(|b| b.name() == name)
    }

    /// Every name, comma-separated, for messages.
    pub fn names() -> String {
        Benchmark::ALL.map(Benchmark::name).join(", ")
    }

    /// True for the fills that start from an empty database.
    pub fn wants_fresh_db(self) -> bool {
        matches!(
            self,
            Benchmark::FillSeq
                | Benchmark::FillSeqBatch
                | Benchmark::FillRandom
                | Benchmark::FillBatch
        )
    }

    /// True for the single operations on the database (flush, compactions,
    /// checkpoint, waitforcompaction): timed as one operation.
    pub fn is_operation(self) -> bool {
        matches!(
            self,
            Benchmark::Flush
                | Benchmark::Compact
                | Benchmark::Compact0
                | Benchmark::Compact1
                | Benchmark::CompactAll
                | Benchmark::WaitForCompaction
                | Benchmark::Checkpoint
        )
    }

    /// True for the printouts (stats, shape): no timing, no result.
    pub fn is_printout(self) -> bool {
        matches!(self, Benchmark::Stats | Benchmark::Shape)
    }

    /// True for the benchmarks whose operations are reads (their figures
    /// include the read context per query).
    pub fn is_read(self) -> bool {
        matches!(
            self,
            Benchmark::ReadSeq
                | Benchmark::ReadReverse
                | Benchmark::ReadRandom
                | Benchmark::ReadMissing
                | Benchmark::ReadWhileWriting
                | Benchmark::SeekRandom
        )
    }

    /// True for the benchmarks whose operations write (puts or deletes).
    pub fn is_write(self) -> bool {
        matches!(
            self,
            Benchmark::FillSeq
                | Benchmark::FillSeqBatch
                | Benchmark::FillRandom
                | Benchmark::FillBatch
                | Benchmark::Overwrite
                | Benchmark::DeleteRandom
                | Benchmark::DeleteRange
        )
    }

    /// What one operation is, for the histogram's title (RocksDB's
    /// "Microseconds per read:").
    pub fn operation(self) -> &'static str {
        match self {
            Benchmark::FillSeq
            | Benchmark::FillSeqBatch
            | Benchmark::FillRandom
            | Benchmark::FillBatch
            | Benchmark::Overwrite => "write",
            Benchmark::ReadSeq
            | Benchmark::ReadReverse
            | Benchmark::ReadRandom
            | Benchmark::ReadMissing
            | Benchmark::ReadWhileWriting => "read",
            Benchmark::SeekRandom => "seek",
            Benchmark::DeleteRandom => "delete",
            Benchmark::DeleteRange => "range delete",
            _ => "op",
        }
    }
}

impl fmt::Display for Benchmark {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
