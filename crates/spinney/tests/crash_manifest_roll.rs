//! Crashes and I/O errors in the changes of the catalog and in the
//! manifest roll, on the fault-injecting file system.
//!
//! Goal: a crash in `create_table` leaves the catalog whole, and a crash or
//! an I/O error at any step of a roll (the running database moving to a
//! new manifest, beginning with the whole state, once the live one reaches
//! `max_manifest_size`) leaves a database that opens to the acknowledged
//! state.
//!
//! Method: a database in a fixed state; a dry run counts the mutating file
//! operations of the change; then the change with a crash (or EIO) at each
//! of them in turn, a reopen, and a comparison with the `BTreeMap` model.
//! The catalog holds tables of both kinds the same way, so each change
//! that creates a table runs once for an LSM and once for a B-tree table.
//! The roll without faults is in `manifest_roll.rs`.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::files::manifests_in;
use common::model::State;
use common::two_tables::options;
use common::{drop_within_seconds, each_way, kinds, lsm_table, read_table, reopen_after_crash, DB};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use spinney::fs::{FaultFs, FaultKind};
use spinney::{Db, Durability, Error, Options, TableOptions, WriteBatch};

/// The smallest `max_manifest_size` the database accepts.
const MAX_MANIFEST: u64 = spinney::limits::MANIFEST_BYTES_MIN;

#[test]
fn crash_at_every_operation_of_create_table_leaves_the_catalog_whole() {
    // Goal: a crash in `create_table` leaves the existing table and its data
    // untouched, and the new table either absent or present and empty;
    // either way the database takes the table and writes afterwards.
    // Method: beside an LSM table, the creation of an LSM table and of a
    // B-tree table (which also creates its file), each crashed at every
    // one of its operations in turn.
    for (kind, table) in kinds() {
        let fs = FaultFs::new();
        let db = Db::open(DB, options(&fs, Durability::Full)).expect("open");
        db.create_table("first", lsm_table()).expect("create");
        let start = fs.mutating_ops();
        db.create_table("second", table.clone()).expect("create");
        let span = fs.mutating_ops() - start;
        drop(db);
        assert!(span > 0);
        for (k, pending) in (0..span).flat_map(|k| each_way(k).map(|p| (k, p))) {
            let ctx = format!("{kind}: create_table crash after {k} of {span} ops, {pending:?}");
            let fs = FaultFs::new();
            let opts = options(&fs, Durability::Full);
            let db = Db::open(DB, opts.clone()).expect("open");
            let first = db.create_table("first", lsm_table()).expect("create first");
            first.put(b"k", b"v").expect("put");
            fs.inject(k, FaultKind::Crash);
            assert!(db.create_table("second", table.clone()).is_err(), "{ctx}");
            drop_within_seconds(db, first, &ctx);
            fs.crash_with(pending);

            let db = reopen_after_crash(&ctx, pending, &opts);
            let first = db.table("first").expect("first survives");
            assert_eq!(first.get(b"k").expect("get"), Some(b"v".to_vec()), "{ctx}");
            let second = match db.table("second") {
                Ok(t) => {
                    assert_eq!(read_table(&t).expect("scan"), State::new(), "{ctx}");
                    t
                }
                Err(Error::NoSuchTable(_)) => db
                    .create_table("second", table.clone())
                    .unwrap_or_else(|e| panic!("{ctx}: create after crash: {e}")),
                Err(e) => panic!("{ctx}: table lookup: {e}"),
            };
            let info = db.tables().into_iter().find(|t| t.name == "second");
            assert_eq!(info.map(|t| t.options.kind), Some(table.kind), "{ctx}");
            second.put(b"x", b"y").expect("put after crash");
            db.verify().unwrap_or_else(|e| panic!("{ctx}: verify: {e}"));
            // Table handles keep the database (and its lock) alive.
            drop((first, second));
            db.close().expect("close");
            let db = Db::open(DB, opts).unwrap_or_else(|e| panic!("{ctx}: second reopen: {e}"));
            let second = db.table("second").expect("second");
            assert_eq!(second.get(b"x").expect("get"), Some(b"y".to_vec()), "{ctx}");
        }
    }
}

// ---------------------------------------------------------------------------
// The manifest roll.

fn fault_options(fs: &Arc<FaultFs>) -> Options {
    Options {
        durability: Durability::Full,
        max_manifest_size: MAX_MANIFEST,
        // Several log segments, so that the log number of the roll's
        // whole-state record matters.
        wal_segment_size: 32 << 10,
        fs: fs.clone(),
        ..Options::default()
    }
}

fn manifest_path(fs: &FaultFs) -> PathBuf {
    let manifests = manifests_in(
        fs.files()
            .iter()
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned())),
    );
    assert_eq!(manifests.len(), 1, "{manifests:?}");
    Path::new(DB).join(&manifests[0])
}

