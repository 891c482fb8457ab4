//! Crash and I/O-error tests of B-tree tables, on the fault-injecting file
//! system.
//!
//! Goal: a B-tree table is made durable by the shared log plus
//! copy-on-write checkpoints (see `btree/checkpoint.rs`). Whatever mutating file
//! operation the machine dies at, the database reopens to a state the
//! durability level promises, `verify` passes (every page of the durable
//! image used exactly once), and no file is left over. A batch that writes
//! to an LSM table and a B-tree table is all there or not at all, in both.
//!
//! Method: as in `crash.rs` and `compaction_crash.rs`, a deterministic or
//! seeded workload is run once without a fault to count its mutating file
//! operations, then again with a `FaultKind::Crash` (or `Eio`, `NoSpace`)
//! injected at each of those operations, or at spread points of them; after
//! the fault the `Db` is dropped, `FaultFs::crash` rolls the files back to
//! what was synced (alternately keeping a random subset of unsynced page
//! writes, whole or torn in 512-byte sectors), and the reopened state is
//! compared with a `BTreeMap` model.
//!
//! - Every operation of one checkpoint (`build`: height 2, overflow values,
//!   deletes, pages copied after two earlier checkpoints, a free map, dirty
//!   pages evicted): crash with and without tears, EIO, ENOSPC.
//! - Every operation of a recovery that replays into B-tree tables.
//! - Spread crash points of a write load with two background threads and
//!   checkpoints every 64 KiB of log plus explicit ones: Full keeps every
//!   acknowledged batch, Normal and Off recover an exact prefix; the same
//!   for a mixed database (an LSM and a B-tree table in every batch), whose
//!   two tables must recover the same prefix.
//! - Races the load tests found: checkpoints racing a failed checkpoint or
//!   a failed commit, leaf merges during a checkpoint, and a free map that
//!   shrinks as it is allocated (deterministic).
//!
//! Pages are 4 KiB and the cache small, so the trees are at least two
//! levels high, values past about 1 KB go to overflow pages, and dirty
//! pages are written out by eviction between checkpoints.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use spinney::fs::{FaultFs, FaultKind};
use spinney::{Db, Durability, Error, Options, Table, TableOptions, TableStats, WriteBatch};

const DB: &str = "/db";

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// A batch: (table index, key, value or None for a delete).
type Batch = Vec<(usize, Vec<u8>, Option<Vec<u8>>)>;

fn btree_options() -> TableOptions {
    TableOptions {
        page_size: 4 << 10,
        ..TableOptions::btree()
    }
}

/// A small write buffer, so that the LSM table of the mixed database
/// flushes (and compacts) while the load runs.
fn lsm_options() -> TableOptions {
    TableOptions {
        write_buffer_size: 64 << 10,
        ..TableOptions::lsm()
    }
}

/// A value that names its writer (a stale value cannot pass for a newer
/// one); `overflow_percent` of them are too large for a 4 KiB page's cell
/// (1,015 bytes) and go to one or two overflow pages.
fn value(rng: &mut StdRng, overflow_percent: u32) -> Vec<u8> {
    let len = if rng.gen_range(0..100) < overflow_percent {
        rng.gen_range(1_100..7_000)
    } else {
        rng.gen_range(20..200)
    };
    let mut v = vec![rng.gen::<u8>(); len];
    v.extend_from_slice(&rng.gen::<u64>().to_le_bytes());
    v
}

fn key(n: u32) -> Vec<u8> {
    format!("key{n:05}").into_bytes()
}

fn apply(models: &mut [Model], batch: &Batch) {
    for (table, key, value) in batch {
        match value {
            Some(v) => models[*table].insert(key.clone(), v.clone()),
            None => models[*table].remove(key),
        };
    }
}

fn write_batch(tables: &[Table], batch: &Batch) -> WriteBatch {
    let mut b = WriteBatch::new();
    for (table, key, value) in batch {
        match value {
            Some(v) => b.put(&tables[*table], key, v),
            None => b.delete(&tables[*table], key),
        }
    }
    b
}

fn read_table(table: &Table) -> spinney::Result<Model> {
    table.iter()?.collect()
}

fn read_all(db: &Db, names: &[&str], ctx: &str) -> Vec<Model> {
    names
        .iter()
        .map(|name| {
            let table = db
                .table(name)
                .unwrap_or_else(|e| panic!("{ctx}: table {name}: {e}"));
            read_table(&table).unwrap_or_else(|e| panic!("{ctx}: scan of {name}: {e}"))
        })
        .collect()
}

fn table_stats(db: &Db, name: &str) -> TableStats {
    db.stats()
        .tables
        .into_iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no stats of table {name}"))
}

/// Checks that the directory holds exactly the files of a database at
/// rest: the SSTs the LSM tables' shapes count, one file per B-tree table,
/// one manifest, one log segment, CURRENT and LOCK.
fn check_files(ctx: &str, fs: &FaultFs, db: &Db, lsm: &[&str], btrees: usize) {
    let mut shape_files = 0;
    for name in lsm {
        let shape = db
            .table(name)
            .and_then(|t| t.shape())
            .unwrap_or_else(|e| panic!("{ctx}: shape of {name}: {e}"));
        assert_eq!(shape.immutable_memtables, 0, "{ctx}: {name}: {shape:?}");
        shape_files += shape.l0_runs + shape.levels.iter().map(|l| l.files).sum::<usize>();
    }
    let names: Vec<String> = fs
        .files()
        .iter()
        .filter(|p| p.parent() == Some(Path::new(DB)))
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    let count = |f: &dyn Fn(&str) -> bool| names.iter().filter(|n| f(n)).count();
    assert_eq!(
        count(&|n| n.ends_with(".sst")),
        shape_files,
        "{ctx}: SSTs: {names:?}"
    );
    assert_eq!(
        count(&|n| n.ends_with(".btree")),
        btrees,
        "{ctx}: B-tree files: {names:?}"
    );
    assert_eq!(
        count(&|n| n.starts_with("MANIFEST-")),
        1,
        "{ctx}: manifests: {names:?}"
    );
    assert_eq!(
        count(&|n| n.ends_with(".wal")),
        1,
        "{ctx}: log segments: {names:?}"
    );
    let others: Vec<&String> = names
        .iter()
        .filter(|n| {
            !(n.ends_with(".sst")
                || n.ends_with(".btree")
                || n.ends_with(".wal")
                || n.starts_with("MANIFEST-")
                || *n == "CURRENT"
                || *n == "LOCK")
        })
        .collect();
    assert!(others.is_empty(), "{ctx}: unexpected files {others:?}");
}

