//! `ReadContext`: what a read counts, on a table whose shape is known.
//!
//! Most tests build the same table: three L0 runs with nested key ranges
//! (run A, the oldest, holds keys 0..300; run B keys 100..200; run C, the
//! newest, keys 150..160) and an empty memtable, so that how many runs cover
//! a key, and which run answers it, is known for every key. Three runs stay
//! below the L0 compaction trigger, and each test checks the shape before it
//! counts.

use spinney::{Db, Options, ReadContext, Table, TableOptions};

/// The runs, oldest first, as ranges of key numbers.
const RUNS: [std::ops::Range<u32>; 3] = [0..300, 100..200, 150..160];

fn key(i: u32) -> Vec<u8> {
    format!("key{i:04}").into_bytes()
}

/// A key that sorts just after `key(i)` and before `key(i + 1)`, and is
/// never written.
fn absent_key(i: u32) -> Vec<u8> {
    format!("key{i:04}x").into_bytes()
}

/// The runs whose key range covers `absent_key(i)`: its user key must lie
/// between the run's smallest and largest keys.
fn runs_covering_absent(i: u32) -> u64 {
    RUNS.iter()
        .filter(|r| r.start <= i && i + 1 < r.end)
        .count() as u64
}

/// Opens a database in `dir` with one table of three L0 runs (see the file
/// header), the smallest write buffer, and `bloom_bits_per_key`.
fn three_runs(dir: &std::path::Path, bloom_bits_per_key: u32) -> (Db, Table) {
    let db = Db::open(dir, Options::default()).expect("open");
    let options = TableOptions {
        bloom_bits_per_key,
        write_buffer_size: spinney::limits::WRITE_BUFFER_BYTES_MIN,
        ..TableOptions::default()
    };
    let t = db.create_table("t", options).expect("create");
    for (n, run) in RUNS.iter().enumerate() {
        for i in run.clone() {
            t.put(&key(i), format!("run{n}-{i:0>90}").as_bytes())
                .expect("put");
        }
        t.flush().expect("flush");
    }
    let stats = db.stats();
    let shape = &stats.tables[0];
    assert_eq!(shape.levels[0].files, RUNS.len(), "L0 runs: {shape:?}");
    assert!(shape.levels[1..].iter().all(|l| l.files == 0), "{shape:?}");
    assert_eq!(
        (
            shape.shape.memtable_entries,
            shape.shape.immutable_memtables
        ),
        (0, 0)
    );
    (db, t)
}

/// The counts of one call of `read`, on this thread.
fn counted<R>(read: impl FnOnce() -> R) -> (R, ReadContext) {
    ReadContext::enable();
    let before = ReadContext::current();
    let r = read();
    let counts = ReadContext::current() - before;
    ReadContext::disable();
    (r, counts)
}

#[test]
fn absent_key_is_rejected_by_the_bloom_filter_of_each_covering_run() {
    // Goal: a get of an absent key consults the memtable and the filter of
    // each run whose range covers the key, and reads no data block when the
    // filters say "absent". Method: keys covered by 3, 2, 1 and 0 runs. The
    // filter is a pure function of the keys written (xxh3 hashes), so for
    // these fixed keys the outcome is the same on every run; none of them
    // is a false positive, so the negatives are exact.
    let dir = tempfile::tempdir().expect("tempdir");
    let (_db, t) = three_runs(dir.path(), 10);
    for (i, covering) in [(155, 3), (120, 2), (50, 1), (400, 0)] {
        assert_eq!(runs_covering_absent(i), covering);
        let (found, c) = counted(|| t.get(&absent_key(i)).expect("get"));
        assert_eq!(found, None);
        let want = ReadContext {
            gets: 1,
            trees_searched: 1 + covering,
            bloom_checks: covering,
            bloom_negatives: covering,
            ..ReadContext::default()
        };
        assert_eq!(c, want, "absent key {i}");
    }
}

