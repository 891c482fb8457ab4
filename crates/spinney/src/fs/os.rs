//! `OsFs`: the operating system's file system through `std::fs`.
//!
//! Appends are buffered in user space (64 KiB) and handed to the OS on
//! `flush`, except a log segment's on Linux, which are copied into a shared
//! memory map of the file (`fs/mapped.rs`); `sync` is `fdatasync`
//! (`File::sync_data`). Directory syncs open the directory and fsync it,
//! which is how POSIX makes a new or renamed entry durable. The database
//! lock is an `flock` on the LOCK file, which conflicts across processes
//! and across separate opens in one process.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::direct::{DirectPagedFile, DirectReadFile, DirectWritableFile};
use super::read_map::{PageMap, ReadMap};
use super::{
    check_read_within, size_for_read, DirectIo, FileLock, Fs, IoStats, LogWrites, PagedFile,
    RandomAccessFile, WritableFile, WRITEBACK_BYTES,
};
use crate::error::{Error, Result};

/// Appends smaller than this are gathered before a `write` system call.
const WRITE_BUFFER_BYTES: usize = 64 << 10;

/// The operating system's file system.
///
/// ```
/// # fn main() -> spinney::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// use spinney::fs::Fs;
/// let fs = spinney::fs::OsFs::new();
/// fs.create_dir_all(&dir.path().join("a/b"))?;
/// assert!(fs.exists(&dir.path().join("a/b"))?);
/// # Ok(()) }
/// ```
#[derive(Debug, Default)]
pub struct OsFs {
    stats: Arc<IoStats>,
}

impl OsFs {
    /// A new handle on the OS file system, with its own I/O counters.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options {
    ///     fs: std::sync::Arc::new(spinney::fs::OsFs::new()), // the default
    ///     ..spinney::Options::default()
    /// })?;
    /// db.create_table("t", spinney::TableOptions::lsm())?;
    /// # Ok(()) }
    /// ```
    pub fn new() -> Self {
        OsFs::default()
    }
}

