//! The LevelDB adapter's tests: several tables in one key space (seeks and
//! scans kept within a table's prefix, the table list checked on reopen),
//! the operations, and the options LevelDB cannot honour.

use spinney::Compression;

use super::*;
use crate::engine::{conformance, Batch, Seek};

/// A small configuration: a 1 MiB cache and 64 KiB memtables, so that
/// a few hundred entries make SSTs.
fn config() -> Config {
    Config {
        engine: Engine::Leveldb,
        cache_size: 1 << 20,
        write_buffer_size: 64 << 10,
        ..Config::default()
    }
}

fn specs(names: &[&str]) -> Vec<TableSpec> {
    names.iter().map(|n| TableSpec::named(n)).collect()
}

fn open_store(config: &Config, dir: &Path, names: &[&str]) -> Box<dyn Store> {
    match open(config, dir, &specs(names)) {
        Ok(store) => store,
        Err(e) => panic!("open failed: {e}"),
    }
}

fn key(i: usize) -> Vec<u8> {
    format!("key{i:04}").into_bytes()
}

/// Puts `count` keys into `table`, the value of key i being i + 1
/// bytes long (so that a scan's byte counts show its order).
fn fill(store: &dyn Store, table: usize, count: usize) {
    let mut session = store.session().expect("session");
    let mut batch = Batch::new();
    for i in 0..count {
        batch.put(table, &key(i), &vec![b'v'; i + 1]);
        if batch.ops().count() == 50 {
            session.write(&batch).expect("write");
            batch.clear();
        }
    }
    session.write(&batch).expect("write");
}

fn scanned(store: &dyn Store, table: usize, forward: bool, limit: usize) -> Vec<u64> {
    let mut session = store.session().expect("session");
    let mut seen = Vec::new();
    session
        .scan(table, forward, &mut |bytes| {
            seen.push(bytes);
            seen.len() < limit
        })
        .expect("scan");
    seen
}

