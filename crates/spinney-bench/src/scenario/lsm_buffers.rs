//! lsm-buffers: SQLite4's LSM benchmarks (in `shared/seeds/`, 004): an
//! empty LSM table, then iterations of "insert K random keys, one commit
//! per key; then read K random keys already written", each iteration's
//! insert rate and read rate recorded, under several configurations.
//!
//! SQLite4 ran 200 iterations of 50,000 keys (12-byte keys, 100-byte
//! values) on three tests, each single-threaded (the writer does the
//! flushes and merges itself) and multi-threaded (two background threads):
//! small write buffers (1 MB), large write buffers, and large write buffers
//! with a pause (2.5 s) after every iteration to let background work catch
//! up. This scenario runs the same six configurations:
//!
//! ```text
//! single-small        background_threads 0 (autowork)   small buffer
//! multi-small         background_threads 2              small buffer
//! single-large        background_threads 0 (autowork)   large buffer
//! multi-large         background_threads 2              large buffer
//! single-large-pause  background_threads 0 (autowork)   large buffer, pause
//! multi-large-pause   background_threads 2              large buffer, pause
//! ```
//!
//! and, for comparison, `btree`: a B-tree table with two background
//! threads, no pause (its buffer is the cache).
//!
//! SQLite4's pause test ran both modes ("the same as the previous test"),
//! and so does this one, although a pause can only help when background
//! threads work during it: `single-large-pause` is the control, whose
//! rates should match `single-large`'s.
//!
//! Scale: both the iterations and the keys per iteration grow with the
//! square root of `Config::scale`. Scale 1 runs 50 iterations of 12,500
//! keys (a quarter of each, a sixteenth of the original data), which fits
//! the seven configurations in about a minute on two cores; scale 16 is
//! the original 200 × 50,000 (capped there). The write buffers keep the
//! original's ratio to the data of one iteration: 1 MiB and 8 MiB per
//! 50,000 keys (256 KiB and 2 MiB at scale 1; at least 64 KiB and
//! 512 KiB). The pause grows with the keys too: 50 ms at scale 1, 200 ms
//! at the original size. That is a twelfth of SQLite4's 2.5 s, so that
//! pauses do not dominate the run; it is still longer than the flushes of
//! one iteration take.
//!
//! The scenario fixes the table kind, the write buffer and the background
//! threads; `--key_size`, `--value_size`, `--cache_size`,
//! `--compression_type`, `--bloom_bits`, `--compaction_style`,
//! `--sync`/`--disable_wal` and `--seed` apply. Keys are random numbers in
//! the whole key width (db_bench's zero-padded decimal keys), so nearly all
//! are new.
//!
//! With `--db=DIR`, configuration `NAME` keeps its database in
//! `DIR/lsm-buffers/NAME`; without it each database is a temporary
//! directory removed when its configuration ends.
//!
//! Thread-safety: runs in the caller's thread; with background threads the
//! engine's own threads flush and compact beside it.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use rand::Rng;
use spinney::{Db, TableKind};

use super::Summary;
use crate::engine::setup_error;
use crate::keys::{worker_rng, KeyFormat, ValueGenerator};
use crate::plot;
use crate::{BenchError, Config};

/// The original's iterations and keys per iteration.
const ITERATIONS_ORIGINAL: u64 = 200;
const KEYS_ORIGINAL: u64 = 50_000;

/// Iterations and keys per iteration at scale 1 (each a quarter of the
/// original).
const ITERATIONS_DEFAULT: f64 = 50.0;
const KEYS_DEFAULT: f64 = 12_500.0;

/// Fewest iterations and keys per iteration (tiny scales).
const ITERATIONS_MIN: u64 = 2;
const KEYS_MIN: u64 = 100;

/// The original's small write buffer, per `KEYS_ORIGINAL` keys of an
/// iteration; the large one is `LARGE_OVER_SMALL` times larger.
const SMALL_BUFFER_BYTES_ORIGINAL: f64 = (1 << 20) as f64;
const LARGE_OVER_SMALL: usize = 8;

/// The pause after an iteration at scale 1 (per `KEYS_DEFAULT` keys of
/// an iteration).
const PAUSE_PER_DEFAULT_KEYS: Duration = Duration::from_millis(50);

/// Background threads of the multi-threaded configurations (SQLite4's two:
/// one merging, one checkpointing).
const THREADS_MULTI: usize = 2;

