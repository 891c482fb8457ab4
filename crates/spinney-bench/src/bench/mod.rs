//! Running benchmarks: the engine's database and its one table, fresh
//! databases for the fills, the figures of each benchmark, the report and
//! the chart; and the configuration of the default run.
//!
//! Thread-safety: `run_benchmarks` runs in the caller's thread and starts
//! the benchmarks' threads itself (see `worker`).

mod settle;
mod worker;
mod workloads;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::dirs::{destroy, root_dir};
use crate::engine::{self, EngineError, Store, TableSpec};
use crate::latency::{new_histogram, Latency};
use crate::lineup::Engine;
use crate::measure::{dir_size, peak_rss, reset_peak_rss, Resources};
use crate::output;
use crate::plot;
use crate::report::Report;
use crate::{
    BenchError, BenchResult, Benchmark, Config, Found, ReadContextMean, Settled, WriterFigures,
};

use self::worker::Measured;

/// The name of the benchmarks' table.
pub const TABLE: &str = "default";

/// The database of a run: the engine's store with one table.
struct Session {
    store: Box<dyn Store>,
    dir: PathBuf,
}

impl Session {
    fn open(config: &Config, dir: &Path) -> Result<Session, BenchError> {
        let store = engine::open(config.engine, config, dir, &[TableSpec::named(TABLE)])?;
        Ok(Session {
            store,
            dir: dir.to_path_buf(),
        })
    }

    /// Closes the database, deletes it, and opens a new empty one.
    fn reopen_fresh(self, config: &Config) -> Result<Session, BenchError> {
        let dir = self.dir.clone();
        self.close()?;
        destroy(&dir)?;
        Session::open(config, &dir)
    }

    fn close(self) -> Result<(), BenchError> {
        self.store
            .close()
            .map_err(BenchError::engine("close the database"))
    }
}

/// Runs `config.benchmarks` in order on one database of `config.engine`,
/// prints db_bench's output to `out` (and the environment and progress to
/// stderr), writes the report and the chart if asked, and returns a result
/// per timed benchmark (stats and shape only print). With `--seed=0` the
/// run draws a seed of its own and prints it.
pub fn run_benchmarks(
    config: &Config,
    out: &mut dyn Write,
) -> Result<Vec<BenchResult>, BenchError> {
    config.validate().map_err(BenchError::Config)?;
    if !config.compare.is_empty() {
        return Err(BenchError::Config(
            "a configuration with engines to compare runs through run_compare".into(),
        ));
    }
    let config = &Config {
        seed: config.resolve_seed(),
        ..config.clone()
    };
    if (config.direct_reads || config.direct_writes) && !config.engine.direct_io() {
        return no_direct_io(config, out);
    }
    let (dir, _temp) = root_dir(config)?;
    if !config.use_existing_db {
        destroy(&dir)?;
    }
    // Open first, so that options the engine refuses are reported before
    // anything is printed.
    let mut session = Session::open(config, &dir)?;
    let mut report = config.report.as_deref().map(Report::create).transpose()?;
    // eprint!, not a write to stderr, so that test harnesses capture it.
    eprint!("{}", output::environment(config.engine));
    output::header(out, config).map_err(BenchError::io("print"))?;
    let run_start = Instant::now();
    let mut results = Vec::new();
    for (index, &benchmark) in config.benchmarks.iter().enumerate() {
        let print = BenchError::io("print");
        if benchmark.wants_fresh_db() {
            if config.use_existing_db {
                writeln!(
                    out,
                    "{:<12} : skipped (--use_existing_db is true)",
                    benchmark.name()
                )
                .map_err(print)?;
                continue;
            }
            session = session.reopen_fresh(config)?;
        }
        if benchmark.is_printout() {
            let text = session
                .store
                .printout(benchmark)
                .map_err(BenchError::engine(format!("{benchmark}")))?;
            match text {
                Some(text) => writeln!(out, "\n{text}"),
                None => writeln!(out, "{:<12} : not supported", benchmark.name()),
            }
            .map_err(print)?;
            continue;
        }
        let start_seconds = run_start.elapsed().as_secs_f64();
        let result = run_one(&session, config, index, benchmark, start_seconds)?;
        output::write_result(out, &result, config.histogram).map_err(print)?;
        if let Some(r) = &mut report {
            r.add(&result)?;
        }
        results.push(result);
    }
    session.close()?;
    if let Some(path) = &config.plot {
        draw(path, &results)?;
    }
    if let Some(path) = &config.results_file {
        crate::results_file::write_results(path, &results)?;
    }
    Ok(results)
}

