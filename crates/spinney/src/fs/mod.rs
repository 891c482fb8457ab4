//! The file-system seam: every byte spinney reads or writes goes through `Fs`.
//!
//! `OsFs` is the real thing (std::fs, `fdatasync`, `flock`). `FaultFs` (feature
//! `testing`) is an in-memory file system that can simulate a crash (losing
//! everything not synced), tear the last write, and fail a chosen operation
//! with EIO or ENOSPC, so that tests can drive the engine through failures
//! that a real disk produces rarely.
//!
//! Durability contract, which the engine relies on and `FaultFs` enforces:
//! - data appended to a file is durable only after `WritableFile::sync`;
//! - creating, renaming or removing a directory entry is durable only after
//!   `Fs::sync_dir` on its directory.
//!
//! Thread-safety: `Fs` and `RandomAccessFile` are shared by many threads;
//! a `WritableFile` has one owner at a time.

use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::error::Result;

// The OS's file system: Unix only (lib.rs stops the build elsewhere with
// a message that says so).
#[cfg(unix)]
mod direct;
#[cfg(target_os = "linux")]
mod mapped;
#[cfg(unix)]
mod os;
#[cfg(unix)]
mod read_map;
#[cfg(unix)]
pub use os::OsFs;
#[cfg(unix)]
pub use read_map::PageMap;

#[cfg(any(test, feature = "fuzzing"))]
pub(crate) mod mem;

#[cfg(feature = "testing")]
mod fault;
#[cfg(feature = "testing")]
pub use fault::{count_checked_crash_image, FaultFs, FaultKind, PendingWrites};

/// A file system: the operations spinney needs, and nothing more.
///
/// ```
/// # fn main() -> spinney::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// use spinney::fs::Fs;
/// let fs = spinney::fs::OsFs::new();
/// let path = dir.path().join("note");
/// let mut f = fs.create(&path)?;
/// f.append(b"hello")?;
/// f.sync()?; // durable, and so is its name after:
/// fs.sync_dir(dir.path())?;
/// assert_eq!(fs.read_all(&path)?, b"hello");
/// # Ok(()) }
/// ```
pub trait Fs: Send + Sync + fmt::Debug {
    /// Creates `path`, truncating it if it exists, for appending.
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>>;
    /// Creates a log segment expected to grow to about `size` bytes: as
    /// `create`, for a file that takes many small appends, each flushed,
    /// whose appends reach the operating system the way `writes` asks where
    /// the file system can do it (`LogWrites`). The file may be longer than
    /// what was appended (zeros after it) until `WritableFile::finish`.
    fn create_log(
        &self,
        path: &Path,
        size: u64,
        writes: LogWrites,
    ) -> Result<Box<dyn WritableFile>> {
        let _ = (size, writes);
        self.create(path)
    }
    /// Opens an existing file for positional reads.
    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>>;
    /// Opens an existing file that nothing writes or cuts while it is open
    /// (an SST) for positional reads through a read-only memory map, where
    /// the file system can map it: a read copies from the map, with no
    /// system call (`Options::mmap_reads`). An I/O error under the map
    /// cannot be returned: it ends the process (SIGBUS; docs/durability.md).
    /// A file system that cannot map files opens it as `open` does.
    fn open_mapped(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.open(path)
    }
    /// Opens a file for positional reads and writes (B-tree files),
    /// creating it empty if `create` and it does not exist.
    fn open_paged(&self, path: &Path, create: bool) -> Result<Arc<dyn PagedFile>>;
    /// Creates `path` as `create` does, for a file written whole and then
    /// synced (an SST), whose writes go around the operating system's page
    /// cache (`Options::direct_writes`). A file system that cannot do that
    /// returns `Error::Unsupported`, never a buffered file.
    fn create_direct(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        Err(no_direct_io(path))
    }
    /// Opens an existing file that nothing writes while it is open (an
    /// SST) for positional reads that go around the operating system's page
    /// cache (`Options::direct_reads`), or `Error::Unsupported`.
    fn open_direct(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        Err(no_direct_io(path))
    }
    /// `open_paged`, with the reads, the writes or both going around the
    /// operating system's page cache as `direct` asks, or
    /// `Error::Unsupported`.
    fn open_paged_direct(
        &self,
        path: &Path,
        create: bool,
        direct: DirectIo,
    ) -> Result<Arc<dyn PagedFile>> {
        if direct == DirectIo::default() {
            return self.open_paged(path, create);
        }
        Err(no_direct_io(path))
    }
    /// Renames `from` to `to`, replacing `to` if it exists.
    fn rename(&self, from: &Path, to: &Path) -> Result<()>;
    /// Removes a file.
    fn remove(&self, path: &Path) -> Result<()>;
    /// The names (not paths) of the entries of a directory.
    fn list(&self, dir: &Path) -> Result<Vec<String>>;
    /// Creates a directory and its parents if missing.
    fn create_dir_all(&self, dir: &Path) -> Result<()>;
    /// Makes the directory's entries (creations, renames, removals) durable.
    fn sync_dir(&self, dir: &Path) -> Result<()>;
    /// True when `path` exists.
    fn exists(&self, path: &Path) -> Result<bool>;
    /// Takes an exclusive lock on `path` (created if missing), held until the
    /// returned guard drops. `Error::Locked` if another holder has it.
    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>>;
    /// Takes a shared lock on `path` (created if missing), held until the
    /// returned guard drops: any number of shared holders at once, none
    /// while an exclusive one holds it. `Error::Locked` if one does.
    fn lock_shared(&self, path: &Path) -> Result<Box<dyn FileLock>>;
    /// Counters of the I/O done through this file system.
    fn io_stats(&self) -> &IoStats;

