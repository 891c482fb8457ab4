//! The work model and backpressure: who does flushes and compactions, and
//! what writers do while that work is behind.
//!
//! - With no background thread and no autowork, writers past a threshold do
//!   the work they wait for themselves, and never wait for work nobody does.
//! - `Db::work(budget)` runs pending jobs in the caller's thread and says
//!   what it did; `wait_for_compaction` then has nothing left to do.
//! - With background threads, tables written at once are compacted at once.
//! - Options that cannot work are refused at open and create.

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use spinney::{
    Backpressure, CompactionOptions, CompactionStyle, Db, Error, Options, Table, TableOptions,
    WriteBatch,
};

mod common;
use common::model::{key16 as key, value100 as value};

/// Small write buffers and a small base level, so that a few MiB of writes
/// make many flushes and compactions.
fn small_table(style: CompactionStyle) -> TableOptions {
    let base = match style {
        CompactionStyle::Leveled => CompactionOptions::leveled(),
        CompactionStyle::Tiered => CompactionOptions::tiered(),
    };
    TableOptions {
        write_buffer_size: 64 << 10,
        compaction: CompactionOptions {
            level_base_bytes: 256 << 10,
            target_file_size: 64 << 10,
            ..base
        },
        ..TableOptions::default()
    }
}

/// Writes keys `0..count` at `version` in batches of 100.
fn write_keys(db: &Db, table: &Table, count: u64, version: u64) -> spinney::Result<()> {
    let mut batch = WriteBatch::new();
    for i in 0..count {
        batch.put(table, &key(i), &value(i, version));
        if batch.len() >= 100 {
            db.write(std::mem::take(&mut batch))?;
        }
    }
    db.write(batch)
}

/// Checks that `table` holds exactly keys `0..count` at `version`.
fn check_keys(table: &Table, count: u64, version: u64) {
    let got: BTreeMap<Vec<u8>, Vec<u8>> = table
        .iter()
        .expect("iter")
        .collect::<spinney::Result<_>>()
        .expect("scan");
    let want: BTreeMap<Vec<u8>, Vec<u8>> =
        (0..count).map(|i| (key(i), value(i, version))).collect();
    assert_eq!(got.len(), want.len(), "{}: entry count", table.name());
    assert!(got == want, "{}: contents differ", table.name());
}

/// Runs `f` on its own thread and fails the test if it does not return
/// within `seconds` (a hung writer would otherwise hang the whole run).
fn within<T: Send + 'static>(
    seconds: u64,
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs(seconds)) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what}: did not finish in {seconds} s"),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("{what}: panicked"),
    }
}

fn backpressure_run(style: CompactionStyle) {
    // Goal: with no background thread and no autowork, tiny backpressure
    // thresholds make writers stop and slow down, yet a writer never waits
    // for work that no one will do, and no write is lost.
    // Method: one memtable may wait for flush, 2 L0 runs slow writers down
    // and 3 stop them — below the table's default L0 trigger of 4, so the
    // stop at 3 runs has no compaction behind it until a 4th run exists.
    // 3 MiB of writes through 64 KiB write buffers freeze about 50
    // memtables. The writer runs on a thread that must finish within 60 s;
    // then the stall counters must be non-zero and the data complete.
    // Regression: the writer used to wait forever at 3 runs, with no job
    // to run itself and none running (make_room in db/write.rs).
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_path_buf();
    let (stats, db, table) = within(60, "writer under backpressure", move || {
        let db = Db::open(
            &path,
            Options {
                background_threads: 0,
                autowork: false,
                backpressure: Backpressure {
                    max_immutable_memtables: 1,
                    l0_slowdown_runs: 2,
                    l0_stop_runs: 3,
                    ..Backpressure::default()
                },
                ..Options::default()
            },
        )
        .expect("open");
        let table = db
            .create_table(
                "t",
                TableOptions {
                    write_buffer_size: 64 << 10,
                    compaction: CompactionOptions {
                        style,
                        ..CompactionOptions::leveled()
                    },
                    ..TableOptions::default()
                },
            )
            .expect("create");
        for version in 0..3 {
            write_keys(&db, &table, 9_000, version).expect("write");
        }
        (db.stats(), db, table)
    });
    let ctx = format!("{style:?}");
    assert!(stats.stops > 0, "{ctx}: no stop counted: {stats:?}");
    assert!(stats.stop_micros > 0, "{ctx}: stops took no time");
    assert!(stats.slowdowns > 0, "{ctx}: no slowdown counted: {stats:?}");
    assert!(
        stats.slowdown_micros >= 1000 * stats.slowdowns,
        "{ctx}: a slowdown is at least 1 ms, but {} took {} us",
        stats.slowdowns,
        stats.slowdown_micros
    );
    assert!(stats.flushes > 0, "{ctx}: the writer flushed nothing");
    assert!(stats.compactions > 0, "{ctx}: the writer compacted nothing");
    check_keys(&table, 9_000, 2);
    db.verify().expect("verify");
}

