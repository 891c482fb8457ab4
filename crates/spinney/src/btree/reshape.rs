//! Reshaping a B-tree: splitting a full leaf (and its ancestors), merging
//! a small leaf with a sibling, packing the leaves a commit group split
//! (`tidy`), and pruning the versions no reader can see (`prune`,
//! `versions_kept`).
//!
//! Invariants: a split, merge or packing takes the `root` lock for
//! writing (`RootCell::write`: descents starting meanwhile wait, and those
//! that started before it start over) and then the write latches of the
//! whole path, top-down (each changing its frame's version), and
//! holds them while it moves cells, so a reader sees the pages before or
//! after, never between. A key's versions stay in one leaf unless they fill
//! more than a page. A version stays while some reader may see it
//! (`mvcc::Horizon`); the overflow runs of dropped versions are freed.
//!
//! Thread-safety: the writer's (it holds `tree`); readers go on beside it,
//! under the latches.

use std::sync::Arc;

use super::page;
use super::store::{write_handed_back, Frame, WriteGuard};
use super::TreeState;
use super::{BtreeTable, Root};
use crate::error::Result;
use crate::mvcc::key::{self, internal_key, KeyRef, Kind, ParsedKey, KIND_SEEK, SEQNO_MAX};
use crate::mvcc::Horizon;
use crate::read_context::ReadContext;

/// `tidy` packs a run of leaves a group split only when pruning them drops
/// at least 1/UNTIDY_SHARE of a page from the leaves the group split (not
/// counting a neighbour taken in; a dropped value's overflow run counts
/// whole). Leaves a range delete marked are always packed. A leaf full of
/// live data that a new key splits holds one hidden version, the written
/// key's previous one; packed full again, it split at the next new key.
/// Packing every split, a random overwrite of 2M keys (whose leaves fill
/// with keys fillrandom missed) split and packed the same leaves 32,000
/// times, a tenth of the writer's time; with this share none, the tree as
/// full (79%), the overwrite 10-14% faster. A rewrite in large groups
/// still packs: its split leaves hold a dead version of most keys.
const UNTIDY_SHARE: usize = 8;

impl BtreeTable {
    /// Drops the versions of a leaf that no reader can see (`Horizon`), and
    /// frees their overflow runs.
    pub(super) fn prune(&self, st: &mut TreeState, p: &mut [u8], horizon: &Horizon) {
        self.prune_after(st, p, horizon, None);
    }

    /// `prune`, for a leaf whose first versions go on from the previous
    /// leaf, where `newer` is the (user key, seqno) of the last version
    /// there: the first group's newest version is then weighed against it
    /// instead of being kept as the newest.
    fn prune_after(
        &self,
        st: &mut TreeState,
        p: &mut [u8],
        horizon: &Horizon,
        newer_before: Option<(&[u8], u64)>,
    ) {
        let n = page::count(p);
        let keep = {
            let ikeys: Vec<&[u8]> = (0..n).map(|i| page::ikey(p, i)).collect();
            versions_kept(&ikeys, horizon, newer_before)
        };
        if keep.iter().all(|&k| k) {
            return;
        }
        for (v, _) in keep.iter().enumerate().filter(|(_, &k)| !k) {
            self.release_value(st, page::value(p, v));
        }
        // The page is rebuilt from a copy of itself (one buffer the writer
        // keeps, not a vector per cell).
        let mut copy = std::mem::take(&mut st.scratch);
        copy.clear();
        copy.extend_from_slice(p);
        let cells: Vec<&[u8]> = keep
            .iter()
            .enumerate()
            .filter(|(_, &k)| k)
            .map(|(v, _)| page::cell_bytes(&copy, v))
            .collect();
        page::rebuild(p, &cells);
        drop(cells);
        st.scratch = copy;
    }

    /// A key whose versions fill more than a leaf goes on in the next
    /// leaves, which writes to the key never reach: after a write to it,
    /// prune those leaves too, one after the other, each weighed against
    /// the last version before it. `seqno` is the last version in the
    /// leaf just written.
    pub(super) fn prune_continuation(
        &self,
        st: &mut TreeState,
        user_key: &[u8],
        mut seqno: u64,
        horizon: &Horizon,
    ) -> Result<()> {
        // Bounded: each step moves to an older version; a key has at most
        // as many leaves of versions as there are live snapshots to pin them.
        for _ in 0..1024 {
            if seqno == 0 {
                break;
            }
            let target = internal_key(user_key, seqno - 1, KIND_SEEK);
            let path = self.write_path(st, &target, horizon)?;
            let Some((leaf, _)) = path.last() else {
                break;
            };
            let mut g = leaf.write();
            let first = (page::count(&g.image) > 0)
                .then(|| ParsedKey::parse(page::ikey(&g.image, 0)))
                .flatten();
            if !first.is_some_and(|k| k.user_key == user_key && k.seqno < seqno) {
                break;
            }
            // Where this leaf's versions end, before pruning may empty it.
            let last = last_version(&g.image);
            self.prune_after(st, &mut g.image, horizon, Some((user_key, seqno)));
            st.space.changed(leaf.pgno, &g);
            let small = page::used(&g.image) < g.image.len() / 4;
            drop(g);
            if small && path.len() > 1 {
                self.merge(st, &path, horizon)?;
            }
            match last {
                Some((k, s)) if k.as_slice() == user_key && s < seqno => seqno = s,
                _ => break,
            }
        }
        Ok(())
    }

