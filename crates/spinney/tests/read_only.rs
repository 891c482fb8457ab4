//! Read-only opens (`Options::read_only`): they read everything, the log's
//! unflushed and unchecked-in writes included, share the directory with
//! each other but not with a writer, refuse every write with
//! `Error::ReadOnly`, and leave every byte of the directory as it was.

use std::collections::BTreeMap;
use std::path::Path;

use spinney::{Db, Error, Options, TableOptions, WriteBatch};

mod common;

fn read_only() -> Options {
    Options {
        read_only: true,
        ..Options::default()
    }
}

/// Every file of the directory, with its bytes.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| {
            let e = e.expect("entry");
            let name = e.file_name().to_string_lossy().into_owned();
            (name, std::fs::read(e.path()).expect("read"))
        })
        .collect()
}

/// A database of both kinds whose newest writes are only in the log: an
/// LSM table flushed once (SSTs and a memtable's worth in the log), and a
/// B-tree table checkpointed once (its later writes in the log).
fn make(dir: &Path) -> BTreeMap<(String, Vec<u8>), Vec<u8>> {
    let db = Db::open(dir, Options::default()).expect("open");
    let lsm = db.create_table("lsm", TableOptions::lsm()).expect("lsm");
    let btree = db
        .create_table("btree", common::btree_table())
        .expect("btree");
    let mut model = BTreeMap::new();
    for round in 0..2 {
        for i in 0..500u32 {
            let key = format!("k{i:04}").into_bytes();
            let value = format!("v{round}-{i}").into_bytes();
            let mut b = WriteBatch::new();
            b.put(&lsm, &key, &value);
            b.put(&btree, &key, &value);
            db.write(b).expect("write");
            model.insert(("lsm".to_string(), key.clone()), value.clone());
            model.insert(("btree".to_string(), key), value);
        }
        if round == 0 {
            db.flush().expect("flush");
        }
    }
    lsm.delete(b"k0007").expect("delete");
    model.remove(&("lsm".to_string(), b"k0007".to_vec()));
    db.close().expect("close");
    model
}

fn read_all(db: &Db) -> BTreeMap<(String, Vec<u8>), Vec<u8>> {
    let mut all = BTreeMap::new();
    for name in ["lsm", "btree"] {
        for entry in db.table(name).expect("table").iter().expect("iter") {
            let (k, v) = entry.expect("entry");
            all.insert((name.to_string(), k), v);
        }
    }
    all
}

#[test]
fn two_read_only_opens_read_everything_and_change_no_byte() {
    let dir = tempfile::tempdir().expect("tempdir");
    let model = make(dir.path());
    let before = files(dir.path());

    let a = Db::open(dir.path(), read_only()).expect("first read-only open");
    let b = Db::open(dir.path(), read_only()).expect("a second beside it");
    assert_eq!(
        read_all(&a),
        model,
        "the log's writes are replayed in memory"
    );
    assert_eq!(read_all(&b), model);
    let t = a.table("btree").expect("table");
    assert_eq!(t.get(b"k0499").expect("get"), Some(b"v1-499".to_vec()));
    let snap = a.snapshot();
    assert_eq!(
        snap.get(&a.table("lsm").expect("table"), b"k0007")
            .expect("get"),
        None
    );
    assert!(a
        .stats()
        .read_only_reason
        .is_some_and(|r| r.contains("read-only")));

    // A writer cannot open it meanwhile.
    assert!(matches!(
        Db::open(dir.path(), Options::default()),
        Err(Error::Locked { .. })
    ));
    drop(b);
    a.close().expect("close");
    assert_eq!(files(dir.path()), before, "the directory is as it was");

    // And a writer can, after.
    let w = Db::open(dir.path(), Options::default()).expect("writer");
    assert_eq!(read_all(&w), model);
    // While it is open, a read-only open is refused.
    assert!(matches!(
        Db::open(dir.path(), read_only()),
        Err(Error::Locked { .. })
    ));
}

