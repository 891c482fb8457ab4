//! Writing a B-tree table: the writer (`writer()`, the `tree` mutex over
//! `TreeState`; `TreeWriter`, its hold for a run of entries), applying one
//! entry (`apply`: a put or a delete is a new version in a leaf, its value
//! inline or in an overflow run), and the copy-on-write path from the root
//! to the leaf it changes.
//!
//! Invariants: every page on a write path is fresh (allocated since the
//! last freeze): a page the last checkpoint wrote is copied first
//! (`copy_page`, pruning a leaf on the way) and its parent, already fresh,
//! pointed at the copy. A page changes only under its write latch, and is
//! marked dirty before the latch is released. A failed entry marks the
//! table failed (the tree no longer matches its page accounting).
//!
//! Thread-safety: one writer at a time, holding `tree` (the commit leader,
//! recovery, or a checkpoint's freeze); readers go on beside it, under the
//! latches.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use parking_lot::MutexGuard;

use super::format::max_cell_len;
use super::iter::BtreeIter;
use super::page::{self, Value};
use super::reshape::last_key;
use super::store::{write_handed_back, write_run, Frame};
use super::TreeState;
use super::{BtreeTable, Root};
use crate::error::Result;
use crate::mvcc::iter::InternalIterator;
use crate::mvcc::key::{self, internal_key, KeyRef, Kind};
use crate::mvcc::range_del;
use crate::mvcc::Horizon;
use crate::read_context::ReadContext;

/// Whether the leaf after the one at the end of `path` (a write path,
/// latched by no one else: its pages are the writer's) may begin with
/// versions of `user_key`. The separator above the leaf's right edge is the
/// first key of that next leaf or below it, and above every key of this
/// leaf; if this leaf ends with `user_key`, a next leaf that begins with it
/// has a separator of the same user key between them. The rightmost leaf
/// has no next leaf. (Without this, every write of a key that lands last
/// in its leaf, as each one does in a sequential load, searched the tree
/// again for continuing versions.)
fn next_leaf_may_hold(path: &[(Arc<Frame>, usize)], user_key: &[u8]) -> bool {
    for i in (1..path.len()).rev() {
        let (Some((_, pos)), Some((parent, _))) = (path.get(i), path.get(i - 1)) else {
            break;
        };
        let g = parent.read();
        if *pos < page::count(&g.image) {
            return key::user_key(page::ikey(&g.image, *pos)) == user_key;
        }
    }
    false
}

/// The writer's hold on a table for a run of entries, in seqno order
/// (`BtreeTable::tree_writer`): a commit group's, or the log's at
/// recovery.
pub(crate) struct TreeWriter<'a> {
    pub table: &'a Arc<BtreeTable>,
    tree: MutexGuard<'a, TreeState>,
}

impl TreeWriter<'_> {
    /// Applies one entry: a range delete (`delete_range`), or a put or a
    /// delete (`apply`).
    #[inline]
    pub(crate) fn apply(
        &mut self,
        seqno: u64,
        kind: Kind,
        key: &[u8],
        value: &[u8],
        horizon: &Horizon,
    ) -> Result<()> {
        if kind == Kind::RangeDelete {
            BtreeTable::delete_range(self.table, &mut self.tree, seqno, key, value, horizon)
        } else {
            self.table
                .apply(&mut self.tree, seqno, kind, key, value, horizon)
        }
    }

    /// Whether no leaf waits for `tidy`.
    pub(crate) fn is_tidy(&self) -> bool {
        self.tree.is_tidy()
    }

    /// Packs the leaves the run split to hold versions that publishing it
    /// hid (`BtreeTable::tidy`), under `horizon`.
    pub(crate) fn tidy(&mut self, horizon: &Horizon) -> Result<()> {
        self.table.tidy(&mut self.tree, horizon)
    }
}

