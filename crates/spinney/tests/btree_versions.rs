//! B-tree tables keep every version a snapshot can see, even when one key's
//! versions fill more than a page and are split between leaves.

use spinney::{Db, Options, ReadOptions, Snapshot, TableOptions};

fn value(i: usize) -> Vec<u8> {
    format!("value-{i:05}-").repeat(8).into_bytes()
}

#[test]
fn a_key_with_more_versions_than_a_page_holds_reads_right_at_every_snapshot() {
    // Goal: versions of one key spread over several leaves (splits inside a
    // user key, separators with seqnos) are found by get, by a snapshot's get
    // and by scans in both directions, before and after reopen.
    // Method: 4 KiB pages; 300 overwrites of one key between neighbours,
    // each pinned by a snapshot, so no version can be pruned.
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), Options::default()).expect("open");
    let t = db
        .create_table(
            "t",
            TableOptions {
                page_size: 4096,
                ..TableOptions::btree()
            },
        )
        .expect("table");
    for k in 0..50u32 {
        t.put(format!("a{k:03}").as_bytes(), b"left").expect("put");
        t.put(format!("z{k:03}").as_bytes(), b"right").expect("put");
    }
    let mut snaps: Vec<Snapshot> = Vec::new();
    for i in 0..300 {
        t.put(b"m", &value(i)).expect("put");
        snaps.push(db.snapshot());
        if i % 97 == 0 {
            db.checkpoint().expect("checkpoint");
        }
    }
    let shape = t.shape().expect("shape").btree.expect("btree shape");
    assert!(shape.leaf_pages >= 4, "versions did not spread: {shape:?}");
    assert!(shape.entries >= 400, "versions were pruned: {shape:?}");
    let check = |db: &Db, snaps: &[Snapshot]| {
        let t = db.table("t").expect("table");
        assert_eq!(t.get(b"m").expect("get"), Some(value(299)));
        for (i, s) in snaps.iter().enumerate() {
            assert_eq!(
                s.get(&t, b"m").expect("snapshot get"),
                Some(value(i)),
                "snapshot {i}"
            );
        }
        let forward: Vec<_> = t.iter().expect("iter").map(|r| r.expect("entry")).collect();
        let backward: Vec<_> = t
            .iter()
            .expect("iter")
            .rev()
            .map(|r| r.expect("entry"))
            .collect();
        assert_eq!(forward.len(), 101);
        assert_eq!(forward.iter().rev().cloned().collect::<Vec<_>>(), backward);
        let m = forward.iter().find(|(k, _)| k == b"m").expect("m present");
        assert_eq!(m.1, value(299));
        // A cursor at an old snapshot sees the old value between neighbours.
        if let Some(s) = snaps.get(10) {
            let mut c = t
                .cursor_with(&ReadOptions {
                    snapshot: Some(s),
                    ..ReadOptions::default()
                })
                .expect("cursor");
            c.seek(b"m");
            assert!(c.valid());
            assert_eq!((c.key(), c.value()), (&b"m"[..], &value(10)[..]));
            c.prev();
            assert_eq!(c.key(), b"a049");
            c.next();
            c.next();
            assert_eq!(c.key(), b"z000");
        }
    };
    check(&db, &snaps);
    db.verify().expect("verify");
    // Without the snapshots, the next checkpoint's copies prune the old
    // versions away.
    drop(snaps);
    for round in 0..3 {
        t.put(b"m", &value(1000 + round)).expect("put");
        for k in 0..50u32 {
            t.put(format!("a{k:03}").as_bytes(), b"left2").expect("put");
            t.put(format!("z{k:03}").as_bytes(), b"right2")
                .expect("put");
        }
        db.checkpoint().expect("checkpoint");
    }
    assert_eq!(t.get(b"m").expect("get"), Some(value(1002)));
    let after = t.shape().expect("shape").btree.expect("btree shape");
    // 100 neighbours keep at most two versions each (the one the last
    // checkpoint's copy kept, and the newest); the key keeps about two.
    assert!(after.entries <= 204, "old versions stayed: {after:?}");
    assert!(
        after.leaf_pages < shape.leaf_pages,
        "emptied leaves were not merged away: {after:?}"
    );
    db.close().expect("close");
    let db = Db::open(dir.path(), Options::default()).expect("reopen");
    let t = db.table("t").expect("table");
    assert_eq!(t.get(b"m").expect("get"), Some(value(1002)));
    assert_eq!(t.iter().expect("iter").count(), 101);
    db.verify().expect("verify");
}
