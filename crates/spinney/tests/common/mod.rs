//! Scaffolding the integration tests share: one copy of each helper the
//! crash, fault and model tests used to carry in their own files.
//!
//! - `model`: the `BTreeMap` model of a table, batches over several
//!   tables, key and value makers, and the search for the prefix of the
//!   batches tried that a recovered state equals.
//! - `files`: what the directory of a database at rest may hold (no orphan
//!   SST, one manifest, one log segment).
//! - `two_tables`: two tables of one kind written by synced batches, for
//!   the sweeps over every operation of a commit, flush or recovery.
//! - `load`: a seeded load of batches and explicit checkpoints, with
//!   background threads, for crashes at spread points.
//! - `checkpointed`: the deterministic B-tree state a checkpoint sweep
//!   starts from, and the checks after its recovery.
//!
//! Everything here runs on the fault-injecting file system (`FaultFs`,
//! feature `testing`) under the directory `DB`.

#![allow(
    dead_code,
    reason = "every file in tests/ is a crate of its own that compiles this module and uses only a part of it"
)]

pub mod checkpointed;
pub mod files;
pub mod load;
pub mod model;
pub mod two_tables;

use std::sync::mpsc;
use std::time::Duration;

use spinney::fs::PendingWrites;
use spinney::{Db, Options, Table, TableOptions, TableStats};

use model::State;

/// The database directory on the fault-injecting file system.
pub const DB: &str = "/db";

/// An LSM table whose small write buffer (64 KiB) makes the loads flush
/// and compact as they run.
pub fn lsm_table() -> TableOptions {
    TableOptions {
        write_buffer_size: 64 << 10,
        ..TableOptions::lsm()
    }
}

/// A B-tree table of 4 KiB pages: with the small caches of the tests the
/// trees are at least two levels high, values past about 1 KB go to
/// overflow pages, and dirty pages are evicted between checkpoints.
pub fn btree_table() -> TableOptions {
    TableOptions {
        page_size: 4 << 10,
        ..TableOptions::btree()
    }
}

/// Both kinds of table, for the scenarios that run over each: (a name for
/// messages, its options).
pub fn kinds() -> [(&'static str, TableOptions); 2] {
    [("lsm", lsm_table()), ("btree", btree_table())]
}

/// Every entry of `table`, in key order.
pub fn read_table(table: &Table) -> spinney::Result<State> {
    table.iter()?.collect()
}

/// The contents of the tables `names`, in that order; panics naming `ctx`
/// if one is missing or fails to scan.
pub fn read_all(db: &Db, names: &[&str], ctx: &str) -> Vec<State> {
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

/// Checks that the tables `names` of a reopened `db` hold `models`, table
/// by table, and that `verify` passes.
pub fn check_recovered(ctx: &str, db: &Db, names: &[&str], models: &[State]) {
    let state = read_all(db, names, ctx);
    for (i, name) in names.iter().enumerate() {
        assert!(
            state[i] == models[i],
            "{ctx}: table {name} recovered {} entries, the model has {}",
            state[i].len(),
            models[i].len()
        );
    }
    db.verify()
        .unwrap_or_else(|e| panic!("{ctx}: verify after recovery: {e}"));
}

/// Checks that a scan of each of `tables` still answers with `models`
/// (after a fault, before the reopen).
pub fn check_scans(ctx: &str, tables: &[Table], models: &[State]) {
    for (i, table) in tables.iter().enumerate() {
        let seen = read_table(table).unwrap_or_else(|e| panic!("{ctx}: scan: {e}"));
        assert!(
            seen == models[i],
            "{ctx}: scan of table {i} differs before reopen"
        );
    }
}

/// The figures of one table.
pub fn table_stats(db: &Db, name: &str) -> TableStats {
    db.stats()
        .tables
        .into_iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no stats of table {name}"))
}

/// Lets background work end (it may meet the crash first: a crash can come
/// at any time, not only during a call), then drops the table handles
/// `handles` and `db`, on another thread; fails the test if either hangs or
/// panics. A database whose file system died must still let go.
pub fn drop_within_seconds<T: Send + 'static>(db: Db, handles: T, ctx: &str) {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = db.wait_for_compaction();
        drop(handles);
        drop(db);
        let _ = tx.send(());
    });
    rx.recv_timeout(Duration::from_secs(20))
        .unwrap_or_else(|_| panic!("{ctx}: waiting for or dropping the Db hung or panicked"));
}

/// The three ways a crash can treat pending writes (`PendingWrites`), the
/// two that choose with `seed`: for sweeps that lose power at every
/// operation in each way.
pub fn each_way(seed: u64) -> [PendingWrites; 3] {
    std::array::from_fn(|n| PendingWrites::nth(n as u64, seed))
}

/// Reopens a database after a crash with pending writes kept as `pending`
/// said; panics naming `ctx` and the crash if the open fails. However a
/// crash left the writes that were not yet synced (a later one kept and an
/// earlier one lost, torn or filled with garbage), the default open must
/// succeed: damage that no sync mark proves synced, in the newest log
/// segment or the manifest's last edit, is what a power loss leaves of
/// unsynced writes, and the log or manifest ends before it.
///
/// Each call counts one checked crash image for the torture run
/// (`spinney::fs::count_checked_crash_image`): the caller checks what it
/// opened, and a failed check fails the run.
pub fn reopen_after_crash(ctx: &str, pending: PendingWrites, opts: &Options) -> Db {
    let db = Db::open(DB, opts.clone())
        .unwrap_or_else(|e| panic!("{ctx}: reopen after {pending:?}: {e}"));
    spinney::fs::count_checked_crash_image();
    db
}
