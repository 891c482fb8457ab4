//! Two tables of one kind, written by synced batches: the scaffolding of
//! the sweeps that fail a commit, a flush or a recovery at each of its file
//! operations in turn.

use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use spinney::fs::FaultFs;
use spinney::{Db, Durability, Options, Table, TableOptions};

use super::model::{apply, random_change, value, write_batch, Batch, Change, State};
use super::{drop_within_seconds, DB};

/// The names of the two tables.
pub const TABLES: [&str; 2] = ["alpha", "beta"];

/// Default options on `fs`, at `durability`.
pub fn options(fs: &Arc<FaultFs>, durability: Durability) -> Options {
    Options {
        durability,
        fs: fs.clone(),
        ..Options::default()
    }
}

/// Opens (or creates) both tables with `table`.
pub fn open_tables(db: &Db, table: &TableOptions) -> Vec<Table> {
    TABLES
        .iter()
        .map(|name| db.open_table(name, table.clone()).expect("open table"))
        .collect()
}

/// One put, delete (15 in 100) or range delete of 1 to 30 keys (2 in 100)
/// to either table, over 1,500 keys; values of 28 to 307 bytes.
pub fn random_entry(rng: &mut StdRng) -> (usize, Vec<u8>, Change) {
    let table = rng.gen_range(0..TABLES.len());
    let n = rng.gen_range(0..1500);
    let (key, change) = random_change(rng, n, 1500, 2, 15, |rng| value(rng, 20..300));
    (table, key, change)
}

/// `count` seeded batches of 1 to 10 entries.
pub fn some_batches(seed: u64, count: usize) -> Vec<Batch> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..count)
        .map(|_| {
            let n = rng.gen_range(1..=10);
            (0..n).map(|_| random_entry(&mut rng)).collect()
        })
        .collect()
}

/// Commits `batches` through `tables`, each of which must succeed; the
/// model gets each acknowledged one.
pub fn write_acknowledged(db: &Db, tables: &[Table], model: &mut [State], batches: &[Batch]) {
    for b in batches {
        db.write(write_batch(tables, b))
            .expect("write before the fault");
        apply(model, b);
    }
}

/// Counts the mutating operations `f` makes on a fresh `Full` database of
/// two `table` tables holding the batches of `seed`.
pub fn ops_of(
    seed: u64,
    count: usize,
    table: &TableOptions,
    f: impl Fn(&Db, &[Table]) -> spinney::Result<()>,
) -> u64 {
    let fs = FaultFs::new();
    let db = Db::open(DB, options(&fs, Durability::Full)).expect("open");
    let tables = open_tables(&db, table);
    write_acknowledged(
        &db,
        &tables,
        &mut [State::new(), State::new()],
        &some_batches(seed, count),
    );
    let start = fs.mutating_ops();
    f(&db, &tables).expect("dry run");
    let ops = fs.mutating_ops() - start;
    drop_within_seconds(db, tables, "dry run");
    ops
}
