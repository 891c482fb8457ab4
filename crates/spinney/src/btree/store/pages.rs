//! A B-tree file's pages: on disk (`PageFile`: framed pages at
//! `pgno * page_size`) and in memory (`Frame`: a page's image behind its
//! latch, held by the database's one cache).
//!
//! `PageFile` reads and writes framed pages (`format::encode_page`,
//! `format::decode_page`), each image checked as it is read by the rule
//! the pages above the store give it (`PageCheck`: the tree's
//! `page::check_structure`). A page in memory is a `PageBuf` behind its
//! latch, in a `Frame`; `PageStore::fetch` finds a page there or reads it
//! in, and `install_page` caches a new one. Readers find cached frames
//! through the file's frame table instead (`frame_table.rs`,
//! `PageStore::latch_for_read`), without a cache lookup.
//!
//! Dirty pages belong to the store, not the cache: a frame tells the cache
//! it may not leave while dirty (`impl Entry for Frame`), so the cache hands
//! cold dirty frames back instead of writing them, and the store writes
//! them (`write_handed_back`: the B-tree writer after each applied entry,
//! each checkpoint, and a read that missed the cache) with no cache lock
//! held, then lets them go.
//!
//! Invariants: a page read from the file never replaces a newer image the
//! cache held meanwhile (`Loading`); a dirty frame is written to its own
//! place before it leaves the cache, and that place is fresh or frozen,
//! never part of the durable image; a frame whose page was freed is marked
//! clean under its write latch (`PageStore::uncache`), so a write-back
//! already holding it never writes it over the page's next use.
//!
//! Thread-safety: `PageFile` is shared by every reader and the writer (its
//! file handle takes positioned reads and writes; `failed` and `loading`
//! are behind their own mutexes; the frame table is lock-free). A frame's
//! latch guards its image; a page is written under its read latch; a frame
//! is evicted under its write latch.

use std::any::Any;
use std::collections::HashMap;
use std::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::durable::DurableGuard;
use super::frame_table::FrameTable;
use crate::btree::format;
use crate::cache::{Cache, Entry, State};
use crate::counter::Striped;
use crate::error::{Error, Result};
use crate::fs::{PageMap, PagedFile};
use crate::options::Compression;

/// A page's read latch.
pub(crate) type ReadGuard<'a> = RwLockReadGuard<'a, PageBuf>;
/// A page's write latch.
pub(crate) type WriteGuard<'a> = RwLockWriteGuard<'a, PageBuf>;

/// Where every frame's `version` comes from: each value is handed out
/// once, so that a frame and a version name one state of one page even
/// after the frame's memory is reused.
static VERSIONS: AtomicU64 = AtomicU64::new(1);

fn next_version() -> u64 {
    VERSIONS.fetch_add(1, Ordering::Relaxed)
}

/// Bytes a page is charged in the cache beyond its size (frame, map entry).
pub(crate) const FRAME_OVERHEAD: u64 = 96;

/// What a B-tree file's pages count, for stats. Relaxed atomics.
#[derive(Debug, Default)]
pub(crate) struct PageCounters {
    /// Counted at every level of every descent: striped.
    pub from_cache: Striped,
    pub from_storage: AtomicU64,
    /// Of `from_storage`, leaves read through the map (`read_mapped`).
    pub from_map: AtomicU64,
    pub written: AtomicU64,
    pub bytes_written: AtomicU64,
    pub evictions_clean: AtomicU64,
    pub evictions_dirty: AtomicU64,
}

/// How the pages above the store check an image read from the file (a
/// known kind, and its cells in place): the reason it is malformed, if it
/// is. The store knows pages' framing and kinds, not their cells.
pub(crate) type PageCheck = fn(&[u8]) -> std::result::Result<(), String>;

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
    /// Where each cached page's frame is, for readers (`frame_table.rs`).
    pub frames: FrameTable<Frame>,
    /// The database was opened read-only: no page is written. Pages the
    /// log's replay changed stay in the cache, dirty, until it closes.
    pub read_only: bool,
    /// The pages no write may touch, checked in test builds.
    pub durable: DurableGuard,
    /// Checks each image read (`PageCheck`).
    check: PageCheck,
    /// The file's pages read through a memory map (`Options::mmap_reads`):
    /// a get or a cursor reads a leaf that is not cached from it without
    /// caching it (`read_mapped`).
    map: Option<PageMap>,
    /// How many times each page was written, striped by page number (a
    /// write counts one as it starts, one as it ends): a read through the
    /// map that saw the same even count before and after its copy raced
    /// no write of its page. Empty without a map.
    writes: Box<[AtomicU32]>,
    /// Pages read through the map whose structure was checked, each as
    /// `checked_tag` of its number and its stripe's write count then,
    /// hashed by page number (a page that takes another's place is checked
    /// again).
    checked: Box<[AtomicU64]>,
}

