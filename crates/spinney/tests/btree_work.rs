//! Checkpoints of B-tree tables as work: in the background by log bytes,
//! and by writers when no thread has done them.

use spinney::{Db, Options, TableOptions};

mod common;

fn wal_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .expect("list")
        .map(|e| e.expect("entry"))
        .filter(|e| e.file_name().to_string_lossy().ends_with(".wal"))
        .map(|e| e.metadata().expect("stat").len())
        .sum()
}

#[test]
fn with_no_thread_to_checkpoint_writers_keep_the_log_bounded() {
    // Goal: with no background threads and no autowork, nothing but the
    // writers can checkpoint; the log a B-tree table keeps must still stay
    // bounded (about four times checkpoint_wal_bytes), and the stops that
    // bound it are counted.
    let dir = tempfile::tempdir().expect("tempdir");
    let options = Options {
        background_threads: 0,
        autowork: false,
        checkpoint_wal_bytes: 64 << 10,
        wal_segment_size: 64 << 10,
        ..Options::default()
    };
    let db = Db::open(dir.path(), options).expect("open");
    let t = db.create_table("t", TableOptions::btree()).expect("table");
    let mut peak = 0;
    for i in 0..20_000u32 {
        t.put(format!("key{:08}", i % 5000).as_bytes(), &[b'v'; 100])
            .expect("put");
        if i % 500 == 0 {
            peak = peak.max(wal_bytes(dir.path()));
        }
    }
    let stats = db.stats();
    let b = stats
        .tables
        .iter()
        .find_map(|t| t.btree.clone())
        .expect("btree stats");
    assert!(b.checkpoints >= 5, "checkpoints: {}", b.checkpoints);
    assert!(stats.stops >= 5, "stops: {}", stats.stops);
    // 4 x 64 KiB behind the checkpoint, plus the segment being written.
    assert!(peak <= 6 * (64 << 10), "the log grew to {peak} bytes");
    db.close().expect("close");
    let db = Db::open(dir.path(), Options::default()).expect("reopen");
    let t = db.table("t").expect("table");
    assert_eq!(t.iter().expect("iter").count(), 5000);
}

