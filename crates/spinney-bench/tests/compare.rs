//! `--compare`: engines side by side, each in a child process of its own.
//! With the `peers` feature (the test script turns it on) every engine the
//! lab knows runs; without, spinney's two kinds do.

use std::path::Path;

use spinney_bench::{
    run_compare, Benchmark, CompareRow, Config, Engine, EngineComparison, RoundFigures,
};

const NUM: u64 = 6000;

fn exe() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_spinney-bench"))
}

/// A tiny comparison of `engines`: write buffers small enough that the
/// LSMs flush (WiredTiger's LSM takes no smaller chunk than 512 KiB).
fn tiny(engines: &[Engine], benchmarks: &[Benchmark], rounds: usize) -> Config {
    Config {
        benchmarks: benchmarks.to_vec(),
        num: NUM,
        write_buffer_size: 512 << 10,
        seek_nexts: 5,
        compare: engines.to_vec(),
        rounds,
        progress: false,
        // A settle lasts at least a second per write benchmark and engine;
        // the test of the rounds' order settles, the others go on at once.
        settle: false,
        ..Config::default()
    }
}

fn run(config: &Config) -> (EngineComparison, String) {
    let mut out = Vec::new();
    let c = run_compare(config, exe(), &mut out).expect("comparison");
    (c, String::from_utf8(out).expect("utf-8"))
}

fn only_round(row: &CompareRow) -> &RoundFigures {
    assert_eq!(row.rounds.len(), 1, "{row:?}");
    &row.rounds[0]
}

#[test]
fn every_engine_writes_and_reads_back_its_keys() {
    // Goal: each built engine, in its own process, fills the table, finds
    // every key a sequential fill wrote, sees about 86% of the key space
    // after a random fill and an overwrite (db_bench's figure), scans
    // exactly the entries there are, and its row says so; operations it
    // lacks are "not supported", never a figure.
    let engines: Vec<Engine> = Engine::ALL.into_iter().filter(|e| e.is_built()).collect();
    let config = tiny(
        &engines,
        &[
            Benchmark::FillSeq,
            Benchmark::ReadRandom,
            Benchmark::ReadSeq,
            Benchmark::FillRandom,
            Benchmark::Overwrite,
            Benchmark::ReadRandom,
            Benchmark::SeekRandom,
            Benchmark::ReadReverse,
            Benchmark::Compact0,
        ],
        1,
    );
    let (c, out) = run(&config);
    assert!(c.failures.is_empty(), "{:?}\n{out}", c.failures);
    assert!(out.contains("\nreadrandom #2\n"), "{out}");
    for &engine in &engines {
        let row = |b| c.row(b, engine).unwrap_or_else(|| panic!("{engine} {b}"));
        let fill = only_round(row(Benchmark::FillSeq));
        assert_eq!(fill.ops, NUM, "{engine}");
        assert!(fill.ops_per_sec > 0.0 && fill.user_bytes_written == NUM * 116);
        // readrandom runs twice: the row holds the last, after overwrite.
        let read = only_round(row(Benchmark::ReadRandom));
        let share = read.found as f64 / read.attempted as f64;
        assert_eq!(read.attempted, NUM, "{engine}");
        assert!((0.80..0.92).contains(&share), "{engine}: {share}");
        let seek = only_round(row(Benchmark::SeekRandom));
        let share = seek.found as f64 / seek.attempted as f64;
        assert!((0.80..0.92).contains(&share), "{engine}: {share}");
        assert!(seek.ops_per_sec > 0.0);
        // Every key readrandom found is one entry a reverse scan counts.
        let reverse = only_round(row(Benchmark::ReadReverse));
        assert!(
            reverse.ops > NUM * 8 / 10 && reverse.ops < NUM * 92 / 100,
            "{engine}: {}",
            reverse.ops
        );
        let compact0 = only_round(row(Benchmark::Compact0));
        if engine.is_spinney() {
            assert!(compact0.supported, "{engine}");
        } else if !compact0.supported {
            assert_eq!(
                compact0.ops, 0,
                "{engine}: an unsupported operation has no figures"
            );
        }
        assert!(
            out.lines()
                .any(|l| l.trim_start().starts_with(engine.name()) && l.contains('x')),
            "{engine} has no row with a ratio:\n{out}"
        );
        assert!(
            out.contains(&format!("=== round 1 of 1: {engine} ")),
            "{out}"
        );
    }
    // The readseq after fillseq saw every key.
    for &engine in &engines {
        let scan = c.row(Benchmark::ReadSeq, engine).expect("row");
        assert_eq!(only_round(scan).ops, NUM, "{engine}");
    }
}

