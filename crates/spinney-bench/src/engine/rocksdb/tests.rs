//! The RocksDB adapter's tests: the checks every engine passes and those
//! it shares with LevelDB (`leveldb_shape::checks`: seeks and scans), then
//! batches across column families, the operations (compact0 and compact1
//! among them), a held shape, read counts, reopening, and the split of
//! background jobs.

use spinney::Durability;

use super::*;
use crate::engine::leveldb_shape::checks::{self, fill, key, open_store, scanned};
use crate::engine::Batch;

/// A small configuration (`checks::config`).
fn config() -> Config {
    checks::config(ENGINE)
}

#[test]
fn does_what_every_engine_does() {
    // Goal: the checks every adapter passes (see `conformance`), on two
    // column families.
    checks::does_what_every_engine_does(ENGINE);
}

#[test]
fn batches_of_puts_and_deletes_span_two_tables() {
    // Goal: one batch writes both column families, a delete in the
    // same batch wins over an earlier put, and a key of one table is
    // not seen in the other.
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open_store(&config(), dir.path(), &["default", "other"]);
    let mut session = store.session().expect("session");
    let mut batch = Batch::new();
    batch.put(0, b"a", b"one");
    batch.put(1, b"a", b"table-one");
    batch.put(0, b"b", b"two");
    batch.put(1, b"only-in-1", b"x");
    session.write(&batch).expect("write");
    batch.clear();
    batch.delete(0, b"b");
    batch.put(0, b"c", b"three!");
    session.write(&batch).expect("write");

    assert_eq!(session.get(0, b"a").expect("get"), Some(3));
    assert_eq!(session.get(1, b"a").expect("get"), Some(9));
    assert_eq!(session.get(0, b"b").expect("get"), None);
    assert_eq!(session.get(0, b"c").expect("get"), Some(6));
    assert_eq!(session.get(0, b"only-in-1").expect("get"), None);
    assert_eq!(session.get(1, b"only-in-1").expect("get"), Some(1));
    assert!(session.get(2, b"a").is_err(), "table 2 does not exist");
    drop(session);
    store.close().expect("close");
}

#[test]
fn seeks_land_on_their_key_and_step_past_the_end() {
    // Goal: `checks`' seeks on RocksDB, in one column family and in the
    // first of two.
    checks::seeks_land_on_their_key_and_stop_at_the_end_of_their_table(ENGINE);
}

#[test]
fn scans_run_in_order_both_ways_within_their_table() {
    // Goal: `checks`' scans on RocksDB, each table a column family.
    checks::scans_run_in_order_both_ways_within_their_table(ENGINE);
}

#[test]
fn operations_do_what_they_claim_and_refuse_the_rest() {
    // Goal: flush empties the memtable into an L0 SST, compact leaves
    // no L0 file and keeps the data, compact0 and compact1 run,
    // waitforcompaction returns, and the operations RocksDB has no
    // equivalent of say so.
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open_store(&config(), dir.path(), &["default", "other"]);
    fill(store.as_ref(), 0, 300);
    fill(store.as_ref(), 1, 10);
    assert!(store.shape_counts().memtable_entries > 0);
    assert!(store.operation(Benchmark::Flush).expect("flush"));
    let shape = store.shape_counts();
    assert_eq!(shape.memtable_entries, 0);
    assert!(shape.l0_runs >= 1 && shape.sst_files >= 1, "{shape:?}");
    assert!(store.operation(Benchmark::Compact).expect("compact"));
    let shape = store.shape_counts();
    assert_eq!(shape.l0_runs, 0, "{shape:?}");
    assert!(shape.sst_files >= 1, "{shape:?}");
    assert!(store.operation(Benchmark::CompactAll).expect("compactall"));
    assert!(store.operation(Benchmark::Compact0).expect("compact0"));
    assert!(store.operation(Benchmark::Compact1).expect("compact1"));
    assert!(store.operation(Benchmark::WaitForCompaction).expect("wait"));
    for op in [Benchmark::Checkpoint, Benchmark::FillSeq] {
        assert!(!store.operation(op).expect("operation"), "{op}");
    }
    assert_eq!(scanned(store.as_ref(), 0, true, usize::MAX).len(), 300);
    let stats = store
        .printout(Benchmark::Stats)
        .expect("stats")
        .unwrap_or_default();
    assert!(stats.contains("Compaction Stats"), "{stats}");
    let shape = store
        .printout(Benchmark::Shape)
        .expect("shape")
        .unwrap_or_default();
    assert!(shape.contains("Level"), "{shape}");
    assert_eq!(store.printout(Benchmark::ReadSeq).expect("printout"), None);
    store.close().expect("close");
}

