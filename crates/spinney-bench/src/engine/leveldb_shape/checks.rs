//! What the LevelDB and RocksDB adapters' tests share: small stores of
//! either engine (`config`, `open_store`), entries whose value lengths
//! show the order a scan went in (`fill`, `scanned`), and the checks both
//! adapters run on their engine. Those check the seek and scan loops of
//! this module (`seek_steps`, `scan`) as each library's iterator drives
//! them, with one table and with several: LevelDB's tables share its one
//! key space, each a key prefix, so its seeks and scans must stop where a
//! table ends; RocksDB's column families are apart.
//!
//! Each adapter's `tests.rs` runs every check here on its engine, beside
//! the checks every engine passes (`conformance`) and what is particular
//! to it.
//!
//! Thread-safety: test code; each check opens stores of its own.

use std::path::Path;

use crate::engine::{conformance, Batch, Seek, Store, TableSpec};
use crate::{Config, Engine};

/// A small configuration of `engine`: a 1 MiB cache and 64 KiB memtables,
/// so that a few hundred entries make SSTs.
pub(crate) fn config(engine: Engine) -> Config {
    Config {
        engine,
        cache_size: 1 << 20,
        write_buffer_size: 64 << 10,
        ..Config::default()
    }
}

/// Tables named `names`, with nothing of their own set.
pub(crate) fn specs(names: &[&str]) -> Vec<TableSpec> {
    names.iter().map(|n| TableSpec::named(n)).collect()
}

/// Opens (creating if need be) `config.engine`'s database in `dir` with
/// the tables `names`; a failure fails the test.
pub(crate) fn open_store(config: &Config, dir: &Path, names: &[&str]) -> Box<dyn Store> {
    match crate::engine::open(config.engine, config, dir, &specs(names)) {
        Ok(store) => store,
        Err(e) => panic!("open failed: {e}"),
    }
}

/// Key `i`: `key0000`, `key0001`, ...
pub(crate) fn key(i: usize) -> Vec<u8> {
    format!("key{i:04}").into_bytes()
}

/// Puts `count` keys into `table`, the value of key i being i + 1
/// bytes long (so that a scan's byte counts show its order).
pub(crate) fn fill(store: &dyn Store, table: usize, count: usize) {
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

/// The bytes of each entry a scan of `table` visits, in its order, up to
/// `limit` entries (the visit returns false at the `limit`th).
pub(crate) fn scanned(store: &dyn Store, table: usize, forward: bool, limit: usize) -> Vec<u64> {
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

/// The checks every adapter passes (see `conformance`), on two tables.
pub(crate) fn does_what_every_engine_does(engine: Engine) {
    conformance::all(&|dir: &Path| open_store(&config(engine), dir, &["default", "other"]));
}

/// A seek finds an existing key, lands after a missing one without
/// finding it, counts the bytes of the user keys and values it steps
/// over, and stops at the end of its table: with the table alone in the
/// database, and with another table after it, whose entries follow in
/// LevelDB's key space.
pub(crate) fn seeks_land_on_their_key_and_stop_at_the_end_of_their_table(engine: Engine) {
    for names in [&["default"][..], &["default", "next"]] {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open_store(&config(engine), dir.path(), names);
        for table in 0..names.len() {
            fill(store.as_ref(), table, 10);
        }
        let mut session = store.session().expect("session");
        let mut seek =
            |table: usize, key: &[u8], steps: usize| session.seek(table, key, steps).expect("seek");
        let result = |found: bool, bytes: u64| Seek { found, bytes };
        let at = format!("{engine}, tables {names:?}");
        // key0003's value is 4 bytes, key0004's 5, key0005's 6.
        assert_eq!(
            seek(0, &key(3), 3),
            result(true, (7 + 4) + (7 + 5) + (7 + 6)),
            "{at}"
        );
        assert_eq!(seek(0, b"key0003x", 1), result(false, 7 + 5), "{at}");
        // Two entries remain from key0008: 10 steps read only those.
        assert_eq!(
            seek(0, &key(8), 10),
            result(true, (7 + 9) + (7 + 10)),
            "{at}"
        );
        assert_eq!(seek(0, b"zzz", 5), result(false, 0), "{at}");
        assert_eq!(seek(0, &key(0), 0), result(true, 0), "{at}");
        if names.len() > 1 {
            assert_eq!(seek(1, &key(9), 5), result(true, 7 + 10), "{at}");
        }
        drop(session);
        store.close().expect("close");
    }
}

/// With three tables, a scan of each sees only its own entries, in
/// ascending order forward and descending in reverse (value lengths grow
/// with the key), the first and last tables included (in LevelDB's key
/// space their reverse scans start from the next prefix or the
/// database's end); a visit that returns false stops the scan, and an
/// empty table between two full ones scans nothing either way.
pub(crate) fn scans_run_in_order_both_ways_within_their_table(engine: Engine) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open_store(&config(engine), dir.path(), &["a", "b", "c"]);
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

    let dir = tempfile::tempdir().expect("tempdir");
    let store = open_store(&config(engine), dir.path(), &["a", "b", "c"]);
    fill(store.as_ref(), 0, 5);
    fill(store.as_ref(), 2, 5);
    assert!(scanned(store.as_ref(), 1, true, usize::MAX).is_empty());
    assert!(scanned(store.as_ref(), 1, false, usize::MAX).is_empty());
    store.close().expect("close");
}