/// Lets background work end (it may meet the crash first), then drops the
/// database, on another thread; fails the test if either hangs.
fn drop_within_seconds(db: Db, tables: Vec<Table>, ctx: &str) {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = db.wait_for_compaction();
        drop(tables);
        drop(db);
        let _ = tx.send(());
    });
    rx.recv_timeout(Duration::from_secs(20))
        .unwrap_or_else(|_| panic!("{ctx}: waiting for or dropping the Db hung or panicked"));
}

// ---------------------------------------------------------------------------
// A crash or an I/O error at each operation of one checkpoint.

const CKPT_TABLES: [&str; 2] = ["main", "side"];

/// Nothing runs unless the test runs it; every commit is synced. The cache
/// holds about 60 pages of 4 KiB, a quarter of what the trees have, so
/// dirty pages are written out by eviction between checkpoints and a
/// checkpoint still finds dozens in the cache to write. Log segments of
/// 64 KiB, so that checkpoints let closed segments go.
fn quiet_options(fs: &Arc<FaultFs>) -> Options {
    Options {
        durability: Durability::Full,
        background_threads: 0,
        autowork: false,
        cache_size: 256 << 10,
        wal_segment_size: 64 << 10,
        checkpoint_wal_bytes: 1 << 40,
        fs: fs.clone(),
        ..Options::default()
    }
}

/// `count` batches of `ops` entries: 9 in 10 to "main", 1 in 10 to
/// "side"; keys from `0..keys`; `deletes` percent deletes.
fn round(rng: &mut StdRng, count: usize, ops: usize, keys: u32, deletes: u32) -> Vec<Batch> {
    (0..count)
        .map(|_| {
            (0..ops)
                .map(|_| {
                    let table = usize::from(rng.gen_range(0..10) == 0);
                    let k = key(rng.gen_range(0..keys));
                    let v = (rng.gen_range(0..100) >= deletes).then(|| value(rng, 5));
                    (table, k, v)
                })
                .collect()
        })
        .collect()
}

struct Built {
    db: Db,
    tables: Vec<Table>,
    models: Vec<Model>,
}

fn commit(built: &mut Built, batches: &[Batch]) {
    for b in batches {
        built
            .db
            .write(write_batch(&built.tables, b))
            .expect("write before the fault");
        apply(&mut built.models, b);
    }
}

/// Builds the same pre-checkpoint state every time: two B-tree tables
/// written in three rounds with a checkpoint after each of the first two;
/// the later rounds overwrite and delete keys (and overflow values) of
/// pages the earlier checkpoints wrote, so the next checkpoint writes
/// copies and a free map that lists the pages they replaced.
fn build(fs: &Arc<FaultFs>) -> Built {
    let db = Db::open(DB, quiet_options(fs)).expect("open");
    let tables = CKPT_TABLES
        .iter()
        .map(|name| db.create_table(name, btree_options()).expect("create"))
        .collect();
    let mut built = Built {
        db,
        tables,
        models: vec![Model::new(); 2],
    };
    let mut rng = StdRng::seed_from_u64(21);
    let first = round(&mut rng, 50, 25, 1500, 0);
    commit(&mut built, &first);
    built.db.checkpoint().expect("first checkpoint");
    let second = round(&mut rng, 30, 25, 1500, 25);
    commit(&mut built, &second);
    built.db.checkpoint().expect("second checkpoint");
    // Delete a dense run of keys (small leaves merge), then more mixed
    // writes.
    let dense: Batch = (200..500).map(|n| (0, key(n), None)).collect();
    commit(&mut built, &[dense]);
    let third = round(&mut rng, 30, 25, 1500, 30);
    commit(&mut built, &third);
    built
}

/// The figures of the dry run, checked once: the state the crash points
/// start from is as rich as the test claims.
fn check_built(built: &Built, evicted_before: u64) {
    let shape = built.tables[0]
        .shape()
        .expect("shape")
        .btree
        .expect("a B-tree shape");
    assert!(shape.height >= 2, "{shape:?}");
    assert!(shape.overflow_pages > 0, "{shape:?}");
    assert!(shape.free_pages > 0, "{shape:?}");
    let stats = table_stats(&built.db, "main").btree.expect("B-tree stats");
    assert_eq!(stats.checkpoints, 2, "{stats:?}");
    assert!(
        stats.evictions_dirty > evicted_before,
        "no dirty page was evicted since the last checkpoint: {stats:?}"
    );
}

