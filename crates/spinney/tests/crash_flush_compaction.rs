//! Crashes and I/O errors in flushes and compactions, on the
//! fault-injecting file system.
//!
//! Goal: whatever mutating file operation of a flush or a compaction the
//! machine dies at, or fails with an I/O error, the database reopens with
//! exactly the data it had: nothing acknowledged is lost, nothing a
//! compaction dropped comes back, `verify` passes, and recovery leaves no
//! orphan: every `.sst` in the directory belongs to some table's shape,
//! there is one `MANIFEST-*`, one log segment (the one recovery started),
//! and nothing else but `CURRENT` and `LOCK`.
//!
//! Method: a deterministic pre-operation state is built (no background
//! thread, no autowork, `Full` durability: the same file operations every
//! time); a dry run counts the operation's mutating file operations; then,
//! for each of them in turn, the state is built afresh, the fault is
//! injected at that operation, the operation runs, and `FaultFs::crash`
//! rolls the files back to what was synced (alternately with and without
//! torn tails). The reopened database is compared with a `BTreeMap` model.
//!
//! - `Db::flush` of two tables holding synced batches, over both kinds: an
//!   LSM table's flush writes an SST and a manifest edit, a B-tree table's
//!   is a checkpoint (the richer checkpoint sweeps are in
//!   `crash_checkpoint.rs`).
//! - `compact_level(0)`, `compact_all` and `Db::flush` of LSM tables of
//!   each compaction style, whose recovered state is then compacted fully
//!   and reopened once more, to show it is one the engine can keep working
//!   on. Compaction is of LSM tables only: a B-tree table has no levels
//!   (its `compact_all` is a checkpoint).
//! - A write load with two background threads that flush and compact both
//!   styles of LSM table as it goes, crashed at spread points: every
//!   acknowledged `Full` commit must survive.

mod common;

use std::sync::Arc;

