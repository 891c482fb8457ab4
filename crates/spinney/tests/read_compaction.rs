//! Compactions that reads make due (LevelDB's seek compaction): a file that
//! reads keep looking into on their way to another costs more, in those
//! reads, than compacting it down once would, and is compacted down.
//!
//! Method: no background thread and no autowork, so nothing moves unless
//! `Db::work` moves it. A leveled table gets one file in the last level
//! (keys 0..2000) and one L0 run over the same range (the even keys,
//! rewritten). Each small file may cost 100 reads before it is due.

use std::collections::BTreeMap;

use spinney::{CompactionOptions, Db, Options, Table, TableOptions, WriteBatch};

mod common;
use common::model::{key16 as key, value100 as value};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

const KEYS: u64 = 2000;

fn quiet() -> Options {
    Options {
        background_threads: 0,
        autowork: false,
        ..Options::default()
    }
}

fn leveled(bloom_bits_per_key: u32) -> TableOptions {
    TableOptions {
        write_buffer_size: 1 << 20,
        bloom_bits_per_key,
        compaction: CompactionOptions {
            target_file_size: 64 << 20,
            ..CompactionOptions::leveled()
        },
        ..TableOptions::default()
    }
}

fn fill(db: &Db, table: &Table, model: &mut Model, keys: impl Iterator<Item = u64>, version: u64) {
    let mut batch = WriteBatch::new();
    for i in keys {
        batch.put(table, &key(i), &value(i, version));
        model.insert(key(i), value(i, version));
    }
    db.write(batch).expect("write");
}

/// (L0 runs, files per deeper level).
fn runs(table: &Table) -> (usize, Vec<usize>) {
    let shape = table.shape().expect("shape");
    (
        shape.l0_runs,
        shape.levels.iter().map(|l| l.files).collect(),
    )
}

fn check_data(ctx: &str, table: &Table, model: &Model) {
    let got = common::read_table(table).expect("scan");
    assert!(got == *model, "{ctx}: contents differ");
}

/// A table with one file in the last level and one L0 run over its range.
fn two_runs(dir: &std::path::Path, bloom_bits_per_key: u32) -> (Db, Table, Model) {
    let db = Db::open(dir, quiet()).expect("open");
    let table = db
        .create_table("t", leveled(bloom_bits_per_key))
        .expect("table");
    let mut model = Model::new();
    fill(&db, &table, &mut model, 0..KEYS, 1);
    table.flush().expect("flush");
    table.compact_all().expect("compact");
    fill(&db, &table, &mut model, (0..KEYS).step_by(2), 2);
    table.flush().expect("flush");
    assert_eq!(runs(&table), (1, vec![0, 0, 0, 0, 0, 1]), "two runs");
    assert_eq!(db.work(u64::MAX).expect("work").jobs, 0, "nothing due yet");
    (db, table, model)
}

#[test]
fn seeks_that_pass_through_an_l0_run_compact_it_down() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, table, model) = two_runs(dir.path(), 10);
    // Seeks to keys the table holds, each finding its own key.
    let seek = |numbers: std::ops::Range<u64>| {
        for i in numbers {
            let mut range = table.range(key(i * 7)..).expect("range");
            assert_eq!(
                range.next().transpose().expect("next").map(|e| e.0),
                Some(key(i * 7))
            );
        }
    };
    // A few seeks do not pay for a compaction.
    seek(0..50);
    assert_eq!(db.work(u64::MAX).expect("work").jobs, 0, "50 seeks");
    seek(50..150);
    let done = db.work(u64::MAX).expect("work");
    assert!(done.jobs >= 1, "150 seeks: no compaction ran");
    assert_eq!(runs(&table), (0, vec![0, 0, 0, 0, 0, 1]), "one run left");
    check_data("after the compaction", &table, &model);
    assert_eq!(db.work(u64::MAX).expect("work").jobs, 0, "nothing left due");
}

#[test]
fn gets_that_read_an_l0_run_in_vain_compact_it_down() {
    let dir = tempfile::tempdir().expect("tempdir");
    // No filter: a get of an odd key reads the L0 run's block, misses, and
    // reads the last level's.
    let (db, table, model) = two_runs(dir.path(), 0);
    // Even keys are found in the L0 run: one file read, nothing charged.
    for i in (0..KEYS).step_by(2).take(300) {
        assert_eq!(table.get(&key(i)).expect("get"), Some(value(i, 2)));
    }
    assert_eq!(db.work(u64::MAX).expect("work").jobs, 0, "gets found in L0");
    for i in (1..KEYS).step_by(2).take(150) {
        assert_eq!(table.get(&key(i)).expect("get"), Some(value(i, 1)));
    }
    assert!(
        db.work(u64::MAX).expect("work").jobs >= 1,
        "150 gets read two files"
    );
    assert_eq!(runs(&table), (0, vec![0, 0, 0, 0, 0, 1]), "one run left");
    check_data("after the compaction", &table, &model);
}

#[test]
fn reads_a_filter_spares_or_a_single_run_serves_make_nothing_due() {
    let dir = tempfile::tempdir().expect("tempdir");
    // With a filter, gets of odd keys skip the L0 run (but for false
    // positives, about 1 in 100): far fewer charges than the run allows.
    let (db, table, _) = two_runs(dir.path(), 10);
    for i in (1..KEYS).step_by(2).take(300) {
        assert_eq!(table.get(&key(i)).expect("get"), Some(value(i, 1)));
    }
    assert_eq!(db.work(u64::MAX).expect("work").jobs, 0, "filtered gets");

    // One run: nothing to look into besides it, however often it is read.
    table.compact_all().expect("compact");
    assert_eq!(runs(&table), (0, vec![0, 0, 0, 0, 0, 1]), "one run");
    for i in 0..1000 {
        let mut range = table.range(key(i)..).expect("range");
        assert!(range.next().is_some());
        assert!(table.get(&key(i)).expect("get").is_some());
    }
    assert_eq!(db.work(u64::MAX).expect("work").jobs, 0, "a single run");
}