/// Reopens after the fault (threads off: the directory is at rest when
/// checked) and checks the model, `verify`, the files, that the recovered
/// database takes writes and checkpoints, and a second reopen.
fn check_recovery(ctx: &str, fs: &Arc<FaultFs>, models: &[Model]) {
    let db = Db::open(DB, quiet_options(fs)).unwrap_or_else(|e| panic!("{ctx}: reopen: {e}"));
    let state = read_all(&db, &CKPT_TABLES, ctx);
    for (i, name) in CKPT_TABLES.iter().enumerate() {
        assert!(
            state[i] == models[i],
            "{ctx}: table {name} recovered {} entries, the model has {}",
            state[i].len(),
            models[i].len()
        );
    }
    db.verify()
        .unwrap_or_else(|e| panic!("{ctx}: verify after recovery: {e}"));
    check_files(ctx, fs, &db, &[], 2);

    // The recovered image takes writes and another checkpoint.
    let main = db.table("main").expect("main");
    let mut models = models.to_vec();
    let mut rng = StdRng::seed_from_u64(99);
    for b in round(&mut rng, 10, 20, 1500, 20) {
        let b: Batch = b.into_iter().map(|(_, k, v)| (0, k, v)).collect();
        db.write(write_batch(std::slice::from_ref(&main), &b))
            .unwrap_or_else(|e| panic!("{ctx}: write after recovery: {e}"));
        apply(&mut models, &b);
    }
    db.checkpoint()
        .unwrap_or_else(|e| panic!("{ctx}: checkpoint after recovery: {e}"));
    db.verify()
        .unwrap_or_else(|e| panic!("{ctx}: verify after a checkpoint after recovery: {e}"));
    drop(main);
    db.close().unwrap_or_else(|e| panic!("{ctx}: close: {e}"));
    let db =
        Db::open(DB, quiet_options(fs)).unwrap_or_else(|e| panic!("{ctx}: second reopen: {e}"));
    assert!(
        read_all(&db, &CKPT_TABLES, ctx) == models,
        "{ctx}: second reopen differs"
    );
    db.verify()
        .unwrap_or_else(|e| panic!("{ctx}: verify after the second reopen: {e}"));
}

/// Counts the mutating file operations of the checkpoint of `build`'s
/// state, and checks the state and a fault-free recovery.
fn checkpoint_span() -> u64 {
    let fs = FaultFs::new();
    let evicted_before = {
        // The dirty evictions up to the second checkpoint, from a build cut
        // short there: the same operations as the full build's prefix.
        let probe = FaultFs::new();
        let db = Db::open(DB, quiet_options(&probe)).expect("open");
        let tables: Vec<Table> = CKPT_TABLES
            .iter()
            .map(|name| db.create_table(name, btree_options()).expect("create"))
            .collect();
        let mut rng = StdRng::seed_from_u64(21);
        for b in round(&mut rng, 50, 25, 1500, 0) {
            db.write(write_batch(&tables, &b)).expect("write");
        }
        db.checkpoint().expect("checkpoint");
        for b in round(&mut rng, 30, 25, 1500, 25) {
            db.write(write_batch(&tables, &b)).expect("write");
        }
        db.checkpoint().expect("checkpoint");
        let n = table_stats(&db, "main")
            .btree
            .expect("B-tree stats")
            .evictions_dirty;
        drop(tables);
        db.close().expect("close");
        n
    };
    let built = build(&fs);
    check_built(&built, evicted_before);
    let before = table_stats(&built.db, "main").btree.expect("stats");
    let start = fs.mutating_ops();
    built.db.checkpoint().expect("dry run");
    let span = fs.mutating_ops() - start;
    let after = table_stats(&built.db, "main").btree.expect("stats");
    assert!(
        after.checkpoint_pages > before.checkpoint_pages + 1,
        "the checkpoint wrote no cached dirty page: {after:?}"
    );
    let Built { db, tables, models } = built;
    drop(tables);
    db.close().expect("close after the dry run");
    check_recovery("checkpoint, no fault", &fs, &models);
    span
}

#[test]
fn crash_at_every_operation_of_a_checkpoint_keeps_every_acknowledged_batch() {
    // Goal: a checkpoint that dies at any of its file operations (a frozen
    // page, the free map, the file sync, the header slot, the second sync,
    // the removal of log segments it made obsolete), with the unsynced page
    // writes lost, or kept whole, torn or not at random, leaves every
    // acknowledged Full commit recoverable: from the previous image plus
    // the log, or from the new image.
    // Method: the deterministic state of `build` (height 2, overflow
    // values, copy-on-write of pages earlier checkpoints wrote, a free
    // map, dirty pages evicted), then `Db::checkpoint` with a crash at each
    // of its operations in turn, once without and once with a tear seed.
    let span = checkpoint_span();
    assert!(
        span >= 10,
        "a checkpoint of two tables took only {span} ops"
    );
    for k in 0..span {
        for tear in [None, Some(k * 7 + 1)] {
            let ctx = format!("checkpoint: crash at op {k} of {span}, tear {tear:?}");
            let fs = FaultFs::new();
            let built = build(&fs);
            fs.inject(k, FaultKind::Crash);
            // A crash in the removal of an old log segment, after the
            // header is durable, fails no call.
            let _ = built.db.checkpoint();
            assert!(fs.is_crashed(), "{ctx}: the crash missed the checkpoint");
            let Built { db, tables, models } = built;
            drop_within_seconds(db, tables, &ctx);
            fs.crash(tear);
            check_recovery(&ctx, &fs, &models);
        }
    }
}

