//! Direct I/O: files read and written around the operating system's page
//! cache (Linux `O_DIRECT`), for `Options::direct_reads` and
//! `Options::direct_writes`, as RocksDB's `use_direct_reads` and
//! `use_direct_io_for_flush_and_compaction` and WiredTiger's
//! `direct_io=[data]`. With it, spinney's cache is the only cache of the
//! data: what does not fit in it is read from storage.
//!
//! `O_DIRECT` asks that the offset, the length and the buffer's address of
//! every transfer be multiples of the device's logical block size. Here
//! all three are multiples of `ALIGN` (4 KiB, a multiple of every common
//! logical block size), whatever the caller asks:
//! - a read covers the aligned blocks around the bytes asked for, into an
//!   aligned buffer of the thread's, and copies them out;
//! - an append gathers bytes in an aligned buffer and writes whole blocks;
//!   a flush writes the last partial block padded with zeros and keeps it,
//!   to write it again whole, and a sync cuts the file back to the bytes
//!   appended before making it durable;
//! - a positional write that is not whole blocks reads the blocks at its
//!   edges first (a B-tree's header slot, a compressed page). Two writes
//!   into one 4 KiB block must not run at once; a B-tree's pages and
//!   header slots are each at least 4 KiB and aligned, so none share one.
//!
//! A sync is still `fdatasync`: `O_DIRECT` bypasses the page cache, not
//! the device's write cache nor the file system's metadata. A file system
//! that refuses `O_DIRECT` (tmpfs) is reported when the file is opened,
//! as `Error::Unsupported`, never read through the page cache instead.
//! Linux only; elsewhere opening a file for direct I/O is `Unsupported`.
//!
//! Thread-safety: a `DirectReadFile` and a `DirectPagedFile` are read (and
//! the latter written) by many threads, each with its own buffer; a
//! `DirectWritableFile` has one owner.

use std::cell::RefCell;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{
    check_read_within, read_past_end, size_for_read, IoStats, PagedFile, RandomAccessFile,
    WritableFile,
};
use crate::error::{Error, Result};

/// The alignment of every direct transfer's offset, length and buffer.
const ALIGN: usize = 4096;

/// The aligned buffer an appending file gathers before it writes.
const WRITE_BUFFER_BYTES: usize = 1 << 20;

/// A thread keeps its read buffer up to this size between reads.
const KEPT_READ_BUFFER_BYTES: usize = 2 << 20;

/// `n` rounded down and up to `ALIGN`.
fn align_down(n: u64) -> u64 {
    n / ALIGN as u64 * ALIGN as u64
}

fn align_up(n: u64) -> u64 {
    n.div_ceil(ALIGN as u64) * ALIGN as u64
}

/// A zeroed buffer whose bytes start at an `ALIGN`-aligned address: a
/// `Vec` one block longer than asked, used from its first aligned byte.
struct AlignedBuf {
    bytes: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedBuf {
    fn new(len: usize) -> AlignedBuf {
        let bytes = vec![0u8; len + ALIGN];
        // For a byte pointer `align_offset` is exact at run time; the
        // fallback keeps the slice in bounds if it ever is not (a read
        // through a misaligned buffer then fails with EINVAL).
        let start = bytes.as_ptr().align_offset(ALIGN).min(ALIGN);
        AlignedBuf { bytes, start, len }
    }

    fn as_slice(&self) -> &[u8] {
        self.bytes
            .get(self.start..self.start + self.len)
            .unwrap_or_default()
    }

    fn as_mut_slice(&mut self) -> &mut [u8] {
        self.bytes
            .get_mut(self.start..self.start + self.len)
            .unwrap_or_default()
    }
}

thread_local! {
    /// The thread's buffer for direct reads and edge blocks.
    static READ_BUF: RefCell<Option<AlignedBuf>> = const { RefCell::new(None) };
}

/// Runs `f` with an aligned buffer of `len` bytes (a multiple of `ALIGN`):
/// the thread's own, grown if needed, or a new one while the thread's is in
/// use.
fn with_buffer<T>(len: usize, f: impl FnOnce(&mut [u8]) -> T) -> T {
    let kept = READ_BUF
        .try_with(|b| b.try_borrow_mut().ok().and_then(|mut b| b.take()))
        .ok()
        .flatten();
    let mut buf = match kept {
        Some(b) if b.bytes.len() >= len + ALIGN => AlignedBuf { len, ..b },
        _ => AlignedBuf::new(len),
    };
    let out = f(buf.as_mut_slice());
    if buf.bytes.len() <= KEPT_READ_BUFFER_BYTES + ALIGN {
        let _ = READ_BUF.try_with(|b| {
            if let Ok(mut b) = b.try_borrow_mut() {
                *b = Some(buf);
            }
        });
    }
    out
}

/// Opens `path` with `O_DIRECT`, for reading, or for reading and writing
/// (creating and truncating it if `create`).
pub(super) fn open(path: &Path, write: bool, create: bool, truncate: bool) -> Result<File> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            .write(write)
            .create(create)
            .truncate(truncate)
            .custom_flags(libc::O_DIRECT)
            .open(path)
            .map_err(|e| {
                if e.raw_os_error() == Some(libc::EINVAL) {
                    Error::Unsupported(format!(
                        "{}: the file system refuses direct I/O (O_DIRECT): {e}; open the \
                         database without Options::direct_reads and direct_writes",
                        path.display()
                    ))
                } else {
                    Error::io("open for direct I/O", path, e)
                }
            })
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (write, create, truncate);
        Err(Error::Unsupported(format!(
            "{}: direct I/O (Options::direct_reads, direct_writes) is built for Linux only",
            path.display()
        )))
    }
}

