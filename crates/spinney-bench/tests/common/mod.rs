//! What the scenario tests share: a tiny configuration, a run that keeps
//! the printed text, and a summary cell read as a number.

use std::path::Path;

use spinney_bench::scenario::{self, Scenario, Summary};
use spinney_bench::Config;

/// The scale of every scenario test: seconds at most in the test profile.
pub const TINY: f64 = 0.005;

/// A scenario at `TINY`, keeping its databases in `dir/db`, drawing to
/// `dir/plot` and writing its summary to `dir/report`.
pub fn tiny(dir: &Path, plot: &str, report: &str) -> Config {
    Config {
        scale: TINY,
        progress: false,
        db: Some(dir.join("db")),
        plot: Some(dir.join(plot)),
        report: Some(dir.join(report)),
        ..Config::default()
    }
}

/// Runs `scenario`; its summary and what it printed.
pub fn run(scenario: Scenario, config: &Config) -> (Summary, String) {
    let mut out = Vec::new();
    let summary = scenario::run(scenario, config, &mut out).expect("scenario runs");
    (summary, String::from_utf8(out).expect("utf-8 output"))
}

/// The number in `column` of `row`, which must parse.
pub fn number(summary: &Summary, row: usize, column: &str) -> f64 {
    let cell = summary
        .cell(row, column)
        .unwrap_or_else(|| panic!("row {row} has no column {column:?}"));
    cell.parse()
        .unwrap_or_else(|e| panic!("row {row} {column:?} = {cell:?}: {e}"))
}
