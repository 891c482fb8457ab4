//! Reading a B-tree table: the descent with latch coupling, point reads
//! (`get`, and `get_across_leaves` for a key whose versions run into the
//! next leaf), overflow values, and the tree's shape.
//!
//! Invariants: a descent holds a page's read latch until it has taken its
//! child's (from the `root` lock down), so it never lands on a page a split
//! or merge has half changed; it holds `descents` shared for as long as it
//! reads pages it found through the tree, so that no page of the tree it
//! started in is reused under it (`reclaim`).
//!
//! Thread-safety: any number of readers, beside the one writer; readers
//! never take the writer's `tree` mutex (except the figures in `shape` and
//! `quick_shape`, briefly).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::page::{self, Value};
use crossbeam_epoch::Guard;

use super::pager::{read_run, Frame, ReadGuard};
use super::{iter, BtreeTable};
use crate::counter::GatePass;
use crate::error::Result;
use crate::mvcc::iter::InternalIterator;
use crate::mvcc::key::{self, internal_key, KeyRef, Kind, ParsedKey, KIND_SEEK, SEQNO_MAX};
use crate::read_context::{self, ReadContext};

/// Which leaf a descent looks for.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Target<'a> {
    First,
    Last,
    /// The leaf that holds the first key >= this one.
    AtOrAfter(KeyRef<'a>),
    /// The leaf that holds the last key < this one.
    Before(KeyRef<'a>),
}

/// The separators around a leaf: every key in it is at or above `low` and
/// below `high` (None: no bound on that side). Kept in buffers a cursor
/// reuses from one leaf to the next, so that a descent allocates nothing.
#[derive(Debug, Default)]
pub(crate) struct Bounds {
    low: Vec<u8>,
    high: Vec<u8>,
    has_low: bool,
    has_high: bool,
}

impl Bounds {
    pub(crate) fn low(&self) -> Option<&[u8]> {
        self.has_low.then_some(self.low.as_slice())
    }

    pub(crate) fn high(&self) -> Option<&[u8]> {
        self.has_high.then_some(self.high.as_slice())
    }

    fn clear(&mut self) {
        self.has_low = false;
        self.has_high = false;
    }

    /// Sets `buf` to `key`, reusing its allocation.
    pub(crate) fn copy(buf: &mut Vec<u8>, key: &[u8]) {
        buf.clear();
        buf.extend_from_slice(key);
    }
}

/// A leaf found by a read descent, latched, for as long as the epoch the
/// descent was pinned in.
pub(crate) struct Leaf<'g> {
    pub frame: &'g Frame,
    pub guard: ReadGuard<'g>,
    /// Keeps the pages of the tree this descent went through (and the
    /// overflow runs they name) from being reused while the leaf is read.
    _descent: GatePass<'g>,
}

/// What a point read found.
#[derive(Debug)]
pub(crate) enum Lookup {
    Value(Vec<u8>),
    Absent,
    /// The key's versions go on in the next leaf: read it with an iterator
    /// at this seqno under a registered snapshot.
    Continue(u64),
}

/// The shape of a B-tree table.
#[derive(Debug, Clone, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct BtreeShape {
    /// Levels from the root to the leaves (0 for an empty tree).
    pub height: u32,
    /// Leaf pages.
    pub leaf_pages: u64,
    /// Branch (internal) pages.
    pub branch_pages: u64,
    /// Pages holding values too large for a leaf.
    pub overflow_pages: u64,
    /// Free pages (reusable now or after the next checkpoint).
    pub free_pages: u64,
    /// Versions in the leaves (a key may have several while snapshots or
    /// recent writes need them).
    pub entries: u64,
    /// Bytes in use over bytes available, over leaf and branch pages.
    pub fill: f64,
    /// The page size.
    pub page_size: u64,
    /// The file's size in pages times the page size.
    pub file_bytes: u64,
}