/// What `PageFile::checked` holds for page `pgno` checked at write count
/// `count`: the number in the high 40 bits, the count's low 24 in the rest
/// (a count that came round to the same 24 bits names an image this
/// process wrote, whose checksum the read checked).
fn checked_tag(pgno: u64, count: u32) -> u64 {
    (pgno << 24) | u64::from(count & 0x00ff_ffff) | (1 << 63)
}

/// The slots of `PageFile::checked`.
const CHECKED_SLOTS: usize = 1 << 16;

/// The stripes of `PageFile::writes`: a read races a write of another page
/// of its stripe only as often as it would race one of its own page.
const WRITE_STRIPES: usize = 4096;

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

/// A page's contents in memory, behind its frame's latch.
#[derive(Debug)]
pub(crate) struct PageBuf {
    /// Changed since it was last written.
    pub dirty: AtomicBool,
    pub image: Vec<u8>,
}

/// A cached page: its place, and its buffer behind its latch (a
/// reader-writer lock).
#[derive(Debug)]
pub(crate) struct Frame {
    pub file: Arc<PageFile>,
    pub pgno: u64,
    /// Taken out of the cache: a reader that found the frame through the
    /// frame table and latched it looks again. Set under the write latch
    /// when the frame is evicted (`try_leave`) or its page freed
    /// (`uncache`), so a reader holding the read latch either sees it set
    /// or keeps the frame from leaving.
    gone: AtomicBool,
    /// Read through the frame table since the clock hand last passed (the
    /// second chance a cache hit gives).
    touched: AtomicBool,
    /// Where the image's bytes are (they never move: an image is changed in
    /// place, never replaced), published beside the frame in the frame
    /// table for readers to prefetch.
    image_at: usize,
    /// Taken anew whenever the image may change or the frame leaves: as
    /// the write latch is taken (`write`, `try_leave`). A reader that
    /// copied the image under the read latch with the version of that
    /// moment knows its copy is the page as it is while the version stays
    /// (`read.rs`, the top of the tree).
    version: AtomicU64,
    /// Held while the image is written out (`write_out`).
    writing: Mutex<()>,
    latch: RwLock<PageBuf>,
}

impl Frame {
    /// A frame, in an `Arc`: every frame lives in one (`hold` relies on it).
    pub(crate) fn new(file: Arc<PageFile>, pgno: u64, dirty: bool, image: Vec<u8>) -> Arc<Frame> {
        Arc::new(Frame {
            file,
            pgno,
            gone: AtomicBool::new(false),
            touched: AtomicBool::new(false),
            image_at: image.as_ptr() as usize,
            version: AtomicU64::new(next_version()),
            writing: Mutex::new(()),
            latch: RwLock::new(PageBuf {
                dirty: AtomicBool::new(dirty),
                image,
            }),
        })
    }

