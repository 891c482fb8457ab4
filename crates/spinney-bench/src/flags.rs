//! The configuration of a run (`Config`) and its command line, in db_bench's
//! names and meanings: `--name=value` or `--name value`.
//!
//! Where spinney differs from db_bench, the flag's help says how:
//! - `--disable_wal=1` cannot skip the log (every spinney table shares one
//!   write-ahead log): it selects the weakest durability, `Durability::Off`,
//!   which writes the log in large pieces and never syncs it.
//! - `--stats_interval=N` keeps db_bench's meaning (a progress line every N
//!   operations, checked every 100 ms, so a line comes at the first look
//!   after N more); `--stats_interval_seconds=S` prints one every S seconds.
//!   Either way the line covers all threads of the benchmark.
//! - `--seed=0` (the default) draws a new seed in each process, as db_bench
//!   does, and prints it; a fixed `--seed` makes the same keys in every run.
//!   Either way each benchmark of a run draws its own stream, so readrandom
//!   after fillrandom and overwrite finds about 86% of its keys, as
//!   db_bench's does.
//! - `--engine=NAME` picks the engine (spinney's two kinds, or a peer built
//!   in with its cargo feature); `--use_lsm` and `--table_kind` pick
//!   spinney's kind as before. `--compare=A,B,... --rounds=N` runs the
//!   benchmarks on each engine in a child process of its own, N rounds, and
//!   prints the medians side by side (see `compare`).
//! - `--threads` applies to every benchmark except the sequential fills,
//!   which run in one thread (with several, db_bench has each thread write
//!   the same keys in the same order).
//!
//! Thread-safety: plain values.

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use clap::builder::BoolishValueParser;
use clap::error::ErrorKind;
use clap::{CommandFactory, Parser, ValueEnum};
use spinney::{CompactionStyle, Compression, Durability, TableKind, TableOptions};

use crate::engine::Engine;
use crate::keys::{KeyFormat, KeyStyle};

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

/// Everything a run needs to know. `Config::default()` is db_bench's
/// defaults with spinney's engine defaults; the command line changes it
/// through `Config::from_args`.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The benchmarks, run in order.
    pub benchmarks: Vec<Benchmark>,
    /// Entries to write, and the key range `[0, num)`.
    pub num: u64,
    /// Reads per thread of the read benchmarks; `None` for `num`.
    pub reads: Option<u64>,
    /// Threads of each benchmark (readers of readwhilewriting).
    pub threads: usize,
    /// When set, the random benchmarks run this long instead of `num` or
    /// `reads` operations.
    pub duration: Option<Duration>,
    /// Bytes of each key.
    pub key_size: usize,
    /// How a key writes its number (`--key_format`).
    pub key_style: KeyStyle,
    /// Bytes of each value.
    pub value_size: usize,
    /// Entries per batch of the fills, overwrite and deleterandom; `None`
    /// for 1 (fillseqbatch: 1000).
    pub batch_size: Option<usize>,
    /// The rate limit of readwhilewriting's writer; 0 for none.
    pub writes_per_second: u64,
    /// The engine to run on (`--engine`; `--use_lsm` and `--table_kind`
    /// pick spinney's kinds).
    pub engine: Engine,
    /// Bytes of the cache shared by SST blocks and B-tree pages.
    pub cache_size: u64,
    /// Bloom filter bits per key (LSM); 0 for no filter.
    pub bloom_bits: u32,
    /// Block (LSM) or page (B-tree) compression.
    pub compression: Compression,
    /// Leveled or tiered (LSM).
    pub compaction_style: CompactionStyle,
    /// Threads for flushes, compactions and checkpoints; 0 for none (the
    /// writers do the work).
    pub background_threads: usize,
    /// The nice increment of the background threads (spinney,
    /// `Options::background_nice`; Linux).
    pub background_nice: i32,
    /// Bytes of a memtable before it is flushed (LSM).
    pub write_buffer_size: usize,
    /// Memtables a table may hold, the active one and those frozen and
    /// waiting for their flush, before writers wait (LSM): RocksDB's
    /// `max_write_buffer_number`, spinney's `max_immutable_memtables` + 1.
    /// 2 in the lab, RocksDB's default and LevelDB's fixed count.
    pub write_buffers: usize,
    /// Bytes of a page (B-tree).
    pub page_size: usize,
    /// The database directory; `None` for a new temporary directory removed
    /// at the end of the run.
    pub db: Option<PathBuf>,
    /// Keep what `db` holds (and skip the fills that want a fresh database).
    pub use_existing_db: bool,
    /// The durability of every commit (`--sync`, `--disable_wal`).
    pub durability: Durability,
    /// Steps after each seek of seekrandom.
    pub seek_nexts: usize,
    /// Keys in each range deleterange deletes (db_bench's name).
    pub range_tombstone_width: u64,
    /// Print the latency histogram after each benchmark.
    pub histogram: bool,
    /// After each write benchmark, wait until the engine's background work
    /// is done and report the wait, the size and the cost then
    /// (`bench::settle`).
    pub settle: bool,
    /// A progress line every this many operations (db_bench's meaning);
    /// 0 for none.
    pub stats_interval_ops: u64,
    /// A progress line every this long.
    pub stats_interval: Option<Duration>,
    /// The length of one interval of the time series (CSV rows, plots).
    pub report_interval: Duration,
    /// Seed of every random choice of keys; 0 for a new one drawn by each
    /// run (see `Config::resolve_seed`).
    pub seed: u64,
    /// Write the time series here, as CSV.
    pub report: Option<PathBuf>,
    /// Draw ops/sec over time here (.svg or .png).
    pub plot: Option<PathBuf>,
    /// Show a progress bar (only ever on a terminal).
    pub progress: bool,
    /// Run this lab scenario instead of `benchmarks`.
    pub scenario: Option<crate::scenario::Scenario>,
    /// The size of a scenario, relative to its default (about a minute on
    /// two cores); above 0.
    pub scale: f64,
    /// How the iibench scenario writes its documents and index entries:
    /// each way listed is run (`--iibench_writes`).
    pub iibench_writes: Vec<IndexWrites>,
    /// Engines to compare, each in a child process (`--compare`); empty for
    /// a run on `engine` in this process.
    pub compare: Vec<Engine>,
    /// Rounds of a comparison.
    pub rounds: usize,
    /// Where a comparison's child writes its figures (a hidden flag).
    pub results_file: Option<PathBuf>,
    /// How long a comparison's child may run before it is killed and
    /// counted as failed; `None` for no limit.
    pub child_timeout: Option<Duration>,
    /// Another build of this lab, which runs the engines of a comparison
    /// that this build lacks (`--other_build`): Debian's RocksDB and LMDB
    /// and the current ones cannot share one binary, so one table holding
    /// `rocksdb` and `rocksdb-current` takes two builds.
    pub other_build: Option<PathBuf>,
}