    /// Reads a whole file.
    fn read_all(&self, path: &Path) -> Result<Vec<u8>> {
        let file = self.open(path)?;
        let len = file.len();
        let len = usize::try_from(len).map_err(|_| {
            crate::error::Error::io(
                "read",
                path,
                std::io::Error::new(
                    std::io::ErrorKind::OutOfMemory,
                    "file too large to read whole",
                ),
            )
        })?;
        file.read_at(0, len)
    }
}

/// Which of a file's transfers go around the operating system's page
/// cache (Linux `O_DIRECT`, `fs/direct.rs`): `Options::direct_reads` and
/// `Options::direct_writes`, as a B-tree file sees them.
///
/// ```
/// let direct = spinney::fs::DirectIo { reads: true, writes: false };
/// assert_ne!(direct, spinney::fs::DirectIo::default());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DirectIo {
    /// Reads bypass the page cache.
    pub reads: bool,
    /// Writes bypass the page cache.
    pub writes: bool,
}

/// The error of a file system that has no direct I/O.
fn no_direct_io(path: &Path) -> crate::error::Error {
    crate::error::Error::Unsupported(format!(
        "{}: this file system does not do direct I/O (Options::direct_reads, direct_writes)",
        path.display()
    ))
}

/// How the log's appends reach the operating system (`Options::log_writes`).
/// The promise is the same either way: a commit handed to the OS survives a
/// crash of the process, and a sync makes it survive the machine's. What
/// differs is the work per commit.
///
/// ```
/// # fn main() -> spinney::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// // A log written with write(), as LevelDB's and RocksDB's are.
/// let db = spinney::Db::open(dir.path(), spinney::Options {
///     log_writes: spinney::LogWrites::Write,
///     ..spinney::Options::default()
/// })?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LogWrites {
    /// Copied into a shared memory map of the segment, whose blocks are
    /// reserved ahead with `fallocate` (`fs/mapped.rs`): a commit makes no
    /// system call. Linux only; elsewhere, and on a file system that cannot
    /// reserve space or map the file, the log is written as with `Write`.
    #[default]
    Mapped,
    /// Gathered in a buffer and passed to `write()` when a commit group is
    /// handed to the OS: one system call per commit group.
    Write,
}

impl LogWrites {
    /// The name used in options and the lab's flags.
    pub fn name(self) -> &'static str {
        match self {
            LogWrites::Mapped => "mapped",
            LogWrites::Write => "write",
        }
    }
}

/// A file being written from start to end.
///
/// ```
/// # fn main() -> spinney::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// use spinney::fs::Fs;
/// let fs = spinney::fs::OsFs::new();
/// let mut f = fs.create(&dir.path().join("log"))?;
/// f.append(b"a record")?;
/// f.flush()?; // handed to the OS
/// f.sync()?; // on the disk
/// assert_eq!(f.len(), 8);
/// # Ok(()) }
/// ```
pub trait WritableFile: Send {
    /// Appends bytes. They may stay in a user-space buffer until `flush`.
    fn append(&mut self, data: &[u8]) -> Result<()>;
    /// Hands buffered bytes to the operating system (they survive a crash of
    /// the process, not of the machine).
    fn flush(&mut self) -> Result<()>;
    /// Flushes, then makes the file's contents durable.
    fn sync(&mut self) -> Result<()>;
    /// Syncs a file that takes no more appends, first cutting it to the
    /// bytes appended (see `Fs::create_log`).
    fn finish(&mut self) -> Result<()> {
        self.sync()
    }
    /// Bytes appended so far (buffered included).
    fn len(&self) -> u64;
    /// True when nothing was appended yet.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The file's path, for error messages.
    fn path(&self) -> &Path;
}