/// An I/O error of `kind` (not a crash) at each operation of a checkpoint;
/// see the tests below.
fn io_error_in_a_checkpoint(kind: FaultKind) {
    let span = checkpoint_span();
    let mut failed = 0;
    for k in 0..span {
        for crash in [false, true] {
            let ctx = format!("checkpoint: {kind:?} at op {k} of {span}, crash {crash}");
            let fs = FaultFs::new();
            let built = build(&fs);
            fs.inject(k, kind);
            match built.db.checkpoint() {
                Err(Error::Io { .. }) => {
                    failed += 1;
                    let again = built.tables[0].put(b"after", b"fault");
                    match &again {
                        Err(Error::ReadOnly { reason }) if reason.contains("checkpoint") => {}
                        _ => panic!("{ctx}: a write after the fault returned {again:?}"),
                    }
                    let again = built.db.write(write_batch(
                        &built.tables,
                        &vec![(1, b"after".to_vec(), None)],
                    ));
                    assert!(
                        matches!(again, Err(Error::ReadOnly { .. })),
                        "{ctx}: a batch after the fault returned {again:?}"
                    );
                    let again = built.db.checkpoint();
                    assert!(
                        matches!(again, Err(Error::ReadOnly { .. })),
                        "{ctx}: a checkpoint after the fault returned {again:?}"
                    );
                }
                // The EIO hit the removal of an obsolete log segment, which
                // the checkpoint ignores (the next open removes it).
                Ok(()) => {}
                Err(e) => panic!("{ctx}: the checkpoint returned {e}"),
            }
            // Reads still answer with the acknowledged state.
            for (i, table) in built.tables.iter().enumerate() {
                let seen = read_table(table).unwrap_or_else(|e| panic!("{ctx}: scan: {e}"));
                assert!(seen == built.models[i], "{ctx}: scan of table {i} differs");
                for (key, value) in built.models[i].iter().step_by(97) {
                    assert_eq!(
                        table
                            .get(key)
                            .unwrap_or_else(|e| panic!("{ctx}: get: {e}"))
                            .as_ref(),
                        Some(value),
                        "{ctx}"
                    );
                }
            }
            let Built { db, tables, models } = built;
            drop_within_seconds(db, tables, &ctx);
            if crash {
                fs.crash(Some(k));
            }
            check_recovery(&ctx, &fs, &models);
        }
    }
    assert!(
        failed as u64 >= span,
        "only {failed} faults of {span} failed the checkpoint"
    );
}

#[test]
fn eio_in_a_checkpoint_makes_the_database_read_only_and_loses_nothing_acknowledged() {
    // Goal: an I/O error (not a crash) at any operation of a checkpoint
    // fails it, makes the database refuse writes and checkpoints with
    // `Error::ReadOnly` naming the failed checkpoint, keeps reads working
    // (cached and uncached pages, overflow values), and a reopen, with or
    // without a crash first, has every acknowledged batch.
    io_error_in_a_checkpoint(FaultKind::Eio);
}

#[test]
fn enospc_in_a_checkpoint_makes_the_database_read_only_and_loses_nothing_acknowledged() {
    // As for EIO: a full disk while a checkpoint extends the file.
    io_error_in_a_checkpoint(FaultKind::NoSpace);
}

#[test]
fn crash_at_every_operation_of_recovery_recovers_the_same_state() {
    // Goal: recovery replays the log into the B-tree tables (allocating
    // pages from the durable image's free list, evicting dirty ones), then
    // checkpoints them, writes a new manifest and log segment, and removes
    // the old ones. A crash at any of those operations must leave files
    // that the next open recovers to the same state.
    // Method: the state of `build` (its third round only in the log),
    // crashed; then the reopen crashed at each of its operations in turn,
    // alternately with a tear seed; then a real reopen against the model.
    let prepare = |fs: &Arc<FaultFs>| -> Vec<Model> {
        let Built { db, tables, models } = build(fs);
        fs.inject(0, FaultKind::Crash);
        drop_within_seconds(db, tables, "prepare");
        fs.crash(None);
        models
    };
    let span = {
        let fs = FaultFs::new();
        prepare(&fs);
        let start = fs.mutating_ops();
        let db = Db::open(DB, quiet_options(&fs)).expect("reopen");
        let span = fs.mutating_ops() - start;
        drop(db);
        span
    };
    assert!(span >= 20, "recovery took only {span} operations");
    for k in 0..span {
        let tear = (k % 2 == 0).then_some(k);
        let ctx = format!("recovery: crash at op {k} of {span}, tear {tear:?}");
        let fs = FaultFs::new();
        let models = prepare(&fs);
        fs.inject(k, FaultKind::Crash);
        // The removal of old files at the end fails no call.
        if let Ok(db) = Db::open(DB, quiet_options(&fs)) {
            drop(db);
        }
        assert!(fs.is_crashed(), "{ctx}: the crash missed the recovery");
        fs.crash(tear);
        check_recovery(&ctx, &fs, &models);
    }
}

// ---------------------------------------------------------------------------
// Crashes under a write load, with background and explicit checkpoints.

#[derive(Debug, Clone)]
enum Step {
    Batch(Batch),
    /// `Db::checkpoint`.
    Checkpoint,
}

/// A seeded load over `tables` tables (each batch writes to every one of
/// them), about one explicit checkpoint in 100 steps (about 300 KiB of log
/// apart, so that most checkpoints are the background ones).
fn load(seed: u64, steps: usize, tables: usize) -> Vec<Step> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..steps)
        .map(|_| {
            if rng.gen_range(0..100) == 0 {
                return Step::Checkpoint;
            }
            let n = rng.gen_range(tables..30);
            Step::Batch(
                (0..n)
                    .map(|i| {
                        let table = if i < tables {
                            i
                        } else {
                            rng.gen_range(0..tables)
                        };
                        let k = key(rng.gen_range(0..3000));
                        let v = (!rng.gen_bool(0.15)).then(|| value(&mut rng, 3));
                        (table, k, v)
                    })
                    .collect(),
            )
        })
        .collect()
}

