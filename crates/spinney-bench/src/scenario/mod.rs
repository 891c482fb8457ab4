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

pub use crate::lineup::Scenario;
use crate::{BenchError, Config, Engine};

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
    let (root, temp) = crate::dirs::root_dir(config)?;
    let dir = root.join(scenario).join(name);
    crate::dirs::destroy(&dir)?;
    Ok((dir, temp))
}

/// The engines `scenario` runs: those `--compare` names; in a comparison's
/// child, its one engine; otherwise spinney's two kinds, or the one peer
/// `--engine` names. `lsm-shape`, being about LSM trees, runs on the one
/// engine `--engine` names (spinney's LSM by default).
pub(crate) fn engines(scenario: Scenario, config: &Config) -> Vec<Engine> {
    if !config.compare.is_empty() {
        return config.compare.clone();
    }
    if scenario == Scenario::LsmShape
        || config.results_file.is_some()
        || !config.engine.is_spinney()
    {
        return vec![config.engine];
    }
    vec![Engine::SpinneyLsm, Engine::SpinneyBtree]
}

/// What a scenario measured, in this process or gathered from children.
enum Measured {
    BtreeVsLsm(Vec<btree_vs_lsm::Measurement>),
    LsmShape(Vec<lsm_shape::Record>),
    Iibench(Vec<iibench::Run>),
}

impl Measured {
    fn lines(&self) -> Vec<String> {
        match self {
            Measured::BtreeVsLsm(m) => m.iter().map(btree_vs_lsm::Measurement::encode).collect(),
            Measured::LsmShape(records) => records.iter().map(lsm_shape::Record::encode).collect(),
            Measured::Iibench(runs) => runs.iter().flat_map(iibench::Run::encode).collect(),
        }
    }

    /// What children of `scenario` reported, read back.
    fn decode(scenario: Scenario, lines: &[String]) -> Result<Measured, String> {
        match scenario {
            Scenario::BtreeVsLsm => Ok(Measured::BtreeVsLsm(
                lines
                    .iter()
                    .map(|l| btree_vs_lsm::Measurement::decode(l))
                    .collect::<Result<_, _>>()?,
            )),
            Scenario::LsmShape => Ok(Measured::LsmShape(
                lines
                    .iter()
                    .map(|l| lsm_shape::Record::decode(l))
                    .collect::<Result<_, _>>()?,
            )),
            Scenario::Iibench => Ok(Measured::Iibench(iibench::Run::decode(lines)?)),
            other => Err(format!("{} runs in this process only", other.name())),
        }
    }

    fn summary(&self, config: &Config) -> Result<Summary, BenchError> {
        match self {
            Measured::BtreeVsLsm(m) => btree_vs_lsm::finish(config, m),
            Measured::LsmShape(records) => lsm_shape::finish(config, records),
            Measured::Iibench(runs) => iibench::finish(config, runs),
        }
    }
}

/// True for the scenarios that run on peers (each engine in a child process
/// when compared): `btree-vs-lsm` and `iibench` on any, `lsm-shape` on
/// those `lsm_shape::check_engines` takes.
fn runs_on_peers(scenario: Scenario) -> bool {
    matches!(
        scenario,
        Scenario::BtreeVsLsm | Scenario::LsmShape | Scenario::Iibench
    )
}

/// Refuses, as a usage error, engines `scenario` cannot run on, and
/// engines without direct I/O when `config` asks for it (a scenario's
/// figures of such an engine would come through the OS's page cache).
fn check_engines(
    scenario: Scenario,
    config: &Config,
    engines: &[Engine],
) -> Result<(), BenchError> {
    if config.direct_reads || config.direct_writes {
        if let Some(e) = engines.iter().find(|e| !e.direct_io()) {
            return Err(BenchError::Config(format!(
                "{e} has no direct I/O (--use_direct_reads, --use_direct_io_for_flush_and_compaction): not supported; leave it out of the comparison"
            )));
        }
    }
    match scenario {
        Scenario::LsmShape => lsm_shape::check_engines(engines),
        Scenario::LsmBuffers => spinney_only(scenario, engines),
        Scenario::BtreeVsLsm | Scenario::Iibench => Ok(()),
    }
}

