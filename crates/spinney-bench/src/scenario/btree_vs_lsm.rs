//! `btree-vs-lsm`: WiredTiger's "Btree vs LSM" (shared/seeds/000), scaled
//! to one machine. For each engine (spinney's two kinds, or the engines of
//! `--compare`, such as WiredTiger's own B-tree and LSM beside spinney's,
//! each then in a child process of its own), `fillseqbatch` loads the table, then
//! `readwhilewriting` runs 1, 2 and 4 reader threads (random point reads)
//! beside one writer (random overwrites), first with the writer held to a
//! rate limit and then unlimited. WiredTiger found the LSM tree sustaining
//! 1.5–2x the B-tree's inserts and the B-tree serving 1.5–3x the LSM tree's
//! reads; the summary says, for each configuration, which kind won reads and
//! writes and by how much (with several engines of a kind, its best one).
//!
//! Each phase is one `run_benchmarks` call with `use_existing_db` on the
//! engine's own directory (`spinney-lsm/`, `wiredtiger-btree/`, ... under
//! `--db`, or under a new temporary directory), time-boxed so that the run
//! takes a known time.
//!
//! Sizes at `--scale=1` (about a minute on two cores in a release build):
//! - `ENTRIES_AT_SCALE_1` entries of `--key_size` + `--value_size` bytes
//!   (200,000 of 116 bytes: 23 MB), so that the data fits the default
//!   64 MiB cache for both kinds, as WiredTiger's 10 GB fitted its 34 GB
//!   and 137 GB caches. The B-tree needs the headroom: the sequential load
//!   packs its leaves full, and the first overwrites split nearly every one
//!   of them, so its leaves end about half full (twice the bytes). Past the
//!   cache, B-tree reads and writes fetch pages from storage (at twice the
//!   default entries, one page in seven; the `blocks from storage/read`
//!   column shows it), and the comparison becomes one of cache misses
//!   rather than of structures;
//! - phases of `PHASE_AT_SCALE_1` each (`--duration` overrides), twelve of
//!   them: 2 kinds x 3 reader counts x 2 writer limits.
//!
//! The writer limit is `WRITER_LIMIT_DEFAULT` writes per second
//! (`--writes_per_second` overrides), the rate of spinney-bench's default
//! comparison, and it is not scaled: it is a load on the machine, not a
//! size of the data, and a limit scaled down with the entries would leave
//! a tiny run's writer idle. WiredTiger chose 30,000/s, a rate both kinds
//! kept up with on 24 cores, so that the limited phases compare the
//! readers under the same write load; on two cores spinney's slower writer
//! (the B-tree's, beside four readers) sustains about 90,000 single puts a
//! second while its pages are cached, so 20,000/s keeps that property.
//!
//! The scenario sets the entries and reader threads itself (`--num`,
//! `--reads`, `--threads` and `--benchmarks` do not apply) and always loads
//! fresh tables; the other flags (cache size, compression, bloom bits,
//! write buffer, page size, background threads, durability, key and value
//! sizes, `--batch_size` of the load, `--seed`) apply to both kinds.
//!
//! Charts: with `--plot=x.svg`, reads per second go to `x.svg` and writes
//! per second to `x-writes.svg` (same directory and extension), grouped by
//! configuration with one bar per kind.
//!
//! Thread-safety: runs in the caller's thread; `run_benchmarks` starts and
//! joins the readers and the writer of each phase.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{Fields, Summary};
use crate::plot::{self, Bar};
use crate::{run_benchmarks, BenchError, Benchmark, Config, Engine, TableKind};

/// Entries loaded into each table at `--scale=1`.
const ENTRIES_AT_SCALE_1: f64 = 200_000.0;

/// The fewest entries a scaled run loads, so that tiny runs still read
/// from pages and blocks rather than one memtable.
const ENTRIES_MIN: u64 = 1_000;

/// The length of each readwhilewriting phase at `--scale=1`.
const PHASE_AT_SCALE_1: Duration = Duration::from_secs(4);