/// Reads from `file` at `offset` into `buf` through aligned transfers:
/// the bytes read, fewer than asked only at the file's end.
fn read_aligned(file: &File, path: &Path, offset: u64, buf: &mut [u8]) -> Result<usize> {
    if buf.is_empty() {
        return Ok(0);
    }
    let start = align_down(offset);
    let end = align_up(offset + buf.len() as u64);
    let skip = (offset - start) as usize;
    with_buffer((end - start) as usize, |bounce| {
        let mut got = 0;
        while got < bounce.len() {
            let Some(rest) = bounce.get_mut(got..) else {
                break;
            };
            match file.read_at(rest, start + got as u64) {
                Ok(0) => break,
                // A short read ends at the file's end, which need not be
                // aligned: the next read would return 0.
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io("read (direct)", path, e)),
            }
        }
        let n = got.saturating_sub(skip).min(buf.len());
        if let (Some(to), Some(from)) = (buf.get_mut(..n), bounce.get(skip..skip + n)) {
            to.copy_from_slice(from);
        }
        Ok(n)
    })
}

/// An immutable file (an SST) read with `O_DIRECT`.
pub(super) struct DirectReadFile {
    file: File,
    len: u64,
    path: PathBuf,
    stats: Arc<IoStats>,
}

impl DirectReadFile {
    pub(super) fn open(path: &Path, stats: &Arc<IoStats>) -> Result<DirectReadFile> {
        let file = open(path, false, false, false)?;
        let len = file
            .metadata()
            .map_err(|e| Error::io("stat", path, e))?
            .len();
        Ok(DirectReadFile {
            file,
            len,
            path: path.to_path_buf(),
            stats: Arc::clone(stats),
        })
    }
}

impl RandomAccessFile for DirectReadFile {
    fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        let mut buf = Vec::new();
        self.read_into(offset, len, &mut buf)?;
        Ok(buf)
    }

    fn read_into(&self, offset: u64, len: usize, buf: &mut Vec<u8>) -> Result<()> {
        check_read_within(&self.path, offset, len, self.len)?;
        size_for_read(buf, len);
        let n = read_aligned(&self.file, &self.path, offset, buf)?;
        if n < len {
            return Err(read_past_end(&self.path, offset, len, offset + n as u64));
        }
        self.stats
            .record_read((align_up(offset + len as u64) - align_down(offset)) as usize);
        Ok(())
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn bypasses_os_cache(&self) -> bool {
        true
    }
}

/// A file written once from start to end (an SST) with `O_DIRECT`.
pub(super) struct DirectWritableFile {
    file: File,
    path: PathBuf,
    buf: AlignedBuf,
    /// Bytes of `buf` appended and not yet written whole; `buf` holds the
    /// file's bytes from `at`, an aligned offset.
    buffered: usize,
    at: u64,
    /// Bytes appended.
    len: u64,
    /// The file is longer than `len` (a partial block written padded).
    padded: bool,
    stats: Arc<IoStats>,
}

impl DirectWritableFile {
    pub(super) fn create(path: &Path, stats: &Arc<IoStats>) -> Result<DirectWritableFile> {
        let file = open(path, true, true, true)?;
        Ok(DirectWritableFile {
            file,
            path: path.to_path_buf(),
            buf: AlignedBuf::new(WRITE_BUFFER_BYTES),
            buffered: 0,
            at: 0,
            len: 0,
            padded: false,
            stats: Arc::clone(stats),
        })
    }

    /// Writes the first `bytes` of the buffer (a multiple of `ALIGN`) at `at`.
    fn write_out(&mut self, bytes: usize) -> Result<()> {
        let data = self.buf.as_slice().get(..bytes).unwrap_or_default();
        self.file
            .write_all_at(data, self.at)
            .map_err(|e| Error::io("write (direct)", &self.path, e))?;
        self.stats.record_write(bytes);
        Ok(())
    }

