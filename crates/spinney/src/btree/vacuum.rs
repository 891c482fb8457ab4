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
//! Packing leaves takes children from their parents, so the branches are
//! then merged (`pack_branches`), and the leaves packed again in the longer
//! runs under the merged parents.
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
use super::store::{write_handed_back, write_run, WriteGuard};
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
        let leaves = self.pack_leaf_runs(st, horizon)?;
        // Packing the leaves takes children from their parents, and each
        // parent's run of leaves is packed apart, its last page partly
        // empty: the branches are merged, and the leaves packed again in
        // the longer runs under the merged parents, which that leaves with
        // fewer children again (three rounds at most; the second is
        // usually the last that frees a page).
        for _ in 0..3 {
            if self.pack_branches(st, horizon)? == 0 {
                break;
            }
            self.pack_leaf_runs(st, horizon)?;
        }
        Ok(leaves)
    }

    /// Prunes and packs each run of leaves under one parent. Returns the
    /// leaves it went through.
    fn pack_leaf_runs(&self, st: &mut TreeState, horizon: &Horizon) -> Result<u64> {
        // Every leaf, found from the branches (leaves are not read).
        let routes = self.routes(false, |_, _, page| page.is_none())?;
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

    /// Merges the children of each branch, where they are branches, into
    /// as few pages as hold them with a `PACK_SLACK`-th of each free. Level
    /// by level from the leaves' grandparents up, as the pages of a level
    /// are only as few as the level below them lets them be; each parent's
    /// children are packed apart, so the passes go on until one frees
    /// nothing (the second packs the lower levels under the merged upper
    /// ones). Returns the branch pages freed.
    fn pack_branches(&self, st: &mut TreeState, horizon: &Horizon) -> Result<u64> {
        let mut freed = 0;
        loop {
            let mut pass = 0;
            let mut depth = self.root.read().place().1.saturating_sub(2);
            while depth >= 1 {
                let routes = self.routes(false, |_, d, page| d == depth && page.is_some())?;
                for route in &routes {
                    pass += self.pack_children(st, route, depth, horizon)?;
                }
                depth -= 1;
            }
            if pass == 0 {
                return Ok(freed);
            }
            freed += pass;
        }
    }

    /// Packs the children of the branch at `depth` on the way to `route`
    /// (its lower separator), which are branches: their entries (a child
    /// and the key that routes to it; each page's `link` under the
    /// parent's separator for it) are cut into as few pages as hold them,
    /// the first pages of the run reused (copied first if the last
    /// checkpoint wrote them) and the rest freed, and the parent's
    /// separators replaced. Returns the pages freed.
    fn pack_children(
        &self,
        st: &mut TreeState,
        route: &[u8],
        depth: u32,
        horizon: &Horizon,
    ) -> Result<u64> {
        let path = self.write_path(st, route, horizon)?;
        let Some((parent, _)) = path.get(depth as usize - 1) else {
            return Ok(0);
        };
        let parent = Arc::clone(parent);
        let mut ctx = ReadContext::default();
        let mut children: Vec<u64> = {
            let g = parent.read();
            (0..=page::count(&g.image))
                .map(|i| page::child_at(&g.image, i))
                .collect()
        };
        if children.len() < 2 {
            return Ok(0);
        }
        let mut frames = children
            .iter()
            .map(|&c| self.store.fetch(c, &mut ctx))
            .collect::<Result<Vec<_>>>()?;
        let mut entries: Vec<(Vec<u8>, u64)> = Vec::new();
        {
            let pg = parent.read();
            for (i, f) in frames.iter().enumerate() {
                let g = f.read();
                if page::kind(&g.image) != page::KIND_BRANCH {
                    return Err(self
                        .store
                        .file
                        .corrupt(f.pgno, "a page above the leaves' parents is not a branch"));
                }
                let key = match i {
                    0 => Vec::new(),
                    _ => page::ikey(&pg.image, i - 1).to_vec(),
                };
                entries.push((key, page::link(&g.image)));
                entries.extend(
                    (0..page::count(&g.image))
                        .map(|j| (page::ikey(&g.image, j).to_vec(), page::child(&g.image, j))),
                );
            }
        }
        // Cut greedily: a page's first entry is its link, the rest cells.
        let image_len = self.store.file.image_len();
        let cell = |key: &[u8]| 2 + 8 + key.len() + page::SLOT;
        let room = (image_len - page::HEADER).saturating_sub(image_len / PACK_SLACK);
        let mut cuts = vec![0];
        let mut bytes = 0;
        for (i, (key, _)) in entries.iter().enumerate().skip(1) {
            bytes += cell(key);
            if bytes > room {
                cuts.push(i);
                bytes = 0;
            }
        }
        // A last page of one entry would be a branch of one child and no
        // separator: it takes the last entry of the page before.
        if let [.., before, last] = cuts[..] {
            if last + 1 == entries.len() && last >= before + 3 {
                if let Some(c) = cuts.last_mut() {
                    *c -= 1;
                }
            }
        }
        cuts.push(entries.len());
        let pages = cuts.len() - 1;
        let parent_bytes: usize = cuts[1..pages].iter().map(|&i| cell(&entries[i].0)).sum();
        if pages >= children.len() || parent_bytes > image_len - page::HEADER {
            return Ok(0);
        }
        for j in 0..pages {
            if !st.space.fresh.contains(&children[j]) {
                frames[j] = self.copy_page(st, &frames[j], Some(&parent), j, horizon)?;
                children[j] = frames[j].pgno;
            }
        }

        let mut root = self.root.write();
        let mut guards: Vec<WriteGuard> = path
            .iter()
            .take(depth as usize)
            .map(|(f, _)| f.write())
            .collect();
        let mut kids: Vec<WriteGuard> = frames.iter().map(|f| f.write()).collect();
        for (j, g) in kids.iter_mut().take(pages).enumerate() {
            let (lo, hi) = (cuts[j], cuts[j + 1]);
            let cells: Vec<Vec<u8>> = entries[lo + 1..hi]
                .iter()
                .map(|(key, child)| page::branch_cell(key, *child))
                .collect();
            page::set_link(&mut g.image, entries[lo].1);
            page::rebuild(&mut g.image, &cells);
            st.space.changed(children[j], g);
        }
        let Some(pg) = guards.last_mut() else {
            return Ok(0);
        };
        let cells: Vec<Vec<u8>> = (1..pages)
            .map(|j| page::branch_cell(&entries[cuts[j]].0, children[j]))
            .collect();
        page::set_link(&mut pg.image, children[0]);
        page::rebuild(&mut pg.image, &cells);
        st.space.changed(parent.pgno, pg);
        drop(kids);
        for &c in &children[pages..] {
            self.forget_page(st, c);
        }
        self.collapse_root(st, &mut root, guards);
        Ok((children.len() - pages) as u64)
    }

    /// How much of the file the tree uses, estimated without reading every
    /// leaf: the bytes of the file's data pages, and the bytes the tree's
    /// pages hold (every branch read, and `LEAVES_SAMPLED` leaves spread
    /// over the tree standing for all of them). For the idle vacuum, which
    /// runs where the tree holds little of its file.
    pub(crate) fn estimate_use(&self) -> Result<(u64, u64)> {
        let leaves = parking_lot::Mutex::new(Vec::new());
        let branches = parking_lot::Mutex::new(0u64);
        self.routes(false, |pgno, _, page| {
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
    /// leftmost pages). `pick` gets each page's number, depth (the root's
    /// is 1) and image; leaves are read (and their image given) only if
    /// `read_leaves`.
    fn routes(
        &self,
        read_leaves: bool,
        pick: impl Fn(u64, u32, Option<&[u8]>) -> bool,
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
                if pick(pgno, depth, None) {
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
            if pick(pgno, depth, Some(p)) {
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
        let routes = self.routes(true, |pgno, _, page| {
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