use common::files::check_files;
use common::model::{apply, random_change, value, write_batch, Batch, State};
use common::two_tables::{open_tables, ops_of, options, some_batches, write_acknowledged, TABLES};
use common::{
    check_recovered, check_scans, drop_within_seconds, each_way, kinds, read_all,
    reopen_after_crash, DB,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use spinney::fs::{FaultFs, FaultKind, PendingWrites};
use spinney::{
    CompactionOptions, CompactionStyle, Db, Durability, Error, Options, Table, TableOptions,
    WriteBatch,
};

// ---------------------------------------------------------------------------
// A flush of two tables of either kind.

#[test]
fn crash_at_every_operation_of_a_flush_loses_no_acknowledged_batch() {
    // Goal: a flush that dies at any of its file operations (SST writes,
    // directory sync, log sync, manifest append; or, of B-tree tables, the
    // checkpoint's page writes, syncs, header slot and manifest record)
    // leaves every acknowledged Full commit recoverable, once, with nothing
    // half-installed.
    // Method: for each kind, a fixed set of batches, then `Db::flush` with
    // a crash at each of its operations in turn, alternating torn and
    // clean crashes. Few enough batches that no memtable fills: the flush
    // is the only writer of SSTs, and its operations are the same from run
    // to run.
    let batches = some_batches(11, 50);
    for (kind, table) in kinds() {
        let span = ops_of(11, 50, &table, |db, _| db.flush());
        assert!(
            span >= 4,
            "{kind}: a flush of two tables took only {span} operations"
        );
        for (k, pending) in (0..span).flat_map(|k| each_way(k).map(|p| (k, p))) {
            let ctx = format!("{kind}: flush crash after {k} of {span} ops, {pending:?}");
            let fs = FaultFs::new();
            let opts = options(&fs, Durability::Full);
            let db = Db::open(DB, opts.clone()).expect("open");
            let tables = open_tables(&db, &table);
            let mut model = vec![State::new(); 2];
            write_acknowledged(&db, &tables, &mut model, &batches);
            fs.inject(k, FaultKind::Crash);
            // The background worker may meet the crash first (see below);
            // either way the machine is down, so the flush fails.
            assert!(db.flush().is_err(), "{ctx}: flush succeeded");
            drop_within_seconds(db, tables, &ctx);
            fs.crash_with(pending);

            let db = reopen_after_crash(&ctx, pending, &opts);
            assert!(
                read_all(&db, &TABLES, &ctx) == model,
                "{ctx}: recovered state differs"
            );
            db.verify().unwrap_or_else(|e| panic!("{ctx}: verify: {e}"));
            db.close().unwrap_or_else(|e| panic!("{ctx}: close: {e}"));
            let db = Db::open(DB, opts).unwrap_or_else(|e| panic!("{ctx}: second reopen: {e}"));
            assert!(
                read_all(&db, &TABLES, &ctx) == model,
                "{ctx}: second reopen differs"
            );
        }
    }
}

#[test]
fn eio_in_a_flush_makes_the_database_read_only_and_loses_nothing_acknowledged() {
    // Goal: an I/O error at any operation of `Db::flush` fails the flush,
    // makes the database refuse writes with `Error::ReadOnly`, keeps reads
    // working, and after reopen every acknowledged batch is there; over
    // LSM tables (an SST and a manifest edit) and B-tree tables (a
    // checkpoint).
    let batches = some_batches(15, 50);
    for (kind, table) in kinds() {
        let span = ops_of(15, 50, &table, |db, _| db.flush());
        for k in 0..span {
            let ctx = format!("{kind}: EIO at op {k} of a flush of {span}");
            let fs = FaultFs::new();
            let opts = options(&fs, Durability::Full);
            let db = Db::open(DB, opts.clone()).expect("open");
            let tables = open_tables(&db, &table);
            let mut model = vec![State::new(); 2];
            write_acknowledged(&db, &tables, &mut model, &batches);
            let start = fs.mutating_ops();
            fs.inject(k, FaultKind::Eio);
            // `Db::flush` freezes the memtables, and the background worker
            // may take one of them and meet the fault instead; the flush
            // then retries and can succeed, while the database is read-only
            // anyway. So whenever the fault fired (its operation was
            // reached), writes are refused, whatever the flush returned.
            let flushed = db.flush();
            let fired = fs.mutating_ops() > start + k;
            assert!(
                fired || flushed.is_ok(),
                "{ctx}: {flushed:?} without the fault"
            );
            if fired {
                let again = tables[1].delete(b"key00001");
                assert!(
                    matches!(again, Err(Error::ReadOnly { .. })),
                    "{ctx}: write after the fault (the flush returned {flushed:?}) returned {again:?}"
                );
            }
            check_scans(&ctx, &tables, &model);
            drop_within_seconds(db, tables, &ctx);
            let db = Db::open(DB, opts).unwrap_or_else(|e| panic!("{ctx}: reopen: {e}"));
            assert!(
                read_all(&db, &TABLES, &ctx) == model,
                "{ctx}: recovered state differs"
            );
            db.verify().unwrap_or_else(|e| panic!("{ctx}: verify: {e}"));
        }
    }
}

#[test]
fn eio_at_the_manifest_sync_of_a_flush_keeps_the_flushed_sst() {
    // Goal: pin one case of the sweep above. When the manifest sync that
    // installs a flushed SST fails with EIO, the record's bytes are already
    // in the manifest file; the SST it names must therefore not be deleted,
    // or the next open (no crash needed) names a file that is gone. A
    // B-tree table's checkpoint is recorded in the manifest too, after its
    // header: the same EIO must leave an image the next open accepts.
    let batches = some_batches(16, 20);
    for (kind, table) in kinds() {
        for k in 0.. {
            let fs = FaultFs::new();
            let opts = options(&fs, Durability::Full);
            let db = Db::open(DB, opts.clone()).expect("open");
            let tables = open_tables(&db, &table);
            let mut model = vec![State::new(); 2];
            write_acknowledged(&db, &tables, &mut model, &batches);
            fs.inject(k, FaultKind::Eio);
            let error = match db.flush() {
                Ok(()) => panic!("{kind}: the flush never synced the manifest"),
                Err(e) => e.to_string(),
            };
            if !(error.contains("sync") && error.contains("MANIFEST")) {
                continue;
            }
            drop_within_seconds(db, tables, "flush");
            let ctx = format!("{kind}: EIO at op {k} of a flush: {error}");
            let db = Db::open(DB, opts).unwrap_or_else(|e| panic!("{ctx}; reopen: {e}"));
            assert!(
                read_all(&db, &TABLES, &ctx) == model,
                "{ctx}: reopened state differs"
            );
            break;
        }
    }
}

// ---------------------------------------------------------------------------
// Flushes and compactions of LSM tables of each compaction style.

fn compaction(style: CompactionStyle) -> CompactionOptions {
    let base = match style {
        CompactionStyle::Leveled => CompactionOptions::leveled(),
        CompactionStyle::Tiered => CompactionOptions::tiered(),
    };
    CompactionOptions {
        l0_trigger: 4,
        level_base_bytes: 128 << 10,
        target_file_size: 64 << 10,
        ..base
    }
}

/// 256 KiB buffers: a round of writes between two flushes (about 70 KB)
/// never fills one, so only the test's flushes make L0 runs. Output files
/// are cut at 64 KiB, so a merge writes several.
fn table_options(style: CompactionStyle) -> TableOptions {
    TableOptions {
        write_buffer_size: 256 << 10,
        compaction: compaction(style),
        ..TableOptions::default()
    }
}

/// Nothing runs unless the test runs it; every commit is synced.
fn quiet_options(fs: &Arc<FaultFs>) -> Options {
    Options {
        durability: Durability::Full,
        background_threads: 0,
        autowork: false,
        fs: fs.clone(),
        ..Options::default()
    }
}

/// One round of writes: 600 puts and deletes over 2,000 keys, so that
/// rounds overwrite and delete each other's keys, and a range delete of a
/// few dozen keys amid them (tombstones in the memtables, the manifest and
/// compactions' decisions).
fn write_round(db: &Db, table: &Table, model: &mut State, rng: &mut StdRng) {
    let mut batch = WriteBatch::new();
    for n in 0..600 {
        if n == 300 {
            let a = rng.gen_range(0..2000u32);
            let (lo, hi) = (
                format!("key{a:05}").into_bytes(),
                format!("key{:05}", a + rng.gen_range(1..60)).into_bytes(),
            );
            batch.delete_range(table, lo.clone()..hi.clone());
            let doomed: Vec<Vec<u8>> = model.range(lo..hi).map(|(k, _)| k.clone()).collect();
            for k in doomed {
                model.remove(&k);
            }
        }
        let key = format!("key{:05}", rng.gen_range(0..2000u32)).into_bytes();
        if rng.gen_bool(0.2) {
            batch.delete(table, &key);
            model.remove(&key);
        } else {
            let mut value = vec![rng.gen::<u8>(); rng.gen_range(40..160)];
            value.extend_from_slice(&rng.gen::<u64>().to_le_bytes());
            batch.put(table, &key, &value);
            model.insert(key, value);
        }
        if n % 100 == 99 {
            db.write(std::mem::take(&mut batch)).expect("write");
        }
    }
    db.write(batch).expect("write");
}

/// The operation a crash is injected into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operation {
    /// `compact_level(0)` of the first table, whose L0 holds 4 runs (its trigger)
    /// over a deeper level.
    CompactL0,
    /// `compact_all` of the first table: a flush of its memtable, then every file
    /// (L0 runs and the deeper level) merged into the last level.
    CompactAll,
    /// `Db::flush`: both tables' memtables to L0 runs.
    Flush,
}