#[test]
fn bloom_negatives_over_many_absent_keys_miss_only_false_positives() {
    // Goal: over many absent keys, every covering run's filter is consulted
    // (exact) and nearly every consultation is a negative. Method: one
    // absent key after each written key. At 10 bits per key a filter's
    // false-positive rate is about 1%; the bound allows 5%, and a false
    // positive must read at least one data block (at most two, when a
    // shortened index separator sends the seek one block too far).
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, t) = three_runs(dir.path(), 10);
    let keys = 0..RUNS[0].end;
    let covering: u64 = keys.clone().map(runs_covering_absent).sum();
    let (_, c) = counted(|| {
        for i in keys.clone() {
            assert_eq!(t.get(&absent_key(i)).expect("get"), None);
        }
    });
    assert_eq!(c.gets, keys.len() as u64);
    assert_eq!(c.trees_searched, keys.len() as u64 + covering);
    assert_eq!(c.bloom_checks, covering);
    let false_positives = c.bloom_checks - c.bloom_negatives;
    assert!(false_positives * 20 <= covering, "{c:?}");
    let blocks = c.blocks_from_cache + c.blocks_from_storage;
    assert!(
        false_positives <= blocks && blocks <= 2 * false_positives,
        "{c:?}"
    );
    // The table's own bloom figures, always on, agree with the context.
    let stats = db.stats();
    let table = &stats.tables[0];
    assert_eq!(table.bloom_checks, c.bloom_checks);
    assert_eq!(table.bloom_useful, c.bloom_negatives);
}

#[test]
fn present_key_reads_a_block_from_storage_then_from_the_cache() {
    // Goal: the first get of a key reads its data block from the file, the
    // second finds it in the cache. Method: key 50 lives only in run A,
    // which only run A covers; a get searches the memtable and run A.
    let dir = tempfile::tempdir().expect("tempdir");
    let (_db, t) = three_runs(dir.path(), 10);
    let (found, first) = counted(|| t.get(&key(50)).expect("get"));
    assert!(found.is_some_and(|v| v.starts_with(b"run0-")));
    assert_eq!(
        (first.gets, first.trees_searched, first.bloom_checks),
        (1, 2, 1)
    );
    assert_eq!(first.bloom_negatives, 0);
    assert_eq!((first.blocks_from_storage, first.blocks_from_cache), (1, 0));
    // A block of 4 KiB target size, plus its 5-byte trailer.
    assert!((1024..8192).contains(&first.bytes_read), "{first:?}");
    assert!(first.keys_compared > 0);

    let (_, second) = counted(|| t.get(&key(50)).expect("get"));
    assert_eq!(
        (second.blocks_from_storage, second.blocks_from_cache),
        (0, 1)
    );
    assert_eq!(second.bytes_read, 0);
    assert_eq!(second.keys_compared, first.keys_compared);
}

#[test]
fn get_stops_at_the_newest_run_holding_the_key() {
    // Goal: trees searched counts only what a get consults. Method: key 120
    // is in runs A and B; run C (newest) does not cover it and is skipped
    // without a filter check, run B answers, run A is never searched.
    let dir = tempfile::tempdir().expect("tempdir");
    let (_db, t) = three_runs(dir.path(), 10);
    let (found, c) = counted(|| t.get(&key(120)).expect("get"));
    assert!(found.is_some_and(|v| v.starts_with(b"run1-")));
    assert_eq!(
        (c.trees_searched, c.bloom_checks, c.bloom_negatives),
        (2, 1, 0)
    );
    assert_eq!(c.blocks_from_storage + c.blocks_from_cache, 1);
}

#[test]
fn table_without_filters_counts_no_bloom_checks_and_reads_each_covering_run() {
    // Goal: with bloom_bits_per_key 0 nothing is counted as a filter check,
    // and an absent key costs a data block in every run covering it.
    let dir = tempfile::tempdir().expect("tempdir");
    let (_db, t) = three_runs(dir.path(), 0);
    let (found, c) = counted(|| t.get(&absent_key(155)).expect("get"));
    assert_eq!(found, None);
    assert_eq!((c.bloom_checks, c.bloom_negatives), (0, 0));
    assert_eq!(c.trees_searched, 4);
    assert_eq!(c.blocks_from_storage, 3, "{c:?}");
    assert!(c.bytes_read > 0 && c.keys_compared > 0);
}

#[test]
fn memtable_search_compares_a_logarithmic_number_of_keys() {
    // Goal: keys compared in a skiplist search are counted, and are few.
    // Method: 4,000 keys in the memtable; a get searches only the memtable.
    // A skiplist with p = 1/4 expects about 4 comparisons per level over
    // log4(4000) = 6 levels, so 64 leaves ample room; 0 would mean nothing
    // was counted.
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), Options::default()).expect("open");
    let t = db.create_table("t", TableOptions::default()).expect("t");
    for i in 0..4_000 {
        t.put(&key(i), b"v").expect("put");
    }
    let (found, c) = counted(|| t.get(&key(1234)).expect("get"));
    assert_eq!(found, Some(b"v".to_vec()));
    assert_eq!((c.gets, c.trees_searched), (1, 1));
    assert!((1..=64).contains(&c.keys_compared), "{c:?}");
    assert_eq!(c.blocks_from_storage + c.blocks_from_cache, 0);
}