/// The shortest phase a scaled run makes: long enough for every thread to
/// start and do some work.
const PHASE_MIN: Duration = Duration::from_millis(50);

/// The writer's limit in the limited phases, in writes per second, when
/// `--writes_per_second` does not set one (see the module comment).
const WRITER_LIMIT_DEFAULT: u64 = 20_000;

/// Reader threads of each phase, as WiredTiger's 1, 4, 16, 32 scaled to two
/// cores.
const READERS: [usize; 3] = [1, 2, 4];

/// Phases shorter than this are too short to compare the kinds (a note
/// says so).
const NOISY_PHASE: Duration = Duration::from_secs(1);

/// A writer within this share of its limit kept up with it.
const KEPT_UP_SHARE: f64 = 0.95;

/// The scenario's sizes, from the configuration.
struct Plan {
    entries: u64,
    phase: Duration,
    limit: u64,
}

impl Plan {
    fn of(config: &Config) -> Result<Plan, BenchError> {
        if !(config.scale.is_finite() && config.scale > 0.0) {
            return Err(BenchError::Config(format!(
                "--scale={} must be above 0",
                config.scale
            )));
        }
        // The float-to-integer cast saturates; validate() bounds the scale.
        let entries = ((ENTRIES_AT_SCALE_1 * config.scale).round() as u64).max(ENTRIES_MIN);
        let phase = config.duration.unwrap_or_else(|| {
            PHASE_AT_SCALE_1
                .mul_f64(config.scale.min(1e3))
                .max(PHASE_MIN)
        });
        let limit = if config.writes_per_second > 0 {
            config.writes_per_second
        } else {
            WRITER_LIMIT_DEFAULT
        };
        Ok(Plan {
            entries,
            phase,
            limit,
        })
    }
}

/// One readwhilewriting phase's figures.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Measurement {
    engine: Engine,
    readers: usize,
    /// 0 for none.
    limit: u64,
    writes_per_sec: f64,
    reads_per_sec: f64,
    read_p99_micros: f64,
    /// KiB the process read from storage per read (the same measure for
    /// every engine: a read served from the cache reads none).
    storage_kib_per_read: f64,
    /// The one-minute load average when the engine's run began.
    load_before: f64,
}

impl Measurement {
    /// One line of `name=value` fields (a comparison's child reports with it).
    pub(crate) fn encode(&self) -> String {
        let mut f = Fields::new();
        f.put("engine", self.engine.name());
        f.put("readers", self.readers);
        f.put("limit", self.limit);
        f.put("writes_per_sec", self.writes_per_sec);
        f.put("reads_per_sec", self.reads_per_sec);
        f.put("read_p99_micros", self.read_p99_micros);
        f.put("storage_kib_per_read", self.storage_kib_per_read);
        f.put("load_before", self.load_before);
        f.line()
    }

    /// The measurement of a line made by `encode`.
    pub(crate) fn decode(line: &str) -> Result<Measurement, String> {
        let f = Fields::parse(line)?;
        Ok(Measurement {
            engine: f.engine("engine")?,
            readers: f.number("readers")?,
            limit: f.number("limit")?,
            writes_per_sec: f.number("writes_per_sec")?,
            reads_per_sec: f.number("reads_per_sec")?,
            read_p99_micros: f.number("read_p99_micros")?,
            storage_kib_per_read: f.number("storage_kib_per_read")?,
            load_before: f.number("load_before")?,
        })
    }
}