    /// The read latch.
    #[inline]
    pub(crate) fn read(&self) -> ReadGuard<'_> {
        self.latch.read()
    }

    /// The write latch. The version changes as it is taken, before any
    /// change to the image.
    #[inline]
    pub(crate) fn write(&self) -> WriteGuard<'_> {
        let page = self.latch.write();
        self.version.store(next_version(), Ordering::Release);
        page
    }

    /// The frame's version (see `version`).
    #[inline]
    pub(crate) fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    fn try_read(&self) -> Option<ReadGuard<'_>> {
        self.latch.try_read()
    }

    /// Writes the image `page` (this frame's, read-latched by the caller)
    /// to the file if it is dirty, and marks it clean; true if it wrote.
    /// The write-back of handed-back pages and a checkpoint both write
    /// frames, each under the read latch. Both could find a frame dirty
    /// and write it, and the second write land after the checkpoint's
    /// sync: an unsynced write over a page of the image just made durable
    /// (the same bytes, but a write a crash may tear or garble: a crash
    /// test read such a page back as garbage). Under `writing` the second
    /// finds the page clean, and the first has written it by then, before
    /// the checkpoint goes on to its sync.
    pub(crate) fn write_out(&self, page: &PageBuf) -> Result<bool> {
        let _writing = self.writing.lock();
        if !page.dirty.load(Ordering::Acquire) {
            return Ok(false);
        }
        self.file.write_page(self.pgno, &page.image)?;
        page.dirty.store(false, Ordering::Release);
        Ok(true)
    }

    /// A counted handle to a frame found without one (through the frame
    /// table, alive while the finder is pinned).
    #[inline]
    pub(super) fn hold(&self) -> Arc<Frame> {
        let at: *const Frame = self;
        // SAFETY: every frame is made in an `Arc` (`Frame::new` returns
        // one), so `at` points at the value of a live `Arc<Frame>`
        // allocation (the caller holds `&self`); adding a strong count and
        // making an `Arc` of the pointer is what `Arc::clone` does.
        unsafe {
            Arc::increment_strong_count(at);
            Arc::from_raw(at)
        }
    }

    /// The read latch of a frame found through the frame table, if it is
    /// still its page's frame: None if it has left the cache since (the
    /// reader looks again). Marks it touched, for the clock.
    #[inline]
    pub(crate) fn read_if_current(&self) -> Option<ReadGuard<'_>> {
        let page = self.latch.read();
        if self.gone.load(Ordering::Acquire) {
            return None;
        }
        // Written only when not set already, so that readers on other
        // cores do not keep pulling the frame's line from each other.
        if !self.touched.load(Ordering::Relaxed) {
            self.touched.store(true, Ordering::Relaxed);
        }
        Some(page)
    }
}

impl Frame {
    /// Marks the frame of a page that was freed clean and gone, under its
    /// write latch: a write-back that took it from the cache's handed-back
    /// list writes it under its read latch, so it either wrote before the
    /// page was freed (and before its next use) or sees it clean and
    /// writes nothing; a reader that latches it later looks again.
    pub(super) fn forget(&self) {
        let page = self.write();
        page.dirty.store(false, Ordering::Release);
        self.gone.store(true, Ordering::Release);
    }
}

/// What the cache asks a page when its clock hand reaches it: busy while
/// anyone besides the cache holds it, while it is latched for writing, or
/// while a read of it from the file is in flight (see `Loading`); dirty
/// while it holds changes not yet written (the store writes it: see
/// `write_handed_back`), unless its table has failed (busy then: it stays
/// until reopen); else clean. Never blocks: the cache asks under a
/// shard's mutex. (A page that may not be written yet, reused before the
/// checkpoint that frees it is durable, is busy by the first rule: the
/// writer's free space holds a handle to it, `Space::held`.)
impl Entry for Frame {
    fn state(&self, shared: bool) -> State {
        if shared {
            return State::Busy;
        }
        let Some(page) = self.try_read() else {
            return State::Busy;
        };
        // Being read from the file by another thread (see `Loading`).
        if self.file.loading.lock().contains_key(&self.pgno) {
            return State::Busy;
        }
        if page.dirty.load(Ordering::Acquire) {
            // A read-only open never writes a page: what the log's replay
            // changed stays until the database is dropped.
            if self.file.read_only {
                return State::Kept;
            }
            // A table whose page write failed takes no more writes until
            // reopened: its pages are not handed back to fail again.
            if self.file.failed.lock().is_some() {
                return State::Busy;
            }
            State::Dirty
        } else {
            State::Clean
        }
    }

    fn evicted(&self) {
        self.file
            .counters
            .evictions_clean
            .fetch_add(1, Ordering::Relaxed);
    }

    fn cached(&self) {
        self.file.frames.publish(self.pgno, self, self.image_at);
    }

    /// Evicted only under the write latch (tried, never waited for): no
    /// reader holds the frame latched then, and every later one sees it
    /// gone. Not while anyone besides the cache holds a handle, counted
    /// under the latch: the writer takes a handle to a frame it found
    /// through the frame table and then checks, under the latch, that it
    /// is not gone (`fetch_for_write`), so either it sees the frame gone or
    /// this sees its handle.
    fn try_leave(&self, holders: &dyn Fn() -> usize) -> bool {
        let Some(page) = self.latch.try_write() else {
            return false;
        };
        if page.dirty.load(Ordering::Acquire) || holders() > 1 {
            return false;
        }
        self.gone.store(true, Ordering::Release);
        self.version.store(next_version(), Ordering::Release);
        true
    }

    /// Unpublished from the frame table, and dropped only once every
    /// reader that may have found it there has left its epoch.
    fn release(self: Arc<Self>) {
        self.file.frames.unpublish(self.pgno, Arc::as_ptr(&self));
        crossbeam_epoch::pin().defer(move || drop(self));
    }

