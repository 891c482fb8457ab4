//! Model test with shrinking: a sequence of operations is a value that
//! proptest generates, so that a failing sequence is cut down to the fewest
//! and smallest operations that still fail before it is reported.
//!
//! Method: an LSM table and a B-tree table in one database on the
//! fault-injecting file system, `Full` durability, no background threads
//! (work runs inside the calls, so a sequence runs the same every time).
//! Operations: puts, deletes, range deletes, batches of them over both
//! tables, point reads, scans
//! both ways, flushes, checkpoints, `compact_all`, clean reopens, and power
//! lost a few file operations later, in each of the three ways a crash can
//! treat pending writes. Every read is checked against a `BTreeMap` model of
//! each table; after power is lost the reopened tables must equal each
//! other and the model, or the model plus the commit the loss interrupted
//! (which then joins the model). The cases run by default are few enough
//! for CI and the same on every run; `PROPTEST_CASES=N` runs more, and
//! `PROPTEST_SEED=S` others.

mod common;

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use common::DB;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use spinney::fs::{FaultFs, FaultKind, PendingWrites};
use spinney::{Db, Durability, Options, Table, TableOptions, WriteBatch};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// A change of the key of a number: a value (its length and fill byte), a
/// delete, or a range delete of a count of keys from it.
#[derive(Debug, Clone, Copy)]
enum Change {
    Put(u8, (u16, u8)),
    Delete(u8),
    DeleteRange(u8, u8),
}

#[derive(Debug, Clone)]
enum Op {
    /// One change to one table (0: LSM, 1: B-tree).
    Write {
        table: usize,
        change: Change,
    },
    /// Changes to both tables in one batch.
    Batch(Vec<(usize, Change)>),
    Get {
        table: usize,
        key: u8,
    },
    Scan {
        table: usize,
        from: Option<u8>,
        to: Option<u8>,
        reverse: bool,
    },
    Flush,
    Checkpoint,
    CompactAll {
        table: usize,
    },
    Reopen,
    /// Power is lost at the `after`-th file operation from now (the
    /// operations that follow fail once it has), treating pending writes in
    /// way `way` (0, 1, 2: lost, in order, any) with seed `seed`.
    PowerLoss {
        after: u8,
        way: u8,
        seed: u8,
    },
}

fn key(k: u8) -> Vec<u8> {
    format!("key{:03}", k % 64).into_bytes()
}

fn value((len, fill): (u16, u8)) -> Vec<u8> {
    (0..usize::from(len))
        .map(|i| fill.wrapping_add(i as u8))
        .collect()
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        12 => (any::<u8>(), (0u16..3000, any::<u8>())).prop_map(|(k, v)| Change::Put(k, v)),
        4 => any::<u8>().prop_map(Change::Delete),
        1 => (any::<u8>(), 1u8..24).prop_map(|(k, n)| Change::DeleteRange(k, n)),
    ]
}

/// The keys a range delete of `count` keys from the key of `from` removes
/// (past the last key too: it may end above every key there is).
fn range(from: u8, count: u8) -> std::ops::Range<Vec<u8>> {
    let from = from % 64;
    key(from)..format!("key{:03}", from + count).into_bytes()
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        30 => (0usize..2, change()).prop_map(|(table, change)| Op::Write { table, change }),
        15 => prop::collection::vec((0usize..2, change()), 1..12).prop_map(Op::Batch),
        10 => (0usize..2, any::<u8>()).prop_map(|(table, key)| Op::Get { table, key }),
        8 => (0usize..2, any::<Option<u8>>(), any::<Option<u8>>(), any::<bool>())
            .prop_map(|(table, from, to, reverse)| Op::Scan { table, from, to, reverse }),
        3 => Just(Op::Flush),
        3 => Just(Op::Checkpoint),
        2 => (0usize..2).prop_map(|table| Op::CompactAll { table }),
        2 => Just(Op::Reopen),
        4 => (0u8..24, 0u8..3, any::<u8>())
            .prop_map(|(after, way, seed)| Op::PowerLoss { after, way, seed }),
    ]
}

fn options(fs: &Arc<FaultFs>) -> Options {
    Options {
        durability: Durability::Full,
        background_threads: 0,
        autowork: true,
        cache_size: 64 << 10,
        wal_segment_size: 32 << 10,
        checkpoint_wal_bytes: 32 << 10,
        fs: fs.clone(),
        ..Options::default()
    }
}

fn open(fs: &Arc<FaultFs>, after: PendingWrites) -> (Db, Vec<Table>) {
    // Not `reopen_after_crash`: this opens at the start and after clean
    // reopens too, and `run` counts a checked crash image itself.
    let db = Db::open(DB, options(fs)).unwrap_or_else(|e| panic!("open after {after:?}: {e}"));
    let kinds = [
        TableOptions {
            write_buffer_size: 64 << 10,
            ..TableOptions::lsm()
        },
        TableOptions {
            page_size: 4096,
            ..TableOptions::btree()
        },
    ];
    let tables = ["lsm", "bt"]
        .into_iter()
        .zip(kinds)
        .map(|(name, o)| db.open_table(name, o).expect("open table"))
        .collect();
    (db, tables)
}

fn scan(table: &Table) -> Model {
    table
        .iter()
        .and_then(|it| it.collect())
        .expect("scan of a whole table")
}

fn apply(models: &mut [Model], changes: &[(usize, Change)]) {
    for &(t, change) in changes {
        let model = &mut models[t];
        match change {
            Change::Put(k, v) => {
                model.insert(key(k), value(v));
            }
            Change::Delete(k) => {
                model.remove(&key(k));
            }
            Change::DeleteRange(from, count) => {
                let range = range(from, count);
                model.retain(|k, _| !range.contains(k));
            }
        }
    }
}

