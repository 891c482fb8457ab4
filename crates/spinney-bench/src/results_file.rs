//! `--results_file`: the figures a child of `--compare` writes for its
//! parent, one line a benchmark, in the order the benchmarks ran:
//!
//! ```text
//! benchmark=fillseq supported=1 ops=1000000 ops_per_sec=812345.6 seconds=1.231 ...
//! ```
//!
//! Each field is `name=value`, separated by spaces, in any order; a flag is
//! 0 or 1, a count a whole number, a rate or a time a decimal number. A run
//! writes the file (`bench::run_benchmarks`, through `write_results`) and
//! `compare` reads it back (`read_results`), so that a run needs nothing
//! of `compare`.
//!
//! Thread-safety: plain values; a file is written once, by the child, and
//! read after the child has exited.

use std::collections::BTreeMap;
use std::path::Path;

use crate::{BenchError, BenchResult, Benchmark};

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
pub(crate) fn read_results(path: &Path) -> Result<Vec<(Benchmark, RoundFigures)>, String> {
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
}
