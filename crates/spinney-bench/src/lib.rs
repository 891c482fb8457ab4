//! spinney-bench: db_bench-compatible benchmarks of spinney's LSM and
//! B-tree tables.
//!
//! A run opens one database with one table (named `default`) of the kind
//! the configuration asks for, runs the benchmarks of `Config::benchmarks`
//! in order, prints one db_bench line per benchmark (`fillseq      :
//! 1.234 micros/op 810372 ops/sec;   89.6 MB/s`) followed by the database's
//! size, its costs per 1,000 operations and, for reads, the read context
//! per query; and returns the same figures as a `BenchResult` per benchmark.
//! `run_compare` runs one workload list on several engines (spinney's two
//! kinds and the peers built in), each in a child process, and prints them
//! side by side.
//!
//! ```
//! use spinney_bench::{run_benchmarks, Benchmark, Config};
//!
//! let dir = tempfile::tempdir().expect("tempdir");
//! let config = Config {
//!     benchmarks: vec![Benchmark::FillSeq, Benchmark::ReadRandom],
//!     num: 1000,
//!     db: Some(dir.path().join("db")),
//!     progress: false,
//!     ..Config::default()
//! };
//! let mut out = Vec::new();
//! let results = run_benchmarks(&config, &mut out).expect("run");
//! assert_eq!(results[1].found.map(|f| f.found), Some(1000));
//! assert!(String::from_utf8_lossy(&out).contains("readrandom   :"));
//! ```
//!
//! Layout: `lineup` (the engines and scenarios, by name), `flags` (the
//! configuration and its command line), `keys` (db_bench's keys and
//! values), `engine` (the adapters every engine is measured through),
//! `bench` (running benchmarks: `worker` times threads and cuts intervals,
//! `workloads` holds what each benchmark does), `results_file` (the figures
//! a child of `--compare` hands its parent), `compare` (`--compare`),
//! `scenario` (the lab's scenarios), `latency` (histograms), `measure`
//! (I/O, CPU, size), `output` (db_bench's text), `report` (CSV),
//! `progress` (the bar), `plot` (charts), `dirs` (where a run keeps its
//! databases).

// Debian's RocksDB and LMDB and the current ones built from the -sys
// crates' bundled source define the same C symbols: in one binary, one
// copy would silently stand in for the other.
#[cfg(all(feature = "rocksdb", feature = "rocksdb-current"))]
compile_error!("features `rocksdb` and `rocksdb-current` exclude each other: build `--features peers` or `--features peers-current`");
#[cfg(all(feature = "lmdb", feature = "lmdb-current"))]
compile_error!("features `lmdb` and `lmdb-current` exclude each other: build `--features peers` or `--features peers-current`");

// Linked for their C libraries only; the adapters declare the C APIs.
#[cfg(feature = "rocksdb-current")]
use librocksdb_sys as _;
#[cfg(feature = "lmdb-current")]
use lmdb_master_sys as _;

mod bench;
mod compare;
mod dirs;
mod engine;
mod flags;
mod keys;
mod latency;
mod lineup;
mod measure;
mod output;
pub mod plot;
mod progress;
mod report;
mod results_file;
pub mod scenario;

use std::time::Duration;

pub use bench::{default_comparison_config, run_benchmarks, TABLE};
pub use compare::{run_compare, this_program, CompareRow, Comparison as EngineComparison, Failure};
pub use engine::EngineError;
pub use flags::{Benchmark, Config, IndexWrites, THREADS_MAX};
pub use hdrhistogram::Histogram;
pub use keys::{KeyFormat, KeyStyle, ValueGenerator};
pub use latency::Latency;
pub use lineup::Engine;
pub use measure::{Amplification, Resources};
pub use output::{parse_percentiles, parse_result_line, ParsedLine};
pub use results_file::RoundFigures;
pub use spinney::TableKind;

