//! A real process killed at a chosen moment, and the database it leaves.
//!
//! A test binary of its own (see `lock_process.rs`): the test runs this
//! binary again as a child, which does the work and aborts, as a kill
//! would, with no destructor run and no file closed.

use std::path::Path;
use std::process::Command;

use spinney::{Db, LogWrites, Options, TableOptions};

/// The child's database directory; set only in the child.
const CHILD_DIR: &str = "SPINNEY_KILLED_CHILD_DIR";

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn options() -> Options {
    Options {
        wal_segment_size: 32 << 10,
        background_threads: 0,
        autowork: false,
        ..Options::default()
    }
}

fn wal_segments(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .expect("read_dir")
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".wal"))
        })
        .count()
}

/// Runs the test `child` of this binary as a child process on `dir`,
/// checks that it aborted, and returns the count it printed ("wrote N").
fn run_child(child: &str, dir: &Path) -> u32 {
    run_child_with(child, dir, &[])
}

/// `run_child` with more variables in the child's environment.
fn run_child_with(child: &str, dir: &Path, env: &[(&str, &str)]) -> u32 {
    let out = Command::new(std::env::current_exe().expect("current_exe"))
        .args(["--exact", child, "--nocapture", "--ignored"])
        .env(CHILD_DIR, dir)
        .envs(env.iter().copied())
        .output()
        .expect("run the child");
    assert!(!out.status.success(), "the child did not abort: {out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("wrote "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("the child wrote nothing it told: {out:?}"))
}

/// The child: writes until the log rolls to a fourth segment (the open
/// segment is then empty), checkpoints (which lets the other three go),
/// and aborts. Prints how many keys it wrote.
#[test]
#[ignore = "a child process: the test beside it starts it, with --ignored"]
fn child_writes_checkpoints_and_aborts() {
    let dir = std::env::var_os(CHILD_DIR)
        .expect("a child process only: run the test that starts it, not this one");
    let dir = Path::new(&dir);
    let db = Db::open(dir, options()).expect("open");
    let t = db
        .create_table("bt", TableOptions::btree())
        .expect("create");
    let mut n = 0u32;
    while wal_segments(dir) < 4 {
        t.put(&key(n), &[1; 100]).expect("put");
        n += 1;
    }
    db.checkpoint().expect("checkpoint");
    assert_eq!(wal_segments(dir), 1, "the checkpoint let the log go");
    println!("wrote {n}");
    std::process::abort();
}

#[test]
fn a_btree_table_whose_log_its_checkpoint_let_go_survives_a_killed_process() {
    // Goal: a process killed right after a checkpoint let the whole log go
    // leaves a database whose B-tree table reads back whole, and whose new
    // writes are newer than its checkpointed versions. Recovery once
    // resumed from the manifest's older seqno: the table read as empty.
    if std::env::var_os(CHILD_DIR).is_some() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let n = run_child("child_writes_checkpoints_and_aborts", dir.path());

    let db = Db::open(dir.path(), options()).expect("reopen");
    let t = db.table("bt").expect("table");
    for i in (0..n).step_by(37).chain([n - 1]) {
        assert_eq!(t.get(&key(i)).expect("get"), Some(vec![1; 100]), "key {i}");
    }
    t.put(&key(0), &[2; 100]).expect("put after reopen");
    assert_eq!(t.get(&key(0)).expect("get"), Some(vec![2; 100]));
}

/// How the child writes its log (`LogWrites::name`); set only in the child
/// of the next test.
const CHILD_LOG_WRITES: &str = "SPINNEY_KILLED_CHILD_LOG_WRITES";

fn log_writes_named(name: &str) -> LogWrites {
    [LogWrites::Mapped, LogWrites::Write]
        .into_iter()
        .find(|w| w.name() == name)
        .unwrap_or_else(|| panic!("no log writes named {name}"))
}

/// The child of the next test: writes to an LSM and a B-tree table under
/// `Normal` (never synced), past several log segments, its log written as
/// `CHILD_LOG_WRITES` says, and aborts.
#[test]
#[ignore = "a child process: the test beside it starts it, with --ignored"]
fn child_writes_unsynced_and_aborts() {
    let dir = std::env::var_os(CHILD_DIR)
        .expect("a child process only: run the test that starts it, not this one");
    let dir = Path::new(&dir);
    let log_writes = std::env::var(CHILD_LOG_WRITES).expect("the child's log writes");
    let options = Options {
        log_writes: log_writes_named(&log_writes),
        ..options()
    };
    let db = Db::open(dir, options).expect("open");
    let lsm = db.create_table("lsm", TableOptions::lsm()).expect("create");
    let bt = db
        .create_table("bt", TableOptions::btree())
        .expect("create");
    let n = 3000u32;
    for i in 0..n {
        let mut batch = spinney::WriteBatch::new();
        batch.put(&lsm, &key(i), &i.to_le_bytes());
        batch.put(&bt, &key(i), &i.to_le_bytes());
        db.write(batch).expect("write");
    }
    println!("wrote {n}");
    std::process::abort();
}

#[test]
fn every_commit_a_killed_process_acknowledged_unsynced_is_there_after_it() {
    // Goal: under `Normal` a commit is handed to the operating system before
    // it returns, so a process killed at once (no destructor: the log is
    // neither synced nor closed, and a mapped segment's file still runs on
    // in reserved zeros on Linux) loses none of them, in either kind and
    // with the log written either way, and the log takes new commits after
    // the reopen, written the other way.
    if std::env::var_os(CHILD_DIR).is_some() {
        return;
    }
    for (child_writes, reopen_writes) in [
        (LogWrites::Mapped, LogWrites::Write),
        (LogWrites::Write, LogWrites::Mapped),
    ] {
        every_commit_acknowledged_is_there(child_writes, reopen_writes);
    }
}

fn every_commit_acknowledged_is_there(child_writes: LogWrites, reopen_writes: LogWrites) {
    let dir = tempfile::tempdir().expect("tempdir");
    let n = run_child_with(
        "child_writes_unsynced_and_aborts",
        dir.path(),
        &[(CHILD_LOG_WRITES, child_writes.name())],
    );
    assert!(wal_segments(dir.path()) > 1, "the log never rolled");

    let options = || Options {
        log_writes: reopen_writes,
        ..options()
    };
    let db = Db::open(dir.path(), options()).expect("reopen");
    for name in ["lsm", "bt"] {
        let t = db.table(name).expect("table");
        let got: Vec<(Vec<u8>, Vec<u8>)> = t
            .iter()
            .expect("iter")
            .collect::<spinney::Result<_>>()
            .expect("scan");
        let want: Vec<(Vec<u8>, Vec<u8>)> =
            (0..n).map(|i| (key(i), i.to_le_bytes().to_vec())).collect();
        assert!(
            got == want,
            "{name}, log written {}: {} of {n} keys back",
            child_writes.name(),
            got.len()
        );
        t.put(b"after", b"reopen").expect("put after reopen");
    }
    db.close().expect("close");
    let db = Db::open(dir.path(), options()).expect("second reopen");
    assert_eq!(
        db.table("bt").expect("table").get(b"after").expect("get"),
        Some(b"reopen".to_vec())
    );
}

/// The child of the next two tests: one segment; 500 keys under `Normal`,
/// one `Full` commit (a sync, then a sync mark), 500 more under `Normal`;
/// then it aborts.
#[test]
#[ignore = "a child process: the test beside it starts it, with --ignored"]
fn child_writes_syncs_once_and_aborts() {
    let dir = std::env::var_os(CHILD_DIR)
        .expect("a child process only: run the test that starts it, not this one");
    let dir = Path::new(&dir);
    let db = Db::open(dir, options_one_segment()).expect("open");
    let t = db.create_table("lsm", TableOptions::lsm()).expect("create");
    for i in 0..1001u32 {
        let mut batch = spinney::WriteBatch::new();
        batch.put(&t, &key(i), &[7; 100]);
        let durability = (i == 500).then_some(spinney::Durability::Full);
        db.write_with(batch, spinney::WriteOptions { durability })
            .expect("write");
    }
    println!("wrote 1001");
    std::process::abort();
}

fn options_one_segment() -> Options {
    Options {
        wal_segment_size: 4 << 20,
        ..options()
    }
}

/// The killed child's database, with the 4 KiB page of its log that starts
/// `pages` pages from the sync mark (negative: before it) zeroed, as a
/// page the kernel had not written back when power was lost would read.
fn killed_with_a_page_zeroed(pages: i64) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    run_child("child_writes_syncs_once_and_aborts", dir.path());
    let log = std::fs::read_dir(dir.path())
        .expect("read_dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|e| e == "wal"))
        .expect("the log segment");
    let mut bytes = std::fs::read(&log).expect("read");
    // A sync mark: a FULL fragment of 12 bytes whose count is 0xFFFFFFFF.
    let mark = (0..bytes.len().saturating_sub(19))
        .find(|&p| {
            bytes.get(p + 4..p + 7) == Some(&[12, 0, 1][..])
                && bytes.get(p + 15..p + 19) == Some(&[0xff; 4][..])
        })
        .expect("a sync mark in the log");
    let page = ((mark as i64 / 4096 + pages) * 4096) as usize;
    bytes
        .get_mut(page..page + 4096)
        .expect("the page is in the file")
        .fill(0);
    std::fs::write(&log, &bytes).expect("write");
    dir
}

#[test]
fn a_page_lost_after_the_last_sync_ends_the_log_there() {
    // Goal: the log is written through a shared map, and the kernel writes
    // its pages back in no set order: a power loss can keep a later page
    // and lose an earlier one the last sync had not covered. The default
    // open then keeps every commit the sync covered and a prefix of the
    // rest, and opens (no sync mark after the hole proves it synced).
    if std::env::var_os(CHILD_DIR).is_some() {
        return;
    }
    let dir = killed_with_a_page_zeroed(4);
    let db = Db::open(dir.path(), options_one_segment()).expect("reopen after a lost page");
    let got: Vec<Vec<u8>> = db
        .table("lsm")
        .expect("table")
        .iter()
        .expect("iter")
        .map(|e| e.map(|(k, _)| k))
        .collect::<spinney::Result<_>>()
        .expect("scan");
    let n = got.len() as u32;
    assert!((501..1001).contains(&n), "{n} keys back");
    assert!(got == (0..n).map(key).collect::<Vec<_>>(), "not a prefix");
}

#[test]
fn a_page_lost_before_the_last_sync_is_corruption() {
    // Goal: a page the sync had covered cannot be lost by a power loss; if
    // it reads as zeros, the medium failed, and the open says so, naming
    // the segment, rather than dropping synced commits.
    if std::env::var_os(CHILD_DIR).is_some() {
        return;
    }
    let dir = killed_with_a_page_zeroed(-4);
    match Db::open(dir.path(), options_one_segment()) {
        Err(e @ spinney::Error::Corruption { .. }) => {
            assert!(e.to_string().contains(".wal"), "{e}")
        }
        Err(e) => panic!("expected Corruption, got {e}"),
        Ok(_) => panic!("opened over a zeroed page the sync had covered"),
    }
}

/// `OsFs` (log segments memory-mapped, as by default on Linux) that kills
/// the process when it is asked to create CURRENT.tmp: an open killed after
/// its new log segment and manifest are durable and before CURRENT names
/// the manifest.
#[derive(Debug)]
struct KillAtCurrent(spinney::fs::OsFs);

impl spinney::fs::Fs for KillAtCurrent {
    fn create(&self, path: &Path) -> spinney::Result<Box<dyn spinney::fs::WritableFile>> {
        if path.file_name().is_some_and(|n| n == "CURRENT.tmp") {
            std::process::abort();
        }
        self.0.create(path)
    }
    fn create_log(
        &self,
        path: &Path,
        size: u64,
        writes: LogWrites,
    ) -> spinney::Result<Box<dyn spinney::fs::WritableFile>> {
        self.0.create_log(path, size, writes)
    }
    fn open(
        &self,
        path: &Path,
    ) -> spinney::Result<std::sync::Arc<dyn spinney::fs::RandomAccessFile>> {
        self.0.open(path)
    }
    fn open_paged(
        &self,
        path: &Path,
        create: bool,
    ) -> spinney::Result<std::sync::Arc<dyn spinney::fs::PagedFile>> {
        self.0.open_paged(path, create)
    }
    fn rename(&self, from: &Path, to: &Path) -> spinney::Result<()> {
        self.0.rename(from, to)
    }
    fn remove(&self, path: &Path) -> spinney::Result<()> {
        self.0.remove(path)
    }
    fn list(&self, dir: &Path) -> spinney::Result<Vec<String>> {
        self.0.list(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> spinney::Result<()> {
        self.0.create_dir_all(dir)
    }
    fn sync_dir(&self, dir: &Path) -> spinney::Result<()> {
        self.0.sync_dir(dir)
    }
    fn exists(&self, path: &Path) -> spinney::Result<bool> {
        self.0.exists(path)
    }
    fn lock(&self, path: &Path) -> spinney::Result<Box<dyn spinney::fs::FileLock>> {
        self.0.lock(path)
    }
    fn lock_shared(&self, path: &Path) -> spinney::Result<Box<dyn spinney::fs::FileLock>> {
        self.0.lock_shared(path)
    }
    fn io_stats(&self) -> &spinney::fs::IoStats {
        self.0.io_stats()
    }
}

/// The child of the next test: opens the database and is killed inside the
/// open, before CURRENT names the open's new manifest.
#[test]
#[ignore = "a child process: the test beside it starts it, with --ignored"]
fn child_opens_and_is_killed_before_current() {
    let dir = std::env::var_os(CHILD_DIR)
        .expect("a child process only: run the test that starts it, not this one");
    println!("wrote 0");
    let options = Options {
        fs: std::sync::Arc::new(KillAtCurrent(spinney::fs::OsFs::new())),
        ..options()
    };
    let _ = Db::open(Path::new(&dir), options);
    unreachable!("the open wrote CURRENT without creating CURRENT.tmp");
}

#[test]
fn an_open_killed_before_current_leaves_a_database_the_next_open_recovers() {
    // Goal: an open makes a new log segment and leaves the one it replayed
    // as it found it. Killed before CURRENT names its manifest, it leaves
    // that segment older than the new one; if it ended in the zeros of a
    // mapped segment's reservation (read as a torn tail), the next open must
    // still recover it. Process kills only: no power loss.
    // Method: (a) the child of unsynced writes, killed; an open killed
    // before CURRENT; a real open, which must hold every commit. (b) a
    // database closed cleanly; two opens killed before CURRENT (the first
    // leaves its new segment all reserved zeros); a real open.
    if std::env::var_os(CHILD_DIR).is_some() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let n = run_child_with(
        "child_writes_unsynced_and_aborts",
        dir.path(),
        &[(CHILD_LOG_WRITES, LogWrites::Mapped.name())],
    );
    run_child("child_opens_and_is_killed_before_current", dir.path());
    let mut failed = Vec::new();
    match Db::open(dir.path(), options()) {
        Err(e) => failed.push(format!("(a) the open after the killed open: {e}")),
        Ok(db) => {
            let t = db.table("lsm").expect("table");
            for i in 0..n {
                let got = t.get(&key(i)).expect("get");
                assert_eq!(got, Some(i.to_le_bytes().to_vec()), "key {i}");
            }
        }
    }

    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options()).expect("create");
    let t = db
        .create_table("lsm", TableOptions::lsm())
        .expect("create table");
    t.put(b"k", b"v").expect("put");
    drop(t);
    db.close().expect("close");
    run_child("child_opens_and_is_killed_before_current", dir.path());
    run_child("child_opens_and_is_killed_before_current", dir.path());
    match Db::open(dir.path(), options()) {
        Err(e) => failed.push(format!("(b) the open after two killed opens: {e}")),
        Ok(db) => {
            let got = db.table("lsm").expect("table").get(b"k").expect("get");
            assert_eq!(got, Some(b"v".to_vec()));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}
