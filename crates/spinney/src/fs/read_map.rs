//! `ReadMap`: a file that no one writes while it is open (an SST) read
//! through a private read-only memory map of the whole file
//! (`Fs::open_mapped`, `Options::mmap_reads`), as LevelDB reads its tables
//! on 64-bit machines and RocksDB with `allow_mmap_reads`. A read copies
//! the bytes out of the map (`read_at`), or uses them in place
//! (`RandomAccessFile::mapped`: an uncompressed SST block): no system
//! call, no lookup in the kernel's page cache by file offset, where `pread`
//! makes both for every block that misses the database's cache.
//!
//! - An I/O error on a mapped page cannot be returned: the kernel raises
//!   SIGBUS in the thread that touched it, which ends the process (the
//!   database's files are as a crash leaves them, and the log recovers
//!   them). docs/durability.md says so; `pread` returns the error instead.
//! - A file cut shorter while mapped (no spinney process does that to a
//!   live SST; another program could) raises SIGBUS the same way.
//! - The map's pages belong to the page cache: they count toward the
//!   process's resident set while touched, and the kernel takes them back
//!   under memory pressure as it would the cache's.
//!
//! Thread-safety: the map is read-only and never changes while it lives;
//! any number of threads read it at once.

use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::{check_read_within, IoStats, RandomAccessFile};
use crate::error::Result;

/// A whole file mapped for reading.
pub(super) struct ReadMap {
    map: *const u8,
    len: u64,
    path: PathBuf,
    stats: Arc<IoStats>,
}

// SAFETY: the mapping is private and read-only, made once in `map` and
// unmapped only in `drop`; nothing writes through it, so shared reads from
// any thread are reads of memory that does not change.
unsafe impl Send for ReadMap {}
// SAFETY: as for `Send`.
unsafe impl Sync for ReadMap {}

impl ReadMap {
    /// Maps `file`, of `len` bytes (at least one). `None` if the file
    /// system cannot map it (the caller reads it with `pread` then).
    pub(super) fn map(file: &File, len: u64, path: &Path, stats: &Arc<IoStats>) -> Option<ReadMap> {
        let bytes = usize::try_from(len).ok().filter(|&b| b > 0)?;
        let map = map_read_only(file.as_raw_fd(), bytes, libc::MAP_PRIVATE)?;
        Some(ReadMap {
            map,
            len,
            path: path.to_path_buf(),
            stats: Arc::clone(stats),
        })
    }
}

impl Drop for ReadMap {
    fn drop(&mut self) {
        // SAFETY: `map` was returned by `mmap` for `len` bytes (which fit a
        // usize: checked in `map`), and is unmapped once, here.
        unsafe { libc::munmap(self.map.cast_mut().cast(), self.len as usize) };
    }
}

impl RandomAccessFile for ReadMap {
    fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        let mut buf = Vec::new();
        self.read_into(offset, len, &mut buf)?;
        Ok(buf)
    }

    fn read_into(&self, offset: u64, len: usize, buf: &mut Vec<u8>) -> Result<()> {
        check_read_within(&self.path, offset, len, self.len)?;
        // SAFETY: `[offset, offset + len)` lies inside the mapping (checked
        // above; `len` bytes of it are mapped), which lives as long as
        // `self` and is never written.
        let bytes = unsafe { std::slice::from_raw_parts(self.map.add(offset as usize), len) };
        // The buffer grows to `len` exactly, as `pread`'s does: a cached
        // block is charged its length.
        buf.clear();
        buf.reserve_exact(len);
        buf.extend_from_slice(bytes);
        self.stats.record_read(len);
        Ok(())
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn mapped(&self) -> Option<&[u8]> {
        // SAFETY: the mapping covers `len` bytes (which fit a usize:
        // checked in `map`), lives as long as `self`, and is never written.
        Some(unsafe { std::slice::from_raw_parts(self.map, self.len as usize) })
    }
}

