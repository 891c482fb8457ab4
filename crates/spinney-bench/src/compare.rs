//! `--compare`: the same benchmarks on several engines, side by side.
//!
//! Each engine runs in a child process of its own (this program again, with
//! `--engine=NAME` and the rest of the configuration as flags), so that one
//! engine's memory, allocator state, open files and background threads do
//! not leak into the next one's figures; each child gets a fresh directory.
//! There are `--rounds` rounds; the order of the engines alternates from
//! round to round (forward, then backward, each time starting one further
//! along), so that a drift in the machine's speed hits every engine alike.
//! With `--seed=0` each round draws a seed that all its engines share: the
//! engines of a round write and read the same keys, and rounds differ.
//!
//! A child prints its db_bench output, which the parent passes on under a
//! `=== round R of N: ENGINE ===` line, and writes its figures to a results
//! file (`--results_file`, one line of `name=value` fields per benchmark);
//! the parent reads them back and prints, per benchmark, each engine's
//! median over the rounds of ops/sec, p99 and p99.99 latency, database
//! size, write amplification (bytes the process sent to storage over the
//! bytes of keys and values written), peak resident set, and its ratio to
//! the better of spinney's two kinds. `--report` writes the same as CSV,
//! `--plot` draws ops/sec as grouped bars, one group per benchmark.
//!
//! Thread-safety: runs in the caller's thread; the children run one at a
//! time, never two at once, so that no engine's run shares the machine with
//! another's.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Mutex, PoisonError};

use crate::engine::Engine;
use crate::plot::{self, Bar};
use crate::{BenchError, BenchResult, Benchmark, Config};

/// A MiB, for MB figures.
const MB: f64 = 1_048_576.0;

/// The figures of one benchmark of one engine in one round, as a child
/// reports them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RoundFigures {
    /// False when the engine has no such operation.
    pub supported: bool,
    /// Operations done.
    pub ops: u64,
    /// Operations per second.
    pub ops_per_sec: f64,
    /// Seconds the benchmark took.
    pub seconds: f64,
    /// Median latency, microseconds.
    pub p50_micros: f64,
    /// 99th percentile latency, microseconds.
    pub p99_micros: f64,
    /// 99.99th percentile latency, microseconds.
    pub p9999_micros: f64,
    /// Bytes of the database directory at the end.
    pub db_size_bytes: u64,
    /// Bytes of keys and values written.
    pub user_bytes_written: u64,
    /// Bytes the process passed to write calls.
    pub process_bytes_written: u64,
    /// Bytes the process sent to storage.
    pub storage_bytes_written: u64,
    /// Bytes the process fetched from storage.
    pub storage_bytes_read: u64,
    /// The process's peak resident set during the benchmark.
    pub peak_rss_bytes: u64,
    /// Reads that found their key (read benchmarks).
    pub found: u64,
    /// Reads made (read benchmarks).
    pub attempted: u64,
    /// readwhilewriting's writer: writes per second.
    pub writer_per_sec: f64,
    /// False when the engine writes through a memory map, so that
    /// `process_bytes_written` misses its writes (LMDB's `MDB_WRITEMAP`).
    pub write_calls_count_writes: bool,
    /// True when the benchmark was followed by a settle (`--settle`).
    pub settled: bool,
    /// Seconds from the benchmark's end until its background work was done.
    pub settle_seconds: f64,
    /// Bytes of the database directory then.
    pub settled_size_bytes: u64,
    /// Bytes the process passed to write calls from the benchmark's start
    /// until then.
    pub settled_process_bytes_written: u64,
    /// Bytes the process sent to storage from the benchmark's start until
    /// then.
    pub settled_storage_bytes_written: u64,
}

impl RoundFigures {
    fn of(r: &BenchResult) -> RoundFigures {
        RoundFigures {
            supported: r.supported,
            ops: r.ops,
            ops_per_sec: r.ops_per_sec,
            seconds: r.elapsed.as_secs_f64(),
            p50_micros: r.latency.p50_micros,
            p99_micros: r.latency.p99_micros,
            p9999_micros: r.latency.p9999_micros,
            db_size_bytes: r.db_size_bytes,
            user_bytes_written: r.user_bytes_written,
            process_bytes_written: r.resources.process_bytes_written,
            storage_bytes_written: r.resources.storage_bytes_written,
            storage_bytes_read: r.resources.storage_bytes_read,
            peak_rss_bytes: r.peak_rss_bytes,
            found: r.found.map_or(0, |f| f.found),
            attempted: r.found.map_or(0, |f| f.total),
            writer_per_sec: r.writer.map_or(0.0, |w| w.writes_per_sec),
            write_calls_count_writes: r.write_calls_count_writes,
            settled: r.settled.is_some(),
            settle_seconds: r.settled.map_or(0.0, |s| s.seconds),
            settled_size_bytes: r.settled.map_or(0, |s| s.db_size_bytes),
            settled_process_bytes_written: r
                .settled
                .map_or(0, |s| s.resources.process_bytes_written),
            settled_storage_bytes_written: r
                .settled
                .map_or(0, |s| s.resources.storage_bytes_written),
        }
    }