impl Default for Config {
    fn default() -> Self {
        let table = TableOptions::default();
        let engine = spinney::Options::default();
        Config {
            benchmarks: vec![
                Benchmark::FillSeq,
                Benchmark::FillRandom,
                Benchmark::Overwrite,
                Benchmark::ReadRandom,
                Benchmark::ReadSeq,
                Benchmark::ReadReverse,
                Benchmark::SeekRandom,
                Benchmark::ReadWhileWriting,
            ],
            num: 1_000_000,
            reads: None,
            threads: 1,
            duration: None,
            key_size: 16,
            key_style: KeyStyle::Decimal,
            value_size: 100,
            batch_size: None,
            writes_per_second: 0,
            engine: Engine::SpinneyLsm,
            cache_size: engine.cache_size,
            bloom_bits: table.bloom_bits_per_key,
            compression: table.compression,
            compaction_style: table.compaction.style,
            background_threads: engine.background_threads,
            // The peers' background threads run at the priority of the
            // thread that opened them, so spinney's do too in the lab, not at
            // its own default (`Options::background_nice`, 10), which on two
            // cores hands the CPU to spinney's foreground.
            background_nice: 0,
            write_buffer_size: table.write_buffer_size,
            write_buffers: WRITE_BUFFERS_DEFAULT,
            page_size: table.page_size,
            db: None,
            use_existing_db: false,
            durability: Durability::Normal,
            seek_nexts: 0,
            range_tombstone_width: 100,
            histogram: false,
            settle: true,
            stats_interval_ops: 0,
            stats_interval: None,
            report_interval: Duration::from_secs(1),
            seed: 0,
            report: None,
            plot: None,
            progress: true,
            scenario: None,
            scale: 1.0,
            iibench_writes: vec![IndexWrites::Blind],
            compare: Vec::new(),
            rounds: ROUNDS_DEFAULT,
            results_file: None,
            child_timeout: None,
            other_build: None,
        }
    }
}

impl Config {
    /// The run's keys.
    pub fn keys(&self) -> KeyFormat {
        KeyFormat::with_style(self.key_size, self.key_style)
    }

    /// Reads per thread of the read benchmarks.
    pub fn reads(&self) -> u64 {
        self.reads.unwrap_or(self.num)
    }

    /// Entries per batch of `benchmark`.
    pub fn batch_size_for(&self, benchmark: Benchmark) -> usize {
        match benchmark {
            Benchmark::FillBatch => 1000,
            Benchmark::FillSeqBatch => self.batch_size.unwrap_or(1000),
            _ => self.batch_size.unwrap_or(1),
        }
        .max(1)
    }

    /// The structure of the engine's tables.
    pub fn table_kind(&self) -> TableKind {
        self.engine.kind()
    }

    /// The seed a run uses: `seed`, or a new one drawn from the clock and
    /// the process when it is 0 (never 0 itself).
    pub fn resolve_seed(&self) -> u64 {
        if self.seed != 0 {
            return self.seed;
        }
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let mixed = crate::keys::mix(nanos ^ (u64::from(std::process::id()) << 32));
        mixed.max(1)
    }

    /// spinney's table options for the engine's kind, with the flags applied.
    pub fn table_options(&self) -> TableOptions {
        self.table_options_of(self.table_kind())
    }

    /// spinney's table options for `kind`, with the flags applied.
    pub fn table_options_of(&self, kind: TableKind) -> TableOptions {
        let mut t = match kind {
            TableKind::Lsm => TableOptions::lsm(),
            TableKind::Btree => TableOptions::btree(),
        };
        t.compression = self.compression;
        t.bloom_bits_per_key = self.bloom_bits;
        t.write_buffer_size = self.write_buffer_size;
        t.page_size = self.page_size;
        t.compaction = match self.compaction_style {
            CompactionStyle::Leveled => spinney::CompactionOptions::leveled(),
            CompactionStyle::Tiered => spinney::CompactionOptions::tiered(),
        };
        t
    }

    /// The database's options with the flags applied.
    pub fn db_options(&self) -> spinney::Options {
        spinney::Options {
            durability: self.durability,
            cache_size: self.cache_size,
            background_threads: self.background_threads,
            background_nice: self.background_nice,
            log_writes: self.engine.log_writes().unwrap_or_default(),
            backpressure: spinney::Backpressure {
                max_immutable_memtables: self.write_buffers.saturating_sub(1).max(1),
                ..spinney::Backpressure::default()
            },
            ..spinney::Options::default()
        }
    }

