//! Range deletes on both kinds: what reads see (gets, cursors both ways,
//! snapshots taken before), across flush, compaction and reopen; what they
//! cost (an LSM scan seeks past a deleted range instead of stepping
//! through it; the tombstone goes once compaction dropped what it hides);
//! space given back; bad ranges; transactions that conflict with one.
//! The model tests (tests/model.rs) mix range deletes into random work.

use std::ops::Bound;

use spinney::{Db, Error, Options, ReadContext, Table, TableKind, TableOptions, WriteBatch};

const KINDS: [TableKind; 2] = [TableKind::Lsm, TableKind::Btree];

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn options(kind: TableKind) -> TableOptions {
    match kind {
        TableKind::Lsm => TableOptions {
            write_buffer_size: 256 << 10,
            ..TableOptions::lsm()
        },
        TableKind::Btree => TableOptions::btree(),
    }
}

fn load(db: &Db, t: &Table, n: u32) {
    let value = [7u8; 100];
    for chunk in (0..n).collect::<Vec<_>>().chunks(1000) {
        let mut b = WriteBatch::new();
        for &i in chunk {
            b.put(t, &key(i), &value);
        }
        db.write(b).expect("write");
    }
}

fn keys(r: impl Iterator<Item = spinney::Result<(Vec<u8>, Vec<u8>)>>) -> Vec<Vec<u8>> {
    r.map(|e| e.expect("entry").0).collect()
}

/// The keys of `0..n` outside `[lo, hi)`.
fn expected(n: u32, lo: u32, hi: u32) -> Vec<Vec<u8>> {
    (0..n).filter(|i| *i < lo || *i >= hi).map(key).collect()
}

fn check(t: &Table, n: u32, lo: u32, hi: u32) {
    let want = expected(n, lo, hi);
    assert_eq!(keys(t.iter().expect("iter")), want, "{} forward", t.name());
    let mut back = keys(t.iter().expect("iter").rev());
    back.reverse();
    assert_eq!(back, want, "{} backward", t.name());
    for i in [
        0,
        lo.saturating_sub(1),
        lo,
        lo + 1,
        (lo + hi) / 2,
        hi - 1,
        hi,
        n - 1,
    ] {
        let found = t.get(&key(i)).expect("get").is_some();
        assert_eq!(found, i < lo || i >= hi, "{} get {i}", t.name());
    }
    // A seek into the range lands on its end; a seek back before it on the
    // key before it.
    let mut c = t.cursor().expect("cursor");
    c.seek(&key((lo + hi) / 2));
    assert!(c.valid());
    assert_eq!(c.key(), key(hi).as_slice());
    c.seek_for_prev(&key((lo + hi) / 2));
    assert!(c.valid());
    assert_eq!(c.key(), key(lo - 1).as_slice());
    c.next();
    assert_eq!(c.key(), key(hi).as_slice());
}

#[test]
fn a_range_delete_reads_the_same_everywhere_on_both_kinds() {
    for kind in KINDS {
        let dir = tempfile::tempdir().expect("tempdir");
        let (n, lo, hi) = (20_000, 5_000, 15_000);
        {
            let db = Db::open(dir.path(), Options::default()).expect("open");
            let t = db.create_table("t", options(kind)).expect("table");
            load(&db, &t, n);
            db.flush().expect("flush");
            let before = db.snapshot();
            t.delete_range(key(lo)..key(hi)).expect("delete range");
            // In the memtable (LSM) over flushed runs.
            check(&t, n, lo, hi);
            // The snapshot from before still sees every key.
            assert_eq!(before.get(&t, &key(lo)).expect("get"), Some(vec![7; 100]));
            assert_eq!(keys(before.iter(&t).expect("iter")).len(), n as usize);
            db.flush().expect("flush");
            check(&t, n, lo, hi);
            t.compact_all().expect("compact");
            check(&t, n, lo, hi);
            assert_eq!(keys(before.iter(&t).expect("iter")).len(), n as usize);
            drop(before);
        }
        // From the log, then from the manifest.
        let db = Db::open(dir.path(), Options::default()).expect("reopen");
        let t = db.table("t").expect("table");
        check(&t, n, lo, hi);
        t.compact_all().expect("compact");
        check(&t, n, lo, hi);
        if kind == TableKind::Lsm {
            assert_eq!(
                t.shape().expect("shape").range_tombstones,
                0,
                "compaction with no reader below it drops the tombstone"
            );
        }
        db.verify().expect("verify");
        drop(db);
        let db = Db::open(dir.path(), Options::default()).expect("reopen");
        check(&db.table("t").expect("table"), n, lo, hi);
    }
}