    /// Splits the full leaf at the end of `path` around the new `cell`, and
    /// its ancestors as needed, with the whole path write-latched.
    pub(super) fn split(
        &self,
        st: &mut TreeState,
        path: &[(Arc<Frame>, usize)],
        ik: &[u8],
        cell: Vec<u8>,
    ) -> Result<()> {
        let mut root = self.root.write();
        let mut guards: Vec<WriteGuard> = path.iter().map(|(f, _)| f.write()).collect();
        let mut carry: Option<(Vec<u8>, u64)> = None;
        for level in (0..guards.len()).rev() {
            let (Some(g), Some((frame, _))) = (guards.get_mut(level), path.get(level)) else {
                break;
            };
            st.space.changed(frame.pgno, g);
            let this_pgno = frame.pgno;
            let p = &mut g.image;
            let is_leaf = page::kind(p) == page::KIND_LEAF;
            let mut unused = 0;
            let (pos, new_cell) = if is_leaf {
                (
                    page::lower_bound(p, KeyRef::of(ik), &mut unused),
                    cell.clone(),
                )
            } else {
                let Some((sep, right)) = carry.take() else {
                    break;
                };
                let child_pos = path.get(level + 1).map_or(0, |(_, pos)| *pos);
                (child_pos, page::branch_cell(&sep, right))
            };
            if !is_leaf && page::insert(p, pos, &new_cell) {
                return Ok(());
            }
            // One copy of the page, whose cells the halves are rebuilt from.
            let src = p.to_vec();
            let mut cells: Vec<&[u8]> = (0..page::count(&src))
                .map(|i| page::cell_bytes(&src, i))
                .collect();
            cells.insert(pos, &new_cell);
            let right_pgno = self.store.alloc_page(&mut st.space);
            let mut right = vec![0u8; p.len()];
            let sep = if is_leaf {
                let m = leaf_split_point(&cells, pos + 1 == cells.len(), p.len() - page::HEADER);
                let (left, right_cells) = cells.split_at(m);
                // A split full of versions that publishing the group makes
                // invisible: `tidy` packs the halves again once it is
                // published.
                let repeated = cells.windows(2).any(|w| {
                    key::user_key(cell_key(w[0], true)) == key::user_key(cell_key(w[1], true))
                });
                if repeated {
                    st.untidy.insert(this_pgno);
                    st.untidy.insert(right_pgno);
                    st.untidy_keys.push(ik.to_vec());
                }
                page::init(&mut right, page::KIND_LEAF, 0);
                page::rebuild(&mut right, right_cells);
                page::rebuild(p, left);
                let last = left.last().map(|c| cell_key(c, true)).unwrap_or_default();
                let first = right_cells
                    .first()
                    .map(|c| cell_key(c, true))
                    .unwrap_or_default();
                separator(last, first)
            } else {
                // The middle cell moves up; its child leads the right page.
                // Appending (the new cell is the last): leave the left page
                // full and start the right one, as for leaves (the left
                // keeps cells of the page, so it fits). Otherwise the middle
                // by bytes, not by count: separators differ in length (up to
                // a quarter page), and halving the count put more than a
                // page of long separators on one side, where `page::rebuild`
                // dropped the cells that did not fit, and with them whole
                // subtrees.
                let m = if pos + 1 == cells.len() && cells.len() >= 3 {
                    cells.len() - 2
                } else {
                    let total: usize = cells.iter().map(|c| c.len()).sum();
                    let mut acc = 0;
                    let mut m = cells.len() / 2;
                    for (i, c) in cells.iter().enumerate() {
                        acc += c.len();
                        if acc >= total / 2 {
                            m = i.min(cells.len().saturating_sub(2)).max(1);
                            break;
                        }
                    }
                    m
                };
                let mid = cells.get(m).cloned().unwrap_or_default();
                page::init(&mut right, page::KIND_BRANCH, page::u64_at(mid, 2));
                page::rebuild(&mut right, cells.get(m + 1..).unwrap_or(&[]));
                page::rebuild(p, cells.get(..m).unwrap_or(&[]));
                cell_key(mid, false).to_vec()
            };
            self.store.install_page(&mut st.space, right_pgno, right);
            carry = Some((sep, right_pgno));
        }
        if let Some((sep, right)) = carry {
            // The root split: a new root over the two halves.
            let pgno = self.store.alloc_page(&mut st.space);
            let mut image = vec![0u8; self.store.file.image_len()];
            page::init(&mut image, page::KIND_BRANCH, root.pgno);
            page::insert(&mut image, 0, &page::branch_cell(&sep, right));
            self.store.install_page(&mut st.space, pgno, image);
            *root = Root::new(pgno, root.height + 1);
        }
        Ok(())
    }