    /// Bytes written (write calls, and spinney's mapped log) per byte of
    /// keys and values written, until the background work was done when
    /// the benchmark settled; `None` for an engine whose writes pass
    /// through a memory map.
    pub fn write_amplification(&self) -> Option<f64> {
        let bytes = if self.settled {
            self.settled_process_bytes_written
        } else {
            self.process_bytes_written
        };
        (self.user_bytes_written > 0 && self.write_calls_count_writes)
            .then(|| bytes as f64 / self.user_bytes_written as f64)
    }

    /// Bytes sent to storage per byte of keys and values written, until
    /// the background work was done when the benchmark settled.
    pub fn storage_write_amplification(&self) -> Option<f64> {
        let bytes = if self.settled {
            self.settled_storage_bytes_written
        } else {
            self.storage_bytes_written
        };
        (self.user_bytes_written > 0).then(|| bytes as f64 / self.user_bytes_written as f64)
    }

    /// One line of `name=value` fields.
    fn encode(&self, benchmark: Benchmark) -> String {
        format!(
            "benchmark={} supported={} ops={} ops_per_sec={} seconds={} p50_micros={} p99_micros={} p9999_micros={} db_size_bytes={} user_bytes_written={} process_bytes_written={} storage_bytes_written={} storage_bytes_read={} peak_rss_bytes={} found={} attempted={} writer_per_sec={} write_calls_count_writes={} settled={} settle_seconds={} settled_size_bytes={} settled_process_bytes_written={} settled_storage_bytes_written={}",
            benchmark.name(),
            u8::from(self.supported),
            self.ops,
            self.ops_per_sec,
            self.seconds,
            self.p50_micros,
            self.p99_micros,
            self.p9999_micros,
            self.db_size_bytes,
            self.user_bytes_written,
            self.process_bytes_written,
            self.storage_bytes_written,
            self.storage_bytes_read,
            self.peak_rss_bytes,
            self.found,
            self.attempted,
            self.writer_per_sec,
            u8::from(self.write_calls_count_writes),
            u8::from(self.settled),
            self.settle_seconds,
            self.settled_size_bytes,
            self.settled_process_bytes_written,
            self.settled_storage_bytes_written
        )
    }

    /// The benchmark and figures of a line written by `encode`.
    fn decode(line: &str) -> Result<(Benchmark, RoundFigures), String> {
        let mut fields = BTreeMap::new();
        for field in line.split_whitespace() {
            let (name, value) = field
                .split_once('=')
                .ok_or_else(|| format!("'{field}' is not name=value"))?;
            fields.insert(name, value);
        }
        let text = |name: &str| {
            fields
                .get(name)
                .copied()
                .ok_or_else(|| format!("no field '{name}'"))
        };
        let int = |name: &str| -> Result<u64, String> {
            text(name)?
                .parse()
                .map_err(|_| format!("field '{name}' is not a whole number"))
        };
        let float = |name: &str| -> Result<f64, String> {
            text(name)?
                .parse()
                .map_err(|_| format!("field '{name}' is not a number"))
        };
        let name = text("benchmark")?;
        let benchmark =
            Benchmark::from_name(name).ok_or_else(|| format!("unknown benchmark '{name}'"))?;
        Ok((
            benchmark,
            RoundFigures {
                supported: int("supported")? != 0,
                ops: int("ops")?,
                ops_per_sec: float("ops_per_sec")?,
                seconds: float("seconds")?,
                p50_micros: float("p50_micros")?,
                p99_micros: float("p99_micros")?,
                p9999_micros: float("p9999_micros")?,
                db_size_bytes: int("db_size_bytes")?,
                user_bytes_written: int("user_bytes_written")?,
                process_bytes_written: int("process_bytes_written")?,
                storage_bytes_written: int("storage_bytes_written")?,
                storage_bytes_read: int("storage_bytes_read")?,
                peak_rss_bytes: int("peak_rss_bytes")?,
                found: int("found")?,
                attempted: int("attempted")?,
                writer_per_sec: float("writer_per_sec")?,
                write_calls_count_writes: int("write_calls_count_writes")? != 0,
                settled: int("settled")? != 0,
                settle_seconds: float("settle_seconds")?,
                settled_size_bytes: int("settled_size_bytes")?,
                settled_process_bytes_written: int("settled_process_bytes_written")?,
                settled_storage_bytes_written: int("settled_storage_bytes_written")?,
            },
        ))
    }
}

/// Writes a child's figures for its parent (see `--results_file`).
pub(crate) fn write_results(path: &Path, results: &[BenchResult]) -> Result<(), BenchError> {
    let mut text = String::new();
    for r in results {
        text.push_str(&RoundFigures::of(r).encode(r.benchmark));
        text.push('\n');
    }
    std::fs::write(path, text).map_err(BenchError::io(format!("write {}", path.display())))
}