impl Fs for OsFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let file = create_file(path)?;
        Ok(Box::new(OsWritableFile::new(file, path, &self.stats)))
    }

    /// With `LogWrites::Mapped` on Linux a memory-mapped segment
    /// (`fs/mapped.rs`), unless the file system cannot reserve space or map
    /// the file; otherwise the buffered writer.
    fn create_log(
        &self,
        path: &Path,
        size: u64,
        writes: LogWrites,
    ) -> Result<Box<dyn WritableFile>> {
        if writes == LogWrites::Write {
            return self.create(path);
        }
        #[cfg(target_os = "linux")]
        {
            let file = create_file(path)?;
            let stats = Arc::clone(&self.stats);
            let sizes = super::mapped::Sizes::for_segment(size);
            match super::mapped::MappedLog::new(file, path.to_path_buf(), sizes, stats) {
                Ok(log) => Ok(Box::new(log)),
                Err((file, e)) => {
                    let empty = file.metadata().is_ok_and(|m| m.len() == 0);
                    if !(empty && super::mapped::unsupported(&e)) {
                        return Err(Error::io("reserve log space", path, e));
                    }
                    Ok(Box::new(OsWritableFile::new(file, path, &self.stats)))
                }
            }
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = size;
            self.create(path)
        }
    }

    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let file = File::open(path).map_err(|e| Error::io("open", path, e))?;
        let len = file
            .metadata()
            .map_err(|e| Error::io("stat", path, e))?
            .len();
        Ok(Arc::new(OsRandomAccessFile {
            file,
            len,
            path: path.to_path_buf(),
            stats: Arc::clone(&self.stats),
        }))
    }

    /// Maps the whole file (`read_map.rs`); an empty file, or one the file
    /// system cannot map, is read with `pread`.
    fn open_mapped(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let file = File::open(path).map_err(|e| Error::io("open", path, e))?;
        let len = file
            .metadata()
            .map_err(|e| Error::io("stat", path, e))?
            .len();
        if let Some(map) = ReadMap::map(&file, len, path, &self.stats) {
            return Ok(Arc::new(map));
        }
        Ok(Arc::new(OsRandomAccessFile {
            file,
            len,
            path: path.to_path_buf(),
            stats: Arc::clone(&self.stats),
        }))
    }

    fn open_paged(&self, path: &Path, create: bool) -> Result<Arc<dyn PagedFile>> {
        let file = open_read_write(path, create)?;
        Ok(Arc::new(OsPagedFile {
            file,
            path: path.to_path_buf(),
            stats: Arc::clone(&self.stats),
        }))
    }

    fn create_direct(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        Ok(Box::new(DirectWritableFile::create(path, &self.stats)?))
    }

    fn open_direct(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        Ok(Arc::new(DirectReadFile::open(path, &self.stats)?))
    }

    fn open_paged_direct(
        &self,
        path: &Path,
        create: bool,
        direct: DirectIo,
    ) -> Result<Arc<dyn PagedFile>> {
        if direct == DirectIo::default() {
            return self.open_paged(path, create);
        }
        let buffered = self.open_paged(path, create)?;
        Ok(Arc::new(DirectPagedFile::new(
            buffered,
            direct.reads,
            direct.writes,
            &self.stats,
        )?))
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        fs::rename(from, to).map_err(|e| Error::io("rename", from, e))
    }

    fn remove(&self, path: &Path) -> Result<()> {
        fs::remove_file(path).map_err(|e| Error::io("remove", path, e))
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in fs::read_dir(dir).map_err(|e| Error::io("list", dir, e))? {
            let entry = entry.map_err(|e| Error::io("list", dir, e))?;
            if let Some(name) = entry.file_name().to_str() {
                names.push(name.to_string());
            }
        }
        names.sort();
        Ok(names)
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        fs::create_dir_all(dir).map_err(|e| Error::io("mkdir", dir, e))
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        let d = File::open(dir).map_err(|e| Error::io("open directory", dir, e))?;
        d.sync_all()
            .map_err(|e| Error::io("sync directory", dir, e))?;
        self.stats.record_sync();
        Ok(())
    }

    fn exists(&self, path: &Path) -> Result<bool> {
        path.try_exists().map_err(|e| Error::io("stat", path, e))
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| Error::io("open lock file", path, e))?;
        match file.try_lock() {
            Ok(()) => Ok(Box::new(OsFileLock { _file: file })),
            Err(fs::TryLockError::WouldBlock) => Err(Error::Locked {
                path: path.to_path_buf(),
            }),
            Err(fs::TryLockError::Error(e)) => Err(Error::io("lock", path, e)),
        }
    }

    fn lock_shared(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        // Read-only: the lock file is made only when it is missing (a
        // database copied without it).
        let file = match OpenOptions::new().read(true).open(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(path),
            other => other,
        }
        .map_err(|e| Error::io("open lock file", path, e))?;
        match file.try_lock_shared() {
            Ok(()) => Ok(Box::new(OsFileLock { _file: file })),
            Err(fs::TryLockError::WouldBlock) => Err(Error::Locked {
                path: path.to_path_buf(),
            }),
            Err(fs::TryLockError::Error(e)) => Err(Error::io("lock", path, e)),
        }
    }

    fn io_stats(&self) -> &IoStats {
        &self.stats
    }
}

#[derive(Debug)]
struct OsFileLock {
    // Closing the file releases the flock.
    _file: File,
}

impl FileLock for OsFileLock {}

struct OsWritableFile {
    file: File,
    path: PathBuf,
    buf: Vec<u8>,
    len: u64,
    /// Bytes passed to the OS, and those handed to `start_writeback`.
    written: u64,
    handed: u64,
    stats: Arc<IoStats>,
}

/// Opens `path` for positional reads and writes, creating it if `create`.
fn open_read_write(path: &Path, create: bool) -> Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(create)
        .truncate(false)
        .open(path)
        .map_err(|e| Error::io("open", path, e))
}

/// Creates `path` (truncating it) for writing; readable too, which a
/// shared writable memory map of it needs.
fn create_file(path: &Path) -> Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .map_err(|e| Error::io("create", path, e))
}

/// Starts writing `[offset, offset + len)` of `file` out to storage
/// without waiting (Linux: `sync_file_range` with `SYNC_FILE_RANGE_WRITE`;
/// elsewhere nothing). A file written whole and synced once at its end (an
/// SST, a B-tree checkpoint) otherwise leaves all its pages to that sync,
/// which holds the file system's journal while commits wait on it.
fn start_writeback(file: &File, offset: u64, len: u64) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
            return;
        };
        // SAFETY: a system call on a descriptor `file` owns; no memory is
        // passed. A hint: its failure changes nothing a sync relies on, so
        // it is ignored.
        unsafe {
            libc::sync_file_range(file.as_raw_fd(), offset, len, libc::SYNC_FILE_RANGE_WRITE)
        };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (file, offset, len);
}