    /// Merges the small leaf at the end of `path` with a sibling when both
    /// fit in three quarters of a page; removes a root left with one child.
    pub(super) fn merge(
        &self,
        st: &mut TreeState,
        path: &[(Arc<Frame>, usize)],
        horizon: &Horizon,
    ) -> Result<()> {
        let (Some((parent, _)), Some((_, pos))) = (path.get(path.len() - 2), path.last()) else {
            return Ok(());
        };
        let pos = *pos;
        let n = page::count(&parent.read().image);
        if n == 0 {
            return Ok(());
        }
        // Merge the pair (left, right) = (pos-1, pos) or (pos, pos+1).
        let left_pos = if pos > 0 { pos - 1 } else { 0 };
        let mut ctx = ReadContext::default();
        let (left_pgno, right_pgno) = {
            let g = parent.read();
            (
                page::child_at(&g.image, left_pos),
                page::child_at(&g.image, left_pos + 1),
            )
        };
        let mut left = self.store.fetch(left_pgno, &mut ctx)?;
        let right = self.store.fetch(right_pgno, &mut ctx)?;
        let limit = self.store.file.image_len() * 3 / 4;
        // Whether the pair fits, before copying or latching anything: a
        // small leaf is most often a new one that a split of an ordered
        // load left, beside a full one. (Copying the left page only prunes
        // it, so a pair that does not fit now does not fit after.)
        let fits = |l: &[u8], r: &[u8]| {
            page::kind(l) == page::KIND_LEAF
                && page::kind(r) == page::KIND_LEAF
                && page::used(l) + page::used(r) <= limit
        };
        if !fits(&left.read().image, &right.read().image) {
            return Ok(());
        }
        if !st.space.fresh.contains(&left_pgno) {
            left = self.copy_page(st, &left, Some(parent), left_pos, horizon)?;
        }
        let mut root = self.root.write();
        let mut guards: Vec<WriteGuard> = path
            .iter()
            .take(path.len() - 1)
            .map(|(f, _)| f.write())
            .collect();
        let mut lg = left.write();
        let rg = right.write();
        if !fits(&lg.image, &rg.image) {
            return Ok(());
        }
        let mut cells: Vec<Vec<u8>> = (0..page::count(&lg.image))
            .map(|i| page::cell_bytes(&lg.image, i).to_vec())
            .collect();
        cells.extend((0..page::count(&rg.image)).map(|i| page::cell_bytes(&rg.image, i).to_vec()));
        page::rebuild(&mut lg.image, &cells);
        st.space.changed(left.pgno, &lg);
        let Some(pg) = guards.last_mut() else {
            return Ok(());
        };
        // Drop the separator of the right page (cell left_pos).
        page::remove(&mut pg.image, left_pos);
        st.space.changed(parent.pgno, pg);
        drop(rg);
        self.forget_page(st, right_pgno);
        self.collapse_root(st, &mut root, guards);
        Ok(())
    }

    /// After a merge or a packing under the parent at the end of `guards`
    /// (the write-latched path above the leaves): a root branch left with
    /// a single child is replaced by that child, and the tree loses a level.
    pub(super) fn collapse_root(
        &self,
        st: &mut TreeState,
        root: &mut Root,
        guards: Vec<WriteGuard>,
    ) {
        let collapse = match guards.first() {
            Some(rootg)
                if guards.len() == 1 && root.height > 1 && page::count(&rootg.image) == 0 =>
            {
                Some((root.pgno, page::link(&rootg.image)))
            }
            _ => None,
        };
        drop(guards);
        if let Some((old, child)) = collapse {
            *root = Root::new(child, root.height - 1);
            self.forget_page(st, old);
        }
    }

    /// Packs, once a commit group is published (`horizon` sees it), the
    /// leaves it split while they held versions its publication hides.
    /// Rewriting a whole leaf in one group needs room for two versions of
    /// each key, so the leaf splits; once the group is visible the older
    /// versions are not, and the pieces are pruned and packed back into as
    /// few pages as hold them. Without this, a workload that rewrites keys
    /// in order in large batches leaves the tree half empty for good.
    pub(crate) fn tidy(&self, st: &mut TreeState, horizon: &Horizon) -> Result<()> {
        let worth = if std::mem::take(&mut st.range_deleted) {
            0
        } else {
            self.store.file.image_len() / UNTIDY_SHARE
        };
        self.tidy_leaving(st, horizon, 0, worth)
    }