/// Reads a child's figures, in benchmark order.
fn read_results(path: &Path) -> Result<Vec<(Benchmark, RoundFigures)>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("read the figures in {}: {e}", path.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| {
            RoundFigures::decode(line)
                .map_err(|e| format!("{} line {}: {e}", path.display(), i + 1))
        })
        .collect()
}

/// One engine's figures for one benchmark over the rounds.
#[derive(Debug, Clone, PartialEq)]
pub struct CompareRow {
    /// The benchmark's place among the timed benchmarks of the run, from 0
    /// (a benchmark may run more than once: readrandom before and after an
    /// overwrite).
    pub step: usize,
    /// Which benchmark.
    pub benchmark: Benchmark,
    /// Its name in the table: the benchmark's, with "#2", "#3" for its
    /// later runs.
    pub label: String,
    /// Which engine.
    pub engine: Engine,
    /// Each round's figures, in round order (rounds the engine failed are
    /// missing).
    pub rounds: Vec<RoundFigures>,
}

impl CompareRow {
    /// False when the engine has no such operation.
    pub fn supported(&self) -> bool {
        self.rounds.iter().all(|r| r.supported)
    }

    /// The median over the rounds of one figure (the mean of the middle two
    /// for an even count); `None` without rounds.
    pub fn median(&self, figure: impl Fn(&RoundFigures) -> f64) -> Option<f64> {
        median(self.rounds.iter().map(figure).collect())
    }

    /// The median write amplification, over the rounds that wrote.
    pub fn write_amplification(&self) -> Option<f64> {
        median(
            self.rounds
                .iter()
                .filter_map(RoundFigures::write_amplification)
                .collect(),
        )
    }

    /// The median storage write amplification, over the rounds that wrote.
    pub fn storage_write_amplification(&self) -> Option<f64> {
        median(
            self.rounds
                .iter()
                .filter_map(RoundFigures::storage_write_amplification)
                .collect(),
        )
    }
}

/// The median of `values`; `None` when empty.
fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    })
}

/// A child that failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// Its engine.
    pub engine: Engine,
    /// Its round, from 1.
    pub round: usize,
    /// What went wrong (its own error went to stderr).
    pub reason: String,
}

/// The outcome of `run_compare`.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// The engines, in the order given.
    pub engines: Vec<Engine>,
    /// The seeds of the rounds.
    pub seeds: Vec<u64>,
    /// One row per benchmark and engine, benchmarks in run order.
    pub rows: Vec<CompareRow>,
    /// The children that failed.
    pub failures: Vec<Failure>,
}

impl Comparison {
    /// The row of `engine` for the last run of `benchmark`.
    pub fn row(&self, benchmark: Benchmark, engine: Engine) -> Option<&CompareRow> {
        self.rows
            .iter()
            .rfind(|r| r.benchmark == benchmark && r.engine == engine)
    }

    /// The row of `engine` at `step`.
    pub fn row_at(&self, step: usize, engine: Engine) -> Option<&CompareRow> {
        self.rows
            .iter()
            .find(|r| r.step == step && r.engine == engine)
    }

    /// The median ops/sec of spinney's better kind at `step`, if a spinney
    /// engine ran it: of the like-for-like rows (the log written with
    /// `write()`, as every peer's is) when any ran, so that a ratio never
    /// credits the mapped log's saving to the structure.
    pub fn spinney_best(&self, step: usize) -> Option<f64> {
        let spinney = |r: &&CompareRow| r.step == step && r.engine.is_spinney() && r.supported();
        let like_for_like =
            |r: &&CompareRow| r.engine.log_writes() == Some(spinney::LogWrites::Write);
        let base: Vec<&CompareRow> = if self.rows.iter().filter(spinney).any(|r| like_for_like(&r))
        {
            self.rows
                .iter()
                .filter(spinney)
                .filter(like_for_like)
                .collect()
        } else {
            self.rows.iter().filter(spinney).collect()
        };
        base.into_iter()
            .filter_map(|r| r.median(|f| f.ops_per_sec))
            .reduce(f64::max)
    }

    /// `engine`'s median ops/sec over spinney's better kind's at `step`
    /// (none for operations, whose one run's rate says little).
    pub fn ratio_at(&self, step: usize, engine: Engine) -> Option<f64> {
        let row = self.row_at(step, engine).filter(|r| r.supported())?;
        if row.benchmark.is_operation() {
            return None;
        }
        let best = self.spinney_best(step).filter(|&b| b > 0.0)?;
        Some(row.median(|f| f.ops_per_sec)? / best)
    }

    /// `ratio_at` for the last run of `benchmark`.
    pub fn ratio(&self, benchmark: Benchmark, engine: Engine) -> Option<f64> {
        let step = self.row(benchmark, engine)?.step;
        self.ratio_at(step, engine)
    }
}

