//! Tests of the vacuum's slices through a database: writers commit
//! between them, and what they write survives the vacuum.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use super::btree_work::vacuum_btree_between;
use crate::error::Result;
use crate::{Db, Options, Table, TableOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn scan(t: &Table) -> Model {
    t.iter()
        .expect("iter")
        .collect::<Result<_>>()
        .expect("scan")
}

#[test]
fn writers_commit_between_the_slices_of_a_vacuum_and_it_packs_what_they_leave() {
    // Goal: the vacuum holds writers back for a slice at a time, not
    // for the whole table: the commit lock is free between slices, and
    // a writer's puts, overwrites and deletes there (new keys, large
    // values, keys the vacuum has packed or not yet reached) are all
    // read back, through the vacuum, a verify and a reopen, while the
    // vacuum still gives the table's space back.
    let dir = tempfile::tempdir().expect("tempdir");
    let options = || Options {
        background_threads: 0,
        autowork: false,
        ..Options::default()
    };
    let db = Db::open(dir.path(), options()).expect("open");
    let table = TableOptions {
        page_size: 4096,
        ..TableOptions::btree()
    };
    let t = db.create_table("t", table).expect("table");
    let keys = 80_000u64;
    let key = |i: u64| format!("key{:08}", i * 7919 % keys).into_bytes();
    // Every 50th value takes an overflow run (4 KiB pages hold inline
    // values up to about 990 bytes).
    let value = |i: u64, len: usize| vec![b'a' + (i % 26) as u8; len];
    let mut model = Model::new();
    for i in 0..keys {
        let v = value(i, if i % 50 == 0 { 3000 } else { 100 });
        t.put(&key(i), &v).expect("put");
        model.insert(key(i), v);
    }
    db.checkpoint().expect("checkpoint");
    let kept = keys / 10;
    for i in kept..keys {
        t.delete(&key(i)).expect("delete");
        model.remove(&key(i));
    }
    db.checkpoint().expect("checkpoint");
    let shape = |t: &Table| t.shape().expect("shape").btree.expect("a B-tree");
    let file = |t: &Table| shape(t).file_bytes;
    let sparse = file(&t);
    let leaves = shape(&t).leaf_pages;
    let inner = &db.inner;
    let [bt] = &inner.btrees()[..] else {
        panic!("not one B-tree table");
    };
    let slices = AtomicU64::new(0);
    let model = parking_lot::Mutex::new(model);
    // The most leaves one slice packed away.
    let (last_leaves, most_packed) = (AtomicU64::new(leaves), AtomicU64::new(0));
    let between = || {
        let n = slices.fetch_add(1, Ordering::Relaxed);
        let now = shape(&t).leaf_pages;
        let before = last_leaves.swap(now, Ordering::Relaxed);
        most_packed.fetch_max(before.saturating_sub(now), Ordering::Relaxed);
        assert!(
            inner.commit.try_lock().is_some(),
            "the commit lock is held between slices"
        );
        let mut model = model.lock();
        let new = format!("new{n:06}").into_bytes();
        let v = value(n, if n.is_multiple_of(4) { 5000 } else { 100 });
        t.put(&new, &v).expect("put between slices");
        model.insert(new, v);
        let old = key((n * 37) % kept);
        let v = value(n + 1, 200);
        t.put(&old, &v).expect("overwrite between slices");
        model.insert(old, v);
        let gone = key((n * 101 + 7) % kept);
        t.delete(&gone).expect("delete between slices");
        model.remove(&gone);
    };
    vacuum_btree_between(inner, bt, &between).expect("vacuum");
    let model = model.into_inner();
    let slices = slices.into_inner();
    let after = file(&t);
    let most_packed = most_packed.into_inner();
    println!(
        "{slices} slices for {leaves} leaves, at most {most_packed} packed away in one; \
         file {sparse} -> {after} bytes; {} keys",
        model.len()
    );
    // A slice goes through 256 leaves at most (`SLICE_ROUTES`).
    assert!(
        most_packed <= 256,
        "one slice packed {most_packed} leaves of {leaves} away"
    );
    assert!(
        after * 4 < sparse,
        "the file went from {sparse} to {after} bytes"
    );
    assert!(scan(&t) == model, "after the vacuum");
    for (k, v) in &model {
        assert_eq!(t.get(k).expect("get").as_ref(), Some(v));
    }
    db.verify().expect("verify");
    drop(t);
    db.close().expect("close");
    let db = Db::open(dir.path(), options()).expect("reopen");
    assert!(
        scan(&db.table("t").expect("table")) == model,
        "after reopen"
    );
    db.verify().expect("verify after reopen");
}