impl BtreeTable {
    /// Descends to a leaf with latch coupling. None when the tree is empty.
    /// The separators around the leaf are copied into `bounds` if given.
    /// The caller is pinned in `epoch` for as long as it reads the leaf:
    /// pages are found through the frame table (`latch_for_read`).
    pub(crate) fn descend<'g>(
        &'g self,
        target: Target<'_>,
        mut bounds: Option<&mut Bounds>,
        ctx: &mut ReadContext,
        epoch: &'g Guard,
    ) -> Result<Option<Leaf<'g>>> {
        if let Some(b) = bounds.as_deref_mut() {
            b.clear();
        }
        let descent = self.descents.enter();
        // The root's page latched while the root stayed where it was read
        // (`RootCell`).
        let (height, mut frame, mut guard, found) = loop {
            let (seq, root) = self.root.begin_read();
            if root.pgno == 0 {
                if self.root.unchanged(seq) {
                    return Ok(None);
                }
                continue;
            }
            let (frame, guard, found) = self.latch_for_read(root.pgno, epoch, ctx)?;
            if self.root.unchanged(seq) {
                break (root.height, frame, guard, found);
            }
        };
        // Pages found through the frame table, counted once per descent
        // (the cache's path counts its own).
        let mut found_here = u64::from(found);
        let mut depth = 1;
        let leaf = loop {
            let p = &guard.image;
            match page::kind(p) {
                page::KIND_LEAF => {
                    break Leaf {
                        frame,
                        guard,
                        _descent: descent,
                    }
                }
                page::KIND_BRANCH if depth < height => {}
                _ => {
                    return Err(self.file.corrupt(
                        frame.pgno,
                        "tree is deeper than its height or not a tree page",
                    ))
                }
            }
            let n = page::count(p);
            let pos = match target {
                Target::First => 0,
                Target::Last => n,
                Target::AtOrAfter(t) => page::branch_position(p, t, &mut ctx.keys_compared),
                Target::Before(t) => page::lower_bound(p, t, &mut ctx.keys_compared),
            };
            if let Some(b) = bounds.as_deref_mut() {
                // A deeper level's separator is the tighter one.
                if pos > 0 {
                    Bounds::copy(&mut b.low, page::ikey(p, pos - 1));
                    b.has_low = true;
                }
                if pos < n {
                    Bounds::copy(&mut b.high, page::ikey(p, pos));
                    b.has_high = true;
                }
            }
            let child = page::child_at(p, pos);
            // The child's latch is taken before the parent's is let go.
            let (child_frame, child_guard, found) = self.latch_for_read(child, epoch, ctx)?;
            found_here += u64::from(found);
            (frame, guard) = (child_frame, child_guard);
            depth += 1;
        };
        if found_here > 0 {
            self.file.counters.from_cache.add(found_here);
            self.cache.count_hits(found_here);
        }
        Ok(Some(leaf))
    }

    /// Reads a value out of its overflow run.
    pub(crate) fn read_value(&self, v: Value<'_>, ctx: &mut ReadContext) -> Result<Vec<u8>> {
        match v {
            Value::Inline(b) => Ok(b.to_vec()),
            Value::Overflow { len, first, pages } => {
                ctx.blocks_from_storage += u64::from(pages);
                ctx.bytes_read += u64::from(pages) * self.file.page_size as u64;
                read_run(&self.file, first, pages, len, page::KIND_OVERFLOW)
            }
        }
    }

    /// The value of `user_key` read with an iterator at `seqno`: the
    /// answer to a `Lookup::Continue`, for a key whose versions run into the
    /// next leaf. The caller holds a registered snapshot at `seqno` (so
    /// that no version the read needs is pruned while it walks the leaves).
    pub(crate) fn get_across_leaves(
        self: &Arc<Self>,
        user_key: &[u8],
        seqno: u64,
    ) -> Result<Option<Vec<u8>>> {
        let mut it = iter::BtreeIter::new(Arc::clone(self));
        it.seek(&internal_key(user_key, seqno, KIND_SEEK));
        if !it.valid() {
            it.status()?;
            return Ok(None);
        }
        match ParsedKey::parse(it.key()) {
            Some(k) if k.user_key == user_key && k.kind == Kind::Put => {
                Ok(Some(it.value().to_vec()))
            }
            _ => Ok(None),
        }
    }

    /// The value of `user_key` as of `snapshot`, or as of now when None.
    /// When the key's versions run into the next leaf, `Lookup::Continue`
    /// says so: the caller registers a snapshot and reads on with
    /// `get_across_leaves`.
    pub(crate) fn get(
        &self,
        user_key: &[u8],
        snapshot: Option<u64>,
        visible: &AtomicU64,
    ) -> Result<Lookup> {
        let mut ctx = ReadContext {
            gets: 1,
            trees_searched: 1,
            ..ReadContext::default()
        };
        let result = self.get_counted(user_key, snapshot, visible, &mut ctx);
        read_context::add(&ctx);
        result
    }

    fn get_counted(
        &self,
        user_key: &[u8],
        snapshot: Option<u64>,
        visible: &AtomicU64,
        ctx: &mut ReadContext,
    ) -> Result<Lookup> {
        let newest = KeyRef::seek(user_key, SEQNO_MAX);
        let epoch = crossbeam_epoch::pin();
        let Some(leaf) = self.descend(Target::AtOrAfter(newest), None, ctx, &epoch)? else {
            return Ok(Lookup::Absent);
        };
        // Without a snapshot the seqno is read under the leaf's latch: the
        // writer prunes only under it, and keeps the newest version at or
        // below the visible seqno of that moment.
        let seqno = snapshot.unwrap_or_else(|| visible.load(Ordering::Acquire));
        let p = &leaf.guard.image;
        let pos = page::lower_bound(p, KeyRef::seek(user_key, seqno), &mut ctx.keys_compared);
        if pos < page::count(p) {
            let k = page::ikey(p, pos);
            return match ParsedKey::parse(k) {
                Some(pk) if pk.user_key == user_key => match pk.kind {
                    Kind::Put => Ok(Lookup::Value(self.read_value(page::value(p, pos), ctx)?)),
                    Kind::Delete => Ok(Lookup::Absent),
                },
                Some(_) => Ok(Lookup::Absent),
                None => Err(self.file.corrupt(leaf.frame.pgno, "bad key trailer")),
            };
        }
        // Past the leaf's last key. The descent went to the leaf that holds
        // the key's newest versions, so if the last key is another (smaller)
        // key, this key is absent; if it is this key, its older versions may
        // go on in the next leaf, and an iterator reads on.
        let n = page::count(p);
        match (n > 0).then(|| key::user_key(page::ikey(p, n - 1))) {
            Some(last) if last != user_key => Ok(Lookup::Absent),
            _ => Ok(Lookup::Continue(seqno)),
        }
    }

    /// Height, pages and fill, and the file's size.
    pub(crate) fn shape(&self) -> Result<BtreeShape> {
        let mut shape = {
            let st = self.tree.lock();
            let (_, height) = self.root.read().place();
            BtreeShape {
                height,
                file_bytes: st.page_count * self.file.page_size as u64,
                free_pages: st.free_pages(),
                page_size: self.file.page_size as u64,
                ..BtreeShape::default()
            }
        };
        let mut used_bytes = 0u64;
        let mut ctx = ReadContext::default();
        let mut stack = Vec::new();
        let _descent = self.descents.enter();
        let root = self.root.read().pgno;
        if root != 0 {
            stack.push(root);
        }
        while let Some(pgno) = stack.pop() {
            let frame = self.fetch(pgno, &mut ctx)?;
            let g = frame.read();
            let p = &g.image;
            used_bytes += page::used(p) as u64;
            match page::kind(p) {
                page::KIND_BRANCH => {
                    shape.branch_pages += 1;
                    for pos in 0..=page::count(p) {
                        stack.push(page::child_at(p, pos));
                    }
                }
                _ => {
                    shape.leaf_pages += 1;
                    shape.entries += page::count(p) as u64;
                    for i in 0..page::count(p) {
                        if let Value::Overflow { pages, .. } = page::value(p, i) {
                            shape.overflow_pages += u64::from(pages);
                        }
                    }
                }
            }
        }
        let pages = shape.leaf_pages + shape.branch_pages;
        if pages > 0 {
            shape.fill = used_bytes as f64 / (pages * self.file.image_len() as u64) as f64;
        }
        Ok(shape)
    }

    /// Cheap figures for stats, without walking the tree.
    pub(crate) fn quick_shape(&self) -> (u32, u64, u64) {
        let st = self.tree.lock();
        let (_, height) = self.root.read().place();
        (height, st.page_count, st.free_pages())
    }
}
