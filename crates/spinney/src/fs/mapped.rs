//! `MappedLog`: a log segment appended to through a shared memory map
//! (Linux), so that a commit's record reaches the page cache with one copy
//! instead of a `write` system call (which cost about 40% of the writer's
//! time in a commit of one small record: docs/performance.md, 2026-11-26,
//! f81b418).
//!
//! - A range of the file (`Sizes::map`, more than a segment holds) is
//!   mapped `MAP_SHARED` up front, past the file's end, and appends copy
//!   into it. The file grows `Sizes::reserve` at a time: `fallocate`
//!   reserves the blocks before any byte of them is written. That matters:
//!   a store to a mapped page that the file system cannot back raises
//!   SIGBUS, where `write` would have returned ENOSPC; with the blocks
//!   reserved, running out of space is an error from `fallocate`, and no
//!   store ever reaches past the file's end. A file system without
//!   `fallocate` gets the buffered writer instead (`OsFs::create_log`).
//! - A copy into a shared mapping is in the page cache once it is made: it
//!   survives a crash of the process as a `write` does, and `fdatasync`
//!   writes it out with the rest of the file (dirty pages of a shared
//!   mapping are tracked by the kernel like written ones). So `flush` has
//!   nothing to do and `sync` is `fdatasync`, as for the buffered writer.
//! - Until the segment is finished the file is longer than what was
//!   appended: the rest of the reservation reads as zeros, which the log reader
//!   takes for a torn tail, allowed only in the newest segment. `finish`
//!   (when the log rolls) truncates the file to its length and syncs it
//!   before the next segment is created, so a closed segment never has
//!   one. A writer dropped unfinished (the database closed) trims its file
//!   too, without a sync; after a crash the zeros stay, in the newest
//!   segment, where recovery expects them.
//! - The pages appended are let go behind the writer (`MADV_DONTNEED`,
//!   `Sizes::release` at a time; their data stays in the page cache), so the
//!   process's resident set holds little of the log. Not `munmap`, which
//!   took 200-660 us a call here against about 25 us for this (it also
//!   takes the process's memory-map lock for writing); the whole range is
//!   unmapped only when the segment is finished or dropped.
//!
//! Thread-safety: one owner (`Send`, not `Sync`), like every
//! `WritableFile`; the database guards its log writer with a mutex.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::ptr;
use std::sync::Arc;

use super::{IoStats, WritableFile};
use crate::error::{Error, Result};

/// How a `MappedLog` steps through its file. Each is a power of two; `map`
/// is a multiple of `reserve`, which is one of `step`, which is one of
/// `release`, which is one of the page size.
#[derive(Debug, Clone, Copy)]
pub(super) struct Sizes {
    /// Bytes of the file mapped at a time (address space, not memory).
    pub map: u64,
    /// The bytes the segment is expected to grow to.
    pub segment: u64,
    /// Bytes reserved with one `fallocate` up to `segment`.
    pub reserve: u64,
    /// Bytes reserved with one `fallocate` past `segment`: a segment runs
    /// past it only by the commit group that crosses it, and then rolls,
    /// cutting the rest back; a reservation of `reserve` there was mostly
    /// wasted, and on a nearly full disk an error where a step would fit.
    pub step: u64,
    /// Bytes appended between two releases of the pages behind the writer.
    pub release: u64,
}

impl Sizes {
    /// For a segment expected to grow to about `bytes`: the whole segment
    /// reserved at once, up to 64 MiB (a larger one in steps of that),
    /// but never below 64 KiB, the largest page size `mmap` and `madvise`
    /// may need boundaries aligned to; a mapping past the default segment
    /// size (64 MiB), so that a segment is usually one mapping (a longer
    /// file is mapped again where it reached).
    ///
    /// Why whole: a reservation is a `fallocate` in the commit that reaches
    /// it, and one that waits on the file system's journal (while a
    /// background job syncs a file) is a slow commit. Reserving 4 MiB at a
    /// time, sixteen a segment, the LSM's p99.99 commit latency in a 2M-key
    /// fillrandom was 59-69 us, and 50-55 us with the segment reserved at
    /// once (three alternating runs each; docs/performance.md, 2026-11-27,
    /// 0d14234). The cost: the open segment's file holds up to 64 MiB of
    /// reserved zeros (RocksDB preallocates its log 1.1 write buffers at a
    /// time, for the same reason).
    pub(super) fn for_segment(bytes: u64) -> Sizes {
        let reserve = bytes.next_power_of_two().clamp(64 << 10, 64 << 20);
        Sizes {
            map: 256 << 20,
            segment: bytes,
            reserve,
            step: reserve.min(1 << 20),
            release: reserve.min(256 << 10),
        }
    }
}