/// The files of table `table` per level, L0 first.
fn files_per_level(store: &dyn Store, table: usize) -> Vec<usize> {
    let shape = store
        .lsm_shape(table)
        .expect("shape")
        .expect("RocksDB reports its shape");
    std::iter::once(shape.l0_runs)
        .chain(shape.level_files)
        .collect()
}

/// Overwrites keys `0..count` of `table` (values one byte longer than
/// `fill`'s, so that a scan still sees `count` entries).
fn overwrite(store: &dyn Store, table: usize, count: usize) {
    let mut session = store.session().expect("session");
    let mut batch = Batch::new();
    for i in 0..count {
        batch.put(table, &key(i), &vec![b'w'; i + 2]);
    }
    session.write(&batch).expect("write");
}

#[test]
fn compact0_and_compact1_move_files_down_one_level() {
    // Goal: compact0 merges every L0 file of every table into L1,
    // together with the L1 files they overlap; compact1 merges L1 into
    // L2; neither loses or duplicates an entry, and with nothing to
    // compact both do nothing. Method: flush L0 files by hand and
    // count the files per level after each operation. The tables are
    // held still, so that only these operations move files (RocksDB
    // 8 and later, with dynamic level sizes, also drain a level above
    // the base level by themselves).
    let dir = tempfile::tempdir().expect("tempdir");
    let held: Vec<TableSpec> = ["default", "other"]
        .iter()
        .map(|name| TableSpec {
            hold_shape: true,
            ..TableSpec::named(name)
        })
        .collect();
    let store = open(&config(), dir.path(), &held).expect("open");
    let store = store.as_ref();
    assert!(store
        .operation(Benchmark::Compact0)
        .expect("empty compact0"));
    fill(store, 0, 300);
    fill(store, 1, 40);
    assert!(store.operation(Benchmark::Flush).expect("flush"));
    overwrite(store, 0, 150);
    assert!(store.operation(Benchmark::Flush).expect("flush"));
    assert_eq!(files_per_level(store, 0)[..3], [2, 0, 0]);
    assert_eq!(files_per_level(store, 1)[..3], [1, 0, 0]);

    assert!(store.operation(Benchmark::Compact0).expect("compact0"));
    for table in [0, 1] {
        let files = files_per_level(store, table);
        assert_eq!((files[0], files[2]), (0, 0), "table {table}: {files:?}");
        assert!(files[1] >= 1, "table {table}: {files:?}");
    }
    // A new L0 file overlapping L1 joins it there: L1 stays one sorted
    // run (RocksDB would refuse overlapping files in L1).
    overwrite(store, 0, 300);
    assert!(store.operation(Benchmark::Flush).expect("flush"));
    assert!(store.operation(Benchmark::Compact0).expect("compact0"));
    assert_eq!(files_per_level(store, 0)[0], 0);

    assert!(store.operation(Benchmark::Compact1).expect("compact1"));
    for table in [0, 1] {
        let files = files_per_level(store, table);
        assert_eq!((files[0], files[1]), (0, 0), "table {table}: {files:?}");
        assert!(files[2] >= 1, "table {table}: {files:?}");
    }
    assert!(store
        .operation(Benchmark::Compact1)
        .expect("empty compact1"));
    assert_eq!(scanned(store, 0, true, usize::MAX).len(), 300);
    assert_eq!(scanned(store, 1, true, usize::MAX).len(), 40);
    let mut session = store.session().expect("session");
    assert_eq!(session.get(0, &key(299)).expect("get"), Some(301));
    drop(session);
}

/// Two tables held still, with 64 KiB memtables: `bloom` with filters
/// and `plain` without.
fn held_specs() -> Vec<TableSpec> {
    ["bloom", "plain"]
        .iter()
        .zip([10, 0])
        .map(|(name, bits)| TableSpec {
            bloom_bits: Some(bits),
            write_buffer_bytes: Some(64 << 10),
            hold_shape: true,
            ..TableSpec::named(name)
        })
        .collect()
}

