//! The lab's scenarios: the classic B-tree-versus-LSM experiments, scaled
//! to one machine (docs/bench.md says what each reproduces). Each prints
//! its own summary table and returns it; with `Config::plot` it draws its
//! comparison chart, and with `Config::report` it writes its rows as CSV.
//! `Config::scale` sizes it: 1 runs in about a minute on two cores.

mod btree_vs_lsm;
mod iibench;
mod lsm_buffers;
mod lsm_shape;

use std::io::Write;
use std::path::{Path, PathBuf};

use tempfile::TempDir;

use crate::{BenchError, Config};

/// A lab scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// WiredTiger's "Btree vs LSM": one inserter and 1, 2, 4 point readers,
    /// the writer rate-limited and not, on both kinds.
    BtreeVsLsm,
    /// Read amplification by LSM shape: pre_flush, post_flush, compact_l0,
    /// compact_l1, compact_all.
    LsmShape,
    /// iibench: primary-key-order inserts into a table with three
    /// secondary indexes, at several cache sizes.
    Iibench,
    /// SQLite4's LSM buffer tests: 200 iterations of 50,000 random inserts
    /// then 50,000 reads.
    LsmBuffers,
}

impl Scenario {
    /// Every scenario.
    pub const ALL: [Scenario; 4] = [
        Scenario::BtreeVsLsm,
        Scenario::LsmShape,
        Scenario::Iibench,
        Scenario::LsmBuffers,
    ];

    /// The name `--scenario` takes.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::BtreeVsLsm => "btree-vs-lsm",
            Scenario::LsmShape => "lsm-shape",
            Scenario::Iibench => "iibench",
            Scenario::LsmBuffers => "lsm-buffers",
        }
    }

    /// The scenario of a name.
    pub fn from_name(name: &str) -> Option<Scenario> {
        Scenario::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Every name, comma-separated.
    pub fn names() -> String {
        Scenario::ALL.map(Scenario::name).join(", ")
    }
}

/// A scenario's summary: a table of rows under headers, as printed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    /// The scenario's name.
    pub scenario: String,
    /// Column names.
    pub headers: Vec<String>,
    /// One row per measurement, as many cells as headers.
    pub rows: Vec<Vec<String>>,
    /// Lines printed under the table: what it shows, in words.
    pub notes: Vec<String>,
}

impl Summary {
    /// The cell of `column` in `row`, if any.
    pub fn cell(&self, row: usize, column: &str) -> Option<&str> {
        let c = self.headers.iter().position(|h| h == column)?;
        self.rows.get(row)?.get(c).map(String::as_str)
    }

    /// Prints the table: columns padded to their widest cell, numbers
    /// right-aligned.
    pub fn print(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let mut widths: Vec<usize> = self.headers.iter().map(String::len).collect();
        for row in &self.rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.len());
            }
        }
        writeln!(out)?;
        writeln!(out, "== {} ==", self.scenario)?;
        let line = |cells: &[String]| {
            cells
                .iter()
                .zip(&widths)
                .map(|(c, &w)| {
                    if c.parse::<f64>().is_ok() {
                        format!("{c:>w$}")
                    } else {
                        format!("{c:<w$}")
                    }
                })
                .collect::<Vec<_>>()
                .join("  ")
        };
        writeln!(out, "{}", line(&self.headers).trim_end())?;
        for row in &self.rows {
            writeln!(out, "{}", line(row).trim_end())?;
        }
        for note in &self.notes {
            writeln!(out, "{note}")?;
        }
        Ok(())
    }

    /// Writes the table as CSV (cells holding a comma are quoted).
    pub fn write_csv(&self, path: &Path) -> Result<(), BenchError> {
        let quote = |c: &String| {
            if c.contains([',', '"', '\n']) {
                format!("\"{}\"", c.replace('"', "\"\""))
            } else {
                c.clone()
            }
        };
        let mut text = String::new();
        for row in std::iter::once(&self.headers).chain(&self.rows) {
            text.push_str(&row.iter().map(quote).collect::<Vec<_>>().join(","));
            text.push('\n');
        }
        std::fs::write(path, text).map_err(BenchError::io(format!("writing {}", path.display())))
    }
}

/// The empty directory of one of a scenario's databases,
/// `root_dir/scenario/name`, and the guard of a temporary root.
pub(crate) fn database_dir(
    config: &Config,
    scenario: &str,
    name: &str,
) -> Result<(PathBuf, Option<TempDir>), BenchError> {
    let (root, temp) = crate::bench::root_dir(config)?;
    let dir = root.join(scenario).join(name);
    crate::bench::destroy(&dir)?;
    Ok((dir, temp))
}

/// Runs `scenario` sized by `config.scale`, prints its summary, and writes
/// the CSV and chart `config` asks for.
pub fn run(
    scenario: Scenario,
    config: &Config,
    out: &mut dyn Write,
) -> Result<Summary, BenchError> {
    // One seed for the whole scenario, drawn here when --seed is 0, so that
    // every engine and phase of it works on the same keys.
    let config = &Config {
        seed: config.resolve_seed(),
        ..config.clone()
    };
    let mut summary = match scenario {
        Scenario::BtreeVsLsm => btree_vs_lsm::run(config, out)?,
        Scenario::LsmShape => lsm_shape::run(config, out)?,
        Scenario::Iibench => iibench::run(config, out)?,
        Scenario::LsmBuffers => lsm_buffers::run(config, out)?,
    };
    summary.notes.push(format!(
        "Seed {} (--seed={} reproduces the keys).",
        config.seed, config.seed
    ));
    summary
        .print(out)
        .map_err(BenchError::io("printing the summary"))?;
    if let Some(path) = &config.report {
        summary.write_csv(path)?;
    }
    Ok(summary)
}