#[test]
fn rounds_alternate_and_share_a_seed_per_round() {
    // Goal: with two rounds each engine runs twice, in the order forward
    // then backward, with one seed per round that both engines use, and
    // the table, CSV and chart come out.
    let dir = tempfile::tempdir().expect("tempdir");
    let config = Config {
        report: Some(dir.path().join("c.csv")),
        plot: Some(dir.path().join("c.svg")),
        settle: true,
        ..tiny(
            &[Engine::SpinneyLsm, Engine::SpinneyBtree],
            &[Benchmark::FillRandom, Benchmark::ReadRandom],
            2,
        )
    };
    let (c, out) = run(&config);
    assert_eq!(c.seeds.len(), 2);
    // The fill settled in every round, and the table says how long it took
    // and how large the database was then; a read does not settle.
    for engine in [Engine::SpinneyLsm, Engine::SpinneyBtree] {
        for f in &c.row(Benchmark::FillRandom, engine).expect("row").rounds {
            assert!(f.settled && f.settled_size_bytes > 0, "{engine}: {f:?}");
        }
        for f in &c.row(Benchmark::ReadRandom, engine).expect("row").rounds {
            assert!(!f.settled, "{engine}: {f:?}");
        }
    }
    assert!(
        out.contains("settle s") && out.contains("settled MB"),
        "{out}"
    );
    assert_ne!(c.seeds[0], c.seeds[1]);
    let order: Vec<&str> = out
        .lines()
        .filter_map(|l| l.strip_prefix("=== round "))
        .collect();
    assert_eq!(order.len(), 4, "{out}");
    assert!(order[0].starts_with("1 of 2: spinney-lsm"), "{order:?}");
    assert!(order[1].starts_with("1 of 2: spinney-btree"), "{order:?}");
    assert!(order[2].starts_with("2 of 2: spinney-btree"), "{order:?}");
    assert!(order[3].starts_with("2 of 2: spinney-lsm"), "{order:?}");
    for row in &c.rows {
        assert_eq!(row.rounds.len(), 2, "{row:?}");
    }
    // Both engines of a round read the keys the same seed made: the same
    // share found.
    let found = |e| c.row(Benchmark::ReadRandom, e).expect("row").rounds[0].found;
    assert_eq!(found(Engine::SpinneyLsm), found(Engine::SpinneyBtree));
    // The better kind's ratio is 1, the other's at most 1.
    let ratios: Vec<f64> = [Engine::SpinneyLsm, Engine::SpinneyBtree]
        .iter()
        .map(|&e| c.ratio(Benchmark::FillRandom, e).expect("ratio"))
        .collect();
    assert!(ratios.iter().any(|&r| (r - 1.0).abs() < 1e-9), "{ratios:?}");
    assert!(
        ratios.iter().all(|&r| r > 0.0 && r <= 1.0 + 1e-9),
        "{ratios:?}"
    );
    let csv = std::fs::read_to_string(dir.path().join("c.csv")).expect("csv");
    let mut lines = csv.lines();
    let header = lines.next().expect("header");
    assert!(
        header.starts_with("benchmark,engine,kind,rounds,ops_per_sec,"),
        "{header}"
    );
    assert_eq!(lines.count(), 4, "{csv}");
    let svg = std::fs::read_to_string(dir.path().join("c.svg")).expect("svg");
    assert!(svg.contains("spinney-btree") && svg.contains("fillrandom"));
}

