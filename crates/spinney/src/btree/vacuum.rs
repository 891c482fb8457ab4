//! Giving space back (`compact_all` of a B-tree table): packing the leaves,
//! and moving the pages at the end of the file to free pages before them,
//! so that checkpoints can cut the file (`checkpoint::trim_file`).
//! WiredTiger's compact and SQLite's vacuum do the same for their files.
//!
//! Packing (`pack_leaves`) prunes every leaf of the versions no reader
//! needs and packs each run of leaves under one parent into as few pages
//! as hold it, leaving a 32nd of each free (`tidy`, which packs the leaves
//! a commit group split, does the work). Deletes leave leaves partly empty,
//! and random inserts leave them about three quarters full; packed, they
//! are nearly full: overwrites keep them so, and new keys split them, as in
//! any B-tree packed by its vacuum (SQLite's) or rebuild (InnoDB's).
//!
//! A page moves the way every change moves a page the last checkpoint
//! wrote: it is copied to the lowest free page and its parent is pointed at
//! the copy (`write_path`, which copies the parent too if it must). The old
//! page is retired; once a checkpoint has made the move durable and a
//! second has found the page free, that checkpoint cuts the file before
//! the free pages that end it. Overflow runs past the boundary are copied
//! to lower runs and their leaf cells pointed at them.
//!
//! Thread-safety: runs as the writer (holding `tree`), with the caller
//! holding the commit lock, so no commit group is half applied and the
//! horizon it passes is current. Readers go on (latch coupling, as with any
//! write).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::format::FIRST_DATA_PAGE;
use super::page::{self, Value};
use super::store::{write_handed_back, write_run};
use super::BtreeTable;
use super::TreeState;
use crate::error::Result;
use crate::mvcc::Horizon;
use crate::read_context::ReadContext;

/// Leaves `estimate_use` reads to estimate how full the leaves are.
const LEAVES_SAMPLED: usize = 64;

/// Leaves made fresh and packed at a time by `pack_leaves`.
const PACK_CHUNK: usize = 1024;

/// `pack_leaves` leaves a page's 1/PACK_SLACK free: room for a new version
/// of a key, after which the leaf prunes the versions new ones replaced
/// instead of splitting (an insert takes the room while 1/32 of the page
/// is free; `apply_entry`). 1M keys loaded in order and overwritten: an
/// overwrite of every key ran at 139k ops/s and kept the leaves 98.6% full;
/// after `compact_all` (96.1% full) it ran at 144k and kept them 98.6% full.
/// Writes that add keys split packed leaves all the same: a 2M-key table
/// whose overwrite added 10% new keys went from 92% to 67% full (from 79%
/// to 80% without the pack).
const PACK_SLACK: usize = 32;

impl BtreeTable {
    /// Prunes and packs every leaf (see the module comment). Returns the
    /// leaves it went through. A failure marks the table failed.
    pub(crate) fn pack_leaves(&self, horizon: &Horizon) -> Result<u64> {
        let mut st = self.tree.lock();
        self.check_failed()?;
        let packed = self
            .pack_all(&mut st, horizon)
            .inspect_err(|e| self.store.file.fail(&format!("packing leaves failed: {e}")))?;
        self.changes.fetch_add(packed, Ordering::Relaxed);
        Ok(packed)
    }

    fn pack_all(&self, st: &mut TreeState, horizon: &Horizon) -> Result<u64> {
        // Every leaf, found from the branches (leaves are not read).
        let routes = self.routes(false, |_, page| page.is_none())?;
        // Each leaf is made fresh (copied and pruned if the last checkpoint
        // wrote it) and marked for `tidy`, which packs the runs. In chunks,
        // each followed by the write of the dirty pages the cache handed
        // back meanwhile (`tidy` writes them at its end): the copies of a
        // table larger than the cache are written as they go, not held.
        let leaves = routes.len() as u64;
        for chunk in routes.chunks(PACK_CHUNK) {
            for route in chunk {
                let path = self.write_path(st, route, horizon)?;
                if let Some((leaf, _)) = path.last() {
                    st.untidy.insert(leaf.pgno);
                }
                drop(path);
                write_handed_back(&self.store.cache);
            }
            st.untidy_keys.extend_from_slice(chunk);
            self.tidy_leaving(st, horizon, self.store.file.image_len() / PACK_SLACK, 0)?;
        }
        Ok(leaves)
    }

    /// How much of the file the tree uses, estimated without reading every
    /// leaf: the bytes of the file's data pages, and the bytes the tree's
    /// pages hold (every branch read, and `LEAVES_SAMPLED` leaves spread
    /// over the tree standing for all of them). For the idle vacuum, which
    /// runs where the tree holds little of its file.
    pub(crate) fn estimate_use(&self) -> Result<(u64, u64)> {
        let leaves = parking_lot::Mutex::new(Vec::new());
        let branches = parking_lot::Mutex::new(0u64);
        self.routes(false, |pgno, page| {
            match page {
                None => leaves.lock().push(pgno),
                Some(_) => *branches.lock() += 1,
            }
            false
        })?;
        let leaves = leaves.into_inner();
        let image = self.store.file.image_len() as u64;
        let step = leaves.len().div_ceil(LEAVES_SAMPLED).max(1);
        let mut ctx = ReadContext::default();
        let (mut sampled, mut used) = (0u64, 0u64);
        for &pgno in leaves.iter().step_by(step) {
            let frame = self.store.fetch(pgno, &mut ctx)?;
            used += page::used(&frame.read().image) as u64;
            sampled += 1;
        }
        let leaf_bytes = match sampled {
            0 => 0,
            n => used * leaves.len() as u64 / n,
        };
        let file = {
            let st = self.tree.lock();
            st.space.page_count.saturating_sub(FIRST_DATA_PAGE) * image
        };
        Ok((file, leaf_bytes + branches.into_inner() * image))
    }

