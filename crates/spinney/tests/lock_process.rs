//! The directory lock holds against another process.
//!
//! A test binary of its own: spawning a process forks every file descriptor
//! of the test process for a moment (until `exec` closes them), and an
//! `flock` is held by every copy, so other tests in the same process could
//! see their own locks outlive a close.

use spinney::{Db, Options};

#[test]
fn another_process_cannot_take_the_lock() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), Options::default()).expect("open");
    let lock = dir.path().join("LOCK");
    let try_lock = || {
        std::process::Command::new("flock")
            .args(["--nonblock", "--exclusive"])
            .arg(&lock)
            .arg("true")
            .status()
    };
    let Ok(status) = try_lock() else {
        // No flock(1) on this machine: nothing to check against.
        return;
    };
    assert!(
        !status.success(),
        "another process took the lock of an open database"
    );
    db.close().expect("close");
    assert!(
        try_lock().expect("flock").success(),
        "the lock outlived close"
    );
}