/// A file read at arbitrary offsets by many threads.
///
/// ```
/// # fn main() -> spinney::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// use spinney::fs::Fs;
/// let fs = spinney::fs::OsFs::new();
/// let path = dir.path().join("data");
/// let mut w = fs.create(&path)?;
/// w.append(b"0123456789")?;
/// w.sync()?;
/// let r = fs.open(&path)?;
/// assert_eq!(r.read_at(3, 4)?, b"3456");
/// # Ok(()) }
/// ```
pub trait RandomAccessFile: Send + Sync {
    /// Reads exactly `len` bytes at `offset`; a read past the end is an I/O
    /// error of kind `UnexpectedEof`.
    fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>>;
    /// `read_at` into `buf`, whose bytes it replaces: a caller that keeps
    /// buffers reuses one instead of allocating (SST block reads).
    fn read_into(&self, offset: u64, len: usize, buf: &mut Vec<u8>) -> Result<()> {
        *buf = self.read_at(offset, len)?;
        Ok(())
    }
    /// The file's length when it was opened.
    fn len(&self) -> u64;
    /// True when the file was empty when opened.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The file's path, for error messages.
    fn path(&self) -> &Path;
    /// True when reads go around the operating system's page cache
    /// (`Fs::open_direct`), so that nothing reads ahead for a caller that
    /// walks the file in order: a compaction then reads its inputs in
    /// large pieces itself.
    fn bypasses_os_cache(&self) -> bool {
        false
    }
    /// The whole file as it lies in a read-only memory map, for a file
    /// nothing writes or cuts while it is open (`Fs::open_mapped`): a
    /// reader may use the bytes in place, for as long as it holds the file.
    /// None for a file read with system calls.
    fn mapped(&self) -> Option<&[u8]> {
        None
    }
}

/// The error of a read of `len` bytes at `offset` past the end of `path`,
/// a file of `file_len` bytes (`RandomAccessFile::read_at`'s, for every
/// file system).
pub(crate) fn read_past_end(
    path: &Path,
    offset: u64,
    len: usize,
    file_len: u64,
) -> crate::error::Error {
    crate::error::Error::io(
        "read",
        path,
        std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!("read of {len} bytes at offset {offset} past the end ({file_len} bytes)"),
        ),
    )
}

/// `read_past_end`'s error unless `[offset, offset + len)` lies within a
/// file of `file_len` bytes.
pub(crate) fn check_read_within(path: &Path, offset: u64, len: usize, file_len: u64) -> Result<()> {
    let within = offset
        .checked_add(len as u64)
        .is_some_and(|end| end <= file_len);
    if within {
        Ok(())
    } else {
        Err(read_past_end(path, offset, len, file_len))
    }
}

/// Makes `buf` `len` bytes long for a read that writes every byte of it
/// or fails: only bytes past its old length are zeroed (a reused block
/// buffer is not zeroed whole before each read), and it grows to `len`
/// exactly, not to double its size, since a cached block is charged its
/// length.
pub(crate) fn size_for_read(buf: &mut Vec<u8>, len: usize) {
    buf.truncate(len);
    buf.reserve_exact(len - buf.len());
    buf.resize(len, 0);
}

/// Bytes written between two hints to start their writeback
/// (`PagedFile::start_writeback`, and the OS writable files' own).
pub(crate) const WRITEBACK_BYTES: u64 = 8 << 20;

/// A file of pages, read and written in place by many threads (B-tree
/// files). Writes reach the operating system at once; they are durable only
/// after `sync`, and until then a crash may keep any subset of them, each
/// whole, torn, or not at all.
///
/// ```
/// # fn main() -> spinney::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// use spinney::fs::Fs;
/// let fs = spinney::fs::OsFs::new();
/// let f = fs.open_paged(&dir.path().join("pages"), true)?;
/// f.write_at(4096, b"page one")?;
/// f.sync()?;
/// let mut buf = [0u8; 8];
/// assert_eq!(f.read_at(4096, &mut buf)?, 8);
/// assert_eq!(&buf, b"page one");
/// # Ok(()) }
/// ```
pub trait PagedFile: Send + Sync {
    /// Reads up to `buf.len()` bytes at `offset`; returns how many were read,
    /// fewer only at the end of the file.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize>;
    /// Writes all of `data` at `offset`, growing the file if needed.
    fn write_at(&self, offset: u64, data: &[u8]) -> Result<()>;
    /// Makes every write so far durable.
    fn sync(&self) -> Result<()>;
    /// A hint: starts writing the bytes written to `[offset, offset +
    /// len)` out to storage, without waiting for them (on Linux,
    /// `sync_file_range` with `SYNC_FILE_RANGE_WRITE`), so that a later
    /// `sync` has less to do. Durability still needs `sync`; a file system
    /// without it does nothing.
    fn start_writeback(&self, offset: u64, len: u64) {
        let _ = (offset, len);
    }
    /// Cuts the file to `len` bytes (or grows it with zeros). Durable, like
    /// writes, only after `sync`: until then a crash may keep either length.
    fn set_len(&self, len: u64) -> Result<()>;
    /// The file's path, for error messages.
    fn path(&self) -> &Path;
    /// A memory map of the file for reads (`Options::mmap_reads`), where
    /// the file system can map it; None otherwise, and the file is read
    /// with `read_at`. The caller tells the map how long the file is
    /// (`PageMap::grew_to`, `cut_to`).
    fn map_for_reads(&self) -> Option<PageMap> {
        None
    }
}

