//! `ReadMap`: a file that no one writes while it is open (an SST) read
//! through a private read-only memory map of the whole file
//! (`Fs::open_mapped`, `Options::mmap_reads`), as LevelDB reads its tables
//! on 64-bit machines and RocksDB with `allow_mmap_reads`. A read copies
//! the bytes out of the map: no system call, no lookup in the kernel's page
//! cache by file offset, where `pread` makes both for every block that
//! misses the database's cache.
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
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::ptr;
use std::sync::Arc;

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
        // SAFETY: a new private read-only mapping of our own open file; the
        // kernel picks an address no other mapping uses.
        let map = unsafe {
            libc::mmap(
                ptr::null_mut(),
                bytes,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                file.as_raw_fd(),
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return None;
        }
        Some(ReadMap {
            map: map.cast_const().cast(),
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
