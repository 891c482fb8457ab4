//! What every engine's `Store` must do, as tests each adapter runs on
//! itself: batches of puts and deletes over two tables read back, seeks
//! land and step, scans see every entry both ways and stop when told, data
//! survives a close and a reopen, and sessions in several threads work at
//! once. An adapter's own tests add what is particular to its engine.
//!
//! Every check opens its stores with `open(dir)`, which must open (creating
//! if need be) the engine's database in `dir` with two tables.
//!
//! Thread-safety: test code; `threads_work_at_once` shares one store
//! between four threads.

use std::path::Path;

use super::{Batch, Store};

/// Opens an engine's database with two tables in a directory.
pub(crate) type Open<'a> = &'a dyn Fn(&Path) -> Box<dyn Store>;

/// Keys `fill` writes in each table.
const KEYS: usize = 100;

/// Table 0's key `i`: `k000` to `k099`.
fn key(i: usize) -> Vec<u8> {
    format!("k{i:03}").into_bytes()
}

/// Bytes of table 0's entry `i`: a 4-byte key and an `i % 13 + 1`-byte
/// value, so that the byte counts of a scan show the order it went in.
fn entry_bytes(i: usize) -> u64 {
    4 + (i % 13 + 1) as u64
}

/// The entries of table 0 that `fill` leaves (`k050` is deleted).
fn live() -> Vec<usize> {
    (0..KEYS).filter(|&i| i != 50).collect()
}

/// Writes table 0's keys and `x000`..`x099` (1-byte values) to table 1 in
/// one batch; then deletes `k050` and a key never written; then overwrites
/// `x001` with a 2-byte value beside a put of `x100`, in one batch.
fn fill(store: &dyn Store) {
    let mut s = store.session().expect("session");
    let mut b = Batch::new();
    for i in 0..KEYS {
        b.put(0, &key(i), &vec![b'v'; i % 13 + 1]);
        b.put(1, format!("x{i:03}").as_bytes(), b"y");
    }
    s.write(&b).expect("write a batch over two tables");
    b.clear();
    b.delete(0, b"k050");
    b.delete(0, b"never-written");
    s.write(&b).expect("deletes, one of a missing key");
    b.clear();
    b.put(1, b"x001", b"zz");
    b.put(1, b"x100", b"z");
    s.write(&b).expect("an overwrite and a put");
}

/// What `fill` leaves, read through one session.
fn check(store: &dyn Store) {
    let mut s = store.session().expect("session");
    // Gets: values, deletes, overwrites, and the tables kept apart.
    assert_eq!(s.get(0, &key(1)).expect("get"), Some(2));
    assert_eq!(s.get(0, &key(12)).expect("get"), Some(13));
    assert_eq!(s.get(0, b"k050").expect("get"), None, "deleted");
    assert_eq!(s.get(0, b"never-written").expect("get"), None);
    assert_eq!(s.get(1, b"x001").expect("get"), Some(2), "overwritten");
    assert_eq!(s.get(1, b"x100").expect("get"), Some(1));
    assert_eq!(s.get(1, &key(1)).expect("get"), None, "another table's key");
    assert_eq!(s.get(0, b"x001").expect("get"), None, "another table's key");
    // Seeks: on a key, between keys (over the deleted one), near the end,
    // past the end, before the first key, with no steps.
    let seek = s.seek(0, &key(10), 3).expect("seek");
    assert!(seek.found);
    assert_eq!(
        seek.bytes,
        entry_bytes(10) + entry_bytes(11) + entry_bytes(12)
    );
    let seek = s.seek(0, b"k049x", 2).expect("seek");
    assert!(!seek.found, "lands on k051");
    assert_eq!(seek.bytes, entry_bytes(51) + entry_bytes(52));
    let seek = s.seek(0, &key(98), 5).expect("seek");
    assert!(seek.found);
    assert_eq!(seek.bytes, entry_bytes(98) + entry_bytes(99), "the end");
    let seek = s.seek(0, b"zzz", 3).expect("seek");
    assert!(!seek.found);
    assert_eq!(seek.bytes, 0, "nothing past the end");
    let seek = s.seek(0, b"a", 1).expect("seek");
    assert!(!seek.found);
    assert_eq!(seek.bytes, entry_bytes(0), "lands on the first key");
    let seek = s.seek(0, &key(20), 0).expect("seek");
    assert!(seek.found);
    assert_eq!(seek.bytes, 0);
    // Scans: every entry once, in key order forward and the reverse
    // backward; a scan stops when told.
    let forward: Vec<u64> = live().into_iter().map(entry_bytes).collect();
    let backward: Vec<u64> = forward.iter().rev().copied().collect();
    for (direction, expected) in [(true, &forward), (false, &backward)] {
        let mut seen = Vec::new();
        s.scan(0, direction, &mut |bytes| {
            seen.push(bytes);
            true
        })
        .expect("scan");
        assert_eq!(&seen, expected, "forward {direction}");
    }
    let mut bytes = 0;
    s.scan(1, true, &mut |b| {
        bytes += b;
        true
    })
    .expect("scan");
    assert_eq!(
        bytes,
        KEYS as u64 * 5 + 1 + 5,
        "table 1: 101 entries, one of 6 bytes"
    );
    let mut n = 0;
    s.scan(1, false, &mut |_| {
        n += 1;
        n < 10
    })
    .expect("scan");
    assert_eq!(n, 10, "a scan stops when told");
}