    fn take_touched(&self) -> bool {
        self.touched.load(Ordering::Relaxed) && self.touched.swap(false, Ordering::Relaxed)
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
    if frame.file.read_only {
        return;
    }
    match frame.write_out(&page) {
        Ok(false) => {}
        Ok(true) => {
            frame
                .file
                .counters
                .evictions_dirty
                .fetch_add(1, Ordering::Relaxed);
        }
        Err(e) => frame
            .file
            .fail(&format!("writing a B-tree page failed: {e}")),
    }
}

impl PageFile {
    /// The pages of `file`, of `page_size` bytes, written with
    /// `compression`, cached as owner `owner`, each checked by `check` as
    /// it is read.
    pub(crate) fn new(
        file: Arc<dyn PagedFile>,
        page_size: usize,
        compression: Compression,
        owner: u64,
        read_only: bool,
        check: PageCheck,
    ) -> PageFile {
        PageFile {
            file,
            page_size,
            compression,
            owner,
            counters: PageCounters::default(),
            failed: Mutex::new(None),
            loading: Mutex::default(),
            frames: FrameTable::default(),
            read_only,
            durable: DurableGuard::default(),
            check,
            map: None,
            writes: Box::default(),
            checked: Box::default(),
        }
    }

    /// This file read through `map` from now on, where `read_mapped` can.
    pub(crate) fn with_map(mut self, map: Option<PageMap>) -> PageFile {
        if map.is_some() {
            self.writes = (0..WRITE_STRIPES).map(|_| AtomicU32::new(0)).collect();
            self.checked = (0..CHECKED_SLOTS).map(|_| AtomicU64::new(0)).collect();
        }
        self.map = map;
        self
    }

    /// Whether the file is read through a memory map.
    pub(crate) fn is_mapped(&self) -> bool {
        self.map.is_some()
    }

    fn write_count(&self, pgno: u64) -> &AtomicU32 {
        let stripes = self.writes.len() as u64;
        // In bounds: the remainder of a division by the slice's length.
        #[expect(clippy::indexing_slicing, reason = "a remainder of the length")]
        &self.writes[(pgno % stripes) as usize]
    }

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

    pub(crate) fn offset(&self, pgno: u64) -> u64 {
        pgno * self.page_size as u64
    }

    /// Frames `image` (compressing it if asked and worth it) and writes it
    /// at page `pgno`. Refused when the database was opened read-only (the
    /// log's replay would write a value's overflow pages).
    pub(crate) fn write_page(&self, pgno: u64, image: &[u8]) -> Result<()> {
        if self.read_only {
            return Err(Error::Unsupported(format!(
                "{}: the database was opened read-only, and replaying its log would write \
                 B-tree page {pgno} (a value too large for a leaf); open it for writing once",
                self.file.path().display()
            )));
        }
        let out = format::encode_page(pgno, image, self.compression, self.page_size);
        // Counted for readers of the map (`read_mapped`): one as the write
        // starts, one as it ends.
        let count = self.map.as_ref().map(|_| self.write_count(pgno));
        if let Some(count) = count {
            count.fetch_add(1, Ordering::AcqRel);
            fence(Ordering::Release);
        }
        let written = self.file.write_at(self.offset(pgno), &out);
        if let Some(count) = count {
            count.fetch_add(1, Ordering::Release);
        }
        written?;
        if let Some(map) = &self.map {
            map.grew_to(self.offset(pgno) + out.len() as u64);
        }
        self.durable.check(self.file.path(), pgno);
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
        raw.truncate(n);
        self.counters.from_storage.fetch_add(1, Ordering::Relaxed);
        let image = format::decode_page(pgno, raw, self.image_len())
            .map_err(|detail| self.corrupt(pgno, detail))?;
        (self.check)(&image).map_err(|detail| self.corrupt(pgno, detail))?;
        Ok(image)
    }