fn batches(plan: &[Step]) -> Vec<Batch> {
    plan.iter()
        .filter_map(|s| match s {
            Step::Batch(b) => Some(b.clone()),
            Step::Checkpoint => None,
        })
        .collect()
}

/// What a run of the load got done before the fault.
#[derive(Debug, Default)]
struct Outcome {
    /// Batches whose commit was tried.
    attempted: usize,
    /// Batches whose commit returned Ok.
    acknowledged: usize,
    /// Batches acknowledged before the last `Db::checkpoint` that returned
    /// Ok: its log sync made them durable, whatever the durability.
    checkpointed: usize,
    /// Explicit checkpoints that returned Ok.
    checkpoints: usize,
    error: Option<String>,
}

fn run_plan(db: &Db, tables: &[Table], plan: &[Step]) -> Outcome {
    let mut out = Outcome::default();
    for step in plan {
        let result = match step {
            Step::Batch(b) => {
                // Paced, as an application's commits are, so that the
                // background work gets the commit lock to freeze a tree.
                std::thread::sleep(Duration::from_micros(50));
                out.attempted += 1;
                db.write(write_batch(tables, b))
                    .map(|()| out.acknowledged += 1)
            }
            Step::Checkpoint => db.checkpoint().map(|()| {
                out.checkpointed = out.acknowledged;
                out.checkpoints += 1;
            }),
        };
        if let Err(e) = result {
            out.error = Some(e.to_string());
            break;
        }
    }
    out
}

/// Runs `plan` until the first error. With `driver`, a second thread calls
/// `Db::work` every half millisecond meanwhile, so that due checkpoints
/// run while the writer commits even where the background threads are
/// not woken for them (see `background_threads_checkpoint_a_btree_only_database`).
fn run(db: &Db, tables: &[Table], plan: &[Step], driver: bool) -> Outcome {
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        if driver {
            s.spawn(|| {
                while !stop.load(Ordering::Acquire) {
                    if db.work(1 << 20).is_err() {
                        break;
                    }
                    std::thread::yield_now();
                }
            });
        }
        let out = run_plan(db, tables, plan);
        stop.store(true, Ordering::Release);
        out
    })
}

/// Two background threads, so that checkpoints run (every 64 KiB of log)
/// while the writer commits; a cache of about 30 pages. (In a database of
/// B-tree tables only, nothing wakes the threads for a due checkpoint: see
/// `background_threads_checkpoint_a_btree_only_database`. Those loads run
/// `Db::work` from a second thread instead, `LoadCase::driver`.)
fn busy_options(fs: &Arc<FaultFs>, durability: Durability) -> Options {
    Options {
        durability,
        background_threads: 2,
        cache_size: 128 << 10,
        wal_segment_size: 64 << 10,
        checkpoint_wal_bytes: 64 << 10,
        fs: fs.clone(),
        ..Options::default()
    }
}

/// The reopen after a crash: no background thread, so the directory is at
/// rest when its files are counted.
fn at_rest_options(fs: &Arc<FaultFs>) -> Options {
    Options {
        background_threads: 0,
        autowork: false,
        ..busy_options(fs, Durability::Full)
    }
}

/// The tables of a load case: (name, options).
fn load_tables(mixed: bool) -> Vec<(&'static str, TableOptions)> {
    if mixed {
        vec![("lsm", lsm_options()), ("bt", btree_options())]
    } else {
        vec![("bt", btree_options())]
    }
}

fn open_busy(fs: &Arc<FaultFs>, durability: Durability, mixed: bool) -> (Db, Vec<Table>) {
    let db = Db::open(DB, busy_options(fs, durability)).expect("open");
    let tables = load_tables(mixed)
        .into_iter()
        .map(|(name, options)| db.create_table(name, options).expect("create"))
        .collect();
    (db, tables)
}

/// The prefix lengths `n` in `lo..=hi` whose model equals `state`.
fn matching_prefixes(batches: &[Batch], state: &[Model], lo: usize, hi: usize) -> Vec<usize> {
    let mut model = vec![Model::new(); state.len()];
    let mut found = Vec::new();
    for n in 0..=hi.min(batches.len()) {
        if n >= lo && model == state {
            found.push(n);
        }
        if let Some(b) = batches.get(n) {
            apply(&mut model, b);
        }
    }
    found
}

struct LoadCase {
    seed: u64,
    durability: Durability,
    mixed: bool,
    /// Run `Db::work` from a second thread during the load.
    driver: bool,
    steps: usize,
    points: u64,
}