/// Runs the phases on each engine of `engines` in this process.
pub(crate) fn measure(
    config: &Config,
    engines: &[Engine],
    out: &mut dyn Write,
) -> Result<Vec<Measurement>, BenchError> {
    let plan = Plan::of(config)?;
    let (root, _temp) = crate::dirs::root_dir(config)?;
    let print = BenchError::io("print");
    writeln!(
        out,
        "btree-vs-lsm: {} entries per table; readwhilewriting with {:?} readers, writer limited to {}/s then unlimited; phases of {:.2} s",
        plan.entries,
        READERS,
        plan.limit,
        plan.phase.as_secs_f64()
    )
    .map_err(print)?;

    let mut measured = Vec::new();
    for &engine in engines {
        let load_before = load_average().unwrap_or(0.0);
        let base = Config {
            engine,
            num: plan.entries,
            db: Some(root.join(engine.name())),
            reads: None,
            report: None,
            plot: None,
            scenario: None,
            compare: Vec::new(),
            results_file: None,
            ..config.clone()
        };
        writeln!(out, "\n=== {engine} ===").map_err(BenchError::io("print"))?;
        let fill = Config {
            benchmarks: vec![Benchmark::FillSeqBatch],
            use_existing_db: false,
            threads: 1,
            duration: None,
            ..base.clone()
        };
        run_benchmarks(&fill, out)?;
        for limit in [plan.limit, 0] {
            for readers in READERS {
                let phase = Config {
                    benchmarks: vec![Benchmark::ReadWhileWriting],
                    use_existing_db: true,
                    threads: readers,
                    writes_per_second: limit,
                    duration: Some(plan.phase),
                    ..base.clone()
                };
                let results = run_benchmarks(&phase, out)?;
                let r = results
                    .iter()
                    .find(|r| r.benchmark == Benchmark::ReadWhileWriting)
                    .ok_or_else(|| {
                        BenchError::Config("readwhilewriting returned no result".into())
                    })?;
                measured.push(Measurement {
                    engine,
                    readers,
                    limit,
                    writes_per_sec: r.writer.map_or(0.0, |w| w.writes_per_sec),
                    reads_per_sec: r.ops_per_sec,
                    read_p99_micros: r.latency.p99_micros,
                    storage_kib_per_read: r.resources.storage_bytes_read as f64
                        / 1024.0
                        / r.ops.max(1) as f64,
                    load_before,
                });
            }
        }
    }
    Ok(measured)
}

/// The summary of every engine's measurements, and the charts if asked.
pub(crate) fn finish(config: &Config, measured: &[Measurement]) -> Result<Summary, BenchError> {
    let plan = Plan::of(config)?;
    let summary = summarise(&plan, measured);
    if let Some(path) = &config.plot {
        draw(path, measured)?;
    }
    Ok(summary)
}

/// A configuration's name: readers and writer limit.
fn configuration(readers: usize, limit: u64) -> String {
    let readers = if readers == 1 {
        "1 reader".to_string()
    } else {
        format!("{readers} readers")
    };
    if limit == 0 {
        format!("{readers}, writer unlimited")
    } else {
        format!("{readers}, writer {}", per_second(limit as f64))
    }
}

/// A rate in three significant digits: 9.98k/s, 171k/s, 1.20M/s.
fn per_second(v: f64) -> String {
    let (scaled, unit) = if v >= 1e6 {
        (v / 1e6, "M")
    } else if v >= 1e3 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let decimals = if scaled >= 100.0 {
        0
    } else if scaled >= 10.0 {
        1
    } else {
        2
    };
    format!("{scaled:.decimals$}{unit}/s")
}

/// Which of two rates is higher, and by how much, in words: `lsm` and
/// `btree` are the names of the two sides.
fn winner(lsm: (&str, f64), btree: (&str, f64)) -> String {
    let ((name, high), (other, low)) = if lsm.1 >= btree.1 {
        (lsm, btree)
    } else {
        (btree, lsm)
    };
    if low <= 0.0 {
        return format!("{name} ({} vs none)", per_second(high));
    }
    format!(
        "{name} {:.2}x {other} ({} vs {})",
        high / low,
        per_second(high),
        per_second(low)
    )
}