/// A leveled table behind tiny backpressure thresholds (see `backpressure_run`).
#[test]
fn leveled_writer_under_tiny_backpressure_thresholds_never_hangs() {
    backpressure_run(CompactionStyle::Leveled);
}

/// A tiered table behind tiny backpressure thresholds (see `backpressure_run`).
#[test]
fn tiered_writer_under_tiny_backpressure_thresholds_never_hangs() {
    backpressure_run(CompactionStyle::Tiered);
}

#[test]
fn work_runs_pending_jobs_and_then_there_is_nothing_left() {
    // Goal: `Db::work` runs the pending flushes and compactions in the
    // caller's thread and reports them; a budget of one byte runs exactly
    // one job; afterwards `wait_for_compaction` finds nothing to do and
    // `work` reports no job.
    // Method: no background thread, no autowork; five flushes leave L0 runs
    // past the trigger of 4, and 150 KB of writes through a 64 KiB buffer
    // leave frozen memtables waiting. The counters show what each call did.
    for style in [CompactionStyle::Leveled, CompactionStyle::Tiered] {
        let ctx = format!("{style:?}");
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Db::open(
            dir.path(),
            Options {
                background_threads: 0,
                autowork: false,
                ..Options::default()
            },
        )
        .expect("open");
        let table = db.create_table("t", small_table(style)).expect("create");
        // Five flushed runs of distinct keys: L0 passes the trigger of 4.
        for run in 0..5u64 {
            let mut batch = WriteBatch::new();
            for i in 0..200 {
                batch.put(&table, &key(run * 1_000_000 + i), &value(i, run));
            }
            db.write(batch).expect("write");
            table.flush().expect("flush");
        }
        // Then about two and a half write buffers (an entry takes about 150
        // bytes of memtable): frozen memtables wait, fewer than the 4 that
        // would make the writer flush one itself.
        write_keys(&db, &table, 1_000, 0).expect("write");
        let shape = table.shape().expect("shape");
        assert!(shape.immutable_memtables >= 1, "{ctx}: {shape:?}");
        assert_eq!(shape.l0_runs, 5, "{ctx}");
        let before = db.stats();
        assert_eq!(before.compactions, 0, "{ctx}: work ran behind the test");

        let one = db.work(1).expect("work(1)");
        assert_eq!(one.jobs, 1, "{ctx}: a 1-byte budget runs one job: {one:?}");
        assert!(one.bytes_written > 0, "{ctx}: {one:?}");
        let rest = db.work(u64::MAX).expect("work");
        assert!(rest.jobs > 0, "{ctx}: {rest:?}");
        assert!(rest.bytes_written > 0, "{ctx}: {rest:?}");
        let after = db.stats();
        assert_eq!(
            (after.flushes + after.compactions) - (before.flushes + before.compactions),
            one.jobs + rest.jobs,
            "{ctx}: jobs reported and jobs counted differ"
        );
        assert_eq!(
            (after.flush_bytes + after.compaction_bytes_written)
                - (before.flush_bytes + before.compaction_bytes_written),
            one.bytes_written + rest.bytes_written,
            "{ctx}: bytes reported and bytes counted differ"
        );
        assert!(after.compactions > 0, "{ctx}: work ran no compaction");
        let shape = table.shape().expect("shape");
        assert_eq!(shape.immutable_memtables, 0, "{ctx}: {shape:?}");

        // Nothing is left: waiting does no work, and work finds none.
        db.wait_for_compaction().expect("wait");
        let waited = db.stats();
        assert_eq!(
            (waited.flushes, waited.compactions),
            (after.flushes, after.compactions),
            "{ctx}: wait_for_compaction found work that work() left"
        );
        let none = db.work(u64::MAX).expect("work");
        assert_eq!(none, spinney::WorkDone::default(), "{ctx}");
        check_keys_from(&table, 1_000, &ctx);
        db.verify().expect("verify");
    }
}

/// Checks keys `0..count` at version 0, and the five runs' keys.
fn check_keys_from(table: &Table, count: u64, ctx: &str) {
    for i in (0..count).step_by(97) {
        assert_eq!(
            table.get(&key(i)).expect("get"),
            Some(value(i, 0)),
            "{ctx}: key {i}"
        );
    }
    for run in 0..5u64 {
        for i in (0..200).step_by(13) {
            assert_eq!(
                table.get(&key(run * 1_000_000 + i)).expect("get"),
                Some(value(i, run)),
                "{ctx}: run {run} key {i}"
            );
        }
    }
}

