//! Crashes and I/O errors in commits, on the fault-injecting file system.
//!
//! Goal: whatever mutating file operation the machine dies at while a
//! load commits (with flushes, compactions and checkpoints running in the
//! background and explicit ones in the load), the database reopens to a
//! state the durability level promises: with `Full`, every acknowledged
//! commit and possibly the one in flight; with `Normal` and `Off`, some
//! prefix of the commits tried, never shorter than what the log had synced
//! (by an explicit or background flush or checkpoint, or a segment closing;
//! `Stats::synced_seqno` read after each step). A batch is all there or not at all, across
//! tables and across table kinds. An I/O error in a commit makes the
//! database read-only and loses nothing acknowledged.
//!
//! Method: a seeded plan is executed once without a fault to count its
//! mutating operations; then again and again with a `FaultKind::Crash`
//! injected at points spread over that count. After the first error the
//! `Db` is dropped, `FaultFs::crash` rolls the files back to what was
//! synced (with or without torn tails), and the reopened state is compared
//! with a `BTreeMap` model after each prefix of the plan.
//!
//! - LSM tables: two tables with small write buffers (background flushes
//!   and compactions), batches, single puts and explicit flushes.
//! - B-tree tables: one table checkpointed in the background (two threads,
//!   every 64 KiB of log) and explicitly, pages evicted dirty in between;
//!   and a mixed database, an LSM and a B-tree table in every batch, whose
//!   two tables must recover the same prefix. The two loads differ because
//!   each is tuned to make its kind's background work run while it commits.
//! - An EIO or ENOSPC at each operation of one commit, over either kind.
//! - The baseline without faults, over either kind.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::files::check_files;
use common::load::{at_rest_options, batches, load, load_tables, open_busy, Step};
use common::model::{
    apply, matching_prefixes, state_after, write_batch, write_single, Batch, State,
};
use common::two_tables::{
    open_tables, options, random_entry, some_batches, write_acknowledged, TABLES,
};
use common::{
    check_scans, drop_within_seconds, kinds, lsm_table, read_all, read_table, reopen_after_crash,
    table_stats, DB,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use spinney::fs::{FaultFs, FaultKind, PendingWrites};
use spinney::{Db, Durability, Error, Options, Table, TableOptions, WalRecovery};

/// What a run of a plan got done before the machine died.
#[derive(Debug, Default)]
struct Outcome {
    /// Batches whose commit was tried (acknowledged or not).
    attempted: usize,
    /// Batches whose commit returned Ok.
    acknowledged: usize,
    /// Batches acknowledged before the last `Db::flush` or `Db::checkpoint`
    /// that returned Ok (its log sync made them durable, whatever the
    /// durability), or covered by the newest `Stats::synced_seqno` seen
    /// after a step, whichever is more: the syncs of background flushes
    /// and checkpoints, of segments closed at `wal_segment_size`, and of
    /// `Full` commits count as well.
    durable: usize,
    /// The seqno of each acknowledged batch (one writer: the newest after
    /// it returned).
    seqnos: Vec<u64>,
    /// Explicit flushes and checkpoints that returned Ok.
    syncs: usize,
    /// The first error, if any.
    error: Option<String>,
}

/// Runs `plan` until the first error. With `pace`, each batch waits that
/// long first, as an application's commits do, so that the background
/// work gets the commit lock to freeze a tree.
fn run_plan(db: &Db, tables: &[Table], plan: &[Step], pace: Option<Duration>) -> Outcome {
    let mut out = Outcome::default();
    for step in plan {
        let result = match step {
            Step::Batch(b) => {
                if let Some(pace) = pace {
                    std::thread::sleep(pace);
                }
                out.attempted += 1;
                db.write(write_batch(tables, b))
                    .map(|()| out.acknowledge(db))
            }
            Step::Single(b) => {
                out.attempted += 1;
                write_single(tables, &b[0]).map(|()| out.acknowledge(db))
            }
            Step::Flush | Step::Checkpoint => {
                let synced = if matches!(step, Step::Flush) {
                    db.flush()
                } else {
                    db.checkpoint()
                };
                synced.map(|()| {
                    out.durable = out.acknowledged;
                    out.syncs += 1;
                })
            }
        };
        // What the engine says its log has synced is what a power loss
        // must keep (a sync that failed claims nothing).
        let synced = db.stats().synced_seqno;
        let covered = out.seqnos.partition_point(|&s| s <= synced);
        out.durable = out.durable.max(covered);
        if let Err(e) = result {
            out.error = Some(e.to_string());
            break;
        }
    }
    out
}

impl Outcome {
    fn acknowledge(&mut self, db: &Db) {
        self.acknowledged += 1;
        self.seqnos.push(db.snapshot().seqno());
    }
}

/// Runs `plan` as `run_plan` does. With `driver`, a second thread calls
/// `Db::work` meanwhile, so that due checkpoints run while the writer
/// commits even where the background threads are not woken for them (see
/// `background_threads_checkpoint_a_btree_only_database`).
fn run(db: &Db, tables: &[Table], plan: &[Step], driver: bool, pace: Option<Duration>) -> Outcome {
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
        let out = run_plan(db, tables, plan, pace);
        stop.store(true, Ordering::Release);
        out
    })
}

