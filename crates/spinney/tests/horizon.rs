//! One rule for which old versions stay (`mvcc::Horizon`): a version stays
//! while some reader's seqno falls between it and the next newer version
//! of its key. LSM compaction keeps exactly those, not every version newer
//! than the oldest snapshot; both kinds read right at every snapshot.

use spinney::{Db, Options, Snapshot, Table, TableOptions};

/// Writes k = v1, snapshot A, k = v2, k = v3, snapshot B, a flush, k = v4,
/// v5, v6, and j = x then a delete of j; returns the snapshots. (The flush
/// makes two runs of an LSM table, so that a full compaction merges them
/// rather than moving one file down.)
fn versions_between_snapshots(db: &Db, t: &Table) -> (Snapshot, Snapshot) {
    t.put(b"k", b"v1").expect("put");
    let a = db.snapshot();
    t.put(b"k", b"v2").expect("put");
    t.put(b"k", b"v3").expect("put");
    let b = db.snapshot();
    t.flush().expect("flush");
    for v in [&b"v4"[..], b"v5", b"v6"] {
        t.put(b"k", v).expect("put");
    }
    t.put(b"j", b"x").expect("put");
    t.delete(b"j").expect("delete");
    (a, b)
}

fn reads_right(t: &Table, a: &Snapshot, b: &Snapshot) {
    assert_eq!(a.get(t, b"k").expect("get"), Some(b"v1".to_vec()));
    assert_eq!(b.get(t, b"k").expect("get"), Some(b"v3".to_vec()));
    assert_eq!(t.get(b"k").expect("get"), Some(b"v6".to_vec()));
    assert_eq!(t.get(b"j").expect("get"), None);
    assert_eq!(a.get(t, b"j").expect("get"), None);
    let now: Vec<_> = t.iter().expect("iter").map(|e| e.expect("entry")).collect();
    assert_eq!(now, vec![(b"k".to_vec(), b"v6".to_vec())]);
    let at_b: Vec<_> = b
        .range(t, &b""[..]..)
        .expect("range")
        .rev()
        .map(|e| e.expect("entry"))
        .collect();
    assert_eq!(at_b, vec![(b"k".to_vec(), b"v3".to_vec())]);
}

#[test]
fn compaction_keeps_only_the_versions_some_snapshot_reads() {
    // Goal: after a full compaction the LSM table holds, of k, the version
    // each snapshot reads and the newest (v1, v3, v6: three entries), not
    // every version newer than the oldest snapshot (six); of j, only the
    // tombstone (the put under it is read by no one, and the tombstone
    // stays while snapshot A is older than it). Once the snapshots are
    // gone, another compaction leaves k = v6 alone. Method: count the
    // entries `verify` checks, and read at each snapshot.
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), Options::default()).expect("open");
    let t = db.create_table("t", TableOptions::lsm()).expect("table");
    let (a, b) = versions_between_snapshots(&db, &t);
    t.compact_all().expect("compact");
    assert_eq!(db.verify().expect("verify"), 4);
    reads_right(&t, &a, &b);

    drop((a, b));
    t.put(b"other", b"o").expect("put");
    t.delete(b"other").expect("delete");
    t.compact_all().expect("compact");
    assert_eq!(db.verify().expect("verify"), 1);
    assert_eq!(t.get(b"k").expect("get"), Some(b"v6".to_vec()));
}

#[test]
fn both_kinds_read_right_at_every_snapshot_after_their_work() {
    // Goal: the same history read the same way from both kinds after each
    // one's work (compaction, checkpoint) and after reopen (the snapshots
    // end with the process; the newest values stay).
    for options in [TableOptions::lsm(), TableOptions::btree()] {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Db::open(dir.path(), Options::default()).expect("open");
        let t = db.create_table("t", options.clone()).expect("table");
        let (a, b) = versions_between_snapshots(&db, &t);
        reads_right(&t, &a, &b);
        t.compact_all().expect("compact");
        reads_right(&t, &a, &b);
        drop((a, b, t));
        db.close().expect("close");
        let db = Db::open(dir.path(), Options::default()).expect("reopen");
        let t = db.table("t").expect("table");
        assert_eq!(t.get(b"k").expect("get"), Some(b"v6".to_vec()));
        assert_eq!(t.get(b"j").expect("get"), None);
        assert!(db.verify().expect("verify") > 0, "{:?}", options.kind);
    }
}