impl BtreeTable {
    /// Starts a write: the writer's state, held until the caller is done.
    pub(crate) fn writer(&self) -> MutexGuard<'_, TreeState> {
        self.tree.lock()
    }

    /// Starts a run of entries: the writer's state, held until the
    /// `TreeWriter` is dropped.
    pub(crate) fn tree_writer(self: &Arc<Self>) -> TreeWriter<'_> {
        TreeWriter {
            table: self,
            tree: self.writer(),
        }
    }

    /// Applies one entry. The caller holds `writer()`.
    pub(crate) fn apply(
        &self,
        st: &mut TreeState,
        seqno: u64,
        kind: Kind,
        user_key: &[u8],
        value: &[u8],
        horizon: &Horizon,
    ) -> Result<()> {
        // A page write that failed since the group began (the write-back of
        // an evicted page, by this writer between two entries or by another
        // thread) does not stop the group: it is in the log, and the tree in
        // memory stays whole (the page that failed stays in the cache). The
        // failure refuses the next group, before it is logged
        // (`Core::make_room`), and every checkpoint. Refusing here, after
        // the group was logged, answered "refused" for a commit that the
        // next open recovered.
        //
        // A failed entry may leave part of its batch in the pages, or pages
        // allocated and never used (a failed overflow write): the tree no
        // longer matches its page accounting. Mark the table failed, so
        // that no checkpoint (one waiting for the commit lock included)
        // writes that state as an image; the log replays it at reopen.
        let applied = self
            .apply_entry(st, seqno, kind, user_key, value, horizon)
            .inspect_err(|e| {
                self.store
                    .file
                    .fail(&format!("applying a write failed: {e}"))
            });
        // The dirty pages the cache handed back while the entry went in (of
        // any table) are written now, with no latch of the path and no
        // cache lock held (see `store::write_handed_back`).
        write_handed_back(&self.store.cache);
        applied
    }

    /// Applies a range delete at `seqno`: a tombstone for each key in
    /// `[start, end)` (an empty `end`: to the last key) whose newest version
    /// older than `seqno` is a put. The caller holds `writer()`. The keys
    /// are found a chunk at a time, with no write while a chunk is read.
    pub(crate) fn delete_range(
        table: &Arc<BtreeTable>,
        st: &mut TreeState,
        seqno: u64,
        start: &[u8],
        end: &[u8],
        horizon: &Horizon,
    ) -> Result<()> {
        /// Keys found before they are deleted.
        const CHUNK: usize = 512;
        let mut from = key::internal_key(start, key::SEQNO_MAX, key::KIND_SEEK);
        loop {
            let (keys, done) = table.live_keys(&from, seqno, end, CHUNK).inspect_err(|e| {
                table
                    .store
                    .file
                    .fail(&format!("applying a range delete failed: {e}"))
            })?;
            st.deleting_range = true;
            st.range_deleted = true;
            let applied = keys
                .iter()
                .try_for_each(|k| table.apply(st, seqno, Kind::Delete, k, &[], horizon));
            st.deleting_range = false;
            applied?;
            match keys.last() {
                Some(last) if !done => {
                    // Past every version of the last key deleted.
                    from = key::internal_key(last, 0, Kind::Delete);
                }
                _ => return Ok(()),
            }
        }
    }

    /// Up to `limit` user keys at or after the internal key `from` and
    /// before `end` whose newest version older than `seqno` is a put, and
    /// whether the range was read to its end.
    fn live_keys(
        self: &Arc<Self>,
        from: &[u8],
        seqno: u64,
        end: &[u8],
        limit: usize,
    ) -> Result<(Vec<Vec<u8>>, bool)> {
        let mut keys = Vec::new();
        let mut it = BtreeIter::new(Arc::clone(self));
        it.seek(from);
        // The last key whose version older than `seqno` was met.
        let mut decided: Option<Vec<u8>> = None;
        while it.valid() {
            let Some(p) = key::ParsedKey::parse(it.key()) else {
                return Err(self
                    .store
                    .file
                    .corrupt(0, "entry with a malformed internal key"));
            };
            if !range_del::below_end(p.user_key, end) {
                return Ok((keys, true));
            }
            if p.seqno < seqno && decided.as_deref() != Some(p.user_key) {
                if keys.len() == limit {
                    return Ok((keys, false));
                }
                decided = Some(p.user_key.to_vec());
                if p.kind == Kind::Put {
                    keys.push(p.user_key.to_vec());
                }
            }
            it.next();
        }
        it.status()?;
        Ok((keys, true))
    }

    fn apply_entry(
        &self,
        st: &mut TreeState,
        seqno: u64,
        kind: Kind,
        user_key: &[u8],
        value: &[u8],
        horizon: &Horizon,
    ) -> Result<()> {
        self.store.reclaim(&mut st.space);
        self.changes.fetch_add(1, Ordering::Relaxed);
        let ik = internal_key(user_key, seqno, kind);
        let inline = page::inline_cell_len(ik.len(), value.len());
        let cell = if inline <= max_cell_len(self.store.file.page_size) {
            page::leaf_cell(&ik, Value::Inline(value))
        } else {
            let (first, pages) = self.write_overflow(st, value)?;
            page::leaf_cell(
                &ik,
                Value::Overflow {
                    len: value.len() as u32,
                    first,
                    pages,
                },
            )
        };
        let path = self.write_path(st, &ik, horizon)?;
        let Some((leaf, _)) = path.last() else {
            return self.new_root(st, &cell);
        };
        let mut g = leaf.write();
        let p = &mut g.image;
        let mut unused = 0;
        let pos = page::lower_bound(p, KeyRef::of(&ik), &mut unused);
        if pos < page::count(p) && page::ikey(p, pos) == ik.as_slice() {
            // The same version again: a replay of the log over a page that
            // already holds it.
            let old = page::value(p, pos);
            self.release_value(st, old);
            page::remove(p, pos);
        }
        if page::insert(p, pos, &cell) {
            st.space.changed(leaf.pgno, &g);
            if st.deleting_range && st.untidy.insert(leaf.pgno) {
                st.untidy_keys.push(ik.clone());
            }
            let small = page::used(&g.image) < g.image.len() / 4;
            let continues = last_key(&g.image)
                .filter(|k| k.user_key == user_key)
                .map(|k| k.seqno);
            drop(g);
            let continues = continues.filter(|_| next_leaf_may_hold(&path, user_key));
            if let Some(seqno) = continues {
                self.prune_continuation(st, user_key, seqno, horizon)?;
            }
            if small && path.len() > 1 {
                self.merge(st, &path, horizon)?;
            }
            return Ok(());
        }
        self.prune(st, &mut g.image, horizon);
        st.space.changed(leaf.pgno, &g);
        let p = &mut g.image;
        let pos = page::lower_bound(p, KeyRef::of(&ik), &mut unused);
        // Split unless pruning left 1/32 of the page free (a little more
        // than the cell, so that a page of live data one cell from full is
        // not pruned again by every insert). A larger margin splits leaves
        // whose live data fills most of the page: 400,000 random
        // overwrites of 400,000 keys left a tree of 9,932 pages with a
        // quarter, 8,289 with 1/32 (docs/design.md).
        if page::free_space(p) >= p.len() / 32 && page::insert(p, pos, &cell) {
            if st.deleting_range && st.untidy.insert(leaf.pgno) {
                st.untidy_keys.push(ik.clone());
            }
            return Ok(());
        }
        drop(g);
        self.split(st, &path, &ik, cell)
    }

    fn new_root(&self, st: &mut TreeState, cell: &[u8]) -> Result<()> {
        let pgno = self.store.alloc_page(&mut st.space);
        let mut image = vec![0u8; self.store.file.image_len()];
        page::init(&mut image, page::KIND_LEAF, 0);
        page::insert(&mut image, 0, cell);
        self.store.install_page(&mut st.space, pgno, image);
        *self.root.write() = Root::new(pgno, 1);
        Ok(())
    }

    /// The path from the root to the leaf for `ik`, every page on it fresh
    /// (copied if the last checkpoint wrote it). Each element is a page and
    /// its position in its parent.
    pub(super) fn write_path(
        &self,
        st: &mut TreeState,
        ik: &[u8],
        horizon: &Horizon,
    ) -> Result<Vec<(Arc<Frame>, usize)>> {
        let mut ctx = ReadContext::default();
        let (mut pgno, height) = self.root.read().place();
        let mut path: Vec<(Arc<Frame>, usize)> = Vec::with_capacity(height as usize);
        if pgno == 0 {
            return Ok(path);
        }
        let mut pos_in_parent = 0;
        loop {
            let mut frame = self.store.fetch_for_write(pgno, &mut ctx)?;
            if !st.space.fresh.contains(&pgno) {
                let copy = self.copy_page(
                    st,
                    &frame,
                    path.last().map(|(f, _)| f),
                    pos_in_parent,
                    horizon,
                )?;
                let old = std::mem::replace(&mut frame, copy);
                // The old page is only the durable image's now, and no new
                // descent reaches it: its frame leaves the cache if it can
                // at once (written, and neither latched nor held by a
                // reader), so that copies do not fill the cache with dead
                // pages. A reader that reaches it later reads it from the
                // file, unchanged until the page is reused.
                self.store
                    .cache
                    .evict_if_idle((self.store.file.owner, old.pgno), old);
            }
            let (is_leaf, child, pos) = {
                let g = frame.read();
                let p = &g.image;
                match page::kind(p) {
                    page::KIND_LEAF => (true, 0, 0),
                    page::KIND_BRANCH if path.len() + 1 < height as usize => {
                        let pos = page::branch_position(p, KeyRef::of(ik), &mut ctx.keys_compared);
                        (false, page::child_at(p, pos), pos)
                    }
                    _ => {
                        return Err(self
                            .store
                            .file
                            .corrupt(frame.pgno, "tree is deeper than its height"))
                    }
                }
            };
            path.push((frame, pos_in_parent));
            if is_leaf {
                return Ok(path);
            }
            pgno = child;
            pos_in_parent = pos;
        }
    }

    /// Copies a page the last checkpoint wrote to a new page (pruning a
    /// leaf on the way), and points its parent (or the root) at the copy.
    pub(super) fn copy_page(
        &self,
        st: &mut TreeState,
        old: &Arc<Frame>,
        parent: Option<&Arc<Frame>>,
        pos: usize,
        horizon: &Horizon,
    ) -> Result<Arc<Frame>> {
        let (old_pgno, mut image) = {
            let g = old.read();
            (old.pgno, g.image.clone())
        };
        if page::kind(&image) == page::KIND_LEAF {
            self.prune(st, &mut image, horizon);
        }
        let pgno = self.store.alloc_page(&mut st.space);
        let frame = self.store.install_page(&mut st.space, pgno, image);
        match parent {
            None => {
                self.root.write().pgno = pgno;
            }
            Some(parent) => {
                let mut pg = parent.write();
                page::set_child_at(&mut pg.image, pos, pgno);
                st.space.changed(parent.pgno, &pg);
            }
        }
        st.space.release(old_pgno, 1);
        Ok(frame)
    }

    /// Writes a value too large for a page to a run of overflow pages.
    fn write_overflow(&self, st: &mut TreeState, value: &[u8]) -> Result<(u64, u32)> {
        let chunk = self.store.file.image_len() - page::HEADER;
        let pages = value.len().div_ceil(chunk).max(1);
        let first = st.space.alloc(pages as u64);
        write_run(
            &self.store.file,
            first,
            value,
            page::KIND_OVERFLOW,
            pages as u64,
        )?;
        Ok((first, pages as u32))
    }
}

impl BtreeTable {
    /// Frees a page the tree no longer uses (`PageStore::forget_page`); a
    /// leaf waiting to be tidied is forgotten with it.
    pub(super) fn forget_page(&self, st: &mut TreeState, pgno: u64) {
        st.untidy.remove(&pgno);
        self.store.forget_page(&mut st.space, pgno);
    }

    /// Frees the overflow run of a value the tree no longer holds.
    pub(super) fn release_value(&self, st: &mut TreeState, v: Value<'_>) {
        if let Value::Overflow { first, pages, .. } = v {
            st.space.release(first, u64::from(pages));
        }
    }
}
