//! Settling after a write benchmark: waiting, timed, until the engine's
//! background work (the flushes and compactions its writes left for later)
//! is done, so that a fill's speed is not credited with work deferred past
//! its end. A comparison reports the wait and the directory's size at
//! that point beside the fill's own figures, and its write amplification
//! counts what the engine wrote until then.
//!
//! Where an engine can say when its background work is done, the lab asks
//! it (`Store::wait_for_background`: spinney and RocksDB). For every
//! engine, it then watches the database's files: the work is done once no
//! file was created, removed, grown or shrunk for `STILL` (checked every
//! `POLL`). The time reported is until the last change seen, or until the
//! engine's own wait ended, whichever came later: the stillness that
//! confirms it is not counted.
//!
//! Thread-safety: runs in the benchmark's thread while the engine's own
//! threads work.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::engine::{EngineError, EngineResult, Store};

/// How often the files are looked at.
const POLL: Duration = Duration::from_millis(20);

/// How long the files must stay as they are for the work to count as done.
/// A flush or compaction in progress appends to its output far more often
/// than this (every few milliseconds on this lab's machines).
pub(crate) const STILL: Duration = Duration::from_secs(1);

/// The longest the lab waits before it calls the engine stuck.
const WAIT_MAX: Duration = Duration::from_secs(3600);

/// Waits until the engine's background work is done; returns how long that
/// took (see the module header).
pub(crate) fn settle(store: &dyn Store, dir: &Path) -> EngineResult<Duration> {
    let start = Instant::now();
    store.wait_for_background()?;
    let mut done = start.elapsed();
    let mut files = files_of(dir);
    loop {
        std::thread::sleep(POLL);
        let now = files_of(dir);
        let elapsed = start.elapsed();
        if now != files {
            files = now;
            done = elapsed;
        } else if elapsed - done >= STILL {
            return Ok(done);
        }
        if elapsed > WAIT_MAX {
            return Err(EngineError::Settle(format!(
                "the files in {} were still changing after {} s",
                dir.display(),
                WAIT_MAX.as_secs()
            )));
        }
    }
}

/// Every file under `dir` with its length and allocated blocks, sorted by
/// path.
fn files_of(dir: &Path) -> Vec<(PathBuf, u64, u64)> {
    let mut files = Vec::new();
    collect(dir, &mut files);
    files.sort();
    files
}

fn collect(dir: &Path, files: &mut Vec<(PathBuf, u64, u64)>) {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        match entry.metadata() {
            Ok(m) if m.is_dir() => collect(&entry.path(), files),
            Ok(m) => files.push((entry.path(), m.len(), m.blocks())),
            // Removed while listed: a change the next look sees.
            Err(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Session;
    use crate::Benchmark;

    /// A store with no signal of its own, whose "background work" is a
    /// thread appending to a file in its directory.
    struct Quiet;

    impl Store for Quiet {
        fn session(&self) -> EngineResult<Box<dyn Session + '_>> {
            Err(EngineError::Settle("no sessions here".into()))
        }
        fn operation(&self, _: Benchmark) -> EngineResult<bool> {
            Ok(false)
        }
        fn printout(&self, _: Benchmark) -> EngineResult<Option<String>> {
            Ok(None)
        }
        fn close(self: Box<Self>) -> EngineResult<()> {
            Ok(())
        }
    }

    #[test]
    fn settle_waits_for_the_files_to_stop_changing_and_times_until_the_last_change() {
        // Goal: with no signal from the engine, the settle lasts until its
        // files stop changing, and the time it reports ends at the last
        // change, not a second later. Method: a thread appends to a file
        // every 10 ms for 400 ms while the settle runs.
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("growing");
        let writer = std::thread::spawn(move || {
            use std::io::Write;
            let mut file = std::fs::File::create(&path).expect("create");
            for _ in 0..40 {
                file.write_all(&[7u8; 4096]).expect("write");
                std::thread::sleep(Duration::from_millis(10));
            }
        });
        let started = Instant::now();
        let took = settle(&Quiet, dir.path()).expect("settle");
        let waited = started.elapsed();
        writer.join().expect("writer");
        assert!(took >= Duration::from_millis(300), "settled after {took:?}");
        assert!(took < Duration::from_millis(900), "settled after {took:?}");
        assert!(waited >= took + STILL, "returned after {waited:?}");
    }

    #[test]
    fn a_changed_file_is_seen_and_a_still_directory_is_not() {
        // Goal: the look at the files sees a file grow, a new file and a
        // removed one, and two looks at a directory left alone agree.
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("a"), b"one").expect("write");
        let before = files_of(dir.path());
        assert_eq!(before, files_of(dir.path()));
        std::fs::write(dir.path().join("a"), b"one two").expect("grow");
        let grown = files_of(dir.path());
        assert_ne!(before, grown);
        std::fs::create_dir(dir.path().join("sub")).expect("mkdir");
        std::fs::write(dir.path().join("sub/b"), b"x").expect("write");
        let added = files_of(dir.path());
        assert_ne!(grown, added);
        std::fs::remove_file(dir.path().join("sub/b")).expect("remove");
        assert_ne!(added, files_of(dir.path()));
    }
}
