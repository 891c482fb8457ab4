//! `--report=FILE.csv`: the time series of a run, one row per interval of
//! every benchmark, written as each benchmark ends (so a run stopped half
//! way keeps the rows of the benchmarks it finished).
//!
//! Columns: `run_seconds` (from the start of the run to the interval's
//! end), `benchmark`, `table_kind`, `benchmark_seconds` (from the start of
//! the benchmark), `interval_seconds`, `ops`, `ops_per_sec`, `p99_micros`,
//! then the table's shape at the interval's end: `memtable_entries`,
//! `immutable_memtables`, `l0_runs`, `sst_files` (LSM), `btree_height`,
//! `btree_pages` (B-tree); the other kind's columns are 0.
//!
//! Thread-safety: used by the run's thread only.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use crate::{BenchError, BenchResult};

/// The header row.
pub const HEADER: &str = "run_seconds,benchmark,table_kind,benchmark_seconds,interval_seconds,ops,ops_per_sec,p99_micros,memtable_entries,immutable_memtables,l0_runs,sst_files,btree_height,btree_pages";

/// An open CSV report.
pub struct Report {
    file: BufWriter<File>,
    path: String,
}

impl Report {
    /// Creates (or truncates) the file and writes the header.
    pub fn create(path: &Path) -> Result<Report, BenchError> {
        let shown = path.display().to_string();
        let file = File::create(path).map_err(BenchError::io(format!("create {shown}")))?;
        let mut r = Report {
            file: BufWriter::new(file),
            path: shown,
        };
        writeln!(r.file, "{HEADER}").map_err(BenchError::io(format!("write {}", r.path)))?;
        Ok(r)
    }

    /// Appends the rows of one benchmark and flushes them.
    pub fn add(&mut self, r: &BenchResult) -> Result<(), BenchError> {
        let write = |file: &mut BufWriter<File>| -> std::io::Result<()> {
            for i in &r.intervals {
                writeln!(
                    file,
                    "{:.3},{},{},{:.3},{:.3},{},{:.1},{:.2},{},{},{},{},{},{}",
                    r.start_seconds + i.elapsed_seconds,
                    r.benchmark.name(),
                    r.table_kind.name(),
                    i.elapsed_seconds,
                    i.seconds,
                    i.ops,
                    i.ops_per_sec,
                    i.p99_micros,
                    i.shape.memtable_entries,
                    i.shape.immutable_memtables,
                    i.shape.l0_runs,
                    i.shape.sst_files,
                    i.shape.btree_height,
                    i.shape.btree_pages
                )?;
            }
            file.flush()
        };
        write(&mut self.file).map_err(BenchError::io(format!("write {}", self.path)))
    }
}
