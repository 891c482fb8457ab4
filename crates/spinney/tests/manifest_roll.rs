//! The manifest roll: a running database moves to a new manifest, beginning
//! with the whole state, once the live one reaches `max_manifest_size`.
//!
//! Goal: the manifest stays small however long the database runs, the old
//! manifests are deleted, and a crash or an I/O error at any step of a roll
//! leaves a database that opens to the acknowledged state.
//!
//! Method: a long seeded workload at the smallest `max_manifest_size`,
//! checked against a `BTreeMap` model and a size bound derived from the
//! manifest format. A crash (or EIO) at each file operation of a change
//! that rolls the manifest is in `crash_manifest_roll.rs`.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use common::files::manifests_in;
use common::model::State;
use common::{lsm_table, read_table, DB};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use spinney::fs::FaultFs;
use spinney::{Db, Error, Options, TableOptions, WriteBatch};

/// The smallest `max_manifest_size` the database accepts.
const MAX_MANIFEST: u64 = spinney::limits::MANIFEST_BYTES_MIN;

// Upper bounds, in bytes, of the manifest fields the long workload writes
// (docs/format.md#manifest). Every number it stores (file numbers, sizes,
// entry counts, seqnos, table ids) is below 2^28, so each varint takes at
// most 4 bytes; user keys are 8 bytes (16 as internal keys); table names at
// most 8 bytes; no field's payload reaches 128 bytes, so its tag and length
// take one byte each.
/// One of next_file_number, last_seqno, log_number, next_table_id.
const COUNTER: u64 = 2 + 4;
/// create_table (id, name, kind, compression, bloom bits, block size, write
/// buffer size) and its flushed_seqno field.
const TABLE: u64 = (2 + 4 + 9 + 1 + 1 + 4 + 4 + 4) + (2 + 4 + 4);
/// add_file: table, level, number, size, entries, two keys, two seqnos.
const ADD_FILE: u64 = 2 + 4 + 4 + 4 + 4 + 4 + 2 * (1 + 16) + 4 + 4;
/// delete_file: table, level, number.
const DELETE_FILE: u64 = 2 + 4 + 4 + 4;
/// Header of one fragment. Every manifest here is far below one 32 KiB
/// block, so a record is one fragment and there is no padding.
const FRAGMENT: u64 = 7;
/// Live tables the workload keeps at most (asserted).
const TABLES_MAX: u64 = 4;
/// Live SSTs over all tables the workload keeps at most (asserted).
const FILES_MAX: u64 = 24;
/// The whole-state record: four counters, every table, every file.
const SNAPSHOT_MAX: u64 = 4 * COUNTER + TABLES_MAX * TABLE + FILES_MAX * ADD_FILE;
/// The largest other edit: a compaction deletes and adds at most every file
/// (a flush, create_table or drop_table is smaller).
const EDIT_MAX: u64 = COUNTER + FILES_MAX * (ADD_FILE + DELETE_FILE);
/// The roll happens before an edit once the manifest holds
/// max(MAX_MANIFEST, 2 * whole-state record) bytes, and the whole-state
/// record stays below MAX_MANIFEST / 2 (checked below), so the manifest never
/// holds more than MAX_MANIFEST plus one framed edit.
const MANIFEST_BOUND: u64 = MAX_MANIFEST + EDIT_MAX + FRAGMENT;
const _: () = assert!(2 * (SNAPSHOT_MAX + FRAGMENT) <= MAX_MANIFEST);

/// After background work settles: one manifest, named by CURRENT, below the
/// bound; and the workload within the table and file counts the bound
/// assumes.
fn check_manifest(db: &Db, dir: &Path, ctx: &str) {
    db.wait_for_compaction()
        .unwrap_or_else(|e| panic!("{ctx}: wait: {e}"));
    let names = std::fs::read_dir(dir)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned());
    let manifests = manifests_in(names);
    assert_eq!(manifests.len(), 1, "{ctx}: manifests {manifests:?}");
    let current = std::fs::read_to_string(dir.join("CURRENT")).expect("CURRENT");
    assert_eq!(current, format!("{}\n", manifests[0]), "{ctx}");
    assert!(!dir.join("CURRENT.tmp").exists(), "{ctx}: CURRENT.tmp left");
    let len = std::fs::metadata(dir.join(&manifests[0]))
        .expect("metadata")
        .len();
    assert!(
        len <= MANIFEST_BOUND,
        "{ctx}: manifest {} holds {len} bytes, over the bound of {MANIFEST_BOUND}",
        manifests[0]
    );
    let stats = db.stats();
    let files: usize = stats
        .tables
        .iter()
        .flat_map(|t| t.levels.iter().map(|l| l.files))
        .sum();
    assert!(stats.tables.len() as u64 <= TABLES_MAX, "{ctx}: {stats}");
    assert!(files as u64 <= FILES_MAX, "{ctx}: {files} files: {stats}");
}

fn check_model(db: &Db, model: &BTreeMap<String, State>, ctx: &str) {
    let names: BTreeSet<String> = db.tables().into_iter().map(|t| t.name).collect();
    let expected: BTreeSet<String> = model.keys().cloned().collect();
    assert_eq!(names, expected, "{ctx}: tables");
    for (name, state) in model {
        let table = db.table(name).expect("table");
        let seen = read_table(&table).unwrap_or_else(|e| panic!("{ctx}: scan {name}: {e}"));
        assert!(seen == *state, "{ctx}: table {name} differs from the model");
    }
}