struct Built {
    db: Db,
    tables: Vec<Table>,
    models: Vec<State>,
}

/// Builds the same pre-operation state every time: the first table (of `style`)
/// has had 4 flushed rounds compacted out of L0, then 4 more flushed
/// rounds (L0 at its trigger); the second has one flushed round. For
/// `CompactAll` and `Flush`, a further round sits in the memtables.
fn build(fs: &Arc<FaultFs>, style: CompactionStyle, op: Operation) -> Built {
    let db = Db::open(DB, quiet_options(fs)).expect("open");
    let tables: Vec<Table> = TABLES
        .iter()
        .map(|name| {
            db.create_table(name, table_options(style))
                .expect("create table")
        })
        .collect();
    let mut models = vec![State::new(); 2];
    let mut rng = StdRng::seed_from_u64(42);
    for round in 0..8 {
        write_round(&db, &tables[0], &mut models[0], &mut rng);
        tables[0].flush().expect("flush");
        if round == 3 {
            tables[0].compact_level(0).expect("compact L0");
        }
    }
    write_round(&db, &tables[1], &mut models[1], &mut rng);
    tables[1].flush().expect("flush");
    if op != Operation::CompactL0 {
        write_round(&db, &tables[0], &mut models[0], &mut rng);
    }
    if op == Operation::Flush {
        write_round(&db, &tables[1], &mut models[1], &mut rng);
    }
    let shape = tables[0].shape().expect("shape");
    assert_eq!(shape.l0_runs, 4, "pre-operation state: {shape:?}");
    assert!(
        shape.levels.iter().any(|l| l.files > 1),
        "pre-operation state has no multi-file level: {shape:?}"
    );
    Built { db, tables, models }
}