/// The order of the engines in round `round` (from 0): forward in even
/// rounds, backward in odd ones, each pair of rounds starting one further
/// along, so that every engine runs early and late.
pub(crate) fn round_order(engines: &[Engine], round: usize) -> Vec<Engine> {
    let mut order = engines.to_vec();
    if order.is_empty() {
        return order;
    }
    let shift = (round / 2) % order.len();
    order.rotate_left(shift);
    if round % 2 == 1 {
        order.reverse();
    }
    order
}

/// Runs `config.benchmarks` on every engine of `config.compare`, each in a
/// child process started from `exe` (this program), `config.rounds` times;
/// prints each child's output and then the table of medians to `out`;
/// writes the CSV and the chart if asked. A child that fails is reported in
/// the table and in `Comparison::failures`; the others go on.
pub fn run_compare(
    config: &Config,
    exe: &Path,
    out: &mut dyn Write,
) -> Result<Comparison, BenchError> {
    config.validate().map_err(BenchError::Config)?;
    if config.compare.is_empty() {
        return Err(BenchError::Config("--compare names no engine".into()));
    }
    if config.scenario.is_some() {
        return Err(BenchError::Config(
            "a scenario compares its engines itself (scenario::run_in_children)".into(),
        ));
    }
    let print = || BenchError::io("print");
    let (root, _temp) = crate::dirs::root_dir(config)?;
    std::fs::create_dir_all(&root).map_err(BenchError::io(format!("create {}", root.display())))?;
    let keep = config.db.is_some();
    let benchmarks: Vec<Benchmark> = config
        .benchmarks
        .iter()
        .copied()
        .filter(|b| !b.is_printout())
        .collect();
    let mut comparison = Comparison {
        engines: config.compare.clone(),
        seeds: Vec::new(),
        rows: Vec::new(),
        failures: Vec::new(),
    };
    for (step, &benchmark) in benchmarks.iter().enumerate() {
        let earlier = benchmarks[..step]
            .iter()
            .filter(|&&b| b == benchmark)
            .count();
        let label = if earlier == 0 {
            benchmark.name().to_string()
        } else {
            format!("{} #{}", benchmark.name(), earlier + 1)
        };
        for &engine in &config.compare {
            comparison.rows.push(CompareRow {
                step,
                benchmark,
                label: label.clone(),
                engine,
                rounds: Vec::new(),
            });
        }
    }
    for round in 0..config.rounds {
        let seed = config.resolve_seed();
        comparison.seeds.push(seed);
        for engine in round_order(&config.compare, round) {
            writeln!(
                out,
                "\n=== round {} of {}: {engine} (seed {seed}) ===",
                round + 1,
                config.rounds
            )
            .map_err(print())?;
            let dir = root
                .join(format!("round-{}", round + 1))
                .join(engine.name());
            crate::dirs::destroy(&dir)?;
            let results_file = root.join(format!("round-{}-{}.results", round + 1, engine.name()));
            let _ = std::fs::remove_file(&results_file);
            let child = Config {
                engine,
                compare: Vec::new(),
                seed,
                db: Some(dir.clone()),
                use_existing_db: false,
                report: None,
                plot: None,
                results_file: Some(results_file.clone()),
                other_build: None,
                ..config.clone()
            };
            // An engine this build lacks runs from the other build
            // (`--other_build`; `Config::validate` has checked it is given).
            let program = match &config.other_build {
                Some(other) if !engine.is_built() => other.as_path(),
                _ => exe,
            };
            let outcome = run_child(program, &child, out).and_then(|()| {
                let figures = read_results(&results_file).map_err(BenchError::Child)?;
                let names: Vec<Benchmark> = figures.iter().map(|(b, _)| *b).collect();
                if names != benchmarks {
                    return Err(BenchError::Child(format!(
                        "{engine} reported figures for {names:?}, not for {benchmarks:?}"
                    )));
                }
                Ok(figures)
            });
            let _ = std::fs::remove_file(&results_file);
            if !keep {
                let _ = std::fs::remove_dir_all(&dir);
            }
            match outcome {
                Ok(figures) => {
                    for (step, (_, f)) in figures.into_iter().enumerate() {
                        if let Some(row) = comparison
                            .rows
                            .iter_mut()
                            .find(|r| r.step == step && r.engine == engine)
                        {
                            row.rounds.push(f);
                        }
                    }
                }
                Err(e) => comparison.failures.push(Failure {
                    engine,
                    round: round + 1,
                    reason: e.to_string(),
                }),
            }
        }
    }
    print_table(out, config, &comparison).map_err(print())?;
    if let Some(path) = &config.report {
        write_csv(path, &comparison)?;
    }
    if let Some(path) = &config.plot {
        draw(path, &comparison)?;
    }
    Ok(comparison)
}

