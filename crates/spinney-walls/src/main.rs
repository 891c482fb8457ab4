//! `spinney-walls [REPO] [--graph]`: checks the walls between the pieces of
//! the workspace's crates and the size ratchet (docs/design.md, "Layers"),
//! for scripts/check-walls.sh. Prints each problem and exits 1, or prints
//! one line saying what was checked. `--graph` also prints which piece
//! imports which.
//!
//! Exit codes: 0 the walls hold, 1 a wall is crossed, 2 the check could
//! not run (no rules, a file that does not parse).

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut root = PathBuf::from(".");
    let mut graph = false;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--graph" => graph = true,
            "-h" | "--help" => {
                println!("usage: spinney-walls [REPO] [--graph]");
                return ExitCode::SUCCESS;
            }
            _ => root = PathBuf::from(arg),
        }
    }
    let report = match spinney_walls::check(&root) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("check-walls: cannot check: {e}");
            return ExitCode::from(2);
        }
    };
    if graph {
        for (krate, lines) in &report.graphs {
            for line in lines {
                println!("crates/{krate}/{line}");
            }
        }
    }
    for o in &report.oversize {
        println!(
            "check-walls: {} has {} lines of non-test code (listed as over the limit)",
            o.shown, o.lines
        );
    }
    if !report.problems.is_empty() {
        for p in &report.problems {
            eprintln!("check-walls: {p}");
        }
        eprintln!("check-walls: {} problem(s)", report.problems.len());
        return ExitCode::FAILURE;
    }
    println!(
        "check-walls: the walls hold ({} files, {} imports checked)",
        report.files, report.imports
    );
    ExitCode::SUCCESS
}
