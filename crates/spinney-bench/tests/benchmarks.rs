//! Every benchmark at a tiny scale on both table kinds, through the library
//! and through the binary: what each leaves in the table, what it finds,
//! what it prints, and how bad flags fail.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use spinney::{Db, Options, TableKind};
use spinney_bench::{
    parse_percentiles, parse_result_line, run_benchmarks, BenchError, BenchResult, Benchmark,
    Config, Engine, KeyFormat, TABLE,
};

const NUM: u64 = 2000;
const KINDS: [TableKind; 2] = [TableKind::Lsm, TableKind::Btree];

/// A tiny configuration on `db`: small write buffers so that the LSM
/// flushes and compacts, no progress bar.
fn tiny(kind: TableKind, db: &Path, benchmarks: &[Benchmark]) -> Config {
    Config {
        benchmarks: benchmarks.to_vec(),
        num: NUM,
        engine: Engine::spinney(kind),
        write_buffer_size: 64 << 10,
        db: Some(db.to_path_buf()),
        progress: false,
        // Go on at once after writes, as db_bench does (the comparison
        // tests check the settle).
        settle: false,
        ..Config::default()
    }
}

fn run(config: &Config) -> (Vec<BenchResult>, String) {
    let mut out = Vec::new();
    let results = run_benchmarks(config, &mut out).expect("run");
    (results, String::from_utf8(out).expect("utf-8 output"))
}

/// Every entry of the benchmark table in `db`: (key, value length).
fn entries(db: &Path) -> Vec<(Vec<u8>, usize)> {
    let db = Db::open(db, Options::default()).expect("open");
    let table = db.table(TABLE).expect("table");
    let all = table
        .iter()
        .expect("iter")
        .map(|e| e.map(|(k, v)| (k, v.len())))
        .collect::<spinney::Result<Vec<_>>>()
        .expect("read");
    drop(table);
    db.close().expect("close");
    all
}

fn result(results: &[BenchResult], b: Benchmark) -> &BenchResult {
    results
        .iter()
        .find(|r| r.benchmark == b)
        .unwrap_or_else(|| panic!("no result for {b}"))
}

#[test]
fn sequential_fills_leave_every_key_readable() {
    // Goal: fillseq, fillseqbatch and fillbatch each write keys 0..num with
    // values of value_size into a fresh table, on both kinds. Method: run
    // each alone, then read the table back with the engine.
    let keys = KeyFormat::new(16);
    let expected: Vec<(Vec<u8>, usize)> = (0..NUM).map(|k| (keys.key(k), 100)).collect();
    for kind in KINDS {
        for b in [
            Benchmark::FillSeq,
            Benchmark::FillSeqBatch,
            Benchmark::FillBatch,
        ] {
            let dir = tempfile::tempdir().expect("tempdir");
            let db = dir.path().join("db");
            let (results, _) = run(&tiny(kind, &db, &[b]));
            assert_eq!(results.len(), 1);
            assert_eq!(results[0].ops, NUM, "{kind:?} {b}");
            assert_eq!(results[0].bytes, NUM * 116, "{kind:?} {b}");
            assert_eq!(entries(&db), expected, "{kind:?} {b}");
        }
    }
}

#[test]
fn random_fill_and_overwrite_write_num_entries_at_random_keys() {
    // Goal: fillrandom and overwrite make num writes at keys drawn from
    // [0, num): about 1 - 1/e of the keys end up present, each with a
    // full value; overwrite leaves at least as many as before.
    for kind in KINDS {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("db");
        let (results, _) = run(&tiny(kind, &db, &[Benchmark::FillRandom]));
        assert_eq!(results[0].ops, NUM);
        let after_fill = entries(&db);
        let n = after_fill.len() as u64;
        assert!(
            n > NUM / 2 && n < NUM * 3 / 4,
            "{kind:?}: {n} distinct keys"
        );
        assert!(after_fill
            .iter()
            .all(|(k, len)| k.len() == 16 && *len == 100));

        let config = Config {
            use_existing_db: true,
            seed: 99,
            ..tiny(kind, &db, &[Benchmark::Overwrite])
        };
        let (results, _) = run(&config);
        assert_eq!(results[0].ops, NUM);
        assert!(entries(&db).len() >= after_fill.len());
    }
}