/// The `Full` promise: every acknowledged batch and perhaps the one in
/// flight. `Normal` and `Off`: a prefix of the attempted batches, no
/// shorter than what the log was last seen to have synced.
fn allowed_prefixes(durability: Durability, out: &Outcome) -> (usize, usize) {
    match durability {
        Durability::Full => (out.acknowledged, out.attempted),
        Durability::Normal | Durability::Off => (out.durable, out.attempted),
    }
}

// ---------------------------------------------------------------------------
// LSM tables: crashes at spread points of a load with background flushes
// and compactions.

/// The LSM plan of one workload, the same for every crash point of a seed:
/// batches of up to 24 entries over both tables, single puts and deletes,
/// and about one `Db::flush` in 25 steps.
fn plan(seed: u64, steps: usize) -> Vec<Step> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..steps)
        .map(|_| match rng.gen_range(0..100) {
            0..=3 => Step::Flush,
            4..=19 => Step::Single(vec![random_entry(&mut rng)]),
            _ => {
                let n = rng.gen_range(1..=24);
                Step::Batch((0..n).map(|_| random_entry(&mut rng)).collect())
            }
        })
        .collect()
}

struct CrashCase {
    seed: u64,
    durability: Durability,
    steps: usize,
    crash_points: usize,
}

/// Runs `case.crash_points` crash points of one seeded plan over two LSM
/// tables, each reopened and checked, and fails unless at least three in
/// four of the crashes fired during the workload (the others are a power
/// loss after its last operation).
fn crash_at_spread_points(case: &CrashCase) {
    let plan = plan(case.seed, case.steps);
    let batches = batches(&plan);

    // Dry runs, to learn how many mutating operations the workload makes:
    // the fewest of three, since background work makes the count vary and
    // a crash point past a run's last operation misses it.
    let dry_run = || {
        let fs = FaultFs::new();
        let db = Db::open(DB, options(&fs, case.durability)).expect("open");
        let tables = open_tables(&db, &lsm_table());
        let start = fs.mutating_ops();
        let out = run(&db, &tables, &plan, false, None);
        assert!(out.error.is_none(), "dry run failed: {out:?}");
        let span = fs.mutating_ops() - start;
        let stats = db.stats();
        assert!(stats.flushes > 0, "the workload never flushed: {stats:?}");
        drop_within_seconds(db, tables, "dry run");
        span
    };
    let span = (0..3).map(|_| dry_run()).min().unwrap_or(0);
    assert!(span > case.crash_points as u64, "only {span} operations");

    let mut rng = StdRng::seed_from_u64(case.seed ^ 0x5eed);
    let mut died = 0;
    for point in 0..case.crash_points {
        // Spread over the whole run, jittered so that seeds cover different ops.
        let base = span * point as u64 / case.crash_points as u64;
        let k = base + rng.gen_range(0..(span / case.crash_points as u64).max(1));
        let pending = PendingWrites::nth(point as u64, rng.gen());
        let ctx = format!(
            "seed {} {:?} crash after {k} of {span} ops, {pending:?}",
            case.seed, case.durability
        );

        let fs = FaultFs::new();
        let opts = options(&fs, case.durability);
        let db = Db::open(DB, opts.clone()).expect("open");
        let tables = open_tables(&db, &lsm_table());
        fs.inject(k, FaultKind::Crash);
        let out = run(&db, &tables, &plan, false, None);
        died += usize::from(out.error.is_some());
        drop_within_seconds(db, tables, &ctx);
        fs.crash_with(pending);

        // The second open below is a default one even after a recovery to
        // a point in time: that recovery leaves no damage behind.
        let db = reopen_after_crash(&ctx, pending, &opts);
        let state = read_all(&db, &TABLES, &ctx);
        let (lo, hi) = allowed_prefixes(case.durability, &out);
        let found = matching_prefixes(&batches, &state, lo, hi);
        if found.is_empty() {
            let any = matching_prefixes(&batches, &state, 0, batches.len());
            panic!(
                "{ctx}: recovered state is no allowed prefix ({lo}..={hi}); \
                 it matches prefixes {any:?} of all; outcome {out:?}; \
                 sizes {} and {}",
                state[0].len(),
                state[1].len()
            );
        }
        db.verify()
            .unwrap_or_else(|e| panic!("{ctx}: verify after recovery: {e}"));
        db.close().unwrap_or_else(|e| panic!("{ctx}: close: {e}"));

        let db = Db::open(DB, opts).unwrap_or_else(|e| panic!("{ctx}: second reopen: {e}"));
        assert!(
            read_all(&db, &TABLES, &ctx) == state,
            "{ctx}: second reopen differs"
        );
        db.close().unwrap_or_else(|e| panic!("{ctx}: close: {e}"));
    }
    // A crash point past the workload's last operation (the background
    // worker makes the count vary) lets it finish; most must not.
    assert!(
        died * 4 >= case.crash_points * 3,
        "seed {}: only {died} of {} runs met their crash",
        case.seed,
        case.crash_points
    );
}