/// Runs one child and passes its standard output on to `out` line by line;
/// its standard error (the environment, a progress bar, its errors) goes
/// straight to ours. With `--child_timeout` a child still running when it
/// runs out is killed and reported as failed (an engine that hangs does not
/// hang the comparison).
pub(crate) fn run_child(
    exe: &Path,
    config: &Config,
    out: &mut dyn Write,
) -> Result<(), BenchError> {
    let mut child = Command::new(exe)
        .args(config.to_args())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(BenchError::io(format!("start {}", exe.display())))?;
    let pid = child.id();
    // The watchdog kills the child when --child_timeout runs out. `done`
    // is set before the child is reaped, under the same lock as the kill,
    // so that the watchdog never signals a process id the system may have
    // given to another process.
    let done = Mutex::new(false);
    let killed = AtomicBool::new(false);
    let (stop, stopped) = mpsc::channel::<()>();
    let status = std::thread::scope(|scope| {
        if let Some(limit) = config.child_timeout {
            let (done, killed) = (&done, &killed);
            scope.spawn(move || {
                if stopped.recv_timeout(limit) != Err(RecvTimeoutError::Timeout) {
                    return;
                }
                let done = done.lock().unwrap_or_else(PoisonError::into_inner);
                if !*done {
                    killed.store(true, Ordering::SeqCst);
                    if let Ok(pid) = libc::pid_t::try_from(pid) {
                        // SAFETY: kill takes any pid and signal; the child
                        // is not reaped yet (`done` is false under the lock).
                        unsafe { libc::kill(pid, libc::SIGKILL) };
                    }
                }
            });
        }
        let outcome = (|| -> Result<std::process::ExitStatus, BenchError> {
            if let Some(stdout) = child.stdout.take() {
                for line in BufReader::new(stdout).lines() {
                    let line = line.map_err(BenchError::io("read a child's output"))?;
                    writeln!(out, "{line}").map_err(BenchError::io("print"))?;
                }
            }
            *done.lock().unwrap_or_else(PoisonError::into_inner) = true;
            child
                .wait()
                .map_err(BenchError::io("wait for a child process"))
        })();
        let _ = stop.send(());
        outcome
    })?;
    if killed.load(Ordering::SeqCst) {
        return Err(BenchError::Child(format!(
            "{} was killed after {:.0} s (--child_timeout)",
            config.engine,
            config.child_timeout.unwrap_or_default().as_secs_f64()
        )));
    }
    if status.success() {
        Ok(())
    } else {
        Err(BenchError::Child(format!(
            "{} failed ({status}); its error is printed above",
            config.engine
        )))
    }
}

