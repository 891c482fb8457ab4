//! Crashes during recovery, on the fault-injecting file system.
//!
//! Goal: recovery replays the log into the tables, writes what it
//! replayed (SSTs of LSM tables, checkpoints of B-tree tables), a new
//! manifest, CURRENT and a new log segment, and removes the old files. A
//! crash at any of those operations must leave files that the next open
//! recovers to the same state.
//!
//! Method: a database crashed with commits only in the log; then its
//! reopen crashed at each of its operations in turn, alternately with a
//! tear; then a real reopen, compared with the `BTreeMap` model. One test
//! per kind, as the states differ: two LSM tables of synced batches, and
//! the B-tree state of `common::checkpointed`, whose recovery checks also
//! count the files and write and checkpoint after recovery.

mod common;

use std::sync::Arc;

use common::checkpointed::{build, check_recovery, quiet_options, Built};
use common::model::{Batch, State};
use common::two_tables::{open_tables, options, some_batches, write_acknowledged, TABLES};
use common::{drop_within_seconds, each_way, lsm_table, read_all, reopen_after_crash, DB};
use spinney::fs::{FaultFs, FaultKind, PendingWrites};
use spinney::{Db, Durability, Error, Options};

/// A database in the state a test starts from: its table handles, dropped
/// with it, and the model of its tables.
type Prepared = (Db, Box<dyn Send>, Vec<State>);

/// Makes the state a test starts from.
type PrepareFn = dyn Fn(&Arc<FaultFs>) -> Prepared;

/// The options a test opens with.
type OptionsFn = dyn Fn(&Arc<FaultFs>) -> Options;

/// The B-tree state of `common::checkpointed` (its third round only in the
/// log).
fn checkpointed_btree(fs: &Arc<FaultFs>) -> Prepared {
    let Built { db, tables, models } = build(fs);
    (db, Box::new(tables), models)
}

/// Two LSM tables written by `batches`, each synced.
fn two_lsm_tables(batches: Vec<Batch>) -> impl Fn(&Arc<FaultFs>) -> Prepared {
    move |fs: &Arc<FaultFs>| -> Prepared {
        let db = Db::open(DB, options(fs, Durability::Full)).expect("open");
        let tables = open_tables(&db, &lsm_table());
        let mut model = vec![State::new(); 2];
        write_acknowledged(&db, &tables, &mut model, &batches);
        (db, Box::new(tables), model)
    }
}

/// Writes the state of `prepare` on a fresh file system and crashes it with
/// commits only in the log (`prepare` returns the model).
fn crashed(fs: &Arc<FaultFs>, prepare: impl Fn(&Arc<FaultFs>) -> Prepared) -> Vec<State> {
    let (db, handles, models) = prepare(fs);
    fs.inject(0, FaultKind::Crash);
    drop_within_seconds(db, handles, "prepare");
    fs.crash(None);
    models
}

/// The mutating file operations of the recovery of a crashed `prepare`.
fn recovery_span(
    prepare: &dyn Fn(&Arc<FaultFs>) -> Prepared,
    options: &dyn Fn(&Arc<FaultFs>) -> Options,
) -> u64 {
    let fs = FaultFs::new();
    crashed(&fs, prepare);
    let start = fs.mutating_ops();
    let db = Db::open(DB, options(&fs)).expect("reopen");
    let span = fs.mutating_ops() - start;
    drop(db);
    span
}

/// Crashes the recovery of a crashed `prepare` at its operation `k`; says
/// whether the crash met it, and returns the model.
fn crash_recovery_at(
    k: u64,
    pending: PendingWrites,
    prepare: &dyn Fn(&Arc<FaultFs>) -> Prepared,
    options: &dyn Fn(&Arc<FaultFs>) -> Options,
) -> (Arc<FaultFs>, Vec<State>, bool) {
    let fs = FaultFs::new();
    let models = crashed(&fs, prepare);
    let met = crash_open_at(&fs, k, pending, options);
    (fs, models, met)
}

/// Reopens the two LSM tables for real: they hold `model`, and `verify`
/// passes.
fn check_lsm_recovery(ctx: &str, fs: &Arc<FaultFs>, model: &[State], pending: PendingWrites) {
    let db = reopen_after_crash(ctx, pending, &options(fs, Durability::Full));
    assert!(
        read_all(&db, &TABLES, ctx) == model,
        "{ctx}: recovered state differs"
    );
    db.verify().unwrap_or_else(|e| panic!("{ctx}: verify: {e}"));
}