#[test]
fn full_durability_keeps_every_acknowledged_batch_across_crashes() {
    // Goal: with `Full`, a crash anywhere in a load of two LSM tables that
    // flush and compact in the background loses no acknowledged batch.
    // Method: three seeds, 100 spread crash points each.
    for seed in [1, 2, 3] {
        crash_at_spread_points(&CrashCase {
            seed,
            durability: Durability::Full,
            steps: 400,
            crash_points: 100,
        });
    }
}

#[test]
fn normal_durability_recovers_a_prefix_across_crashes() {
    // Goal: with `Normal`, the recovered state is a prefix of the batches
    // tried, no shorter than what the log was last seen to have synced.
    for seed in [4, 5, 6] {
        crash_at_spread_points(&CrashCase {
            seed,
            durability: Durability::Normal,
            steps: 400,
            crash_points: 80,
        });
    }
}

#[test]
fn off_durability_recovers_a_prefix_across_crashes() {
    // Goal: as for `Normal`, with commits that never sync the log.
    for seed in [7, 8, 9] {
        crash_at_spread_points(&CrashCase {
            seed,
            durability: Durability::Off,
            steps: 400,
            crash_points: 60,
        });
    }
}

// ---------------------------------------------------------------------------
// B-tree tables: crashes at spread points of a load with background and
// explicit checkpoints, alone and beside an LSM table.

/// How long each batch of a B-tree load waits before its commit.
const PACE: Option<Duration> = Some(Duration::from_micros(50));

struct LoadCase {
    seed: u64,
    durability: Durability,
    mixed: bool,
    /// Run `Db::work` from a second thread during the load.
    driver: bool,
    steps: usize,
    points: u64,
}

