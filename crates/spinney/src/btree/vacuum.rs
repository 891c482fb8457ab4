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
//! The work is cut into **slices** of at most `SLICE_ROUTES` leaves (or
//! branches), each done as the writer (holding `tree`) under the commit
//! lock the caller's `enter` takes, with the horizon taken under it, so
//! that no commit group is half applied and the horizon is current. Both
//! are let go between slices: writers wait for one slice, not for the
//! whole table (`compact_all` of 1M keys of which 90% were deleted, in
//! cache: 183 ms of packing at once before, 1.2 ms a slice at the median
//! and 3.5 ms at most now, 2026-11-29). Each slice finds its
//! pages again from the keys that route to them, so what writers changed
//! in between is packed or moved as it now stands. Readers go on
//! throughout (latch coupling, as with any write).

use std::cell::{Cell, RefCell};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::format::FIRST_DATA_PAGE;
use super::page::{self, Value};
use super::store::{write_handed_back, write_run, WriteGuard};
use super::BtreeTable;
use super::TreeState;
use crate::error::Result;
use crate::mvcc::key::{KeyRef, Kind, ParsedKey};
use crate::mvcc::Horizon;
use crate::read_context::ReadContext;

/// Leaves `estimate_use` reads to estimate how full the leaves are.
const LEAVES_SAMPLED: usize = 64;