/// What changes the manifest once it is at the limit, so that its edit is
/// logged by a roll.
#[derive(Debug, Clone, Copy)]
enum Trigger {
    /// `create_table("c")`: the roll is its only file work.
    CreateTable,
    /// `create_table("c")` of a B-tree table: the roll, and the table's
    /// file. (The other triggers are of LSM tables: the catalog holds both
    /// kinds alike, and a B-tree table has no flush or compaction of its
    /// own in the manifest beyond its checkpoint record.)
    CreateBtreeTable,
    /// `Table::flush` of "b", whose entries sit in closed log segments: an SST,
    /// a log sync, and the roll.
    FlushB,
    /// `Table::compact_all` of "a": moves of its one SST down the levels,
    /// each a manifest edit, the first of them a roll.
    CompactA,
}

impl Trigger {
    fn run(self, db: &Db) -> spinney::Result<()> {
        match self {
            Trigger::CreateTable => db.create_table("c", TableOptions::default()).map(drop),
            Trigger::CreateBtreeTable => db.create_table("c", TableOptions::btree()).map(drop),
            Trigger::FlushB => db.table("b")?.flush(),
            Trigger::CompactA => db.table("a")?.compact_all(),
        }
    }
}

/// A database whose next manifest edit rolls the manifest: tables "a"
/// (flushed to one SST) and "b" (only in the log, over several segments,
/// some closed), and a manifest at the limit, grown by creating and
/// dropping tables. Nothing runs in the background: no memtable fills and
/// L0 holds one run.
fn at_the_limit(fs: &Arc<FaultFs>) -> (Db, Expected) {
    let db = Db::open(DB, fault_options(fs)).expect("open");
    let tables = ["a", "b"].map(|n| db.create_table(n, TableOptions::default()).expect("create"));
    let mut model: [State; 2] = Default::default();
    let mut rng = StdRng::seed_from_u64(7);
    for i in 0..300u32 {
        let mut batch = WriteBatch::new();
        for _ in 0..3 {
            let t = rng.gen_range(0..2);
            let key = format!("key{:05}", rng.gen_range(0..2000u32)).into_bytes();
            let value = vec![(i % 251) as u8; rng.gen_range(50..200)];
            batch.put(&tables[t], &key, &value);
            model[t].insert(key, value);
        }
        db.write(batch).expect("write");
    }
    tables[0].flush().expect("flush a");
    drop(tables);
    // Every edit below is logged while the manifest is under the limit, so
    // none rolls it; the last creation may leave its table behind.
    let manifest = manifest_path(fs);
    let full = || fs.file_len(&manifest).expect("manifest length") >= MAX_MANIFEST;
    let mut pad = None;
    for n in 0.. {
        if full() {
            break;
        }
        let name = format!("pad{n}");
        db.create_table(&name, TableOptions::default())
            .expect("create pad");
        if full() {
            pad = Some(name);
            break;
        }
        db.drop_table(&name).expect("drop pad");
    }
    assert_eq!(db.stats().manifest_rolls, 0, "rolled before the trigger");
    assert_eq!(manifest_path(fs), manifest, "rolled before the trigger");
    (db, Expected { data: model, pad })
}

/// What a database built by `at_the_limit` holds.
struct Expected {
    /// The contents of "a" and "b".
    data: [State; 2],
    /// The empty table the padding left behind, if it did.
    pad: Option<String>,
}

/// After recovery: "a" and "b" hold the model, "c" is absent or empty (and
/// present if its creation was acknowledged), nothing else exists but the
/// pad table, and the files check out.
fn check_recovered(db: &Db, expected: &Expected, trigger: Trigger, acknowledged: bool, ctx: &str) {
    for (name, state) in ["a", "b"].iter().zip(&expected.data) {
        let table = db
            .table(name)
            .unwrap_or_else(|e| panic!("{ctx}: table {name}: {e}"));
        let seen = read_table(&table).unwrap_or_else(|e| panic!("{ctx}: scan {name}: {e}"));
        assert!(seen == *state, "{ctx}: table {name} differs from the model");
    }
    let names: BTreeSet<String> = db.tables().into_iter().map(|t| t.name).collect();
    let c = names.contains("c");
    let mut want: BTreeSet<String> = ["a", "b"].iter().map(|s| s.to_string()).collect();
    want.extend(expected.pad.clone());
    if c {
        want.insert("c".into());
    }
    assert_eq!(names, want, "{ctx}: tables");
    if c {
        let t = db.table("c").expect("c");
        assert_eq!(read_table(&t).expect("scan c"), State::new(), "{ctx}");
    } else {
        assert!(
            !(acknowledged && matches!(trigger, Trigger::CreateTable | Trigger::CreateBtreeTable)),
            "{ctx}: acknowledged table c is gone"
        );
    }
    db.verify()
        .unwrap_or_else(|e| panic!("{ctx}: verify after recovery: {e}"));
}

/// The mutating file operations of `trigger` on a database at the limit,
/// checking on the way that it rolls the manifest.
fn ops_of(trigger: Trigger) -> u64 {
    let fs = FaultFs::new();
    let (db, _) = at_the_limit(&fs);
    let before = manifest_path(&fs);
    let start = fs.mutating_ops();
    trigger.run(&db).expect("dry run");
    let span = fs.mutating_ops() - start;
    assert_eq!(db.stats().manifest_rolls, 1, "{trigger:?} did not roll");
    assert_ne!(manifest_path(&fs), before, "{trigger:?}: old manifest kept");
    drop_within_seconds(db, (), "dry run");
    span
}

