//! The deterministic B-tree state a checkpoint (or recovery) sweep starts
//! from, and the checks after its recovery.
//!
//! Two B-tree tables of 4 KiB pages written in three rounds, checkpointed
//! after each of the first two: the tree is two levels high, has overflow
//! values, and the third round rewrites and deletes pages the earlier
//! checkpoints wrote, so the next checkpoint writes copies and a free map.
//! Nothing runs in the background and every commit is synced, so the file
//! operations are the same from run to run.

use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use spinney::fs::{FaultFs, PendingWrites};
use spinney::{Db, Durability, Options, Table};

use super::files::check_files;
use super::model::{apply, key, overflow_value, random_change, write_batch, Batch, Change, State};
use super::{btree_table, check_recovered, read_all, reopen_after_crash, table_stats, DB};

pub const CKPT_TABLES: [&str; 2] = ["main", "side"];

/// Nothing runs unless the test runs it; every commit is synced. The cache
/// holds about 60 pages of 4 KiB, a quarter of what the trees have, so
/// dirty pages are written out by eviction between checkpoints and a
/// checkpoint still finds dozens in the cache to write. Log segments of
/// 64 KiB, so that checkpoints let closed segments go.
pub fn quiet_options(fs: &Arc<FaultFs>) -> Options {
    Options {
        durability: Durability::Full,
        background_threads: 0,
        autowork: false,
        cache_size: 256 << 10,
        wal_segment_size: 64 << 10,
        checkpoint_wal_bytes: 1 << 40,
        fs: fs.clone(),
        ..Options::default()
    }
}

/// `count` batches of `ops` entries: 9 in 10 to "main", 1 in 10 to
/// "side"; keys from `0..keys`; `deletes` percent deletes, two of them
/// (if `deletes` is at least 2) range deletes of 1 to 30 keys.
pub fn round(rng: &mut StdRng, count: usize, ops: usize, keys: u32, deletes: u32) -> Vec<Batch> {
    (0..count)
        .map(|_| {
            (0..ops)
                .map(|_| {
                    let table = usize::from(rng.gen_range(0..10) == 0);
                    let n = rng.gen_range(0..keys);
                    let ranges = deletes.min(2);
                    let (k, change) =
                        random_change(rng, n, keys, ranges, deletes - ranges, |rng| {
                            overflow_value(rng, 5)
                        });
                    (table, k, change)
                })
                .collect()
        })
        .collect()
}

pub struct Built {
    pub db: Db,
    pub tables: Vec<Table>,
    pub models: Vec<State>,
}

pub fn commit(built: &mut Built, batches: &[Batch]) {
    for b in batches {
        built
            .db
            .write(write_batch(&built.tables, b))
            .expect("write before the fault");
        apply(&mut built.models, b);
    }
}

/// Builds the same pre-checkpoint state every time: two B-tree tables
/// written in three rounds with a checkpoint after each of the first two;
/// the later rounds overwrite and delete keys (and overflow values) of
/// pages the earlier checkpoints wrote, so the next checkpoint writes
/// copies and a free map that lists the pages they replaced.
pub fn build(fs: &Arc<FaultFs>) -> Built {
    let db = Db::open(DB, quiet_options(fs)).expect("open");
    let tables = CKPT_TABLES
        .iter()
        .map(|name| db.create_table(name, btree_table()).expect("create"))
        .collect();
    let mut built = Built {
        db,
        tables,
        models: vec![State::new(); 2],
    };
    let mut rng = StdRng::seed_from_u64(21);
    let first = round(&mut rng, 50, 25, 1500, 0);
    commit(&mut built, &first);
    built.db.checkpoint().expect("first checkpoint");
    let second = round(&mut rng, 30, 25, 1500, 25);
    commit(&mut built, &second);
    built.db.checkpoint().expect("second checkpoint");
    // Delete a dense run of keys (small leaves merge), then more mixed
    // writes.
    let dense: Batch = (200..500).map(|n| (0, key(n), Change::Delete)).collect();
    commit(&mut built, &[dense]);
    let third = round(&mut rng, 30, 25, 1500, 30);
    commit(&mut built, &third);
    built
}