/// One configuration of the scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Setup {
    name: &'static str,
    kind: TableKind,
    background_threads: usize,
    large_buffer: bool,
    pause: bool,
}

const SETUPS: [Setup; 7] = [
    Setup {
        name: "single-small",
        kind: TableKind::Lsm,
        background_threads: 0,
        large_buffer: false,
        pause: false,
    },
    Setup {
        name: "multi-small",
        kind: TableKind::Lsm,
        background_threads: THREADS_MULTI,
        large_buffer: false,
        pause: false,
    },
    Setup {
        name: "single-large",
        kind: TableKind::Lsm,
        background_threads: 0,
        large_buffer: true,
        pause: false,
    },
    Setup {
        name: "multi-large",
        kind: TableKind::Lsm,
        background_threads: THREADS_MULTI,
        large_buffer: true,
        pause: false,
    },
    Setup {
        name: "single-large-pause",
        kind: TableKind::Lsm,
        background_threads: 0,
        large_buffer: true,
        pause: true,
    },
    Setup {
        name: "multi-large-pause",
        kind: TableKind::Lsm,
        background_threads: THREADS_MULTI,
        large_buffer: true,
        pause: true,
    },
    Setup {
        name: "btree",
        kind: TableKind::Btree,
        background_threads: THREADS_MULTI,
        large_buffer: false,
        pause: false,
    },
];

/// The sizes a scale asks for.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Sizes {
    iterations: u64,
    keys: u64,
    small_buffer_bytes: usize,
    pause: Duration,
}

impl Sizes {
    fn of(scale: f64) -> Sizes {
        // Scale is checked to be in (0, 1e6], so these are finite and
        // positive and the conversions saturate at worst.
        let factor = scale.sqrt();
        let iterations = ((ITERATIONS_DEFAULT * factor).round() as u64)
            .clamp(ITERATIONS_MIN, ITERATIONS_ORIGINAL);
        let keys = ((KEYS_DEFAULT * factor).round() as u64).clamp(KEYS_MIN, KEYS_ORIGINAL);
        let small = SMALL_BUFFER_BYTES_ORIGINAL * keys as f64 / KEYS_ORIGINAL as f64;
        let small_buffer_bytes = (small as usize).max(spinney::limits::WRITE_BUFFER_BYTES_MIN);
        let pause = PAUSE_PER_DEFAULT_KEYS.mul_f64(keys as f64 / KEYS_DEFAULT);
        Sizes {
            iterations,
            keys,
            small_buffer_bytes,
            pause,
        }
    }

    fn buffer_bytes(&self, setup: &Setup) -> usize {
        if setup.large_buffer {
            self.small_buffer_bytes * LARGE_OVER_SMALL
        } else {
            self.small_buffer_bytes
        }
    }
}

/// What one configuration measured.
#[derive(Debug, Clone)]
struct Outcome {
    setup: Setup,
    buffer_bytes: usize,
    insert_rates: Vec<f64>,
    read_rates: Vec<f64>,
    /// Reads that did not find their key (always 0 unless the engine lost
    /// a write).
    misses: u64,
    reads: u64,
    seconds: f64,
    stalls: u64,
    stall_micros: u64,
    flushes: u64,
    compactions: u64,
    /// Bytes written to the table's files per byte flushed (0 for a
    /// B-tree table).
    write_amplification: f64,
}

/// Mean, min, 10th percentile, max and last of a series of rates.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Spread {
    mean: f64,
    min: f64,
    p10: f64,
    max: f64,
    last: f64,
}

impl Spread {
    fn of(rates: &[f64]) -> Spread {
        if rates.is_empty() {
            return Spread::default();
        }
        let mut sorted = rates.to_vec();
        sorted.sort_by(f64::total_cmp);
        // Nearest rank: the smallest value with at least 10% at or below it.
        let rank = ((sorted.len() as f64 * 0.1).ceil() as usize).max(1);
        let at = |i: usize| sorted.get(i).copied().unwrap_or(0.0);
        Spread {
            mean: rates.iter().sum::<f64>() / rates.len() as f64,
            min: at(0),
            p10: at(rank - 1),
            max: at(sorted.len() - 1),
            last: rates.last().copied().unwrap_or(0.0),
        }
    }
}