/// Crashes the load of `case` at spread points, each reopened and checked,
/// and fails unless at least three in four of the crashes fired during the
/// load.
fn crash_under_load(case: &LoadCase) {
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
        let out = run(&db, &tables, &plan, case.driver, PACE);
        assert!(out.error.is_none(), "{what}: dry run: {out:?}");
        let span = fs.mutating_ops() - start;
        let stats = table_stats(&db, "bt").btree.expect("B-tree stats");
        assert!(
            stats.checkpoints > out.syncs as u64 + 3,
            "{what}: {} explicit checkpoints, {} in all: too few in the background",
            out.syncs,
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
        assert!(
            read_all(&db, &names, &what) == state_after(&batches, names.len()),
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
        let pending = PendingWrites::nth(point, rng.gen());
        let ctx = format!("{what}: crash at op {k} of about {span}, {pending:?}");
        let fs = FaultFs::new();
        let (db, tables) = open_busy(&fs, case.durability, case.mixed);
        fs.inject(k, FaultKind::Crash);
        let out = run(&db, &tables, &plan, case.driver, PACE);
        drop_within_seconds(db, tables, &ctx);
        died += u64::from(fs.is_crashed());
        fs.crash_with(pending);

        let db = reopen_after_crash(&ctx, pending, &at_rest_options(&fs));
        let state = read_all(&db, &names, &ctx);
        let (lo, hi) = allowed_prefixes(case.durability, &out);
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
                    let mut st = vec![State::new(); names.len()];
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
}

#[test]
fn crashes_under_a_load_with_background_checkpoints_keep_every_acknowledged_full_batch() {
    // Goal: crashes anywhere in a write load whose B-tree table is
    // checkpointed in the background (two threads, every 64 KiB of log)
    // and explicitly, with pages evicted dirty between checkpoints, lose no
    // acknowledged Full commit; the batch in flight may or may not be there.
    crash_under_load(&LoadCase {
        seed: 31,
        durability: Durability::Full,
        mixed: false,
        driver: false,
        steps: 360,
        points: 60,
    });
}

#[test]
fn crashes_under_a_load_with_background_checkpoints_recover_a_prefix_normal_and_off() {
    // Goal: with Normal and Off commits, the recovered state is exactly the
    // state after some prefix of the batches tried, never a mix, and never
    // shorter than what the log was last seen to have synced (by a
    // checkpoint of either kind or a segment closing).
    for (seed, durability) in [(32, Durability::Normal), (33, Durability::Off)] {
        crash_under_load(&LoadCase {
            seed,
            durability,
            mixed: false,
            driver: false,
            steps: 360,
            points: 40,
        });
    }
}

#[test]
fn a_mixed_database_recovers_the_same_prefix_in_its_lsm_and_btree_tables() {
    // Goal (the done criterion): one LSM table and one B-tree table,
    // every batch writing to both, crashed anywhere in a load with
    // background flushes, compactions and checkpoints: after recovery both
    // tables hold exactly the same prefix of the batches (atomic across
    // tables and table kinds), every acknowledged one with Full, and
    // `verify` passes.
    for (seed, durability, n) in [
        (41, Durability::Full, 30),
        (42, Durability::Normal, 24),
        (43, Durability::Off, 24),
    ] {
        crash_under_load(&LoadCase {
            seed,
            durability,
            mixed: true,
            driver: false,
            steps: 360,
            points: n,
        });
    }
}

// ---------------------------------------------------------------------------
// An I/O error at each operation of one commit.

/// After an injected `kind` fault in a commit to two tables of `table`: the
/// commit fails, the database is read-only, reads still answer, and a
/// reopen has every acknowledged batch (and perhaps the failed one, whose
/// bytes may have reached the log).
fn io_error_in_commit(kind: FaultKind, table: &TableOptions) {
    let before = some_batches(13, 60);
    let mut rng = StdRng::seed_from_u64(14);
    let failing: Batch = (0..5).map(|_| random_entry(&mut rng)).collect();
    let commit_span = {
        let fs = FaultFs::new();
        let db = Db::open(DB, options(&fs, Durability::Full)).expect("open");
        let tables = open_tables(&db, table);
        let mut model = vec![State::new(); 2];
        write_acknowledged(&db, &tables, &mut model, &before);
        let start = fs.mutating_ops();
        write_acknowledged(&db, &tables, &mut model, std::slice::from_ref(&failing));
        fs.mutating_ops() - start
    };
    assert!(commit_span >= 1);
    for k in 0..commit_span {
        for crash in [
            None,
            Some(PendingWrites::InOrder(k)),
            Some(PendingWrites::Any(k)),
        ] {
            let ctx = format!(
                "{:?} {kind:?} at op {k} of a commit of {commit_span}, crash {crash:?}",
                table.kind
            );
            let fs = FaultFs::new();
            let opts = options(&fs, Durability::Full);
            let db = Db::open(DB, opts.clone()).expect("open");
            let tables = open_tables(&db, table);
            let mut model = vec![State::new(); 2];
            write_acknowledged(&db, &tables, &mut model, &before);
            fs.inject(k, kind);
            match db.write(write_batch(&tables, &failing)) {
                Err(Error::Io { .. }) => {}
                other => panic!("{ctx}: the failing commit returned {other:?}"),
            }
            let again = tables[0].put(b"after", b"fault");
            assert!(
                matches!(again, Err(Error::ReadOnly { .. })),
                "{ctx}: write after the fault returned {again:?}"
            );
            let flushed = db.flush();
            assert!(
                matches!(flushed, Err(Error::ReadOnly { .. })),
                "{ctx}: flush after the fault returned {flushed:?}"
            );
            // Reads still answer with the acknowledged state.
            check_scans(&ctx, &tables, &model);
            for (table, model) in tables.iter().zip(&model) {
                if let Some((k, v)) = model.iter().next() {
                    assert_eq!(table.get(k).expect("get"), Some(v.clone()), "{ctx}");
                }
            }
            drop_within_seconds(db, tables, &ctx);
            let db = match crash {
                Some(pending) => {
                    fs.crash_with(pending);
                    reopen_after_crash(&ctx, pending, &opts)
                }
                None => Db::open(DB, opts).unwrap_or_else(|e| panic!("{ctx}: reopen: {e}")),
            };
            let state = read_all(&db, &TABLES, &ctx);
            let mut with_failed = model.clone();
            apply(&mut with_failed, &failing);
            assert!(
                state == model || state == with_failed,
                "{ctx}: recovered state is neither the acknowledged state nor it plus the failed batch"
            );
            db.verify().unwrap_or_else(|e| panic!("{ctx}: verify: {e}"));
            db.table(TABLES[0])
                .expect("table")
                .put(b"after", b"reopen")
                .unwrap_or_else(|e| panic!("{ctx}: write after reopen: {e}"));
        }
    }
}

#[test]
fn eio_in_a_commit_makes_the_database_read_only_and_loses_nothing_acknowledged() {
    // Goal: an EIO at any operation of a commit (the log write, its sync)
    // fails it and makes the database read-only; reads still answer, and
    // a reopen has every acknowledged batch. The log is shared by both
    // kinds, so the case runs over LSM and over B-tree tables.
    for (_, table) in kinds() {
        io_error_in_commit(FaultKind::Eio, &table);
    }
}

#[test]
fn enospc_in_a_commit_makes_the_database_read_only_and_loses_nothing_acknowledged() {
    // Goal: as for EIO, with a full disk while the log grows.
    for (_, table) in kinds() {
        io_error_in_commit(FaultKind::NoSpace, &table);
    }
}

#[test]
fn an_io_error_creating_a_btree_table_refuses_the_create_and_nothing_else() {
    // Goal: creating a B-tree table writes its file before the manifest
    // names it. An EIO at any of those operations fails the create, but
    // nothing durable names the table: the database stays writable, the
    // same name can be created again, no file is left over, and both
    // survive a crash and a reopen.
    // Method: count the create's mutating operations, then fail each in
    // turn; retry, write, crash (unsynced writes lost), reopen, read.
    let span = {
        let fs = FaultFs::new();
        let db = Db::open(DB, options(&fs, Durability::Full)).expect("open");
        let start = fs.mutating_ops();
        db.create_table("bt", common::btree_table())
            .expect("create");
        fs.mutating_ops() - start
    };
    assert!(span >= 3, "creating a B-tree table took {span} operations");
    let mut refused = 0;
    for k in 0..span {
        let ctx = format!("EIO at op {k} of a B-tree table's create of {span}");
        let fs = FaultFs::new();
        let opts = options(&fs, Durability::Full);
        let db = Db::open(DB, opts.clone()).expect("open");
        let lsm = db.create_table("lsm", lsm_table()).expect("lsm table");
        fs.inject(k, FaultKind::Eio);
        match db.create_table("bt", common::btree_table()) {
            Err(Error::Io { .. }) => {}
            Err(other) => panic!("{ctx}: the failing create returned {other}"),
            Ok(_) => panic!("{ctx}: the create succeeded past the fault"),
        }
        if lsm.put(b"k", b"v").is_err() {
            // The fault hit the manifest (its append or sync): the catalog
            // on disk is unknown, and the database refuses writes. After a
            // power loss it reopens with the LSM table, the B-tree table
            // there whole or not at all, and every file verified.
            drop_within_seconds(db, vec![lsm], &ctx);
            fs.crash(None);
            let db = Db::open(DB, opts).unwrap_or_else(|e| panic!("{ctx}: reopen: {e}"));
            db.table("lsm")
                .unwrap_or_else(|e| panic!("{ctx}: the LSM table: {e}"));
            if let Ok(bt) = db.table("bt") {
                assert_eq!(bt.get(b"a").expect("get"), None, "{ctx}");
            }
            db.verify().unwrap_or_else(|e| panic!("{ctx}: verify: {e}"));
            continue;
        }
        let btree_files = |fs: &FaultFs| {
            fs.files()
                .iter()
                .filter(|p| p.extension().is_some_and(|e| e == "btree"))
                .count()
        };
        assert_eq!(btree_files(&fs), 0, "{ctx}: a refused create left its file");
        refused += 1;
        let bt = db
            .create_table("bt", common::btree_table())
            .unwrap_or_else(|e| panic!("{ctx}: create again: {e}"));
        bt.put(b"a", b"1")
            .unwrap_or_else(|e| panic!("{ctx}: put: {e}"));
        assert_eq!(btree_files(&fs), 1, "{ctx}: {:?}", fs.files());
        drop_within_seconds(db, vec![lsm, bt], &ctx);
        fs.crash(None);
        let db = Db::open(DB, opts).unwrap_or_else(|e| panic!("{ctx}: reopen: {e}"));
        let bt = db
            .table("bt")
            .unwrap_or_else(|e| panic!("{ctx}: table: {e}"));
        assert_eq!(bt.get(b"a").expect("get"), Some(b"1".to_vec()), "{ctx}");
        assert_eq!(
            db.table("lsm").expect("lsm").get(b"k").expect("get"),
            Some(b"v".to_vec()),
            "{ctx}"
        );
        db.verify().unwrap_or_else(|e| panic!("{ctx}: verify: {e}"));
    }
    assert!(
        refused >= 2,
        "only {refused} of {span} faults failed the create before the manifest"
    );
}

// ---------------------------------------------------------------------------
// The baseline: the same plans without a fault.

/// Runs the plans of `seeds` over two tables of `table` without a fault,
/// then closes and reopens: the state is exactly that of all batches.
fn survives_close_and_reopen(table: &TableOptions, seeds: std::ops::Range<u64>) {
    for seed in seeds {
        let ctx = format!("{:?} seed {seed}, no fault", table.kind);
        let plan = plan(seed, 400);
        let fs = FaultFs::new();
        let opts = options(&fs, Durability::Normal);
        let db = Db::open(DB, opts.clone()).expect("open");
        let tables = open_tables(&db, table);
        let out = run(&db, &tables, &plan, false, None);
        assert!(out.error.is_none(), "{ctx}: {out:?}");
        let model = state_after(&batches(&plan), 2);
        for (i, table) in tables.iter().enumerate() {
            let seen = read_table(table).unwrap_or_else(|e| panic!("{ctx}: scan: {e}"));
            assert!(seen == model[i], "{ctx}: table {i} differs before close");
        }
        db.verify().unwrap_or_else(|e| panic!("{ctx}: verify: {e}"));
        drop(tables);
        db.close().unwrap_or_else(|e| panic!("{ctx}: close: {e}"));
        let db = Db::open(DB, opts).unwrap_or_else(|e| panic!("{ctx}: reopen: {e}"));
        assert!(
            read_all(&db, &TABLES, &ctx) == model,
            "{ctx}: reopened state differs"
        );
    }
}

#[test]
fn workload_without_faults_survives_close_and_reopen() {
    // Goal: the baseline of the crash tests. With no fault at all, the
    // workload's background flushes and compactions and its explicit
    // flushes keep every file a version needs, and a reopen after a clean
    // close has exactly the state of all batches.
    // Many seeds, because the foreground flush and the background worker
    // race: the file cleaner of one must never delete the other's output.
    survives_close_and_reopen(&lsm_table(), 100..300);
}

#[test]
fn workload_without_faults_survives_close_and_reopen_btree() {
    // Goal: the same baseline over B-tree tables, whose explicit flushes
    // are checkpoints, with background checkpoints as the log grows.
    // Thirty seeds rather than two hundred, to keep the run short.
    survives_close_and_reopen(&common::btree_table(), 100..130);
}

/// Loses power (everything unsynced lost) under `db`, which is dropped,
/// and returns the path of the newest log segment.
fn lose_power_and_find_the_log(fs: &FaultFs, db: Db, tables: Vec<Table>) -> std::path::PathBuf {
    fs.inject(0, FaultKind::Crash);
    drop_within_seconds(db, tables, "power loss");
    fs.crash(None);
    fs.files()
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "wal"))
        .max()
        .expect("a log segment")
}