/// Opens the database with power lost at the open's operation `k` (then
/// pending writes treated as `pending` says); says whether the loss met
/// the open.
fn crash_open_at(
    fs: &Arc<FaultFs>,
    k: u64,
    pending: PendingWrites,
    options: &dyn Fn(&Arc<FaultFs>) -> Options,
) -> bool {
    fs.inject(k, FaultKind::Crash);
    if let Ok(db) = Db::open(DB, options(fs)) {
        drop(db);
    }
    let met = fs.is_crashed();
    fs.crash_with(pending);
    met
}

#[test]
fn crash_at_every_operation_of_recovery_of_lsm_tables_recovers_the_same_state() {
    // Goal: recovery writes SSTs, a new manifest and CURRENT; a crash at any
    // of those steps must leave the database the next open recovers to the
    // same state (open.rs's recovery-order argument).
    // Method: crash a workload, then crash the reopen at each of its
    // operations, then reopen for real and compare with the model.
    let prepare = two_lsm_tables(some_batches(12, 150));
    let full = |fs: &Arc<FaultFs>| options(fs, Durability::Full);
    let span = recovery_span(&prepare, &full);
    assert!(span >= 5, "recovery took only {span} operations");
    let (mut points, mut met_recovery) = (0, 0);
    for k in 0..span {
        let ctx = format!("recovery crash after {k} of {span} ops");
        // A background flush before the crash changes how much recovery
        // has to do, so a late `k` may miss it: then the open succeeds.
        for pending in each_way(k) {
            let ctx = format!("{ctx}, {pending:?}");
            let (fs, model, met) = crash_recovery_at(k, pending, &prepare, &full);
            points += 1;
            met_recovery += usize::from(met);
            check_lsm_recovery(&ctx, &fs, &model, pending);
        }
    }
    assert!(
        met_recovery * 4 >= points * 3,
        "only {met_recovery} of {points} crashes met the recovery"
    );
}

#[test]
fn crash_at_every_operation_of_recovery_of_btree_tables_recovers_the_same_state() {
    // Goal: recovery replays the log into the B-tree tables (allocating
    // pages from the durable image's free list, evicting dirty ones), then
    // checkpoints them, writes a new manifest and log segment, and removes
    // the old ones. A crash at any of those operations must leave files
    // that the next open recovers to the same state.
    // Method: the state of `build` (its third round only in the log),
    // crashed; then the reopen crashed at each of its operations in turn,
    // alternately with a tear seed; then a real reopen against the model.
    let prepare = checkpointed_btree;
    let span = recovery_span(&prepare, &quiet_options);
    assert!(span >= 20, "recovery took only {span} operations");
    for (k, pending) in (0..span).flat_map(|k| each_way(k).map(|p| (k, p))) {
        let ctx = format!("recovery: crash at op {k} of {span}, {pending:?}");
        // The removal of old files at the end fails no call.
        let (fs, models, met) = crash_recovery_at(k, pending, &prepare, &quiet_options);
        assert!(met, "{ctx}: the crash missed the recovery");
        check_recovery(&ctx, &fs, &models, pending);
    }
}

/// Crashes the recovery of a crashed `prepare` at operation `k`, then the
/// next recovery at its operation `j`, then reopens for real. Says whether
/// the second crash met the second recovery, and how that crash treated
/// pending writes (the crashes go through the ways in turn).
fn nested_crash(
    k: u64,
    j: u64,
    prepare: &dyn Fn(&Arc<FaultFs>) -> Prepared,
    options: &dyn Fn(&Arc<FaultFs>) -> Options,
) -> (Arc<FaultFs>, Vec<State>, bool, PendingWrites) {
    let (fs, models, _) = crash_recovery_at(k, PendingWrites::nth(k + j, k), prepare, options);
    let second = PendingWrites::nth(j, j + 7);
    let met = crash_open_at(&fs, j, second, options);
    (fs, models, met, second)
}

