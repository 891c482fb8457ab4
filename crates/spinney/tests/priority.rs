//! The background threads' CPU priority (`Options::background_nice`): they
//! lower their own, and the application's threads keep theirs.
//!
//! A file of its own, so that no other test's database has background
//! threads in this process while the threads are counted.
#![cfg(target_os = "linux")]

use std::time::Duration;

use spinney::{Db, Options};

/// The nice value in a thread's stat line: the 17th field after the state,
/// which follows the parenthesised name.
fn nice_in(stat_path: &str) -> Option<i32> {
    let stat = std::fs::read_to_string(stat_path).ok()?;
    let after_name = stat.rsplit_once(')')?.1;
    after_name.split_whitespace().nth(16)?.parse().ok()
}

/// The nice values of this process's background threads.
fn background_nice_values() -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc/self/task").expect("list threads") {
        let tid = entry.expect("thread entry").file_name();
        let tid = tid.to_string_lossy();
        let comm =
            std::fs::read_to_string(format!("/proc/self/task/{tid}/comm")).unwrap_or_default();
        if comm.starts_with("spinney-bg-") {
            if let Some(n) = nice_in(&format!("/proc/self/task/{tid}/stat")) {
                found.push(n);
            }
        }
    }
    found
}

/// Waits (boundedly: for an event, not a measure of speed) until the
/// background threads' nice values are `expected`; returns the last seen.
fn wait_for_background(expected: &[i32]) -> Vec<i32> {
    let mut seen = Vec::new();
    for _ in 0..500 {
        seen = background_nice_values();
        if seen == expected {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    seen
}

#[test]
fn background_threads_lower_their_own_priority_only() {
    // Goal: flushes, compactions and checkpoints yield the cores to the
    // threads that commit and read, and opening a database changes no
    // priority but its own threads'.
    let dir = tempfile::tempdir().expect("tempdir");
    let own = nice_in("/proc/thread-self/stat").expect("own nice value");
    let db = Db::open(
        dir.path().join("db"),
        Options {
            background_threads: 2,
            background_nice: 7,
            ..Options::default()
        },
    )
    .expect("open");
    let lowered = (own + 7).min(19);
    assert_eq!(
        wait_for_background(&[lowered, lowered]),
        vec![lowered, lowered],
        "the background threads' nice values"
    );
    assert_eq!(
        nice_in("/proc/thread-self/stat"),
        Some(own),
        "the opening thread's priority changed"
    );
    db.close().expect("close");
    drop(db);
    assert_eq!(wait_for_background(&[]), Vec::<i32>::new(), "threads left");

    // With 0 they keep the priority they were born with.
    let db = Db::open(
        dir.path().join("db"),
        Options {
            background_threads: 1,
            background_nice: 0,
            ..Options::default()
        },
    )
    .expect("reopen");
    assert_eq!(wait_for_background(&[own]), vec![own], "background_nice 0");
    drop(db);
}