fn summarise(plan: &Plan, measured: &[Measurement]) -> Summary {
    let headers = [
        "engine",
        "kind",
        "readers",
        "writer limit",
        "writes/s",
        "reads/s",
        "read p99 us",
        "storage KiB/read",
    ]
    .map(String::from)
    .to_vec();
    let rows = measured
        .iter()
        .map(|m| {
            vec![
                m.engine.name().to_string(),
                m.engine.kind().name().to_string(),
                m.readers.to_string(),
                if m.limit == 0 {
                    "none".to_string()
                } else {
                    m.limit.to_string()
                },
                format!("{:.0}", m.writes_per_sec),
                format!("{:.0}", m.reads_per_sec),
                format!("{:.1}", m.read_p99_micros),
                format!("{:.3}", m.storage_kib_per_read),
            ]
        })
        .collect();

    let mut notes = vec![format!(
        "{} entries per table, phases of {:.2} s. Which kind won, per configuration (with several engines of a kind, its best one):",
        plan.entries,
        plan.phase.as_secs_f64()
    )];
    let mut lsm_writes = 0;
    let mut btree_reads = 0;
    let mut both_kept_up = 0;
    let mut configurations = 0;
    for limit in [plan.limit, 0] {
        for readers in READERS {
            // The best engine of `kind` by `rate` in this configuration.
            let best = |kind: TableKind, rate: fn(&Measurement) -> f64| {
                measured
                    .iter()
                    .filter(|m| m.engine.kind() == kind && m.readers == readers && m.limit == limit)
                    .max_by(|a, b| rate(a).total_cmp(&rate(b)))
                    .map(|m| (m.engine.name(), rate(m)))
            };
            let reads = |m: &Measurement| m.reads_per_sec;
            let writes = |m: &Measurement| m.writes_per_sec;
            let (Some(lsm_r), Some(btree_r), Some(lsm_w), Some(btree_w)) = (
                best(TableKind::Lsm, reads),
                best(TableKind::Btree, reads),
                best(TableKind::Lsm, writes),
                best(TableKind::Btree, writes),
            ) else {
                continue;
            };
            configurations += 1;
            let kept_up = |w: f64| limit > 0 && w >= limit as f64 * KEPT_UP_SHARE;
            let writes = if kept_up(lsm_w.1) && kept_up(btree_w.1) {
                both_kept_up += 1;
                format!(
                    "both kept up with the limit ({} and {})",
                    per_second(lsm_w.1),
                    per_second(btree_w.1)
                )
            } else {
                if lsm_w.1 > btree_w.1 {
                    lsm_writes += 1;
                }
                winner(lsm_w, btree_w)
            };
            if btree_r.1 > lsm_r.1 {
                btree_reads += 1;
            }
            notes.push(format!(
                "  {}: reads {}; writes {}",
                configuration(readers, limit),
                winner(lsm_r, btree_r),
                writes
            ));
        }
    }
    notes.push(format!(
        "The B-tree won reads in {btree_reads} of {configurations} configurations; the LSM tree won writes in {lsm_writes} of the {} where the writers did not both keep up with the limit. (WiredTiger: LSM 1.5-2x the writes, B-tree 1.5-3x the reads.)",
        configurations - both_kept_up
    ));
    if plan.phase < NOISY_PHASE {
        notes.push(format!(
            "Phases under {} s measure little more than thread start-up and the scheduler: these figures show that the scenario runs, not how the kinds compare.",
            NOISY_PHASE.as_secs()
        ));
    }
    let mut engines: Vec<Engine> = Vec::new();
    for m in measured {
        if !engines.contains(&m.engine) {
            engines.push(m.engine);
        }
    }
    let loads: Vec<String> = engines
        .iter()
        .filter_map(|e| measured.iter().find(|m| m.engine == *e))
        .map(|m| format!("{} {:.2}", m.engine, m.load_before))
        .collect();
    notes.push(format!(
        "Machine: {} CPUs, load average before each engine's run: {}, and {} at the end; readers and the writer share these CPUs with whatever else runs.",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        loads.join(", "),
        load_text(load_average())
    ));
    Summary {
        scenario: "btree-vs-lsm".into(),
        headers,
        rows,
        notes,
    }
}

/// The one-minute load average, if the system says (Linux's /proc/loadavg).
pub(super) fn load_average() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// A load average for a note.
pub(super) fn load_text(load: Option<f64>) -> String {
    load.map_or_else(|| "unknown".to_string(), |l| format!("{l:.2}"))
}

