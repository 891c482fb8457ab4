//! Free space of a B-tree file: the writer's allocation of pages across
//! checkpoint epochs, the free extents in memory, and when freed pages may
//! be reused.
//!
//! Invariants: a page is in exactly one of: the tree (or an overflow run
//! or the free map run), `free` (allocatable now), `retired` (replaced
//! since the last freeze), `limbo` (retired before it, waiting for its
//! checkpoint to be durable), or `unreachable` (free in the durable image,
//! waiting until no descent begun before can read it). Only pages
//! allocated since the last freeze (`fresh`) are written over. Extents in
//! `free` are coalesced.
//!
//! Thread-safety: `TreeState` is the writer's state, behind the table's
//! `tree` mutex (see `write.rs`); only the writer touches it.

use std::collections::{BTreeMap, HashSet};

use super::page::Value;
use super::BtreeTable;

/// What only the writer touches: page allocation across checkpoint epochs.
#[derive(Debug, Default)]
pub(crate) struct TreeState {
    /// Pages in the file (the next page to extend it with).
    pub(super) page_count: u64,
    /// Free extents (first page -> pages), allocatable now.
    pub(super) free: BTreeMap<u64, u64>,
    /// Pages allocated since the last freeze: changed in place.
    pub(super) fresh: HashSet<u64>,
    /// Pages of the last frozen image replaced since the freeze: free in
    /// the next image, allocatable once it is durable.
    pub(super) retired: Vec<(u64, u64)>,
    /// Pages retired before the last freeze, waiting for that checkpoint to
    /// be durable.
    pub(super) limbo: Vec<(u64, u64)>,
    /// Pages free in the durable image that a descent begun before they
    /// were freed may still be reading (see `reclaim`).
    pub(super) unreachable: Vec<(u64, u64)>,
    /// The free map run of the last image.
    pub(super) free_map: (u64, u64),
    /// Leaves split by the commit group being applied while they held
    /// versions that its publication makes invisible (see `tidy`), and a
    /// key in each.
    pub(super) untidy: HashSet<u64>,
    pub(super) untidy_keys: Vec<Vec<u8>>,
    /// Set while a range delete is applied: each leaf a delete goes into
    /// is marked untidy too, so that once the group is published `tidy`
    /// prunes the deleted keys away and packs the leaves.
    pub(super) deleting_range: bool,
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

    /// Frees a run: at once if it was allocated since the freeze, else
    /// once the next checkpoint is durable.
    pub(super) fn release(&mut self, first: u64, pages: u64) {
        if self.fresh.contains(&first) {
            for p in first..first + pages {
                self.fresh.remove(&p);
            }
            add_extent(&mut self.free, first, pages);
        } else {
            self.retired.push((first, pages));
        }
    }

    /// The free extents of the image being frozen: free now, or used only
    /// by older images.
    pub(super) fn image_free(&self) -> BTreeMap<u64, u64> {
        let mut extents = self.free.clone();
        for &(f, n) in self.limbo.iter().chain(&self.unreachable) {
            add_extent(&mut extents, f, n);
        }
        extents
    }

    /// Whether no leaf waits for `BtreeTable::tidy`.
    pub(crate) fn is_tidy(&self) -> bool {
        self.untidy_keys.is_empty()
    }

    pub(super) fn free_pages(&self) -> u64 {
        self.free.values().sum::<u64>()
            + self.retired.iter().map(|r| r.1).sum::<u64>()
            + self.limbo.iter().map(|r| r.1).sum::<u64>()
            + self.unreachable.iter().map(|r| r.1).sum::<u64>()
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
    pub(super) fn reclaim(&self, st: &mut TreeState) {
        if st.unreachable.is_empty() {
            return;
        }
        let Some(_quiet) = self.descents.try_close() else {
            return;
        };
        for (f, n) in std::mem::take(&mut st.unreachable) {
            for p in f..f + n {
                self.uncache(p);
            }
            add_extent(&mut st.free, f, n);
        }
    }

    /// Frees a page the tree no longer uses. Its cached frame is dropped
    /// only if it was allocated since the freeze: a page of the frozen image
    /// may be dirty and not yet written by the running checkpoint, which
    /// finds it in the cache (it leaves the cache once the checkpoint is
    /// durable and the page is reused).
    pub(super) fn forget_page(&self, st: &mut TreeState, pgno: u64) {
        st.untidy.remove(&pgno);
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
    use super::*;

    #[test]
    fn extents_coalesce() {
        let mut m = BTreeMap::new();
        add_extent(&mut m, 10, 2);
        add_extent(&mut m, 14, 1);
        add_extent(&mut m, 12, 2);
        assert_eq!(m.into_iter().collect::<Vec<_>>(), [(10, 5)]);
    }
}