    /// Checks what the engine would only find out in the middle of a run:
    /// keys that do not fit their width or the table, sizes past the limits.
    pub fn validate(&self) -> Result<(), String> {
        if self.benchmarks.is_empty() {
            return Err("--benchmarks names no benchmark".into());
        }
        if self.threads == 0 || self.threads > THREADS_MAX {
            return Err(format!(
                "--threads={} is outside 1..={THREADS_MAX}",
                self.threads
            ));
        }
        if self.key_size == 0 {
            return Err("--key_size must be at least 1".into());
        }
        let keys = self.keys();
        if self.num > keys.capacity() {
            return Err(format!(
                "--num={} does not fit in {} keys of {} bytes (--key_size); at most {}",
                self.num,
                self.key_style.name(),
                self.key_size,
                keys.capacity()
            ));
        }
        // readmissing adds one byte to the key.
        let engines: Vec<Engine> = if self.compare.is_empty() {
            vec![self.engine]
        } else {
            self.compare.clone()
        };
        // A comparison's engines this build lacks run from the other build,
        // which checks them itself.
        let other_runs_them = !self.compare.is_empty() && self.other_build.is_some();
        for engine in &engines {
            if !engine.is_built() && !other_runs_them {
                return Err(engine.not_built());
            }
        }
        if let Some(other) = &self.other_build {
            if self.compare.is_empty() || self.scenario.is_some() {
                return Err(
                    "--other_build runs engines of a comparison of benchmarks (--compare without --scenario)"
                        .into(),
                );
            }
            if !other.is_file() {
                return Err(format!(
                    "--other_build={}: no such program (scripts/build-current-peers.sh prints the path of the build with current RocksDB and LMDB)",
                    other.display()
                ));
            }
        }
        let (max_key, limited) = engines
            .iter()
            .map(|&e| (self.max_key_len(e), e))
            .min_by_key(|&(len, _)| len)
            .unwrap_or((usize::MAX, self.engine));
        if self.key_size + 1 > max_key {
            return Err(format!(
                "--key_size={} is too long for {limited}: keys (and readmissing's keys, one byte longer) may be at most {max_key} bytes",
                self.key_size
            ));
        }
        if self.value_size > spinney::limits::VALUE_BYTES_MAX {
            return Err(format!(
                "--value_size={} is above the limit of {} bytes",
                self.value_size,
                spinney::limits::VALUE_BYTES_MAX
            ));
        }
        if self.batch_size == Some(0) {
            return Err("--batch_size must be at least 1".into());
        }
        if self.report_interval.is_zero() {
            return Err("--report_interval_seconds must be above 0".into());
        }
        if self.use_existing_db && self.db.is_none() {
            return Err("--use_existing_db=1 needs --db=DIR".into());
        }
        if !(self.scale.is_finite() && self.scale > 0.0 && self.scale <= 1e6) {
            return Err(format!(
                "--scale={} must be above 0 (and at most 1e6)",
                self.scale
            ));
        }
        if !(2..=WRITE_BUFFERS_MAX).contains(&self.write_buffers) {
            return Err(format!(
                "--max_write_buffer_number={} is outside 2..={WRITE_BUFFERS_MAX} (the active memtable and at least one waiting for its flush)",
                self.write_buffers
            ));
        }
        if self.rounds == 0 || self.rounds > ROUNDS_MAX {
            return Err(format!(
                "--rounds={} is outside 1..={ROUNDS_MAX}",
                self.rounds
            ));
        }
        for (i, e) in self.compare.iter().enumerate() {
            if self.compare[..i].contains(e) {
                return Err(format!("--compare names {e} twice"));
            }
        }
        if !self.compare.is_empty() && self.use_existing_db {
            return Err("--compare runs each engine on a fresh database; it cannot take --use_existing_db=1".into());
        }
        Ok(())
    }

    /// The longest key `engine` takes.
    pub fn max_key_len(&self, engine: Engine) -> usize {
        match engine {
            _ if engine.is_spinney() => self.table_options_of(engine.kind()).max_key_len(),
            // LMDB's compiled-in limit (mdb_env_get_maxkeysize).
            Engine::Lmdb | Engine::LmdbCurrent => 511,
            // Keys of the others are limited far beyond the lab's.
            _ => spinney::limits::KEY_BYTES_MAX,
        }
    }

