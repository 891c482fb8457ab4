//! The page store under the B-tree: its file's pages on disk and in the
//! cache, the free space, and the pages each checkpoint's image holds. It
//! knows pages (numbers, framing, kinds, runs), never cells or keys: the
//! tree above asks it for pages (`fetch`, `latch_for_read`,
//! `alloc_page`, `install_page`) and hands them back (`forget_page`,
//! `Space::release`). redb's `page_store` under its `tree_store` is the
//! model.
//!
//! Rooms:
//! - `pages.rs`: `PageFile` (framed page I/O) and `Frame` (a page in the
//!   cache behind its latch), and the write-back of dirty pages the cache
//!   hands back;
//! - `frame_table.rs`: where each cached page's frame is, for readers;
//! - `space.rs`: allocation across checkpoint epochs and the free extents;
//! - `runs.rs`: runs of pages (overflow values, the free map);
//! - `image.rs`: the header slots, opening at the newest, a checkpoint's
//!   page writes, and cutting the file;
//! - `durable.rs`: the test builds' check that no write lands on the
//!   durable image.
//!
//! Thread-safety: `PageStore` is shared by the table's readers and its
//! writer. What changes allocation (`Space`) is the writer's, passed in by
//! it under the table's `tree` mutex; the rest is the file's and the
//! cache's, which guard their own state. Readers hold `descents` shared
//! for as long as they read pages they found through the tree.

mod durable;
pub(crate) mod frame_table;
pub(crate) mod image;
pub(crate) mod pages;
pub(crate) mod runs;
pub(crate) mod space;

use std::any::Any;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crossbeam_epoch::Guard;

pub(crate) use self::pages::write_handed_back;
pub(crate) use self::pages::{Frame, PageFile, ReadGuard, WriteGuard};
use self::pages::{Loading, FRAME_OVERHEAD};
pub(crate) use self::runs::{read_run, write_run};
use self::space::{add_extent, add_extents};
pub(crate) use self::space::{Held, PageSet, Space};
use super::format;
use crate::cache::Cache;
use crate::counter::StripedGate;
use crate::error::Result;
use crate::prefetch::prefetch_lines;
use crate::read_context::ReadContext;

/// Lines of a page image a reader prefetches as it finds the page: the
/// header and the first slots.
const PREFETCH_IMAGE_LINES: usize = format::SLOTS_PREFETCHED / 64;

/// A B-tree file's pages: the file, the database's cache they live in,
/// and what says when a freed page may be reused.
pub(crate) struct PageStore {
    pub file: Arc<PageFile>,
    pub cache: Arc<Cache>,
    /// Held shared by every descent for as long as it reads pages it found
    /// through the tree, and closed (`try_close`, never waited for) to
    /// reuse the pages of an older image (`reclaim`). Striped: every read
    /// passes it.
    pub descents: StripedGate,
    /// Whether the running checkpoint has dropped every limbo page's frame
    /// from the cache once (`drop_idle_frames`, without the gate): until
    /// then `reclaim` leaves limbo alone, so that it never drops a page
    /// that was reused since. Cleared by the freeze (under the writer's
    /// lock), set by the checkpoint without taking that lock, so that a
    /// checkpoint never waits for a long writer (`compact_all`'s packing)
    /// before it writes; checkpoints are one at a time.
    pub limbo_dropped: AtomicBool,
}

impl std::fmt::Debug for PageStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageStore")
            .field("file", &self.file)
            .finish()
    }
}

impl PageStore {
    pub(crate) fn new(file: Arc<PageFile>, cache: Arc<Cache>) -> PageStore {
        PageStore {
            file,
            cache,
            descents: StripedGate::default(),
            limbo_dropped: AtomicBool::new(false),
        }
    }

    #[inline]
    pub(crate) fn charge(&self) -> u64 {
        self.file.page_size as u64 + FRAME_OVERHEAD
    }

    /// The frame of page `pgno`, from the cache or read from the file.
    /// Counts a page found in memory, for the table's figures and the
    /// thread's read counters.
    #[inline]
    pub(crate) fn count_cache_hit(&self, ctx: &mut ReadContext) {
        self.file.counters.from_cache.add(1);
        ctx.blocks_from_cache += 1;
    }