/// Writes 30 commits under `durability`, then one `Full` commit whose value
/// is 600 bytes of `L` (and, with `then_another`, one more `Full` commit);
/// loses power (everything unsynced lost); flips a byte in the middle of
/// that value in the durable log; opens with the default options and
/// returns what the open gave, with the segment's path.
fn open_after_damage_to_a_synced_commit(
    durability: Durability,
    then_another: bool,
) -> (spinney::Result<Db>, std::path::PathBuf) {
    use spinney::fs::Fs;
    use spinney::{WriteBatch, WriteOptions};
    let fs = FaultFs::new();
    let opts = options(&fs, durability);
    let db = Db::open(DB, opts.clone()).expect("open");
    let tables = open_tables(&db, &TableOptions::lsm());
    for i in 0..30u32 {
        tables[0]
            .put(format!("k{i:04}").as_bytes(), &[b'v'; 100])
            .expect("put");
    }
    let full = WriteOptions {
        durability: Some(Durability::Full),
    };
    let mut last = WriteBatch::new();
    last.put(&tables[1], b"last", &[b'L'; 600]);
    db.write_with(last, full).expect("the Full commit");
    if then_another {
        let mut next = WriteBatch::new();
        next.put(&tables[1], b"next", b"n");
        db.write_with(next, full).expect("the next Full commit");
    }
    let segment = lose_power_and_find_the_log(&fs, db, tables);
    let bytes = fs.read_all(&segment).expect("read the log");
    let at = bytes
        .windows(600)
        .position(|w| w.iter().all(|&b| b == b'L'))
        .expect("the Full commit is durable in the log");
    assert!(fs.corrupt_byte(&segment, (at + 300) as u64, 0x40));
    (Db::open(DB, opts), segment)
}