fn perform(op: Operation, built: &Built) -> spinney::Result<()> {
    match op {
        Operation::CompactL0 => built.tables[0].compact_level(0),
        Operation::CompactAll => built.tables[0].compact_all(),
        Operation::Flush => built.db.flush(),
    }
}

/// Reopens after a crash and checks everything the module comment promises.
fn check_recovery(ctx: &str, fs: &Arc<FaultFs>, models: &[State], pending: PendingWrites) {
    let db = reopen_after_crash(ctx, pending, &quiet_options(fs));
    check_recovered(ctx, &db, &TABLES, models);
    check_files(&format!("{ctx}, after recovery"), fs, &db, &TABLES, 0);

    // The recovered state compacts, and survives another reopen.
    for name in TABLES {
        db.table(name)
            .and_then(|t| t.compact_all())
            .unwrap_or_else(|e| panic!("{ctx}: compact_all of {name} after recovery: {e}"));
    }
    assert!(
        read_all(&db, &TABLES, ctx) == models,
        "{ctx}: compaction after recovery changed the data"
    );
    check_files(
        &format!("{ctx}, compacted after recovery"),
        fs,
        &db,
        &TABLES,
        0,
    );
    db.close()
        .unwrap_or_else(|e| panic!("{ctx}: close after recovery: {e}"));
    let db =
        Db::open(DB, quiet_options(fs)).unwrap_or_else(|e| panic!("{ctx}: second reopen: {e}"));
    assert!(
        read_all(&db, &TABLES, ctx) == models,
        "{ctx}: second reopen differs"
    );
    db.verify()
        .unwrap_or_else(|e| panic!("{ctx}: verify after second reopen: {e}"));
}