#[test]
fn a_held_shape_keeps_its_l0_files_until_asked() {
    // Goal: with the shape held, ten L0 files (past RocksDB's default
    // trigger of four) stay in L0 after waiting for compactions, and
    // compact0 still moves them. Method: flush ten times, wait, count.
    let dir = tempfile::tempdir().expect("tempdir");
    let store = match open(&config(), dir.path(), &held_specs()) {
        Ok(store) => store,
        Err(e) => panic!("open failed: {e}"),
    };
    let store = store.as_ref();
    for _ in 0..10 {
        overwrite(store, 0, 20);
        assert!(store.operation(Benchmark::Flush).expect("flush"));
    }
    assert!(store.operation(Benchmark::WaitForCompaction).expect("wait"));
    assert_eq!(files_per_level(store, 0)[..2], [10, 0]);
    assert!(store.operation(Benchmark::Compact0).expect("compact0"));
    assert_eq!(files_per_level(store, 0)[..2], [0, 1]);
}

/// This thread's perf context's count of key comparisons, read without
/// changing the level or resetting it.
fn thread_comparisons() -> u64 {
    // SAFETY: a plain constructor; the handle is used and destroyed in
    // this thread.
    let context = PerfContext::new(unsafe { ffi::rocksdb_perfcontext_create() }, "perf")
        .expect("perf context");
    // SAFETY: the context is live and this thread's.
    unsafe { ffi::rocksdb_perfcontext_metric(context.ptr(), ffi::USER_KEY_COMPARISON_COUNT) }
}

#[test]
fn read_counts_follow_the_reads_and_stop_after() {
    // Goal: while a session counts, gets on a table with filters
    // count filter checks and trees, gets on one without count data
    // blocks as trees, seeks count the merging iterator's children,
    // a mix gives no tree count; after `take_read_counts` the thread
    // counts nothing. Method: three L0 files and a memtable, read
    // keys that exist only in the oldest file.
    let dir = tempfile::tempdir().expect("tempdir");
    let store = match open(&config(), dir.path(), &held_specs()) {
        Ok(store) => store,
        Err(e) => panic!("open failed: {e}"),
    };
    let store = store.as_ref();
    fill(store, 0, 100);
    fill(store, 1, 100);
    assert!(store.operation(Benchmark::Flush).expect("flush"));
    for round in 0..3 {
        let mut session = store.session().expect("session");
        let mut batch = Batch::new();
        for table in [0, 1] {
            batch.put(table, format!("key{round}a").as_bytes(), b"x");
            batch.put(table, format!("key{round}z").as_bytes(), b"x");
        }
        session.write(&batch).expect("write");
        drop(session);
        if round < 2 {
            assert!(store.operation(Benchmark::Flush).expect("flush"));
        }
    }
    // L0: three files whose ranges all hold key0050; a memtable too.
    assert_eq!(files_per_level(store, 0)[0], 3);
    let mut session = store.session().expect("session");
    assert_eq!(session.take_read_counts().expect("take"), None);

    assert!(session.start_read_counts().expect("start"));
    for _ in 0..10 {
        assert!(session.get(0, &key(50)).expect("get").is_some());
    }
    let with = session.take_read_counts().expect("take").expect("counts");
    // Per get: the memtable, then three filters (two say no), one
    // data block.
    assert_eq!(with.bloom_checks, Some(30));
    assert_eq!(with.bloom_negatives, Some(20));
    assert_eq!(with.trees_searched, Some(40));
    assert_eq!(
        with.blocks_from_cache
            .zip(with.blocks_from_storage)
            .map(|(c, s)| c + s),
        Some(10)
    );
    assert!(with.keys_compared.is_some_and(|k| k > 0));

    assert!(session.start_read_counts().expect("start"));
    for _ in 0..10 {
        assert!(session.get(1, &key(50)).expect("get").is_some());
    }
    let without = session.take_read_counts().expect("take").expect("counts");
    assert_eq!(without.bloom_checks, Some(0));
    // The memtable and a data block of each of the three files (or
    // two blocks of one: an upper bound).
    let trees = without.trees_searched.expect("trees");
    assert!((40..=70).contains(&trees), "{without:?}");

    assert!(session.start_read_counts().expect("start"));
    for _ in 0..10 {
        assert!(session.seek(0, &key(50), 3).expect("seek").found);
    }
    let seeks = session.take_read_counts().expect("take").expect("counts");
    // The memtable, three L0 files: four children per seek.
    assert_eq!(seeks.trees_searched, Some(40));

    assert!(session.start_read_counts().expect("start"));
    session.get(0, &key(1)).expect("get");
    session.seek(0, &key(1), 1).expect("seek");
    let mixed = session.take_read_counts().expect("take").expect("counts");
    assert_eq!(mixed.trees_searched, None);
    assert!(mixed.keys_compared.is_some());

    let before = thread_comparisons();
    for i in 0..20 {
        session.get(1, &key(i)).expect("get");
    }
    assert_eq!(thread_comparisons(), before, "counting is off again");
}