    /// `tidy`, leaving `slack` bytes of each packed page free, and packing
    /// a run only where pruning drops at least `worth` bytes from its
    /// untidy leaves (0: every run).
    pub(super) fn tidy_leaving(
        &self,
        st: &mut TreeState,
        horizon: &Horizon,
        slack: usize,
        worth: usize,
    ) -> Result<()> {
        if st.untidy_keys.is_empty() {
            return Ok(());
        }
        self.check_failed()?;
        let mut keys = std::mem::take(&mut st.untidy_keys);
        keys.sort_unstable();
        keys.dedup();
        let packed = keys
            .iter()
            .try_for_each(|ik| self.repack(st, ik, horizon, slack, worth));
        st.untidy.clear();
        write_handed_back(&self.store.cache);
        packed.inspect_err(|e| self.store.file.fail(&format!("packing leaves failed: {e}")))
    }

    /// Prunes and packs the run of untidy leaves around the leaf of `ik`,
    /// under one parent (see `tidy`), leaving `slack` bytes of each page
    /// free, if pruning drops at least `worth` bytes from them.
    fn repack(
        &self,
        st: &mut TreeState,
        ik: &[u8],
        horizon: &Horizon,
        slack: usize,
        worth: usize,
    ) -> Result<()> {
        let path = self.write_path(st, ik, horizon)?;
        let Some((leaf, pos)) = path.last() else {
            return Ok(());
        };
        let pos = *pos;
        if !st.untidy.contains(&leaf.pgno) {
            return Ok(());
        }
        let Some((parent, _)) = path.len().checked_sub(2).and_then(|i| path.get(i)) else {
            // The root is a leaf: prune it where it is.
            let mut g = leaf.write();
            self.prune(st, &mut g.image, horizon);
            st.space.changed(leaf.pgno, &g);
            st.untidy.remove(&leaf.pgno);
            return Ok(());
        };
        let (lo, children, before, taken_in) = {
            let g = parent.read();
            let n = page::count(&g.image);
            let untidy = |i: usize| {
                let c = page::child_at(&g.image, i);
                st.untidy.contains(&c) && st.space.fresh.contains(&c)
            };
            let mut lo = pos;
            while lo > 0 && untidy(lo - 1) {
                lo -= 1;
            }
            // A leaf this epoch wrote just before the run is taken in: it is
            // often the partly empty last page of the run packed before.
            let taken_in = lo > 0 && st.space.fresh.contains(&page::child_at(&g.image, lo - 1));
            if taken_in {
                lo -= 1;
            }
            let mut hi = pos;
            while hi < n && untidy(hi + 1) {
                hi += 1;
            }
            let children: Vec<u64> = (lo..=hi).map(|i| page::child_at(&g.image, i)).collect();
            let before = lo.checked_sub(1).map(|i| page::child_at(&g.image, i));
            (lo, children, before, taken_in)
        };
        for c in &children {
            st.untidy.remove(c);
        }
        let mut ctx = ReadContext::default();
        let frames = children
            .iter()
            .map(|&c| self.store.fetch(c, &mut ctx))
            .collect::<Result<Vec<_>>>()?;
        // The last version in the leaf before the run: a key's versions may
        // begin there. (Before a run that starts a parent's children it is
        // not looked up; pruning then keeps a little more than it could.)
        let newer_before = match before {
            Some(c) => last_version(&self.store.fetch(c, &mut ctx)?.read().image),
            None => None,
        };

        let mut root = self.root.write();
        let mut guards: Vec<WriteGuard> = path
            .iter()
            .take(path.len() - 1)
            .map(|(f, _)| f.write())
            .collect();
        let mut leaves: Vec<WriteGuard> = frames.iter().map(|f| f.write()).collect();
        if leaves
            .iter()
            .any(|g| page::kind(&g.image) != page::KIND_LEAF)
        {
            return Ok(());
        }
        // The run's cells, copied into one buffer the writer keeps (the
        // leaves are rebuilt in place from it).
        let mut copy = std::mem::take(&mut st.scratch);
        copy.clear();
        let mut spans = Vec::new();
        for g in &leaves {
            for i in 0..page::count(&g.image) {
                let c = page::cell_bytes(&g.image, i);
                spans.push(copy.len()..copy.len() + c.len());
                copy.extend_from_slice(c);
            }
        }
        let cells: Vec<&[u8]> = spans
            .iter()
            .map(|r| copy.get(r.clone()).unwrap_or_default())
            .collect();
        let keep = {
            let ikeys: Vec<&[u8]> = cells.iter().map(|c| cell_key(c, true)).collect();
            let newer_before = newer_before.as_ref().map(|(k, s)| (k.as_slice(), *s));
            versions_kept(&ikeys, horizon, newer_before)
        };
        let (mut kept, mut dropped) = (Vec::with_capacity(cells.len()), Vec::new());
        let mut kept_per_leaf = vec![0usize; leaves.len()];
        let mut hidden = 0;
        let leaf_of = leaves
            .iter()
            .enumerate()
            .flat_map(|(l, g)| std::iter::repeat_n(l, page::count(&g.image)));
        for ((c, k), l) in cells.into_iter().zip(keep).zip(leaf_of) {
            if k {
                kept.push(c);
                if let Some(n) = kept_per_leaf.get_mut(l) {
                    *n += 1;
                }
            } else {
                if l > 0 || !taken_in {
                    hidden += c.len() + page::SLOT;
                    if let page::Value::Overflow { pages, .. } = page::cell_value(c) {
                        hidden += pages as usize * self.store.file.page_size;
                    }
                }
                dropped.push(c);
            }
        }
        if hidden < worth {
            // Not worth a packing (see `UNTIDY_SHARE`): the leaves stay as
            // they are, and drop those versions when they next fill.
            drop((kept, dropped));
            st.scratch = copy;
            return Ok(());
        }
        let room = (self.store.file.image_len() - page::HEADER).saturating_sub(slack);
        let cuts = match pack(&kept, room, leaves.len()) {
            Some(cuts) => cuts,
            // Pruned where they are, unless that empties one.
            None if kept_per_leaf.iter().all(|&n| n > 0) => {
                let mut cuts = vec![0];
                for n in &kept_per_leaf {
                    cuts.push(cuts.last().copied().unwrap_or(0) + n);
                }
                cuts
            }
            None => return Ok(()),
        };
        // The parent: the run's separators replaced by the new pages'.
        let Some(pg) = guards.last_mut() else {
            return Ok(());
        };
        let mut parent_cells: Vec<Vec<u8>> = (0..page::count(&pg.image))
            .map(|i| page::cell_bytes(&pg.image, i).to_vec())
            .collect();
        let new_separators = cuts.windows(3).zip(&children[1..]).map(|(w, &child)| {
            let last = kept
                .get(w[1] - 1)
                .map(|c| cell_key(c, true))
                .unwrap_or_default();
            let first = kept
                .get(w[1])
                .map(|c| cell_key(c, true))
                .unwrap_or_default();
            page::branch_cell(&separator(last, first), child)
        });
        let run_separators = lo..lo + children.len() - 1;
        parent_cells.splice(run_separators, new_separators);
        let bytes: usize = parent_cells.iter().map(|c| c.len() + page::SLOT).sum();
        if bytes > room {
            return Ok(());
        }
        page::rebuild(&mut pg.image, &parent_cells);
        st.space.changed(parent.pgno, pg);
        for ((g, w), f) in leaves.iter_mut().zip(cuts.windows(2)).zip(&frames) {
            page::rebuild(&mut g.image, &kept[w[0]..w[1]]);
            st.space.changed(f.pgno, g);
        }
        let used = cuts.len() - 1;
        drop(leaves);
        for &c in &children[used..] {
            self.forget_page(st, c);
        }
        for c in &dropped {
            self.release_value(st, page::cell_value(c));
        }
        drop((kept, dropped));
        st.scratch = copy;
        self.collapse_root(st, &mut root, guards);
        Ok(())
    }
}

