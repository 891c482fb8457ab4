//! Keys and values at the sizes where encodings change (0, 1, 2^16 - 1,
//! 2^16, 2^16 + 1, each kind's largest key, the largest value), through
//! every path that moves them: the log and its recovery after a crash, an
//! LSM flush and compaction, a B-tree checkpoint (inline cells and overflow
//! runs) and `compact_all`, and a clean reopen. Sizes past a limit are
//! refused at the call with `InvalidArgument`, and nothing of their batch
//! is applied.
//!
//! Every phase is checked against a model, entry by entry (`get`) and as a
//! whole (a scan), and with `verify`.

mod common;

use std::sync::Arc;

use common::model::State;
use common::{drop_within_seconds, reopen_after_crash, DB};
use spinney::fs::{FaultFs, FaultKind, PendingWrites};
use spinney::{limits, Db, Durability, Error, Options, Table, TableOptions, WriteBatch};

/// The sizes where length fields change width or a limit lies.
const EDGES: [usize; 5] = [0, 1, (1 << 16) - 1, 1 << 16, (1 << 16) + 1];

fn options(fs: &Arc<FaultFs>) -> Options {
    Options {
        durability: Durability::Full,
        background_threads: 0,
        autowork: false,
        cache_size: 4 << 20,
        fs: fs.clone(),
        ..Options::default()
    }
}

/// The tables, each named by its kind: an LSM table, and B-tree tables of
/// the smallest and largest pages (their largest keys differ fourfold).
fn tables() -> Vec<(&'static str, TableOptions)> {
    vec![
        (
            "lsm",
            TableOptions {
                write_buffer_size: 1 << 20,
                ..TableOptions::lsm()
            },
        ),
        (
            "btree-4k",
            TableOptions {
                page_size: 4 << 10,
                ..TableOptions::btree()
            },
        ),
        (
            "btree-32k",
            TableOptions {
                page_size: 32 << 10,
                ..TableOptions::btree()
            },
        ),
    ]
}

/// A value of `len` bytes whose bytes depend on `seed` and their place, so
/// that a value of the right length but from another write is caught.
fn value(len: usize, seed: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + seed * 13 + 1) as u8).collect()
}

/// The entries of a table: a key of every accepted edge size and of its
/// largest size (all of one byte, so each is a prefix of the longer
/// ones), with values of the edge sizes; and values of every edge size and
/// the largest under short keys.
fn entries(max_key: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut key_sizes: Vec<usize> = EDGES.iter().copied().filter(|&k| k <= max_key).collect();
    key_sizes.extend([max_key - 1, max_key]);
    key_sizes.sort_unstable();
    key_sizes.dedup();
    let mut out: Vec<(Vec<u8>, Vec<u8>)> = key_sizes
        .iter()
        .enumerate()
        .map(|(i, &k)| (vec![b'k'; k], value(EDGES[i % EDGES.len()], i)))
        .collect();
    for (i, &v) in EDGES
        .iter()
        .chain([limits::VALUE_BYTES_MAX].iter())
        .enumerate()
    {
        out.push((format!("v{v:09}").into_bytes(), value(v, 100 + i)));
    }
    out
}

/// Checks every table against its model: each key by `get`, the whole
/// table by a scan in both directions, and `verify`.
fn check(ctx: &str, db: &Db, models: &[State]) {
    for ((name, _), model) in tables().iter().zip(models) {
        let t = db
            .table(name)
            .unwrap_or_else(|e| panic!("{ctx}: table {name}: {e}"));
        for (k, v) in model {
            let got = t
                .get(k)
                .unwrap_or_else(|e| panic!("{ctx}: {name}: get of a {}-byte key: {e}", k.len()));
            assert!(
                got.as_deref() == Some(v.as_slice()),
                "{ctx}: {name}: the {}-byte key read {:?} bytes, expected {}",
                k.len(),
                got.map(|g| g.len()),
                v.len()
            );
        }
        let scanned: State = t
            .iter()
            .and_then(|it| it.collect())
            .unwrap_or_else(|e| panic!("{ctx}: {name}: scan: {e}"));
        assert!(
            &scanned == model,
            "{ctx}: {name}: a scan found {} entries, the model has {}",
            scanned.len(),
            model.len()
        );
        let backward: Vec<Vec<u8>> = t
            .range::<&[u8], _>(..)
            .and_then(|r| r.rev().map(|e| e.map(|(k, _)| k)).collect())
            .unwrap_or_else(|e| panic!("{ctx}: {name}: reverse scan: {e}"));
        let expected: Vec<Vec<u8>> = model.keys().rev().cloned().collect();
        assert!(backward == expected, "{ctx}: {name}: reverse scan differs");
    }
    db.verify().unwrap_or_else(|e| panic!("{ctx}: verify: {e}"));
}