/// A run that asks for direct I/O of an engine without it: every
/// benchmark is reported not supported, with no database opened, rather
/// than measured through the OS's page cache.
fn no_direct_io(config: &Config, out: &mut dyn Write) -> Result<Vec<BenchResult>, BenchError> {
    let print = BenchError::io("print");
    eprint!("{}", output::environment(config.engine));
    output::header(out, config).map_err(print)?;
    writeln!(
        out,
        "{} has no direct I/O (--use_direct_reads, --use_direct_io_for_flush_and_compaction): not supported",
        config.engine
    )
    .map_err(BenchError::io("print"))?;
    let mut results = Vec::new();
    for &benchmark in &config.benchmarks {
        if benchmark.is_printout() {
            writeln!(out, "{:<12} : not supported", benchmark.name())
                .map_err(BenchError::io("print"))?;
            continue;
        }
        let result = unsupported(config, benchmark, 0.0, 0);
        output::write_result(out, &result, config.histogram).map_err(BenchError::io("print"))?;
        results.push(result);
    }
    if let Some(path) = &config.results_file {
        crate::results_file::write_results(path, &results)?;
    }
    Ok(results)
}

/// Runs one benchmark (a workload or an operation) and gathers its figures.
fn run_one(
    session: &Session,
    config: &Config,
    index: usize,
    benchmark: Benchmark,
    start_seconds: f64,
) -> Result<BenchResult, BenchError> {
    let store = session.store.as_ref();
    reset_peak_rss();
    let before = Resources::now(store.io_counters());
    let measured = if benchmark.is_operation() {
        operation(store, benchmark)
    } else if benchmark == Benchmark::DeleteRange && !store.deletes_ranges() {
        Ok(None)
    } else {
        let ctx = workloads::Context {
            store,
            config,
            index,
        };
        workloads::run(&ctx, benchmark).map(Some)
    }
    .map_err(BenchError::engine(format!("{benchmark}")))?;
    let resources = Resources::now(store.io_counters()).since(&before);
    let peak_rss_bytes = peak_rss();
    let db_size_bytes = dir_size(&session.dir);
    let Some(measured) = measured else {
        return Ok(unsupported(config, benchmark, start_seconds, db_size_bytes));
    };
    let settled = if config.settle && benchmark.is_write() {
        let wait = settle::settle(store, &session.dir)
            .map_err(BenchError::engine(format!("{benchmark}: settle")))?;
        Some(Settled {
            seconds: wait.as_secs_f64(),
            db_size_bytes: dir_size(&session.dir),
            resources: Resources::now(store.io_counters()).since(&before),
        })
    } else {
        None
    };
    // db_bench pretends one operation was done, so that a benchmark that
    // did nothing still prints numbers rather than a division by zero.
    let ops_for_rates = measured.ops.max(1);
    let wall = measured.wall.max(Duration::from_nanos(1));
    let mb_per_sec = measured.bytes as f64 / 1_048_576.0 / wall.as_secs_f64();
    let found = (benchmark.is_read()
        && !matches!(benchmark, Benchmark::ReadSeq | Benchmark::ReadReverse))
    .then_some(Found {
        found: measured.found,
        total: measured.attempted,
    });
    let read_context = (benchmark.is_read() && store.counts_reads())
        .then(|| ReadContextMean::of(&measured.read_context, measured.ops));
    let writer = measured.writer.map(|w| WriterFigures {
        writes: w.writes,
        elapsed: w.elapsed,
        writes_per_sec: w.writes as f64 / w.elapsed.as_secs_f64().max(1e-9),
        limit_per_sec: config.writes_per_second,
    });
    let entry_bytes = (config.key_size + config.value_size) as u64;
    let user_bytes_written = match benchmark {
        Benchmark::ReadWhileWriting => writer.map_or(0, |w| w.writes * entry_bytes),
        _ if benchmark.is_write() => measured.bytes,
        _ => 0,
    };
    let threads = match benchmark {
        _ if benchmark.is_operation() => 1,
        Benchmark::FillSeq | Benchmark::FillSeqBatch | Benchmark::FillBatch => 1,
        _ => config.threads,
    };
    Ok(BenchResult {
        benchmark,
        engine: config.engine,
        table_kind: config.table_kind(),
        supported: true,
        threads,
        ops: measured.ops,
        elapsed: measured.wall,
        start_seconds,
        micros_per_op: measured.thread_time.as_secs_f64() * 1e6 / ops_for_rates as f64,
        ops_per_sec: ops_for_rates as f64 / wall.as_secs_f64(),
        bytes: measured.bytes,
        mb_per_sec: if measured.bytes > 0 { mb_per_sec } else { 0.0 },
        found,
        latency: Latency::of(&measured.hist),
        histogram: measured.hist,
        resources,
        amplification: resources.per_thousand(measured.ops),
        read_context,
        db_size_bytes,
        user_bytes_written,
        peak_rss_bytes,
        intervals: measured.intervals,
        writer,
        write_calls_count_writes: store.write_calls_count_writes(),
        settled,
    })
}

