//! The text a run prints, laid out as LevelDB's and RocksDB's db_bench lay
//! it out so that scripts written for them parse it:
//!
//! ```text
//! fillseq      :       1.234 micros/op 810372 ops/sec;   89.6 MB/s
//! readrandom   :       2.345 micros/op 426439 ops/sec;   48.1 MB/s (632 of 1000 found)
//! Microseconds per read:
//! Count: 1000 Average: 2.3450  StdDev: 1.02
//! Min: 1  Median: 2.1000  Max: 40
//! Percentiles: P50: 2.10 P75: 2.80 P99: 6.00 P99.9: 20.00 P99.99: 40.00
//! ------------------------------------------------------
//! [       0,       1 ]       12   1.200%   1.200%
//! ...
//! ```
//!
//! The environment (version, date, CPU) goes to stderr and the header to
//! stdout, as LevelDB does. After each db_bench line come spinney's own
//! lines, indented by two spaces so that no db_bench parser takes them for
//! results: latency percentiles, database size, costs per 1,000 operations,
//! read context per read, and readwhilewriting's writer.
//!
//! Thread-safety: plain functions.

use std::io::{self, Write};
use std::time::{SystemTime, UNIX_EPOCH};

use spinney::{Durability, TableKind};

use crate::latency::histogram_text;
use crate::lineup::Engine;
use crate::{BenchResult, Config};

/// The name column of a db_bench line (`%-12s`).
const NAME_WIDTH: usize = 12;

/// A MiB, for MB figures (db_bench's "MB" are MiB).
const MB: f64 = 1_048_576.0;

/// The lines LevelDB's db_bench prints to stderr before its header: the
/// engine and its version, the date, the CPUs.
pub fn environment(engine: Engine) -> String {
    let mut text = format!(
        "{:<11} version {}\nDate:       {} UTC\n",
        format!("{}:", engine.name()),
        crate::engine::version(engine),
        utc_now()
    );
    if let Ok(cpuinfo) = std::fs::read_to_string("/proc/cpuinfo") {
        let mut cpus = 0;
        let mut model = "";
        let mut cache = "";
        for line in cpuinfo.lines() {
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            match key.trim() {
                "model name" => {
                    cpus += 1;
                    model = value.trim();
                }
                "cache size" => cache = value.trim(),
                _ => {}
            }
        }
        text.push_str(&format!(
            "CPU:        {cpus} * {model}\nCPUCache:   {cache}\n"
        ));
    }
    text
}

/// db_bench's header: keys, values, entries, estimated sizes; then the
/// table, cache and durability of this run.
pub fn header(out: &mut dyn Write, config: &Config) -> io::Result<()> {
    let key = config.key_size as f64;
    let value = config.value_size as f64;
    let num = config.num as f64;
    let ratio = crate::keys::COMPRESSION_RATIO;
    writeln!(out, "Keys:       {} bytes each", config.key_size)?;
    writeln!(
        out,
        "Values:     {} bytes each ({} bytes after compression)",
        config.value_size,
        (value * ratio + 0.5) as u64
    )?;
    writeln!(out, "Entries:    {}", config.num)?;
    writeln!(
        out,
        "RawSize:    {:.1} MB (estimated)",
        (key + value) * num / MB
    )?;
    writeln!(
        out,
        "FileSize:   {:.1} MB (estimated)",
        (key + value * ratio) * num / MB
    )?;
    writeln!(out, "Engine:     {}", config.engine.name())?;
    writeln!(out, "Table:      {}", describe_table(config))?;
    writeln!(out, "Cache:      {:.1} MB", config.cache_size as f64 / MB)?;
    let mmap = config.mmap_read || config.engine.mmap_reads();
    if mmap || config.direct_reads || config.direct_writes {
        let reads = if config.direct_reads {
            "around the OS's page cache (--use_direct_reads)"
        } else if config.mmap_read {
            "through memory maps where the engine has the choice (--mmap_read)"
        } else if mmap {
            "through memory maps (spinney's Options::mmap_reads)"
        } else {
            "through the OS's page cache"
        };
        let writes = if config.direct_writes {
            "around the OS's page cache (--use_direct_io_for_flush_and_compaction)"
        } else {
            "through the OS's page cache"
        };
        writeln!(
            out,
            "File I/O:   reads {reads}; flushes, compactions and checkpoints written {writes}"
        )?;
    }
    // The flags' meaning; a peer's own mapping of them is in its Table line.
    writeln!(
        out,
        "Durability: {}",
        match config.durability {
            Durability::Off =>
                "--disable_wal=1 (spinney: log written in large pieces, never synced)",
            Durability::Normal =>
                "commits not synced (spinney: written to the OS, synced at flushes)",
            Durability::Full => "--sync=1: each commit synced",
        }
    )?;
    writeln!(
        out,
        "Threads:    {} (--background_threads={})",
        config.threads, config.background_threads
    )?;
    writeln!(out, "Seed:       {}", config.seed)?;
    if cfg!(debug_assertions) {
        writeln!(
            out,
            "WARNING: Assertions are enabled; benchmarks unnecessarily slow"
        )?;
    }
    writeln!(out, "------------------------------------------------")
}