    /// The flags that make this configuration (without the program name):
    /// `Config::from_args` of them gives it back. A comparison starts its
    /// child processes with them.
    pub fn to_args(&self) -> Vec<String> {
        let mut args = vec![
            format!(
                "--benchmarks={}",
                self.benchmarks
                    .iter()
                    .map(|b| b.name())
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            format!("--num={}", self.num),
            format!("--reads={}", self.reads.map_or(-1, |r| r as i64)),
            format!("--threads={}", self.threads),
            format!(
                "--duration={}",
                self.duration.map_or(0.0, |d| d.as_secs_f64())
            ),
            format!("--key_size={}", self.key_size),
            format!("--key_format={}", self.key_style.name()),
            format!("--value_size={}", self.value_size),
            format!("--writes_per_second={}", self.writes_per_second),
            format!("--cache_size={}", self.cache_size),
            format!("--bloom_bits={}", self.bloom_bits),
            format!("--compression_type={}", self.compression.name()),
            format!("--compaction_style={}", self.compaction_style.name()),
            format!("--background_threads={}", self.background_threads),
            format!("--background_nice={}", self.background_nice),
            format!("--write_buffer_size={}", self.write_buffer_size),
            format!("--max_write_buffer_number={}", self.write_buffers),
            format!("--page_size={}", self.page_size),
            format!("--use_existing_db={}", u8::from(self.use_existing_db)),
            format!("--sync={}", u8::from(self.durability == Durability::Full)),
            format!(
                "--disable_wal={}",
                u8::from(self.durability == Durability::Off)
            ),
            format!("--seek_nexts={}", self.seek_nexts),
            format!("--range_tombstone_width={}", self.range_tombstone_width),
            format!("--histogram={}", u8::from(self.histogram)),
            format!("--settle={}", u8::from(self.settle)),
            format!("--stats_interval={}", self.stats_interval_ops),
            format!(
                "--stats_interval_seconds={}",
                self.stats_interval.map_or(0.0, |d| d.as_secs_f64())
            ),
            format!(
                "--report_interval_seconds={}",
                self.report_interval.as_secs_f64()
            ),
            format!("--seed={}", self.seed),
            format!("--progress={}", u8::from(self.progress)),
            format!("--scale={}", self.scale),
            format!(
                "--iibench_writes={}",
                self.iibench_writes
                    .iter()
                    .map(|w| w.name())
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            format!("--rounds={}", self.rounds),
            format!(
                "--child_timeout={}",
                self.child_timeout.map_or(0.0, |d| d.as_secs_f64())
            ),
        ];
        if self.compare.is_empty() {
            args.push(format!("--engine={}", self.engine.name()));
        } else {
            args.push(format!(
                "--compare={}",
                self.compare
                    .iter()
                    .map(|e| e.name())
                    .collect::<Vec<_>>()
                    .join(",")
            ));
        }
        if let Some(b) = self.batch_size {
            args.push(format!("--batch_size={b}"));
        }
        let path = |flag: &str, p: &Option<PathBuf>| {
            p.as_ref().map(|p| format!("--{flag}={}", p.display()))
        };
        args.extend(path("db", &self.db));
        args.extend(path("report", &self.report));
        args.extend(path("plot", &self.plot));
        args.extend(path("results_file", &self.results_file));
        args.extend(path("other_build", &self.other_build));
        if let Some(scenario) = self.scenario {
            args.push(format!("--scenario={}", scenario.name()));
        }
        args
    }

    /// Parses a command line (the first item is the program name) into a
    /// configuration. The error is clap's: `err.exit()` prints it and exits
    /// with 2 for bad flags (0 for `--help` and `--version`).
    pub fn from_args<I, T>(args: I) -> Result<Config, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let flags = Flags::try_parse_from(args)?;
        flags
            .into_config()
            .map_err(|message| Flags::command().error(ErrorKind::ValueValidation, message))
    }
}

/// Most threads a benchmark may start: far past what a measurement on one
/// machine can use, low enough that a typo does not start a million.
pub const THREADS_MAX: usize = 1024;

/// Rounds of a comparison by default: the median of three is robust to one
/// disturbed round.
pub const ROUNDS_DEFAULT: usize = 3;

/// Most rounds of a comparison.
pub const ROUNDS_MAX: usize = 1000;

/// Memtables per LSM table in the lab unless `--max_write_buffer_number`
/// says otherwise: RocksDB's default and LevelDB's only count, so that
/// every engine buffers alike (spinney's own default is 5:
/// `Backpressure::max_immutable_memtables` 4, plus the active one).
pub const WRITE_BUFFERS_DEFAULT: usize = 2;

/// The most memtables per table `--max_write_buffer_number` takes.
pub const WRITE_BUFFERS_MAX: usize = 64;

#[derive(Clone, Copy, ValueEnum)]
enum KindArg {
    Lsm,
    Btree,
}

#[derive(Clone, Copy, ValueEnum)]
enum KeyFormatArg {
    Decimal,
    Binary,
}

#[derive(Clone, Copy, ValueEnum)]
enum CompressionArg {
    None,
    Lz4,
    Zstd,
}

#[derive(Clone, Copy, ValueEnum)]
enum CompactionArg {
    Leveled,
    Tiered,
}

/// The command line. Flag names are db_bench's (snake_case); boolean flags
/// take 0/1 (or true/false), and alone mean 1.
#[derive(Parser)]
#[command(
    name = "spinney-bench",
    version,
    rename_all = "snake_case",
    about = "db_bench-compatible benchmarks of spinney's LSM and B-tree tables",
    long_about = "db_bench-compatible benchmarks of spinney's LSM and B-tree tables.\n\n\
        With no arguments: a short comparison of an LSM table and a B-tree \
        table on the same workloads (about a minute). With any flag: \
        db_bench mode, one table of one kind."
)]
struct Flags {
    /// Comma-separated benchmarks, run in order: fillseq, fillseqbatch,
    /// fillrandom, fillbatch, overwrite, readseq, readreverse, readrandom,
    /// readmissing, readwhilewriting, seekrandom, deleterandom, flush,
    /// compact, compact0, compact1, compactall, waitforcompaction,
    /// checkpoint, stats, shape. Default: fillseq, fillrandom, overwrite,
    /// readrandom, readseq, readreverse, seekrandom, readwhilewriting.
    #[arg(long, value_name = "LIST")]
    benchmarks: Option<String>,
    /// Entries to write; keys are drawn from [0, num).
    #[arg(long, default_value_t = 1_000_000)]
    num: u64,
    /// Reads per thread of the read benchmarks; negative for --num.
    #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
    reads: i64,
    /// Threads per benchmark (readers of readwhilewriting; the sequential
    /// fills always use one).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Seconds the random benchmarks run instead of --num/--reads
    /// operations; 0 for off.
    #[arg(long, default_value_t = 0.0)]
    duration: f64,
    /// Bytes of each key.
    #[arg(long, default_value_t = 16)]
    key_size: usize,
    /// decimal: LevelDB's db_bench keys (the number zero-padded, %016d);
    /// binary: RocksDB's db_bench keys (the number in 8 big-endian bytes,
    /// then '0' padding).
    #[arg(long, value_enum, default_value = "decimal")]
    key_format: KeyFormatArg,
    /// Bytes of each value (compressible to half).
    #[arg(long, default_value_t = 100)]
    value_size: usize,
    /// Entries per batch of the fills, overwrite and deleterandom
    /// (default 1; fillseqbatch 1000; fillbatch always 1000).
    #[arg(long)]
    batch_size: Option<usize>,
    /// Rate limit of readwhilewriting's writer, in writes per second; 0 for
    /// none.
    #[arg(long, default_value_t = 0)]
    writes_per_second: u64,
    /// The engine: spinney-lsm, spinney-btree, or a peer built in with its
    /// cargo feature: rocksdb, wiredtiger-btree, wiredtiger-lsm, leveldb,
    /// lmdb, fjall, redb (docs/peers.md).
    #[arg(long, value_name = "NAME")]
    engine: Option<String>,
    /// Run the benchmarks (or the scenario) on each of these engines, each
    /// in a child process of its own, --rounds times, and print the medians
    /// side by side.
    #[arg(long, value_name = "LIST")]
    compare: Option<String>,
    /// Rounds of --compare; the order of the engines alternates from round
    /// to round.
    #[arg(long, default_value_t = ROUNDS_DEFAULT)]
    rounds: usize,
    /// Where a comparison's child process writes its figures.
    #[arg(long, hide = true, value_name = "FILE")]
    results_file: Option<PathBuf>,
    /// Seconds a child of --compare (one engine's run) may take before it
    /// is killed and reported as failed; 0 for no limit.
    #[arg(long, default_value_t = 0.0)]
    child_timeout: f64,
    /// Another build of spinney-bench, which runs the engines of --compare
    /// that this build lacks: `rocksdb` and `rocksdb-current` (or `lmdb`
    /// and `lmdb-current`) cannot share one binary, so one table of both
    /// runs one from a build with --features peers and the other from the
    /// path scripts/build-current-peers.sh prints.
    #[arg(long, value_name = "PATH")]
    other_build: Option<PathBuf>,
    /// 1 for spinney's LSM table, 0 for its B-tree table (the same as
    /// --table_kind, or --engine=spinney-lsm and spinney-btree).
    #[arg(long, value_parser = BoolishValueParser::new(), num_args = 0..=1, default_missing_value = "1")]
    use_lsm: Option<bool>,
    /// The structure of spinney's table.
    #[arg(long, value_enum)]
    table_kind: Option<KindArg>,
    /// Bytes of the cache shared by SST blocks and B-tree pages.
    #[arg(long, default_value_t = Config::default().cache_size)]
    cache_size: u64,
    /// Bloom filter bits per key (LSM); 0 for none.
    #[arg(long, default_value_t = Config::default().bloom_bits)]
    bloom_bits: u32,
    /// Block (LSM) or page (B-tree) compression.
    #[arg(long, value_enum, default_value = "none")]
    compression_type: CompressionArg,
    /// Compaction style of the LSM table.
    #[arg(long, value_enum, default_value = "leveled")]
    compaction_style: CompactionArg,
    /// Threads for flushes, compactions and checkpoints; 0 for none (the
    /// writers do the work).
    #[arg(long, default_value_t = Config::default().background_threads)]
    background_threads: usize,
    /// How much spinney's background threads lower their CPU priority (a
    /// nice increment, 0 to 19; Linux). 0 in the lab, as every peer's
    /// background threads run; spinney's own default is 10.
    #[arg(long, default_value_t = Config::default().background_nice)]
    background_nice: i32,
    /// Bytes of a memtable before it is flushed (LSM).
    #[arg(long, default_value_t = Config::default().write_buffer_size)]
    write_buffer_size: usize,
    /// Memtables an LSM table may hold (the active one and those waiting
    /// for their flush) before writers wait, at least 2: RocksDB's
    /// `max_write_buffer_number`, spinney's `max_immutable_memtables` + 1;
    /// LevelDB has 2, always.
    #[arg(long, default_value_t = Config::default().write_buffers)]
    max_write_buffer_number: usize,
    /// Bytes of a B-tree page (a power of two, 4096 to 32768).
    #[arg(long, default_value_t = Config::default().page_size)]
    page_size: usize,
    /// The database directory (default: a new temporary directory, removed
    /// at the end). Without --use_existing_db=1 its database is deleted
    /// first; a directory holding anything else is refused.
    #[arg(long, value_name = "DIR")]
    db: Option<PathBuf>,
    /// 1 to keep the database in --db (the fills that want a fresh one are
    /// skipped).
    #[arg(long, value_parser = BoolishValueParser::new(), num_args = 0..=1, default_missing_value = "1", default_value = "0")]
    use_existing_db: bool,
    /// 1 to sync each commit (Durability::Full); 0 for the default
    /// (Durability::Normal: written to the OS at each commit, synced at
    /// flushes).
    #[arg(long, value_parser = BoolishValueParser::new(), num_args = 0..=1, default_missing_value = "1", default_value = "0")]
    sync: bool,
    /// 1 for the weakest durability, Durability::Off: the log is still
    /// written (spinney's tables share it and cannot skip it), in large
    /// pieces and never synced.
    #[arg(long, value_parser = BoolishValueParser::new(), num_args = 0..=1, default_missing_value = "1", default_value = "0")]
    disable_wal: bool,
    /// Steps (next) after each seek of seekrandom.
    #[arg(long, default_value_t = 0)]
    seek_nexts: usize,
    /// Keys in each range that deleterange deletes.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    range_tombstone_width: u64,
    /// 1 to print the latency histogram of each benchmark.
    #[arg(long, value_parser = BoolishValueParser::new(), num_args = 0..=1, default_missing_value = "1", default_value = "0")]
    histogram: bool,
    /// 1 (the default) to wait after each write benchmark, timed apart from
    /// it, until the engine's background work is done, and report that wait
    /// with the database's size and the write amplification at that point;
    /// 0 to go on at once, as db_bench does.
    #[arg(long, value_parser = BoolishValueParser::new(), num_args = 0..=1, default_missing_value = "1", default_value = "1")]
    settle: bool,
    /// A progress line every N operations (db_bench's meaning); 0 for none.
    #[arg(long, default_value_t = 0)]
    stats_interval: u64,
    /// A progress line every S seconds; 0 for none.
    #[arg(long, default_value_t = 0.0)]
    stats_interval_seconds: f64,
    /// Seconds per interval of the time series (--report, --plot).
    #[arg(long, default_value_t = 1.0)]
    report_interval_seconds: f64,
    /// Seed of the random keys; 0 for a new seed drawn by each run (and
    /// printed), as db_bench does.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Write the time series (one row per interval) to this CSV file.
    #[arg(long, value_name = "FILE.csv")]
    report: Option<PathBuf>,
    /// Draw ops/sec over time, one line per benchmark (.svg or .png).
    #[arg(long, value_name = "FILE")]
    plot: Option<PathBuf>,
    /// 0 to never show the progress bar (it shows only on a terminal).
    #[arg(long, value_parser = BoolishValueParser::new(), num_args = 0..=1, default_missing_value = "1", default_value = "1")]
    progress: bool,
    /// Run a lab scenario instead of --benchmarks: btree-vs-lsm, lsm-shape,
    /// iibench, lsm-buffers (see docs/bench.md). Flags that a scenario does
    /// not set itself (cache, compression, --db, --report, --plot, --seed)
    /// apply to it.
    #[arg(long, value_name = "NAME")]
    scenario: Option<String>,
    /// The size of a scenario relative to its default (1: about a minute on
    /// two cores).
    #[arg(long, default_value_t = 1.0)]
    scale: f64,
    /// How iibench writes each batch of documents: blind (puts only, as
    /// iibench does) or rmw (a read-modify-write transaction that first
    /// reads every key it will write: the documents' ids and their index
    /// entries must be absent, as an application's unique checks read).
    /// A list runs each: blind,rmw.
    #[arg(long, default_value = "blind")]
    iibench_writes: String,
}