/// The open must fail with `Corruption` naming `segment`.
fn assert_corruption_in(opened: spinney::Result<Db>, segment: &std::path::Path) {
    match opened {
        Err(Error::Corruption { file, .. }) => assert_eq!(file, segment),
        Err(e) => panic!("the open failed with {e}, not Corruption naming the segment"),
        Ok(db) => {
            let t = db.table(TABLES[1]).expect("table");
            panic!(
                "the open read damage in a synced commit as an unsynced tail (the key reads {:?})",
                t.get(b"last").expect("get").map(|v| v.len())
            )
        }
    }
}

#[test]
fn damage_in_a_full_commit_of_a_normal_database_is_corruption_after_a_power_loss() {
    // Goal: a `write_with(Full)` in a `Normal` database syncs every commit
    // before it too, and may be the last sync for long: its sync mark is
    // synced before it returns, so damage to what it made durable is
    // `Corruption`, even right after a power loss.
    let (opened, segment) = open_after_damage_to_a_synced_commit(Durability::Normal, false);
    assert_corruption_in(opened, &segment);
}

#[test]
fn damage_in_a_full_commit_a_later_sync_covers_is_corruption_after_a_power_loss() {
    // Goal: in a `Full` database, the next commit's sync makes the mark of
    // the one before durable: damage to that earlier commit is
    // `Corruption`.
    let (opened, segment) = open_after_damage_to_a_synced_commit(Durability::Full, true);
    assert_corruption_in(opened, &segment);
}

