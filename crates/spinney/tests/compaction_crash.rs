//! Crashes during compaction, on the fault-injecting file system.
//!
//! Goal: whatever mutating file operation of a compaction (or of the flush
//! before it) the machine dies at, the database reopens with exactly the
//! data it had — everything was synced before the operation began, so
//! nothing may be lost and nothing dropped by the compaction may come back
//! — `verify` passes, and recovery leaves no orphan: every `.sst` in the
//! directory belongs to some table's shape, there is one `MANIFEST-*`, one
//! log segment (the one recovery started), and nothing else but `CURRENT`
//! and `LOCK`.
//!
//! Method, for each compaction style and each of `compact_level(0)`,
//! `compact_all` and `Db::flush`: a deterministic pre-operation state is
//! built (no background thread, no autowork, `Full` durability: the same
//! file operations every time); a dry run counts the operation's mutating
//! file operations; then, for each of them in turn, the state is built
//! afresh, a `FaultKind::Crash` is injected at that operation, the operation
//! runs, and `FaultFs::crash` rolls the files back to what was synced
//! (alternately with and without torn tails). The reopened database is
//! compared with a `BTreeMap` model, then compacted fully and reopened once
//! more, to show the recovered state is one the engine can keep working on.
//!
//! A last test runs a write load with two background threads that flush and
//! compact both styles of table as it goes, and crashes it at spread points:
//! every acknowledged `Full` commit must survive.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use spinney::fs::{FaultFs, FaultKind};
use spinney::{
    CompactionOptions, CompactionStyle, Db, Durability, Options, Table, TableOptions, WriteBatch,
};

