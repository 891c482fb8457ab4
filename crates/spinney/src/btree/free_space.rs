//! Free space of a B-tree file: the writer's allocation of pages across
//! checkpoint epochs, the free extents in memory, and when freed pages may
//! be reused.
//!
//! Invariants: a page is in exactly one of: the tree (or an overflow run
//! or the free map run), `free` (allocatable now), `retired` (replaced
//! since the last freeze), `limbo` (retired before it, waiting for its
//! checkpoint to be durable), `early` (limbo pages out of the cache that
//! no descent can reach any more, allocatable for tree pages that stay in
//! the cache until that checkpoint is durable), or `unreachable` (free in
//! the durable image, waiting until no descent begun before can read it).
//! Only pages allocated since the last freeze (`fresh`) are written over,
//! and of those, the ones taken from `early` (`held`) only once the
//! checkpoint that freed them is durable. Extents in `free` and `early`
//! are coalesced.
//!
//! Thread-safety: `TreeState` is the writer's state, behind the table's
//! `tree` mutex (see `write.rs`); only the writer touches it.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::page::Value;
use super::pager::{Frame, PageBuf};
use super::BtreeTable;

/// A set of page numbers, hashed with foldhash rather than the std's
/// SipHash: the numbers are the engine's own, and the writer asks `fresh`
/// at every level of every write (SipHash was 3.6% of a B-tree
/// overwrite's instructions).
pub(super) type PageSet = HashSet<u64, foldhash::fast::FixedState>;

/// What only the writer touches: page allocation across checkpoint epochs.
#[derive(Debug, Default)]
pub(crate) struct TreeState {
    /// Pages in the file (the next page to extend it with).
    pub(super) page_count: u64,
    /// Free extents (first page -> pages), allocatable now.
    pub(super) free: BTreeMap<u64, u64>,
    /// Pages allocated since the last freeze: changed in place.
    pub(super) fresh: PageSet,
    /// Pages of the last frozen image replaced since the freeze: free in
    /// the next image, allocatable once it is durable.
    pub(super) retired: Vec<(u64, u64)>,
    /// Pages retired before the last freeze, waiting for that checkpoint to
    /// be durable.
    pub(super) limbo: Vec<(u64, u64)>,
    /// Limbo pages out of the cache (every one, checked at a moment no
    /// descent was in flight: `reclaim`): new tree pages may take them
    /// before the running checkpoint is durable, held in the cache
    /// meanwhile (`BtreeTable::alloc_page`).
    pub(super) early: BTreeMap<u64, u64>,
    /// Pages taken from `early` since, each with a handle to its frame once
    /// installed: the durable image still uses them, and the cache neither
    /// writes nor evicts a frame someone else holds a handle to
    /// (`Frame::state`), until the running checkpoint is durable and the
    /// handles are dropped.
    pub(super) held: HashMap<u64, Option<Arc<Frame>>, foldhash::fast::FixedState>,
    /// Pages free in the durable image that a descent begun before they
    /// were freed may still be reading (see `reclaim`).
    pub(super) unreachable: Vec<(u64, u64)>,
    /// The free map run of the last image.
    pub(super) free_map: (u64, u64),
    /// Leaves split by the commit group being applied while they held
    /// versions that its publication makes invisible (see `tidy`), and a
    /// key in each.
    pub(super) untidy: PageSet,
    pub(super) untidy_keys: Vec<Vec<u8>>,
    /// Set while a range delete is applied: each leaf a delete goes into
    /// is marked untidy too, so that once the group is published `tidy`
    /// prunes the deleted keys away and packs the leaves.
    pub(super) deleting_range: bool,
    /// A range delete marked leaves since the last `tidy`: that `tidy`
    /// packs every run, however little pruning drops (`UNTIDY_SHARE` is
    /// for splits), so that seeks do not step over the deleted keys.
    pub(super) range_deleted: bool,
    /// A buffer the writer rebuilds pages from (`reshape`), kept between
    /// uses.
    pub(super) scratch: Vec<u8>,
}