    /// Page `pgno` read through the memory map into `buf` (its image, as
    /// `read_page` returns it) for a reader that found it in no frame
    /// (`PageStore::read_leaf_mapped` says why that is its current
    /// content), if the map reaches it, it is stored uncompressed, no write
    /// of it raced the read (`writes`), and it checks: its checksum (read
    /// in the map, before the one copy of its image), its structure, and a
    /// leaf's kind. False otherwise, and the caller reads the page the
    /// usual way (which reports a damaged page as `Corruption`). `between`
    /// runs after the copy and before the check that no write raced it:
    /// what it reads, it reads while the page was as copied.
    ///
    /// The structure is checked once per image written (`checked`): the
    /// checksum, checked on every read, says the bytes are those written,
    /// and the structure of those was checked on a read before.
    pub(crate) fn read_mapped(&self, pgno: u64, buf: &mut Vec<u8>, between: impl FnOnce()) -> bool {
        let Some(map) = &self.map else {
            return false;
        };
        let count = self.write_count(pgno);
        let before = count.load(Ordering::Acquire);
        if before % 2 == 1 {
            return false;
        }
        let Some(raw) = map.bytes(self.offset(pgno), self.page_size) else {
            return false;
        };
        crate::prefetch::prefetch_all(raw);
        let Some(image) = format::raw_image(pgno, raw, self.image_len()) else {
            return false;
        };
        buf.clear();
        buf.extend_from_slice(image);
        // The reads of the map are ordered before the second look at the
        // count.
        fence(Ordering::Acquire);
        between();
        if count.load(Ordering::Acquire) != before || format::kind(buf) != format::KIND_LEAF {
            return false;
        }
        let tag = checked_tag(pgno, before);
        let checked = self.checked_slot(pgno);
        if checked.load(Ordering::Relaxed) != tag {
            if (self.check)(buf).is_err() {
                return false;
            }
            checked.store(tag, Ordering::Relaxed);
        }
        self.counters.from_storage.fetch_add(1, Ordering::Relaxed);
        self.counters.from_map.fetch_add(1, Ordering::Relaxed);
        true
    }

    fn checked_slot(&self, pgno: u64) -> &AtomicU64 {
        let slots = self.checked.len() as u64;
        // In bounds: the remainder of a division by the slice's length.
        #[expect(clippy::indexing_slicing, reason = "a remainder of the length")]
        &self.checked[(pgno % slots) as usize]
    }

    /// Cuts the file to `len` bytes, first telling its map (if any) to read
    /// no byte past it.
    pub(crate) fn cut(&self, len: u64) -> Result<()> {
        if let Some(map) = &self.map {
            map.cut_to(len);
        }
        self.file.set_len(len)
    }

    pub(crate) fn corrupt(&self, pgno: u64, detail: impl Into<String>) -> Error {
        Error::corruption(
            self.file.path(),
            self.offset(pgno),
            format!("page {pgno}: {}", detail.into()),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::btree::format::decode_page;
    use crate::btree::page::{init, insert, leaf_cell, Value, KIND_LEAF};
    use crate::cache::Cache;
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
            let pf = unshared_page_file(dir.path(), compression);
            pf.write_page(3, &p).expect("write");
            assert_eq!(pf.read_page(3).expect("read"), p);
            let mut raw = vec![0u8; 4096];
            let n = pf.file.read_at(3 * 4096, &mut raw).expect("raw");
            raw.truncate(n);
            assert!(
                decode_page(4, raw.clone(), p.len()).is_err(),
                "misplaced page"
            );
            for at in [0usize, 5, 13, 40] {
                let mut bad = raw.clone();
                bad[at] ^= 0x10;
                assert!(decode_page(3, bad, p.len()).is_err(), "flip at {at}");
            }
        }
    }

    /// A file `f` in `dir` of 4 KiB pages written with `compression`.
    fn unshared_page_file(dir: &std::path::Path, compression: Compression) -> PageFile {
        let fs = crate::fs::OsFs::new();
        let file = crate::fs::Fs::open_paged(&fs, &dir.join("f"), true).expect("open");
        PageFile::new(
            file,
            4096,
            compression,
            1,
            false,
            crate::btree::page::check_structure,
        )
    }

    fn page_file(dir: &std::path::Path) -> Arc<PageFile> {
        Arc::new(unshared_page_file(dir, Compression::None))
    }

