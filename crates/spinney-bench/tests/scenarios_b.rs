//! The iibench and lsm-buffers scenarios at a tiny scale, through
//! `scenario::run`: the rows they report, the databases they leave under
//! `--db` (read back with the engine), their charts and CSV files, and how
//! they refuse what they cannot do.

use std::collections::BTreeSet;
use std::path::Path;

use spinney::{Db, Options};
mod common;

use common::{number, run, tiny};
use spinney_bench::scenario::{self, Scenario, Summary};
use spinney_bench::{BenchError, Config, IndexWrites};

/// Every entry of table `name` in the database at `dir`.
fn entries(dir: &Path, name: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
    let db = Db::open(dir, Options::default()).expect("open the kept database");
    let table = db.table(name).expect("table");
    let all = table
        .iter()
        .expect("iter")
        .collect::<spinney::Result<Vec<_>>>()
        .expect("read");
    drop(table);
    db.close().expect("close");
    all
}

/// The chart and the CSV of a run: an SVG, and a header plus one line per row.
fn check_files(dir: &Path, summary: &Summary) {
    let svg = std::fs::read_to_string(dir.join("chart.svg")).expect("the chart exists");
    assert!(svg.contains("<svg"), "not an SVG");
    let csv = std::fs::read_to_string(dir.join("rows.csv")).expect("the CSV exists");
    assert_eq!(csv.lines().count(), summary.rows.len() + 1);
    assert_eq!(csv.lines().next(), Some(summary.headers.join(",").as_str()));
}

#[test]
fn iibench_reports_every_kind_cache_and_interval_and_keeps_consistent_indexes() {
    // Goal: iibench runs both kinds at three caches, ten intervals each,
    // with figures that parse and make sense, and leaves in each kept
    // database exactly the documents it reports, every index entry pointing
    // at a document with the attributes the entry names. Method: run at a
    // tiny scale under a --db directory, then open each database it kept.
    let dir = tempfile::tempdir().expect("tempdir");
    // Small write buffers, so that the LSM tables flush and compact too;
    // no background thread, so that they do within the run (the writers
    // do the work) however busy the machine is: background threads yield
    // the cores, and the run lasts a fraction of a second.
    let config = Config {
        write_buffer_size: 64 << 10,
        background_threads: 0,
        ..tiny(dir.path(), "chart.svg", "rows.csv")
    };
    let (summary, out) = run(Scenario::Iibench, &config);
    assert_eq!(summary.scenario, "iibench");
    assert_eq!(summary.rows.len(), 2 * 3 * 10);
    check_files(dir.path(), &summary);

    let mut caches = BTreeSet::new();
    let mut docs_total = 0;
    for kind in ["lsm", "btree"] {
        let rows: Vec<usize> = (0..summary.rows.len())
            .filter(|&r| summary.cell(r, "kind") == Some(kind))
            .collect();
        assert_eq!(rows.len(), 30, "{kind}");
        // Three caches, each with ten intervals of equal size.
        for group in rows.chunks(10) {
            let cache = number(&summary, group[0], "cache_mib");
            assert!(cache > 0.0);
            caches.insert(cache.to_bits());
            let docs: Vec<u64> = group
                .iter()
                .map(|&r| number(&summary, r, "docs") as u64)
                .collect();
            let step = docs[0];
            assert!(step > 0);
            assert_eq!(docs, (1..=10).map(|i| i * step).collect::<Vec<_>>());
            docs_total = docs[9];
            for &r in group {
                assert_eq!(number(&summary, r, "cache_mib"), cache);
                for column in ["docs_per_sec", "kb_written_per_1k", "cpu_us_per_1k"] {
                    assert!(number(&summary, r, column) > 0.0, "row {r} {column}");
                }
                for column in ["kb_read_per_1k", "reads_per_1k", "cs_per_1k", "index_mib"] {
                    assert!(number(&summary, r, column) >= 0.0, "row {r} {column}");
                }
            }
        }
    }
    assert_eq!(caches.len(), 3, "three distinct caches");
    // Each document writes its primary entry and three index entries, all
    // logged: at least 4 keys of 16 bytes and a 100-byte value per document.
    assert!(number(&summary, 0, "kb_written_per_1k") > 100.0);
    // The indexes grow with the documents (the LSM's once flushed).
    let btree_first = (0..summary.rows.len())
        .find(|&r| summary.cell(r, "kind") == Some("btree"))
        .expect("btree rows");
    assert!(number(&summary, 9, "index_mib") > 0.0);
    assert!(
        number(&summary, btree_first + 9, "index_mib") > number(&summary, btree_first, "index_mib")
    );
    assert!(summary
        .notes
        .iter()
        .any(|n| n.starts_with("Final docs/s (spinney-lsm)")));
    assert!(summary
        .notes
        .iter()
        .any(|n| n.starts_with("Final docs/s (spinney-btree)")));
    assert!(
        out.contains("iibench: spinney-btree    cache small"),
        "{out}"
    );

    for kind in ["lsm", "btree"] {
        for cache in ["small", "medium", "large"] {
            let db = dir
                .path()
                .join("db/iibench")
                .join(format!("spinney-{kind}-{cache}"));
            let documents = entries(&db, "documents");
            assert_eq!(documents.len() as u64, docs_total, "{kind}-{cache}");
            // Primary keys are the ids 0..N, zero-padded to 16 digits.
            for (i, (key, value)) in documents.iter().enumerate() {
                assert_eq!(key, format!("{i:016}").as_bytes(), "{kind}-{cache}");
                assert_eq!(value.len(), 100, "{kind}-{cache}");
            }
            let attributes = |id: &[u8]| -> &[u8] {
                let i: usize = std::str::from_utf8(id)
                    .expect("ascii id")
                    .parse()
                    .expect("numeric id");
                &documents[i].1[..18]
            };
            for (index, layout) in [
                ("by_price", [(0, 8), (8, 6)]),
                ("by_customer", [(8, 6), (0, 8)]),
                ("by_register", [(14, 4), (0, 8)]),
            ] {
                let keys = entries(&db, index);
                assert_eq!(keys.len() as u64, docs_total, "{kind}-{cache} {index}");
                // Every entry ends with an existing primary key, and its
                // leading attributes are that document's.
                for (key, value) in &keys {
                    assert!(value.is_empty());
                    let (attrs, id) = key.split_at(key.len() - 16);
                    let doc = attributes(id);
                    let expected: Vec<u8> = layout
                        .iter()
                        .flat_map(|&(at, len)| doc[at..at + len].iter().copied())
                        .collect();
                    assert_eq!(attrs, &expected[..], "{kind}-{cache} {index}");
                }
            }
        }
    }
}