/// Runs `ops`; Err names the first operation whose result the model does
/// not allow.
fn run(ops: &[Op]) -> Result<(), TestCaseError> {
    let fs = FaultFs::new();
    let (mut db, mut tables) = open(&fs, PendingWrites::Lost);
    let mut models = vec![Model::new(); 2];
    let mut loss: Option<PendingWrites> = None;
    for (i, op) in ops.iter().enumerate() {
        let mut changes: Vec<(usize, Change)> = Vec::new();
        let result: spinney::Result<()> = match op {
            Op::Write { table, change } => {
                changes.push((*table, *change));
                let table = &tables[*table];
                match *change {
                    Change::Put(k, v) => table.put(&key(k), &value(v)),
                    Change::Delete(k) => table.delete(&key(k)),
                    Change::DeleteRange(from, count) => table.delete_range(range(from, count)),
                }
            }
            Op::Batch(batch) => {
                changes.clone_from(batch);
                let mut b = WriteBatch::new();
                for &(t, change) in batch {
                    let table = &tables[t];
                    match change {
                        Change::Put(k, v) => b.put(table, &key(k), &value(v)),
                        Change::Delete(k) => b.delete(table, &key(k)),
                        Change::DeleteRange(from, count) => {
                            b.delete_range(table, range(from, count))
                        }
                    };
                }
                db.write(b)
            }
            Op::Get { table, key: k } => tables[*table].get(&key(*k)).map(|got| {
                let want = models[*table].get(&key(*k));
                assert_eq!(got.as_ref(), want, "op {i} {op:?}");
            }),
            Op::Scan {
                table,
                from,
                to,
                reverse,
            } => {
                let lo = from.map_or(Bound::Unbounded, |k| Bound::Included(key(k)));
                let hi = to.map_or(Bound::Unbounded, |k| Bound::Excluded(key(k)));
                let empty =
                    matches!((&lo, &hi), (Bound::Included(a), Bound::Excluded(b)) if a >= b);
                if empty {
                    Ok(())
                } else {
                    let want: Vec<(Vec<u8>, Vec<u8>)> = models[*table]
                        .range((lo.clone(), hi.clone()))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    tables[*table].range((lo, hi)).and_then(|it| {
                        let got: Vec<(Vec<u8>, Vec<u8>)> = if *reverse {
                            let mut got = it.rev().collect::<spinney::Result<Vec<_>>>()?;
                            got.reverse();
                            got
                        } else {
                            it.collect::<spinney::Result<Vec<_>>>()?
                        };
                        assert!(got == want, "op {i} {op:?}: the scan differs");
                        Ok(())
                    })
                }
            }
            Op::Flush => db.flush(),
            Op::Checkpoint => db.checkpoint(),
            Op::CompactAll { table } => tables[*table].compact_all(),
            Op::Reopen if loss.is_none() => {
                tables.clear();
                db.close().expect("close");
                (db, tables) = open(&fs, PendingWrites::Lost);
                for t in 0..2 {
                    prop_assert!(
                        scan(&tables[t]) == models[t],
                        "op {i}: a clean reopen changed table {t}"
                    );
                }
                continue;
            }
            Op::Reopen => Ok(()),
            Op::PowerLoss { after, way, seed } => {
                if loss.is_none() {
                    fs.inject(u64::from(*after), FaultKind::Crash);
                    loss = Some(PendingWrites::nth(u64::from(*way), u64::from(*seed)));
                }
                Ok(())
            }
        };
        // The commit whose call the loss interrupted, if any.
        let interrupted = match result {
            Ok(()) => {
                apply(&mut models, &changes);
                // Power may go in work a call does after its commit (the
                // removal of files a checkpoint made obsolete), which fails
                // nothing.
                Vec::new()
            }
            Err(_) if fs.is_crashed() => changes,
            Err(e) => return Err(TestCaseError::fail(format!("op {i} {op:?}: {e}"))),
        };
        if fs.is_crashed() {
            let pending = loss.take().unwrap_or(PendingWrites::Lost);
            tables.clear();
            drop(db);
            fs.crash_with(pending);
            (db, tables) = open(&fs, pending);
            let found: Vec<Model> = tables.iter().map(scan).collect();
            let mut with = models.clone();
            apply(&mut with, &interrupted);
            prop_assert!(
                found == models || found == with,
                "op {i} {op:?}: after power was lost ({pending:?}) the tables hold \
                 neither the acknowledged commits nor them and the interrupted one"
            );
            spinney::fs::count_checked_crash_image();
            models = found;
        }
    }
    // A loss still waiting for its operation does not come.
    fs.clear_faults();
    for t in 0..2 {
        prop_assert!(scan(&tables[t]) == models[t], "at the end, table {t}");
    }
    db.verify()
        .map_err(|e| TestCaseError::fail(format!("verify: {e}")))?;
    Ok(())
}

#[test]
fn operation_sequences_with_power_lost_match_the_model_and_shrink_when_they_fail() {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(256);
    // The same cases on every run, so that CI does not flake; a failure
    // is reported shrunk, with its operations, and nothing is written into
    // the source tree.
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    let seed = std::env::var("PROPTEST_SEED")
        .ok()
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or(1);
    let mut seed_bytes = [0u8; 32];
    seed_bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes);
    let mut runner = TestRunner::new_with_rng(config, rng);
    runner
        .run(&prop::collection::vec(op(), 1..160), |ops| run(&ops))
        .unwrap_or_else(|e| panic!("{e}"));
}