impl Flags {
    fn into_config(self) -> Result<Config, String> {
        let benchmarks = match &self.benchmarks {
            None => Config::default().benchmarks,
            Some(list) => parse_benchmarks(list)?,
        };
        let kind_from_lsm = self.use_lsm.map(|lsm| {
            if lsm {
                TableKind::Lsm
            } else {
                TableKind::Btree
            }
        });
        let kind_from_name = self.table_kind.map(|k| match k {
            KindArg::Lsm => TableKind::Lsm,
            KindArg::Btree => TableKind::Btree,
        });
        let table_kind = match (kind_from_lsm, kind_from_name) {
            (Some(a), Some(b)) if a != b => {
                return Err(format!(
                    "--use_lsm={} and --table_kind={} disagree",
                    u8::from(a == TableKind::Lsm),
                    b.name()
                ))
            }
            (Some(k), _) | (None, Some(k)) => Some(k),
            (None, None) => None,
        };
        let engine = match (&self.engine, table_kind) {
            (None, kind) => Engine::spinney(kind.unwrap_or(TableKind::Lsm)),
            (Some(name), kind) => {
                let engine = Engine::from_name(name).ok_or_else(|| {
                    format!(
                        "unknown engine '{name}'; valid engines are: {}",
                        Engine::names()
                    )
                })?;
                if let Some(kind) = kind {
                    if engine != Engine::spinney(kind) {
                        return Err(format!(
                            "--engine={name} and --use_lsm/--table_kind={} disagree",
                            kind.name()
                        ));
                    }
                }
                engine
            }
        };
        let compare = match &self.compare {
            None => Vec::new(),
            Some(list) => parse_engines(list)?,
        };
        if !compare.is_empty() && (self.engine.is_some() || table_kind.is_some()) {
            return Err(
                "--compare names the engines; leave out --engine, --use_lsm and --table_kind"
                    .into(),
            );
        }
        if self.sync && self.disable_wal {
            return Err("--sync=1 and --disable_wal=1 contradict each other".into());
        }
        let durability = if self.sync {
            Durability::Full
        } else if self.disable_wal {
            Durability::Off
        } else {
            Durability::Normal
        };
        let seconds = |name: &str, s: f64| -> Result<Option<Duration>, String> {
            if !s.is_finite() || s < 0.0 {
                return Err(format!(
                    "--{name}={s} must be a number of seconds, 0 or more"
                ));
            }
            Ok((s > 0.0).then(|| Duration::from_secs_f64(s)))
        };
        let config = Config {
            benchmarks,
            num: self.num,
            reads: u64::try_from(self.reads).ok(),
            threads: self.threads,
            duration: seconds("duration", self.duration)?,
            key_size: self.key_size,
            key_style: match self.key_format {
                KeyFormatArg::Decimal => KeyStyle::Decimal,
                KeyFormatArg::Binary => KeyStyle::Binary,
            },
            value_size: self.value_size,
            batch_size: self.batch_size,
            writes_per_second: self.writes_per_second,
            engine,
            cache_size: self.cache_size,
            bloom_bits: self.bloom_bits,
            compression: match self.compression_type {
                CompressionArg::None => Compression::None,
                CompressionArg::Lz4 => Compression::Lz4,
                CompressionArg::Zstd => Compression::Zstd,
            },
            compaction_style: match self.compaction_style {
                CompactionArg::Leveled => CompactionStyle::Leveled,
                CompactionArg::Tiered => CompactionStyle::Tiered,
            },
            background_threads: self.background_threads,
            background_nice: self.background_nice,
            write_buffer_size: self.write_buffer_size,
            write_buffers: self.max_write_buffer_number,
            page_size: self.page_size,
            db: self.db,
            use_existing_db: self.use_existing_db,
            durability,
            seek_nexts: self.seek_nexts,
            range_tombstone_width: self.range_tombstone_width,
            histogram: self.histogram,
            settle: self.settle,
            stats_interval_ops: self.stats_interval,
            stats_interval: seconds("stats_interval_seconds", self.stats_interval_seconds)?,
            report_interval: seconds("report_interval_seconds", self.report_interval_seconds)?
                .unwrap_or(Duration::ZERO),
            seed: self.seed,
            report: self.report,
            plot: self.plot,
            progress: self.progress,
            scenario: match &self.scenario {
                None => None,
                Some(name) => {
                    Some(crate::scenario::Scenario::from_name(name).ok_or_else(|| {
                        format!(
                            "unknown scenario '{name}'; valid scenarios are: {}",
                            crate::scenario::Scenario::names()
                        )
                    })?)
                }
            },
            scale: self.scale,
            iibench_writes: parse_index_writes(&self.iibench_writes)?,
            compare,
            rounds: self.rounds,
            results_file: self.results_file,
            child_timeout: seconds("child_timeout", self.child_timeout)?,
            other_build: self.other_build,
        };
        config.validate()?;
        Ok(config)
    }
}