/// Crashes the load of `case` at spread points; returns how many.
fn crash_under_load(case: &LoadCase) -> u64 {
    let plan = load(case.seed, case.steps, if case.mixed { 2 } else { 1 });
    let batches = batches(&plan);
    let names: Vec<&str> = load_tables(case.mixed).iter().map(|t| t.0).collect();
    let lsm: Vec<&str> = if case.mixed { vec!["lsm"] } else { vec![] };
    let what = format!(
        "seed {} {:?}{}",
        case.seed,
        case.durability,
        if case.mixed { " mixed" } else { "" }
    );

    // A dry run: the load's operations, and that checkpoints ran in the
    // background besides the explicit ones.
    let span = {
        let fs = FaultFs::new();
        let (db, tables) = open_busy(&fs, case.durability, case.mixed);
        let start = fs.mutating_ops();
        let out = run(&db, &tables, &plan, case.driver);
        assert!(out.error.is_none(), "{what}: dry run: {out:?}");
        let span = fs.mutating_ops() - start;
        let stats = table_stats(&db, "bt").btree.expect("B-tree stats");
        assert!(
            stats.checkpoints > out.checkpoints as u64 + 3,
            "{what}: {} explicit checkpoints, {} in all: too few in the background",
            out.checkpoints,
            stats.checkpoints
        );
        assert!(stats.evictions_dirty > 0, "{what}: {stats:?}");
        let shape = tables[names.len() - 1]
            .shape()
            .expect("shape")
            .btree
            .expect("B-tree shape");
        assert!(shape.height >= 2, "{what}: {shape:?}");
        if case.mixed {
            assert!(table_stats(&db, "lsm").flushes > 0, "{what}: no LSM flush");
        }
        let mut model = vec![Model::new(); names.len()];
        for b in &batches {
            apply(&mut model, b);
        }
        assert!(
            read_all(&db, &names, &what) == model,
            "{what}: dry run state"
        );
        db.verify().expect("verify after the dry run");
        drop_within_seconds(db, tables, &what);
        span
    };

    let mut rng = StdRng::seed_from_u64(case.seed ^ 0x5eed);
    let mut died = 0;
    for point in 0..case.points {
        let k = span * point / case.points + rng.gen_range(0..span / case.points);
        let tear = (point % 4 != 3).then(|| rng.gen());
        let ctx = format!("{what}: crash at op {k} of about {span}, tear {tear:?}");
        let fs = FaultFs::new();
        let (db, tables) = open_busy(&fs, case.durability, case.mixed);
        fs.inject(k, FaultKind::Crash);
        let out = run(&db, &tables, &plan, case.driver);
        drop_within_seconds(db, tables, &ctx);
        died += u64::from(fs.is_crashed());
        fs.crash(tear);

        let db =
            Db::open(DB, at_rest_options(&fs)).unwrap_or_else(|e| panic!("{ctx}: reopen: {e}"));
        let state = read_all(&db, &names, &ctx);
        let (lo, hi) = match case.durability {
            Durability::Full => (out.acknowledged, out.attempted),
            Durability::Normal | Durability::Off => (out.checkpointed, out.attempted),
        };
        let found = matching_prefixes(&batches, &state, lo, hi);
        if found.is_empty() {
            let any = matching_prefixes(&batches, &state, 0, batches.len());
            // Each table on its own, to tell a lost batch from a torn one.
            let each: Vec<Vec<usize>> = (0..names.len())
                .map(|t| {
                    let only: Vec<Batch> = batches
                        .iter()
                        .map(|b| b.iter().filter(|e| e.0 == t).cloned().collect())
                        .collect();
                    let mut st = vec![Model::new(); names.len()];
                    st[t] = state[t].clone();
                    matching_prefixes(&only, &st, 0, batches.len())
                })
                .collect();
            panic!(
                "{ctx}: recovered state is no allowed prefix ({lo}..={hi}); it matches \
                 prefixes {any:?} of all, per table {each:?}; outcome {out:?}"
            );
        }
        db.verify()
            .unwrap_or_else(|e| panic!("{ctx}: verify after recovery: {e}"));
        check_files(&ctx, &fs, &db, &lsm, 1);
        db.close().unwrap_or_else(|e| panic!("{ctx}: close: {e}"));
        let db = Db::open(DB, at_rest_options(&fs))
            .unwrap_or_else(|e| panic!("{ctx}: second reopen: {e}"));
        assert!(
            read_all(&db, &names, &ctx) == state,
            "{ctx}: second reopen differs"
        );
    }
    // The span varies with thread timing, so a late point may miss.
    assert!(
        died * 4 >= case.points * 3,
        "{what}: only {died} of {} runs met their crash",
        case.points
    );
    case.points
}

#[test]
fn crashes_under_a_load_with_background_checkpoints_keep_every_acknowledged_full_batch() {
    // Goal: crashes anywhere in a write load whose B-tree table is
    // checkpointed in the background (two threads, every 64 KiB of log)
    // and explicitly, with pages evicted dirty between checkpoints, lose no
    // acknowledged Full commit; the batch in flight may or may not be there.
    let points = crash_under_load(&LoadCase {
        seed: 31,
        durability: Durability::Full,
        mixed: false,
        driver: false,
        steps: 360,
        points: 60,
    });
    assert!(points >= 60);
}

#[test]
fn crashes_under_a_load_with_background_checkpoints_recover_a_prefix_normal_and_off() {
    // Goal: with Normal and Off commits, the recovered state is exactly the
    // state after some prefix of the batches tried, never a mix, and never
    // shorter than what the last explicit checkpoint made durable.
    let mut points = 0;
    for (seed, durability) in [(32, Durability::Normal), (33, Durability::Off)] {
        points += crash_under_load(&LoadCase {
            seed,
            durability,
            mixed: false,
            driver: false,
            steps: 360,
            points: 40,
        });
    }
    assert!(points >= 80);
}

#[test]
fn a_mixed_database_recovers_the_same_prefix_in_its_lsm_and_btree_tables() {
    // Goal (the done criterion): one LSM table and one B-tree table,
    // every batch writing to both, crashed anywhere in a load with
    // background flushes, compactions and checkpoints: after recovery both
    // tables hold exactly the same prefix of the batches (atomic across
    // tables and table kinds), every acknowledged one with Full, and
    // `verify` passes.
    let mut points = 0;
    for (seed, durability, n) in [
        (41, Durability::Full, 30),
        (42, Durability::Normal, 24),
        (43, Durability::Off, 24),
    ] {
        points += crash_under_load(&LoadCase {
            seed,
            durability,
            mixed: true,
            driver: false,
            steps: 360,
            points: n,
        });
    }
    assert!(points >= 78);
}