#[test]
fn a_failing_engine_is_reported_and_the_others_go_on() {
    // Goal: a child that fails (here it cannot write its figures: a
    // directory stands where its results file goes) is a failure in the
    // table and in the outcome, and the other engine's figures are there.
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("round-1-spinney-btree.results")).expect("mkdir");
    let config = Config {
        db: Some(dir.path().to_path_buf()),
        ..tiny(
            &[Engine::SpinneyLsm, Engine::SpinneyBtree],
            &[Benchmark::FillSeq],
            1,
        )
    };
    let (c, out) = run(&config);
    assert_eq!(c.failures.len(), 1, "{:?}", c.failures);
    assert_eq!(c.failures[0].engine, Engine::SpinneyBtree);
    assert_eq!(c.failures[0].round, 1);
    let lsm = c.row(Benchmark::FillSeq, Engine::SpinneyLsm).expect("row");
    assert_eq!(only_round(lsm).ops, NUM);
    assert!(c
        .row(Benchmark::FillSeq, Engine::SpinneyBtree)
        .expect("row")
        .rounds
        .is_empty());
    assert!(out.contains("spinney-btree        failed"), "{out}");
    assert!(out.contains("failed: spinney-btree in round 1"), "{out}");
    // With --db the databases stay for a look afterwards.
    assert!(dir.path().join("round-1/spinney-lsm/CURRENT").exists());
}