const TRIGGERS: [Trigger; 4] = [
    Trigger::CreateTable,
    Trigger::CreateBtreeTable,
    Trigger::FlushB,
    Trigger::CompactA,
];

#[test]
fn crash_at_every_operation_of_a_manifest_roll_recovers_the_acknowledged_state() {
    // Goal: the roll writes a new manifest (whole state, then the edit),
    // syncs it and the directory, writes and syncs CURRENT.tmp, renames it
    // over CURRENT, syncs the directory and deletes the old manifest. Before
    // the rename is durable the old manifest must still be live and whole;
    // after it, the new one, holding everything (the log number included:
    // "b" lives only in the log). A crash at any of these operations, with
    // or without torn unsynced tails, must reopen to the acknowledged state.
    // Method: for each trigger, a crash at each of its operations in turn.
    let (mut points, mut fired) = (0, 0);
    for trigger in TRIGGERS {
        let span = ops_of(trigger);
        assert!(span >= 10, "{trigger:?} took only {span} operations");
        for (k, pending) in (0..span).flat_map(|k| each_way(k).map(|p| (k, p))) {
            let ctx = format!("{trigger:?}, crash at op {k} of {span}, {pending:?}");
            let fs = FaultFs::new();
            let (db, expected) = at_the_limit(&fs);
            fs.inject(k, FaultKind::Crash);
            // A crash at the last operation (removing the old manifest, after
            // the switch) does not fail the change: it is durable.
            let acknowledged = trigger.run(&db).is_ok();
            fired += usize::from(fs.is_crashed());
            drop_within_seconds(db, (), &ctx);
            fs.crash_with(pending);

            let db = reopen_after_crash(&ctx, pending, &fault_options(&fs));
            check_recovered(&db, &expected, trigger, acknowledged, &ctx);
            manifest_path(&fs);
            db.close().unwrap_or_else(|e| panic!("{ctx}: close: {e}"));
            let db = Db::open(DB, fault_options(&fs))
                .unwrap_or_else(|e| panic!("{ctx}: second reopen: {e}"));
            check_recovered(&db, &expected, trigger, acknowledged, &ctx);
            points += 1;
        }
    }
    // Every crash point lies within its roll's operations (a dry run
    // counted them), so each crash must have fired during the roll.
    assert_eq!(
        fired, points,
        "only {fired} of {points} crashes fired during a roll"
    );
}

#[test]
fn eio_at_every_operation_of_a_manifest_roll_makes_the_database_read_only_and_loses_nothing() {
    // Goal: an I/O error at any operation of a roll fails the change (but
    // the removal of the old manifest, after the switch), makes the
    // database refuse writes, keeps reads working, and a reopen without a
    // crash (whichever manifest CURRENT names) has the acknowledged state.
    for trigger in TRIGGERS {
        let span = ops_of(trigger);
        let mut failed = 0;
        for k in 0..span {
            let ctx = format!("{trigger:?}, EIO at op {k} of {span}");
            let fs = FaultFs::new();
            let (db, expected) = at_the_limit(&fs);
            fs.inject(k, FaultKind::Eio);
            let acknowledged = trigger.run(&db).is_ok();
            if !acknowledged {
                failed += 1;
                let again = db.table("a").and_then(|t| t.put(b"after", b"fault"));
                match again {
                    Err(Error::ReadOnly { .. }) => {}
                    // Creating a B-tree table makes its file before it
                    // edits the manifest: an error there has changed nothing
                    // durable, and the database stays writable. The write
                    // is taken back, so that the model still holds.
                    Ok(())
                        if matches!(trigger, Trigger::CreateBtreeTable)
                            && db.stats().manifest_rolls == 0 =>
                    {
                        db.table("a")
                            .and_then(|t| t.delete(b"after"))
                            .unwrap_or_else(|e| panic!("{ctx}: delete: {e}"));
                    }
                    _ => panic!("{ctx}: write after the failure returned {again:?}"),
                }
                let table = db.table("b").expect("b");
                let seen = read_table(&table).unwrap_or_else(|e| panic!("{ctx}: scan: {e}"));
                assert!(seen == expected.data[1], "{ctx}: b differs before reopen");
            }
            drop_within_seconds(db, (), &ctx);
            let db =
                Db::open(DB, fault_options(&fs)).unwrap_or_else(|e| panic!("{ctx}: reopen: {e}"));
            check_recovered(&db, &expected, trigger, acknowledged, &ctx);
            manifest_path(&fs);
        }
        // Only the removals of files made garbage by the change (the old
        // manifest, obsolete log segments) may fail without failing it.
        assert!(
            failed >= 10,
            "{trigger:?}: only {failed} of {span} faults failed the change"
        );
    }
}