pub(super) struct MappedLog {
    file: File,
    path: PathBuf,
    sizes: Sizes,
    /// Bytes appended.
    len: u64,
    /// The file offset the mapping starts at.
    map_at: u64,
    /// The mapping (`sizes.map` long), or null when none is.
    map: *mut u8,
    /// The file's length: appended bytes and the reserved zeros after them.
    reserved: u64,
    /// The pages of the mapping below this file offset are released.
    released: u64,
    stats: Arc<IoStats>,
}

// SAFETY: the mapping is owned by this value alone (no other pointer to it
// is handed out) and is only touched through `&mut self` or on drop, so
// moving the value to another thread moves sole access with it.
unsafe impl Send for MappedLog {}

/// Whether an error from `fallocate` or `mmap` means the file system cannot
/// do it (so the buffered writer should be used), rather than a failure.
pub(super) fn unsupported(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EOPNOTSUPP | libc::ENOSYS | libc::ENODEV | libc::EINVAL)
    )
}

fn off(at: u64) -> io::Result<libc::off_t> {
    libc::off_t::try_from(at).map_err(|_| io::Error::from_raw_os_error(libc::EFBIG))
}

/// Extends `file` from `at` by `bytes` of allocated zeros. On failure it
/// cuts the file back to `at`, as far as it can.
fn reserve(file: &File, at: u64, bytes: u64) -> io::Result<()> {
    // SAFETY: a system call on a file descriptor `file` owns; no memory is
    // passed.
    let r = unsafe { libc::fallocate(file.as_raw_fd(), 0, off(at)?, off(bytes)?) };
    if r != 0 {
        let e = io::Error::last_os_error();
        // A failed reservation may have extended the file part way.
        let _ = file.set_len(at);
        return Err(e);
    }
    Ok(())
}

/// Maps `bytes` of `file` from `at` (a multiple of the page size), shared
/// and writable.
fn map(file: &File, at: u64, bytes: u64) -> io::Result<*mut u8> {
    let len = usize::try_from(bytes).map_err(|_| io::Error::from_raw_os_error(libc::ENOMEM))?;
    // SAFETY: a new shared mapping of our own file; nothing else maps this
    // range of the address space, and pages past the file's end are never
    // touched (see the module's notes).
    let map = unsafe {
        libc::mmap(
            ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            off(at)?,
        )
    };
    if map == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    // Each page is faulted in by the store that first reaches it (about
    // 3 us, one commit in 30), without read-around: that read the whole
    // new reservation in at the first store past the old one (about 1 ms
    // for 4 MiB, in one commit). A hint: a kernel that refuses it costs
    // nothing.
    // SAFETY: advice on the mapping just made.
    unsafe { libc::madvise(map, len, libc::MADV_RANDOM) };
    Ok(map.cast())
}

/// Copies `src` to `dst` front to back, so that a process killed in the
/// middle of it leaves a prefix of `src` in the file, as an interrupted
/// `write` does. `memcpy` may store the end of a range before its start
/// (glibc's does, for some sizes): a process killed there left a record's
/// header zero with bytes of its payload after it, which the log reader
/// must take for damage in the middle of the log, not a torn tail (found
/// by `spinney-stress`). Volatile stores keep their order and are not
/// merged into a `memcpy` call; 8 bytes at a time, they cost little beside
/// the rest of a commit.
///
/// # Safety
/// `dst` must be valid for writes of `src.len()` bytes and not overlap
/// `src`.
unsafe fn copy_forward(src: &[u8], dst: *mut u8) {
    let mut words = src.chunks_exact(8);
    let mut at = 0;
    for word in &mut words {
        let word: [u8; 8] = word.try_into().unwrap_or([0; 8]);
        // SAFETY: `at + 8 <= src.len()`, within `dst` by the contract;
        // `[u8; 8]` has alignment 1.
        unsafe { ptr::write_volatile(dst.add(at).cast::<[u8; 8]>(), word) };
        at += 8;
    }
    for &b in words.remainder() {
        // SAFETY: `at < src.len()`, within `dst` by the contract.
        unsafe { ptr::write_volatile(dst.add(at), b) };
        at += 1;
    }
}