#[test]
fn a_crash_during_the_recovery_of_a_crashed_recovery_still_recovers_the_same_state() {
    // Goal: recovery after a crashed recovery starts from files that only
    // a recovery leaves (a new manifest not yet named by CURRENT, SSTs or
    // checkpoints of replayed entries, a new log segment, old files half
    // removed); a crash of that recovery too must leave files the next
    // open recovers to the same state, for both kinds.
    // Method: crash a workload; crash its recovery at operation k; crash
    // the next recovery at operation j; reopen for real and compare with
    // the model (k and j spread over each recovery's operations).
    let lsm = two_lsm_tables(some_batches(21, 120));
    let full = |fs: &Arc<FaultFs>| options(fs, Durability::Full);
    let span = recovery_span(&lsm, &full);
    let mut nested = 0;
    for k in (0..span).step_by(2) {
        for j in (0..span).step_by(3) {
            let ctx = format!("lsm: recovery crashed at op {k}, the next at op {j}");
            let (fs, model, met, second) = nested_crash(k, j, &lsm, &full);
            nested += usize::from(met);
            check_lsm_recovery(&ctx, &fs, &model, second);
        }
    }

    let btree = checkpointed_btree;
    let span = recovery_span(&btree, &quiet_options);
    for k in (0..span).step_by(7) {
        for j in (0..span).step_by(9) {
            let ctx = format!("btree: recovery crashed at op {k}, the next at op {j}");
            let (fs, models, met, second) = nested_crash(k, j, &btree, &quiet_options);
            nested += usize::from(met);
            check_recovery(&ctx, &fs, &models, second);
        }
    }
    assert!(nested > 20, "only {nested} second crashes met a recovery");
}

#[test]
fn a_full_disk_at_any_operation_of_recovery_fails_the_open_and_harms_nothing() {
    // Goal: an open recovers by writing (replayed entries flushed or
    // checkpointed, a new manifest and log segment), so on a full disk it
    // can fail. Wherever ENOSPC comes, the open either succeeds or returns
    // the error, and once there is room again (or after a power loss that
    // follows the failed open) the next open recovers the same state.
    // Method: both kinds, crashed with commits only in the log; ENOSPC at
    // each operation of the recovery in turn, then a reopen with room (every
    // third time after a power loss), checked against the model.
    let lsm = two_lsm_tables(some_batches(31, 100));
    let full = |fs: &Arc<FaultFs>| options(fs, Durability::Full);
    let cases: [(&str, &PrepareFn, &OptionsFn); 2] = [
        ("lsm", &lsm, &full),
        ("btree", &checkpointed_btree, &quiet_options),
    ];
    for (kind, prepare, options) in cases {
        let span = recovery_span(prepare, options);
        let mut refused = 0;
        for k in 0..span {
            let ctx = format!("{kind}: ENOSPC at op {k} of the recovery's {span}");
            let fs = FaultFs::new();
            let models = crashed(&fs, prepare);
            fs.inject(k, FaultKind::NoSpace);
            match Db::open(DB, options(&fs)) {
                Ok(db) => drop(db),
                Err(Error::Io { source, .. }) if source.raw_os_error() == Some(28) => refused += 1,
                // A B-tree page written back during the replay failed: the
                // table failed, and the open says why.
                Err(Error::ReadOnly { reason }) if reason.contains("(os error 28)") => refused += 1,
                Err(e) => panic!("{ctx}: the open failed with {e}, not the disk's ENOSPC"),
            }
            fs.clear_faults();
            let pending = if k % 3 == 2 {
                fs.crash_with(PendingWrites::Any(k));
                PendingWrites::Any(k)
            } else {
                PendingWrites::Lost
            };
            if kind == "lsm" {
                check_lsm_recovery(&ctx, &fs, &models, pending);
            } else {
                check_recovery(&ctx, &fs, &models, pending);
            }
        }
        assert!(
            refused * 2 >= span,
            "{kind}: only {refused} of {span} opens returned the ENOSPC"
        );
    }
}

/// Commits of the torn-tail scenario: one put each, of a 700-byte value.
const TORN_COMMITS: usize = 12;

fn torn_key(i: usize) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

/// Default options on `fs` at `durability`, with no background work (so
/// that the same seed makes the same files).
fn torn_options(fs: &Arc<FaultFs>, durability: Durability) -> Options {
    Options {
        durability,
        fs: fs.clone(),
        background_threads: 0,
        autowork: false,
        ..Options::default()
    }
}