pub(crate) fn run(config: &Config, out: &mut dyn Write) -> Result<Summary, BenchError> {
    config.validate().map_err(BenchError::Config)?;
    if config.use_existing_db {
        return Err(BenchError::Config(
            "--use_existing_db does not apply to the lsm-buffers scenario: it starts from empty databases"
                .into(),
        ));
    }
    // The B-tree row takes keys up to about a quarter of a page; say so
    // before any configuration runs rather than fail at its first insert.
    let btree = spinney::TableOptions {
        page_size: config.page_size,
        ..spinney::TableOptions::btree()
    };
    if config.key_size > btree.max_key_len() {
        return Err(BenchError::Config(format!(
            "--key_size={} is too long for the lsm-buffers scenario's B-tree row: at most {} bytes with --page_size={}",
            config.key_size,
            btree.max_key_len(),
            config.page_size
        )));
    }
    let sizes = Sizes::of(config.scale);
    writeln!(
        out,
        "lsm-buffers: {} iterations of {} inserts + {} reads per configuration; buffers {} / {} KiB; pause {} ms",
        sizes.iterations,
        sizes.keys,
        sizes.keys,
        sizes.small_buffer_bytes >> 10,
        (sizes.small_buffer_bytes * LARGE_OVER_SMALL) >> 10,
        sizes.pause.as_millis()
    )
    .map_err(BenchError::io("print"))?;
    let mut outcomes = Vec::with_capacity(SETUPS.len());
    for setup in SETUPS {
        let outcome = run_one(config, &sizes, setup)?;
        let insert = Spread::of(&outcome.insert_rates);
        let read = Spread::of(&outcome.read_rates);
        writeln!(
            out,
            "lsm-buffers: {:<18} {:>6.1} s, inserts/s mean {:>7.0} p10 {:>7.0}, reads/s mean {:>7.0}, stalls {} ({} ms)",
            setup.name,
            outcome.seconds,
            insert.mean,
            insert.p10,
            read.mean,
            outcome.stalls,
            outcome.stall_micros / 1000
        )
        .map_err(BenchError::io("print"))?;
        outcomes.push(outcome);
    }
    if let Some(path) = &config.plot {
        draw(path, &outcomes)?;
    }
    Ok(summary(&sizes, &outcomes))
}