#[test]
fn iibench_with_read_modify_write_transactions_runs_beside_blind_writes() {
    // Goal: --iibench_writes=blind,rmw runs each kind both ways at each
    // cache, says what reading before writing costs each kind, and the
    // read-modify-write runs leave the same documents and index entries.
    let dir = tempfile::tempdir().expect("tempdir");
    let config = Config {
        write_buffer_size: 64 << 10,
        background_threads: 0,
        iibench_writes: vec![IndexWrites::Blind, IndexWrites::Rmw],
        ..tiny(dir.path(), "chart.svg", "rows.csv")
    };
    let (summary, out) = run(Scenario::Iibench, &config);
    assert_eq!(summary.rows.len(), 2 * 2 * 3 * 10);
    check_files(dir.path(), &summary);
    for kind in ["lsm", "btree"] {
        for writes in ["blind", "rmw"] {
            let rows = (0..summary.rows.len())
                .filter(|&r| {
                    summary.cell(r, "kind") == Some(kind)
                        && summary.cell(r, "writes") == Some(writes)
                })
                .count();
            assert_eq!(rows, 30, "{kind} {writes}");
        }
        let engine = format!("spinney-{kind}");
        assert!(
            summary
                .notes
                .iter()
                .any(|n| n.starts_with(&format!("{engine}: read-modify-write"))
                    && n.contains("small ")
                    && n.contains("large ")),
            "{:#?}",
            summary.notes
        );
        assert!(
            summary
                .notes
                .iter()
                .any(|n| n.starts_with(&format!("Final docs/s ({engine} rmw)"))),
            "{:#?}",
            summary.notes
        );
        let blind = dir.path().join(format!("db/iibench/{engine}-small"));
        let rmw = dir.path().join(format!("db/iibench/{engine}-small-rmw"));
        for table in ["documents", "by_price", "by_customer", "by_register"] {
            assert_eq!(
                entries(&rmw, table),
                entries(&blind, table),
                "{kind} {table}"
            );
        }
    }
    assert!(out.contains("spinney-lsm rmw"), "{out}");
}