/// The table of medians, one block per benchmark.
fn print_table(out: &mut dyn Write, config: &Config, c: &Comparison) -> std::io::Result<()> {
    writeln!(out)?;
    writeln!(
        out,
        "=== comparison: median of {} round{} (seeds {}) ===",
        config.rounds,
        if config.rounds == 1 { "" } else { "s" },
        c.seeds
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    )?;
    writeln!(
        out,
        "{} keys of {} bytes, values of {} bytes, cache {:.0} MB, bloom {} bits/key, compression {}, {}, {} background threads",
        config.num,
        config.key_size,
        config.value_size,
        config.cache_size as f64 / MB,
        config.bloom_bits,
        config.compression.name(),
        match config.durability {
            spinney::Durability::Full => "each commit synced (--sync=1)",
            spinney::Durability::Normal => "log on, not synced",
            spinney::Durability::Off => "log not synced, written in large pieces (--disable_wal=1)",
        },
        config.background_threads
    )?;
    let spinney_ran = c.engines.iter().any(|e| e.is_spinney());
    let mut steps: Vec<(usize, Benchmark, &str)> = Vec::new();
    for r in &c.rows {
        if !steps.iter().any(|&(s, _, _)| s == r.step) {
            steps.push((r.step, r.benchmark, &r.label));
        }
    }
    for (step, benchmark, label) in steps {
        writeln!(out)?;
        let batch = config.batch_size_for(benchmark);
        let mut title = label.to_string();
        if benchmark.is_write() && batch > 1 {
            title.push_str(&format!(" ({batch} entries per commit, every engine)"));
        }
        if benchmark == Benchmark::ReadWhileWriting {
            title.push_str(&format!(
                " ({} reader{}, one writer{})",
                config.threads,
                if config.threads == 1 { "" } else { "s" },
                if config.writes_per_second > 0 {
                    format!(" limited to {}/s", config.writes_per_second)
                } else {
                    String::new()
                }
            ));
        }
        writeln!(out, "{title}")?;
        if benchmark.is_operation() {
            print_operation(out, step, c)?;
            continue;
        }
        let mut header = format!(
            "  {:<20} {:>12} {:>10} {:>11} {:>9} {:>6} {:>10} {:>12}",
            "engine",
            "ops/sec",
            "p99 us",
            "p99.99 us",
            "size MB",
            "w-amp",
            "disk w-amp",
            "peak RSS MB"
        );
        if benchmark.is_read()
            && benchmark != Benchmark::ReadSeq
            && benchmark != Benchmark::ReadReverse
        {
            header.push_str(&format!(" {:>7}", "found"));
        }
        if benchmark == Benchmark::ReadWhileWriting {
            header.push_str(&format!(" {:>10}", "writes/sec"));
        }
        let settled = c
            .rows
            .iter()
            .any(|r| r.step == step && r.rounds.iter().any(|f| f.settled));
        if settled {
            header.push_str(&format!(" {:>8} {:>10}", "settle s", "settled MB"));
        }
        if spinney_ran {
            header.push_str(&format!(" {:>11}", "vs spinney"));
        }
        writeln!(out, "{header}")?;
        for &engine in &c.engines {
            let Some(row) = c.row_at(step, engine) else {
                continue;
            };
            let mut line = format!("  {:<20}", engine.name());
            if row.rounds.is_empty() {
                line.push_str(" failed (see above)");
            } else if !row.supported() {
                line.push_str(" not supported");
            } else {
                let m = |f: fn(&RoundFigures) -> f64| row.median(f).unwrap_or(0.0);
                let amp = |a: Option<f64>| a.map_or("-".to_string(), |w| format!("{w:.2}"));
                line.push_str(&format!(
                    " {:>12.0} {:>10.2} {:>11.2} {:>9.1} {:>6} {:>10} {:>12.1}",
                    m(|f| f.ops_per_sec),
                    m(|f| f.p99_micros),
                    m(|f| f.p9999_micros),
                    m(|f| f.db_size_bytes as f64) / MB,
                    amp(row.write_amplification()),
                    amp(row.storage_write_amplification()),
                    m(|f| f.peak_rss_bytes as f64) / MB
                ));
                if header.contains("found") {
                    let found = m(|f| {
                        if f.attempted == 0 {
                            0.0
                        } else {
                            f.found as f64 / f.attempted as f64
                        }
                    });
                    line.push_str(&format!(" {:>6.1}%", found * 100.0));
                }
                if benchmark == Benchmark::ReadWhileWriting {
                    line.push_str(&format!(" {:>10.0}", m(|f| f.writer_per_sec)));
                }
                if settled {
                    line.push_str(&format!(
                        " {:>8.2} {:>10.1}",
                        m(|f| f.settle_seconds),
                        m(|f| f.settled_size_bytes as f64) / MB
                    ));
                }
                if spinney_ran {
                    line.push_str(&format!(
                        " {:>11}",
                        c.ratio_at(step, engine)
                            .map_or("-".to_string(), |r| format!("{r:.2}x"))
                    ));
                }
                if row.rounds.len() < config.rounds {
                    line.push_str(&format!(
                        "  ({} of {} rounds)",
                        row.rounds.len(),
                        config.rounds
                    ));
                }
            }
            writeln!(out, "{}", line.trim_end())?;
        }
    }
    if spinney_ran {
        writeln!(
            out,
            "\n'vs spinney' is each engine's median ops/sec over that of spinney's better kind in the benchmark."
        )?;
    }
    writeln!(
        out,
        "w-amp: bytes the engine's process passed to write calls (and spinney's log copied into its memory map, counted by spinney) over the bytes of keys and values written, '-' for an engine writing through a memory map (LMDB with MDB_WRITEMAP); disk w-amp: bytes it sent to storage (pages dirtied, so a page rewritten before the kernel writes it back counts once) over the same; after a write benchmark that settled, both count until its background work was done; settle s: seconds from the benchmark's end until then (the engine's own signal where it has one, else its files still for 1 s); settled MB: the directory's size then; size: the files in the database's directory (their allocated blocks) at the benchmark's end; peak RSS: the process's high-water resident set during the benchmark."
    )?;
    for f in &c.failures {
        writeln!(
            out,
            "failed: {} in round {}: {}",
            f.engine, f.round, f.reason
        )?;
    }
    out.flush()
}

/// The block of an operation (flush, compactions, checkpoint): how long it
/// took, what it wrote, and the database after it.
fn print_operation(out: &mut dyn Write, step: usize, c: &Comparison) -> std::io::Result<()> {
    writeln!(
        out,
        "  {:<20} {:>10} {:>12} {:>9} {:>12}",
        "engine", "seconds", "written MB", "size MB", "peak RSS MB"
    )?;
    for &engine in &c.engines {
        let Some(row) = c.row_at(step, engine) else {
            continue;
        };
        let figures = if row.rounds.is_empty() {
            " failed (see above)".to_string()
        } else if !row.supported() {
            " not supported".to_string()
        } else {
            let m = |f: fn(&RoundFigures) -> f64| row.median(f).unwrap_or(0.0);
            format!(
                " {:>10.3} {:>12.1} {:>9.1} {:>12.1}",
                m(|f| f.seconds),
                m(|f| f.process_bytes_written as f64) / MB,
                m(|f| f.db_size_bytes as f64) / MB,
                m(|f| f.peak_rss_bytes as f64) / MB
            )
        };
        writeln!(out, "  {:<20}{figures}", engine.name())?;
    }
    Ok(())
}

