//! The LevelDB adapter's tests: the checks every engine passes and those
//! it shares with RocksDB (`leveldb_shape::checks`), here with several
//! tables in one key space (seeks and scans kept within a table's prefix);
//! then one table's plain keys, the table list checked on reopen, the
//! operations, and the options LevelDB cannot honour.

use spinney::Compression;

use super::*;
use crate::engine::leveldb_shape::checks::{self, fill, key, open_store, scanned, specs};
use crate::engine::Seek;

/// A small configuration (`checks::config`).
fn config() -> Config {
    checks::config(Engine::Leveldb)
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
    checks::does_what_every_engine_does(Engine::Leveldb);
}

#[test]
fn seeks_land_on_their_key_and_stop_at_the_end_of_their_table() {
    // Goal: `checks`' seeks on LevelDB, where the next table's entries
    // follow a table's in the one key space.
    checks::seeks_land_on_their_key_and_stop_at_the_end_of_their_table(Engine::Leveldb);
}

#[test]
fn scans_run_in_order_both_ways_within_their_prefix() {
    // Goal: `checks`' scans on LevelDB, where three tables share the key
    // space, each a prefix.
    checks::scans_run_in_order_both_ways_within_their_table(Engine::Leveldb);
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