/// The figures of one benchmark.
#[derive(Debug, Clone)]
pub struct BenchResult {
    /// Which benchmark.
    pub benchmark: Benchmark,
    /// The engine it ran on.
    pub engine: Engine,
    /// The structure of that engine's tables.
    pub table_kind: TableKind,
    /// False when the engine has no such operation (compact0 on an engine
    /// without levels, checkpoint on an LSM engine): every figure is then 0.
    pub supported: bool,
    /// Threads that did the measured operations (readwhilewriting: readers).
    pub threads: usize,
    /// Operations done by all those threads (a batch counts its entries).
    pub ops: u64,
    /// Wall time from the start to the end of the slowest thread.
    pub elapsed: Duration,
    /// Seconds from the start of the run to the start of this benchmark.
    pub start_seconds: f64,
    /// db_bench's micros/op: the threads' run times added up, over `ops`
    /// (the mean time of one operation in one thread).
    pub micros_per_op: f64,
    /// `ops` over `elapsed`.
    pub ops_per_sec: f64,
    /// Bytes of keys and values written, or read and found.
    pub bytes: u64,
    /// `bytes` in MiB over `elapsed` (0 when nothing was counted).
    pub mb_per_sec: f64,
    /// Reads that found their key, of reads made (read benchmarks).
    pub found: Option<Found>,
    /// Latency of every operation (one sample per batch for batched
    /// writes), in nanoseconds.
    pub histogram: Histogram<u64>,
    /// The histogram's summary, in microseconds.
    pub latency: Latency,
    /// I/O, CPU time and context switches during the benchmark.
    pub resources: Resources,
    /// `resources` per 1,000 operations.
    pub amplification: Amplification,
    /// For read benchmarks: the engine's read context per operation.
    pub read_context: Option<ReadContextMean>,
    /// Bytes of all files in the database directory at the end.
    pub db_size_bytes: u64,
    /// Bytes of keys and values the benchmark wrote (readwhilewriting: its
    /// writer), the denominator of the write amplification.
    pub user_bytes_written: u64,
    /// The process's peak resident set during the benchmark, in bytes.
    pub peak_rss_bytes: u64,
    /// The time series: one entry per `Config::report_interval`.
    pub intervals: Vec<Interval>,
    /// readwhilewriting's writer.
    pub writer: Option<WriterFigures>,
    /// False when the engine writes through a memory map, so that
    /// `resources.process_bytes_written` misses its writes and its write
    /// amplification is not measured (`Store::write_calls_count_writes`).
    pub write_calls_count_writes: bool,
    /// After a write benchmark run with `--settle`: the wait until the
    /// engine's background work was done, and what it had cost by then.
    pub settled: Option<Settled>,
}

/// A write benchmark's figures at the point its background work was done
/// (`bench::settle`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settled {
    /// Seconds from the benchmark's end until the work was done.
    pub seconds: f64,
    /// Bytes of all files in the database directory then.
    pub db_size_bytes: u64,
    /// I/O, CPU time and context switches from the benchmark's start
    /// until then.
    pub resources: Resources,
}

/// Reads that found their key, of reads made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Found {
    /// Reads that found their key (seekrandom: that landed on it).
    pub found: u64,
    /// Reads made.
    pub total: u64,
}

/// The mean of each `ReadContext` counter per read operation: the read
/// amplification the LSM shape discussions are about.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ReadContextMean {
    /// Memtables, L0 runs and level files searched (B-tree: the tree).
    pub trees_searched: f64,
    /// Bloom filters consulted.
    pub bloom_checks: f64,
    /// Bloom filters that ruled a file out.
    pub bloom_negatives: f64,
    /// Key comparisons.
    pub keys_compared: f64,
    /// Blocks found in the cache.
    pub blocks_from_cache: f64,
    /// Blocks read from their file.
    pub blocks_from_storage: f64,
    /// Bytes read from files.
    pub bytes_read: f64,
}

impl ReadContextMean {
    /// The counters of `total` over `ops` operations.
    pub fn of(total: &spinney::ReadContext, ops: u64) -> ReadContextMean {
        let per = |n: u64| if ops == 0 { 0.0 } else { n as f64 / ops as f64 };
        ReadContextMean {
            trees_searched: per(total.trees_searched),
            bloom_checks: per(total.bloom_checks),
            bloom_negatives: per(total.bloom_negatives),
            keys_compared: per(total.keys_compared),
            blocks_from_cache: per(total.blocks_from_cache),
            blocks_from_storage: per(total.blocks_from_storage),
            bytes_read: per(total.bytes_read),
        }
    }
}