#[test]
fn lsm_buffers_reports_every_configuration_and_keeps_what_it_wrote() {
    // Goal: lsm-buffers runs the six SQLite4 configurations and the B-tree
    // row, with rates that parse and order (min <= p10 <= mean <= max),
    // buffers 8 times apart, every read a hit, and each kept database
    // holding every key inserted. Method: run at a tiny scale under a --db
    // directory, then open each database it kept.
    let dir = tempfile::tempdir().expect("tempdir");
    let (summary, out) = run(
        Scenario::LsmBuffers,
        &tiny(dir.path(), "chart.svg", "rows.csv"),
    );
    assert_eq!(summary.scenario, "lsm-buffers");
    check_files(dir.path(), &summary);
    let names: Vec<&str> = (0..summary.rows.len())
        .map(|r| summary.cell(r, "config").expect("config"))
        .collect();
    assert_eq!(
        names,
        [
            "single-small",
            "multi-small",
            "single-large",
            "multi-large",
            "single-large-pause",
            "multi-large-pause",
            "btree"
        ]
    );
    for (r, name) in names.iter().enumerate() {
        for op in ["insert", "read"] {
            let at = |s: &str| number(&summary, r, &format!("{op}_{s}"));
            let (min, p10, mean, max) = (at("min"), at("p10"), at("mean"), at("max"));
            assert!(min > 0.0, "row {r} {op}");
            assert!(min <= p10 && p10 <= mean && mean <= max, "row {r} {op}");
            assert!((min..=max).contains(&at("last")), "row {r} {op}");
        }
        let threads = number(&summary, r, "threads");
        let single = name.starts_with("single");
        assert_eq!(threads == 0.0, single, "row {r}");
        let paused = name.ends_with("pause");
        assert_eq!(number(&summary, r, "pause_ms") > 0.0, paused, "row {r}");
    }
    assert_eq!(summary.cell(6, "kind"), Some("btree"));
    let small = number(&summary, 0, "buffer_kib");
    let large = number(&summary, 2, "buffer_kib");
    assert!(small >= 64.0);
    assert_eq!(large, small * 8.0);
    assert!(
        summary
            .notes
            .iter()
            .any(|n| n.starts_with("Every one of the") && n.ends_with("reads found its key.")),
        "{:?}",
        summary.notes
    );

    // "lsm-buffers: I iterations of K inserts + K reads per configuration"
    let words: Vec<&str> = out
        .lines()
        .next()
        .expect("a first line")
        .split_whitespace()
        .collect();
    let iterations: u64 = words[1].parse().expect("iterations");
    let keys: u64 = words[4].parse().expect("keys");
    assert!(iterations >= 2 && keys >= 100, "{out}");
    for name in names {
        let db = dir.path().join("db/lsm-buffers").join(name);
        let all = entries(&db, "default");
        // Keys are random in a space of 10^16: a repeat is a one in a
        // billion event, and the seed is fixed.
        assert_eq!(all.len() as u64, iterations * keys, "{name}");
        assert!(all.iter().all(|(k, v)| k.len() == 16 && v.len() == 100));
    }
}

#[test]
fn scenarios_refuse_what_they_cannot_do_without_touching_files() {
    // Goal: --use_existing_db is a usage error for these scenarios, and a
    // --db whose run directory holds something other than a spinney
    // database is refused and left as it was.
    let dir = tempfile::tempdir().expect("tempdir");
    for scenario in [Scenario::Iibench, Scenario::LsmBuffers] {
        let config = Config {
            use_existing_db: true,
            ..tiny(dir.path(), "chart.svg", "rows.csv")
        };
        let err = scenario::run(scenario, &config, &mut Vec::new()).expect_err("refused");
        assert!(matches!(err, BenchError::Config(_)), "{err}");
        assert_eq!(err.exit_code(), 2);
    }
    for (scenario, sub) in [
        (Scenario::Iibench, "db/iibench/spinney-lsm-small"),
        (Scenario::LsmBuffers, "db/lsm-buffers/single-small"),
    ] {
        let foreign = dir.path().join(sub);
        std::fs::create_dir_all(&foreign).expect("mkdir");
        std::fs::write(foreign.join("notes.txt"), b"mine").expect("write");
        let err = scenario::run(
            scenario,
            &tiny(dir.path(), "chart.svg", "rows.csv"),
            &mut Vec::new(),
        )
        .expect_err("refused");
        assert!(matches!(err, BenchError::Config(_)), "{err}");
        assert_eq!(
            std::fs::read(foreign.join("notes.txt")).expect("still there"),
            b"mine"
        );
    }
}
