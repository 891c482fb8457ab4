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
//! Thread-safety: `Space` is part of the writer's state, behind the
//! table's `tree` mutex (`TreeState`, `write.rs`); only the writer touches
//! it.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::pages::{Frame, PageBuf};
use crate::btree::format::{self, FREE_EXTENT_BYTES};

/// A set of page numbers, hashed with foldhash rather than the std's
/// SipHash: the numbers are the engine's own, and the writer asks `fresh`
/// at every level of every write (SipHash was 3.6% of a B-tree
/// overwrite's instructions).
pub(crate) type PageSet = HashSet<u64, foldhash::fast::FixedState>;

/// Pages taken early, each with a handle to its frame once installed
/// (`Space::held`).
pub(crate) type Held = HashMap<u64, Option<Arc<Frame>>, foldhash::fast::FixedState>;

/// What only the writer touches: page allocation across checkpoint epochs.
#[derive(Debug, Default)]
pub(crate) struct Space {
    /// Pages in the file (the next page to extend it with).
    pub(crate) page_count: u64,
    /// Free extents (first page -> pages), allocatable now.
    pub(crate) free: BTreeMap<u64, u64>,
    /// Pages allocated since the last freeze: changed in place.
    pub(crate) fresh: PageSet,
    /// Pages of the last frozen image replaced since the freeze: free in
    /// the next image, allocatable once it is durable.
    pub(crate) retired: Vec<(u64, u64)>,
    /// Pages retired before the last freeze, waiting for that checkpoint to
    /// be durable.
    pub(crate) limbo: Vec<(u64, u64)>,
    /// Limbo pages out of the cache (every one, checked at a moment no
    /// descent was in flight: `reclaim`): new tree pages may take them
    /// before the running checkpoint is durable, held in the cache
    /// meanwhile (`PageStore::alloc_page`).
    pub(crate) early: BTreeMap<u64, u64>,
    /// Pages taken from `early` since, each with a handle to its frame once
    /// installed: the durable image still uses them, and the cache neither
    /// writes nor evicts a frame someone else holds a handle to
    /// (`Frame::state`), until the running checkpoint is durable and the
    /// handles are dropped.
    pub(crate) held: Held,
    /// Pages free in the durable image that a descent begun before they
    /// were freed may still be reading (see `reclaim`).
    pub(crate) unreachable: Vec<(u64, u64)>,
    /// The free map run of the last image.
    pub(crate) free_map: (u64, u64),
}

impl Space {
    pub(crate) fn alloc(&mut self, pages: u64) -> u64 {
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
    pub(crate) fn trim_tail(&mut self) -> Option<(u64, u64)> {
        let (&first, &pages) = self.free.iter().next_back()?;
        if first + pages != self.page_count {
            return None;
        }
        self.free.remove(&first);
        self.page_count = first;
        Some((first, pages))
    }

    /// Puts back what `trim_tail` took (the file could not be cut).
    pub(crate) fn untrim(&mut self, (first, pages): (u64, u64)) {
        add_extent(&mut self.free, first, pages);
        self.page_count = first + pages;
    }

    /// Frees a run: at once if it was allocated since the freeze (back to
    /// `early` if it came from there: the durable image still uses it),
    /// else once the next checkpoint is durable.
    pub(crate) fn release(&mut self, first: u64, pages: u64) {
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
    pub(crate) fn image_free(&self) -> BTreeMap<u64, u64> {
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
    pub(crate) fn changed(&self, pgno: u64, page: &PageBuf) {
        debug_assert!(
            self.fresh.contains(&pgno),
            "page {pgno} changed in place, but not allocated since the last freeze"
        );
        page.dirty.store(true, Ordering::Release);
    }

    /// Allocates the run of the free map of the image being frozen, and
    /// encodes the map: the free pages of the image, free now or used only
    /// by older images. The run's own pages come out of the free list
    /// first, so the loop settles once the run is large enough. `chunk`:
    /// the bytes of map a page holds. Returns the run's first page, its
    /// pages, and the map.
    pub(crate) fn place_free_map(&mut self, chunk: u64) -> (u64, u64, Vec<u8>) {
        let mut pages = 1u64;
        loop {
            let need = ((self.image_free().len() as u64 * FREE_EXTENT_BYTES as u64)
                .div_ceil(chunk))
            .max(1);
            if need > pages {
                pages = need;
                continue;
            }
            let first = self.alloc(pages);
            for p in first..first + pages {
                self.fresh.remove(&p);
            }
            let blob = format::encode_free_map(&self.image_free());
            if (blob.len() as u64).div_ceil(chunk).max(1) <= pages {
                return (first, pages, blob);
            }
            // Cannot happen (allocating only shrinks the list); retry larger.
            add_extent(&mut self.free, first, pages);
            pages += 1;
        }
    }

    /// Pages no image the writer builds uses: free now, or once the
    /// durable image no longer needs them (`image_pages`).
    pub(crate) fn free_pages(&self) -> u64 {
        self.free.values().sum::<u64>() + self.image_pages()
    }

    /// Of the free pages, those the durable image (or a descent begun
    /// before a checkpoint freed them) may still read: replaced since the
    /// last freeze, waiting for a checkpoint to be durable, or unreachable
    /// only for new descents. They are free once the next checkpoint is
    /// durable: with `page_count`, the second image copy-on-write keeps.
    pub(crate) fn image_pages(&self) -> u64 {
        self.retired.iter().map(|r| r.1).sum::<u64>()
            + self.limbo.iter().map(|r| r.1).sum::<u64>()
            + self.early.values().sum::<u64>()
            + self.unreachable.iter().map(|r| r.1).sum::<u64>()
    }
}

/// Adds many runs to `map` (`add_extent` each), sorted and joined first: a
/// checkpoint frees tens of thousands of pages, most of them one at a
/// time in the order they were replaced, and adding those one by one to
/// the map took most of 10 ms in the write that did it.
pub(crate) fn add_extents(map: &mut BTreeMap<u64, u64>, mut runs: Vec<(u64, u64)>) {
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

pub(crate) fn add_extent(map: &mut BTreeMap<u64, u64>, mut first: u64, mut pages: u64) {
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

#[cfg(test)]
mod tests {
    use super::*;

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
