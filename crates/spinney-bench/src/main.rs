//! `spinney-bench`: with no arguments, a short comparison of spinney's LSM
//! and B-tree tables and every peer this build has; with any flag, db_bench
//! mode (see `--help`).
//!
//! Exit codes: 0 success, 1 a run that failed (engine, I/O, plot), 2 bad
//! flags or a configuration that cannot run.

use std::process::ExitCode;

use spinney_bench::{
    default_comparison_config, run_benchmarks, run_compare, scenario, this_program, BenchError,
    Config,
};

fn main() -> ExitCode {
    let mut out = std::io::stdout().lock();
    let config = if std::env::args_os().len() <= 1 {
        default_comparison_config()
    } else {
        match Config::from_args(std::env::args_os()) {
            Ok(c) => c,
            // Prints the message (or the help) and exits: 2 for bad flags.
            Err(e) => e.exit(),
        }
    };
    let outcome = match config.scenario {
        Some(scenario) if !config.compare.is_empty() => this_program()
            .and_then(|exe| scenario::run_in_children(scenario, &config, &exe, &mut out))
            .map(|_| ()),
        Some(scenario) => scenario::run(scenario, &config, &mut out).map(|_| ()),
        None if !config.compare.is_empty() => this_program()
            .and_then(|exe| run_compare(&config, &exe, &mut out))
            .and_then(|c| match c.failures.len() {
                0 => Ok(()),
                n => Err(BenchError::Child(format!(
                    "{n} of the comparison's runs failed"
                ))),
            }),
        None => run_benchmarks(&config, &mut out).map(|_| ()),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("spinney-bench: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
