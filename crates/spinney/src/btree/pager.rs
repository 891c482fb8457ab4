//! The pager: a B-tree file's page I/O and the frames pages live in while
//! they are in memory.
//!
//! `PageFile` reads and writes framed pages (`format::encode_page`,
//! `format::decode_page`) at `pgno * page_size`, and runs of pages (overflow
//! values, the free map). A page in memory is a `PageBuf` behind its latch,
//! a `Frame`, held by the database's one cache; `BtreeTable::fetch` finds a
//! page there or reads it in, and `install_page` caches a new one.
//!
//! Dirty pages belong to the pager, not the cache: a frame tells the cache
//! it may not leave while dirty (`impl Entry for Frame`), so the cache hands
//! cold dirty frames back instead of writing them, and the B-tree writes
//! them (`write_handed_back`: the writer after each applied entry, each
//! checkpoint, and a read that missed the cache) with no cache lock held,
//! then lets them go.
//!
//! Invariants: a page read from the file never replaces a newer image the
//! cache held meanwhile (`Loading`); a dirty frame is written to its own
//! place before it leaves the cache, and that place is fresh or frozen,
//! never part of the durable image; a frame whose page was freed is marked
//! clean under its write latch (`BtreeTable::uncache`), so a write-back
//! already holding it never writes it over the page's next use.
//!
//! Thread-safety: `PageFile` is shared by every reader and the writer (its
//! file handle takes positioned reads and writes; `failed` and `loading`
//! are behind their own mutexes). A frame's latch guards its image; a page
//! is written under its read latch.

use std::any::Any;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::lock_api::{ArcRwLockReadGuard, ArcRwLockWriteGuard};
use parking_lot::{Mutex, RawRwLock, RwLock};

use super::{format, page, BtreeTable};
use crate::cache::{Cache, Entry, State};
use crate::counter::Striped;
use crate::error::{Error, Result};
use crate::fs::PagedFile;
use crate::options::Compression;
use crate::read_context::ReadContext;

/// A page's read latch, held across calls (a descent's leaf).
pub(crate) type ReadGuard = ArcRwLockReadGuard<RawRwLock, PageBuf>;
pub(super) type WriteGuard = ArcRwLockWriteGuard<RawRwLock, PageBuf>;

/// Bytes a page is charged in the cache beyond its size (frame, map entry).
pub(super) const FRAME_OVERHEAD: u64 = 96;

/// What a B-tree file's pages count, for stats. Relaxed atomics.
#[derive(Debug, Default)]
pub(crate) struct PageCounters {
    /// Counted at every level of every descent: striped.
    pub from_cache: Striped,
    pub from_storage: AtomicU64,
    pub written: AtomicU64,
    pub bytes_written: AtomicU64,
    pub evictions_clean: AtomicU64,
    pub evictions_dirty: AtomicU64,
}

/// A B-tree file: its handle and what every page of it shares.
pub(crate) struct PageFile {
    pub file: Arc<dyn PagedFile>,
    pub page_size: usize,
    pub compression: Compression,
    /// This file's owner number in the cache.
    pub owner: u64,
    pub counters: PageCounters,
    /// Why a page write failed, if one did (an eviction cannot return its
    /// error; the next write or checkpoint of the table reports it).
    pub failed: Mutex<Option<String>>,
    /// Pages being read from the file into the cache, with how many reads
    /// of each are in flight (see `Loading`).
    pub loading: Mutex<HashMap<u64, u32>>,
}

/// A read of a page from the file into the cache, registered for its
/// duration: the frame tells the cache it is busy meanwhile (it may not leave),
/// so that the read cannot put an older image back over a newer one.
pub(crate) struct Loading<'a> {
    file: &'a PageFile,
    pgno: u64,
}

impl<'a> Loading<'a> {
    pub(crate) fn start(file: &'a PageFile, pgno: u64) -> Loading<'a> {
        *file.loading.lock().entry(pgno).or_insert(0) += 1;
        Loading { file, pgno }
    }
}

impl Drop for Loading<'_> {
    fn drop(&mut self) {
        let mut loading = self.file.loading.lock();
        if let Some(n) = loading.get_mut(&self.pgno) {
            *n -= 1;
            if *n == 0 {
                loading.remove(&self.pgno);
            }
        }
    }
}