const DB: &str = "/db";
const TABLES: [&str; 2] = ["a", "b"];

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

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
/// rounds overwrite and delete each other's keys.
fn write_round(db: &Db, table: &Table, model: &mut Model, rng: &mut StdRng) {
    let mut batch = WriteBatch::new();
    for n in 0..600 {
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
    /// `compact_level(0)` of table "a", whose L0 holds 4 runs (its trigger)
    /// over a deeper level.
    CompactL0,
    /// `compact_all` of table "a": a flush of its memtable, then every file
    /// (L0 runs and the deeper level) merged into the last level.
    CompactAll,
    /// `Db::flush`: both tables' memtables to L0 runs.
    Flush,
}

struct Built {
    db: Db,
    tables: [Table; 2],
    models: [Model; 2],
}

/// Builds the same pre-operation state every time: table "a" (of `style`)
/// has had 4 flushed rounds compacted out of L0, then 4 more flushed
/// rounds (L0 at its trigger); table "b" has one flushed round. For
/// `CompactAll` and `Flush`, a further round sits in the memtables.
fn build(fs: &Arc<FaultFs>, style: CompactionStyle, op: Operation) -> Built {
    let db = Db::open(DB, quiet_options(fs)).expect("open");
    let tables = TABLES.map(|name| {
        db.create_table(name, table_options(style))
            .expect("create table")
    });
    let mut models: [Model; 2] = Default::default();
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

fn read_table(table: &Table) -> spinney::Result<Model> {
    table.iter()?.collect()
}

fn read_all(db: &Db, ctx: &str) -> [Model; 2] {
    TABLES.map(|name| {
        let table = db
            .table(name)
            .unwrap_or_else(|e| panic!("{ctx}: table {name}: {e}"));
        read_table(&table).unwrap_or_else(|e| panic!("{ctx}: scan of {name}: {e}"))
    })
}

/// Checks that the directory holds exactly the files of a database at rest:
/// the SSTs its tables' shapes count, one manifest, one log segment,
/// CURRENT and LOCK.
fn check_no_orphans(ctx: &str, fs: &FaultFs, db: &Db) {
    let mut shape_files = 0;
    for name in TABLES {
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
    let ssts = count(&|n| n.ends_with(".sst"));
    let manifests = count(&|n| n.starts_with("MANIFEST-"));
    let wals = count(&|n| n.ends_with(".wal"));
    let others: Vec<&String> = names
        .iter()
        .filter(|n| {
            !(n.ends_with(".sst")
                || n.ends_with(".wal")
                || n.starts_with("MANIFEST-")
                || *n == "CURRENT"
                || *n == "LOCK")
        })
        .collect();
    assert_eq!(
        ssts, shape_files,
        "{ctx}: {ssts} .sst files but the shapes count {shape_files}: {names:?}"
    );
    assert_eq!(manifests, 1, "{ctx}: manifests: {names:?}");
    assert_eq!(wals, 1, "{ctx}: log segments: {names:?}");
    assert!(others.is_empty(), "{ctx}: unexpected files {others:?}");
}

/// Reopens after a crash and checks everything the module comment promises.
fn check_recovery(ctx: &str, fs: &Arc<FaultFs>, models: &[Model; 2]) {
    let db = Db::open(DB, quiet_options(fs)).unwrap_or_else(|e| panic!("{ctx}: reopen: {e}"));
    let state = read_all(&db, ctx);
    for (i, name) in TABLES.iter().enumerate() {
        assert!(
            state[i] == models[i],
            "{ctx}: table {name} recovered {} entries, the model has {}",
            state[i].len(),
            models[i].len()
        );
    }
    db.verify()
        .unwrap_or_else(|e| panic!("{ctx}: verify after recovery: {e}"));
    check_no_orphans(&format!("{ctx}, after recovery"), fs, &db);

    // The recovered state compacts, and survives another reopen.
    for name in TABLES {
        db.table(name)
            .and_then(|t| t.compact_all())
            .unwrap_or_else(|e| panic!("{ctx}: compact_all of {name} after recovery: {e}"));
    }
    assert!(
        read_all(&db, ctx) == *models,
        "{ctx}: compaction after recovery changed the data"
    );
    check_no_orphans(&format!("{ctx}, compacted after recovery"), fs, &db);
    db.close()
        .unwrap_or_else(|e| panic!("{ctx}: close after recovery: {e}"));
    let db =
        Db::open(DB, quiet_options(fs)).unwrap_or_else(|e| panic!("{ctx}: second reopen: {e}"));
    assert!(
        read_all(&db, ctx) == *models,
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
        check_recovery(&format!("{style:?} {op:?}, no crash"), &fs, &models);
        span
    };
    assert!(span >= 8, "{style:?} {op:?} took only {span} operations");
    for k in 0..span {
        let tear = (k % 2 == 0).then_some(k);
        let ctx = format!("{style:?} {op:?}: crash at op {k} of {span}, tear {tear:?}");
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
        fs.crash(tear);
        check_recovery(&ctx, &fs, &models);
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

/// A batch of the load: (table, key, value or None for a delete).
type Batch = Vec<(usize, Vec<u8>, Option<Vec<u8>>)>;

fn load(seed: u64, batches: usize) -> Vec<Batch> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..batches)
        .map(|_| {
            (0..rng.gen_range(1..40))
                .map(|_| {
                    let table = rng.gen_range(0..2);
                    let key = format!("key{:05}", rng.gen_range(0..3000u32)).into_bytes();
                    let value = (!rng.gen_bool(0.15)).then(|| {
                        let mut v = vec![rng.gen::<u8>(); rng.gen_range(20..200)];
                        v.extend_from_slice(&rng.gen::<u64>().to_le_bytes());
                        v
                    });
                    (table, key, value)
                })
                .collect()
        })
        .collect()
}

fn apply(models: &mut [Model; 2], batch: &Batch) {
    for (table, key, value) in batch {
        match value {
            Some(v) => models[*table].insert(key.clone(), v.clone()),
            None => models[*table].remove(key),
        };
    }
}

fn open_busy(fs: &Arc<FaultFs>) -> (Db, [Table; 2]) {
    let db = Db::open(DB, busy_options(fs)).expect("open");
    let styles = [CompactionStyle::Leveled, CompactionStyle::Tiered];
    let tables = [0, 1].map(|i| {
        db.create_table(TABLES[i], busy_table(styles[i]))
            .expect("create")
    });
    (db, tables)
}

/// Commits `batches` until the first error; returns how many were
/// acknowledged.
fn run_load(db: &Db, tables: &[Table; 2], batches: &[Batch]) -> usize {
    for (n, b) in batches.iter().enumerate() {
        let mut batch = WriteBatch::new();
        for (table, key, value) in b {
            match value {
                Some(v) => batch.put(&tables[*table], key, v),
                None => batch.delete(&tables[*table], key),
            }
        }
        if db.write(batch).is_err() {
            return n;
        }
    }
    batches.len()
}

/// Lets the background work end (it may meet the crash: a crash can come
/// at any time, not only during a commit), then drops `db`; on another
/// thread, failing the test if either hangs.
fn wait_and_drop_within_seconds(db: Db, tables: [Table; 2], ctx: &str) {
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
        wait_and_drop_within_seconds(db, tables, "dry run");
        span
    };
    let points = 40;
    let mut rng = StdRng::seed_from_u64(8);
    let mut died = 0;
    for point in 0..points {
        let k = span * point / points + rng.gen_range(0..span / points);
        let tear = (point % 2 == 0).then(|| rng.gen());
        let ctx = format!("background load: crash at op {k} of about {span}, tear {tear:?}");
        let fs = FaultFs::new();
        let (db, tables) = open_busy(&fs);
        fs.inject(k, FaultKind::Crash);
        let acknowledged = run_load(&db, &tables, &batches);
        wait_and_drop_within_seconds(db, tables, &ctx);
        died += usize::from(fs.is_crashed());
        fs.crash(tear);

        let db = Db::open(DB, quiet_options(&fs)).unwrap_or_else(|e| panic!("{ctx}: reopen: {e}"));
        let state = read_all(&db, &ctx);
        let mut model: [Model; 2] = Default::default();
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
        check_no_orphans(&ctx, &fs, &db);
    }
    // The span varies with thread timing, so a late point may miss.
    assert!(
        died * 4 >= points as usize * 3,
        "only {died} of {points} runs met their crash"
    );
}