#[test]
fn an_unreplayed_tombstone_survives_a_reopen_from_the_log_alone() {
    for kind in KINDS {
        let dir = tempfile::tempdir().expect("tempdir");
        {
            let db = Db::open(dir.path(), Options::default()).expect("open");
            let t = db.create_table("t", options(kind)).expect("table");
            load(&db, &t, 3000);
            db.flush().expect("flush");
            let mut b = WriteBatch::new();
            b.delete_range(&t, key(100)..);
            b.put(&t, &key(5000), b"after");
            db.write(b).expect("write");
        }
        let db = Db::open(dir.path(), Options::default()).expect("reopen");
        let t = db.table("t").expect("table");
        let got = keys(t.iter().expect("iter"));
        let mut want: Vec<_> = (0..100).map(key).collect();
        want.push(key(5000));
        assert_eq!(got, want, "{kind:?}");
    }
}

#[test]
fn bounds_of_every_shape() {
    for kind in KINDS {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Db::open(dir.path(), Options::default()).expect("open");
        let t = db.create_table("t", options(kind)).expect("table");
        let all = || {
            for k in ["", "a", "b", "b\0", "c", "d", "e"] {
                t.put(k.as_bytes(), b"v").expect("put");
            }
        };
        let left = |t: &Table| -> Vec<String> {
            keys(t.iter().expect("iter"))
                .into_iter()
                .map(|k| String::from_utf8(k).expect("utf8"))
                .collect()
        };
        let cases: Vec<(Bound<&str>, Bound<&str>, Vec<&str>)> = vec![
            (
                Bound::Included("b"),
                Bound::Excluded("d"),
                vec!["", "a", "d", "e"],
            ),
            (
                Bound::Excluded("b"),
                Bound::Included("d"),
                vec!["", "a", "b", "e"],
            ),
            (
                Bound::Unbounded,
                Bound::Excluded("b"),
                vec!["b", "b\0", "c", "d", "e"],
            ),
            (
                Bound::Included("c"),
                Bound::Unbounded,
                vec!["", "a", "b", "b\0"],
            ),
            (Bound::Unbounded, Bound::Unbounded, vec![]),
            (
                Bound::Included("c"),
                Bound::Excluded("c"),
                vec!["", "a", "b", "b\0", "c", "d", "e"],
            ),
            (
                Bound::Included(""),
                Bound::Included(""),
                vec!["a", "b", "b\0", "c", "d", "e"],
            ),
        ];
        for (lo, hi, want) in cases {
            all();
            let range: (Bound<&[u8]>, Bound<&[u8]>) =
                (lo.map(str::as_bytes), hi.map(str::as_bytes));
            t.delete_range::<&[u8], _>(range).expect("delete range");
            assert_eq!(left(&t), want, "{kind:?} {lo:?}..{hi:?}");
            t.delete_range::<&[u8], _>(..).expect("clear");
        }
        // A range that starts after it ends is an error, and writes nothing.
        all();
        let e = t.delete_range(&b"d"[..]..&b"b"[..]).expect_err("inverted");
        assert!(
            matches!(&e, Error::InvalidArgument(m) if m.contains("starts after it ends")),
            "{e}"
        );
        let long = vec![b'x'; spinney::limits::KEY_BYTES_MAX + 1];
        let e = t
            .delete_range(&b"a"[..]..&long[..])
            .expect_err("long bound");
        assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
        assert_eq!(left(&t).len(), 7);
    }
}