#[test]
fn background_threads_checkpoint_by_log_bytes() {
    // Goal: with background threads, checkpoints happen without any call,
    // once checkpoint_wal_bytes of log are written.
    let dir = tempfile::tempdir().expect("tempdir");
    let options = Options {
        checkpoint_wal_bytes: 64 << 10,
        ..Options::default()
    };
    let db = Db::open(dir.path(), options).expect("open");
    let t = db.create_table("t", TableOptions::btree()).expect("table");
    for i in 0..10_000u32 {
        t.put(format!("key{i:08}").as_bytes(), &[b'v'; 100])
            .expect("put");
    }
    // The checkpoints run in the background; wait for at least one.
    let mut checkpoints = 0;
    for _ in 0..500 {
        checkpoints = db
            .stats()
            .tables
            .iter()
            .find_map(|t| t.btree.clone())
            .expect("btree stats")
            .checkpoints;
        if checkpoints > 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(checkpoints > 0, "no background checkpoint");
    db.verify().expect("verify");
}

/// Keys of the idle vacuum's tests.
const KEYS: u64 = 80_000;

/// Key `i` of a permutation of 0..KEYS (7919 is prime to 80,000).
fn key(i: u64) -> Vec<u8> {
    format!("key{:011}", i * 7919 % KEYS).into_bytes()
}

/// A database whose idle vacuum looks after 200 ms of idle time, with one
/// B-tree table "t".
fn idle_vacuum_table() -> (tempfile::TempDir, Db, spinney::Table) {
    let dir = tempfile::tempdir().expect("tempdir");
    let options = Options {
        background_threads: 1,
        vacuum_after_idle: Some(std::time::Duration::from_millis(200)),
        ..Options::default()
    };
    let db = Db::open(dir.path(), options).expect("open");
    let t = db.create_table("t", TableOptions::btree()).expect("table");
    (dir, db, t)
}

#[test]
fn an_idle_database_gives_a_btree_tables_free_space_back_by_itself() {
    // Goal (`Options::vacuum_after_idle`): after 90% of a B-tree table's
    // keys are deleted at random, with no `compact_all`, an idle database
    // packs the table and cuts its file to at most 1.3 times the live data
    // (from 18.8 times to 1.27-1.28, 2026-11-29: 136-137 leaves under one branch;
    // 1.48 while branches were not merged), within a minute, and does so
    // once; a table that holds most of its file is left alone. The default
    // waits 30 seconds of idle time; this test, 200 ms.
    let default = Options::default().vacuum_after_idle;
    assert!(
        default.is_some_and(|idle| idle <= std::time::Duration::from_secs(30)),
        "the default idle vacuum ({default:?}) leaves no time to finish within a minute"
    );
    let (dir, db, t) = idle_vacuum_table();
    let keys = KEYS;
    let value = [b'v'; 100];
    for i in 0..keys {
        t.put(&key(i), &value).expect("put");
    }
    db.checkpoint().expect("checkpoint");
    let full = t
        .shape()
        .expect("shape")
        .btree
        .expect("a B-tree")
        .file_bytes;
    let vacuums = |db: &Db| {
        db.stats().tables[0]
            .btree
            .as_ref()
            .expect("B-tree stats")
            .idle_vacuums
    };
    // A table that holds most of its file is left alone, idle or not (the
    // scheduler looks once a second: three looks).
    std::thread::sleep(std::time::Duration::from_millis(3500));
    assert_eq!(vacuums(&db), 0, "a dense table was vacuumed");
    let kept = keys / 10;
    for i in kept..keys {
        t.delete(&key(i)).expect("delete");
    }
    let live = kept * (key(0).len() as u64 + value.len() as u64);
    // Watched from outside: a read of the table would keep the database
    // from being idle.
    let [btree_file] = &common::files::with_extension(dir.path(), "btree")[..] else {
        panic!("not one B-tree file");
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let mut file = full;
    while std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(300));
        file = std::fs::metadata(btree_file).expect("metadata").len();
        if file as f64 <= 1.3 * live as f64 {
            break;
        }
    }
    println!(
        "file {full} bytes full, {file} after the idle vacuum, live data {live}: {:.2}x; {:?}",
        file as f64 / live as f64,
        t.shape().expect("shape").btree
    );
    assert!(
        file as f64 <= 1.3 * live as f64,
        "the file is {file} bytes after a minute, for {live} bytes of live data ({full} full)"
    );
    // The file is cut before the vacuum's last round of moves and
    // checkpoints ends: wait for its end (counted once it returns).
    while vacuums(&db) == 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(vacuums(&db), 1);
    // Once: idle again, the table is not vacuumed again.
    let written = db.stats().tables[0]
        .btree
        .as_ref()
        .expect("B-tree stats")
        .pages_written;
    std::thread::sleep(std::time::Duration::from_millis(3500));
    let again = db.stats().tables[0]
        .btree
        .as_ref()
        .expect("B-tree stats")
        .pages_written;
    assert_eq!(written, again, "the idle table was written again");
    for i in 0..kept {
        assert_eq!(t.get(&key(i)).expect("get"), Some(value.to_vec()));
    }
    assert_eq!(t.get(&key(kept)).expect("get"), None);
    db.verify().expect("verify");
}

#[test]
fn an_idle_database_leaves_the_second_image_of_a_rewritten_table_alone() {
    // Goal: the idle vacuum does not rewrite a table whose leaves are full
    // and whose free pages are the durable image a rewrite left (copy-on-
    // write checkpoints keep about two images of a tree that changed
    // everywhere): the next rewrite would take those pages again, so
    // giving them back would cost a rewrite of the tree at every idle
    // time. Method: 80,000 keys put and all overwritten in another order,
    // a checkpoint after each; the file then holds about two images at
    // less than 60% use; idle for three of the scheduler's looks.
    let (_dir, db, t) = idle_vacuum_table();
    let keys = KEYS;
    for round in 0..2u8 {
        for i in 0..keys {
            let i = if round == 0 { i } else { keys - 1 - i };
            t.put(&key(i), &[b'a' + round; 100]).expect("put");
        }
        db.checkpoint().expect("checkpoint");
    }
    let shape = t.shape().expect("shape").btree.expect("a B-tree");
    let tree = shape.leaf_pages + shape.branch_pages;
    assert!(
        shape.free_pages * 2 >= tree && shape.fill > 0.6,
        "not two images of full leaves: {shape:?}"
    );
    let stats = |db: &Db| db.stats().tables[0].btree.clone().expect("B-tree stats");
    let before = stats(&db).pages_written;
    std::thread::sleep(std::time::Duration::from_millis(3500));
    let after = stats(&db);
    println!("{shape:?}; after idle: {after:?}");
    assert_eq!(after.idle_vacuums, 0, "the rewritten table was vacuumed");
    assert_eq!(after.pages_written, before, "the idle table was written");
}