impl TreeState {
    pub(super) fn alloc(&mut self, pages: u64) -> u64 {
        let found = self
            .free
            .iter()
            .find(|(_, &len)| len >= pages)
            .map(|(&s, &l)| (s, l));
        let first = match found {
            Some((start, len)) => {
                self.free.remove(&start);
                if len > pages {
                    self.free.insert(start + pages, len - pages);
                }
                start
            }
            None => {
                let start = self.page_count;
                self.page_count += pages;
                start
            }
        };
        self.fresh.extend(first..first + pages);
        first
    }

    /// Takes the free extent that ends the file, if there is one, out of
    /// the free space: the file can be cut to its first page. Returns it.
    pub(super) fn trim_tail(&mut self) -> Option<(u64, u64)> {
        let (&first, &pages) = self.free.iter().next_back()?;
        if first + pages != self.page_count {
            return None;
        }
        self.free.remove(&first);
        self.page_count = first;
        Some((first, pages))
    }

    /// Puts back what `trim_tail` took (the file could not be cut).
    pub(super) fn untrim(&mut self, (first, pages): (u64, u64)) {
        add_extent(&mut self.free, first, pages);
        self.page_count = first + pages;
    }

    /// Frees a run: at once if it was allocated since the freeze (back to
    /// `early` if it came from there: the durable image still uses it),
    /// else once the next checkpoint is durable.
    pub(super) fn release(&mut self, first: u64, pages: u64) {
        if self.fresh.contains(&first) {
            for p in first..first + pages {
                self.fresh.remove(&p);
            }
            // Only single tree pages are ever held.
            if pages == 1 && self.held.remove(&first).is_some() {
                add_extent(&mut self.early, first, 1);
            } else {
                add_extent(&mut self.free, first, pages);
            }
        } else {
            self.retired.push((first, pages));
        }
    }

    /// The free extents of the image being frozen: free now, or used only
    /// by older images.
    pub(super) fn image_free(&self) -> BTreeMap<u64, u64> {
        // Taken at a freeze, after the last checkpoint made the pages it
        // freed free (`BtreeTable::checkpoint`).
        debug_assert!(self.early.is_empty() && self.held.is_empty());
        let mut extents = self.free.clone();
        for &(f, n) in self.limbo.iter().chain(&self.unreachable) {
            add_extent(&mut extents, f, n);
        }
        extents
    }

    /// Marks `page`, the image of page `pgno` that the writer has just
    /// changed, dirty. Only pages allocated since the last freeze are
    /// changed in place (the invariant above; a frozen page changed before
    /// its checkpoint wrote it would put a later change into the image):
    /// checked in debug builds.
    pub(super) fn changed(&self, pgno: u64, page: &PageBuf) {
        debug_assert!(
            self.fresh.contains(&pgno),
            "page {pgno} changed in place, but not allocated since the last freeze"
        );
        page.dirty.store(true, Ordering::Release);
    }

    /// Whether no leaf waits for `BtreeTable::tidy`.
    pub(crate) fn is_tidy(&self) -> bool {
        self.untidy_keys.is_empty()
    }

    pub(super) fn free_pages(&self) -> u64 {
        self.free.values().sum::<u64>()
            + self.retired.iter().map(|r| r.1).sum::<u64>()
            + self.limbo.iter().map(|r| r.1).sum::<u64>()
            + self.early.values().sum::<u64>()
            + self.unreachable.iter().map(|r| r.1).sum::<u64>()
    }
}

/// Adds many runs to `map` (`add_extent` each), sorted and joined first: a
/// checkpoint frees tens of thousands of pages, most of them one at a
/// time in the order they were replaced, and adding those one by one to
/// the map took most of 10 ms in the write that did it.
fn add_extents(map: &mut BTreeMap<u64, u64>, mut runs: Vec<(u64, u64)>) {
    runs.sort_unstable();
    let mut joined: Option<(u64, u64)> = None;
    for (f, n) in runs {
        joined = match joined {
            Some((jf, jn)) if jf + jn == f => Some((jf, jn + n)),
            Some((jf, jn)) => {
                add_extent(map, jf, jn);
                Some((f, n))
            }
            None => Some((f, n)),
        };
    }
    if let Some((f, n)) = joined {
        add_extent(map, f, n);
    }
}