#[test]
fn background_threads_checkpoint_a_btree_only_database() {
    // Goal: `Options::checkpoint_wal_bytes` promises a background
    // checkpoint of a B-tree table every so many bytes of log; with two
    // background threads and no LSM table, one must run.
    let fs = FaultFs::new();
    let (db, tables) = open_busy(&fs, Durability::Normal, false);
    // Let the threads start and wait for work: a thread whose first look
    // for work comes after the writes finds the checkpoint due without
    // being woken, which hides the bug.
    std::thread::sleep(Duration::from_millis(100));
    for b in batches(&load(51, 300, 1)) {
        db.write(write_batch(&tables, &b)).expect("write");
    }
    let wal_bytes = db.stats().wal_bytes;
    assert!(wal_bytes > 8 * (64 << 10), "only {wal_bytes} bytes of log");
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    let checkpoints = loop {
        let n = table_stats(&db, "bt").btree.expect("stats").checkpoints;
        if n > 0 || std::time::Instant::now() > deadline {
            break n;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(
        checkpoints > 0,
        "{wal_bytes} bytes of log written with checkpoint_wal_bytes = 64 KiB, and no checkpoint ran"
    );
}

#[test]
fn checkpoints_racing_a_failed_checkpoint_claim_nothing_that_is_not_durable() {
    // Goal: two threads checkpoint at once while a third commits; an EIO
    // fails one checkpoint. A checkpoint that returns Ok has made every
    // batch acknowledged before it began durable (it syncs the log up to
    // its freeze), so after a crash the recovered state is a prefix at
    // least that long, and `verify` passes.
    // Method: Off commits (only checkpoints sync the log), an EIO at
    // spread operations, then a crash with and without tears.
    let plan = batches(&load(61, 500, 1));
    let warm = 100;
    let mut failed_checkpoints = 0;
    for point in 0..80u64 {
        let k = point * 11;
        let tear = (point % 2 == 0).then_some(point);
        let ctx = format!("checkpoint race: EIO at op {k}, tear {tear:?}");
        let fs = FaultFs::new();
        // A cache that holds the whole tree: the operations are mostly the
        // checkpoints' (and the log's), not evictions.
        let opts = Options {
            durability: Durability::Off,
            cache_size: 64 << 20,
            ..quiet_options(&fs)
        };
        let db = Db::open(DB, opts.clone()).expect("open");
        let bt = db.create_table("bt", btree_options()).expect("create");
        let tables = vec![bt];
        for b in &plan[..warm] {
            db.write(write_batch(&tables, b)).expect("write");
        }
        db.checkpoint().expect("checkpoint");
        let acked = AtomicUsize::new(warm);
        let attempted = AtomicUsize::new(warm);
        let lower = AtomicUsize::new(warm);
        let stop = AtomicBool::new(false);
        let errors = Mutex::new(Vec::new());
        fs.inject(k, FaultKind::Eio);
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    while !stop.load(Ordering::Acquire) {
                        let before = acked.load(Ordering::Acquire);
                        match db.checkpoint() {
                            Ok(()) => {
                                lower.fetch_max(before, Ordering::AcqRel);
                            }
                            Err(e) => {
                                errors
                                    .lock()
                                    .expect("lock")
                                    .push(format!("checkpoint: {e}"));
                                break;
                            }
                        }
                    }
                });
            }
            for b in &plan[warm..] {
                if stop.load(Ordering::Acquire) {
                    break;
                }
                attempted.fetch_add(1, Ordering::AcqRel);
                if let Err(e) = db.write(write_batch(&tables, b)) {
                    errors.lock().expect("lock").push(format!("write: {e}"));
                    break;
                }
                acked.fetch_add(1, Ordering::AcqRel);
                if !errors.lock().expect("lock").is_empty() {
                    break;
                }
            }
            stop.store(true, Ordering::Release);
        });
        let errors = errors.into_inner().expect("lock");
        failed_checkpoints += usize::from(errors.iter().any(|e| e.starts_with("checkpoint: I/O")));
        drop_within_seconds(db, tables, &ctx);
        fs.crash(tear);
        let db = Db::open(DB, opts).unwrap_or_else(|e| panic!("{ctx}: reopen: {e}"));
        let state = read_all(&db, &["bt"], &ctx);
        let (lo, hi) = (lower.into_inner(), attempted.into_inner());
        let found = matching_prefixes(&plan, &state, lo, hi);
        if found.is_empty() {
            let any = matching_prefixes(&plan, &state, 0, plan.len());
            panic!("{ctx}: recovered prefixes {any:?}, allowed {lo}..={hi}; errors {errors:?}");
        }
        db.verify()
            .unwrap_or_else(|e| panic!("{ctx}: verify after recovery: {e}; errors {errors:?}"));
    }
    assert!(
        failed_checkpoints >= 4,
        "only {failed_checkpoints} of the EIOs failed a checkpoint"
    );
}

/// A user key of 900 bytes: four to a 4 KiB leaf, so that leaves fill,
/// empty and merge every few writes.
fn wide_key(n: u32) -> Vec<u8> {
    let mut k = format!("{n:06}").into_bytes();
    k.resize(900, b'x');
    k
}