/// Which versions of a leaf (or of a run of adjacent leaves), given by
/// their internal keys in order, a reader can still see (`Horizon`). A
/// version is kept while it is the newest at or below some live snapshot
/// or the visible seqno, or is the newest of its key not yet visible.
/// `newer_before` is the (user key, seqno) of the last version before the
/// first one, when that key's versions begin in an earlier leaf: the first
/// group's newest version is then weighed against it instead of being kept
/// as the newest.
fn versions_kept(
    ikeys: &[&[u8]],
    horizon: &Horizon,
    newer_before: Option<(&[u8], u64)>,
) -> Vec<bool> {
    let n = ikeys.len();
    let mut keep = vec![true; n];
    let mut i = 0;
    while i < n {
        let uk = key::user_key(ikeys[i]);
        let mut j = i;
        while j < n && key::user_key(ikeys[j]) == uk {
            j += 1;
        }
        // Versions i..j, newest first.
        let mut newer = match newer_before {
            Some((k, seqno)) if i == 0 && k == uk => seqno,
            _ => u64::MAX,
        };
        for v in i..j {
            let seqno = ParsedKey::parse(ikeys[v]).map_or(u64::MAX, |k| k.seqno);
            keep[v] = horizon.needed(seqno, newer);
            newer = seqno;
        }
        // A tombstone that is the oldest version kept hides nothing,
        // unless older versions of its key may go on in the next leaf (a
        // key whose versions fill more than a page is split between
        // leaves): a group that reaches the end keeps it. It goes only
        // below every reader, as the LSM's does: while a snapshot older
        // than it lives, it is the record that its key was written after
        // that snapshot, which a transaction's commit check asks for.
        if j < n {
            for v in (i..j).rev() {
                if !keep[v] {
                    continue;
                }
                match ParsedKey::parse(ikeys[v]) {
                    Some(k) if k.kind == Kind::Delete && horizon.tombstone_droppable(k.seqno) => {
                        keep[v] = false;
                    }
                    _ => break,
                }
            }
        }
        i = j;
    }
    keep
}