/// Crashes `op` at each of its mutating file operations in turn; returns
/// how many there were.
fn crash_at_every_operation(style: CompactionStyle, op: Operation) -> u64 {
    let span = {
        let fs = FaultFs::new();
        let built = build(&fs, style, op);
        let start = fs.mutating_ops();
        perform(op, &built).expect("dry run");
        let span = fs.mutating_ops() - start;
        // The dry run did what the operation promises.
        let shape = built.tables[0].shape().expect("shape");
        match op {
            Operation::CompactL0 => assert_eq!(shape.l0_runs, 0, "{shape:?}"),
            Operation::CompactAll => assert!(
                shape.l0_runs == 0 && shape.levels.iter().all(|l| (l.level == 6) == (l.files > 0)),
                "{shape:?}"
            ),
            Operation::Flush => assert_eq!(shape.l0_runs, 5, "{shape:?}"),
        }
        assert_eq!(
            built.db.stats().compactions,
            1 + u64::from(op != Operation::Flush),
            "{style:?} {op:?}: compactions the dry run counted"
        );
        let Built { db, tables, models } = built;
        drop(tables);
        db.close().expect("close after the dry run");
        check_recovery(
            &format!("{style:?} {op:?}, no crash"),
            &fs,
            &models,
            PendingWrites::Lost,
        );
        span
    };
    assert!(span >= 8, "{style:?} {op:?} took only {span} operations");
    for (k, pending) in (0..span).flat_map(|k| each_way(k).map(|p| (k, p))) {
        let ctx = format!("{style:?} {op:?}: crash at op {k} of {span}, {pending:?}");
        let fs = FaultFs::new();
        let built = build(&fs, style, op);
        fs.inject(k, FaultKind::Crash);
        // Crashes in the deletions of obsolete files, after the manifest
        // sync, fail no call: the operation may report success.
        let _ = perform(op, &built);
        assert!(
            fs.is_crashed(),
            "{ctx}: the crash did not happen inside the operation"
        );
        let Built { db, tables, models } = built;
        drop(tables);
        drop(db);
        fs.crash_with(pending);
        check_recovery(&ctx, &fs, &models, pending);
    }
    span
}

/// `compact_level(0)` of a leveled table (dynamic level sizing): 4 L0 runs
/// merged with the overlapping files of its base level. A crash at any of
/// its file operations keeps exactly the pre-compaction data and leaves no
/// orphan after recovery.
#[test]
fn crash_at_every_operation_of_compact_level_0_leveled() {
    crash_at_every_operation(CompactionStyle::Leveled, Operation::CompactL0);
}

/// `compact_level(0)` of a tiered table: 4 L0 runs merged into L1 with the
/// run already there. Same checks as the leveled case.
#[test]
fn crash_at_every_operation_of_compact_level_0_tiered() {
    crash_at_every_operation(CompactionStyle::Tiered, Operation::CompactL0);
}

/// `compact_all` of a leveled table: its flush, then one merge of every
/// file into L6. A crash in either part keeps the data, the unflushed round
/// included (it was synced to the log), and leaves no orphan.
#[test]
fn crash_at_every_operation_of_compact_all_leveled() {
    crash_at_every_operation(CompactionStyle::Leveled, Operation::CompactAll);
}

/// `compact_all` of a tiered table; as for the leveled one.
#[test]
fn crash_at_every_operation_of_compact_all_tiered() {
    crash_at_every_operation(CompactionStyle::Tiered, Operation::CompactAll);
}

/// `Db::flush` of two leveled tables with data in their memtables: a crash
/// between the SST writes, the directory sync, the log sync and the
/// manifest edit of either table keeps every synced commit exactly once and
/// leaves no half-flushed SST behind after recovery.
#[test]
fn crash_at_every_operation_of_a_flush_leveled() {
    crash_at_every_operation(CompactionStyle::Leveled, Operation::Flush);
}

/// `Db::flush` of two tiered tables; as for the leveled ones.
#[test]
fn crash_at_every_operation_of_a_flush_tiered() {
    crash_at_every_operation(CompactionStyle::Tiered, Operation::Flush);
}

// ---------------------------------------------------------------------------
// Background compactions under a write load.

/// Options for the background load: two threads, small write buffers and
/// an L0 trigger of 2, so flushes and compactions of both tables run
/// throughout.
fn busy_options(fs: &Arc<FaultFs>) -> Options {
    Options {
        durability: Durability::Full,
        background_threads: 2,
        fs: fs.clone(),
        ..Options::default()
    }
}

fn busy_table(style: CompactionStyle) -> TableOptions {
    TableOptions {
        write_buffer_size: 64 << 10,
        compaction: CompactionOptions {
            l0_trigger: 2,
            ..compaction(style)
        },
        ..TableOptions::default()
    }
}

