//! A seeded load of batches and explicit flushes or checkpoints, run by
//! the crash tests at spread points, and the options of a database that
//! does background work while it runs.

use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use spinney::fs::FaultFs;
use spinney::{Db, Durability, Options, Table, TableOptions};

use super::model::{overflow_value, random_change, Batch};
use super::{btree_table, lsm_table, DB};

/// One step of a load.
#[derive(Debug, Clone)]
pub enum Step {
    /// A batch committed with `Db::write`.
    Batch(Batch),
    /// A single entry through `Table::put` or `Table::delete`; a batch of
    /// one in the model.
    Single(Batch),
    /// `Db::flush`.
    Flush,
    /// `Db::checkpoint`.
    Checkpoint,
}

/// The batches of a plan (flushes and checkpoints left out), as the model
/// sees them.
pub fn batches(plan: &[Step]) -> Vec<Batch> {
    plan.iter()
        .filter_map(|s| match s {
            Step::Batch(b) | Step::Single(b) => Some(b.clone()),
            Step::Flush | Step::Checkpoint => None,
        })
        .collect()
}

/// A seeded load over `tables` tables (each batch writes to every one of
/// them), about one explicit checkpoint in 100 steps (about 300 KiB of log
/// apart, so that most checkpoints are the background ones).
pub fn load(seed: u64, steps: usize, tables: usize) -> Vec<Step> {
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
                        let n = rng.gen_range(0..3000);
                        let (k, change) =
                            random_change(&mut rng, n, 3000, 1, 14, |rng| overflow_value(rng, 3));
                        (table, k, change)
                    })
                    .collect(),
            )
        })
        .collect()
}

/// Two background threads, so that checkpoints run (every 64 KiB of log)
/// while the writer commits; a cache of about 30 pages. (In a database of
/// B-tree tables only, nothing wakes the threads for a due checkpoint: see
/// `background_threads_checkpoint_a_btree_only_database`. Those loads run
/// `Db::work` from a second thread instead.)
pub fn busy_options(fs: &Arc<FaultFs>, durability: Durability) -> Options {
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
pub fn at_rest_options(fs: &Arc<FaultFs>) -> Options {
    Options {
        background_threads: 0,
        autowork: false,
        ..busy_options(fs, Durability::Full)
    }
}

/// The tables of a load: a B-tree table "bt", after an LSM table "lsm" if
/// `mixed`.
pub fn load_tables(mixed: bool) -> Vec<(&'static str, TableOptions)> {
    if mixed {
        vec![("lsm", lsm_table()), ("bt", btree_table())]
    } else {
        vec![("bt", btree_table())]
    }
}

/// A database of `busy_options` with the tables of `load_tables`.
pub fn open_busy(fs: &Arc<FaultFs>, durability: Durability, mixed: bool) -> (Db, Vec<Table>) {
    let db = Db::open(DB, busy_options(fs, durability)).expect("open");
    let tables = load_tables(mixed)
        .into_iter()
        .map(|(name, options)| db.create_table(name, options).expect("create"))
        .collect();
    (db, tables)
}