/// The CSV header of `--report` in a comparison.
pub const CSV_HEADER: &str = "benchmark,engine,kind,rounds,ops_per_sec,ops_per_sec_min,ops_per_sec_max,seconds,p99_micros,p9999_micros,db_size_bytes,write_amplification,storage_write_amplification,peak_rss_bytes,found_share,writer_per_sec,vs_spinney,supported,settle_seconds,settled_size_bytes";

/// Writes the comparison as CSV: one row per benchmark and engine, medians
/// over the rounds (and the slowest and fastest round's ops/sec).
fn write_csv(path: &Path, c: &Comparison) -> Result<(), BenchError> {
    let mut text = String::from(CSV_HEADER);
    text.push('\n');
    for row in &c.rows {
        let m =
            |f: fn(&RoundFigures) -> f64| row.median(f).map_or(String::new(), |v| format!("{v}"));
        let ops: Vec<f64> = row.rounds.iter().map(|f| f.ops_per_sec).collect();
        let min = ops.iter().copied().reduce(f64::min);
        let max = ops.iter().copied().reduce(f64::max);
        let opt = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v}"));
        text.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
            row.label,
            row.engine.name(),
            row.engine.kind().name(),
            row.rounds.len(),
            m(|f| f.ops_per_sec),
            opt(min),
            opt(max),
            m(|f| f.seconds),
            m(|f| f.p99_micros),
            m(|f| f.p9999_micros),
            m(|f| f.db_size_bytes as f64),
            opt(row.write_amplification()),
            opt(row.storage_write_amplification()),
            m(|f| f.peak_rss_bytes as f64),
            m(|f| if f.attempted == 0 {
                0.0
            } else {
                f.found as f64 / f.attempted as f64
            }),
            m(|f| f.writer_per_sec),
            opt(c.ratio_at(row.step, row.engine)),
            u8::from(row.supported()),
            if row.rounds.iter().any(|f| f.settled) {
                m(|f| f.settle_seconds)
            } else {
                String::new()
            },
            if row.rounds.iter().any(|f| f.settled) {
                m(|f| f.settled_size_bytes as f64)
            } else {
                String::new()
            },
        ));
    }
    std::fs::write(path, text).map_err(BenchError::io(format!("write {}", path.display())))
}

/// Draws median ops/sec as grouped bars: a group per benchmark, a bar per
/// engine.
fn draw(path: &Path, c: &Comparison) -> Result<(), BenchError> {
    let bars: Vec<Bar> = c
        .rows
        .iter()
        .filter(|r| r.supported() && !r.benchmark.is_operation())
        .filter_map(|r| {
            Some(Bar {
                group: r.label.clone(),
                series: r.engine.name().to_string(),
                value: r.median(|f| f.ops_per_sec)?,
            })
        })
        .collect();
    plot::bars(
        path,
        "ops/sec by engine (median of rounds)",
        "ops/sec",
        &bars,
    )
    .map_err(BenchError::Plot)
}