#[test]
fn reads_find_what_fillseq_wrote_and_nothing_else() {
    // Goal: after fillseq, readrandom finds every key, readmissing none,
    // seekrandom lands on its key every time, readseq and readreverse see
    // num entries, and readwhilewriting's readers find every key while a
    // writer overwrites; read benchmarks report their read context.
    for kind in KINDS {
        let dir = tempfile::tempdir().expect("tempdir");
        let config = Config {
            seek_nexts: 5,
            threads: 2,
            ..tiny(
                kind,
                &dir.path().join("db"),
                &[
                    Benchmark::FillSeq,
                    Benchmark::ReadRandom,
                    Benchmark::ReadMissing,
                    Benchmark::SeekRandom,
                    Benchmark::ReadSeq,
                    Benchmark::ReadReverse,
                    Benchmark::ReadWhileWriting,
                ],
            )
        };
        let (results, _) = run(&config);
        let reads = 2 * NUM;
        for b in [
            Benchmark::ReadRandom,
            Benchmark::SeekRandom,
            Benchmark::ReadWhileWriting,
        ] {
            let r = result(&results, b);
            let found = r.found.expect("found");
            assert_eq!((found.found, found.total), (reads, reads), "{kind:?} {b}");
            assert_eq!(r.ops, reads, "{kind:?} {b}");
            assert_eq!(r.threads, 2);
        }
        let missing = result(&results, Benchmark::ReadMissing);
        assert_eq!(missing.found.map(|f| (f.found, f.total)), Some((0, reads)));
        for b in [Benchmark::ReadSeq, Benchmark::ReadReverse] {
            let r = result(&results, b);
            assert_eq!(r.ops, reads, "{kind:?} {b}: each thread reads the table");
            assert_eq!(r.bytes, reads * 116, "{kind:?} {b}");
        }
        let seek = result(&results, Benchmark::SeekRandom);
        // Five steps of full entries, fewer for seeks near the end.
        assert!(seek.bytes <= reads * 5 * 116 && seek.bytes > reads * 4 * 116);
        let rr = result(&results, Benchmark::ReadRandom);
        let rc = rr.read_context.expect("read context");
        assert!(rc.trees_searched >= 1.0, "{kind:?}: {rc:?}");
        assert!(rc.keys_compared > 0.0, "{kind:?}: {rc:?}");
        assert!(result(&results, Benchmark::ReadWhileWriting)
            .writer
            .is_some());
        assert!(result(&results, Benchmark::FillSeq).read_context.is_none());
    }
}

#[test]
fn deleterandom_removes_keys() {
    // Goal: deleterandom deletes num random keys: afterwards about 1/e of
    // the keys remain, and readrandom finds only those.
    for kind in KINDS {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("db");
        let config = tiny(
            kind,
            &db,
            &[
                Benchmark::FillSeq,
                Benchmark::DeleteRandom,
                Benchmark::ReadRandom,
            ],
        );
        let (results, _) = run(&config);
        assert_eq!(result(&results, Benchmark::DeleteRandom).ops, NUM);
        let left = entries(&db).len() as u64;
        assert!(left > NUM / 5 && left < NUM / 2, "{kind:?}: {left} left");
        let found = result(&results, Benchmark::ReadRandom)
            .found
            .expect("found");
        assert!(found.found < found.total * 6 / 10, "{kind:?}: {found:?}");
        assert!(found.found > 0);
    }
}