impl MappedLog {
    /// Takes `file` (new and empty), maps it and reserves its first bytes.
    /// On failure the file is handed back, still empty if it could be cut
    /// back, with the OS's error, for the caller to tell `unsupported` ones
    /// from failures.
    pub(super) fn new(
        file: File,
        path: PathBuf,
        sizes: Sizes,
        stats: Arc<IoStats>,
    ) -> std::result::Result<MappedLog, (File, io::Error)> {
        if let Err(e) = reserve(&file, 0, sizes.reserve) {
            return Err((file, e));
        }
        let map = match map(&file, 0, sizes.map) {
            Ok(map) => map,
            Err(e) => {
                let _ = file.set_len(0);
                return Err((file, e));
            }
        };
        Ok(MappedLog {
            file,
            path,
            sizes,
            len: 0,
            map_at: 0,
            map,
            reserved: sizes.reserve,
            released: 0,
            stats,
        })
    }

    fn map_end(&self) -> u64 {
        self.map_at + self.sizes.map
    }

    /// Unmaps the mapping, if there is one.
    fn unmap(&mut self) {
        if self.map.is_null() {
            return;
        }
        // SAFETY: `map` was returned by `mmap` for `sizes.map` bytes and is
        // unmapped once (it is nulled here).
        unsafe { libc::munmap(self.map.cast(), self.sizes.map as usize) };
        self.map = ptr::null_mut();
    }

    /// Makes room to copy at `len`: a mapping over it, reserved bytes
    /// under it.
    fn make_room(&mut self) -> io::Result<()> {
        if self.map.is_null() || self.len == self.map_end() {
            self.unmap();
            // A multiple of the mapping's size, so of the page size.
            let at = self.len - self.len % self.sizes.map;
            self.map = map(&self.file, at, self.sizes.map)?;
            self.map_at = at;
            self.released = at;
        }
        if self.len == self.reserved {
            let bytes = if self.reserved < self.sizes.segment {
                self.sizes.reserve
            } else {
                self.sizes.step
            };
            reserve(&self.file, self.reserved, bytes)?;
            self.reserved += bytes;
        }
        Ok(())
    }

    /// Lets go of the pages wholly behind `len`, `sizes.release` at a time.
    fn release_behind(&mut self) {
        let behind = self.len & !(self.sizes.release - 1);
        if self.map.is_null() || behind < self.released + self.sizes.release {
            return;
        }
        let from = (self.released - self.map_at) as usize;
        let bytes = (behind - self.released) as usize;
        // SAFETY: `[released, behind)` lies within the live mapping
        // (`map_at <= released`, `behind <= len <= map_end`), starts on a
        // page boundary, and nothing refers to it: the writer copies only at
        // `len` and after. For a shared file mapping this drops the pages
        // from the process; their contents stay in the file's page cache,
        // dirty ones too.
        unsafe { libc::madvise(self.map.add(from).cast(), bytes, libc::MADV_DONTNEED) };
        self.released = behind;
    }

    fn io_error(&self, op: &'static str, e: io::Error) -> Error {
        Error::io(op, &self.path, e)
    }
}