/// Refuses a scenario that runs on spinney alone when a peer is asked for.
fn spinney_only(scenario: Scenario, engines: &[Engine]) -> Result<(), BenchError> {
    match engines.iter().find(|e| !e.is_spinney()) {
        Some(peer) => Err(BenchError::Config(format!(
            "the {} scenario runs on spinney's tables only, not on {peer}",
            scenario.name()
        ))),
        None => Ok(()),
    }
}

/// One seed for the whole scenario, drawn here when --seed is 0, so that
/// every engine and phase of it (and every child of a comparison) works on
/// the same keys.
fn with_seed(config: &Config) -> Config {
    Config {
        seed: config.resolve_seed(),
        ..config.clone()
    }
}

/// Runs `scenario` in this process, sized by `config.scale`, on the
/// engines `engines` picks; prints its summary, and writes the CSV and
/// chart `config` asks for. A comparison's child (`--results_file`) writes
/// its measurements there for its parent and prints no summary.
pub fn run(
    scenario: Scenario,
    config: &Config,
    out: &mut dyn Write,
) -> Result<Summary, BenchError> {
    let config = &with_seed(config);
    let engines = engines(scenario, config);
    check_engines(scenario, config, &engines)?;
    let measured = match scenario {
        Scenario::BtreeVsLsm => Measured::BtreeVsLsm(btree_vs_lsm::measure(config, &engines, out)?),
        Scenario::LsmShape => Measured::LsmShape(lsm_shape::measure(config, &engines, out)?),
        Scenario::Iibench => Measured::Iibench(iibench::measure(config, &engines, out)?),
        Scenario::LsmBuffers => return publish(config, lsm_buffers::run(config, out)?, out),
    };
    if let Some(path) = &config.results_file {
        let mut text = measured.lines().join("\n");
        text.push('\n');
        std::fs::write(path, text).map_err(BenchError::io(format!("write {}", path.display())))?;
        return measured.summary(config);
    }
    publish(config, measured.summary(config)?, out)
}

/// Runs `scenario` on each engine of `config.compare` in a child process
/// started from `exe` (this program), one after the other, and prints the
/// summary of them all.
pub fn run_in_children(
    scenario: Scenario,
    config: &Config,
    exe: &Path,
    out: &mut dyn Write,
) -> Result<Summary, BenchError> {
    config.validate().map_err(BenchError::Config)?;
    check_engines(scenario, config, &config.compare)?;
    if !runs_on_peers(scenario) {
        return run(scenario, config, out);
    }
    let config = &with_seed(config);
    let results = tempfile::Builder::new()
        .prefix("spinney-bench-results-")
        .tempdir()
        .map_err(BenchError::io("create a temporary directory"))?;
    let mut lines = Vec::new();
    let mut failed = Vec::new();
    for &engine in &config.compare {
        let file = results.path().join(engine.name());
        let child = Config {
            engine,
            scenario: Some(scenario),
            compare: Vec::new(),
            results_file: Some(file.clone()),
            report: None,
            plot: None,
            ..config.clone()
        };
        writeln!(
            out,
            "\n=== {}: {engine}, in a process of its own ===",
            scenario.name()
        )
        .map_err(BenchError::io("print"))?;
        // A failed engine (an error, a hang stopped by --child_timeout)
        // is left out; the others are still summed up.
        if let Err(e) = crate::compare::run_child(exe, &child, out) {
            writeln!(out, "{}: {e}; the summary leaves it out", scenario.name())
                .map_err(BenchError::io("print"))?;
            failed.push(engine.name());
            continue;
        }
        let text = std::fs::read_to_string(&file)
            .map_err(BenchError::io(format!("read {}", file.display())))?;
        lines.extend(
            text.lines()
                .filter(|l| !l.trim().is_empty())
                .map(String::from),
        );
    }
    if failed.len() == config.compare.len() {
        return Err(BenchError::Child(format!(
            "every engine of the comparison failed: {}",
            failed.join(", ")
        )));
    }
    let measured = Measured::decode(scenario, &lines).map_err(BenchError::Child)?;
    let mut summary = measured.summary(config)?;
    if !failed.is_empty() {
        summary.notes.push(format!(
            "Left out, having failed (see above): {}.",
            failed.join(", ")
        ));
    }
    let summary = publish(config, summary, out)?;
    if failed.is_empty() {
        Ok(summary)
    } else {
        Err(BenchError::Child(format!(
            "{} of the comparison's engines failed: {}",
            failed.len(),
            failed.join(", ")
        )))
    }
}