#[test]
fn merges_while_a_checkpoint_runs_keep_its_image_whole() {
    // Goal: a checkpoint writes its frozen pages after it lets writers go
    // on; a writer that merges two leaves meanwhile must not take the
    // frozen right-hand leaf (dirty, not yet written) from under it, or
    // the image names a page that was never written.
    // Method: wide keys (leaves of four), runs of deletes and puts committed
    // without sync while a second thread checkpoints and verifies the
    // durable image (read from the file, not the cache) in a loop; then a
    // last checkpoint, a crash, and the reopened table against the model.
    let fs = FaultFs::new();
    let opts = Options {
        durability: Durability::Off,
        cache_size: 64 << 20,
        ..quiet_options(&fs)
    };
    let db = Db::open(DB, opts.clone()).expect("open");
    let bt = db.create_table("bt", btree_options()).expect("create");
    let keys = 1500;
    let mut model = Model::new();
    for n in 0..keys {
        bt.put(&wide_key(n), b"first").expect("put");
        model.insert(wide_key(n), b"first".to_vec());
    }
    db.checkpoint().expect("checkpoint");
    let stop = AtomicBool::new(false);
    let checkpoints = AtomicUsize::new(0);
    let started = std::time::Instant::now();
    std::thread::scope(|s| {
        let checker = s.spawn(|| {
            let mut result = Ok(());
            while !stop.load(Ordering::Acquire) && result.is_ok() {
                result = db.checkpoint().and_then(|()| db.verify().map(|_| ()));
                checkpoints.fetch_add(1, Ordering::Relaxed);
            }
            stop.store(true, Ordering::Release);
            result
        });
        let mut rng = StdRng::seed_from_u64(71);
        while !stop.load(Ordering::Acquire)
            && started.elapsed() < Duration::from_millis(2500)
            && checkpoints.load(Ordering::Relaxed) < 400
        {
            let start = rng.gen_range(0..keys);
            let end = (start + rng.gen_range(1..40)).min(keys);
            let delete = rng.gen_bool(0.5);
            let value = rng.gen::<u64>().to_le_bytes();
            let mut b = WriteBatch::new();
            for n in start..end {
                if delete {
                    b.delete(&bt, &wide_key(n));
                    model.remove(&wide_key(n));
                } else {
                    b.put(&bt, &wide_key(n), &value);
                    model.insert(wide_key(n), value.to_vec());
                }
            }
            db.write(b).expect("write");
        }
        stop.store(true, Ordering::Release);
        let result = checker.join().expect("checker thread");
        if let Err(e) = result {
            panic!(
                "after {} checkpoints and {:?}: {e}",
                checkpoints.load(Ordering::Relaxed),
                started.elapsed()
            );
        }
    });
    assert!(checkpoints.into_inner() >= 20, "too few checkpoints ran");
    db.checkpoint().expect("last checkpoint");
    drop_within_seconds(db, vec![bt], "merge race");
    fs.crash(Some(71));
    let db = Db::open(DB, opts).expect("reopen");
    assert!(
        read_all(&db, &["bt"], "merge race")[0] == model,
        "recovered state differs"
    );
    db.verify().expect("verify after recovery");
}

/// (generation, free map pages) of the newest header slot of the file of
/// the first table (the layout of `Checkpoint::encode` in btree/format.rs).
fn free_map_pages(fs: &FaultFs) -> (u64, u32) {
    use spinney::fs::Fs;
    let raw = fs
        .read_all(Path::new("/db/000000.btree"))
        .expect("read the B-tree file");
    let field = |slot: usize, at: usize, len: usize| {
        let start = slot * 4096 + at;
        raw.get(start..start + len)
            .map(|b| b.iter().rev().fold(0u64, |acc, &x| acc << 8 | u64::from(x)))
            .expect("header bytes")
    };
    (0..2)
        .map(|slot| (field(slot, 20, 8), field(slot, 56, 4) as u32))
        .max()
        .expect("two slots")
}

#[test]
fn a_free_map_that_shrinks_as_it_is_allocated_reads_back() {
    // Goal: a checkpoint sizes its free map's run from the free list, then
    // allocates the run from that list; when the allocation takes a whole
    // extent, the list can need a page fewer than the run has. Every page
    // of the run must still be a free-map page, or `verify` fails and the
    // file cannot be opened.
    // Method (deterministic, no fault): 600 keys with two-page overflow
    // values, then every other value replaced (twice, so that the old
    // versions are pruned): about 300 free extents, more than one page of
    // free map holds (254). Then single overwrites, each followed by a
    // checkpoint and `verify`, while the extents are used up one by one
    // and the free map drops from two pages to one; then a reopen.
    let fs = FaultFs::new();
    let opts = quiet_options(&fs);
    let db = Db::open(DB, opts.clone()).expect("open");
    let bt = db.create_table("bt", btree_options()).expect("create");
    let n = 600u32;
    let mut model = Model::new();
    let mut put = |k: u32, v: Vec<u8>| {
        bt.put(&key(k), &v).expect("put");
        model.insert(key(k), v);
    };
    for i in 0..n {
        put(i, vec![i as u8; 5000]);
    }
    db.checkpoint().expect("checkpoint");
    for round in 0..2u8 {
        for i in (0..n).step_by(2) {
            put(i, vec![round; 10]);
        }
        db.checkpoint().expect("checkpoint");
    }
    let mut pages_seen = Vec::new();
    for c in 0..130u32 {
        put(c * 7 % n, c.to_le_bytes().to_vec());
        db.checkpoint().expect("checkpoint");
        let (generation, pages) = free_map_pages(&fs);
        if pages_seen.last() != Some(&pages) {
            pages_seen.push(pages);
        }
        db.verify()
            .unwrap_or_else(|e| panic!("checkpoint {generation} ({pages} free map pages): {e}"));
    }
    assert!(
        pages_seen.windows(2).any(|w| w[0] > w[1]),
        "the free map never shrank: {pages_seen:?}"
    );
    drop(bt);
    db.close().expect("close");
    let db = Db::open(DB, opts).expect("reopen");
    assert!(
        read_all(&db, &["bt"], "free map")[0] == model,
        "reopened state differs"
    );
    db.verify().expect("verify after reopen");
}