/// Power is lost with the database open (nothing more reaches the disk,
/// and whatever was not synced may be torn), then it is reopened.
fn crash_and_reopen(ctx: &str, fs: &Arc<FaultFs>, db: Db, tear: u64) -> Db {
    fs.inject(0, FaultKind::Crash);
    drop_within_seconds(db, (), ctx);
    let pending = PendingWrites::nth(tear, tear);
    fs.crash_with(pending);
    reopen_after_crash(&format!("{ctx}, {pending:?}"), pending, &options(fs))
}

fn table_handles(db: &Db) -> Vec<Table> {
    tables()
        .iter()
        .map(|(name, _)| db.table(name).expect("table"))
        .collect()
}

#[test]
fn edge_sizes_round_trip_through_every_path_and_past_the_limits_are_refused() {
    let fs = FaultFs::new();
    let mut db = Db::open(DB, options(&fs)).expect("open");
    let mut models: Vec<State> = Vec::new();
    for (name, table_options) in tables() {
        let max_key = table_options.max_key_len();
        let t = db.create_table(name, table_options).expect("create");

        // Past the limits: refused at the call, nothing of the batch kept.
        let refused_keys: Vec<usize> = EDGES
            .iter()
            .copied()
            .chain([max_key + 1])
            .filter(|&k| k > max_key)
            .collect();
        assert!(
            !refused_keys.is_empty(),
            "{name}: no key size past {max_key}"
        );
        for k in refused_keys {
            match t.put(&vec![b'x'; k], b"v") {
                Err(Error::InvalidArgument(_)) => {}
                other => panic!("{name}: put of a {k}-byte key: {other:?}"),
            }
        }
        let mut b = WriteBatch::new();
        b.put(&t, b"kept?", b"v");
        b.put(&t, b"big", &vec![0; limits::VALUE_BYTES_MAX + 1]);
        match db.write(b) {
            Err(Error::InvalidArgument(_)) => {}
            other => panic!("{name}: a value past the limit: {other:?}"),
        }
        assert_eq!(t.get(b"kept?").expect("get"), None, "{name}: half a batch");

        let mut model = State::new();
        for (k, v) in entries(max_key) {
            t.put(&k, &v).unwrap_or_else(|e| {
                panic!("{name}: put of {} and {} bytes: {e}", k.len(), v.len())
            });
            model.insert(k, v);
        }
        models.push(model);
    }
    check("written", &db, &models);

    // Only in the log: a crash, and recovery replays it.
    db = crash_and_reopen("in the log", &fs, db, 1);
    check("recovered from the log", &db, &models);

    // Flushed to SSTs, checkpointed into pages.
    db.flush().expect("flush");
    db.checkpoint().expect("checkpoint");
    check("flushed and checkpointed", &db, &models);
    db = crash_and_reopen("after a checkpoint", &fs, db, 2);
    check("recovered after a checkpoint", &db, &models);

    // Each key rewritten with a value of another edge size, a few deleted,
    // then compacted (an LSM merge; a B-tree repack), and reopened cleanly.
    for (i, (t, model)) in table_handles(&db).iter().zip(&mut models).enumerate() {
        let keys: Vec<Vec<u8>> = model.keys().cloned().collect();
        for (j, k) in keys.into_iter().enumerate() {
            if j % 4 == 3 {
                t.delete(&k).expect("delete");
                model.remove(&k);
            } else {
                let v = value(EDGES[(j + 2) % EDGES.len()], 1000 + i * 100 + j);
                t.put(&k, &v).expect("rewrite");
                model.insert(k, v);
            }
        }
    }
    check("rewritten", &db, &models);
    for t in table_handles(&db) {
        t.compact_all()
            .unwrap_or_else(|e| panic!("{}: compact_all: {e}", t.name()));
    }
    check("compacted", &db, &models);
    db = crash_and_reopen("after compaction", &fs, db, 3);
    check("recovered after compaction", &db, &models);
    db.close().expect("close");
    let db = Db::open(DB, options(&fs)).expect("clean reopen");
    check("reopened", &db, &models);
}