/// The table's kind and the options that matter to it, in one line.
fn describe_table(config: &Config) -> String {
    if !config.engine.is_spinney() {
        return crate::engine::describe(config);
    }
    match config.table_kind() {
        TableKind::Lsm => format!(
            "lsm, {} compaction, bloom filter {} bits/key, write buffer {:.1} MB, compression {}",
            config.compaction_style.name(),
            config.bloom_bits,
            config.write_buffer_size as f64 / MB,
            config.compression.name()
        ),
        TableKind::Btree => format!(
            "btree, pages of {} bytes, compression {}",
            config.page_size,
            config.compression.name()
        ),
    }
}

/// The db_bench line of a result: `name : micros/op ops/sec; MB/s (found)`.
pub fn result_line(r: &BenchResult) -> String {
    let mut extra = String::new();
    if r.bytes > 0 {
        extra = format!("{:6.1} MB/s", r.mb_per_sec);
    }
    if let Some(f) = r.found {
        if !extra.is_empty() {
            extra.push(' ');
        }
        extra.push_str(&format!("({} of {} found)", f.found, f.total));
    }
    format!(
        "{:<NAME_WIDTH$} : {:>11.3} micros/op {} ops/sec;{}{}",
        r.benchmark.name(),
        r.micros_per_op,
        r.ops_per_sec as u64,
        if extra.is_empty() { "" } else { " " },
        extra
    )
}

