//! The `btree-vs-lsm` and `lsm-shape` scenarios at a tiny scale, through
//! `scenario::run` and through the binary: the rows they report, the figures
//! in them, the read amplification the shapes must show, their charts and
//! CSV, and how a bad scenario name fails.

use std::path::Path;
use std::process::Command;

mod common;

use common::{number, run, tiny};
use spinney_bench::scenario::{self, Scenario, Summary};
use spinney_bench::{BenchError, Config};

/// The row whose cells in `columns` are `values`.
fn row_of(summary: &Summary, columns: &[(&str, &str)]) -> usize {
    (0..summary.rows.len())
        .find(|&r| columns.iter().all(|(c, v)| summary.cell(r, c) == Some(*v)))
        .unwrap_or_else(|| panic!("no row with {columns:?}"))
}

/// Lines of the CSV file at `path`.
fn csv_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .expect("read the CSV")
        .lines()
        .map(String::from)
        .collect()
}

#[test]
fn btree_vs_lsm_reports_every_kind_reader_count_and_limit() {
    // Goal: one row per kind x readers x writer limit (2 x 3 x 2), with
    // achieved write and read rates and a read p99 above zero, notes that
    // compare the kinds per configuration, two charts, the CSV, and one
    // database directory per kind under --db. Method: run at a tiny scale.
    let dir = tempfile::tempdir().expect("tempdir");
    let config = tiny(dir.path(), "x.svg", "summary.csv");
    let (summary, out) = run(Scenario::BtreeVsLsm, &config);

    assert_eq!(summary.scenario, "btree-vs-lsm");
    assert_eq!(summary.rows.len(), 12, "{summary:?}");
    for kind in ["lsm", "btree"] {
        for readers in ["1", "2", "4"] {
            for limit in ["20000", "none"] {
                let r = row_of(
                    &summary,
                    &[
                        ("kind", kind),
                        ("readers", readers),
                        ("writer limit", limit),
                    ],
                );
                for column in ["writes/s", "reads/s", "read p99 us"] {
                    let v = number(&summary, r, column);
                    assert!(v > 0.0, "{kind} {readers} {limit}: {column} = {v}");
                }
                assert!(number(&summary, r, "storage KiB/read") >= 0.0);
            }
        }
    }
    let comparisons = summary
        .notes
        .iter()
        .filter(|n| n.contains(": reads ") && n.contains("; writes "))
        .count();
    assert_eq!(comparisons, 6, "{:#?}", summary.notes);
    assert!(out.contains("== btree-vs-lsm =="), "{out}");
    assert!(out.contains("readwhilewriting :"), "{out}");

    assert!(dir.path().join("x.svg").is_file());
    assert!(dir.path().join("x-writes.svg").is_file());
    assert_eq!(csv_lines(&dir.path().join("summary.csv")).len(), 13);
    assert!(dir.path().join("db/spinney-lsm/CURRENT").is_file());
    assert!(dir.path().join("db/spinney-btree/CURRENT").is_file());
}

#[test]
fn lsm_shape_searches_fewer_trees_as_the_tree_is_compacted() {
    // Goal: one row per shape x query kind (5 x 3) with positive QPS; point
    // queries search more trees at pre_flush than at compact_all, with and
    // without bloom filters; the table without filters checks none and the
    // one with them does; the scenario's own checks (matching shapes, shapes
    // unchanged by the queries, every key found) pass; and the chart and
    // CSV are written. Method: run at a tiny scale.
    let dir = tempfile::tempdir().expect("tempdir");
    let config = tiny(dir.path(), "shape.svg", "summary.csv");
    let (summary, out) = run(Scenario::LsmShape, &config);

    assert_eq!(summary.scenario, "lsm-shape");
    assert_eq!(summary.rows.len(), 15, "{summary:?}");
    let shapes = [
        "pre_flush",
        "post_flush",
        "compact_l0",
        "compact_l1",
        "compact_all",
    ];
    let queries = ["range", "point with bloom", "point without bloom"];
    for shape in shapes {
        for query in queries {
            let r = row_of(&summary, &[("shape", shape), ("query", query)]);
            assert!(number(&summary, r, "qps") > 0.0, "{shape} {query}");
            assert!(
                number(&summary, r, "trees searched") >= 1.0,
                "{shape} {query}"
            );
            assert!(
                number(&summary, r, "keys compared") > 0.0,
                "{shape} {query}"
            );
            for column in ["blocks from cache", "blocks from storage"] {
                assert!(number(&summary, r, column) >= 0.0, "{shape} {query}");
            }
            let bloom = number(&summary, r, "bloom checks");
            match query {
                "point without bloom" | "range" => assert_eq!(bloom, 0.0, "{shape} {query}"),
                _ => assert!(bloom > 0.0, "{shape} {query}"),
            }
        }
    }
    for query in ["point with bloom", "point without bloom"] {
        let trees = |shape| {
            number(
                &summary,
                row_of(&summary, &[("shape", shape), ("query", query)]),
                "trees searched",
            )
        };
        assert!(
            trees("pre_flush") > trees("compact_all"),
            "{query}: {} vs {}",
            trees("pre_flush"),
            trees("compact_all")
        );
    }
    // The range query searches every tree: six L0 runs, L1, L2 and the
    // memtable at pre_flush, the empty memtable and the last level at the end.
    let range_trees = |shape| {
        number(
            &summary,
            row_of(&summary, &[("shape", shape), ("query", "range")]),
            "trees searched",
        )
    };
    assert_eq!(range_trees("pre_flush"), 9.0);
    assert_eq!(range_trees("post_flush"), 10.0);
    assert_eq!(range_trees("compact_all"), 2.0);

    assert!(
        summary.notes.iter().any(|n| n.starts_with("Checks: ")),
        "{:#?}",
        summary.notes
    );
    assert!(!summary.notes.iter().any(|n| n.contains("FAILED")));
    assert!(out.contains("pre_flush    memtable"), "{out}");
    assert!(dir.path().join("shape.svg").is_file());
    assert_eq!(csv_lines(&dir.path().join("summary.csv")).len(), 16);
}

#[test]
fn lsm_shape_without_bloom_filters_is_a_usage_error() {
    // Goal: --bloom_bits=0 would compare two tables without filters; the
    // scenario refuses it as a usage error (exit code 2) before it writes.
    let dir = tempfile::tempdir().expect("tempdir");
    let config = Config {
        bloom_bits: 0,
        ..tiny(dir.path(), "x.svg", "summary.csv")
    };
    let mut out = Vec::new();
    let err = scenario::run(Scenario::LsmShape, &config, &mut out).expect_err("refused");
    assert!(matches!(err, BenchError::Config(_)), "{err:?}");
    assert_eq!(err.exit_code(), 2);
    assert!(err.to_string().contains("--bloom_bits"), "{err}");
    assert!(!dir.path().join("db").exists());
}

#[test]
fn an_unknown_scenario_lists_the_valid_ones() {
    // Goal: the binary rejects `--scenario=nope` with exit code 2 and a
    // message naming every valid scenario.
    let output = Command::new(env!("CARGO_BIN_EXE_spinney-bench"))
        .arg("--scenario=nope")
        .output()
        .expect("run the binary");
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("nope"), "{stderr}");
    for name in Scenario::ALL.map(Scenario::name) {
        assert!(stderr.contains(name), "{name} missing from: {stderr}");
    }
}