#[test]
fn a_long_run_at_the_smallest_manifest_size_keeps_one_small_manifest_and_all_data() {
    // Goal: with max_manifest_size at its minimum, hundreds of flushes,
    // compactions, table creations and drops keep exactly one manifest, never
    // past MANIFEST_BOUND (derived above), and the database reopens, in the
    // middle of the run and at its end, to exactly the data written.
    // Without the roll the manifest would grow past 20 KiB here.
    let dir = tempfile::tempdir().expect("tempdir");
    let options = Options {
        max_manifest_size: MAX_MANIFEST,
        ..Options::default()
    };
    let mut rng = StdRng::seed_from_u64(42);
    let mut model: BTreeMap<String, State> = BTreeMap::new();
    let mut db = Db::open(dir.path(), options.clone()).expect("open");
    db.create_table("keep", lsm_table()).expect("create");
    model.insert("keep".into(), State::new());
    let mut next_table = 0;
    let mut rolls = 0;
    for step in 0..400 {
        let ctx = format!("step {step}");
        let live: Vec<String> = model.keys().cloned().collect();
        let name = live[rng.gen_range(0..live.len())].clone();
        let table = db.table(&name).expect("table");
        // A small batch, then a flush: one flush edit per step.
        let mut batch = WriteBatch::new();
        let state = model.get_mut(&name).expect("model");
        for _ in 0..rng.gen_range(1..=12) {
            let key = format!("key{:05}", rng.gen_range(0..400u32)).into_bytes();
            if rng.gen_bool(0.2) {
                batch.delete(&table, &key);
                state.remove(&key);
            } else {
                let value = format!("{step}:{}", rng.gen::<u32>()).into_bytes();
                batch.put(&table, &key, &value);
                state.insert(key, value);
            }
        }
        db.write(batch).expect("write");
        table.flush().expect("flush");
        if step % 23 == 0 {
            table.compact_all().expect("compact_all");
        }
        drop(table);
        if step % 17 == 5 && model.len() < TABLES_MAX as usize {
            let name = format!("t{next_table}");
            next_table += 1;
            db.create_table(&name, lsm_table()).expect("create");
            model.insert(name, State::new());
        }
        if step % 29 == 11 {
            let victim = model.keys().find(|n| *n != "keep").cloned();
            if let Some(victim) = victim {
                db.drop_table(&victim).expect("drop");
                model.remove(&victim);
            }
        }
        check_manifest(&db, dir.path(), &ctx);
        if step == 200 {
            rolls += db.stats().manifest_rolls;
            db.close().expect("close");
            db = Db::open(dir.path(), options.clone()).expect("reopen");
            check_model(&db, &model, &format!("{ctx}, reopened"));
        }
    }
    check_model(&db, &model, "end");
    rolls += db.stats().manifest_rolls;
    assert!(
        db.stats().to_string().contains("manifest rolls"),
        "Stats display lacks the roll count"
    );
    // At least a hundred bytes per step reach the manifest, so 400 steps at
    // a 4 KiB limit roll it many times.
    assert!(rolls >= 8, "only {rolls} rolls");
    db.verify().expect("verify");
    db.close().expect("close");
    let db = Db::open(dir.path(), options).expect("reopen");
    check_model(&db, &model, "end, reopened");
    db.verify().expect("verify after reopen");
}

#[test]
fn max_manifest_size_below_the_minimum_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let options = Options {
        max_manifest_size: MAX_MANIFEST - 1,
        ..Options::default()
    };
    match Db::open(dir.path(), options) {
        Err(Error::InvalidArgument(detail)) => {
            assert!(detail.contains("max_manifest_size"), "{detail}")
        }
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("opened with a manifest limit below the minimum"),
    }
}

#[test]
fn a_catalog_larger_than_the_limit_is_not_rewritten_at_every_edit() {
    // Goal: when the whole-state record alone passes half of
    // max_manifest_size, the manifest rolls at twice that record's size
    // instead; otherwise every edit would rewrite the whole catalog.
    // Method: 300 tables (a whole state of about 8 KiB at a 4 KiB limit),
    // then 40 creations and drops of one more table (about 1.5 KiB of edits):
    // at most one roll. Rolling at every edit would make 80.
    let fs = FaultFs::new();
    let options = Options {
        max_manifest_size: MAX_MANIFEST,
        fs: fs.clone(),
        ..Options::default()
    };
    let db = Db::open(DB, options.clone()).expect("open");
    for i in 0..300 {
        db.create_table(&format!("big{i:03}"), TableOptions::default())
            .expect("create");
    }
    let before = db.stats().manifest_rolls;
    assert!(before >= 1, "300 tables never rolled a 4 KiB manifest");
    for _ in 0..40 {
        db.create_table("x", TableOptions::default())
            .expect("create x");
        db.drop_table("x").expect("drop x");
    }
    let rolls = db.stats().manifest_rolls - before;
    assert!(rolls <= 1, "{rolls} rolls for 80 small edits");
    db.close().expect("close");
    let db = Db::open(DB, options).expect("reopen");
    assert_eq!(db.tables().len(), 300);
}