/// The engines of a `--compare` list (empty names skipped).
/// The ways of an `--iibench_writes` list, each once, in the order given.
fn parse_index_writes(list: &str) -> Result<Vec<IndexWrites>, String> {
    let mut ways = Vec::new();
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let way = IndexWrites::from_name(name).ok_or_else(|| {
            format!("unknown --iibench_writes '{name}'; valid ways are: blind, rmw")
        })?;
        if ways.contains(&way) {
            return Err(format!("--iibench_writes names '{name}' twice"));
        }
        ways.push(way);
    }
    if ways.is_empty() {
        return Err("--iibench_writes names no way of writing".into());
    }
    Ok(ways)
}

/// How the iibench scenario writes a batch of documents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexWrites {
    /// Puts only: the document and its index entries, unread (iibench's
    /// inserts; an LSM tree takes them without reading).
    Blind,
    /// A transaction that reads every key it writes first, then writes
    /// them: the read-before-write of an application that checks its
    /// keys are new (or keeps its indexes with the old row).
    Rmw,
}

impl IndexWrites {
    /// The name `--iibench_writes` takes.
    pub fn name(self) -> &'static str {
        match self {
            IndexWrites::Blind => "blind",
            IndexWrites::Rmw => "rmw",
        }
    }

    pub fn from_name(name: &str) -> Option<IndexWrites> {
        [IndexWrites::Blind, IndexWrites::Rmw]
            .into_iter()
            .find(|w| w.name() == name)
    }
}