#[test]
fn every_write_of_a_read_only_open_is_refused_saying_why() {
    let dir = tempfile::tempdir().expect("tempdir");
    make(dir.path());
    let before = files(dir.path());
    let db = Db::open(dir.path(), read_only()).expect("open");
    let lsm = db.table("lsm").expect("table");
    let btree = db.table("btree").expect("table");
    let refused = |what: &str, r: spinney::Result<()>| match r {
        Err(Error::ReadOnly { reason }) => {
            assert!(reason.contains("opened read-only"), "{what}: {reason}")
        }
        other => panic!("{what}: {other:?}"),
    };
    refused("put", lsm.put(b"x", b"y"));
    refused("delete", btree.delete(b"k0001"));
    let mut batch = WriteBatch::new();
    batch.put(&lsm, b"x", b"y");
    refused("write", db.write(batch));
    let mut tx = db.begin();
    tx.put(&btree, b"x", b"y").expect("buffered");
    refused("commit", tx.commit());
    refused("flush", db.flush());
    refused("checkpoint", btree.checkpoint());
    refused("compact_all", lsm.compact_all());
    refused("compact_level", lsm.compact_level(0));
    refused("wait_for_compaction", db.wait_for_compaction());
    refused("work", db.work(1 << 20).map(|_| ()));
    refused(
        "create_table",
        db.create_table("new", TableOptions::lsm()).map(|_| ()),
    );
    refused("drop_table", db.drop_table("lsm"));
    let e = lsm.put(b"x", b"y").expect_err("refused");
    assert!(e.to_string().contains("refuses writes"), "{e}");
    // Reads still work after all that.
    assert_eq!(btree.get(b"k0001").expect("get"), Some(b"v1-1".to_vec()));
    drop(db);
    assert_eq!(files(dir.path()), before);
}

#[test]
fn a_read_only_open_needs_a_database_and_makes_none() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("nothing");
    let e = Db::open(&missing, read_only()).expect_err("no database");
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    assert!(!missing.exists(), "no directory made");
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).expect("mkdir");
    assert!(Db::open(&empty, read_only()).is_err());
    assert!(
        files(&empty).is_empty(),
        "nothing made in an empty directory"
    );
    let e = Db::open(
        &empty,
        Options {
            error_if_exists: true,
            ..read_only()
        },
    )
    .expect_err("contradiction");
    assert!(e.to_string().contains("read_only"), "{e}");
}

#[test]
fn a_read_only_open_that_would_write_a_b_tree_overflow_page_says_so() {
    // A value too large for a B-tree leaf goes to overflow pages when it is
    // applied, also when the log is replayed: a read-only open cannot, and
    // says so instead of writing. Opened for writing once, the log is
    // checkpointed, and a read-only open then works.
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let db = Db::open(dir.path(), Options::default()).expect("open");
        let t = db.create_table("t", common::btree_table()).expect("table");
        t.put(b"big", &vec![9u8; 50_000]).expect("put");
        db.close().expect("close");
    }
    let before = files(dir.path());
    match Db::open(dir.path(), read_only()) {
        Err(Error::Unsupported(why)) => assert!(why.contains("read-only"), "{why}"),
        other => panic!("expected Unsupported, got {:?}", other.map(|_| ())),
    }
    assert_eq!(files(dir.path()), before, "the refused open wrote nothing");
    drop(Db::open(dir.path(), Options::default()).expect("writable open"));
    let db = Db::open(dir.path(), read_only()).expect("read-only open");
    assert_eq!(
        db.table("t").expect("t").get(b"big").expect("get"),
        Some(vec![9u8; 50_000])
    );
}

#[test]
fn a_read_only_open_whose_log_dirties_more_pages_than_the_cache_holds_opens_and_reads() {
    // Goal: a read-only open keeps the pages the log's replay changes in
    // the cache (it may not write them), past the cache's budget; the
    // pages it cannot let go must not make every later page read sweep
    // the cache for room that is not there. A B-tree table after random
    // overwrites, opened read-only with a cache of a tenth of its leaves,
    // opens within a minute and reads whole. Before, every page the replay read swept the whole cache for
    // room, and the open had not ended after a minute. (The time is a
    // bound on a hang, not a measure of speed.)
    let dir = tempfile::tempdir().expect("tempdir");
    let keys = 40_000u32;
    // A permutation of 0..keys (7919 is prime to 40,000): every key once.
    let key = |i: u32| format!("key{:08}", u64::from(i) * 7919 % u64::from(keys)).into_bytes();
    {
        let db = Db::open(dir.path(), Options::default()).expect("open");
        let t = db.create_table("t", common::btree_table()).expect("table");
        for i in 0..keys {
            t.put(&key(i), &[b'a'; 100]).expect("put");
        }
        db.checkpoint().expect("checkpoint");
        for i in 0..keys {
            t.put(&key(i), &[b'b'; 100]).expect("put");
        }
        db.close().expect("close");
    }
    let path = dir.path().to_path_buf();
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let options = Options {
            cache_size: 128 << 10,
            ..read_only()
        };
        let read = Db::open(&path, options).and_then(|db| {
            let t = db.table("t")?;
            let mut n = 0u32;
            for entry in t.iter()? {
                let (_, v) = entry?;
                assert_eq!(v, [b'b'; 100]);
                n += 1;
            }
            Ok(n)
        });
        let _ = done.send(read.map_err(|e| e.to_string()));
    });
    let read = finished
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("the read-only open and read did not end within a minute");
    assert_eq!(read, Ok(keys));
}