#[test]
fn two_tables_written_at_once_are_both_compacted_by_background_threads() {
    // Goal: with two background threads, two tables (one leveled, one
    // tiered) written by two threads at once are both flushed and
    // compacted, the figures say so per table, and everything verifies.
    // Method: each thread writes 9,000 keys three times over (about 3 MiB)
    // through 64 KiB buffers; `wait_for_compaction` then lets the work end.
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Arc::new(
        Db::open(
            dir.path(),
            Options {
                background_threads: 2,
                ..Options::default()
            },
        )
        .expect("open"),
    );
    let tables = [
        db.create_table("leveled", small_table(CompactionStyle::Leveled))
            .expect("create"),
        db.create_table("tiered", small_table(CompactionStyle::Tiered))
            .expect("create"),
    ];
    let writers: Vec<_> = tables
        .iter()
        .map(|t| {
            let (db, t) = (Arc::clone(&db), t.clone());
            std::thread::spawn(move || {
                for version in 0..3 {
                    write_keys(&db, &t, 9_000, version).expect("write");
                }
            })
        })
        .collect();
    for w in writers {
        w.join().expect("writer thread");
    }
    db.wait_for_compaction().expect("wait");
    let stats = db.stats();
    for t in &tables {
        let ts = stats
            .tables
            .iter()
            .find(|s| s.name == t.name())
            .expect("table in stats");
        assert!(ts.flushes > 0, "{}: no flush: {ts:?}", t.name());
        assert!(ts.compactions > 0, "{}: no compaction: {ts:?}", t.name());
        check_keys(t, 9_000, 2);
    }
    db.verify().expect("verify");
}

#[test]
fn options_that_cannot_work_are_refused_at_open_and_create() {
    // Goal: each impossible setting is an InvalidArgument naming it, given
    // before anything is written (a refused open creates no directory).
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("db");
    let refused_open = |options: Options, what: &str| match Db::open(&path, options) {
        Err(Error::InvalidArgument(msg)) => {
            assert!(msg.contains(what), "{what}: message {msg:?}");
            assert!(
                !path.exists(),
                "{what}: a refused open created the directory"
            );
        }
        Err(e) => panic!("{what}: wrong error {e}"),
        Ok(_) => panic!("{what}: opened"),
    };
    refused_open(
        Options {
            background_threads: spinney::limits::BACKGROUND_THREADS_MAX + 1,
            ..Options::default()
        },
        "background_threads",
    );
    for nice in [-1, spinney::limits::BACKGROUND_NICE_MAX + 1] {
        refused_open(
            Options {
                background_nice: nice,
                ..Options::default()
            },
            "background_nice",
        );
    }
    refused_open(
        Options {
            backpressure: Backpressure {
                l0_slowdown_runs: 10,
                l0_stop_runs: 5,
                ..Backpressure::default()
            },
            ..Options::default()
        },
        "l0_slowdown_runs",
    );
    refused_open(
        Options {
            backpressure: Backpressure {
                max_immutable_memtables: 0,
                ..Backpressure::default()
            },
            ..Options::default()
        },
        "max_immutable_memtables",
    );

    let db = Db::open(&path, Options::default()).expect("open");
    let refused_create = |compaction: CompactionOptions, what: &str| {
        let options = TableOptions {
            compaction,
            ..TableOptions::default()
        };
        match db.create_table("t", options) {
            Err(Error::InvalidArgument(msg)) => {
                assert!(msg.contains(what), "{what}: message {msg:?}")
            }
            Err(e) => panic!("{what}: wrong error {e}"),
            Ok(_) => panic!("{what}: created"),
        }
        assert!(db.tables().is_empty(), "{what}: a refused table exists");
    };
    refused_create(
        CompactionOptions {
            fanout: 1,
            ..CompactionOptions::leveled()
        },
        "fanout",
    );
    refused_create(
        CompactionOptions {
            min_merge_width: 1,
            ..CompactionOptions::tiered()
        },
        "merge widths",
    );
    refused_create(
        CompactionOptions {
            l0_trigger: 0,
            ..CompactionOptions::leveled()
        },
        "l0_trigger",
    );
    // The limits themselves are accepted.
    db.create_table(
        "t",
        TableOptions {
            compaction: CompactionOptions {
                fanout: 2,
                min_merge_width: 2,
                max_merge_width: 2,
                ..CompactionOptions::tiered()
            },
            ..TableOptions::default()
        },
    )
    .expect("create at the limits");
    drop(db);
    Db::open(
        &path,
        Options {
            background_threads: spinney::limits::BACKGROUND_THREADS_MAX,
            ..Options::default()
        },
    )
    .expect("open at the thread limit");
}