/// The figures of the dry run, checked once: the state the crash points
/// start from is as rich as the test claims.
pub fn check_built(built: &Built, evicted_before: u64) {
    let shape = built.tables[0]
        .shape()
        .expect("shape")
        .btree
        .expect("a B-tree shape");
    assert!(shape.height >= 2, "{shape:?}");
    assert!(shape.overflow_pages > 0, "{shape:?}");
    assert!(shape.free_pages > 0, "{shape:?}");
    let stats = table_stats(&built.db, "main").btree.expect("B-tree stats");
    assert_eq!(stats.checkpoints, 2, "{stats:?}");
    assert!(
        stats.evictions_dirty > evicted_before,
        "no dirty page was evicted since the last checkpoint: {stats:?}"
    );
}

/// Reopens after the fault (threads off: the directory is at rest when
/// checked) and checks the model, `verify`, the files, that the recovered
/// database takes writes and checkpoints, and a second reopen. `pending`
/// is how the crash before it treated pending writes (`Lost` if there was
/// none): see `reopen_after_crash`.
pub fn check_recovery(ctx: &str, fs: &Arc<FaultFs>, models: &[State], pending: PendingWrites) {
    let db = reopen_after_crash(ctx, pending, &quiet_options(fs));
    check_recovered(ctx, &db, &CKPT_TABLES, models);
    check_files(ctx, fs, &db, &[], 2);

    // The recovered image takes writes and another checkpoint.
    let main = db.table("main").expect("main");
    let mut models = models.to_vec();
    let mut rng = StdRng::seed_from_u64(99);
    for b in round(&mut rng, 10, 20, 1500, 20) {
        let b: Batch = b.into_iter().map(|(_, k, v)| (0, k, v)).collect();
        db.write(write_batch(std::slice::from_ref(&main), &b))
            .unwrap_or_else(|e| panic!("{ctx}: write after recovery: {e}"));
        apply(&mut models, &b);
    }
    db.checkpoint()
        .unwrap_or_else(|e| panic!("{ctx}: checkpoint after recovery: {e}"));
    db.verify()
        .unwrap_or_else(|e| panic!("{ctx}: verify after a checkpoint after recovery: {e}"));
    drop(main);
    db.close().unwrap_or_else(|e| panic!("{ctx}: close: {e}"));
    let db =
        Db::open(DB, quiet_options(fs)).unwrap_or_else(|e| panic!("{ctx}: second reopen: {e}"));
    assert!(
        read_all(&db, &CKPT_TABLES, ctx) == models,
        "{ctx}: second reopen differs"
    );
    db.verify()
        .unwrap_or_else(|e| panic!("{ctx}: verify after the second reopen: {e}"));
}

/// Counts the mutating file operations of the checkpoint of `build`'s
/// state, and checks the state and a fault-free recovery.
pub fn checkpoint_span() -> u64 {
    let fs = FaultFs::new();
    let evicted_before = {
        // The dirty evictions up to the second checkpoint, from a build cut
        // short there: the same operations as the full build's prefix.
        let probe = FaultFs::new();
        let db = Db::open(DB, quiet_options(&probe)).expect("open");
        let tables: Vec<Table> = CKPT_TABLES
            .iter()
            .map(|name| db.create_table(name, btree_table()).expect("create"))
            .collect();
        let mut rng = StdRng::seed_from_u64(21);
        for b in round(&mut rng, 50, 25, 1500, 0) {
            db.write(write_batch(&tables, &b)).expect("write");
        }
        db.checkpoint().expect("checkpoint");
        for b in round(&mut rng, 30, 25, 1500, 25) {
            db.write(write_batch(&tables, &b)).expect("write");
        }
        db.checkpoint().expect("checkpoint");
        let n = table_stats(&db, "main")
            .btree
            .expect("B-tree stats")
            .evictions_dirty;
        drop(tables);
        db.close().expect("close");
        n
    };
    let built = build(&fs);
    check_built(&built, evicted_before);
    let before = table_stats(&built.db, "main").btree.expect("stats");
    let start = fs.mutating_ops();
    built.db.checkpoint().expect("dry run");
    let span = fs.mutating_ops() - start;
    let after = table_stats(&built.db, "main").btree.expect("stats");
    assert!(
        after.checkpoint_pages > before.checkpoint_pages + 1,
        "the checkpoint wrote no cached dirty page: {after:?}"
    );
    let Built { db, tables, models } = built;
    drop(tables);
    db.close().expect("close after the dry run");
    check_recovery("checkpoint, no fault", &fs, &models, PendingWrites::Lost);
    span
}