/// The file of the writes chart beside the reads chart `path`: `x.svg` ->
/// `x-writes.svg`.
fn writes_chart_path(path: &Path) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = match path.extension() {
        Some(ext) => format!("{stem}-writes.{}", ext.to_string_lossy()),
        None => format!("{stem}-writes"),
    };
    path.with_file_name(name)
}

/// Draws reads/s into `path` and writes/s beside it, grouped by
/// configuration, one series per engine.
fn draw(path: &Path, measured: &[Measurement]) -> Result<(), BenchError> {
    let bars = |value: &dyn Fn(&Measurement) -> f64| -> Vec<Bar> {
        measured
            .iter()
            .map(|m| Bar {
                group: short_configuration(m.readers, m.limit),
                series: m.engine.name().to_string(),
                value: value(m),
            })
            .collect()
    };
    plot::bars(
        path,
        "btree-vs-lsm: reads beside one writer",
        "reads/s",
        &bars(&|m| m.reads_per_sec),
    )
    .map_err(BenchError::Plot)?;
    plot::bars(
        &writes_chart_path(path),
        "btree-vs-lsm: the writer beside the readers",
        "writes/s",
        &bars(&|m| m.writes_per_sec),
    )
    .map_err(BenchError::Plot)
}

/// A configuration's name on a chart's axis: "2r, 10k/s", "2r, unlimited".
fn short_configuration(readers: usize, limit: u64) -> String {
    if limit == 0 {
        format!("{readers}r, unlimited")
    } else {
        format!("{readers}r, {}", per_second(limit as f64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_chart_sits_beside_the_reads_chart() {
        // Goal: the second chart's name is derived as the module comment says.
        assert_eq!(
            writes_chart_path(Path::new("/tmp/x.svg")),
            PathBuf::from("/tmp/x-writes.svg")
        );
        assert_eq!(
            writes_chart_path(Path::new("out/chart.png")),
            PathBuf::from("out/chart-writes.png")
        );
        assert_eq!(
            writes_chart_path(Path::new("chart")),
            PathBuf::from("chart-writes")
        );
    }

    #[test]
    fn winner_names_the_higher_rate_and_the_ratio() {
        // Goal: the notes' comparison words, including a zero rate.
        assert_eq!(
            winner(("spinney-lsm", 200.0), ("lmdb", 100.0)),
            "spinney-lsm 2.00x lmdb (200/s vs 100/s)"
        );
        assert_eq!(
            winner(("lsm", 10_000.0), ("btree", 25_000.0)),
            "btree 2.50x lsm (25.0k/s vs 10.0k/s)"
        );
        assert_eq!(
            winner(("lsm", 0.0), ("btree", 5.0)),
            "btree (5.00/s vs none)"
        );
    }

    #[test]
    fn plan_scales_entries_and_phases_with_floors() {
        // Goal: scale sizes the run, tiny scales hit the floors, and
        // --duration and --writes_per_second override the defaults.
        let p = Plan::of(&Config::default()).expect("plan");
        assert_eq!(p.entries, 200_000);
        assert_eq!(p.phase, PHASE_AT_SCALE_1);
        assert_eq!(p.limit, WRITER_LIMIT_DEFAULT);
        let tiny = Config {
            scale: 0.0001,
            ..Config::default()
        };
        let p = Plan::of(&tiny).expect("plan");
        assert_eq!((p.entries, p.phase), (ENTRIES_MIN, PHASE_MIN));
        let given = Config {
            duration: Some(Duration::from_secs(2)),
            writes_per_second: 500,
            ..Config::default()
        };
        let p = Plan::of(&given).expect("plan");
        assert_eq!((p.phase, p.limit), (Duration::from_secs(2), 500));
        let bad = Config {
            scale: f64::NAN,
            ..Config::default()
        };
        assert!(matches!(Plan::of(&bad), Err(BenchError::Config(_))));
    }
}