    /// Page `pgno` read-latched for a reader pinned in `epoch`: found
    /// through the frame table (no cache lookup, no reference taken; true
    /// with it), or else fetched from the cache or the file (false). The
    /// frame stays alive while `epoch` is pinned, and it is the page's
    /// current frame for as long as it is latched: an evicted frame is
    /// marked gone under its write latch, and then looked up again.
    #[inline]
    pub(crate) fn latch_for_read<'g>(
        &'g self,
        pgno: u64,
        epoch: &'g Guard,
        ctx: &mut ReadContext,
    ) -> Result<(&'g Frame, ReadGuard<'g>, bool)> {
        if let Some((frame, page)) = self.latch_if_cached(pgno, epoch, ctx) {
            return Ok((frame, page, true));
        }
        let held = self.fetch(pgno, ctx)?;
        // SAFETY: the handle `held` keeps the frame alive, and it is dropped
        // only once the epoch ends (deferred below), which `'g` outlasts.
        let frame: &'g Frame = unsafe { &*Arc::as_ptr(&held) };
        epoch.defer(move || drop(held));
        Ok((frame, frame.read(), false))
    }

    /// `latch_for_read` of a page in the cache only: None if it is not
    /// there (or has just left), where `latch_for_read` would read it.
    #[inline]
    pub(crate) fn latch_if_cached<'g>(
        &'g self,
        pgno: u64,
        epoch: &'g Guard,
        ctx: &mut ReadContext,
    ) -> Option<(&'g Frame, ReadGuard<'g>)> {
        let frame = self.find_frame(pgno, epoch)?;
        let page = frame.read_if_current()?;
        ctx.blocks_from_cache += 1;
        Some((frame, page))
    }

    /// The frame the frame table publishes for `pgno`, unlatched: alive for
    /// as long as the caller stays pinned in `epoch`, its image right only
    /// once latched (or copied under its latch) and found not gone.
    #[inline]
    pub(crate) fn find_frame<'g>(&'g self, pgno: u64, epoch: &'g Guard) -> Option<&'g Frame> {
        let _ = epoch;
        let (found, image_at) = self.file.frames.get(pgno);
        if found.is_null() {
            return None;
        }
        // The frame's line and the image's first lines (the header and the
        // slots a search probes first) load together, rather than the image
        // only once the latch is taken.
        prefetch_lines(image_at, PREFETCH_IMAGE_LINES);
        // SAFETY: a frame in the table is alive (the cache holds it), and
        // once the cache lets it go it is dropped only after every thread
        // pinned before then has unpinned (`Frame::release`); this thread
        // has been pinned in `epoch` since before it loaded the pointer,
        // and `epoch` outlives the reference.
        Some(unsafe { &*found })
    }

    /// The frame of page `pgno` for the writer, which holds it across its
    /// entry: found through the frame table, with a handle taken and the
    /// frame then checked not gone under its latch (see `try_leave`), or
    /// else fetched through the cache.
    #[inline]
    pub(crate) fn fetch_for_write(&self, pgno: u64, ctx: &mut ReadContext) -> Result<Arc<Frame>> {
        {
            let _epoch = crossbeam_epoch::pin();
            let (found, image_at) = self.file.frames.get(pgno);
            if !found.is_null() {
                // The image's first lines load while the frame's does, as
                // in `find_frame`.
                prefetch_lines(image_at, PREFETCH_IMAGE_LINES);
                // SAFETY: as in `latch_for_read`: published, and this thread
                // is pinned.
                let frame = unsafe { &*found }.hold();
                if frame.read_if_current().is_some() {
                    self.count_cache_hit(ctx);
                    self.cache.count_hits(1);
                    return Ok(frame);
                }
            }
        }
        self.fetch(pgno, ctx)
    }

    pub(crate) fn fetch(&self, pgno: u64, ctx: &mut ReadContext) -> Result<Arc<Frame>> {
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
        if !matches!(
            format::kind(&image),
            format::KIND_LEAF | format::KIND_BRANCH
        ) {
            return Err(self
                .file
                .corrupt(pgno, "a tree points at a page that is not a leaf or branch"));
        }
        ctx.blocks_from_storage += 1;
        ctx.bytes_read += self.file.page_size as u64;
        let frame = Frame::new(Arc::clone(&self.file), pgno, false, image);
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

    /// Leaf `pgno` read through the file's memory map into `buf`, not
    /// cached, for a reader (a get, a cursor's load) that found no frame of
    /// it in the frame table and
    /// holds what keeps the tree's shape above it (its parent's read latch,
    /// or copies of the pages above it whose versions the caller checks
    /// after this returns). True if `buf` holds the page's current image,
    /// false if the caller reads it the usual way.
    ///
    /// Why the image read is current: no frame of the page is in the cache
    /// before the copy or after it, so every change made to the page was
    /// written to the file first (a frame leaves the cache only clean, and
    /// a freed page's frame only as the tree's shape above it changes,
    /// which the caller rules out); and no write of the page ran during
    /// the copy (`PageFile::read_mapped`). So the page was what was copied
    /// from the first look to the last, and `between` runs in that time.
    pub(crate) fn read_leaf_mapped(
        &self,
        pgno: u64,
        buf: &mut Vec<u8>,
        ctx: &mut ReadContext,
        between: impl FnOnce(),
    ) -> bool {
        let key = (self.file.owner, pgno);
        if !self.file.is_mapped() || self.may_be_cached(pgno) || self.cache.contains(&key) {
            return false;
        }
        if !self.file.read_mapped(pgno, buf, between) || self.cache.contains(&key) {
            return false;
        }
        ctx.blocks_from_storage += 1;
        ctx.bytes_read += self.file.page_size as u64;
        true
    }

    /// Caches a new page, dirty, replacing any stale frame of its number.
    /// If its page may not be written yet (`Space::held`), the
    /// writer's state keeps a handle to the frame, so that the cache
    /// neither hands it back to be written nor evicts it.
    pub(crate) fn install_page(&self, space: &mut Space, pgno: u64, image: Vec<u8>) -> Arc<Frame> {
        let frame = Frame::new(Arc::clone(&self.file), pgno, true, image);
        if let Some(slot) = space.held.get_mut(&pgno) {
            *slot = Some(Arc::clone(&frame));
        }
        self.cache
            .insert_or_share((self.file.owner, pgno), frame, self.charge(), true)
    }

    /// `uncache`, for a page no one can be putting in the cache meanwhile
    /// (no reader in flight, the caller the writer): the frame table, which
    /// agrees with the cache, says first whether there is a frame to drop,
    /// with a few loads instead of a shard's mutex and a map lookup.
    #[inline]
    pub(crate) fn uncache_if_cached(&self, pgno: u64) {
        if self.may_be_cached(pgno) {
            self.uncache(pgno);
        }
    }

    /// Whether page `pgno` may have a frame in the cache, as the frame
    /// table says (true past the table's reach, where a cached frame is not
    /// published: only the cache knows). Right at the moment of the call
    /// only: a reader may cache the page just after.
    #[inline]
    pub(crate) fn may_be_cached(&self, pgno: u64) -> bool {
        pgno >= frame_table::PAGES_MAX || !self.file.frames.get(pgno).0.is_null()
    }

    /// Drops the frame of page `pgno`, which was freed, from the cache. The
    /// frame is marked clean under its write latch: a write-back that took
    /// it from the cache's handed-back list writes it under its read latch,
    /// so it either wrote before the page was freed (and before its next
    /// use) or sees it clean and writes nothing.
    pub(crate) fn uncache(&self, pgno: u64) {
        let Some(entry) = self.cache.remove(&(self.file.owner, pgno)) else {
            return;
        };
        let entry: Arc<dyn Any + Send + Sync> = entry;
        if let Ok(frame) = entry.downcast::<Frame>() {
            frame.forget();
        }
    }

    /// Makes the pages older images used (`unreachable`) allocatable, if
    /// no descent is in flight. No descent begun from now on can reach
    /// them: the tree has not pointed at them since before the last
    /// checkpoint's freeze. One begun earlier can (latch coupling protects
    /// a descent from the writer's changes, not from a checkpoint freeing
    /// the pages of the tree it started in), and reusing a page under it
    /// made a get answer "absent" for a key that was there all along.
    /// So this does not wait: the pages stay aside until a call finds no
    /// descent in flight (each write and each checkpoint tries).
    ///
    /// The same moment makes the limbo pages (retired before the running
    /// checkpoint's freeze) unreachable by any descent: with the gate
    /// still closed, every one of them is made sure to be out of the cache,
    /// and they go to `early`, which new tree pages may take before that
    /// checkpoint is durable (`alloc_page`). Every one, with no reader in
    /// flight, before any is reused: a cursor resumes through a stale frame
    /// that is still cached and unchanged (`BtreeTable::again`, and
    /// `beside`, which reads a child of the parent it recorded, from the
    /// file if need be), and a stale page names pages retired both before
    /// and after it (a leaf copied after a checkpoint releases its pruned
    /// values' overflow runs first). Dropping limbo pages a few at a time,
    /// each reusable as it left the cache, let such a cursor read a
    /// reused page's new contents, or read a dropped page back into the
    /// cache through a stale parent not yet dropped (found in review).
    /// Once the whole batch is out of the cache with no reader in flight,
    /// no frame that names one of its pages is left to resume through.
    /// The checkpoint dropped the limbo pages' frames once already, without
    /// the gate (`limbo_dropped`; until it has, limbo waits), so this drops
    /// only the frames read back since, which the frame table finds with a
    /// few loads a page (no reader can put one back while the gate is
    /// closed): the gate is closed for 0.1-0.3 ms, where dropping every
    /// frame under it took 5-23 ms with every reader waiting (a 2M-key
    /// overwrite's checkpoints). Called with no latch held: dropping a
    /// frame takes its write latch, waiting for a reader that holds it.
    pub(crate) fn reclaim(&self, st: &mut Space) {
        let limbo_ready = !st.limbo.is_empty() && self.limbo_dropped.load(Ordering::Acquire);
        if st.unreachable.is_empty() && !limbo_ready {
            return;
        }
        let Some(quiet) = self.descents.try_close() else {
            return;
        };
        let unreachable = std::mem::take(&mut st.unreachable);
        let limbo = if limbo_ready {
            std::mem::take(&mut st.limbo)
        } else {
            Vec::new()
        };
        for &(f, n) in unreachable.iter().chain(&limbo) {
            for p in f..f + n {
                self.uncache_if_cached(p);
            }
        }
        // The free lists are the writer's own: readers need not wait for
        // them.
        drop(quiet);
        add_extents(&mut st.free, unreachable);
        add_extents(&mut st.early, limbo);
    }

    /// Drops from the cache the frames of the pages of `runs` that may
    /// leave now (clean, neither latched nor held: their version changes as
    /// they go, as an eviction's does; `Cache::drop_key_if_idle`), never
    /// waiting: a reader may hold one latched for as long as a read from
    /// the file takes, and a checkpoint that waited for it could wait on a
    /// reader that waits for the checkpoint. `reclaim` drops the rest, with
    /// no reader in flight. Called without the gate, by the checkpoint, for
    /// pages no new descent can reach. The frame table says first which
    /// pages have a frame at all (overflow runs and the old free map's
    /// never do): a page a reader caches meanwhile is left to `reclaim`.
    pub(crate) fn drop_idle_frames(&self, runs: &[(u64, u64)]) {
        for &(f, n) in runs {
            for p in f..f + n {
                if self.may_be_cached(p) {
                    self.cache.drop_key_if_idle(&(self.file.owner, p));
                }
            }
        }
    }

    /// A page for the tree (not an overflow run, which is written at
    /// once): the lowest of the free list's first page and, while the
    /// cache's pinned share has room (`Cache::try_pin`: a quarter of its
    /// budget, for every table), `early`'s; else the file's end. A page
    /// from `early` is still the durable image's: it is held (its frame,
    /// once installed, kept in the cache and not written: `install_page`)
    /// until the running checkpoint is durable. Without this the pages of
    /// the next epoch's copies, made while a checkpoint writes, came from
    /// the file's end: the file of a table overwritten at random was the
    /// high-water mark of about 2.4 images of its tree.
    pub(crate) fn alloc_page(&self, st: &mut Space) -> u64 {
        let early = st.early.first_key_value().map(|(&f, &n)| (f, n));
        let free = st.free.keys().next().copied();
        match early {
            Some((f, n))
                if free.is_none_or(|free| f < free) && self.cache.try_pin(self.charge()) =>
            {
                st.early.remove(&f);
                if n > 1 {
                    st.early.insert(f + 1, n - 1);
                }
                st.fresh.insert(f);
                st.held.insert(f, None);
                f
            }
            _ => st.alloc(1),
        }
    }

    /// Once the running checkpoint is durable: the pages it freed are free
    /// (at once if `reclaim` has dropped them from the cache, into
    /// `early`; else once it has), and the pages taken from them may be
    /// written. The caller holds the checkpoint lock, so no freeze comes
    /// before this, and the writer's lock: it drops what this returns
    /// (the handles to the pages taken early) once it has let that lock
    /// go, and the cache may write and evict those frames from then on.
    #[must_use = "the handles are dropped after the writer's lock"]
    pub(crate) fn after_durable(&self, st: &mut Space) -> Held {
        let limbo = std::mem::take(&mut st.limbo);
        st.unreachable.extend(limbo);
        for (f, n) in std::mem::take(&mut st.early) {
            add_extent(&mut st.free, f, n);
        }
        let held = std::mem::take(&mut st.held);
        self.cache.unpin(held.len() as u64 * self.charge());
        self.reclaim(st);
        held
    }

    /// Gives back the cache's pinned share that a page taken from `early`
    /// holds, when it is freed again before its checkpoint is durable.
    fn unpin_if_held(&self, st: &Space, pgno: u64) {
        if st.held.contains_key(&pgno) {
            self.cache.unpin(self.charge());
        }
    }

    /// Frees a page the tree no longer uses. Its cached frame is dropped
    /// only if it was allocated since the freeze: a page of the frozen image
    /// may be dirty and not yet written by the running checkpoint, which
    /// finds it in the cache (it leaves the cache once the checkpoint is
    /// durable and the page is reused).
    pub(crate) fn forget_page(&self, st: &mut Space, pgno: u64) {
        self.unpin_if_held(st, pgno);
        if st.fresh.contains(&pgno) {
            self.uncache(pgno);
        }
        st.release(pgno, 1);
    }
}