/// The key of a leaf's last cell, parsed.
pub(super) fn last_key(p: &[u8]) -> Option<ParsedKey<'_>> {
    ParsedKey::parse(page::ikey(p, page::count(p).checked_sub(1)?))
}

/// The user key and seqno of a leaf's last cell.
pub(super) fn last_version(p: &[u8]) -> Option<(Vec<u8>, u64)> {
    last_key(p).map(|k| (k.user_key.to_vec(), k.seqno))
}

/// The key of a raw cell.
fn cell_key(c: &[u8], leaf: bool) -> &[u8] {
    let kind = if leaf {
        page::KIND_LEAF
    } else {
        page::KIND_BRANCH
    };
    page::cell_key(c, kind)
}

/// The bytes a page spends on `cells` (each cell and its slot)
/// before each position: `cells.len() + 1` sums, from 0 to the total.
fn bytes_before<C: AsRef<[u8]>>(cells: &[C]) -> Vec<usize> {
    let mut before = Vec::with_capacity(cells.len() + 1);
    before.push(0usize);
    for c in cells {
        before.push(before.last().copied().unwrap_or(0) + c.as_ref().len() + page::SLOT);
    }
    before
}

/// Whether the leaf cells at `i - 1` and `i` (`0 < i < cells.len()`) hold
/// different user keys: a place a leaf may be cut without splitting one
/// key's versions.
fn user_key_changes_at<C: AsRef<[u8]>>(cells: &[C], i: usize) -> bool {
    key::user_key(cell_key(cells[i - 1].as_ref(), true))
        != key::user_key(cell_key(cells[i].as_ref(), true))
}

/// Where to split a leaf's cells: near half of the bytes, at a change of
/// user key if there is one, so that a key's versions stay in one leaf.
/// When the new cell is the last one (`append`: keys arriving in order),
/// near the end instead, so that a sequential load leaves full pages
/// behind rather than half-full ones.
/// `room` is what a page holds for cells and their slots.
fn leaf_split_point<C: AsRef<[u8]>>(cells: &[C], append: bool, room: usize) -> usize {
    let total: usize = cells.iter().map(|c| c.as_ref().len()).sum();
    let mut acc = 0;
    let mut mid = 1;
    let goal = if append {
        total - total / 16
    } else {
        total / 2
    };
    for (i, c) in cells.iter().enumerate() {
        acc += c.as_ref().len();
        if acc >= goal {
            mid = (i + 1).clamp(1, cells.len() - 1);
            break;
        }
    }
    // Bytes (cells and slots) before each position. A change of user key
    // far from the middle would leave one half larger than a page, and
    // `page::rebuild` would silently drop the cells that do not fit (a
    // key's many versions, pinned by snapshots or written in one batch,
    // lost versions that way): such a boundary is not taken.
    let before = bytes_before(cells);
    let all = before.last().copied().unwrap_or(0);
    let fits = |i: usize| {
        let left = before.get(i).copied().unwrap_or(all);
        left <= room && all - left <= room
    };
    let boundary = |i: usize| i > 0 && i < cells.len() && user_key_changes_at(cells, i) && fits(i);
    for d in 0..cells.len() {
        if boundary(mid + d) {
            return mid + d;
        }
        if d <= mid && boundary(mid - d) {
            return mid - d;
        }
    }
    mid
}

/// Where to cut `cells` (a run of `pages` leaves' cells, pruned) into
/// fewer pages: the cut positions, from 0 to `cells.len()`, or None when
/// the run cannot be packed into fewer pages than it has. Pages are filled
/// up, at a change of user key within the last few cells if there is one;
/// the run's last page may be partly empty (the run packed after it, if
/// one follows in the same group, takes it in). But a run that fits in one
/// page only more than 15/16 full is cut in two halves instead, so that a
/// page of live data one write from full is not split and packed again by
/// every write to it.
fn pack<C: AsRef<[u8]>>(cells: &[C], room: usize, pages: usize) -> Option<Vec<usize>> {
    let before = bytes_before(cells);
    let total = before.last().copied().unwrap_or(0);
    let mut cuts = vec![0usize];
    if cells.len() >= 2 && total <= room && total > room / 16 * 15 {
        let half = before
            .partition_point(|&b| b < total / 2)
            .clamp(1, cells.len() - 1);
        cuts.push(half);
    } else {
        let mut start = 0;
        while total - before[start] > room {
            // The last cut that fits, or a change of user key just before it.
            let mut i = start + 1;
            while i < cells.len() && before[i + 1] - before[start] <= room {
                i += 1;
            }
            let cut = (i.saturating_sub(4).max(start + 1)..=i)
                .rev()
                .find(|&j| user_key_changes_at(cells, j))
                .unwrap_or(i);
            cuts.push(cut);
            start = cut;
        }
    }
    cuts.push(cells.len());
    (cuts.len() - 1 < pages).then_some(cuts)
}