impl WritableFile for MappedLog {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        let mut rest = data;
        while !rest.is_empty() {
            self.make_room()
                .map_err(|e| self.io_error("reserve log space", e))?;
            let at = (self.len - self.map_at) as usize;
            let room = (self.reserved.min(self.map_end()) - self.len) as usize;
            let n = rest.len().min(room);
            let (now, later) = rest.split_at(n);
            // SAFETY: `map` is a live mapping of `sizes.map` bytes from
            // `map_at`, and `[len, len + n)` lies within both it and the
            // reserved part of the file.
            unsafe { copy_forward(now, self.map.add(at)) };
            self.len += n as u64;
            rest = later;
        }
        self.release_behind();
        self.stats.record_mapped_write(data.len());
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        // Every append is in the page cache already.
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        self.file
            .sync_data()
            .map_err(|e| self.io_error("sync", e))?;
        self.stats.record_sync();
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        self.unmap();
        if self.reserved > self.len {
            self.file
                .set_len(self.len)
                .map_err(|e| self.io_error("truncate", e))?;
            self.reserved = self.len;
        }
        self.sync()
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for MappedLog {
    fn drop(&mut self) {
        self.unmap();
        if self.reserved > self.len {
            // Trim the reserved zeros (not synced: after a crash they are a
            // torn tail of the newest segment, which recovery allows).
            let _ = self.file.set_len(self.len);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::fs::OpenOptions;

    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    use super::*;
    use crate::wal::reader::{LogReader, Read};
    use crate::wal::writer::LogWriter;

    /// Small steps, so that a few MiB cross every boundary many times: a
    /// mapping of 1 MiB, reservations of 256 KiB up to 2 MiB and of 128
    /// KiB past it, releases of 64 KiB.
    const SMALL: Sizes = Sizes {
        map: 1 << 20,
        segment: 2 << 20,
        reserve: 256 << 10,
        step: 128 << 10,
        release: 64 << 10,
    };

    fn create(path: &Path, sizes: Sizes) -> MappedLog {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .expect("create");
        MappedLog::new(file, path.to_path_buf(), sizes, Arc::default())
            .unwrap_or_else(|(_, e)| panic!("map a log on this file system: {e}"))
    }

    /// Appends of random sizes (0 to 40 KB) that cross every mapping,
    /// reservation and release boundary; returns what was appended.
    fn fill(log: &mut MappedLog, bytes: usize, seed: u64) -> Vec<u8> {
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut all = Vec::new();
        while all.len() < bytes {
            let n = rng.gen_range(0..40_000);
            let chunk: Vec<u8> = (0..n).map(|_| rng.gen_range(1..=255u8)).collect();
            log.append(&chunk).expect("append");
            all.extend_from_slice(&chunk);
            assert_eq!(log.len(), all.len() as u64);
        }
        all
    }

    #[test]
    fn a_finished_log_holds_exactly_what_was_appended() {
        // Goal: across many mappings, reservations and releases, the file
        // ends up byte for byte what was appended, and no longer.
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("1.log");
        let mut log = create(&path, SMALL);
        let all = fill(&mut log, 5 << 20, 1);
        log.finish().expect("finish");
        drop(log);
        assert_eq!(std::fs::read(&path).expect("read"), all);
    }

    #[test]
    fn an_unfinished_log_reads_as_its_appends_then_zeros_and_a_dropped_one_is_trimmed() {
        // Goal: what a crash leaves (before finish or drop) is every byte
        // appended, in the page cache and so in the file, followed only by
        // reserved zeros; a drop trims them.
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("1.log");
        let mut log = create(&path, SMALL);
        let all = fill(&mut log, (3 << 20) + 1000, 2);
        let seen = std::fs::read(&path).expect("read");
        assert!(seen.len() > all.len(), "reserved zeros follow the appends");
        assert_eq!(seen.len() as u64 % SMALL.step, 0);
        assert_eq!(&seen[..all.len()], &all[..]);
        assert!(seen[all.len()..].iter().all(|&b| b == 0));
        drop(log);
        assert_eq!(std::fs::read(&path).expect("read"), all);
    }

    #[test]
    fn the_log_reader_takes_the_reserved_zeros_for_the_end() {
        // Goal: records written through the map read back whole from the
        // file as a crash leaves it, and the zeros after them end the log
        // as a torn tail would (allowed in the newest segment only).
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("1.log");
        let mut writer = LogWriter::new(Box::new(create(&path, SMALL)));
        let mut rng = SmallRng::seed_from_u64(3);
        let records: Vec<Vec<u8>> = (0..2000)
            .map(|i| vec![i as u8; rng.gen_range(1..2000)])
            .collect();
        for r in &records {
            writer.add_record(r).expect("add");
        }
        writer.flush().expect("flush");
        let mut reader = LogReader::new(std::fs::read(&path).expect("read"));
        for r in &records {
            match reader.next() {
                Read::Record { data, .. } => assert_eq!(&data, r),
                other => panic!("expected a record, got {other:?}"),
            }
        }
        assert!(matches!(reader.next(), Read::End | Read::Torn { .. }));
        writer.finish().expect("finish");
        let mut reader = LogReader::new(std::fs::read(&path).expect("read"));
        for _ in &records {
            assert!(matches!(reader.next(), Read::Record { .. }));
        }
        assert_eq!(reader.next(), Read::End, "a finished segment ends cleanly");
    }

    #[test]
    fn a_small_segment_reserves_little_and_every_step_divides_the_next() {
        for (bytes, reserve) in [
            (0, 64 << 10),
            (64 << 10, 64 << 10),
            (100 << 10, 128 << 10),
            (64 << 20, 64 << 20),
            (256 << 20, 64 << 20),
        ] {
            let s = Sizes::for_segment(bytes);
            assert_eq!(s.reserve, reserve, "{bytes}");
            assert_eq!(s.map % s.reserve, 0);
            assert_eq!(s.reserve % s.step, 0);
            assert_eq!(s.step % s.release, 0);
            assert_eq!(s.release % (64 << 10), 0);
        }
    }

    #[test]
    fn the_buffered_writer_takes_over_where_the_file_system_cannot_map() {
        // Goal: only "cannot" errors fall back; a real failure is one.
        assert!(unsupported(&io::Error::from_raw_os_error(libc::EOPNOTSUPP)));
        assert!(!unsupported(&io::Error::from_raw_os_error(libc::ENOSPC)));
        assert!(!unsupported(&io::Error::from_raw_os_error(libc::EIO)));
    }
}