impl std::fmt::Debug for PageFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageFile")
            .field("path", &self.file.path())
            .field("page_size", &self.page_size)
            .finish()
    }
}

/// A page in memory.
#[derive(Debug)]
pub(crate) struct PageBuf {
    pub file: Arc<PageFile>,
    pub pgno: u64,
    /// Changed since it was last written.
    pub dirty: AtomicBool,
    pub image: Vec<u8>,
}

/// A cached page: the latch (a reader-writer lock) over its buffer.
pub(crate) type Frame = RwLock<PageBuf>;

/// What the cache asks a page when its clock hand reaches it: busy while
/// anyone besides the cache holds it, while it is latched for writing, or
/// while a read of it from the file is in flight (see `Loading`); dirty
/// while it holds changes not yet written (the pager writes it: see
/// `write_handed_back`), unless its table has failed (busy then: it stays
/// until reopen); else clean. Never blocks: the cache asks under a
/// shard's mutex.
impl Entry for Frame {
    fn state(&self, shared: bool) -> State {
        if shared {
            return State::Busy;
        }
        let Some(page) = self.try_read() else {
            return State::Busy;
        };
        // Being read from the file by another thread (see `Loading`).
        if page.file.loading.lock().contains_key(&page.pgno) {
            return State::Busy;
        }
        if page.dirty.load(Ordering::Acquire) {
            // A table whose page write failed takes no more writes until
            // reopened: its pages are not handed back to fail again.
            if page.file.failed.lock().is_some() {
                return State::Busy;
            }
            State::Dirty
        } else {
            State::Clean
        }
    }

