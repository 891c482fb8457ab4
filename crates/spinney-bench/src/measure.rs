//! What a benchmark costs besides time: the engine's I/O counters, the
//! process's CPU time, context switches and storage I/O, its peak memory,
//! and the database's size on disk.
//!
//! Costs are taken as differences of two readings around a benchmark. CPU
//! time and context switches are the whole process's (`getrusage` with
//! `RUSAGE_SELF`), so background flushes and compactions count, as they do
//! in iibench's figures. File I/O is the engine's own count where it keeps
//! one (spinney's file system layer); for the other engines it is the
//! process's system-call I/O (`rchar`, `wchar`, `syscr`, `syscw` of
//! `/proc/self/io`), which has no count of syncs. Two readings are the same
//! for every engine: the bytes the process passed to write calls (`wchar`;
//! the write amplification of the comparisons is these over the bytes of
//! keys and values written, as an engine's own write amplification counts
//! what it writes), and storage I/O, what the process sent to or fetched
//! from the storage layer (`write_bytes` and `read_bytes`: pages dirtied,
//! whether or not the kernel has written them yet, and pages read in, mapped
//! files included). The two differ for an engine that rewrites pages in
//! place: a page written twice before the kernel writes it back is dirtied
//! once. Peak memory is the
//! process's high-water resident set (`VmHWM`), reset before each benchmark
//! through `/proc/self/clear_refs` so that each benchmark has its own.
//!
//! Thread-safety: plain values; readings may be taken from any thread.

use std::path::Path;

use crate::engine::IoCounters;

/// One reading of the costs that grow during a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Resources {
    /// Bytes the engine wrote to files.
    pub bytes_written: u64,
    /// Bytes the engine read from files.
    pub bytes_read: u64,
    /// Reads the engine issued.
    pub read_requests: u64,
    /// Write calls the engine issued.
    pub write_requests: u64,
    /// File and directory syncs; `None` where the engine does not count
    /// them.
    pub syncs: Option<u64>,
    /// CPU time of the process, user plus system, in microseconds.
    pub cpu_micros: u64,
    /// Context switches of the process, voluntary plus involuntary.
    pub context_switches: u64,
    /// Bytes the process passed to write calls, and those spinney's mapped
    /// log copied into its map (every engine alike).
    pub process_bytes_written: u64,
    /// Bytes the process sent to the storage layer.
    pub storage_bytes_written: u64,
    /// Bytes the process fetched from the storage layer.
    pub storage_bytes_read: u64,
}

impl Resources {
    /// The counters now, with the engine's own I/O counters if it keeps
    /// them (`Store::io_counters`).
    pub(crate) fn now(engine_io: Option<IoCounters>) -> Resources {
        let (cpu_micros, context_switches) = process_usage();
        let process = ProcessIo::now();
        let mut r = Resources {
            bytes_written: process.wchar,
            bytes_read: process.rchar,
            read_requests: process.syscr,
            write_requests: process.syscw,
            syncs: None,
            cpu_micros,
            context_switches,
            process_bytes_written: process.wchar,
            storage_bytes_written: process.write_bytes,
            storage_bytes_read: process.read_bytes,
        };
        if let Some(io) = engine_io {
            // Bytes copied into a memory map are written as surely as those
            // passed to write(), and every engine's w-amp counts what it
            // writes.
            r.process_bytes_written += io.bytes_mapped;
            r.bytes_written = io.bytes_written;
            r.bytes_read = io.bytes_read;
            r.read_requests = io.read_requests;
            r.write_requests = io.write_requests;
            r.syncs = Some(io.syncs);
        }
        r
    }

    /// What grew from `earlier` to `self` (zero where a counter went back).
    pub fn since(&self, earlier: &Resources) -> Resources {
        Resources {
            bytes_written: self.bytes_written.saturating_sub(earlier.bytes_written),
            bytes_read: self.bytes_read.saturating_sub(earlier.bytes_read),
            read_requests: self.read_requests.saturating_sub(earlier.read_requests),
            write_requests: self.write_requests.saturating_sub(earlier.write_requests),
            syncs: match (self.syncs, earlier.syncs) {
                (Some(now), Some(then)) => Some(now.saturating_sub(then)),
                _ => None,
            },
            cpu_micros: self.cpu_micros.saturating_sub(earlier.cpu_micros),
            context_switches: self
                .context_switches
                .saturating_sub(earlier.context_switches),
            process_bytes_written: self
                .process_bytes_written
                .saturating_sub(earlier.process_bytes_written),
            storage_bytes_written: self
                .storage_bytes_written
                .saturating_sub(earlier.storage_bytes_written),
            storage_bytes_read: self
                .storage_bytes_read
                .saturating_sub(earlier.storage_bytes_read),
        }
    }