/// Runs the iterations of one configuration on a fresh database.
fn run_one(config: &Config, sizes: &Sizes, setup: Setup) -> Result<Outcome, BenchError> {
    let (dir, _temp) = super::database_dir(config, "lsm-buffers", setup.name)?;
    let options = spinney::Options {
        background_threads: setup.background_threads,
        autowork: true,
        ..config.db_options()
    };
    let db = Db::open(&dir, options).map_err(|e| setup_error("open the database", e))?;
    let mut table_options = config.table_options();
    table_options.kind = setup.kind;
    let buffer_bytes = sizes.buffer_bytes(&setup);
    table_options.write_buffer_size = buffer_bytes;
    let table = db
        .create_table(crate::bench::TABLE, table_options)
        .map_err(|e| setup_error("create the table", e))?;

    let keys = KeyFormat::new(config.key_size);
    let mut rng = worker_rng(config.seed, 0, 0);
    let mut values = ValueGenerator::new(config.seed, config.value_size);
    let mut written: Vec<u64> = Vec::new();
    let mut key = Vec::with_capacity(config.key_size + 1);
    let mut insert_rates = Vec::new();
    let mut read_rates = Vec::new();
    let mut misses = 0u64;
    let mut reads = 0u64;
    let start = Instant::now();
    for _ in 0..sizes.iterations {
        let begin = Instant::now();
        for _ in 0..sizes.keys {
            let k = rng.gen_range(0..keys.capacity());
            keys.write(k, &mut key);
            table
                .put(&key, values.next(config.value_size))
                .map_err(BenchError::engine("insert a key"))?;
            written.push(k);
        }
        insert_rates.push(rate(sizes.keys, begin.elapsed()));
        let begin = Instant::now();
        for _ in 0..sizes.keys {
            if written.is_empty() {
                break;
            }
            let Some(&k) = written.get(rng.gen_range(0..written.len())) else {
                continue;
            };
            keys.write(k, &mut key);
            let found = table.get(&key).map_err(BenchError::engine("read a key"))?;
            reads += 1;
            if found.is_none() {
                misses += 1;
            }
        }
        read_rates.push(rate(sizes.keys, begin.elapsed()));
        if setup.pause {
            std::thread::sleep(sizes.pause);
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    let stats = db.stats();
    drop(table);
    db.close()
        .map_err(BenchError::engine("close the database"))?;
    Ok(Outcome {
        setup,
        buffer_bytes,
        insert_rates,
        read_rates,
        misses,
        reads,
        seconds,
        stalls: stats.stalls(),
        stall_micros: stats.slowdown_micros + stats.stop_micros,
        flushes: stats.flushes,
        compactions: stats.compactions,
        write_amplification: stats
            .tables
            .iter()
            .map(|t| t.write_amplification)
            .fold(0.0, f64::max),
    })
}

/// Operations per second.
fn rate(ops: u64, elapsed: Duration) -> f64 {
    let seconds = elapsed.as_secs_f64();
    if seconds > 0.0 {
        ops as f64 / seconds
    } else {
        0.0
    }
}

fn draw(path: &Path, outcomes: &[Outcome]) -> Result<(), BenchError> {
    let series: Vec<plot::Series> = outcomes
        .iter()
        .map(|o| plot::Series {
            name: o.setup.name.to_string(),
            points: o
                .insert_rates
                .iter()
                .enumerate()
                .map(|(i, &r)| ((i + 1) as f64, r))
                .collect(),
        })
        .collect();
    plot::lines(
        path,
        "lsm-buffers: insert rate per iteration",
        "iteration",
        "inserts/s",
        &series,
    )
    .map_err(BenchError::Plot)
}

fn summary(sizes: &Sizes, outcomes: &[Outcome]) -> Summary {
    let headers = [
        "config",
        "kind",
        "threads",
        "buffer_kib",
        "pause_ms",
        "insert_mean",
        "insert_min",
        "insert_p10",
        "insert_max",
        "insert_last",
        "read_mean",
        "read_min",
        "read_p10",
        "read_max",
        "read_last",
    ]
    .map(String::from)
    .to_vec();
    let rows = outcomes
        .iter()
        .map(|o| {
            let insert = Spread::of(&o.insert_rates);
            let read = Spread::of(&o.read_rates);
            let mut row = vec![
                o.setup.name.to_string(),
                o.setup.kind.name().to_string(),
                o.setup.background_threads.to_string(),
                if o.setup.kind == TableKind::Lsm {
                    (o.buffer_bytes >> 10).to_string()
                } else {
                    "-".to_string()
                },
                if o.setup.pause {
                    sizes.pause.as_millis().to_string()
                } else {
                    "0".to_string()
                },
            ];
            for s in [insert, read] {
                row.extend(
                    [s.mean, s.min, s.p10, s.max, s.last]
                        .iter()
                        .map(|v| format!("{v:.0}")),
                );
            }
            row
        })
        .collect();
    Summary {
        scenario: "lsm-buffers".into(),
        headers,
        rows,
        notes: notes(sizes, outcomes),
    }
}

fn notes(sizes: &Sizes, outcomes: &[Outcome]) -> Vec<String> {
    let mut notes = vec![
        format!(
            "{} iterations of {} inserts (one commit each) then {} reads of written keys, per configuration \
             (SQLite4: 200 x 50,000; this is {:.3} of its data). Rates are operations per second of each iteration; \
             p10 is the 10th percentile (the slow iterations).",
            sizes.iterations,
            sizes.keys,
            sizes.keys,
            (sizes.iterations * sizes.keys) as f64 / (ITERATIONS_ORIGINAL * KEYS_ORIGINAL) as f64
        ),
        format!(
            "threads 0: the writer flushes and compacts itself (autowork); threads {THREADS_MULTI}: background threads do. \
             Buffers: {} KiB and {} KiB (1 MiB and 8 MiB per 50,000 keys of an iteration). Pause: {} ms after each iteration.",
            sizes.small_buffer_bytes >> 10,
            (sizes.small_buffer_bytes * LARGE_OVER_SMALL) >> 10,
            sizes.pause.as_millis()
        ),
    ];
    let misses: u64 = outcomes.iter().map(|o| o.misses).sum();
    let reads: u64 = outcomes.iter().map(|o| o.reads).sum();
    notes.push(if misses == 0 {
        format!("Every one of the {reads} reads found its key.")
    } else {
        format!("WARNING: {misses} of {reads} reads did not find a key that was written (the engine lost writes).")
    });
    notes.push(format!(
        "Background work: {}.",
        outcomes
            .iter()
            .map(|o| format!(
                "{} {} flushes, {} compactions, write amplification {:.1}, {} stalls ({} ms)",
                o.setup.name,
                o.flushes,
                o.compactions,
                o.write_amplification,
                o.stalls,
                o.stall_micros / 1000
            ))
            .collect::<Vec<_>>()
            .join("; ")
    ));
    let find = |name: &str| outcomes.iter().find(|o| o.setup.name == name);
    let compare = |what: &str, a: &str, b: &str| -> Option<String> {
        let (a_o, b_o) = (find(a)?, find(b)?);
        let (ai, bi) = (Spread::of(&a_o.insert_rates), Spread::of(&b_o.insert_rates));
        let (ar, br) = (Spread::of(&a_o.read_rates), Spread::of(&b_o.read_rates));
        Some(format!(
            "{what} ({a} -> {b}): inserts/s mean {:.0} -> {:.0} ({}), p10 {:.0} -> {:.0} ({}); reads/s mean {:.0} -> {:.0} ({}).",
            ai.mean,
            bi.mean,
            change(ai.mean, bi.mean),
            ai.p10,
            bi.p10,
            change(ai.p10, bi.p10),
            ar.mean,
            br.mean,
            change(ar.mean, br.mean),
        ))
    };
    if let (Some(plain), Some(paused)) = (find("single-large"), find("single-large-pause")) {
        let (a, b) = (
            Spread::of(&plain.insert_rates).mean,
            Spread::of(&paused.insert_rates).mean,
        );
        notes.push(format!(
            "Noise: single-large and single-large-pause do the same work (nothing runs during a pause), \
             yet their mean insert rates differ by {}; differences of that size below are noise, not effects.",
            change(a, b)
        ));
    }
    notes.extend(
        [
            compare(
                "Background threads, small buffers",
                "single-small",
                "multi-small",
            ),
            compare(
                "Background threads, large buffers",
                "single-large",
                "multi-large",
            ),
            compare(
                "Larger buffers, single-threaded",
                "single-small",
                "single-large",
            ),
            compare(
                "Larger buffers, multi-threaded",
                "multi-small",
                "multi-large",
            ),
            compare(
                "Pauses, single-threaded (the control: nothing works during a pause)",
                "single-large",
                "single-large-pause",
            ),
            compare("Pauses, multi-threaded", "multi-large", "multi-large-pause"),
            compare(
                "B-tree against the LSM (multi-threaded)",
                "multi-large",
                "btree",
            ),
        ]
        .into_iter()
        .flatten(),
    );
    notes
}

/// The change from `a` to `b` in percent, signed ("+12%", "-3%").
fn change(a: f64, b: f64) -> String {
    if a > 0.0 {
        format!("{:+.0}%", (b / a - 1.0) * 100.0)
    } else {
        "n/a".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_scale_both_ways_and_reach_the_original() {
        // Goal: scale 1 is 50 x 12,500, scale 16 the original 200 x 50,000,
        // larger scales stay there, tiny ones keep a floor; buffers keep
        // their ratio to an iteration's keys above the engine's minimum.
        let one = Sizes::of(1.0);
        assert_eq!((one.iterations, one.keys), (50, 12_500));
        assert_eq!(one.small_buffer_bytes, 256 << 10);
        assert_eq!(one.pause, Duration::from_millis(50));
        let original = Sizes::of(16.0);
        assert_eq!((original.iterations, original.keys), (200, 50_000));
        assert_eq!(original.small_buffer_bytes, 1 << 20);
        assert_eq!(Sizes::of(1e6).iterations, 200);
        let tiny = Sizes::of(1e-6);
        assert_eq!((tiny.iterations, tiny.keys), (ITERATIONS_MIN, KEYS_MIN));
        assert_eq!(
            tiny.small_buffer_bytes,
            spinney::limits::WRITE_BUFFER_BYTES_MIN
        );
    }

    #[test]
    fn spread_of_rates() {
        // Goal: the summary's statistics, including the nearest-rank p10 and
        // an empty series.
        let rates: Vec<f64> = (1..=20).map(f64::from).collect();
        let s = Spread::of(&rates);
        assert_eq!(s.min, 1.0);
        assert_eq!(s.p10, 2.0);
        assert_eq!(s.max, 20.0);
        assert_eq!(s.last, 20.0);
        assert!((s.mean - 10.5).abs() < 1e-9);
        assert_eq!(Spread::of(&[5.0]).p10, 5.0);
        assert_eq!(Spread::of(&[]), Spread::default());
    }

    #[test]
    fn change_is_signed_percent() {
        // Goal: the notes' comparisons read the right way round.
        assert_eq!(change(100.0, 150.0), "+50%");
        assert_eq!(change(100.0, 75.0), "-25%");
        assert_eq!(change(0.0, 1.0), "n/a");
    }
}