/// A file that is written while it is read (a B-tree file), read through
/// shared read-only memory maps (`PagedFile::map_for_reads`,
/// `Options::mmap_reads`): a read takes its bytes from the map
/// (`bytes`), where `pread` makes a system call. The file's own writes
/// (`write_at`) land in the page cache the map shows, so the map sees them
/// as soon as they return; a reader that may race a write of the bytes it
/// reads must check what it read (the B-tree checks each page's checksum,
/// and the page's write count before and after).
///
/// The map reaches as far as the file is known to be long (`grew_to`,
/// `cut_to`): a read past that is refused (`bytes` returns None) and
/// the caller reads with `pread`, which reports a short file as an error
/// rather than raising SIGBUS. A file that grows past the mapped range is
/// mapped again, twice as far ahead; the older maps stay until the file
/// is closed, as readers may still copy from them. The same caveats as
/// `ReadMap`'s: an I/O error under the map, or a file cut by another
/// program, raises SIGBUS.
///
/// Thread-safety: `bytes` from any number of threads; the known length
/// and the current map are atomics, and a new map is made under a mutex.
pub struct PageMap {
    fd: OwnedFd,
    /// The newest map: one of `maps`, alive as long as `self`.
    current: AtomicPtr<Region>,
    #[expect(
        clippy::vec_box,
        reason = "`current` points at a region: boxed, it stays put as the list grows"
    )]
    maps: Mutex<Vec<Box<Region>>>,
    /// How long the file is known to be: no byte at or past it is read
    /// through a map.
    len: AtomicU64,
    stats: Arc<IoStats>,
}

/// One mapping of the file's first `len` bytes (which may run past its
/// end: those pages are never touched).
struct Region {
    at: *const u8,
    len: usize,
}

// SAFETY: a region is a read-only shared mapping made once and unmapped
// only when its `PageMap` drops; reading it from any thread is reading
// memory the kernel keeps mapped (what a racing write does to the bytes
// read is the caller's to check, see `PageMap`).
unsafe impl Send for Region {}
// SAFETY: as for `Send`.
unsafe impl Sync for Region {}

/// A new read-only mapping (`flags`: `MAP_PRIVATE` or `MAP_SHARED`) of the
/// first `bytes` bytes of the open file `fd`; None if the kernel refuses.
fn map_read_only(fd: RawFd, bytes: usize, flags: libc::c_int) -> Option<*const u8> {
    // SAFETY: a new read-only mapping of an open file of ours; the kernel
    // picks an address no other mapping uses, and nothing is written
    // through it.
    let at = unsafe { libc::mmap(ptr::null_mut(), bytes, libc::PROT_READ, flags, fd, 0) };
    (at != libc::MAP_FAILED).then(|| at.cast_const().cast())
}

/// The least a map reaches: small files are mapped this far ahead, so that
/// a growing file is not mapped again and again.
const MAP_AHEAD_MIN: u64 = 64 << 20;

impl PageMap {
    /// Maps `file`, now `len` bytes long. None if the file system cannot
    /// map it.
    pub(super) fn new(file: &File, len: u64, stats: &Arc<IoStats>) -> Option<PageMap> {
        let fd = file.try_clone().ok()?.into();
        let map = PageMap {
            fd,
            current: AtomicPtr::new(ptr::null_mut()),
            maps: Mutex::new(Vec::new()),
            len: AtomicU64::new(len),
            stats: Arc::clone(stats),
        };
        map.map_to(len)?;
        Some(map)
    }

    /// Maps the file at least `needed` bytes far (and twice as far ahead),
    /// unless the current map reaches that far already; None if it cannot.
    fn map_to(&self, needed: u64) -> Option<()> {
        let mut maps = self.maps.lock();
        if maps.last().is_some_and(|r| r.len as u64 >= needed) {
            return Some(());
        }
        let bytes = usize::try_from(needed.max(MAP_AHEAD_MIN).checked_mul(2)?).ok()?;
        // Shared, so that the file's own writes show; pages past the file's
        // end are never touched (`bytes` reads below `len` only).
        let at = map_read_only(self.fd.as_raw_fd(), bytes, libc::MAP_SHARED)?;
        // Pages are read one at a time at random places: no read-ahead
        // around each fault (LMDB's MDB_NORDAHEAD does the same).
        // SAFETY: advice on the mapping just made, of `bytes` bytes.
        unsafe { libc::madvise(at.cast_mut().cast(), bytes, libc::MADV_RANDOM) };
        let mut region = Box::new(Region { at, len: bytes });
        self.current.store(&mut *region, Ordering::Release);
        maps.push(region);
        Some(())
    }