/// Prints a result: the db_bench line, the histogram if asked for, then
/// spinney's figures.
pub fn write_result(out: &mut dyn Write, r: &BenchResult, histogram: bool) -> io::Result<()> {
    if !r.supported {
        writeln!(out, "{:<NAME_WIDTH$} : not supported", r.benchmark.name())?;
        return out.flush();
    }
    writeln!(out, "{}", result_line(r))?;
    if histogram {
        writeln!(
            out,
            "Microseconds per {}:\n{}",
            r.benchmark.operation(),
            histogram_text(&r.histogram)
        )?;
    }
    let l = &r.latency;
    if !r.benchmark.is_operation() {
        writeln!(
            out,
            "  latency (micros): p50 {:.2} p99 {:.2} p99.9 {:.2} p99.99 {:.2} max {:.2}",
            l.p50_micros, l.p99_micros, l.p999_micros, l.p9999_micros, l.max_micros
        )?;
    }
    writeln!(
        out,
        "  db size: {:.1} MB ({} bytes); peak RSS {:.1} MB",
        r.db_size_bytes as f64 / MB,
        r.db_size_bytes,
        r.peak_rss_bytes as f64 / MB
    )?;
    if r.benchmark.is_operation() {
        let c = &r.resources;
        writeln!(
            out,
            "  cost: {:.1} KB written, {:.1} KB read, {} read requests, {}{} CPU micros, {} context switches",
            c.bytes_written as f64 / 1024.0,
            c.bytes_read as f64 / 1024.0,
            c.read_requests,
            c.syncs.map_or(String::new(), |s| format!("{s} syncs, ")),
            c.cpu_micros,
            c.context_switches
        )?;
    } else {
        let a = &r.amplification;
        writeln!(
            out,
            "  per 1000 ops: {:.1} KB written, {:.1} KB read, {:.1} read requests, {}{:.0} CPU micros, {:.2} context switches",
            a.kb_written,
            a.kb_read,
            a.read_requests,
            a.syncs.map_or(String::new(), |s| format!("{s:.2} syncs, ")),
            a.cpu_micros,
            a.context_switches
        )?;
    }
    let c = &r.resources;
    writeln!(
        out,
        "  process: {:.1} MB written{}; storage: {:.1} MB written, {:.1} MB read",
        c.process_bytes_written as f64 / MB,
        r.write_amplification()
            .map_or(String::new(), |w| format!(" (write amplification {w:.2})")),
        c.storage_bytes_written as f64 / MB,
        c.storage_bytes_read as f64 / MB,
    )?;
    if let Some(settled) = &r.settled {
        let user = r.user_bytes_written as f64;
        let c = &settled.resources;
        let amp = |bytes: u64| {
            if user > 0.0 {
                format!("{:.2}", bytes as f64 / user)
            } else {
                "-".to_string()
            }
        };
        writeln!(
            out,
            "  settled: background work done {:.2} s after the benchmark; then db size {:.1} MB, w-amp {}, disk w-amp {}",
            settled.seconds,
            settled.db_size_bytes as f64 / MB,
            if r.write_calls_count_writes {
                amp(c.process_bytes_written)
            } else {
                "- (writes through a memory map)".to_string()
            },
            amp(c.storage_bytes_written),
        )?;
    }
    if let Some(c) = &r.read_context {
        writeln!(
            out,
            "  per {}: {:.2} trees searched, {:.2} bloom checks ({:.2} negative), {:.1} keys compared, {:.2} blocks from cache, {:.2} from storage",
            r.benchmark.operation(),
            c.trees_searched,
            c.bloom_checks,
            c.bloom_negatives,
            c.keys_compared,
            c.blocks_from_cache,
            c.blocks_from_storage
        )?;
    }
    if let Some(w) = &r.writer {
        let limit = if w.limit_per_sec == 0 {
            "no limit".to_string()
        } else {
            format!("limit {}/sec", w.limit_per_sec)
        };
        writeln!(
            out,
            "  writer: {} writes in {:.1} s, {:.0} writes/sec ({limit})",
            w.writes,
            w.elapsed.as_secs_f64(),
            w.writes_per_sec
        )?;
    }
    out.flush()
}

/// A progress line, in RocksDB's `--stats_interval` layout: the interval's
/// and the total's operations, rates and seconds; then the interval's p99.
pub fn progress_line(
    name: &str,
    interval_ops: u64,
    total_ops: u64,
    interval_seconds: f64,
    total_seconds: f64,
    p99_micros: f64,
) -> String {
    let rate = |ops: u64, s: f64| if s > 0.0 { ops as f64 / s } else { 0.0 };
    format!(
        "{} ... {name}: ({interval_ops},{total_ops}) ops and ({:.1},{:.1}) ops/second in ({interval_seconds:.6},{total_seconds:.6}) seconds; p99 {p99_micros:.2} micros",
        utc_now(),
        rate(interval_ops, interval_seconds),
        rate(total_ops, total_seconds),
    )
}

/// The figures of one db_bench result line, as parsed back.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedLine {
    /// The benchmark's name.
    pub name: String,
    /// micros/op.
    pub micros_per_op: f64,
    /// ops/sec.
    pub ops_per_sec: u64,
    /// MB/s, when the line has it.
    pub mb_per_sec: Option<f64>,
    /// `(found, total)` from "(N of M found)", when the line has it.
    pub found: Option<(u64, u64)>,
}