/// Leaves one slice of the vacuum goes through at most: packed, with the
/// pages above them, or read to find what to move. A parent's run of
/// leaves fits (8 KiB branches of 16-byte keys hold up to 204 children),
/// so that runs are not packed in parts. A compact_all of 1M keys, 90%
/// deleted: 161 slices, a median of 1.2 ms, the longest 3.5 ms.
const SLICE_ROUTES: usize = 256;

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
    /// One slice of the vacuum: `work` runs as the writer, under what
    /// `enter` holds (the commit lock) and with the horizon it gives. A
    /// failure of `work` marks the table failed (a slice may be half done).
    fn slice<G, T>(
        &self,
        enter: &dyn Fn() -> Result<(G, Horizon)>,
        what: &str,
        work: impl FnOnce(&mut TreeState, &Horizon) -> Result<T>,
    ) -> Result<T> {
        let (held, horizon) = enter()?;
        let mut st = self.tree.lock();
        self.check_failed()?;
        let done = work(&mut st, &horizon)
            .inspect_err(|e| self.store.file.fail(&format!("{what} failed: {e}")));
        drop(st);
        drop(held);
        done
    }

    /// Prunes and packs every leaf (see the module comment), a slice at a
    /// time. Returns the leaves it went through.
    pub(crate) fn pack_leaves<G>(&self, enter: &dyn Fn() -> Result<(G, Horizon)>) -> Result<u64> {
        let leaves = self.pack_leaf_runs(enter)?;
        // Packing the leaves takes children from their parents, and each
        // parent's run of leaves is packed apart, its last page partly
        // empty: the branches are merged, and the leaves packed again in
        // the longer runs under the merged parents, which that leaves with
        // fewer children again (three rounds at most; the second is
        // usually the last that frees a page).
        for _ in 0..3 {
            if self.pack_branches(enter)? == 0 {
                break;
            }
            self.pack_leaf_runs(enter)?;
        }
        Ok(leaves)
    }

    /// Prunes and packs each run of leaves under one parent. Returns the
    /// leaves it went through.
    fn pack_leaf_runs<G>(&self, enter: &dyn Fn() -> Result<(G, Horizon)>) -> Result<u64> {
        // Every leaf, found from the branches (leaves are not read), and
        // where each parent's run of them begins.
        let (routes, runs) = self.slice(enter, "packing leaves", |_, _| {
            let height = self.root.read().place().1;
            let (leaves, runs) = (Cell::new(0), RefCell::new(Vec::new()));
            let routes = self.routes(false, |_, depth, page| match page {
                None => {
                    leaves.set(leaves.get() + 1);
                    true
                }
                // A parent's leaves come right after it in the walk.
                Some(_) if depth + 1 == height => {
                    runs.borrow_mut().push(leaves.get());
                    false
                }
                Some(_) => false,
            })?;
            Ok((routes, runs.into_inner()))
        })?;
        // Each leaf is made fresh (copied and pruned if the last checkpoint
        // wrote it) and marked for `tidy`, which packs the runs, a slice at
        // a time; each copy is followed by the write of the dirty pages the
        // cache handed back meanwhile (`tidy` writes them at its end): the
        // copies of a table larger than the cache are written as they go,
        // not held.
        for chunk in slices(&routes, &runs) {
            self.slice(enter, "packing leaves", |st, horizon| {
                for route in chunk {
                    let path = self.write_path(st, route, horizon)?;
                    if let Some((leaf, _)) = path.last() {
                        st.untidy.insert(leaf.pgno);
                    }
                    drop(path);
                    write_handed_back(&self.store.cache);
                }
                st.untidy_keys.extend_from_slice(chunk);
                let slack = self.store.file.image_len() / PACK_SLACK;
                self.tidy_leaving(st, horizon, slack, 0)?;
                self.changes
                    .fetch_add(chunk.len() as u64, Ordering::Relaxed);
                Ok(())
            })?;
        }
        Ok(routes.len() as u64)
    }

    /// Merges the children of each branch, where they are branches, into
    /// as few pages as hold them with a `PACK_SLACK`-th of each free. Level
    /// by level from the leaves' grandparents up, as the pages of a level
    /// are only as few as the level below them lets them be; each parent's
    /// children are packed apart, so the passes go on until one frees
    /// nothing (the second packs the lower levels under the merged upper
    /// ones). Returns the branch pages freed.
    fn pack_branches<G>(&self, enter: &dyn Fn() -> Result<(G, Horizon)>) -> Result<u64> {
        let mut freed = 0;
        loop {
            let mut pass = 0;
            let mut depth = self.root.read().place().1.saturating_sub(2);
            while depth >= 1 {
                let (routes, height) = self.slice(enter, "packing branches", |_, _| {
                    let height = self.root.read().place().1;
                    let routes = self.routes(false, |_, d, page| d == depth && page.is_some())?;
                    Ok((routes, height))
                })?;
                // A slice packs one branch's children (a few hundred pages
                // at most).
                for route in &routes {
                    pass += self.slice(enter, "packing branches", |st, horizon| {
                        // Writers between slices may have split the root
                        // or merged it away, and packing the root's
                        // children may drop it: then `depth` no longer
                        // names the level the routes were found at.
                        if self.root.read().place().1 != height {
                            return Ok(0);
                        }
                        self.pack_children(st, route, depth, horizon)
                    })?;
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

    /// How much of the file the tree uses and how much of it is live,
    /// estimated without reading every leaf (every branch read, and
    /// `LEAVES_SAMPLED` leaves spread over the tree standing for all of
    /// them; a key's versions running on into the next leaf are taken as
    /// live). For the idle vacuum. As the writer
    /// (holding `tree`, a few milliseconds): the walk finds pages by the
    /// numbers their parents hold, which a writer could free and reuse
    /// under it.
    pub(crate) fn estimate_use(&self) -> Result<TreeUse> {
        let st = self.tree.lock();
        let leaves = parking_lot::Mutex::new(Vec::new());
        let branches = parking_lot::Mutex::new(0u64);
        self.routes(false, |pgno, _, page| {
            match page {
                None => leaves.lock().push(pgno),
                Some(_) => *branches.lock() += 1,
            }
            false
        })?;
        let (leaves, branches) = (leaves.into_inner(), branches.into_inner());
        let image = self.store.file.image_len() as u64;
        let step = leaves.len().div_ceil(LEAVES_SAMPLED).max(1);
        let mut ctx = ReadContext::default();
        let mut sampled = 0u64;
        // Over the sampled leaves: bytes of live cells (the newest version
        // of a key, a put) with their slots, and overflow pages, all and
        // live.
        let (mut live, mut runs, mut live_runs) = (0u64, 0u64, 0u64);
        for &pgno in leaves.iter().step_by(step) {
            let frame = self.store.fetch(pgno, &mut ctx)?;
            let g = frame.read();
            let p = &g.image;
            let mut newest_of: Option<&[u8]> = None;
            for i in 0..page::count(p) {
                let Some(k) = ParsedKey::parse(page::ikey(p, i)) else {
                    return Err(self.store.file.corrupt(pgno, "a malformed internal key"));
                };
                let newest = newest_of != Some(k.user_key);
                newest_of = Some(k.user_key);
                let pages = match page::value(p, i) {
                    Value::Overflow { pages, .. } => u64::from(pages),
                    Value::Inline(_) => 0,
                };
                runs += pages;
                if newest && k.kind == Kind::Put {
                    live += (page::cell_bytes(p, i).len() + page::SLOT) as u64;
                    live_runs += pages;
                }
            }
            sampled += 1;
        }
        let scale = |n: u64| match sampled {
            0 => 0,
            s => n * leaves.len() as u64 / s,
        };
        Ok(TreeUse {
            file: st.space.page_count.saturating_sub(FIRST_DATA_PAGE) * image,
            tree: (leaves.len() as u64 + branches + scale(runs)) * image,
            live: scale(live) + (branches + scale(live_runs)) * image,
        })
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
    /// packed, to a free page before it where there is one, a slice at a
    /// time. Returns the pages moved.
    pub(crate) fn vacuum<G>(&self, enter: &dyn Fn() -> Result<(G, Horizon)>) -> Result<u64> {
        // The boundary, and every leaf's route (leaves are not read: each
        // slice reads its leaves, and the pages on the way to them, as
        // they are then).
        let (boundary, routes) = self.slice(enter, "moving pages", |st, _| {
            self.store.reclaim(&mut st.space);
            let in_use = st
                .space
                .page_count
                .saturating_sub(FIRST_DATA_PAGE + st.space.free_pages());
            let boundary = FIRST_DATA_PAGE + in_use;
            if boundary >= st.space.page_count {
                return Ok((boundary, Vec::new()));
            }
            Ok((boundary, self.routes(false, |_, _, page| page.is_none())?))
        })?;
        let mut moved = 0;
        for chunk in routes.chunks(SLICE_ROUTES) {
            moved += self.slice(enter, "moving pages", |st, horizon| {
                let mut moved = 0;
                for route in chunk {
                    if self.reaches_past(route, boundary)? {
                        moved += self.move_path(st, route, boundary, horizon)?;
                    }
                }
                self.changes.fetch_add(moved, Ordering::Relaxed);
                Ok(moved)
            })?;
        }
        Ok(moved)
    }

    /// Whether a page on the way to `route`'s leaf, or an overflow run of
    /// that leaf, lies at or past `boundary`. Under the writer's lock.
    fn reaches_past(&self, route: &[u8], boundary: u64) -> Result<bool> {
        let mut ctx = ReadContext::default();
        let (mut pgno, height) = self.root.read().place();
        for depth in 1..=height {
            if pgno >= boundary {
                return Ok(true);
            }
            let frame = self.store.fetch(pgno, &mut ctx)?;
            let g = frame.read();
            let p = &g.image;
            match page::kind(p) {
                page::KIND_BRANCH if depth < height => {
                    let pos = page::branch_position(p, KeyRef::of(route), &mut ctx.keys_compared);
                    pgno = page::child_at(p, pos);
                }
                page::KIND_LEAF if depth == height => {
                    return Ok((0..page::count(p))
                        .any(|i| run_past(page::value(p, i), boundary).is_some()));
                }
                _ => {
                    return Err(self
                        .store
                        .file
                        .corrupt(pgno, "tree is deeper than its height or not a tree page"))
                }
            }
        }
        Ok(false)
    }

    /// Copies every page on the way to `route`'s leaf that the last
    /// checkpoint wrote to the lowest free page (the page past `boundary`
    /// among them), and the leaf's overflow runs past it to lower free
    /// runs. Returns the pages moved.
    fn move_path(
        &self,
        st: &mut TreeState,
        route: &[u8],
        boundary: u64,
        horizon: &Horizon,
    ) -> Result<u64> {
        let mut ctx = ReadContext::default();
        let before = st.space.fresh.len();
        let path = self.write_path(st, route, horizon)?;
        let mut moved = (st.space.fresh.len() - before) as u64;
        let Some((leaf, _)) = path.last() else {
            return Ok(moved);
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
        Ok(moved)
    }
}

/// What `BtreeTable::estimate_use` finds, in bytes of page images.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TreeUse {
    /// The file's data pages.
    pub(crate) file: u64,
    /// The tree's pages: leaves, branches and overflow runs.
    pub(crate) tree: u64,
    /// What of them is live: the cells of each key's newest version where
    /// it is a put, with their overflow runs, and the branches counted
    /// full. Not versions newer ones hide, nor tombstones.
    pub(crate) live: u64,
}

/// Cuts `routes` into slices of at most `SLICE_ROUTES`, at the starts of
/// `runs` (the indexes where a parent's leaves begin) where it can: a
/// parent's run of leaves packed in two slices is packed in two parts, the
/// last page of the first partly empty. A run longer than a slice is cut
/// where it must be.
fn slices<'r>(routes: &'r [Vec<u8>], runs: &[usize]) -> Vec<&'r [Vec<u8>]> {
    // Where a slice may end: where a run begins, and at the end.
    let mut ends: Vec<usize> = runs
        .iter()
        .copied()
        .filter(|&i| i > 0 && i < routes.len())
        .collect();
    ends.push(routes.len());
    let (mut out, mut start, mut next) = (Vec::new(), 0, 0);
    while start < routes.len() {
        let mut cut = start;
        while next < ends.len() && ends[next] <= start + SLICE_ROUTES {
            cut = ends[next];
            next += 1;
        }
        if cut == start {
            cut = (start + SLICE_ROUTES).min(routes.len());
        }
        out.push(&routes[start..cut]);
        start = cut;
    }
    out
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

#[cfg(test)]
mod tests {
    use super::{slices, SLICE_ROUTES};

    #[test]
    fn slices_end_where_a_parents_run_of_leaves_begins_where_they_can() {
        let half = SLICE_ROUTES / 2;
        let quarter = SLICE_ROUTES / 4;
        let lens = [half, half, quarter, 2 * SLICE_ROUTES + 3, 1];
        let mut runs = vec![0];
        let mut total = 0;
        for len in lens {
            total += len;
            runs.push(total);
        }
        runs.pop();
        let routes: Vec<Vec<u8>> = (0..total).map(|i| i.to_be_bytes().to_vec()).collect();
        let cut: Vec<usize> = slices(&routes, &runs).iter().map(|s| s.len()).collect();
        // Two half runs make a slice; a quarter run does not fit with the
        // long run that follows, which is cut where it must be, its last 3
        // leaves sliced with the next run.
        assert_eq!(cut, [SLICE_ROUTES, quarter, SLICE_ROUTES, SLICE_ROUTES, 4]);
        assert_eq!(slices(&routes[..0], &[0]).len(), 0);
        assert_eq!(slices(&routes[..5], &[]), [&routes[..5]]);
    }
}