fn parse_engines(list: &str) -> Result<Vec<Engine>, String> {
    let engines = list
        .split(',')
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .map(|name| {
            Engine::from_name(name).ok_or_else(|| {
                format!(
                    "unknown engine '{name}'; valid engines are: {}",
                    Engine::names()
                )
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    if engines.is_empty() {
        return Err("--compare names no engine".into());
    }
    Ok(engines)
}

/// The benchmarks of a `--benchmarks` list; empty names (a trailing comma)
/// are skipped, as db_bench does.
fn parse_benchmarks(list: &str) -> Result<Vec<Benchmark>, String> {
    list.split(',')
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .map(|name| {
            Benchmark::from_name(name).ok_or_else(|| {
                format!(
                    "unknown benchmark '{name}'; valid benchmarks are: {}",
                    Benchmark::names()
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Config, clap::Error> {
        Config::from_args(std::iter::once("spinney-bench").chain(args.iter().copied()))
    }

    #[test]
    fn db_bench_syntax_with_equals_and_with_a_space() {
        // Goal: `--num=5` and `--num 5` both work, with db_bench's snake_case names.
        let c = parse(&[
            "--num=5",
            "--key_size",
            "8",
            "--benchmarks=fillseq,readrandom",
        ])
        .expect("parse");
        assert_eq!(c.num, 5);
        assert_eq!(c.key_size, 8);
        assert_eq!(c.benchmarks, [Benchmark::FillSeq, Benchmark::ReadRandom]);
        assert_eq!(c.reads(), 5);
        let c = parse(&["--reads", "-1", "--histogram"]).expect("parse");
        assert_eq!(c.reads, None);
        assert!(c.histogram);
    }

    #[test]
    fn table_kind_flags_agree_or_fail() {
        // Goal: --use_lsm and --table_kind are one setting; a contradiction
        // is a usage error, not a silent choice.
        assert_eq!(
            parse(&["--use_lsm=0"]).expect("parse").engine,
            Engine::SpinneyBtree
        );
        assert_eq!(
            parse(&["--table_kind=btree", "--use_lsm=0"])
                .expect("parse")
                .engine,
            Engine::SpinneyBtree
        );
        assert_eq!(
            parse(&["--engine=spinney-btree", "--use_lsm=0"])
                .expect("parse")
                .engine,
            Engine::SpinneyBtree
        );
        let err = parse(&["--engine=spinney-lsm", "--use_lsm=0"]).expect_err("conflict");
        assert!(err.to_string().contains("disagree"), "{err}");
        let err = parse(&["--table_kind=btree", "--use_lsm=1"]).expect_err("conflict");
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().contains("disagree"), "{err}");
    }

    #[test]
    fn bad_flags_are_usage_errors() {
        // Goal: every kind of bad flag gives clap's exit code 2 and names the problem.
        for (args, needle) in [
            (vec!["--no_such_flag=1"], "no_such_flag"),
            (vec!["--num=abc"], "abc"),
            (vec!["--compression_type=snappy"], "snappy"),
            (vec!["--benchmarks=fillseq,frobnicate"], "frobnicate"),
            (vec!["--sync=1", "--disable_wal=1"], "contradict"),
            (vec!["--num=100000", "--key_size=4"], "does not fit"),
            (vec!["--threads=0"], "--threads"),
        ] {
            let err = parse(&args).expect_err("bad flag");
            assert_eq!(err.exit_code(), 2, "{args:?}");
            assert!(err.to_string().contains(needle), "{args:?}: {err}");
        }
        let err = parse(&["--benchmarks=nope"]).expect_err("unknown");
        assert!(err.to_string().contains("fillseq, fillseqbatch"), "{err}");
    }

    #[test]
    fn durability_mapping() {
        // Goal: --sync and --disable_wal select the strongest and weakest durability.
        assert_eq!(parse(&[]).expect("parse").durability, Durability::Normal);
        assert_eq!(
            parse(&["--sync=1"]).expect("parse").durability,
            Durability::Full
        );
        assert_eq!(
            parse(&["--disable_wal=1"]).expect("parse").durability,
            Durability::Off
        );
    }

    #[test]
    fn other_build_runs_only_the_engines_of_a_comparison_this_build_lacks() {
        // Goal: `--other_build` lets a comparison name an engine this build
        // lacks (its child runs from the other build), and nothing else: a
        // run on one engine, a scenario or a missing program is refused.
        let Some(missing) = Engine::ALL.into_iter().find(|e| !e.is_built()) else {
            return; // every engine is built: nothing to route elsewhere
        };
        let program = std::env::current_exe().expect("this test's program");
        let other = format!("--other_build={}", program.display());
        let compare = format!("--compare=spinney-lsm,{}", missing.name());
        let c = parse(&[&compare, &other]).expect("a comparison with the other build");
        assert_eq!(c.other_build.as_deref(), Some(program.as_path()));
        assert_eq!(
            Config::from_args(std::iter::once("x".to_string()).chain(c.to_args()))
                .ok()
                .map(|c| c.other_build),
            Some(Some(program.clone()))
        );
        let err = parse(&[&compare]).expect_err("not built, no other build");
        assert!(err.to_string().contains(missing.name()), "{err}");
        let one = format!("--engine={}", missing.name());
        assert!(parse(&[&one, &other]).is_err());
        let err = parse(&[&compare, "--other_build=/no/such/program"]).expect_err("missing");
        assert!(err.to_string().contains("no such program"), "{err}");
        let err = parse(&["--compare=spinney-lsm", "--scenario=btree-vs-lsm", &other])
            .expect_err("a scenario");
        assert!(err.to_string().contains("--other_build"), "{err}");
    }

    #[test]
    fn to_args_gives_the_configuration_back() {
        // Goal: a comparison's child process gets exactly the parent's
        // configuration, every field included, through its flags.
        let c = parse(&[
            "--benchmarks=fillrandom,readrandom,compact0",
            "--num=1234",
            "--reads=77",
            "--threads=3",
            "--duration=1.5",
            "--key_size=10",
            "--key_format=binary",
            "--value_size=33",
            "--batch_size=9",
            "--writes_per_second=100",
            "--engine=spinney-btree",
            "--cache_size=1000000",
            "--bloom_bits=7",
            "--compression_type=lz4",
            "--compaction_style=tiered",
            "--background_threads=1",
            "--background_nice=3",
            "--write_buffer_size=1048576",
            "--max_write_buffer_number=3",
            "--page_size=16384",
            "--db=/tmp/x y",
            "--sync=1",
            "--seek_nexts=4",
            "--range_tombstone_width=7",
            "--histogram=1",
            "--stats_interval=10",
            "--stats_interval_seconds=0.25",
            "--report_interval_seconds=2",
            "--seed=42",
            "--report=/tmp/r.csv",
            "--plot=/tmp/p.svg",
            "--progress=0",
            "--scenario=iibench",
            "--scale=0.5",
            "--iibench_writes=rmw,blind",
            "--rounds=5",
            "--child_timeout=90.5",
            "--results_file=/tmp/res",
        ])
        .expect("parse");
        let args = c.to_args();
        let back = Config::from_args(std::iter::once("spinney-bench".to_string()).chain(args))
            .expect("parse back");
        assert_eq!(back, c);
        let c = parse(&["--compare=spinney-btree,spinney-lsm", "--disable_wal=1"]).expect("parse");
        let back = Config::from_args(std::iter::once("x".to_string()).chain(c.to_args()))
            .expect("parse back");
        assert_eq!(back, c);
        assert_eq!(
            parse(&[]).expect("parse").to_args().len(),
            c.to_args().len()
        );
    }

    #[test]
    fn engines_and_comparisons_are_checked() {
        // Goal: --engine and --compare take known names only, a comparison
        // names each engine once, and an engine this build lacks says which
        // feature brings it in.
        let c = parse(&["--compare=spinney-lsm,spinney-btree", "--rounds=2"]).expect("parse");
        assert_eq!(c.compare, [Engine::SpinneyLsm, Engine::SpinneyBtree]);
        assert_eq!(c.rounds, 2);
        for (args, needle) in [
            (vec!["--engine=oracle"], "unknown engine 'oracle'"),
            (vec!["--compare=spinney-lsm,nope"], "unknown engine 'nope'"),
            (vec!["--compare=spinney-lsm,spinney-lsm"], "twice"),
            (vec!["--compare=,"], "names no engine"),
            (vec!["--compare=spinney-lsm", "--use_lsm=1"], "leave out"),
            (vec!["--compare=spinney-lsm", "--rounds=0"], "--rounds"),
            (
                vec!["--iibench_writes=blind,sideways"],
                "unknown --iibench_writes",
            ),
            (vec!["--iibench_writes=rmw,rmw"], "twice"),
            (vec!["--iibench_writes=,"], "names no way"),
        ] {
            let err = parse(&args).expect_err("bad");
            assert_eq!(err.exit_code(), 2, "{args:?}");
            assert!(err.to_string().contains(needle), "{args:?}: {err}");
        }
        for e in Engine::ALL.into_iter().filter(|e| !e.is_built()) {
            let err = parse(&[&format!("--engine={}", e.name())]).expect_err("not built");
            assert!(err.to_string().contains("--features"), "{err}");
        }
    }

    #[test]
    fn seed_zero_draws_a_new_seed_and_a_fixed_seed_stays() {
        // Goal: db_bench's --seed semantics: 0 draws a new (non-zero) seed
        // each time, anything else is kept.
        let c = parse(&[]).expect("parse");
        assert_eq!(c.seed, 0);
        let a = c.resolve_seed();
        std::thread::sleep(Duration::from_millis(2));
        let b = c.resolve_seed();
        assert!(a != 0 && b != 0);
        assert_ne!(a, b);
        assert_eq!(parse(&["--seed=5"]).expect("parse").resolve_seed(), 5);
    }

    #[test]
    fn batch_sizes() {
        // Goal: fillbatch is always 1000 per batch, fillseqbatch 1000 unless
        // --batch_size says otherwise, the others 1 unless it does.
        let c = parse(&[]).expect("parse");
        assert_eq!(c.batch_size_for(Benchmark::FillBatch), 1000);
        assert_eq!(c.batch_size_for(Benchmark::FillSeqBatch), 1000);
        assert_eq!(c.batch_size_for(Benchmark::FillRandom), 1);
        let c = parse(&["--batch_size=10"]).expect("parse");
        assert_eq!(c.batch_size_for(Benchmark::FillBatch), 1000);
        assert_eq!(c.batch_size_for(Benchmark::FillSeqBatch), 10);
        assert_eq!(c.batch_size_for(Benchmark::FillRandom), 10);
    }
}