/// The log segments in `DB`, oldest first.
fn wal_segments(fs: &FaultFs) -> Vec<std::path::PathBuf> {
    fs.files()
        .into_iter()
        .filter(|p| p.parent() == Some(std::path::Path::new(DB)))
        .filter(|p| p.extension().is_some_and(|e| e == "wal"))
        .collect()
}

/// A database whose only log segment ends in a record that a power loss
/// (`PendingWrites::InOrder(seed)`) cut in the middle: under `Normal` one
/// of the unsynced commits, under `Full` the sync mark appended after the
/// last commit's sync. Returns how many of the commits (keys 0..n) the
/// segment still holds whole, or None if this seed cut at a record
/// boundary (no torn record).
fn torn_newest_segment(fs: &Arc<FaultFs>, durability: Durability, seed: u64) -> Option<usize> {
    let db = Db::open(DB, torn_options(fs, durability)).expect("open");
    let table = db.create_table("t", lsm_table()).expect("create table");
    let segments = wal_segments(fs);
    let [wal] = &segments[..] else {
        panic!("not one log segment: {:?}", fs.files())
    };
    let before = fs.file_len(wal).expect("segment");
    // The segment's length after each commit (under Full: after its mark).
    let mut ends = Vec::new();
    for i in 0..TORN_COMMITS {
        table.put(&torn_key(i), &[i as u8; 700]).expect("put");
        ends.push(fs.file_len(wal).expect("segment"));
    }
    fs.inject(0, FaultKind::Crash);
    drop_within_seconds(db, table, "torn prepare");
    fs.crash_with(PendingWrites::InOrder(seed));
    let len = fs.file_len(wal).expect("the segment survives");
    let full_len = *ends.last().expect("commits");
    match durability {
        // The unsynced tail is only the last mark: one 19-byte fragment
        // (7-byte header, 12-byte payload) after the last commit's record.
        Durability::Full => {
            let cut = full_len - len;
            (cut > 0 && cut < 19).then_some(TORN_COMMITS)
        }
        _ => (len != before && !ends.contains(&len))
            .then(|| ends.iter().filter(|&&end| end <= len).count()),
    }
}

#[test]
fn a_crash_of_the_recovery_of_a_torn_newest_segment_still_recovers_it() {
    // Goal: only the newest log segment may end in a torn record (open.rs
    // refuses one in an older segment as `Corruption`). An open that
    // recovers a segment with a torn tail leaves that segment as it was
    // and makes a new one; if it crashes after the new segment is durable
    // and before CURRENT names its new manifest, the next open sees the
    // torn segment followed by another. It must still recover the commits
    // the torn segment holds whole, in every durability mode.
    // Method: commits whose record (Normal) or sync mark (Full) a power
    // loss tears; the reopen crashed at each of its operations in turn,
    // each way; then a real reopen, which must hold exactly the commits
    // the segment held whole.
    let mut failures = Vec::new();
    let mut checked = 0;
    for durability in [Durability::Normal, Durability::Full] {
        let opts = move |fs: &Arc<FaultFs>| torn_options(fs, durability);
        let seed = (0..100)
            .find(|&seed| torn_newest_segment(&FaultFs::new(), durability, seed).is_some())
            .expect("some seed tears a record");
        let span = {
            let fs = FaultFs::new();
            torn_newest_segment(&fs, durability, seed);
            let start = fs.mutating_ops();
            drop(Db::open(DB, opts(&fs)).expect("reopen"));
            fs.mutating_ops() - start
        };
        for (k, pending) in (0..span).flat_map(|k| each_way(k).map(|p| (k, p))) {
            let ctx = format!("{durability:?}: reopen crashed at op {k} of {span}, {pending:?}");
            let fs = FaultFs::new();
            let whole = torn_newest_segment(&fs, durability, seed).expect("the same tear");
            crash_open_at(&fs, k, pending, &opts);
            let segments = wal_segments(&fs);
            checked += 1;
            match Db::open(DB, opts(&fs)) {
                Err(e) => failures.push(format!("{ctx} (segments {segments:?}): {e}")),
                Ok(db) => {
                    let table = db.table("t").expect("table");
                    for i in 0..TORN_COMMITS {
                        let got = table.get(&torn_key(i)).expect("get");
                        let want = (i < whole).then(|| vec![i as u8; 700]);
                        assert!(got == want, "{ctx}: key {i}: {got:?}");
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} crash images fail to open:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