    fn evicted(&self) {
        if let Some(page) = self.try_read() {
            page.file
                .counters
                .evictions_clean
                .fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Writes out the dirty pages the cache handed back, of any B-tree table
/// (each to its own file), and lets each leave the cache once written, so
/// that the cache gets back within its budget. Called by a B-tree writer
/// after each entry, by a checkpoint, and by a B-tree read that missed the
/// cache, never under a cache lock; an LSM read never writes a page. A write that fails marks the page's table
/// failed and keeps the page (the next write or checkpoint of that table
/// reports it). Cheap when nothing was handed back.
pub(crate) fn write_handed_back(cache: &Cache) {
    // Bounded: each round writes what the cache handed back meanwhile.
    for _ in 0..64 {
        if !cache.has_handed_back() {
            return;
        }
        for (key, entry, _) in cache.take_handed_back() {
            let frame: Arc<dyn Any + Send + Sync> = entry.clone();
            if let Ok(frame) = frame.downcast::<Frame>() {
                write_back(&frame);
            }
            cache.evict_if_idle(key, entry);
        }
    }
}

/// Writes a frame out if it is dirty and not latched for writing.
fn write_back(frame: &Frame) {
    let Some(page) = frame.try_read() else {
        return;
    };
    if !page.dirty.load(Ordering::Acquire) {
        return;
    }
    match page.file.write_page(page.pgno, &page.image) {
        Ok(()) => {
            page.dirty.store(false, Ordering::Release);
            page.file
                .counters
                .evictions_dirty
                .fetch_add(1, Ordering::Relaxed);
        }
        Err(e) => page
            .file
            .fail(&format!("writing a B-tree page failed: {e}")),
    }
}

impl PageFile {
    /// Records why the table takes no more writes or checkpoints (the
    /// first reason is kept).
    pub(crate) fn fail(&self, reason: &str) {
        let mut failed = self.failed.lock();
        if failed.is_none() {
            *failed = Some(reason.to_string());
        }
    }

    pub(crate) fn image_len(&self) -> usize {
        self.page_size - format::DISK_HEADER
    }

    fn offset(&self, pgno: u64) -> u64 {
        pgno * self.page_size as u64
    }

    /// Frames `image` (compressing it if asked and worth it) and writes it
    /// at page `pgno`.
    pub(crate) fn write_page(&self, pgno: u64, image: &[u8]) -> Result<()> {
        let out = format::encode_page(pgno, image, self.compression, self.page_size);
        self.file.write_at(self.offset(pgno), &out)?;
        self.counters.written.fetch_add(1, Ordering::Relaxed);
        self.counters
            .bytes_written
            .fetch_add(out.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    /// Reads page `pgno`, checks its checksum and structure, and returns its image.
    pub(crate) fn read_page(&self, pgno: u64) -> Result<Vec<u8>> {
        let mut raw = vec![0u8; self.page_size];
        let n = self.file.read_at(self.offset(pgno), &mut raw)?;
        self.counters.from_storage.fetch_add(1, Ordering::Relaxed);
        let image = format::decode_page(pgno, raw.get(..n).unwrap_or(&[]), self.image_len())
            .map_err(|detail| self.corrupt(pgno, detail))?;
        page::check_structure(&image).map_err(|detail| self.corrupt(pgno, detail))?;
        Ok(image)
    }

    pub(crate) fn corrupt(&self, pgno: u64, detail: impl Into<String>) -> Error {
        Error::corruption(
            self.file.path(),
            self.offset(pgno),
            format!("page {pgno}: {}", detail.into()),
        )
    }
}

/// Writes `data` as a run of pages of `kind` starting at `first`, one
/// checksummed page per chunk, and empty pages of `kind` up to `pages` in
/// all. The run is read back whole (`read_run` checks every page's kind), and
/// a free map's run can be larger than its data needs: the run is sized
/// before it is allocated, and allocating it can take a whole free extent
/// off the list. Writing only the pages the data needs left the last page
/// of such a run with whatever the file held there, and the image failed
/// `verify` and could not be opened.
pub(super) fn write_run(
    file: &PageFile,
    first: u64,
    data: &[u8],
    kind: u8,
    pages: u64,
) -> Result<()> {
    let chunk = file.image_len() - page::HEADER;
    let pages = (data.len().div_ceil(chunk) as u64).max(pages).max(1) as usize;
    for i in 0..pages {
        let mut image = vec![0u8; file.image_len()];
        page::init(&mut image, kind, 0);
        let part = data
            .get(i * chunk..((i + 1) * chunk).min(data.len()))
            .unwrap_or(&[]);
        if let Some(dst) = image.get_mut(page::HEADER..page::HEADER + part.len()) {
            dst.copy_from_slice(part);
        }
        file.write_page(first + i as u64, &image)?;
    }
    Ok(())
}

/// Reads `len` bytes stored by `write_run`.
pub(crate) fn read_run(
    file: &PageFile,
    first: u64,
    pages: u32,
    len: u32,
    kind: u8,
) -> Result<Vec<u8>> {
    let chunk = file.image_len() - page::HEADER;
    if (pages as usize) < (len as usize).div_ceil(chunk).max(1) {
        return Err(file.corrupt(
            first,
            format!("{pages} overflow pages cannot hold {len} bytes"),
        ));
    }
    let mut out = Vec::with_capacity(len as usize);
    for i in 0..u64::from(pages) {
        let image = file.read_page(first + i)?;
        if page::kind(&image) != kind {
            return Err(file.corrupt(first + i, format!("expected a page of kind {kind}")));
        }
        let want = (len as usize - out.len()).min(chunk);
        out.extend_from_slice(image.get(page::HEADER..page::HEADER + want).unwrap_or(&[]));
    }
    Ok(out)
}

impl BtreeTable {
    fn charge(&self) -> u64 {
        self.file.page_size as u64 + FRAME_OVERHEAD
    }

    /// The frame of page `pgno`, from the cache or read from the file.
    /// Counts a page found in memory, for the table's figures and the
    /// thread's read counters.
    pub(super) fn count_cache_hit(&self, ctx: &mut ReadContext) {
        self.file.counters.from_cache.add(1);
        ctx.blocks_from_cache += 1;
    }

    pub(super) fn fetch(&self, pgno: u64, ctx: &mut ReadContext) -> Result<Arc<Frame>> {
        let key = (self.file.owner, pgno);
        let hit = |f: Arc<Frame>, ctx: &mut ReadContext| {
            self.count_cache_hit(ctx);
            f
        };
        if let Some(f) = self.cache.get::<Frame>(&key) {
            return Ok(hit(f, ctx));
        }
        // A read from the file must not put back an image older than one
        // the cache held meanwhile: while this read ran, a writer could
        // load the page, change it, and have it evicted (written), and the
        // image read here then replaced the newer one in the cache, losing
        // the change. So the load is registered, and the page tells the
        // cache it is busy (may not leave) while it is loading; looking
        // again after registering catches an eviction that came before it
        // (its write is then in the file).
        let _loading = Loading::start(&self.file, pgno);
        if let Some(f) = self.cache.get::<Frame>(&key) {
            return Ok(hit(f, ctx));
        }
        let image = self.file.read_page(pgno)?;
        if !matches!(page::kind(&image), page::KIND_LEAF | page::KIND_BRANCH) {
            return Err(self
                .file
                .corrupt(pgno, "a tree points at a page that is not a leaf or branch"));
        }
        ctx.blocks_from_storage += 1;
        ctx.bytes_read += self.file.page_size as u64;
        let frame = Arc::new(RwLock::new(PageBuf {
            file: Arc::clone(&self.file),
            pgno,
            dirty: AtomicBool::new(false),
            image,
        }));
        let frame = self.cache.insert_or_share(key, frame, self.charge(), false);
        // The insert may have made the cache hand dirty pages back: a read
        // that missed writes them, so that pages dirtied by earlier writes
        // do not hold the cache when no write comes (a read-only phase
        // after a load). No cache lock is held here; the latches this
        // reader holds are read latches, and `write_back` only tries its
        // frames' latches.
        write_handed_back(&self.cache);
        Ok(frame)
    }

    /// Caches a new page, dirty, replacing any stale frame of its number.
    pub(super) fn install_page(&self, pgno: u64, image: Vec<u8>) -> Arc<Frame> {
        let frame = Arc::new(RwLock::new(PageBuf {
            file: Arc::clone(&self.file),
            pgno,
            dirty: AtomicBool::new(true),
            image,
        }));
        self.cache
            .insert_or_share((self.file.owner, pgno), frame, self.charge(), true)
    }

    /// Drops the frame of page `pgno`, which was freed, from the cache. The
    /// frame is marked clean under its write latch: a write-back that took
    /// it from the cache's handed-back list writes it under its read latch,
    /// so it either wrote before the page was freed (and before its next
    /// use) or sees it clean and writes nothing.
    pub(super) fn uncache(&self, pgno: u64) {
        let Some(entry) = self.cache.remove(&(self.file.owner, pgno)) else {
            return;
        };
        let entry: Arc<dyn Any + Send + Sync> = entry;
        if let Ok(frame) = entry.downcast::<Frame>() {
            frame.write().dirty.store(false, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::btree::format::decode_page;
    use crate::btree::page::{init, insert, leaf_cell, Value, KIND_LEAF};
    use crate::mvcc::key::{internal_key, Kind};

    fn leaf(len: usize) -> Vec<u8> {
        let mut p = vec![0u8; len];
        init(&mut p, KIND_LEAF, 0);
        p
    }

    #[test]
    fn disk_framing_round_trips_and_detects_flips_and_misplacement() {
        for compression in [Compression::None, Compression::Lz4, Compression::Zstd] {
            let mut p = leaf(4096 - format::DISK_HEADER);
            let ik = internal_key(b"key", 9, Kind::Put);
            assert!(insert(&mut p, 0, &leaf_cell(&ik, Value::Inline(&[1; 500]))));
            let dir = tempfile::tempdir().expect("tempdir");
            let fs = crate::fs::OsFs::new();
            let file = crate::fs::Fs::open_paged(&fs, &dir.path().join("f"), true).expect("open");
            let pf = PageFile {
                file,
                page_size: 4096,
                compression,
                owner: 1,
                counters: PageCounters::default(),
                failed: Mutex::new(None),
                loading: Mutex::default(),
            };
            pf.write_page(3, &p).expect("write");
            assert_eq!(pf.read_page(3).expect("read"), p);
            let mut raw = vec![0u8; 4096];
            let n = pf.file.read_at(3 * 4096, &mut raw).expect("raw");
            raw.truncate(n);
            assert!(decode_page(4, &raw, p.len()).is_err(), "misplaced page");
            for at in [0usize, 5, 13, 40] {
                let mut bad = raw.clone();
                bad[at] ^= 0x10;
                assert!(decode_page(3, &bad, p.len()).is_err(), "flip at {at}");
            }
        }
    }
}