#[test]
fn a_scan_seeks_past_a_deleted_range_of_older_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), Options::default()).expect("open");
    let t = db
        .create_table("t", options(TableKind::Lsm))
        .expect("table");
    let n = 100_000;
    load(&db, &t, n);
    db.flush().expect("flush");
    t.compact_all().expect("compact");
    t.delete_range(key(1000)..key(99_000))
        .expect("delete range");
    ReadContext::enable();
    ReadContext::reset();
    let mut c = t.cursor().expect("cursor");
    c.seek(&key(999));
    assert_eq!(c.key(), key(999).as_slice());
    c.next();
    assert_eq!(c.key(), key(99_000).as_slice());
    c.prev();
    assert_eq!(c.key(), key(999).as_slice());
    let counts = ReadContext::take();
    ReadContext::disable();
    // 98,000 keys of 116 bytes fill some 2,800 blocks of 4 KiB; seeking
    // past them reads a handful.
    let blocks = counts.blocks_from_cache + counts.blocks_from_storage;
    assert!(blocks < 20, "{counts:?}");
    assert!(counts.keys_compared < 1000, "{counts:?}");
}

#[test]
fn compaction_keeps_what_a_snapshot_needs_then_drops_the_tombstone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), Options::default()).expect("open");
    let t = db
        .create_table("t", options(TableKind::Lsm))
        .expect("table");
    load(&db, &t, 20_000);
    t.compact_all().expect("compact");
    let full = t
        .shape()
        .expect("shape")
        .levels
        .iter()
        .map(|l| l.bytes)
        .sum::<u64>();
    let before = db.snapshot();
    t.delete_range(key(0)..key(18_000)).expect("delete range");
    db.flush().expect("flush");
    t.compact_all().expect("compact");
    let shape = t.shape().expect("shape");
    assert_eq!(shape.range_tombstones, 1, "a snapshot still sees below it");
    assert_eq!(keys(before.iter(&t).expect("iter")).len(), 20_000);
    assert_eq!(keys(t.iter().expect("iter")).len(), 2_000);
    drop(before);
    t.compact_all().expect("compact");
    let shape = t.shape().expect("shape");
    assert_eq!(shape.range_tombstones, 0);
    let left = shape.levels.iter().map(|l| l.bytes).sum::<u64>();
    assert!(left * 5 < full, "{left} of {full} bytes left");
    assert_eq!(keys(t.iter().expect("iter")).len(), 2_000);
    // Writes after the range delete are not hidden by it.
    t.put(&key(5), b"new").expect("put");
    assert_eq!(t.get(&key(5)).expect("get"), Some(b"new".to_vec()));
}

#[test]
fn a_range_over_nothing_goes_at_its_flush() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), Options::default()).expect("open");
    let t = db
        .create_table("t", options(TableKind::Lsm))
        .expect("table");
    load(&db, &t, 1000);
    db.flush().expect("flush");
    t.delete_range(&b"zzz"[..]..).expect("delete range");
    assert_eq!(t.shape().expect("shape").range_tombstones, 1);
    db.flush().expect("flush");
    assert_eq!(t.shape().expect("shape").range_tombstones, 0);
    assert_eq!(keys(t.iter().expect("iter")).len(), 1000);
}

#[test]
fn a_btree_gives_the_space_of_a_deleted_range_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), Options::default()).expect("open");
    let t = db
        .create_table("t", options(TableKind::Btree))
        .expect("table");
    load(&db, &t, 50_000);
    db.checkpoint().expect("checkpoint");
    let full = t.shape().expect("shape").btree.expect("btree").file_bytes;
    t.delete_range(key(0)..key(45_000)).expect("delete range");
    // Once the commit is published, the leaves the deletes went into are
    // pruned and packed: the deleted keys' versions are gone at once.
    let after = t.shape().expect("shape").btree.expect("btree");
    assert!(after.entries < 5_100, "{after:?}");
    assert!(after.leaf_pages * 4 < full / 8192, "{after:?}");
    db.checkpoint().expect("checkpoint");
    t.compact_all().expect("compact");
    let shape = t.shape().expect("shape").btree.expect("btree");
    // (Entries count versions: a few tombstones wait for their leaf's
    // next prune.)
    assert!(shape.entries < 5_100, "{shape:?}");
    assert!(
        shape.file_bytes * 4 < full,
        "{} of {full} bytes",
        shape.file_bytes
    );
    assert_eq!(keys(t.iter().expect("iter")).len(), 5_000);
}