pub(super) fn add_extent(map: &mut BTreeMap<u64, u64>, mut first: u64, mut pages: u64) {
    if pages == 0 {
        return;
    }
    if let Some((&s, &l)) = map.range(..first).next_back() {
        if s + l == first {
            map.remove(&s);
            first = s;
            pages += l;
        }
    }
    if let Some(&l) = map.get(&(first + pages)) {
        map.remove(&(first + pages));
        pages += l;
    }
    map.insert(first, pages);
}

impl BtreeTable {
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
    pub(super) fn reclaim(&self, st: &mut TreeState) {
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
    pub(super) fn drop_idle_frames(&self, runs: &[(u64, u64)]) {
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
    pub(super) fn alloc_page(&self, st: &mut TreeState) -> u64 {
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
    /// before this.
    pub(super) fn after_durable(&self) {
        // Dropped after the writer's lock is let go: the cache may write
        // and evict those frames from now on.
        let _held = {
            let mut st = self.tree.lock();
            let limbo = std::mem::take(&mut st.limbo);
            st.unreachable.extend(limbo);
            for (f, n) in std::mem::take(&mut st.early) {
                add_extent(&mut st.free, f, n);
            }
            let held = std::mem::take(&mut st.held);
            self.cache.unpin(held.len() as u64 * self.charge());
            self.reclaim(&mut st);
            held
        };
    }

    /// Gives back the cache's pinned share that a page taken from `early`
    /// holds, when it is freed again before its checkpoint is durable.
    fn unpin_if_held(&self, st: &TreeState, pgno: u64) {
        if st.held.contains_key(&pgno) {
            self.cache.unpin(self.charge());
        }
    }

    /// Frees a page the tree no longer uses. Its cached frame is dropped
    /// only if it was allocated since the freeze: a page of the frozen image
    /// may be dirty and not yet written by the running checkpoint, which
    /// finds it in the cache (it leaves the cache once the checkpoint is
    /// durable and the page is reused).
    pub(super) fn forget_page(&self, st: &mut TreeState, pgno: u64) {
        st.untidy.remove(&pgno);
        self.unpin_if_held(st, pgno);
        if st.fresh.contains(&pgno) {
            self.uncache(pgno);
        }
        st.release(pgno, 1);
    }

    pub(super) fn release_value(&self, st: &mut TreeState, v: Value<'_>) {
        if let Value::Overflow { first, pages, .. } = v {
            st.release(first, u64::from(pages));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicU64;

    use super::*;
    use crate::btree::iter::BtreeIter;
    use crate::btree::read::Lookup;
    use crate::btree::{reopen_scratch_table, scratch_table};
    use crate::error::{Error, Result};
    use crate::mvcc::iter::InternalIterator;
    use crate::mvcc::key::{self, internal_key, Kind, KIND_SEEK, SEQNO_MAX};
    use crate::mvcc::Horizon;

    const PAGE: usize = 4096;
    const KEYS: u32 = 3000;

    fn value(round: u8) -> Vec<u8> {
        vec![round; 100]
    }

    /// Every key put again at `seqno`, its value `value(seqno)`.
    fn put_all(table: &BtreeTable, seqno: u64) {
        let mut st = table.writer();
        let horizon = Horizon::no_readers(seqno);
        for i in 0..KEYS {
            let key = format!("key{i:06}");
            table
                .apply(
                    &mut st,
                    seqno,
                    Kind::Put,
                    key.as_bytes(),
                    &value(seqno as u8),
                    &horizon,
                )
                .expect("apply");
        }
    }

    fn checkpoint(
        table: &BtreeTable,
        seqno: u64,
        sync_log: impl FnOnce(u64) -> Result<()>,
    ) -> Result<u64> {
        table.checkpoint(|| ((), seqno, 0), sync_log, |_| Ok(()))
    }

    /// Reads every key, expecting `value(seqno)`.
    fn read_all(table: &BtreeTable, seqno: u64) {
        let visible = AtomicU64::new(seqno);
        for i in 0..KEYS {
            let mut got = Vec::new();
            let found = table
                .get(format!("key{i:06}").as_bytes(), None, &visible, &mut got)
                .expect("get");
            assert!(matches!(found, Lookup::Value), "key {i} is missing");
            assert_eq!(got, value(seqno as u8), "key {i}");
        }
    }

    /// Opens the table's durable image with a cache of its own and checks
    /// it whole and every key at `value(seqno)`.
    fn check_durable(dir: &std::path::Path, seqno: u64) {
        let table = reopen_scratch_table(dir, PAGE, 64 << 20);
        crate::btree::verify::verify(&table).expect("the durable image is whole");
        read_all(&table, seqno);
    }

    #[test]
    fn pages_taken_from_limbo_reach_the_file_only_once_their_checkpoint_is_durable() {
        // Goal: a copy made while a checkpoint writes may take a page the
        // durable image still uses (`alloc_page`), but that page must not be
        // written before the checkpoint's header is: a crash in between
        // opens the durable image, one of whose pages would be overwritten.
        // Method: image 1 durable; every key put again (every leaf copied,
        // image 1's leaves retired); a checkpoint whose log sync (after its
        // pages, before its header) first puts every key again in a cache
        // small enough that it hands dirty pages back to be written, and
        // then fails, as a crash there would. Image 1, opened again, must
        // be whole and hold the first values. (Fails if the writer's state
        // does not keep a handle to each held frame: `install_page`.)
        let dir = tempfile::tempdir().expect("tempdir");
        drop(scratch_table(dir.path(), PAGE, 0));
        let table = reopen_scratch_table(dir.path(), PAGE, 96 << 10);
        put_all(&table, 1);
        checkpoint(&table, 1, |_| Ok(())).expect("checkpoint 1");
        put_all(&table, 2);
        let failed = checkpoint(&table, 2, |_| {
            put_all(&table, 3);
            assert!(
                !table.writer().held.is_empty(),
                "no copy took a page of the durable image"
            );
            // Reads that miss take the place of other pages and write the
            // dirty ones the cache hands back.
            read_all(&table, 3);
            Err(Error::io("sync", "log", std::io::Error::other("injected")))
        });
        assert!(failed.is_err(), "the checkpoint did not fail");
        drop(table);
        check_durable(dir.path(), 1);
    }

    #[test]
    fn a_cursor_resuming_through_a_stale_page_never_reads_a_reused_one() {
        // Goal: a cursor that copied its window before the pages were
        // replaced may resume through a stale frame still cached and
        // unchanged (`beside` reads a child of the parent it recorded);
        // no page that frame names may be reused meanwhile, or the cursor
        // reads the reused page's new contents as the next leaf.
        // Method: image 1; an iterator at each key (its window ends at its
        // leaf's end where the key is its leaf's last); the root's stale
        // frame kept in the cache by a handle, as a reader holding it
        // would; every key put again (every page replaced); then, during
        // the next checkpoint's write, rounds of a few writes whose copies
        // may take replaced pages, after each of which every iterator steps
        // to the next key.
        // (Fails if limbo pages may be reused before all of them are out
        // of the cache: `reclaim`.)
        let dir = tempfile::tempdir().expect("tempdir");
        let table = Arc::new(scratch_table(dir.path(), PAGE, 0));
        put_all(&table, 1);
        checkpoint(&table, 1, |_| Ok(())).expect("checkpoint 1");
        let mut cursors: Vec<BtreeIter> = (0..KEYS)
            .map(|i| {
                let mut it = BtreeIter::new(Arc::clone(&table));
                let key = format!("key{i:06}");
                it.seek(&internal_key(key.as_bytes(), SEQNO_MAX, KIND_SEEK));
                assert!(it.valid(), "key {i} not found");
                it
            })
            .collect();
        let root = table.root.read().place().0;
        let stale_root = table.cache.get::<Frame>(&(table.file.owner, root));
        assert!(stale_root.is_some(), "the root is not cached");
        put_all(&table, 2);
        checkpoint(&table, 2, |_| {
            // Eight rounds of four writes: the replaced pages leave the
            // cache at the first write, and the copies take them.
            for round in 0..8 {
                {
                    let mut st = table.writer();
                    let horizon = Horizon::no_readers(3);
                    for i in 0..4 {
                        let key = format!("key{:06}", round * 4 + i);
                        table
                            .apply(&mut st, 3, Kind::Put, key.as_bytes(), &value(3), &horizon)
                            .expect("apply");
                    }
                }
                for (i, it) in cursors.iter_mut().enumerate() {
                    let at = i as u32 + round + 1;
                    if at > KEYS {
                        continue;
                    }
                    it.next();
                    if at == KEYS {
                        assert!(!it.valid(), "a key after the last");
                        continue;
                    }
                    assert!(it.valid(), "cursor {i} ended early: {:?}", it.status());
                    // Past the other versions of the key it was on.
                    while key::user_key(it.key()) == format!("key{:06}", at - 1).as_bytes() {
                        it.next();
                    }
                    assert_eq!(
                        key::user_key(it.key()),
                        format!("key{at:06}").as_bytes(),
                        "cursor {i}, step {}",
                        round + 1
                    );
                }
            }
            assert!(
                !table.writer().held.is_empty(),
                "no replaced page was reused"
            );
            Ok(())
        })
        .expect("checkpoint 2");
        drop(stale_root);
    }

    #[test]
    fn copies_made_while_a_checkpoint_writes_take_the_pages_it_frees() {
        // Goal: the next epoch's copies, made while a checkpoint writes,
        // take the pages that checkpoint frees rather than growing the file
        // (a table overwritten at random had a file of 2.4 images of its
        // tree), and are written once it is durable.
        // Method: image 1, every key put again, a checkpoint during whose
        // write every key is put a third time; the file may grow only by
        // the few pages a write takes before the freed pages are out of the
        // cache. The next checkpoint's image holds the third values.
        let dir = tempfile::tempdir().expect("tempdir");
        let table = scratch_table(dir.path(), PAGE, 0);
        put_all(&table, 1);
        checkpoint(&table, 1, |_| Ok(())).expect("checkpoint 1");
        put_all(&table, 2);
        checkpoint(&table, 2, |_| {
            let before = table.writer().page_count;
            put_all(&table, 3);
            let st = table.writer();
            let grew = st.page_count - before;
            assert!(
                grew * 10 < st.held.len() as u64,
                "the file grew by {grew} pages, {} copies took freed ones",
                st.held.len()
            );
            Ok(())
        })
        .expect("checkpoint 2");
        {
            let st = table.writer();
            assert!(
                st.held.is_empty() && st.early.is_empty(),
                "pages held past durability"
            );
        }
        checkpoint(&table, 3, |_| Ok(())).expect("checkpoint 3");
        drop(table);
        check_durable(dir.path(), 3);
    }

    #[test]
    fn many_runs_join_as_one_at_a_time_would() {
        // Goal: `add_extents` leaves the map `add_extent` of each run
        // would, whatever the runs' order.
        let runs = vec![(9, 1), (3, 2), (14, 1), (5, 1), (10, 2), (20, 3), (1, 1)];
        let mut one_by_one = BTreeMap::new();
        add_extent(&mut one_by_one, 12, 2);
        let mut joined = one_by_one.clone();
        for &(f, n) in &runs {
            add_extent(&mut one_by_one, f, n);
        }
        add_extents(&mut joined, runs);
        assert_eq!(joined, one_by_one);
        assert_eq!(
            joined.into_iter().collect::<Vec<_>>(),
            [(1, 1), (3, 3), (9, 6), (20, 3)]
        );
    }

    #[test]
    fn extents_coalesce() {
        let mut m = BTreeMap::new();
        add_extent(&mut m, 10, 2);
        add_extent(&mut m, 14, 1);
        add_extent(&mut m, 12, 2);
        assert_eq!(m.into_iter().collect::<Vec<_>>(), [(10, 5)]);
    }
}