#[test]
fn operations_and_printouts_run_on_both_kinds() {
    // Goal: flush, the compactions, waitforcompaction and checkpoint run
    // as one timed operation each and keep every key; stats and shape
    // print the engine's figures; a full compaction leaves the LSM one
    // sorted run in one level.
    let ops = [
        Benchmark::Flush,
        Benchmark::Compact0,
        Benchmark::Compact1,
        Benchmark::Compact,
        Benchmark::CompactAll,
        Benchmark::WaitForCompaction,
        Benchmark::Checkpoint,
    ];
    for kind in KINDS {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("db");
        let mut list = vec![Benchmark::FillRandom];
        list.extend(ops);
        list.extend([Benchmark::Stats, Benchmark::Shape]);
        let (results, out) = run(&tiny(kind, &db, &list));
        assert_eq!(results.len(), 1 + ops.len(), "stats and shape only print");
        for b in ops {
            let r = result(&results, b);
            assert_eq!(r.ops, 1, "{kind:?} {b}");
            assert!(r.intervals.is_empty(), "operations have no time series");
            assert!(r.db_size_bytes > 0);
            assert!(parse_result_line(
                out.lines().find(|l| l.starts_with(b.name())).expect("line")
            )
            .is_some());
        }
        assert!(out.contains("commits "), "stats printed:\n{out}");
        match kind {
            TableKind::Lsm => {
                assert!(out.contains("memtable "), "{out}");
                let last = result(&results, Benchmark::FillRandom)
                    .intervals
                    .last()
                    .expect("an interval")
                    .shape;
                assert!(last.memtable_entries > 0 || last.sst_files > 0);
            }
            TableKind::Btree => assert!(out.contains("B-tree     height"), "{out}"),
        }
        let n = entries(&db).len() as u64;
        assert!(n > NUM / 2, "{kind:?}: {n}");
    }
    // The LSM's shape after compactall: everything in one run.
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    run(&tiny(
        TableKind::Lsm,
        &db,
        &[Benchmark::FillSeq, Benchmark::CompactAll],
    ));
    let opened = Db::open(&db, Options::default()).expect("open");
    let shape = opened.table(TABLE).expect("table").shape().expect("shape");
    assert_eq!(shape.l0_runs, 0);
    assert_eq!(shape.levels.iter().filter(|l| l.files > 0).count(), 1);
}

#[test]
fn printed_lines_parse_as_db_bench_output() {
    // Goal: scripts written for db_bench read our output: the result line
    // gives micros/op, ops/sec, MB/s and "found", and with --histogram=1
    // the percentiles line follows "Microseconds per read:".
    let dir = tempfile::tempdir().expect("tempdir");
    let config = Config {
        histogram: true,
        ..tiny(
            TableKind::Lsm,
            &dir.path().join("db"),
            &[Benchmark::FillSeq, Benchmark::ReadRandom],
        )
    };
    let (results, out) = run(&config);
    let parsed: Vec<_> = out.lines().filter_map(parse_result_line).collect();
    assert_eq!(parsed.len(), 2, "{out}");
    for (p, r) in parsed.iter().zip(&results) {
        assert_eq!(p.name, r.benchmark.name());
        assert!(p.micros_per_op > 0.0);
        assert!(p.ops_per_sec > 0);
        assert_eq!(p.ops_per_sec, r.ops_per_sec as u64);
        assert!(p.mb_per_sec.is_some_and(|mb| mb > 0.0));
    }
    assert_eq!(parsed[1].found, Some((NUM, NUM)));
    let lines: Vec<&str> = out.lines().collect();
    let at = lines
        .iter()
        .position(|l| *l == "Microseconds per read:")
        .expect("histogram title");
    assert!(lines[at + 1].starts_with(&format!("Count: {NUM} Average: ")));
    let p = parse_percentiles(lines[at + 3]).expect("percentiles line");
    assert!(p[0] > 0.0 && p[0] <= p[2] && p[2] <= p[4], "{p:?}");
    let l = &results[1].latency;
    assert!(l.p50_micros <= l.p99_micros && l.p99_micros <= l.max_micros);
    assert_eq!(results[1].histogram.len(), NUM);
}

#[test]
fn time_series_covers_every_operation() {
    // Goal: a timed benchmark cuts one interval per report interval, and
    // the intervals add up to the benchmark's operations.
    let dir = tempfile::tempdir().expect("tempdir");
    let config = Config {
        duration: Some(Duration::from_millis(300)),
        report_interval: Duration::from_millis(100),
        ..tiny(
            TableKind::Lsm,
            &dir.path().join("db"),
            &[Benchmark::FillSeq, Benchmark::ReadRandom],
        )
    };
    let (results, _) = run(&config);
    let r = &results[1];
    assert!(r.intervals.len() >= 2, "{:?}", r.intervals);
    assert_eq!(r.intervals.iter().map(|i| i.ops).sum::<u64>(), r.ops);
    assert!(r
        .intervals
        .windows(2)
        .all(|w| w[0].elapsed_seconds < w[1].elapsed_seconds));
}