/// Where a comparison's children are started from: this program.
pub fn this_program() -> Result<PathBuf, BenchError> {
    std::env::current_exe().map_err(BenchError::io("find this program's path"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_amplification_counts_until_settled_and_not_through_a_map() {
        // Goal: after a settle the w-amp columns count the engine's writes
        // until its background work was done, not only those made during
        // the benchmark; an engine writing through a memory map has no
        // w-amp (its write calls miss its writes), though its disk w-amp
        // stands.
        let mut f = RoundFigures {
            supported: true,
            user_bytes_written: 100,
            process_bytes_written: 200,
            storage_bytes_written: 150,
            write_calls_count_writes: true,
            ..RoundFigures::default()
        };
        assert_eq!(f.write_amplification(), Some(2.0));
        assert_eq!(f.storage_write_amplification(), Some(1.5));
        f.settled = true;
        f.settled_process_bytes_written = 500;
        f.settled_storage_bytes_written = 450;
        assert_eq!(f.write_amplification(), Some(5.0));
        assert_eq!(f.storage_write_amplification(), Some(4.5));
        f.write_calls_count_writes = false;
        assert_eq!(f.write_amplification(), None);
        assert_eq!(f.storage_write_amplification(), Some(4.5));
    }

    #[test]
    fn figures_survive_the_results_file() {
        // Goal: what a child writes, its parent reads back unchanged.
        let f = RoundFigures {
            supported: true,
            ops: 1000,
            ops_per_sec: 12345.678,
            seconds: 0.081,
            p50_micros: 1.5,
            p99_micros: 20.25,
            p9999_micros: 900.0,
            db_size_bytes: 1 << 30,
            user_bytes_written: 116_000,
            process_bytes_written: 290_000,
            storage_bytes_written: 300_000,
            storage_bytes_read: 7,
            peak_rss_bytes: 99 << 20,
            found: 860,
            attempted: 1000,
            writer_per_sec: 0.0,
            write_calls_count_writes: true,
            settled: true,
            settle_seconds: 2.5,
            settled_size_bytes: 3 << 20,
            settled_process_bytes_written: 400_000,
            settled_storage_bytes_written: 410_000,
        };
        let line = f.encode(Benchmark::ReadWhileWriting);
        assert_eq!(
            RoundFigures::decode(&line),
            Ok((Benchmark::ReadWhileWriting, f))
        );
        assert!(RoundFigures::decode("benchmark=fillseq ops=1").is_err());
        assert!(RoundFigures::decode("benchmark=nope").is_err());
        assert!(RoundFigures::decode(&line.replace("ops=1000", "ops=x")).is_err());
    }

    #[test]
    fn medians_of_odd_and_even_counts() {
        // Goal: the middle value, or the mean of the middle two.
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(vec![]), None);
    }

    #[test]
    fn round_order_alternates_and_moves_the_start() {
        // Goal: every engine runs first and last over the rounds, so drift
        // in the machine's speed is shared.
        let e = [Engine::SpinneyLsm, Engine::SpinneyBtree, Engine::Rocksdb];
        assert_eq!(round_order(&e, 0), e);
        assert_eq!(
            round_order(&e, 1),
            [Engine::Rocksdb, Engine::SpinneyBtree, Engine::SpinneyLsm]
        );
        assert_eq!(
            round_order(&e, 2),
            [Engine::SpinneyBtree, Engine::Rocksdb, Engine::SpinneyLsm]
        );
        let mut firsts: Vec<Engine> = (0..6).map(|r| round_order(&e, r)[0]).collect();
        firsts.sort_by_key(|e| e.name());
        firsts.dedup();
        assert_eq!(firsts.len(), 3);
    }

    #[test]
    fn ratio_is_to_the_better_spinney_kind() {
        // Goal: 'vs spinney' divides by the faster of spinney's kinds, and
        // an unsupported or missing row has none.
        let row = |engine, ops_per_sec, supported| CompareRow {
            step: 0,
            benchmark: Benchmark::FillRandom,
            label: "fillrandom".into(),
            engine,
            rounds: vec![RoundFigures {
                supported,
                ops_per_sec,
                ..RoundFigures::default()
            }],
        };
        let c = Comparison {
            engines: vec![Engine::SpinneyLsm, Engine::SpinneyBtree, Engine::Rocksdb],
            seeds: vec![1],
            rows: vec![
                row(Engine::SpinneyLsm, 200.0, true),
                row(Engine::SpinneyBtree, 100.0, true),
                row(Engine::Rocksdb, 300.0, true),
            ],
            failures: Vec::new(),
        };
        assert_eq!(c.spinney_best(0), Some(200.0));
        assert_eq!(c.ratio(Benchmark::FillRandom, Engine::Rocksdb), Some(1.5));
        assert_eq!(
            c.ratio(Benchmark::FillRandom, Engine::SpinneyBtree),
            Some(0.5)
        );
        assert_eq!(c.ratio(Benchmark::FillRandom, Engine::Lmdb), None);
        assert_eq!(c.ratio(Benchmark::ReadRandom, Engine::Rocksdb), None);
    }

    #[test]
    fn ratio_is_to_the_like_for_like_rows_when_they_ran() {
        // Goal: a faster row with the mapped log never becomes the base of
        // 'vs spinney' beside a like-for-like row (the log written with
        // write(), as every peer's is); without one, the mapped rows are
        // the base.
        let row = |engine, ops_per_sec| CompareRow {
            step: 0,
            benchmark: Benchmark::FillRandom,
            label: "fillrandom".into(),
            engine,
            rounds: vec![RoundFigures {
                supported: true,
                ops_per_sec,
                ..RoundFigures::default()
            }],
        };
        let mut c = Comparison {
            engines: vec![
                Engine::SpinneyLsm,
                Engine::SpinneyLsmMapped,
                Engine::Rocksdb,
            ],
            seeds: vec![1],
            rows: vec![
                row(Engine::SpinneyLsm, 200.0),
                row(Engine::SpinneyLsmMapped, 400.0),
                row(Engine::Rocksdb, 100.0),
            ],
            failures: Vec::new(),
        };
        assert_eq!(c.spinney_best(0), Some(200.0));
        assert_eq!(
            c.ratio(Benchmark::FillRandom, Engine::SpinneyLsmMapped),
            Some(2.0)
        );
        c.rows.remove(0);
        assert_eq!(c.spinney_best(0), Some(400.0));
    }
}
