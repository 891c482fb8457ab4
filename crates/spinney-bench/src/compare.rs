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
//! file (`--results_file`, one line of `name=value` fields per benchmark,
//! as `results_file` writes and reads it); the parent reads them back and prints, per benchmark, each engine's
//! median over the rounds of ops/sec, p99 and p99.99 latency, database
//! size, write amplification (bytes the process sent to storage over the
//! bytes of keys and values written), peak resident set, and its ratio to
//! the better of spinney's two kinds. `--report` writes the same as CSV,
//! `--plot` draws ops/sec as grouped bars, one group per benchmark.
//!
//! Thread-safety: runs in the caller's thread; the children run one at a
//! time, never two at once, so that no engine's run shares the machine with
//! another's.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Mutex, PoisonError};

use crate::lineup::Engine;
use crate::plot::{self, Bar};
use crate::results_file::{read_results, RoundFigures};
use crate::{BenchError, Benchmark, Config};

/// A MiB, for MB figures.
const MB: f64 = 1_048_576.0;

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