    /// Records that the file is now at least `len` bytes long (a write that
    /// returned).
    pub fn grew_to(&self, len: u64) {
        self.len.fetch_max(len, Ordering::AcqRel);
    }

    /// Records that the file is about to be cut to `len` bytes: from now on
    /// no read through the map goes past it.
    pub fn cut_to(&self, len: u64) {
        self.len.fetch_min(len, Ordering::AcqRel);
    }

    /// The `len` bytes at `offset`, in the map; None if they are not all
    /// below the file's known length (or the file cannot be mapped that
    /// far), and the caller reads them with `pread`. The bytes are the
    /// page cache's: a write of this process's to them changes them while
    /// the caller reads, so what it reads it must check (see `PageMap`).
    pub fn bytes(&self, offset: u64, len: usize) -> Option<&[u8]> {
        let end = offset.checked_add(len as u64)?;
        if end > self.len.load(Ordering::Acquire) {
            return None;
        }
        let mut region = self.current.load(Ordering::Acquire);
        // SAFETY: `current` always points at a region in `maps`, which
        // lives (boxed, never moved or dropped) until `self` drops.
        if unsafe { (*region).len as u64 } < end {
            self.map_to(end)?;
            region = self.current.load(Ordering::Acquire);
        }
        // SAFETY: as above; the reference lives no longer than `self`.
        let region = unsafe { &*region };
        if (region.len as u64) < end {
            return None;
        }
        self.stats.record_read(len);
        // SAFETY: `[offset, end)` lies inside the region's mapping (checked
        // just above) and below the file's end (checked first), so every
        // page touched is mapped and backed by the file, for as long as
        // `self` lives. The memory may be changed by a concurrent write of
        // this process's (the kernel's copy into the page cache): readers
        // read it byte by byte (a checksum, a copy) and then check that no
        // write raced them before they use what they read.
        Some(unsafe { std::slice::from_raw_parts(region.at.add(offset as usize), len) })
    }
}

impl Drop for PageMap {
    fn drop(&mut self) {
        for region in self.maps.get_mut().drain(..) {
            // SAFETY: each region was returned by `mmap` for `len` bytes
            // and is unmapped once, here, when no reader can hold it.
            unsafe { libc::munmap(region.at.cast_mut().cast(), region.len) };
        }
    }
}

impl std::fmt::Debug for PageMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageMap")
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    #[test]
    fn reads_copy_the_file_and_refuse_past_its_end() {
        // Goal: a read through the map returns the file's bytes at any
        // offset, and one past the end is the same error `pread`'s reader
        // gives; an empty file is not mapped.
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f");
        let data: Vec<u8> = (0..10_000u32).map(|i| (i * 7) as u8).collect();
        File::create(&path)
            .and_then(|mut f| f.write_all(&data))
            .expect("write");
        let stats = Arc::new(IoStats::default());
        let file = File::open(&path).expect("open");
        let map = ReadMap::map(&file, data.len() as u64, &path, &stats).expect("map");
        let mut buf = vec![9u8; 50_000];
        for (at, len) in [
            (0usize, 1usize),
            (4095, 2),
            (9_000, 1_000),
            (0, 10_000),
            (10_000, 0),
        ] {
            map.read_into(at as u64, len, &mut buf).expect("read");
            assert_eq!(buf, data[at..at + len], "{len} bytes at {at}");
        }
        assert_eq!(map.read_at(3, 4).expect("read"), data[3..7]);
        let past = map.read_at(9_999, 2).expect_err("past the end");
        assert!(past.to_string().contains("past the end"), "{past}");
        assert!(map.read_at(u64::MAX, 1).is_err());
        let empty = dir.path().join("e");
        File::create(&empty).expect("create");
        let file = File::open(&empty).expect("open");
        assert!(ReadMap::map(&file, 0, &empty, &stats).is_none());
    }
}
