use spinney::{Db, Options, TableOptions, WriteBatch};

#[test]
fn smoke() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        cache_size: 64 << 10,
        ..Options::default()
    };
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    let t = db.create_table("b", TableOptions::btree()).unwrap();
    let l = db.create_table("l", TableOptions::default()).unwrap();
    for i in 0..20000u32 {
        let mut b = WriteBatch::new();
        b.put(
            &t,
            format!("key{:08}", (i * 7919) % 20000).as_bytes(),
            format!("v{i}").as_bytes(),
        );
        b.put(&l, format!("key{:08}", i).as_bytes(), b"x");
        db.write(b).unwrap();
    }
    for i in (0..20000u32).step_by(3) {
        t.delete(format!("key{:08}", i).as_bytes()).unwrap();
    }
    t.put(b"big", &vec![7u8; 100_000]).unwrap();
    assert_eq!(t.get(b"big").unwrap().unwrap().len(), 100_000);
    let n = t.iter().unwrap().count();
    assert_eq!(n, 20000 - 6667 + 1);
    let rev: Vec<_> = t.iter().unwrap().rev().map(|r| r.unwrap().0).collect();
    assert_eq!(rev.len(), n);
    assert!(rev.windows(2).all(|w| w[0] > w[1]));
    assert_eq!(t.get(b"key00000001").unwrap().is_some(), true);
    assert_eq!(t.get(b"key00000003").unwrap(), None);
    let snap = db.snapshot();
    t.put(b"key00000001", b"new").unwrap();
    assert_eq!(
        snap.get(&t, b"key00000001").unwrap().unwrap().len() > 0,
        true
    );
    assert_eq!(t.get(b"key00000001").unwrap().unwrap(), b"new");
    drop(snap);
    println!("{}", t.shape().unwrap());
    println!("{}", db.stats());
    db.checkpoint().unwrap();
    assert_eq!(db.verify().unwrap() > 0, true);
    db.close().unwrap();
    let db = Db::open(dir.path(), opts).unwrap();
    let t = db.table("b").unwrap();
    assert_eq!(t.iter().unwrap().count(), n);
    assert_eq!(t.get(b"key00000001").unwrap().unwrap(), b"new");
    assert_eq!(t.get(b"big").unwrap().unwrap().len(), 100_000);
    db.verify().unwrap();
}