fn load(seed: u64, batches: usize) -> Vec<Batch> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..batches)
        .map(|_| {
            (0..rng.gen_range(1..40))
                .map(|_| {
                    let table = rng.gen_range(0..2);
                    let n = rng.gen_range(0..3000);
                    let (key, change) =
                        random_change(&mut rng, n, 3000, 1, 14, |rng| value(rng, 20..200));
                    (table, key, change)
                })
                .collect()
        })
        .collect()
}

fn open_busy(fs: &Arc<FaultFs>) -> (Db, Vec<Table>) {
    let db = Db::open(DB, busy_options(fs)).expect("open");
    let styles = [CompactionStyle::Leveled, CompactionStyle::Tiered];
    let tables = TABLES
        .iter()
        .zip(styles)
        .map(|(name, style)| db.create_table(name, busy_table(style)).expect("create"))
        .collect();
    (db, tables)
}

/// Commits `batches` until the first error; returns how many were
/// acknowledged.
fn run_load(db: &Db, tables: &[Table], batches: &[Batch]) -> usize {
    for (n, b) in batches.iter().enumerate() {
        if db.write(write_batch(tables, b)).is_err() {
            return n;
        }
    }
    batches.len()
}

#[test]
fn crashes_during_background_compactions_keep_every_acknowledged_batch() {
    // Goal: crashes that land in background flushes and compactions of
    // both styles (two threads, running while the writer commits) lose no
    // acknowledged Full commit, and recovery leaves no orphan file.
    // Method: a dry run counts the load's mutating operations and checks
    // that both tables were compacted; then crashes at 40 points spread
    // over that count. The writer is single, so the recovered state must
    // be the model after the acknowledged batches, or after one more (the
    // batch in flight may have reached the log). The reopen has no
    // background thread, so the directory is at rest when it is checked.
    let batches = load(7, 500);
    let span = {
        let fs = FaultFs::new();
        let (db, tables) = open_busy(&fs);
        let start = fs.mutating_ops();
        assert_eq!(run_load(&db, &tables, &batches), batches.len(), "dry run");
        db.wait_for_compaction().expect("wait");
        let span = fs.mutating_ops() - start;
        let stats = db.stats();
        for t in &stats.tables {
            assert!(
                t.compactions > 0,
                "the load never compacted table {}: {t:?}",
                t.name
            );
        }
        drop_within_seconds(db, tables, "dry run");
        span
    };
    let points = 40;
    let mut rng = StdRng::seed_from_u64(8);
    let mut died = 0;
    for point in 0..points {
        let k = span * point / points + rng.gen_range(0..span / points);
        let pending = PendingWrites::nth(point, rng.gen());
        let ctx = format!("background load: crash at op {k} of about {span}, {pending:?}");
        let fs = FaultFs::new();
        let (db, tables) = open_busy(&fs);
        fs.inject(k, FaultKind::Crash);
        let acknowledged = run_load(&db, &tables, &batches);
        drop_within_seconds(db, tables, &ctx);
        died += usize::from(fs.is_crashed());
        fs.crash_with(pending);

        let db = reopen_after_crash(&ctx, pending, &quiet_options(&fs));
        let state = read_all(&db, &TABLES, &ctx);
        let mut model = vec![State::new(); 2];
        for b in &batches[..acknowledged] {
            apply(&mut model, b);
        }
        let mut with_next = model.clone();
        if let Some(b) = batches.get(acknowledged) {
            apply(&mut with_next, b);
        }
        assert!(
            state == model || state == with_next,
            "{ctx}: recovered state is not the {acknowledged} acknowledged batches (or one more)"
        );
        db.verify()
            .unwrap_or_else(|e| panic!("{ctx}: verify after recovery: {e}"));
        check_files(&ctx, &fs, &db, &TABLES, 0);
    }
    // The span varies with thread timing, so a late point may miss.
    assert!(
        died * 4 >= points as usize * 3,
        "only {died} of {points} runs met their crash"
    );
}
