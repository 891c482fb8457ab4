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
//! Files: `benchmark` (the benchmarks `--benchmarks` names) and
//! `command_line` (clap's parser of the flags, and their checks); this one
//! holds `Config`, its defaults and its checks.
//!
//! Thread-safety: plain values.

mod benchmark;
mod command_line;
#[cfg(test)]
mod tests;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use spinney::{CompactionStyle, Compression, Durability, TableKind, TableOptions};

use crate::keys::{KeyFormat, KeyStyle};
use crate::lineup::{Engine, Scenario};
pub use benchmark::Benchmark;

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
    /// Bytes of log between two checkpoints of a B-tree: spinney's
    /// `Options::checkpoint_wal_bytes` (its default, 64 MiB, unless
    /// `--checkpoint_log_bytes` says otherwise) and WiredTiger's B-tree's
    /// `checkpoint=(log_size)`, so that both write their trees as often.
    pub checkpoint_log_bytes: u64,
    /// The database directory; `None` for a new temporary directory removed
    /// at the end of the run.
    pub db: Option<PathBuf>,
    /// Keep what `db` holds (and skip the fills that want a fresh database).
    pub use_existing_db: bool,
    /// Read table files through memory maps where the engine has the
    /// choice (`--mmap_read`: spinney's `Options::mmap_reads`, which
    /// spinney-lsm-mmap and spinney-btree-mmap set always; RocksDB's
    /// `allow_mmap_reads`).
    pub mmap_read: bool,
    /// Read table files around the OS's page cache
    /// (`--use_direct_reads`); engines without direct I/O report every
    /// benchmark not supported (`Engine::direct_io`).
    pub direct_reads: bool,
    /// Write flushes', compactions' and checkpoints' files around the OS's
    /// page cache (`--use_direct_io_for_flush_and_compaction`).
    pub direct_writes: bool,
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
    pub scenario: Option<Scenario>,
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
            checkpoint_log_bytes: spinney::Options::default().checkpoint_wal_bytes,
            db: None,
            use_existing_db: false,
            mmap_read: false,
            direct_reads: false,
            direct_writes: false,
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
            mmap_reads: self.mmap_read || self.engine.mmap_reads(),
            direct_reads: self.direct_reads,
            direct_writes: self.direct_writes,
            checkpoint_wal_bytes: self.checkpoint_log_bytes,
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
        if self.mmap_read && self.direct_reads {
            return Err("--mmap_read=1 and --use_direct_reads=1 contradict each other: a memory map reads through the OS's page cache".into());
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
        if !(CHECKPOINT_LOG_BYTES_MIN..=CHECKPOINT_LOG_BYTES_MAX)
            .contains(&self.checkpoint_log_bytes)
        {
            return Err(format!(
                "--checkpoint_log_bytes={} is outside {CHECKPOINT_LOG_BYTES_MIN}..={CHECKPOINT_LOG_BYTES_MAX} (1 MiB to 2 GiB: WiredTiger's log files take 100 KB to 2 GB)",
                self.checkpoint_log_bytes
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
            format!("--checkpoint_log_bytes={}", self.checkpoint_log_bytes),
            format!("--use_existing_db={}", u8::from(self.use_existing_db)),
            format!("--mmap_read={}", u8::from(self.mmap_read)),
            format!("--use_direct_reads={}", u8::from(self.direct_reads)),
            format!(
                "--use_direct_io_for_flush_and_compaction={}",
                u8::from(self.direct_writes)
            ),
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
        command_line::parse(args)
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

/// The range `--checkpoint_log_bytes` takes.
const CHECKPOINT_LOG_BYTES_MIN: u64 = 1 << 20;
const CHECKPOINT_LOG_BYTES_MAX: u64 = 2 << 30;

/// The most memtables per table `--max_write_buffer_number` takes.
pub const WRITE_BUFFERS_MAX: usize = 64;

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
