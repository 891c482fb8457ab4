//! What a benchmark costs besides time: the engine's I/O counters, the
//! process's CPU time and context switches, and the database's size on disk.
//!
//! Costs are taken as differences of two readings around a benchmark. CPU
//! time and context switches are the whole process's (`getrusage` with
//! `RUSAGE_SELF`), so background flushes and compactions count, as they do
//! in iibench's figures.
//!
//! Thread-safety: plain values; readings may be taken from any thread.

use std::path::Path;

use spinney::Db;

/// One reading of the costs that grow during a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Resources {
    /// Bytes the engine wrote through its file system.
    pub bytes_written: u64,
    /// Bytes the engine read through its file system.
    pub bytes_read: u64,
    /// Positional reads the engine issued.
    pub read_requests: u64,
    /// Write calls the engine issued.
    pub write_requests: u64,
    /// File and directory syncs.
    pub syncs: u64,
    /// CPU time of the process, user plus system, in microseconds.
    pub cpu_micros: u64,
    /// Context switches of the process, voluntary plus involuntary.
    pub context_switches: u64,
}

impl Resources {
    /// The counters now.
    pub fn now(db: &Db) -> Resources {
        let io = db.stats().io;
        let (cpu_micros, context_switches) = process_usage();
        Resources {
            bytes_written: io.bytes_written,
            bytes_read: io.bytes_read,
            read_requests: io.read_requests,
            write_requests: io.write_requests,
            syncs: io.syncs,
            cpu_micros,
            context_switches,
        }
    }

    /// What grew from `earlier` to `self` (zero where a counter went back).
    pub fn since(&self, earlier: &Resources) -> Resources {
        Resources {
            bytes_written: self.bytes_written.saturating_sub(earlier.bytes_written),
            bytes_read: self.bytes_read.saturating_sub(earlier.bytes_read),
            read_requests: self.read_requests.saturating_sub(earlier.read_requests),
            write_requests: self.write_requests.saturating_sub(earlier.write_requests),
            syncs: self.syncs.saturating_sub(earlier.syncs),
            cpu_micros: self.cpu_micros.saturating_sub(earlier.cpu_micros),
            context_switches: self
                .context_switches
                .saturating_sub(earlier.context_switches),
        }
    }

    /// These costs spread over `ops` operations, per 1,000 of them.
    pub fn per_thousand(&self, ops: u64) -> Amplification {
        let scale = if ops == 0 { 0.0 } else { 1000.0 / ops as f64 };
        Amplification {
            kb_written: self.bytes_written as f64 / 1024.0 * scale,
            kb_read: self.bytes_read as f64 / 1024.0 * scale,
            read_requests: self.read_requests as f64 * scale,
            syncs: self.syncs as f64 * scale,
            cpu_micros: self.cpu_micros as f64 * scale,
            context_switches: self.context_switches as f64 * scale,
        }
    }
}

/// Costs per 1,000 operations (iibench's per-N-inserts figures).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Amplification {
    /// KiB written by the engine.
    pub kb_written: f64,
    /// KiB read by the engine.
    pub kb_read: f64,
    /// Read requests issued by the engine.
    pub read_requests: f64,
    /// Syncs.
    pub syncs: f64,
    /// CPU microseconds, user plus system, of the whole process.
    pub cpu_micros: f64,
    /// Context switches, voluntary plus involuntary, of the whole process.
    pub context_switches: f64,
}

/// CPU microseconds (user + system) and context switches (voluntary +
/// involuntary) of this process so far; zeros if the system will not say.
fn process_usage() -> (u64, u64) {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `getrusage` writes a `rusage` into the pointer it is given,
    // which points at a zeroed value of that type that lives across the call.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) };
    if rc != 0 {
        return (0, 0);
    }
    // SAFETY: zero bytes are a valid `rusage` (plain integers), and the call
    // succeeded, so the value is initialised either way.
    let usage = unsafe { usage.assume_init() };
    let micros = |t: libc::timeval| {
        u64::try_from(t.tv_sec).unwrap_or(0) * 1_000_000 + u64::try_from(t.tv_usec).unwrap_or(0)
    };
    let switches =
        u64::try_from(usage.ru_nvcsw).unwrap_or(0) + u64::try_from(usage.ru_nivcsw).unwrap_or(0);
    (micros(usage.ru_utime) + micros(usage.ru_stime), switches)
}

/// Bytes of every file under `dir`, subdirectories included; files that
/// vanish while it counts (compaction deletes them) count as nothing.
pub fn dir_size(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.metadata() {
            Ok(m) if m.is_dir() => dir_size(&entry.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_usage_grows_with_work() {
        // Goal: the rusage reading works on this system and counts CPU time.
        let (before, _) = process_usage();
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let (after, _) = process_usage();
        assert!(after > before, "{before} -> {after}");
    }

    #[test]
    fn per_thousand_scales_and_survives_zero_ops() {
        // Goal: the amplification arithmetic, and no division by zero.
        let r = Resources {
            bytes_written: 2048 * 10,
            syncs: 5,
            ..Resources::default()
        };
        let a = r.per_thousand(10_000);
        assert!((a.kb_written - 2.0).abs() < 1e-9);
        assert!((a.syncs - 0.5).abs() < 1e-9);
        assert_eq!(r.per_thousand(0), Amplification::default());
    }

    #[test]
    fn dir_size_sums_nested_files() {
        // Goal: the database size counts files in subdirectories too.
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("a"), [0u8; 100]).expect("write");
        std::fs::create_dir(dir.path().join("sub")).expect("mkdir");
        std::fs::write(dir.path().join("sub/b"), [0u8; 23]).expect("write");
        assert_eq!(dir_size(dir.path()), 123);
        assert_eq!(dir_size(&dir.path().join("missing")), 0);
    }
}