#[test]
fn a_range_delete_conflicts_with_a_transaction_that_wrote_a_key_in_it() {
    for kind in KINDS {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Db::open(dir.path(), Options::default()).expect("open");
        let t = db.create_table("t", options(kind)).expect("table");
        load(&db, &t, 100);
        let mut tx = db.begin();
        tx.put(&t, &key(50), b"mine").expect("put");
        t.delete_range(key(40)..key(60)).expect("delete range");
        let e = tx.commit().expect_err("conflict");
        assert!(matches!(e, Error::Conflict { .. }), "{kind:?}: {e}");
        assert_eq!(t.get(&key(50)).expect("get"), None);
        // Outside the range: no conflict.
        let mut tx = db.begin();
        tx.put(&t, &key(70), b"mine").expect("put");
        t.delete_range(key(40)..key(60)).expect("delete range");
        tx.commit().expect("commit");
    }
}

#[test]
fn a_transaction_sees_its_own_range_delete_and_conflicts_as_a_write_of_the_range() {
    for kind in KINDS {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Db::open(dir.path(), Options::default()).expect("open");
        let t = db.create_table("t", options(kind)).expect("table");
        load(&db, &t, 100);
        db.flush().expect("flush");
        let mut tx = db.begin();
        tx.put(&t, &key(15), b"before").expect("put");
        tx.delete_range(&t, key(10)..key(20)).expect("delete range");
        tx.put(&t, &key(12), b"after").expect("put");
        assert_eq!(tx.get(&t, &key(15)).expect("get"), None, "{kind:?}");
        assert_eq!(tx.get(&t, &key(12)).expect("get"), Some(b"after".to_vec()));
        assert_eq!(tx.get(&t, &key(20)).expect("get"), Some(vec![7; 100]));
        let want: Vec<Vec<u8>> = (0..10).chain([12]).chain(20..100).map(key).collect();
        assert_eq!(keys(tx.iter(&t).expect("iter")), want);
        let mut back = keys(tx.iter(&t).expect("iter").rev());
        back.reverse();
        assert_eq!(back, want);
        // Outside the transaction nothing changed yet.
        assert_eq!(keys(t.iter().expect("iter")).len(), 100);
        tx.commit().expect("commit");
        assert_eq!(keys(t.iter().expect("iter")), want, "{kind:?}");

        // A write into the range since the snapshot, flushed to a file or
        // not: the range delete conflicts; one outside it does not.
        for flush in [false, true] {
            let mut tx = db.begin();
            tx.delete_range(&t, key(30)..key(40)).expect("delete range");
            t.put(&key(50), b"outside").expect("put");
            tx.commit().expect("no conflict");
            let mut tx = db.begin();
            tx.delete_range(&t, key(60)..key(70)).expect("delete range");
            t.put(&key(65), b"inside").expect("put");
            if flush {
                db.flush().expect("flush");
            }
            let e = tx.commit().expect_err("conflict");
            assert!(matches!(e, Error::Conflict { .. }), "{kind:?} {flush}: {e}");
            assert_eq!(t.get(&key(65)).expect("get"), Some(b"inside".to_vec()));
            // A range delete committed since conflicts with a range over it.
            let mut tx = db.begin();
            tx.delete_range(&t, key(80)..).expect("delete range");
            t.delete_range(key(0)..key(81)).expect("delete range");
            let e = tx.commit().expect_err("conflict");
            assert!(matches!(e, Error::Conflict { .. }), "{kind:?} {flush}: {e}");
            load(&db, &t, 100);
        }
    }
}
