//! The command line: db_bench's flags as clap parses them (`Flags`, whose
//! doc comments are `--help`), and their translation into a `Config`, with
//! the checks a flag needs beyond its type: names of benchmarks, engines
//! and scenarios, and flags that contradict one another.
//!
//! Thread-safety: plain values.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::builder::BoolishValueParser;
use clap::error::ErrorKind;
use clap::{CommandFactory, Parser, ValueEnum};
use spinney::{CompactionStyle, Compression, Durability, TableKind};

use super::{Benchmark, Config, IndexWrites, ROUNDS_DEFAULT};
use crate::keys::KeyStyle;
use crate::lineup::{Engine, Scenario};

/// Parses a command line (the first item is the program name) into a
/// configuration (`Config::from_args`).
pub(super) fn parse<I, T>(args: I) -> Result<Config, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let flags = Flags::try_parse_from(args)?;
    flags
        .into_config()
        .map_err(|message| Flags::command().error(ErrorKind::ValueValidation, message))
}

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
    /// Bytes of log between two checkpoints of a B-tree table: spinney's
    /// `Options::checkpoint_wal_bytes`, and WiredTiger's B-tree's
    /// `checkpoint=(log_size)` with log files as large (WiredTiger
    /// checkpoints no more often than once a log file). 1 MiB to 2 GiB.
    #[arg(long, default_value_t = Config::default().checkpoint_log_bytes)]
    checkpoint_log_bytes: u64,
    /// The database directory (default: a new temporary directory, removed
    /// at the end). Without --use_existing_db=1 its database is deleted
    /// first; a directory holding anything else is refused.
    #[arg(long, value_name = "DIR")]
    db: Option<PathBuf>,
    /// 1 to keep the database in --db (the fills that want a fresh one are
    /// skipped).
    #[arg(long, value_parser = BoolishValueParser::new(), num_args = 0..=1, default_missing_value = "1", default_value = "0")]
    use_existing_db: bool,
    /// 1 to read table files through memory maps where the engine has the
    /// choice: spinney (`Options::mmap_reads`: SST blocks in place, B-tree
    /// leaves not cached) and RocksDB (`allow_mmap_reads`). LevelDB (on
    /// 64-bit machines), LMDB and spinney-lsm-mmap and spinney-btree-mmap
    /// map their files for reads whatever this says; WiredTiger maps its
    /// files by default and reads pages into its cache; fjall and redb
    /// read into their caches.
    #[arg(long, value_parser = BoolishValueParser::new(), num_args = 0..=1, default_missing_value = "1", default_value = "0")]
    mmap_read: bool,
    /// 1 to read table files around the OS's page cache (O_DIRECT), so
    /// that the engine's cache is the only cache of the data: spinney
    /// (`Options::direct_reads`), RocksDB (`use_direct_reads`) and
    /// WiredTiger (`direct_io=[data]`). The other engines have no such
    /// mode and report every benchmark not supported.
    #[arg(long, value_parser = BoolishValueParser::new(), num_args = 0..=1, default_missing_value = "1", default_value = "0")]
    use_direct_reads: bool,
    /// 1 to write flushes', compactions' and checkpoints' files around the
    /// OS's page cache (O_DIRECT): spinney (`Options::direct_writes`),
    /// RocksDB (`use_direct_io_for_flush_and_compaction`) and WiredTiger
    /// (`direct_io=[data]`, which also reads that way). The other engines
    /// report every benchmark not supported.
    #[arg(long, value_parser = BoolishValueParser::new(), num_args = 0..=1, default_missing_value = "1", default_value = "0")]
    use_direct_io_for_flush_and_compaction: bool,
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
            checkpoint_log_bytes: self.checkpoint_log_bytes,
            db: self.db,
            use_existing_db: self.use_existing_db,
            mmap_read: self.mmap_read,
            direct_reads: self.use_direct_reads,
            direct_writes: self.use_direct_io_for_flush_and_compaction,
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
                Some(name) => Some(Scenario::from_name(name).ok_or_else(|| {
                    format!(
                        "unknown scenario '{name}'; valid scenarios are: {}",
                        Scenario::names()
                    )
                })?),
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

/// The engines of a `--compare` list (empty names skipped).
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