#[test]
fn reopen_keeps_the_data_and_the_column_families() {
    // Goal: after a close, the tables' column families are found
    // again, whether the run names all of them, some (RocksDB must
    // still open the others), or adds a new one.
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open_store(&config(), dir.path(), &["default", "second"]);
    fill(store.as_ref(), 0, 30);
    fill(store.as_ref(), 1, 12);
    store.close().expect("close");

    let store = open_store(&config(), dir.path(), &["second"]);
    assert_eq!(scanned(store.as_ref(), 0, true, usize::MAX).len(), 12);
    store.close().expect("close");

    let store = open_store(&config(), dir.path(), &["default", "second", "third"]);
    assert_eq!(scanned(store.as_ref(), 0, true, usize::MAX).len(), 30);
    assert_eq!(scanned(store.as_ref(), 1, true, usize::MAX).len(), 12);
    assert_eq!(scanned(store.as_ref(), 2, true, usize::MAX).len(), 0);
    store.close().expect("close");
}

#[test]
fn writes_without_the_wal_survive_a_clean_close() {
    // Goal: with --disable_wal=1 nothing is logged, and RocksDB's
    // close flushes the memtable, so a reopen still finds the data.
    let dir = tempfile::tempdir().expect("tempdir");
    let config = Config {
        durability: Durability::Off,
        ..config()
    };
    let store = open_store(&config, dir.path(), &["default"]);
    fill(store.as_ref(), 0, 40);
    store.close().expect("close");
    let store = open_store(&config, dir.path(), &["default"]);
    assert_eq!(scanned(store.as_ref(), 0, true, usize::MAX).len(), 40);
    store.close().expect("close");
}

#[test]
fn sessions_in_several_threads_work_at_once() {
    // Goal: four threads, each with its own session, write and read
    // their own keys at the same time; every write is there after.
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open_store(&config(), dir.path(), &["default"]);
    let shared: &dyn Store = store.as_ref();
    std::thread::scope(|scope| {
        for t in 0..4 {
            scope.spawn(move || {
                let mut session = shared.session().expect("session");
                let mut batch = Batch::new();
                for i in 0..250 {
                    let k = format!("t{t}-{i:04}");
                    batch.clear();
                    batch.put(0, k.as_bytes(), b"value");
                    session.write(&batch).expect("write");
                    assert_eq!(session.get(0, k.as_bytes()).expect("get"), Some(5));
                    let s = session.seek(0, k.as_bytes(), 1).expect("seek");
                    assert!(s.found);
                }
            });
        }
    });
    assert_eq!(scanned(shared, 0, true, usize::MAX).len(), 1000);
    store.close().expect("close");
}

#[test]
fn background_threads_follow_rocksdb_split_of_jobs() {
    // Goal: 0 background threads still gives RocksDB one job (one
    // flush and one compaction thread), and more jobs are split a
    // quarter to flushes as RocksDB does.
    let jobs = |n| {
        let s = Settings::of(&Config {
            background_threads: n,
            ..config()
        });
        (s.background_jobs, s.flush_threads, s.compaction_threads)
    };
    assert_eq!(jobs(0), (1, 1, 1));
    assert_eq!(jobs(2), (2, 1, 1));
    assert_eq!(jobs(8), (8, 2, 6));
    assert!(describe(&config()).contains("max_background_jobs 2"));
}

#[test]
fn version_names_the_loaded_library() {
    // Goal: the version comes from the librocksdb file this process
    // linked: Debian's 7.8, or the bundled 11.8 of librocksdb-sys.
    let expected = if cfg!(feature = "rocksdb") {
        "7.8."
    } else {
        "11.8."
    };
    assert!(version().starts_with(expected), "{}", version());
}