impl BenchResult {
    /// Bytes the process wrote (write calls) per byte of keys and values
    /// written; `None` for a benchmark that wrote nothing.
    pub fn write_amplification(&self) -> Option<f64> {
        (self.user_bytes_written > 0 && self.write_calls_count_writes)
            .then(|| self.resources.process_bytes_written as f64 / self.user_bytes_written as f64)
    }
}

/// readwhilewriting's writer: what it achieved beside the readers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WriterFigures {
    /// Writes made.
    pub writes: u64,
    /// How long it wrote.
    pub elapsed: Duration,
    /// `writes` over `elapsed`.
    pub writes_per_sec: f64,
    /// The rate limit it ran under (0: none).
    pub limit_per_sec: u64,
}

/// One interval of a benchmark's time series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    /// Seconds from the benchmark's start to the interval's end.
    pub elapsed_seconds: f64,
    /// The interval's length in seconds (the last one may be short).
    pub seconds: f64,
    /// Operations finished in the interval.
    pub ops: u64,
    /// `ops` over `seconds`.
    pub ops_per_sec: f64,
    /// The 99th percentile latency of those operations, in microseconds.
    pub p99_micros: f64,
    /// The table's shape at the interval's end.
    pub shape: ShapeCounts,
}

/// The counts of a table's shape that a time series follows. Taken from
/// `Db::stats`, which is cheap for both kinds (`Table::shape` reads every
/// page of a B-tree).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShapeCounts {
    /// Entries in the active memtable (LSM).
    pub memtable_entries: u64,
    /// Frozen memtables waiting for flush (LSM).
    pub immutable_memtables: usize,
    /// Sorted runs in L0 (LSM).
    pub l0_runs: usize,
    /// SSTs in all levels, L0 included (LSM).
    pub sst_files: usize,
    /// Levels from root to leaves (B-tree).
    pub btree_height: u32,
    /// Pages in the file (B-tree).
    pub btree_pages: u64,
}

impl ShapeCounts {
    /// The counts of the table `name` now (zeros if there is no such table).
    pub fn of(db: &spinney::Db, name: &str) -> ShapeCounts {
        let stats = db.stats();
        let Some(t) = stats.tables.iter().find(|t| t.name == name) else {
            return ShapeCounts::default();
        };
        match &t.btree {
            Some(b) => ShapeCounts {
                btree_height: b.height,
                btree_pages: b.file_pages,
                ..ShapeCounts::default()
            },
            None => ShapeCounts {
                memtable_entries: t.shape.memtable_entries,
                immutable_memtables: t.shape.immutable_memtables,
                l0_runs: t.shape.l0_runs,
                sst_files: t.levels.iter().map(|l| l.files).sum(),
                ..ShapeCounts::default()
            },
        }
    }
}

/// Why a run stopped.
#[derive(Debug)]
#[non_exhaustive]
pub enum BenchError {
    /// The configuration cannot run (a usage error: exit code 2).
    Config(String),
    /// The engine failed.
    Engine {
        /// What the run was doing.
        context: String,
        /// The engine's error.
        error: EngineError,
    },
    /// A child process of a comparison failed.
    Child(String),
    /// A file of the run (report, directory) failed.
    Io {
        /// What the run was doing.
        context: String,
        /// The error.
        error: std::io::Error,
    },
    /// The chart could not be drawn.
    Plot(String),
}

impl BenchError {
    /// The process exit code for this error: 2 for usage errors, 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        match self {
            BenchError::Config(_) => 2,
            _ => 1,
        }
    }

    pub(crate) fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> BenchError {
        let context = context.into();
        move |error| BenchError::Io { context, error }
    }

    pub(crate) fn engine<E: Into<EngineError>>(
        context: impl Into<String>,
    ) -> impl FnOnce(E) -> BenchError {
        let context = context.into();
        move |error| BenchError::Engine {
            context,
            error: error.into(),
        }
    }
}

impl std::fmt::Display for BenchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BenchError::Config(m) => write!(f, "{m}"),
            BenchError::Engine { context, error } => write!(f, "{context}: {error}"),
            BenchError::Io { context, error } => write!(f, "{context}: {error}"),
            BenchError::Plot(m) => write!(f, "plot: {m}"),
            BenchError::Child(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for BenchError {}