fn open_error(config: &Config, dir: &Path, names: &[&str]) -> String {
    match open(config, dir, &specs(names)) {
        Ok(_) => panic!("open of {names:?} should fail"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn does_what_every_engine_does() {
    // Goal: the checks every adapter passes (see `conformance`), here
    // with two tables sharing LevelDB's one key space.
    conformance::all(&|dir: &Path| open_store(&config(), dir, &["default", "other"]));
}

#[test]
fn seeks_land_on_their_key_and_stop_at_the_end_of_their_table() {
    // Goal: a seek finds an existing key, lands after a missing one
    // without finding it, counts the bytes of the user keys and values
    // it steps over, and stops at the end of its table even though the
    // next table's entries follow in the key space.
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open_store(&config(), dir.path(), &["default", "next"]);
    fill(store.as_ref(), 0, 10);
    fill(store.as_ref(), 1, 10);
    let mut session = store.session().expect("session");
    // key0003's value is 4 bytes, key0004's 5, key0005's 6.
    let s = session.seek(0, &key(3), 3).expect("seek");
    assert_eq!(
        s,
        Seek {
            found: true,
            bytes: (7 + 4) + (7 + 5) + (7 + 6)
        }
    );
    let s = session.seek(0, b"key0003x", 1).expect("seek");
    assert_eq!(
        s,
        Seek {
            found: false,
            bytes: 7 + 5
        }
    );
    let s = session.seek(0, &key(8), 10).expect("seek");
    assert_eq!(
        s,
        Seek {
            found: true,
            bytes: (7 + 9) + (7 + 10)
        }
    );
    let s = session.seek(0, b"zzz", 5).expect("seek");
    assert_eq!(
        s,
        Seek {
            found: false,
            bytes: 0
        }
    );
    let s = session.seek(1, &key(9), 5).expect("seek");
    assert_eq!(
        s,
        Seek {
            found: true,
            bytes: 7 + 10
        }
    );
    drop(session);
    store.close().expect("close");
}

#[test]
fn scans_run_in_order_both_ways_within_their_prefix() {
    // Goal: with three tables sharing the key space, a scan of each
    // sees only its own entries, in ascending order forward and
    // descending in reverse, the first and last tables included (their
    // reverse scans start from the next prefix or the database's end);
    // a visit that returns false stops the scan.
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open_store(&config(), dir.path(), &["a", "b", "c"]);
    fill(store.as_ref(), 0, 20);
    fill(store.as_ref(), 1, 7);
    fill(store.as_ref(), 2, 3);
    for (table, count) in [(0, 20u64), (1, 7), (2, 3)] {
        let expected: Vec<u64> = (0..count).map(|i| 7 + i + 1).collect();
        assert_eq!(scanned(store.as_ref(), table, true, usize::MAX), expected);
        let reversed: Vec<u64> = expected.iter().rev().copied().collect();
        assert_eq!(scanned(store.as_ref(), table, false, usize::MAX), reversed);
    }
    assert_eq!(scanned(store.as_ref(), 0, true, 3), [8, 9, 10]);
    store.close().expect("close");

    // An empty table between two full ones scans nothing either way.
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open_store(&config(), dir.path(), &["a", "b", "c"]);
    fill(store.as_ref(), 0, 5);
    fill(store.as_ref(), 2, 5);
    assert!(scanned(store.as_ref(), 1, true, usize::MAX).is_empty());
    assert!(scanned(store.as_ref(), 1, false, usize::MAX).is_empty());
    store.close().expect("close");
}

#[test]
fn one_table_keeps_its_keys_unprefixed() {
    // Goal: with a single table the stored keys are the user's, so a
    // database of plain keys reads as that table.
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open_store(&config(), dir.path(), &["default"]);
    fill(store.as_ref(), 0, 4);
    let mut session = store.session().expect("session");
    let s = session.seek(0, &key(0), 10).expect("seek");
    assert_eq!(
        s,
        Seek {
            found: true,
            bytes: 4 * 7 + (1 + 2 + 3 + 4)
        }
    );
    drop(session);
    store.close().expect("close");
}

#[test]
fn operations_do_what_they_claim_and_refuse_the_rest() {
    // Goal: flush writes the memtable out as an SST, compact leaves
    // no L0 file and keeps the data, and the operations LevelDB's C API
    // cannot do say so.
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open_store(&config(), dir.path(), &["default"]);
    fill(store.as_ref(), 0, 100);
    assert_eq!(store.shape_counts().sst_files, 0);
    assert!(store.operation(Benchmark::Flush).expect("flush"));
    assert!(
        store.shape_counts().sst_files >= 1,
        "{:?}",
        store.shape_counts()
    );
    fill(store.as_ref(), 0, 300);
    assert!(store.operation(Benchmark::Compact).expect("compact"));
    let shape = store.shape_counts();
    assert_eq!(shape.l0_runs, 0, "{shape:?}");
    assert!(shape.sst_files >= 1, "{shape:?}");
    assert!(store.operation(Benchmark::CompactAll).expect("compactall"));
    for op in [
        Benchmark::Compact0,
        Benchmark::Compact1,
        Benchmark::WaitForCompaction,
        Benchmark::Checkpoint,
        Benchmark::FillSeq,
    ] {
        assert!(!store.operation(op).expect("operation"), "{op}");
    }
    assert_eq!(scanned(store.as_ref(), 0, true, usize::MAX).len(), 300);
    for printout in [Benchmark::Stats, Benchmark::Shape] {
        let text = store
            .printout(printout)
            .expect("printout")
            .unwrap_or_default();
        assert!(text.contains("Compactions"), "{text}");
    }
    assert_eq!(store.printout(Benchmark::ReadSeq).expect("printout"), None);
    store.close().expect("close");
}

#[test]
fn reopen_keeps_the_data_and_refuses_another_table_list() {
    // Goal: after a close the same tables find their data again, and a
    // different list of tables, whose keys would be read with the
    // wrong prefixes, is refused with a message saying why.
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open_store(&config(), dir.path(), &["default", "second"]);
    fill(store.as_ref(), 0, 30);
    fill(store.as_ref(), 1, 12);
    store.close().expect("close");

    let store = open_store(&config(), dir.path(), &["default", "second"]);
    assert_eq!(scanned(store.as_ref(), 0, true, usize::MAX).len(), 30);
    assert_eq!(scanned(store.as_ref(), 1, true, usize::MAX).len(), 12);
    store.close().expect("close");

    let message = open_error(&config(), dir.path(), &["second"]);
    assert!(
        message.contains("holds the tables [default, second]"),
        "{message}"
    );
}

#[test]
fn options_leveldb_cannot_honour_are_usage_errors() {
    // Goal: lz4 and zstd, and tables asking for different bloom bits,
    // are refused before anything is created, as usage errors.
    let dir = tempfile::tempdir().expect("tempdir");
    for compression in [Compression::Lz4, Compression::Zstd] {
        let config = Config {
            compression,
            ..config()
        };
        match open(&config, dir.path(), &specs(&["default"])) {
            Err(BenchError::Config(m)) => assert!(m.contains("only with snappy"), "{m}"),
            Err(e) => panic!("not a usage error: {e}"),
            Ok(_) => panic!("{} was accepted", compression.name()),
        }
    }
    let mut tables = specs(&["a", "b"]);
    tables[1].bloom_bits = Some(0);
    match open(&config(), dir.path(), &tables) {
        Err(BenchError::Config(m)) => assert!(m.contains("one bloom filter policy"), "{m}"),
        Err(e) => panic!("not a usage error: {e}"),
        Ok(_) => panic!("different bloom bits were accepted"),
    }
    assert!(!dir.path().join("CURRENT").exists());
}

#[test]
fn version_is_the_librarys() {
    // Goal: the version is what the loaded library reports (Debian's
    // 1.23).
    assert_eq!(version(), "1.23");
}