#[test]
fn existing_database_is_kept_and_fresh_fills_are_skipped() {
    // Goal: --use_existing_db=1 keeps the data, skips the fills that want a
    // fresh database (saying so, as db_bench does), and refuses a table of
    // the other kind.
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    run(&tiny(TableKind::Btree, &db, &[Benchmark::FillSeq]));
    let config = Config {
        use_existing_db: true,
        ..tiny(
            TableKind::Btree,
            &db,
            &[Benchmark::FillRandom, Benchmark::ReadRandom],
        )
    };
    let (results, out) = run(&config);
    assert!(out.contains("fillrandom   : skipped (--use_existing_db is true)"));
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].found.map(|f| f.found), Some(NUM));
    let wrong = Config {
        engine: Engine::SpinneyLsm,
        ..config
    };
    let err = run_benchmarks(&wrong, &mut Vec::new()).expect_err("wrong kind");
    assert!(matches!(err, BenchError::Config(_)), "{err}");
    assert!(err.to_string().contains("--engine=spinney-btree"), "{err}");
}

#[test]
fn a_directory_that_is_not_a_database_is_left_alone() {
    // Goal: --db pointing at a directory of other files is refused, not
    // wiped.
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("precious.txt"), "keep me").expect("write");
    let config = tiny(TableKind::Lsm, dir.path(), &[Benchmark::FillSeq]);
    let err = run_benchmarks(&config, &mut Vec::new()).expect_err("refused");
    assert_eq!(err.exit_code(), 2);
    assert!(dir.path().join("precious.txt").exists());
}

fn bench_binary(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_spinney-bench"))
        .args(args)
        .output()
        .expect("run spinney-bench")
}

#[test]
fn binary_rejects_bad_flags_with_exit_code_2() {
    // Goal: an unknown flag, a bad number, a bad enum and an unknown
    // benchmark each exit 2 with a message, never a panic; the unknown
    // benchmark's message lists the valid names.
    for (args, needle) in [
        (&["--frobnicate=1"][..], "frobnicate"),
        (&["--num=12x"][..], "12x"),
        (&["--compaction_style=sideways"][..], "sideways"),
        (&["--use_lsm=1", "--table_kind=btree"][..], "disagree"),
    ] {
        let out = bench_binary(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    let out = bench_binary(&["--benchmarks=fillseq,nosuchbench", "--num=10"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("unknown benchmark 'nosuchbench'"), "{err}");
    for name in Benchmark::ALL {
        assert!(err.contains(name.name()), "{name} missing from: {err}");
    }
}

#[test]
fn binary_writes_a_csv_report() {
    // Goal: --report=FILE.csv gets a header and a row per interval of each
    // benchmark, and the run prints db_bench lines to stdout.
    let dir = tempfile::tempdir().expect("tempdir");
    let csv = dir.path().join("x.csv");
    let db = dir.path().join("db");
    let out = bench_binary(&[
        "--num=500",
        "--benchmarks=fillseq,readrandom",
        "--report",
        csv.to_str().expect("utf-8 path"),
        "--db",
        db.to_str().expect("utf-8 path"),
        "--use_lsm=0",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stdout.lines().filter_map(parse_result_line).count(),
        2,
        "{stdout}"
    );
    let text = std::fs::read_to_string(&csv).expect("report");
    let mut lines = text.lines();
    let header = lines.next().expect("header");
    assert!(
        header.starts_with("run_seconds,benchmark,table_kind,"),
        "{header}"
    );
    let columns = header.split(',').count();
    let rows: Vec<&str> = lines.collect();
    assert!(rows.len() >= 2, "{text}");
    assert!(
        rows.iter().all(|r| r.split(',').count() == columns),
        "{text}"
    );
    assert!(rows.iter().any(|r| r.contains(",fillseq,btree,")), "{text}");
    assert!(
        rows.iter().any(|r| r.contains(",readrandom,btree,")),
        "{text}"
    );
}