    /// Cuts the file back to the bytes appended, if a padded block made it
    /// longer.
    fn cut_padding(&mut self) -> Result<()> {
        if self.padded {
            self.file
                .set_len(self.len)
                .map_err(|e| Error::io("truncate", &self.path, e))?;
            self.padded = false;
        }
        Ok(())
    }
}

impl WritableFile for DirectWritableFile {
    fn append(&mut self, mut data: &[u8]) -> Result<()> {
        self.len += data.len() as u64;
        while !data.is_empty() {
            let room = WRITE_BUFFER_BYTES - self.buffered;
            let (now, later) = data.split_at(room.min(data.len()));
            if let Some(to) = self
                .buf
                .as_mut_slice()
                .get_mut(self.buffered..self.buffered + now.len())
            {
                to.copy_from_slice(now);
            }
            self.buffered += now.len();
            data = later;
            if self.buffered == WRITE_BUFFER_BYTES {
                self.write_out(WRITE_BUFFER_BYTES)?;
                self.at += WRITE_BUFFER_BYTES as u64;
                self.buffered = 0;
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if self.buffered == 0 {
            return Ok(());
        }
        let whole = self.buffered / ALIGN * ALIGN;
        let padded_len = align_up(self.buffered as u64) as usize;
        if padded_len > self.buffered {
            if let Some(pad) = self.buf.as_mut_slice().get_mut(self.buffered..padded_len) {
                pad.fill(0);
            }
            self.padded = true;
        }
        self.write_out(padded_len)?;
        // The partial last block stays, to be written again whole.
        self.buf.as_mut_slice().copy_within(whole..self.buffered, 0);
        self.at += whole as u64;
        self.buffered -= whole;
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        self.flush()?;
        self.cut_padding()?;
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

/// A file of pages (a B-tree's) whose reads, writes or both use
/// `O_DIRECT`; the others go to `buffered`, the same file opened without
/// it (Linux keeps the two coherent: a direct read first writes back the
/// cached pages it covers, a direct write drops them). A sync is the
/// buffered file's: `fdatasync` covers the file, whichever descriptor
/// wrote it.
pub(super) struct DirectPagedFile {
    buffered: Arc<dyn PagedFile>,
    direct: File,
    reads: bool,
    writes: bool,
    path: PathBuf,
    stats: Arc<IoStats>,
}

impl DirectPagedFile {
    pub(super) fn new(
        buffered: Arc<dyn PagedFile>,
        reads: bool,
        writes: bool,
        stats: &Arc<IoStats>,
    ) -> Result<DirectPagedFile> {
        let path = buffered.path().to_path_buf();
        let direct = open(&path, true, false, false)?;
        Ok(DirectPagedFile {
            buffered,
            direct,
            reads,
            writes,
            path,
            stats: Arc::clone(stats),
        })
    }

    /// Writes `data` at `offset` in whole aligned blocks, reading first
    /// the blocks its edges share with bytes it does not cover.
    fn write_direct(&self, offset: u64, data: &[u8]) -> Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        let start = align_down(offset);
        let end = align_up(offset + data.len() as u64);
        let skip = (offset - start) as usize;
        with_buffer((end - start) as usize, |bounce| {
            let blocks = bounce.len() / ALIGN;
            let head_partial = skip != 0;
            let tail_partial = (offset + data.len() as u64) != end;
            for (block, partial) in [(0, head_partial), (blocks - 1, tail_partial)] {
                if partial {
                    let Some(b) = bounce.get_mut(block * ALIGN..(block + 1) * ALIGN) else {
                        continue;
                    };
                    b.fill(0);
                    read_aligned(&self.direct, &self.path, start + (block * ALIGN) as u64, b)?;
                }
            }
            if let Some(to) = bounce.get_mut(skip..skip + data.len()) {
                to.copy_from_slice(data);
            }
            self.direct
                .write_all_at(bounce, start)
                .map_err(|e| Error::io("write (direct)", &self.path, e))?;
            self.stats.record_write(bounce.len());
            Ok(())
        })
    }
}

impl PagedFile for DirectPagedFile {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        if !self.reads {
            return self.buffered.read_at(offset, buf);
        }
        let n = read_aligned(&self.direct, &self.path, offset, buf)?;
        self.stats.record_read(n);
        Ok(n)
    }

    fn write_at(&self, offset: u64, data: &[u8]) -> Result<()> {
        if self.writes {
            self.write_direct(offset, data)
        } else {
            self.buffered.write_at(offset, data)
        }
    }

    fn sync(&self) -> Result<()> {
        self.buffered.sync()
    }

    fn start_writeback(&self, offset: u64, len: u64) {
        if !self.writes {
            self.buffered.start_writeback(offset, len);
        }
    }

    fn set_len(&self, len: u64) -> Result<()> {
        self.buffered.set_len(len)
    }

    fn path(&self) -> &Path {
        &self.path
    }
}