/// Adds the seed to the notes, prints the summary and writes its CSV.
fn publish(
    config: &Config,
    mut summary: Summary,
    out: &mut dyn Write,
) -> Result<Summary, BenchError> {
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

/// A record of `name=value` fields on one line: what a comparison's child
/// hands its parent. Values hold no spaces.
#[derive(Debug, Default)]
pub(crate) struct Fields {
    fields: Vec<(String, String)>,
}

/// A value that may be missing, for a record: "-" for none.
pub(crate) fn optional(v: Option<impl std::fmt::Display>) -> String {
    v.map_or_else(|| "-".to_string(), |v| v.to_string())
}

/// Field `name` of a record, "-" being none (`optional`).
pub(crate) fn parse_optional<T: std::str::FromStr>(
    f: &Fields,
    name: &str,
) -> Result<Option<T>, String> {
    let text: String = f.number(name)?;
    if text == "-" {
        return Ok(None);
    }
    f.number(name).map(Some)
}

impl Fields {
    pub fn new() -> Fields {
        Fields::default()
    }

    pub fn put(&mut self, name: &str, value: impl std::fmt::Display) {
        self.fields.push((name.to_string(), value.to_string()));
    }

    pub fn line(&self) -> String {
        self.fields
            .iter()
            .map(|(n, v)| format!("{n}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }

    pub fn parse(line: &str) -> Result<Fields, String> {
        let mut fields = Fields::new();
        for field in line.split_whitespace() {
            let (name, value) = field
                .split_once('=')
                .ok_or_else(|| format!("'{field}' is not name=value"))?;
            fields.put(name, value);
        }
        Ok(fields)
    }

    fn text(&self, name: &str) -> Result<&str, String> {
        self.fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .ok_or_else(|| format!("no field '{name}'"))
    }

    pub fn number<T: std::str::FromStr>(&self, name: &str) -> Result<T, String> {
        let text = self.text(name)?;
        text.parse()
            .map_err(|_| format!("field '{name}' = '{text}' is not a number of its kind"))
    }

    /// Puts text that may hold spaces (or anything else): whitespace and
    /// `%` become `%XX` escapes of their UTF-8 bytes.
    pub fn put_words(&mut self, name: &str, words: &str) {
        let mut escaped = String::with_capacity(words.len());
        for c in words.chars() {
            if c == '%' || c.is_whitespace() {
                let mut utf8 = [0u8; 4];
                for b in c.encode_utf8(&mut utf8).bytes() {
                    escaped.push_str(&format!("%{b:02X}"));
                }
            } else {
                escaped.push(c);
            }
        }
        self.put(name, escaped);
    }

    /// Text put by `put_words`.
    pub fn words(&self, name: &str) -> Result<String, String> {
        let text = self.text(name)?;
        let bad = || format!("field '{name}' = '{text}' has a broken % escape");
        let mut bytes = Vec::with_capacity(text.len());
        let mut rest = text.as_bytes();
        while let Some((&b, tail)) = rest.split_first() {
            if b == b'%' {
                let hex = tail.get(..2).ok_or_else(bad)?;
                let hex = std::str::from_utf8(hex).map_err(|_| bad())?;
                bytes.push(u8::from_str_radix(hex, 16).map_err(|_| bad())?);
                rest = tail.get(2..).unwrap_or_default();
            } else {
                bytes.push(b);
                rest = tail;
            }
        }
        String::from_utf8(bytes).map_err(|_| bad())
    }

    pub fn engine(&self, name: &str) -> Result<Engine, String> {
        let text = self.text(name)?;
        Engine::from_name(text).ok_or_else(|| format!("unknown engine '{text}'"))
    }
}