/// Holds a lock taken with `Fs::lock` until dropped.
///
/// ```
/// # fn main() -> spinney::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// use spinney::fs::Fs;
/// let fs = spinney::fs::OsFs::new();
/// let lock = fs.lock(&dir.path().join("LOCK"))?;
/// drop(lock); // released
/// # Ok(()) }
/// ```
pub trait FileLock: Send + Sync + fmt::Debug {}

/// I/O counters: what the engine asked of the file system. Relaxed atomics:
/// these are statistics, not synchronisation.
///
/// ```
/// # fn main() -> spinney::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// use spinney::fs::Fs;
/// let fs = std::sync::Arc::new(spinney::fs::OsFs::new());
/// let db = spinney::Db::open(dir.path(), spinney::Options { fs: fs.clone(), ..spinney::Options::default() })?;
/// db.create_table("t", spinney::TableOptions::lsm())?.put(b"k", b"v")?;
/// db.flush()?;
/// let stats: &spinney::fs::IoStats = fs.io_stats();
/// assert!(stats.snapshot().syncs > 0);
/// # Ok(()) }
/// ```
#[derive(Debug, Default)]
pub struct IoStats {
    bytes_read: AtomicU64,
    read_requests: AtomicU64,
    bytes_written: AtomicU64,
    bytes_mapped: AtomicU64,
    write_requests: AtomicU64,
    syncs: AtomicU64,
}

/// A copy of `IoStats` at one moment.
///
/// ```
/// # fn main() -> spinney::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// use spinney::fs::Fs;
/// let fs = spinney::fs::OsFs::new();
/// let before: spinney::fs::IoStatsSnapshot = fs.io_stats().snapshot();
/// let mut f = fs.create(&dir.path().join("x"))?;
/// f.append(b"abc")?;
/// f.flush()?;
/// assert_eq!(fs.io_stats().snapshot().bytes_written - before.bytes_written, 3);
/// # Ok(()) }
/// ```
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct IoStatsSnapshot {
    /// Bytes returned by positional reads.
    pub bytes_read: u64,
    /// Positional reads issued.
    pub read_requests: u64,
    /// Bytes handed to the operating system by appends, mapped ones
    /// included.
    pub bytes_written: u64,
    /// Of `bytes_written`, those copied into a memory map rather than
    /// passed to a write call (`LogWrites::Mapped`): a process's own count
    /// of bytes written (`wchar` in Linux's `/proc/PID/io`) leaves them out.
    pub bytes_mapped: u64,
    /// Write calls issued to the operating system.
    pub write_requests: u64,
    /// File and directory syncs.
    pub syncs: u64,
}

impl IoStats {
    pub(crate) fn record_read(&self, bytes: usize) {
        self.bytes_read.fetch_add(bytes as u64, Ordering::Relaxed);
        self.read_requests.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn record_write(&self, bytes: usize) {
        self.bytes_written
            .fetch_add(bytes as u64, Ordering::Relaxed);
        self.write_requests.fetch_add(1, Ordering::Relaxed);
    }

    /// Bytes copied into a memory map: written, but by no write call.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub(crate) fn record_mapped_write(&self, bytes: usize) {
        self.bytes_written
            .fetch_add(bytes as u64, Ordering::Relaxed);
        self.bytes_mapped.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    pub(crate) fn record_sync(&self) {
        self.syncs.fetch_add(1, Ordering::Relaxed);
    }

    /// The counters now.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// use spinney::fs::Fs;
    /// let fs = spinney::fs::OsFs::new();
    /// assert_eq!(fs.io_stats().snapshot(), spinney::fs::IoStatsSnapshot::default());
    /// # Ok(()) }
    /// ```
    pub fn snapshot(&self) -> IoStatsSnapshot {
        IoStatsSnapshot {
            bytes_read: self.bytes_read.load(Ordering::Relaxed),
            read_requests: self.read_requests.load(Ordering::Relaxed),
            bytes_written: self.bytes_written.load(Ordering::Relaxed),
            bytes_mapped: self.bytes_mapped.load(Ordering::Relaxed),
            write_requests: self.write_requests.load(Ordering::Relaxed),
            syncs: self.syncs.load(Ordering::Relaxed),
        }
    }
}