/// Parses a db_bench result line (LevelDB's, RocksDB's or ours) without
/// regular expressions: `name : X micros/op Y ops/sec; [Z MB/s] [(N of M
/// found)]`. None for any other line.
pub fn parse_result_line(line: &str) -> Option<ParsedLine> {
    let (name, rest) = line.split_once(" : ")?;
    let name = name.trim();
    if name.is_empty() || name.contains(char::is_whitespace) {
        return None;
    }
    let mut words = rest.split_whitespace();
    let micros_per_op = words.next()?.parse().ok()?;
    if words.next()? != "micros/op" {
        return None;
    }
    let ops_per_sec = words.next()?.parse().ok()?;
    if !words.next()?.starts_with("ops/sec") {
        return None;
    }
    let tail: Vec<&str> = words.collect();
    let mut mb_per_sec = None;
    let mut found = None;
    for (i, w) in tail.iter().enumerate() {
        if *w == "MB/s" {
            mb_per_sec = i.checked_sub(1).and_then(|p| tail.get(p)?.parse().ok());
        }
        if let Some(n) = w.strip_prefix('(') {
            if tail.get(i + 1) == Some(&"of") && tail.get(i + 3) == Some(&"found)") {
                let total = tail.get(i + 2)?.parse().ok()?;
                found = Some((n.parse().ok()?, total));
            }
        }
    }
    Some(ParsedLine {
        name: name.to_string(),
        micros_per_op,
        ops_per_sec,
        mb_per_sec,
        found,
    })
}

/// Parses RocksDB's `Percentiles: P50: a P75: b P99: c P99.9: d P99.99: e`
/// line into `[a, b, c, d, e]`.
pub fn parse_percentiles(line: &str) -> Option<[f64; 5]> {
    let rest = line.strip_prefix("Percentiles:")?;
    let mut values = [0.0; 5];
    let mut words = rest.split_whitespace();
    for (slot, label) in values
        .iter_mut()
        .zip(["P50:", "P75:", "P99:", "P99.9:", "P99.99:"])
    {
        if words.next()? != label {
            return None;
        }
        *slot = words.next()?.parse().ok()?;
    }
    Some(values)
}

/// Now, in UTC, as RocksDB's `TimeToString` lays it out: `2026/05/01-12:00:00`.
fn utc_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}/{m:02}/{d:02}-{:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The proleptic Gregorian date of a day number counted from 1970-01-01
/// (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_leveldb_rocksdb_and_spinney_lines() {
        // Goal: the parser reads every db_bench dialect, and refuses the
        // indented lines spinney adds after a result.
        let l =
            parse_result_line("fillseq      :       1.234 micros/op 810372 ops/sec;   89.6 MB/s")
                .expect("parse");
        assert_eq!(l.name, "fillseq");
        assert!((l.micros_per_op - 1.234).abs() < 1e-9);
        assert_eq!(l.ops_per_sec, 810_372);
        assert_eq!(l.mb_per_sec, Some(89.6));
        assert_eq!(l.found, None);
        let l = parse_result_line(
            "readrandom   :       2.345 micros/op 426439 ops/sec; (632 of 1000 found)",
        )
        .expect("parse");
        assert_eq!(l.found, Some((632, 1000)));
        assert_eq!(l.mb_per_sec, None);
        let l = parse_result_line(
            "readrandom   :       2.345 micros/op 426439 ops/sec 2.345 seconds 1000 operations;   48.1 MB/s (632 of 1000 found)",
        )
        .expect("RocksDB 7+ line");
        assert_eq!(l.mb_per_sec, Some(48.1));
        assert_eq!(l.found, Some((632, 1000)));
        assert_eq!(parse_result_line("  db size: 1.0 MB (1048576 bytes)"), None);
        assert_eq!(parse_result_line("Keys:       16 bytes each"), None);
    }

    #[test]
    fn parses_percentiles() {
        // Goal: the histogram's percentile line reads back into numbers.
        assert_eq!(
            parse_percentiles(
                "Percentiles: P50: 1.50 P75: 2.00 P99: 9.10 P99.9: 20.00 P99.99: 31.00"
            ),
            Some([1.5, 2.0, 9.1, 20.0, 31.0])
        );
        assert_eq!(parse_percentiles("Percentiles: P50: x"), None);
    }

    #[test]
    fn dates_from_day_numbers() {
        // Goal: the date arithmetic of the progress lines, at known days.
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(20_000), (2024, 10, 4));
    }
}