    #[test]
    fn a_read_through_the_map_that_a_write_of_its_page_overtook_is_not_kept() {
        // Goal: `read_mapped` keeps no image that a write of the same page
        // raced (the page's write count, looked at before the copy and
        // again after it), so a reader never takes a half-written or
        // superseded leaf for the current one. Method: the write runs in
        // `between`, after the copy of the old image and before the second
        // look; the copy then holds the old image, and keeping it would be
        // a stale read. The reads before and after, which no write races,
        // must go through the map and see each image.
        let dir = tempfile::tempdir().expect("tempdir");
        let pf = unshared_page_file(dir.path(), Compression::None);
        let leaf_of = |value: u8| {
            let mut p = leaf(pf.image_len());
            let ik = internal_key(b"key", 9, Kind::Put);
            assert!(insert(
                &mut p,
                0,
                &leaf_cell(&ik, Value::Inline(&[value; 100]))
            ));
            p
        };
        let (old, new) = (leaf_of(1), leaf_of(2));
        pf.write_page(2, &old).expect("write");
        let map = pf.file.map_for_reads();
        let pf = pf.with_map(map);
        assert!(pf.is_mapped(), "the OS's file is mapped");
        let mut buf = Vec::new();
        assert!(pf.read_mapped(2, &mut buf, || {}), "an untouched page");
        assert_eq!(buf, old);
        let raced = pf.read_mapped(2, &mut buf, || pf.write_page(2, &new).expect("write"));
        assert!(!raced, "a copy a write overtook was kept");
        assert!(pf.read_mapped(2, &mut buf, || {}), "the page once written");
        assert_eq!(buf, new);
    }

    #[test]
    fn a_dirty_frame_is_written_once_however_many_threads_write_it_out() {
        // Goal: the write-back and a checkpoint may both try to write a
        // dirty frame (each under the read latch); the page is written
        // once, by the first, and the others find it clean. A second write
        // could land after the checkpoint's sync, over the image just made
        // durable (see `Frame::write_out`). Method: four threads released
        // together write one dirty frame out, a hundred times over; the
        // file's count of page writes says how many wrote.
        let dir = tempfile::tempdir().expect("tempdir");
        let file = page_file(dir.path());
        for round in 0..100u64 {
            let frame = Frame::new(Arc::clone(&file), 2, true, leaf(file.image_len()));
            let before = file.counters.written.load(Ordering::Relaxed);
            let start = std::sync::Barrier::new(4);
            let wrote: Vec<bool> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..4)
                    .map(|_| {
                        s.spawn(|| {
                            let page = frame.read();
                            start.wait();
                            frame.write_out(&page).expect("write")
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().expect("join"))
                    .collect()
            });
            let writes = file.counters.written.load(Ordering::Relaxed) - before;
            assert_eq!(
                writes, 1,
                "round {round}: {writes} writes of one dirty page"
            );
            assert_eq!(wrote.iter().filter(|&&w| w).count(), 1, "round {round}");
            assert!(!frame.read().dirty.load(Ordering::Acquire));
        }
    }

    #[test]
    fn a_frame_found_without_a_reference_leaves_only_unlatched_and_stays_readable() {
        // Goal: the protocol readers rely on when they find a frame through
        // the frame table and hold no reference to it. While a reader holds
        // its read latch the cache cannot evict it; once evicted it is
        // unpublished and marked gone, so a reader that latches it then is
        // told to look again; and its memory stays valid for a reader
        // pinned before the eviction; and a handle taken to it without the
        // cache (the writer's `fetch_for_write`) keeps it too. Method: a
        // cache that holds one page; inserting another must evict the first.
        let dir = tempfile::tempdir().expect("tempdir");
        let file = page_file(dir.path());
        let charge = 4096 + FRAME_OVERHEAD;
        let cache = Cache::new(charge);
        let frame = |pgno: u64| {
            Frame::new(
                Arc::clone(&file),
                pgno,
                false,
                vec![pgno as u8; file.image_len()],
            )
        };
        cache.insert_or_share((1, 1), frame(1), charge, false);
        let epoch = crossbeam_epoch::pin();
        let (found, image_at) = file.frames.get(1);
        assert!(!found.is_null());
        // SAFETY: published and pinned (the reader's side of the protocol).
        let found = unsafe { &*found };
        assert_eq!(image_at, found.read().image.as_ptr() as usize);

        let latched = found.read_if_current().expect("current");
        cache.insert_or_share((1, 2), frame(2), charge, false);
        assert!(
            !file.frames.get(1).0.is_null(),
            "a latched frame was evicted"
        );
        drop(latched);
        let held = found.hold();
        cache.insert_or_share((1, 4), frame(4), charge, false);
        assert!(!file.frames.get(1).0.is_null(), "a held frame was evicted");
        drop(held);

        cache.insert_or_share((1, 3), frame(3), charge, false);
        assert!(file.frames.get(1).0.is_null(), "an idle frame stayed");
        assert!(
            found.read_if_current().is_none(),
            "an evicted frame read as current"
        );
        // Still the page it was, while this thread stays pinned.
        assert!(found.read().image.iter().all(|&b| b == 1));
        drop(epoch);
    }
}