/// The result of an operation the engine does not have: no figures.
fn unsupported(
    config: &Config,
    benchmark: Benchmark,
    start_seconds: f64,
    db_size_bytes: u64,
) -> BenchResult {
    BenchResult {
        benchmark,
        engine: config.engine,
        table_kind: config.table_kind(),
        supported: false,
        threads: 1,
        ops: 0,
        elapsed: Duration::ZERO,
        start_seconds,
        micros_per_op: 0.0,
        ops_per_sec: 0.0,
        bytes: 0,
        mb_per_sec: 0.0,
        found: None,
        histogram: new_histogram(),
        latency: Latency::default(),
        resources: Resources::default(),
        amplification: Resources::default().per_thousand(0),
        read_context: None,
        db_size_bytes,
        user_bytes_written: 0,
        peak_rss_bytes: 0,
        intervals: Vec::new(),
        writer: None,
        write_calls_count_writes: true,
        settled: None,
    }
}

/// Runs one operation on the database, timed as one operation; `None` when
/// the engine has no such operation.
fn operation(store: &dyn Store, benchmark: Benchmark) -> Result<Option<Measured>, EngineError> {
    let started = Instant::now();
    if !store.operation(benchmark)? {
        return Ok(None);
    }
    let wall = started.elapsed();
    let mut hist = new_histogram();
    hist.saturating_record(u64::try_from(wall.as_nanos()).unwrap_or(u64::MAX));
    Ok(Some(Measured {
        hist,
        ops: 1,
        bytes: 0,
        found: 0,
        attempted: 0,
        wall,
        thread_time: wall,
        read_context: spinney::ReadContext::default(),
        intervals: Vec::new(),
        writer: None,
    }))
}

/// Draws ops/sec over the run's time, one line per benchmark.
fn draw(path: &Path, results: &[BenchResult]) -> Result<(), BenchError> {
    let series: Vec<plot::Series> = results
        .iter()
        .filter(|r| !r.intervals.is_empty())
        .map(|r| plot::Series {
            name: format!("{} ({})", r.benchmark.name(), r.engine.name()),
            points: r
                .intervals
                .iter()
                .map(|i| (r.start_seconds + i.elapsed_seconds, i.ops_per_sec))
                .collect(),
        })
        .collect();
    plot::lines(path, "ops/sec over time", "seconds", "ops/sec", &series).map_err(BenchError::Plot)
}

/// The configuration of the default run (no arguments): the classic
/// db_bench workloads on every engine this build has, one round, each in
/// its own process (about a minute for spinney's two kinds on two cores in
/// a release build, and some minutes with every peer).
pub fn default_comparison_config() -> Config {
    Config {
        benchmarks: vec![
            Benchmark::FillSeq,
            Benchmark::FillRandom,
            Benchmark::Overwrite,
            Benchmark::ReadRandom,
            Benchmark::ReadSeq,
            Benchmark::SeekRandom,
            Benchmark::ReadWhileWriting,
        ],
        num: 800_000,
        // The same write load beside the readers for both kinds (the
        // WiredTiger experiment's rate-limited inserter), well below what
        // either sustains, so that the readers' figures compare.
        writes_per_second: 20_000,
        compare: Engine::ALL.into_iter().filter(|e| e.is_built()).collect(),
        rounds: 1,
        ..Config::default()
    }
}