impl OsWritableFile {
    fn new(file: File, path: &Path, stats: &Arc<IoStats>) -> OsWritableFile {
        OsWritableFile {
            file,
            path: path.to_path_buf(),
            buf: Vec::with_capacity(WRITE_BUFFER_BYTES),
            len: 0,
            written: 0,
            handed: 0,
            stats: Arc::clone(stats),
        }
    }

    fn write_out(&mut self, data: &[u8]) -> Result<()> {
        self.file
            .write_all(data)
            .map_err(|e| Error::io("write", &self.path, e))?;
        self.stats.record_write(data.len());
        self.written += data.len() as u64;
        if self.written - self.handed >= WRITEBACK_BYTES {
            start_writeback(&self.file, self.handed, self.written - self.handed);
            self.handed = self.written;
        }
        Ok(())
    }
}

impl WritableFile for OsWritableFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.len += data.len() as u64;
        if self.buf.len() + data.len() <= WRITE_BUFFER_BYTES {
            self.buf.extend_from_slice(data);
            return Ok(());
        }
        self.flush()?;
        if data.len() >= WRITE_BUFFER_BYTES {
            self.write_out(data)
        } else {
            self.buf.extend_from_slice(data);
            Ok(())
        }
    }

    fn flush(&mut self) -> Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let buf = std::mem::take(&mut self.buf);
        let result = self.write_out(&buf);
        self.buf = buf;
        self.buf.clear();
        result
    }

    fn sync(&mut self) -> Result<()> {
        self.flush()?;
        self.file
            .sync_data()
            .map_err(|e| Error::io("sync", &self.path, e))?;
        self.stats.record_sync();
        Ok(())
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

struct OsRandomAccessFile {
    file: File,
    len: u64,
    path: PathBuf,
    stats: Arc<IoStats>,
}

impl RandomAccessFile for OsRandomAccessFile {
    fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        let mut buf = Vec::new();
        self.read_into(offset, len, &mut buf)?;
        Ok(buf)
    }

    fn read_into(&self, offset: u64, len: usize, buf: &mut Vec<u8>) -> Result<()> {
        check_read_within(&self.path, offset, len, self.len)?;
        size_for_read(buf, len);
        self.file
            .read_exact_at(buf, offset)
            .map_err(|e| Error::io("read", &self.path, e))?;
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

/// Reads `buf.len()` bytes of `file` at `offset`, or fewer at its end:
/// the bytes read.
fn read_fully_at(file: &File, path: &Path, offset: u64, buf: &mut [u8]) -> Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        let Some(rest) = buf.get_mut(done..) else {
            break;
        };
        match file.read_at(rest, offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io("read", path, e)),
        }
    }
    Ok(done)
}

struct OsPagedFile {
    file: File,
    path: PathBuf,
    stats: Arc<IoStats>,
}

impl PagedFile for OsPagedFile {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let done = read_fully_at(&self.file, &self.path, offset, buf)?;
        self.stats.record_read(done);
        Ok(done)
    }

    fn write_at(&self, offset: u64, data: &[u8]) -> Result<()> {
        self.file
            .write_all_at(data, offset)
            .map_err(|e| Error::io("write", &self.path, e))?;
        self.stats.record_write(data.len());
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        self.file
            .sync_data()
            .map_err(|e| Error::io("sync", &self.path, e))?;
        self.stats.record_sync();
        Ok(())
    }

    fn start_writeback(&self, offset: u64, len: u64) {
        start_writeback(&self.file, offset, len);
    }

    fn set_len(&self, len: u64) -> Result<()> {
        self.file
            .set_len(len)
            .map_err(|e| Error::io("truncate", &self.path, e))
    }

    fn map_for_reads(&self) -> Option<PageMap> {
        let len = self.file.metadata().ok()?.len();
        PageMap::new(&self.file, len, &self.stats)
    }

    fn path(&self) -> &Path {
        &self.path
    }
}