    /// Walks the tree and returns, for each page `pick` chooses, the key
    /// that routes a descent to it (its lower separator; empty for the
    /// leftmost pages). `pick` gets each page's number and image; leaves
    /// are read (and their image given) only if `read_leaves`.
    fn routes(
        &self,
        read_leaves: bool,
        pick: impl Fn(u64, Option<&[u8]>) -> bool,
    ) -> Result<Vec<Vec<u8>>> {
        let mut ctx = ReadContext::default();
        let (root, height) = self.root.read().place();
        let mut routes = Vec::new();
        if root == 0 {
            return Ok(routes);
        }
        let mut stack: Vec<(u64, Vec<u8>, u32)> = vec![(root, Vec::new(), 1)];
        while let Some((pgno, route, depth)) = stack.pop() {
            if depth == height && !read_leaves {
                if pick(pgno, None) {
                    routes.push(route);
                }
                continue;
            }
            let frame = self.store.fetch(pgno, &mut ctx)?;
            let g = frame.read();
            let p = &g.image;
            match page::kind(p) {
                page::KIND_BRANCH if depth < height => {
                    for pos in 0..=page::count(p) {
                        let child_route = match pos {
                            0 => route.clone(),
                            _ => page::ikey(p, pos - 1).to_vec(),
                        };
                        stack.push((page::child_at(p, pos), child_route, depth + 1));
                    }
                }
                page::KIND_LEAF if depth == height => {}
                _ => {
                    return Err(self
                        .store
                        .file
                        .corrupt(pgno, "tree is deeper than its height or not a tree page"))
                }
            }
            if pick(pgno, Some(p)) {
                routes.push(route);
            }
        }
        Ok(routes)
    }

    /// Moves every page of the tree (and every overflow run) that lies at
    /// or past the page the file would end at if its pages in use were
    /// packed, to a free page before it where there is one. Returns the
    /// pages moved. A failure marks the table failed (a move may be half
    /// done).
    pub(crate) fn vacuum(&self, horizon: &Horizon) -> Result<u64> {
        let mut st = self.tree.lock();
        self.check_failed()?;
        self.store.reclaim(&mut st.space);
        let in_use = st
            .space
            .page_count
            .saturating_sub(FIRST_DATA_PAGE + st.space.free_pages());
        let boundary = FIRST_DATA_PAGE + in_use;
        if boundary >= st.space.page_count {
            return Ok(0);
        }
        let moved = self
            .move_pages_past(&mut st, boundary, horizon)
            .inspect_err(|e| self.store.file.fail(&format!("moving pages failed: {e}")))?;
        self.changes.fetch_add(moved, Ordering::Relaxed);
        Ok(moved)
    }

    fn move_pages_past(&self, st: &mut TreeState, boundary: u64, horizon: &Horizon) -> Result<u64> {
        let mut ctx = ReadContext::default();
        // The pages to move, and the leaves with overflow runs to move.
        let routes = self.routes(true, |pgno, page| {
            pgno >= boundary
                || page.is_some_and(|p| {
                    page::kind(p) == page::KIND_LEAF
                        && (0..page::count(p))
                            .any(|i| run_past(page::value(p, i), boundary).is_some())
                })
        })?;
        let mut moved = 0u64;
        for route in routes {
            // Copies every page on the way that the last checkpoint wrote
            // to the lowest free page: the page past the boundary among them.
            let before = st.space.fresh.len();
            let path = self.write_path(st, &route, horizon)?;
            moved += (st.space.fresh.len() - before) as u64;
            let Some((leaf, _)) = path.last() else {
                continue;
            };
            let leaf = Arc::clone(leaf);
            drop(path);
            write_handed_back(&self.store.cache);
            let mut g = leaf.write();
            for i in 0..page::count(&g.image) {
                let v = page::value(&g.image, i);
                let Some((first, pages)) = run_past(v, boundary) else {
                    continue;
                };
                let value = self.read_value(v, &mut ctx)?;
                let to = st.space.alloc(u64::from(pages));
                if to >= first {
                    // No lower run is free: leave it.
                    st.space.release(to, u64::from(pages));
                    continue;
                }
                write_run(
                    &self.store.file,
                    to,
                    &value,
                    page::KIND_OVERFLOW,
                    u64::from(pages),
                )?;
                page::set_overflow_first(&mut g.image, i, to);
                st.space.changed(leaf.pgno, &g);
                st.space.release(first, u64::from(pages));
                moved += u64::from(pages);
            }
        }
        Ok(moved)
    }
}

/// The overflow run of a value, if it reaches `boundary` or past it.
fn run_past(v: Value<'_>, boundary: u64) -> Option<(u64, u32)> {
    match v {
        Value::Overflow { first, pages, .. } if first + u64::from(pages) > boundary => {
            Some((first, pages))
        }
        _ => None,
    }
}
