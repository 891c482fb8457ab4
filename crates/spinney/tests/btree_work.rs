//! Checkpoints of B-tree tables as work: in the background by log bytes,
//! and by writers when no thread has done them.

use spinney::{Db, Options, TableOptions};

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