#[test]
fn damage_in_the_newest_full_commit_group_after_a_power_loss_ends_the_log_before_it() {
    // Goal: durability.md's one exception, as documented: in a `Full`
    // database the newest commit group's sync mark becomes durable only
    // with the next sync (one sync per commit, not two), so when power is
    // lost before it and the group's bytes are damaged later, the open
    // takes the damage for a torn tail: the log ends before that group,
    // and every commit before it is there.
    let (opened, _) = open_after_damage_to_a_synced_commit(Durability::Full, false);
    let db = opened.expect("the open takes the damage for a torn tail");
    let t0 = db.table(TABLES[0]).expect("table");
    for i in 0..30u32 {
        assert!(
            t0.get(format!("k{i:04}").as_bytes())
                .expect("get")
                .is_some(),
            "commit {i}, synced and covered by a durable mark, is missing"
        );
    }
    let t1 = db.table(TABLES[1]).expect("table");
    assert_eq!(t1.get(b"last").expect("get"), None);
}

#[test]
fn damage_a_sync_mark_proves_synced_is_corruption_even_after_a_power_loss() {
    // Goal: an open reads damage in the newest log segment as the unsynced
    // tail a power loss left only when no sync mark after it proves it was
    // synced. A flipped byte in a record that later `Full` commits synced
    // is corruption naming the segment, never a quietly shorter log.
    // Method: 40 `Full` batches over two LSM tables (large write buffers:
    // no flush), power lost with everything unsynced lost, then one byte of
    // an early record flipped in the durable log; the default open must
    // fail with `Corruption` naming the segment, and a point-in-time open
    // keeps the batches before the damage.
    let fs = FaultFs::new();
    let opts = options(&fs, Durability::Full);
    let db = Db::open(DB, opts.clone()).expect("open");
    let tables = open_tables(&db, &TableOptions::lsm());
    let mut model = vec![State::new(); 2];
    let batches = some_batches(77, 40);
    write_acknowledged(&db, &tables, &mut model, &batches);
    let segment = lose_power_and_find_the_log(&fs, db, tables);
    // Past the first few records (the batches are a few hundred bytes).
    assert!(fs.corrupt_byte(&segment, 2000, 0x40), "flip inside the log");
    match Db::open(DB, opts.clone()) {
        Err(Error::Corruption { file, .. }) => assert_eq!(file, segment),
        Err(e) => panic!("the open failed with {e}, not Corruption naming the segment"),
        Ok(_) => panic!("the open read synced damage as an unsynced tail"),
    }
    let db = Db::open(
        DB,
        Options {
            wal_recovery: WalRecovery::PointInTime,
            ..opts
        },
    )
    .expect("point-in-time open");
    let state = read_all(&db, &TABLES, "point in time");
    let kept = matching_prefixes(&batches, &state, 1, batches.len() - 1);
    assert!(
        !kept.is_empty(),
        "the point-in-time open kept no prefix before the damage"
    );
}