/// Writes, reads back, closes.
pub(crate) fn writes_read_back(open: Open<'_>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    fill(store.as_ref());
    check(store.as_ref());
    store.close().expect("close");
}

/// Writes, closes, reopens, and finds it all.
pub(crate) fn data_survives_close_and_reopen(open: Open<'_>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let first = open(dir.path());
    fill(first.as_ref());
    first.close().expect("close");
    let again = open(dir.path());
    check(again.as_ref());
    again.close().expect("close");
}

/// Two writer and two reader threads, each with its own session, at once;
/// every write is there after.
pub(crate) fn threads_work_at_once(open: Open<'_>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    std::thread::scope(|scope| {
        for t in 0..4u32 {
            let store = store.as_ref();
            scope.spawn(move || {
                let mut s = store.session().expect("session");
                let mut b = Batch::new();
                for i in 0..200u32 {
                    if t < 2 {
                        b.clear();
                        b.put(0, format!("t{t}-{i:04}").as_bytes(), b"v");
                        s.write(&b).expect("write");
                    } else {
                        s.get(0, format!("t0-{i:04}").as_bytes()).expect("get");
                        s.seek(0, format!("t1-{i:04}").as_bytes(), 2).expect("seek");
                    }
                }
            });
        }
    });
    let mut s = store.session().expect("session");
    let mut n = 0;
    s.scan(0, true, &mut |_| {
        n += 1;
        true
    })
    .expect("scan");
    assert_eq!(n, 400);
    drop(s);
    store.close().expect("close");
}

/// Every check above.
/// An engine that deletes ranges (`Store::deletes_ranges`) deletes exactly
/// `[start, end)`, in one batch with other writes, and in a table of its
/// own only.
pub(crate) fn ranges_delete_what_they_cover(open: Open<'_>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    if !store.deletes_ranges() {
        store.close().expect("close");
        return;
    }
    fill(store.as_ref());
    let mut s = store.session().expect("session");
    let mut b = Batch::new();
    b.delete_range(0, &key(10), &key(20));
    b.put(0, &key(15), b"again");
    b.delete_range(0, &key(90), b"l"); // past the last key
    b.delete_range(1, b"x000", b"x000"); // empty
    s.write(&b).expect("range deletes in a batch");
    for i in 0..KEYS {
        let gone = (10..20).contains(&i) && i != 15 || i >= 90 || i == 50;
        let found = s.get(0, &key(i)).expect("get");
        assert_eq!(found.is_none(), gone, "k{i:03}");
    }
    let mut count = 0;
    s.scan(1, true, &mut |_| {
        count += 1;
        true
    })
    .expect("scan");
    assert_eq!(count, 101, "the other table is untouched");
    drop(s);
    store.close().expect("close");
}

/// A session that keeps what it seeks with (spinney's cursor, RocksDB's
/// refreshed iterator, WiredTiger's and LMDB's cursors) sees what was
/// written after its last seek, by itself or by another session.
pub(crate) fn seeks_see_later_writes(open: Open<'_>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    let mut reader = store.session().expect("session");
    let mut writer = store.session().expect("session");
    let mut b = Batch::new();
    b.put(0, b"m1", b"one");
    writer.write(&b).expect("write");
    assert!(reader.seek(0, b"m1", 1).expect("seek").found);
    assert!(!reader.seek(0, b"m2", 1).expect("seek").found);
    b.clear();
    b.put(0, b"m2", b"two");
    writer.write(&b).expect("write");
    assert!(
        reader.seek(0, b"m2", 1).expect("seek").found,
        "another session's write"
    );
    b.clear();
    b.put(0, b"m3", b"three");
    b.delete(0, b"m1");
    reader.write(&b).expect("write");
    assert!(
        reader.seek(0, b"m3", 1).expect("seek").found,
        "its own write"
    );
    let seek = reader.seek(0, b"m1", 1).expect("seek");
    assert!(!seek.found, "a key deleted since the last seek");
    drop(reader);
    drop(writer);
    store.close().expect("close");
}

pub(crate) fn all(open: Open<'_>) {
    seeks_see_later_writes(open);
    writes_read_back(open);
    data_survives_close_and_reopen(open);
    threads_work_at_once(open);
    ranges_delete_what_they_cover(open);
}