/// The separator between two adjacent leaves: the shortest user-key prefix
/// of `first` above `last`'s user key, as the smallest internal key of that
/// prefix; or, within one user key, `first` itself.
fn separator(last: &[u8], first: &[u8]) -> Vec<u8> {
    let (a, b) = (key::user_key(last), key::user_key(first));
    if a == b {
        return first.to_vec();
    }
    let common = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let prefix = b.get(..(common + 1).min(b.len())).unwrap_or(b);
    internal_key(prefix, SEQNO_MAX, KIND_SEEK)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::btree::page::Value;

    #[test]
    fn separators_are_short_and_between() {
        let a = internal_key(b"apple", 3, Kind::Put);
        let b = internal_key(b"apricot", 9, Kind::Put);
        let s = separator(&a, &b);
        assert_eq!(key::user_key(&s), b"apr");
        assert!(key::compare(&a, &s).is_lt() && key::compare(&s, &b).is_le());
        let b2 = internal_key(b"apple", 1, Kind::Put);
        assert_eq!(separator(&a, &b2), b2);
    }

    fn cells_of(keys: &[(&str, u64)], value: usize) -> Vec<Vec<u8>> {
        keys.iter()
            .map(|&(k, seqno)| {
                let ik = internal_key(k.as_bytes(), seqno, Kind::Put);
                page::leaf_cell(&ik, Value::Inline(&vec![b'v'; value]))
            })
            .collect()
    }

    fn page_bytes(cells: &[Vec<u8>]) -> usize {
        cells.iter().map(|c| c.len() + page::SLOT).sum()
    }

    #[test]
    fn a_run_packs_into_full_pages_cut_between_keys() {
        // Goal: `pack` puts a run's cells into as few pages as hold them,
        // each within the page, cutting between user keys when one is near.
        let names: Vec<String> = (0..100).map(|i| format!("key{i:03}")).collect();
        let mut keys: Vec<(&str, u64)> = names.iter().map(|n| (n.as_str(), 5)).collect();
        // Two versions of key050: a cut should not fall between them.
        keys.insert(51, ("key050", 4));
        let cells = cells_of(&keys, 100);
        let room = 4096 - crate::btree::format::DISK_HEADER - page::HEADER;
        let cuts = pack(&cells, room, 6).expect("fewer pages");
        assert_eq!(cuts.first(), Some(&0));
        assert_eq!(cuts.last(), Some(&cells.len()));
        assert_eq!(cuts.len() - 1, page_bytes(&cells).div_ceil(room));
        for w in cuts.windows(2) {
            assert!(
                w[0] < w[1] && page_bytes(&cells[w[0]..w[1]]) <= room,
                "{cuts:?}"
            );
            assert!(
                w[1] == cells.len() || w[1] != 51,
                "cut inside a key: {cuts:?}"
            );
        }
        // Already as few pages as it can be: left alone.
        assert_eq!(pack(&cells, room, cuts.len() - 1), None);
    }

    #[test]
    fn a_run_that_would_fill_one_page_is_cut_in_two() {
        // Goal: a run that fits one page only more than 15/16 full becomes
        // two half pages (or stays as it is, if it is two pages already),
        // so that the next write to it does not split it again at once.
        let room = 4096 - crate::btree::format::DISK_HEADER - page::HEADER;
        let names: Vec<String> = (0..100).map(|i| format!("key{i:03}")).collect();
        let keys: Vec<(&str, u64)> = names.iter().map(|n| (n.as_str(), 5)).collect();
        let per = cells_of(&keys[..1], 100)[0].len() + page::SLOT;
        let n = room / per;
        let cells = cells_of(&keys[..n], 100);
        assert!(page_bytes(&cells) > room / 16 * 15);
        assert_eq!(pack(&cells, room, 2), None);
        let cuts = pack(&cells, room, 3).expect("two pages");
        assert_eq!(cuts.len(), 3);
        assert!(cuts[1].abs_diff(n / 2) <= 1, "{cuts:?}");
        let few = cells_of(&keys[..n / 2], 100);
        assert_eq!(pack(&few, room, 2), Some(vec![0, few.len()]));
    }

    fn key(i: u32) -> String {
        format!("key{i:06}")
    }

    /// Puts `keys` in one group at `seqno`, values of `len` bytes of
    /// `seqno` (the group published only after it: its versions hide the
    /// older ones from readers only then), and tidies once it is.
    fn put_group(table: &BtreeTable, seqno: u64, keys: impl IntoIterator<Item = u32>, len: usize) {
        let mut st = table.writer();
        let during = Horizon::no_readers(seqno - 1);
        for i in keys {
            let value = vec![seqno as u8; len];
            table
                .apply(
                    &mut st,
                    seqno,
                    Kind::Put,
                    key(i).as_bytes(),
                    &value,
                    &during,
                )
                .expect("apply");
        }
        table
            .tidy(&mut st, &Horizon::no_readers(seqno))
            .expect("tidy");
    }

    #[test]
    fn tidy_packs_leaves_full_of_hidden_versions_not_a_leaf_split_by_one() {
        // Goal: once a group is published, `tidy` packs the leaves it split
        // while they held versions it hid (a rewrite in one large group
        // would otherwise leave the tree twice its size), but not a leaf of
        // live data that one new version split: packed full again, it
        // would split at the next write to it (`UNTIDY_SHARE`).
        // Method: 3,000 keys put in one group (seqno 1), then all put again
        // in one group (seqno 2, published only after it): the rewrite
        // splits leaves full of versions, and `tidy` brings the leaf count
        // back to the first load's. Then one key in the middle of the
        // packed (full) leaves put again (seqno 3): its leaf splits, and
        // stays split (packed with the leaf before it, the first rule made
        // two full leaves of the three again).
        let dir = tempfile::tempdir().expect("tempdir");
        let table = crate::btree::scratch_table(dir.path(), 4096, 0);
        let leaves = || table.shape().expect("shape").leaf_pages;
        put_group(&table, 1, 0..3000, 100);
        let loaded = leaves();
        put_group(&table, 2, 0..3000, 100);
        let rewritten = leaves();
        assert!(
            rewritten <= loaded + 1,
            "the rewrite's split leaves were not packed: {loaded} leaves, then {rewritten}"
        );
        assert_eq!(table.shape().expect("shape").entries, 3000);
        put_group(&table, 3, [1500], 100);
        assert_eq!(
            leaves(),
            rewritten + 1,
            "a leaf split by one version was packed again"
        );
        let mut got = Vec::new();
        let visible = std::sync::atomic::AtomicU64::new(3);
        for i in [0, 1499, 1500, 1501, 2999] {
            got.clear();
            table
                .get(key(i).as_bytes(), None, &visible, &mut got)
                .expect("get");
            assert_eq!(got, [if i == 1500 { 3 } else { 2 }; 100], "key {i}");
        }
    }

    #[test]
    fn tidy_weighs_the_overflow_runs_a_packing_would_free() {
        // Goal: the versions a split leaf hides are weighed with their
        // overflow runs (`UNTIDY_SHARE`): a few large values rewritten in
        // one group are packed away once it is published, though their
        // cells are a few dozen bytes each.
        // Method: 1,000 keys with 5,000-byte values (two overflow pages
        // each, 4 KiB pages) put, then all put again in one group (the
        // leaves packed full); then 10 keys of one leaf put again in one
        // group (seqno 3): that leaf splits with 10 hidden versions, 410
        // bytes of cells and 80 KiB of overflow pages. Once tidied, the
        // tree holds one version per key.
        let dir = tempfile::tempdir().expect("tempdir");
        let table = crate::btree::scratch_table(dir.path(), 4096, 0);
        put_group(&table, 1, 0..1000, 5000);
        put_group(&table, 2, 0..1000, 5000);
        assert_eq!(table.shape().expect("shape").entries, 1000);
        let leaves = table.shape().expect("shape").leaf_pages;
        put_group(&table, 3, 500..510, 5000);
        let s = table.shape().expect("shape");
        assert!(s.leaf_pages <= leaves + 1, "{s:?}");
        assert_eq!(s.entries, 1000, "hidden versions were left: {s:?}");
        let mut got = Vec::new();
        let visible = std::sync::atomic::AtomicU64::new(3);
        for i in [499, 500, 509, 510] {
            got.clear();
            table
                .get(key(i).as_bytes(), None, &visible, &mut got)
                .expect("get");
            let round = if (500..510).contains(&i) { 3 } else { 2 };
            assert_eq!(got, [round; 5000], "key {i}");
        }
    }

    #[test]
    fn tidy_packs_away_the_few_keys_a_range_delete_took_from_a_leaf() {
        // Goal: leaves a range delete marked are pruned and packed once it
        // is published however few keys it took from them (the threshold
        // of `UNTIDY_SHARE` is for splits), so that seeks do not step over
        // the deleted keys' versions.
        // Method: 3,000 keys put; a range delete of three keys in one
        // group (seqno 2); tidied, the tree holds 2,997 entries (no put or
        // tombstone of the three left).
        let dir = tempfile::tempdir().expect("tempdir");
        let table = Arc::new(crate::btree::scratch_table(dir.path(), 4096, 0));
        put_group(&table, 1, 0..3000, 100);
        {
            let mut st = table.writer();
            BtreeTable::delete_range(
                &table,
                &mut st,
                2,
                key(1500).as_bytes(),
                key(1503).as_bytes(),
                &Horizon::no_readers(1),
            )
            .expect("delete range");
            table.tidy(&mut st, &Horizon::no_readers(2)).expect("tidy");
        }
        let s = table.shape().expect("shape");
        assert_eq!(
            s.entries, 2997,
            "the deleted keys' versions were left: {s:?}"
        );
    }
}