    /// These costs spread over `ops` operations, per 1,000 of them.
    pub fn per_thousand(&self, ops: u64) -> Amplification {
        let scale = if ops == 0 { 0.0 } else { 1000.0 / ops as f64 };
        Amplification {
            kb_written: self.bytes_written as f64 / 1024.0 * scale,
            kb_read: self.bytes_read as f64 / 1024.0 * scale,
            read_requests: self.read_requests as f64 * scale,
            syncs: self.syncs.map(|s| s as f64 * scale),
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
    /// Syncs, where the engine counts them.
    pub syncs: Option<f64>,
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

/// The process's I/O counters of `/proc/self/io` (zeros where the system
/// has none).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct ProcessIo {
    rchar: u64,
    wchar: u64,
    syscr: u64,
    syscw: u64,
    read_bytes: u64,
    write_bytes: u64,
}

impl ProcessIo {
    fn now() -> ProcessIo {
        let mut io = ProcessIo::default();
        let Ok(text) = std::fs::read_to_string("/proc/self/io") else {
            return io;
        };
        for line in text.lines() {
            let Some((name, value)) = line.split_once(':') else {
                continue;
            };
            let Ok(value) = value.trim().parse::<u64>() else {
                continue;
            };
            match name {
                "rchar" => io.rchar = value,
                "wchar" => io.wchar = value,
                "syscr" => io.syscr = value,
                "syscw" => io.syscw = value,
                "read_bytes" => io.read_bytes = value,
                "write_bytes" => io.write_bytes = value,
                _ => {}
            }
        }
        io
    }
}

/// Starts a new peak of the process's resident set: from now on `peak_rss`
/// reports the highest resident set since this call. Without
/// `/proc/self/clear_refs` (not Linux, or not allowed), the peak stays the
/// process's since it started.
pub fn reset_peak_rss() {
    // Writing 5 resets the high-water mark to the current resident set.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// The process's peak resident set in bytes (`VmHWM`), since it started or
/// since the last `reset_peak_rss`; 0 where the system does not say.
pub fn peak_rss() -> u64 {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return 0;
    };
    status
        .lines()
        .find_map(|line| {
            let kib = line.strip_prefix("VmHWM:")?.trim().strip_suffix("kB")?;
            kib.trim().parse::<u64>().ok()
        })
        .map_or(0, |kib| kib * 1024)
}

/// Bytes of every file under `dir`, subdirectories included; files that
/// vanish while it counts (compaction deletes them) count as nothing. A
/// sparse file counts the blocks it has, not its length: LMDB with
/// `MDB_WRITEMAP` sets its file's length to the whole map (a terabyte
/// here) and allocates blocks only as pages are used. Space reserved with
/// `fallocate` (spinney's mapped log segments) has its blocks, and counts.
pub fn dir_size(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.metadata() {
            Ok(m) if m.is_dir() => dir_size(&entry.path()),
            // st_blocks is in 512-byte units whatever the file system's
            // block size; a small file's last block is not counted whole.
            Ok(m) => m.len().min(m.blocks().saturating_mul(512)),
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
            syncs: Some(5),
            ..Resources::default()
        };
        let a = r.per_thousand(10_000);
        assert!((a.kb_written - 2.0).abs() < 1e-9);
        assert!((a.syncs.expect("counted") - 0.5).abs() < 1e-9);
        assert_eq!(
            r.per_thousand(0),
            Amplification {
                syncs: Some(0.0),
                ..Amplification::default()
            }
        );
    }

    #[test]
    fn process_io_counts_storage_writes() {
        // Goal: /proc/self/io is read, and a synced write of 1 MiB shows in
        // the bytes sent to storage (the comparisons' write amplification).
        let dir = tempfile::tempdir().expect("tempdir");
        let before = ProcessIo::now();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![7u8; 1 << 20]).expect("write");
        std::fs::File::open(&path)
            .and_then(|f| f.sync_all())
            .expect("sync");
        let after = ProcessIo::now();
        assert!(
            after.wchar >= before.wchar + (1 << 20),
            "{before:?} {after:?}"
        );
        assert!(
            after.write_bytes >= before.write_bytes + (1 << 20),
            "{before:?} {after:?}"
        );
    }

    #[test]
    fn peak_rss_follows_an_allocation_and_resets() {
        // Goal: the high-water mark sees 64 MiB touched, and a reset after
        // freeing them brings it back down.
        reset_peak_rss();
        let base = peak_rss();
        assert!(base > 0);
        let mut big = vec![0u8; 64 << 20];
        for i in (0..big.len()).step_by(4096) {
            big[i] = 1;
        }
        std::hint::black_box(&big);
        let high = peak_rss();
        assert!(high >= base + (60 << 20), "{base} -> {high}");
        drop(big);
        reset_peak_rss();
        assert!(peak_rss() < high - (32 << 20), "reset to {}", peak_rss());
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

    #[test]
    fn dir_size_leaves_out_the_holes_of_a_sparse_file() {
        // Goal: a file whose length runs far past what was written (LMDB's
        // with MDB_WRITEMAP) counts its blocks, not its length.
        let dir = tempfile::tempdir().expect("tempdir");
        let file = std::fs::File::create(dir.path().join("sparse")).expect("create");
        file.set_len(1 << 30).expect("set_len");
        std::os::unix::fs::FileExt::write_at(&file, &[1u8; 8192], 0).expect("write");
        let size = dir_size(dir.path());
        assert!((8192..(1 << 20)).contains(&size), "{size} bytes counted");
    }
}