#[test]
fn nothing_is_counted_while_disabled() {
    // Goal: off by default, and disabling stops counting but keeps the
    // counts. Method: reads of every kind before enabling, one get while
    // enabled, more reads after disabling.
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, t) = three_runs(dir.path(), 10);
    let read_everything = || {
        t.get(&key(50)).expect("get");
        t.get(&absent_key(155)).expect("get");
        db.snapshot().get(&t, &key(120)).expect("get");
        assert_eq!(t.iter().expect("iter").count(), 300);
        let mut cursor = t.cursor().expect("cursor");
        cursor.seek(&key(7));
        cursor.prev();
        cursor.seek_for_prev(&key(9));
    };
    assert!(!ReadContext::is_enabled());
    read_everything();
    assert_eq!(ReadContext::current(), ReadContext::default());

    ReadContext::enable();
    assert!(ReadContext::is_enabled());
    t.get(&key(50)).expect("get");
    ReadContext::disable();
    let one_get = ReadContext::current();
    assert_eq!(one_get.gets, 1);
    read_everything();
    assert_eq!(ReadContext::current(), one_get);
    assert_eq!(ReadContext::take(), one_get);
    assert_eq!(ReadContext::current(), ReadContext::default());
}

#[test]
fn counts_stay_on_the_thread_that_read() {
    // Goal: the counters are per thread. Method: this thread and a spawned
    // one both count; each sees only its own gets, and the spawned thread
    // starts disabled and at zero whatever this thread did.
    let dir = tempfile::tempdir().expect("tempdir");
    let (_db, t) = three_runs(dir.path(), 10);
    ReadContext::enable();
    ReadContext::reset();
    t.get(&key(1)).expect("get");
    let other = std::thread::spawn({
        let t = t.clone();
        move || {
            let at_start = (ReadContext::is_enabled(), ReadContext::current());
            ReadContext::enable();
            for i in 0..5 {
                t.get(&key(i)).expect("get");
            }
            (at_start, ReadContext::take())
        }
    });
    let ((enabled_at_start, at_start), theirs) = other.join().expect("thread");
    assert!(!enabled_at_start);
    assert_eq!(at_start, ReadContext::default());
    assert_eq!(theirs.gets, 5);
    let ours = ReadContext::take();
    ReadContext::disable();
    assert_eq!(ours.gets, 1);
    assert_eq!(ours.trees_searched, 2);
}

#[test]
fn scans_count_seeks_steps_and_every_source() {
    // Goal: a seek searches every source of the merging iterator (the
    // memtable and each L0 run); each user-level step is one next. Method:
    // a full scan, a reverse start, and a cursor walk over the three-run
    // table plus a non-empty memtable.
    let dir = tempfile::tempdir().expect("tempdir");
    let (_db, t) = three_runs(dir.path(), 10);
    t.put(&key(1000), b"in the memtable").expect("put");
    let sources = 1 + RUNS.len() as u64;

    let (entries, c) = counted(|| t.iter().expect("iter").count());
    assert_eq!(entries, 301);
    // One seek to the first entry, then one step per entry: the last step
    // runs off the end.
    assert_eq!((c.seeks, c.nexts, c.gets), (1, 301, 0));
    assert_eq!(c.trees_searched, sources);
    assert_eq!(c.bloom_checks, 0);
    // Every block of every run is read once, from the file.
    assert!(c.blocks_from_storage >= RUNS.len() as u64);
    assert_eq!(c.blocks_from_cache, 0, "{c:?}");

    let (last, c) = counted(|| t.iter().expect("iter").next_back());
    assert!(last.is_some());
    assert_eq!((c.seeks, c.nexts, c.trees_searched), (1, 0, sources));

    let (_, c) = counted(|| {
        let mut cursor = t.cursor().expect("cursor");
        cursor.seek(&key(155));
        for _ in 0..3 {
            cursor.next();
        }
        cursor.prev();
        cursor.seek_for_prev(&key(10));
        assert_eq!(cursor.key(), key(10));
        // Past the end: a step of an invalid cursor does nothing and is
        // not counted.
        cursor.seek(&key(2000));
        assert!(!cursor.valid());
        cursor.next();
    });
    assert_eq!((c.seeks, c.nexts), (3, 4));
    assert_eq!(c.trees_searched, 3 * sources);
    assert!(c.keys_compared > 0);
    // The full scan above cached every block.
    assert_eq!(c.blocks_from_storage, 0);
    assert!(c.blocks_from_cache > 0);
}