#[test]
fn btree_vs_lsm_runs_each_engine_in_a_child_and_compares_them_all() {
    // Goal: the scenario with --compare runs each engine in its own
    // process and gathers them into one summary: a row per engine, reader
    // count and writer limit, and the per-configuration notes naming the
    // best of each kind. WiredTiger's own B-tree and LSM (the seed's
    // engines) join spinney's when they are built.
    let mut engines = vec![Engine::SpinneyLsm, Engine::SpinneyBtree];
    engines.extend(
        [Engine::WiredtigerLsm, Engine::WiredtigerBtree]
            .into_iter()
            .filter(|e| e.is_built()),
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let config = Config {
        scale: 0.005,
        compare: engines.clone(),
        db: Some(dir.path().join("db")),
        report: Some(dir.path().join("s.csv")),
        progress: false,
        ..Config::default()
    };
    let mut out = Vec::new();
    let summary = spinney_bench::scenario::run_in_children(
        spinney_bench::scenario::Scenario::BtreeVsLsm,
        &config,
        exe(),
        &mut out,
    )
    .expect("scenario");
    let out = String::from_utf8(out).expect("utf-8");
    assert_eq!(summary.rows.len(), engines.len() * 6, "{out}");
    for engine in &engines {
        let rows = (0..summary.rows.len())
            .filter(|&r| summary.cell(r, "engine") == Some(engine.name()))
            .count();
        assert_eq!(rows, 6, "{engine}");
        assert!(
            out.contains(&format!(
                "=== btree-vs-lsm: {engine}, in a process of its own ==="
            )),
            "{out}"
        );
        assert!(dir.path().join("db").join(engine.name()).is_dir());
    }
    for r in 0..summary.rows.len() {
        let reads: f64 = summary
            .cell(r, "reads/s")
            .expect("cell")
            .parse()
            .expect("number");
        assert!(reads > 0.0, "{:?}", summary.rows[r]);
    }
    let comparisons = summary
        .notes
        .iter()
        .filter(|n| n.contains(": reads ") && n.contains("; writes "))
        .count();
    assert_eq!(comparisons, 6, "{:#?}", summary.notes);
    let csv = std::fs::read_to_string(dir.path().join("s.csv")).expect("csv");
    assert_eq!(csv.lines().count(), engines.len() * 6 + 1);
}

#[test]
fn iibench_runs_each_engine_in_a_child_and_compares_them_all() {
    // Goal: iibench with --compare runs each engine in its own process at
    // the three caches, ten intervals each, with WiredTiger's B-tree and
    // LSM (the post's engines) beside spinney's when built; every row has
    // a rate, and engines that tell their tables apart report index sizes.
    let mut engines = vec![Engine::SpinneyLsm, Engine::SpinneyBtree];
    engines.extend(
        [Engine::WiredtigerLsm, Engine::WiredtigerBtree]
            .into_iter()
            .filter(|e| e.is_built()),
    );
    let config = Config {
        scale: 0.005,
        compare: engines.clone(),
        progress: false,
        iibench_writes: vec![
            spinney_bench::IndexWrites::Blind,
            spinney_bench::IndexWrites::Rmw,
        ],
        ..Config::default()
    };
    let mut out = Vec::new();
    let summary = spinney_bench::scenario::run_in_children(
        spinney_bench::scenario::Scenario::Iibench,
        &config,
        exe(),
        &mut out,
    )
    .expect("scenario");
    let out = String::from_utf8(out).expect("utf-8");
    // Each engine both ways: blind writes and read-modify-write.
    assert_eq!(summary.rows.len(), engines.len() * 60, "{out}");
    for engine in &engines {
        let rows: Vec<usize> = (0..summary.rows.len())
            .filter(|&r| summary.cell(r, "engine") == Some(engine.name()))
            .collect();
        assert_eq!(rows.len(), 60, "{engine}");
        assert!(
            summary
                .notes
                .iter()
                .any(|n| n.starts_with(&format!("{engine}: read-modify-write"))),
            "{:#?}",
            summary.notes
        );
        for &r in &rows {
            let rate: f64 = summary
                .cell(r, "docs_per_sec")
                .expect("cell")
                .parse()
                .expect("number");
            assert!(rate > 0.0, "{engine} row {r}");
        }
        let last = rows[rows.len() - 1];
        let index: f64 = summary
            .cell(last, "index_mib")
            .expect("cell")
            .parse()
            .expect("a size");
        if *engine != Engine::SpinneyLsm && *engine != Engine::WiredtigerLsm {
            // LSM indexes may still sit in memory at this scale.
            assert!(index > 0.0, "{engine}");
        }
        assert!(
            summary
                .notes
                .iter()
                .any(|n| n.starts_with(&format!("Final docs/s ({engine})"))),
            "{:#?}",
            summary.notes
        );
    }
}

#[test]
fn lsm_shape_runs_spinney_and_rocksdb_in_children_and_compares_them() {
    // Goal: lsm-shape with --compare builds the same five shapes on
    // spinney's LSM and on RocksDB (seed 001's engine, when built), each in
    // its own process: a row per engine, shape and query kind, the range
    // query searching every tree (nine at pre_flush: the memtable, six L0
    // runs, L1 and L2; two at compact_all) on both, bloom filters consulted
    // only by the point query that has them, and each engine's own checks
    // (the two tables keep one shape, the queries change none, every key
    // is found) passing.
    let mut engines = vec![Engine::SpinneyLsm];
    engines.extend([Engine::Rocksdb].into_iter().filter(|e| e.is_built()));
    let config = Config {
        scale: 0.02,
        compare: engines.clone(),
        progress: false,
        ..Config::default()
    };
    let mut out = Vec::new();
    let summary = spinney_bench::scenario::run_in_children(
        spinney_bench::scenario::Scenario::LsmShape,
        &config,
        exe(),
        &mut out,
    )
    .expect("scenario");
    let out = String::from_utf8(out).expect("utf-8");
    assert_eq!(summary.rows.len(), engines.len() * 15, "{out}");
    let cell = |engine: Engine, shape: &str, query: &str, column: &str| -> f64 {
        let r = (0..summary.rows.len())
            .find(|&r| {
                summary.cell(r, "engine") == Some(engine.name())
                    && summary.cell(r, "shape") == Some(shape)
                    && summary.cell(r, "query") == Some(query)
            })
            .unwrap_or_else(|| panic!("no row {engine} {shape} {query}: {out}"));
        summary
            .cell(r, column)
            .expect("cell")
            .parse()
            .unwrap_or_else(|_| panic!("{engine} {shape} {query} {column}: not a number"))
    };
    for &engine in &engines {
        assert_eq!(cell(engine, "pre_flush", "range", "trees searched"), 9.0);
        assert_eq!(cell(engine, "post_flush", "range", "trees searched"), 10.0);
        assert_eq!(cell(engine, "compact_all", "range", "trees searched"), 2.0);
        for shape in ["pre_flush", "compact_l0", "compact_all"] {
            assert!(cell(engine, shape, "range", "qps") > 0.0);
            assert!(cell(engine, shape, "point with bloom", "bloom checks") > 0.0);
            assert_eq!(
                cell(engine, shape, "point without bloom", "bloom checks"),
                0.0
            );
        }
        // A point query at pre_flush may search more trees than after
        // compaction, never fewer.
        assert!(
            cell(engine, "pre_flush", "point without bloom", "trees searched")
                > cell(
                    engine,
                    "compact_all",
                    "point without bloom",
                    "trees searched"
                )
        );
        assert!(
            summary.notes.iter().any(|n| n.starts_with(&format!(
                "Checks: on {engine} the two tables had the same shape at every stage"
            ))),
            "{:#?}",
            summary.notes
        );
    }
    assert!(
        !summary.notes.iter().any(|n| n.contains("FAILED")),
        "{:#?}",
        summary.notes
    );
}

#[test]
fn a_child_past_its_timeout_is_killed_and_reported() {
    // Goal: --child_timeout keeps an engine that does not finish from
    // holding up the comparison: the child is killed, its rows are empty,
    // and the failure says why. Method: a timeout far shorter than a fill.
    let config = Config {
        child_timeout: Some(std::time::Duration::from_millis(300)),
        num: 50_000_000,
        ..tiny(&[Engine::SpinneyLsm], &[Benchmark::FillRandom], 1)
    };
    let started = std::time::Instant::now();
    let (c, out) = run(&config);
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
    assert_eq!(c.failures.len(), 1, "{out}");
    assert!(
        c.failures[0].reason.contains("--child_timeout"),
        "{:?}",
        c.failures
    );
    assert!(c
        .row(Benchmark::FillRandom, Engine::SpinneyLsm)
        .expect("row")
        .rounds
        .is_empty());
}

#[test]
fn direct_io_runs_on_the_engines_that_have_it_and_is_not_supported_elsewhere() {
    // Goal: with the direct I/O flags, spinney, RocksDB and WiredTiger
    // (where built) write and read their keys around the OS's page cache,
    // and every other engine reports each benchmark not supported, never a
    // figure measured through that cache: spinney's rows that read through
    // maps too.
    let probe = tempfile::tempdir().expect("tempdir");
    let direct = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .custom_flags(libc::O_DIRECT)
            .open(probe.path().join("probe"))
    };
    if let Err(e) = direct {
        eprintln!("skipped: the temporary directory's file system refuses O_DIRECT: {e}");
        return;
    }
    let engines: Vec<Engine> = Engine::ALL.into_iter().filter(|e| e.is_built()).collect();
    let config = Config {
        direct_reads: true,
        direct_writes: true,
        ..tiny(&engines, &[Benchmark::FillRandom, Benchmark::ReadRandom], 1)
    };
    let (c, out) = run(&config);
    assert!(c.failures.is_empty(), "{:?}\n{out}", c.failures);
    for &engine in &engines {
        let read = only_round(c.row(Benchmark::ReadRandom, engine).expect("row"));
        // The list as the engines' documentation gives it, not
        // `Engine::direct_io`, which this checks.
        let has_direct_io = (engine.is_spinney()
            && !matches!(engine, Engine::SpinneyLsmMmap | Engine::SpinneyBtreeMmap))
            || matches!(
                engine,
                Engine::Rocksdb
                    | Engine::RocksdbCurrent
                    | Engine::WiredtigerBtree
                    | Engine::WiredtigerLsm
            );
        if has_direct_io {
            assert!(read.supported, "{engine}");
            assert_eq!(read.attempted, NUM, "{engine}");
            assert!(read.found > NUM / 2, "{engine}: {}", read.found);
        } else {
            assert!(!read.supported, "{engine} ran without direct I/O");
            assert_eq!((read.ops, read.found), (0, 0), "{engine}");
        }
    }
}
