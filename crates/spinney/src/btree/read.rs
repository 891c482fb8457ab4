//! Reading a B-tree table: the descent with latch coupling (and a leaf
//! read through the file's map, `descend_or_map`), overflow values, and
//! the tree's shape. Point reads are in `get.rs`.
//!
//! Invariants: below the top of the tree, a descent holds a page's read
//! latch until it has taken its child's, so it never lands on a page a
//! split or merge has half changed. The top (the root, and its children
//! when it has few) it reads from its thread's copies, made under each
//! page's read latch, and it takes the latch of the first page below them
//! (only if cached) before it checks that the root is where it was
//! (`RootCell`) and that no copied page's version moved (a version changes
//! as a write latch is taken, before any change): if one did, it starts
//! over, latching from the root down. So the latched page was, at the
//! check, the one the copies lead to, and from there on it is coupled as
//! before. A descent holds `descents` shared for as long as it reads pages
//! it found through the tree, so that no page of the tree it started in is
//! reused under it (`reclaim`).
//!
//! Thread-safety: any number of readers, beside the one writer; readers
//! never take the writer's `tree` mutex (except the figures in `shape` and
//! `quick_shape`, briefly).

use std::cell::RefCell;

use super::page::{self, Value};
use crossbeam_epoch::Guard;

use super::store::{read_run, Frame, ReadGuard};
use super::BtreeTable;
use crate::counter::GatePass;
use crate::error::Result;
use crate::mvcc::key::{KeyRef, ParsedKey, SEQNO_MAX};
use crate::read_context::{self, ReadContext};

/// Where a cursor's window came from: its leaf's page, the version of the
/// leaf's frame while the window was copied, and the branch page above.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Place {
    pub leaf: u64,
    pub version: u64,
    pub parent: Option<Parent>,
}

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

    fn set_low(&mut self, key: &[u8]) {
        Bounds::copy(&mut self.low, key);
        self.has_low = true;
    }

    fn set_high(&mut self, key: &[u8]) {
        Bounds::copy(&mut self.high, key);
        self.has_high = true;
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
    /// The branch page the descent came to the leaf from (None for a root
    /// leaf).
    pub parent: Option<Parent>,
    /// Keeps the pages of the tree this descent went through (and the
    /// overflow runs they name) from being reused while the leaf is read.
    _descent: GatePass<'g>,
}

thread_local! {
    /// The buffer a read through the map copies its leaf into
    /// (`descend_or_map`): one per thread, reused.
    static MAPPED_LEAF: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// This thread's buffer for a leaf read through the map (an empty one if
/// it is lent out already).
pub(crate) fn take_leaf_buffer() -> Vec<u8> {
    MAPPED_LEAF
        .try_with(|b| {
            b.try_borrow_mut()
                .map(|mut b| std::mem::take(&mut *b))
                .unwrap_or_default()
        })
        .unwrap_or_default()
}

/// Gives back the buffer `take_leaf_buffer` lent.
pub(crate) fn give_back_leaf_buffer(buf: Vec<u8>) {
    let _ = MAPPED_LEAF.try_with(|b| {
        if let Ok(mut b) = b.try_borrow_mut() {
            *b = buf;
        }
    });
}

/// Where `descend_or_map` ended.
pub(crate) enum Reached<'g> {
    /// A leaf, latched.
    Leaf(Leaf<'g>),
    /// A leaf (its page number) read through the map into the caller's
    /// buffer; the pass keeps the pages it names (overflow runs) from reuse
    /// while it is read.
    Mapped(GatePass<'g>, u64),
}

/// A get's request to read its leaf through the map (`descend_or_map`):
/// the buffer for the leaf's image, and what to run while the leaf is as
/// read (the get reads the seqno it reads at there).
pub(crate) struct MapRead<'a> {
    pub buf: &'a mut Vec<u8>,
    pub between: &'a mut dyn FnMut(),
}

/// A branch page as a descent read it: its page, the version of its frame
/// then (a frame and a version name one state of one page), the child the
/// descent took and the page's separator count. A cursor steps to the
/// leaf beside the one it read through it (`BtreeTable::beside`), while
/// the version holds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Parent {
    pub pgno: u64,
    pub version: u64,
    pub pos: usize,
    pub n: usize,
}

/// What a point read found.
#[derive(Debug)]
pub(crate) enum Lookup {
    /// Found: its value was appended to the caller's buffer.
    Value,
    Absent,
    /// The key's versions go on in the next leaf: read it with an iterator
    /// at this seqno under a registered snapshot.
    Continue(u64),
}

/// The shape of a B-tree table.
///
/// ```
/// # fn main() -> spinney::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
/// let t = db.create_table("t", spinney::TableOptions::btree())?;
/// t.put(b"k", b"v")?;
/// let b: spinney::BtreeShape = t.shape()?.btree.unwrap();
/// assert_eq!((b.height, b.entries), (1, 1));
/// # Ok(()) }
/// ```
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
    /// Of the free pages, those the durable image may still read (replaced
    /// or freed since the last durable checkpoint): reusable once the next
    /// checkpoint is durable. The rest are reusable now.
    pub image_pages: u64,
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

/// The levels from the root a descent reads from its thread's copies of
/// their pages instead of latching them: the root, and the level below it
/// when the root has few children. Every descent of every thread went
/// through the same few pages, and took and let go of their latches, words
/// two cores passed back and forth.
const COPIED_LEVELS: usize = 2;

/// A page below the root is read from a copy only if the root has at most
/// this many children (so that a thread's copies hold them all).
const COPIED_FANOUT: usize = 4;

/// The copies a thread keeps, of any tables' top pages.
const COPIES_MAX: usize = 8;

/// A thread's copy of a branch page at the top of a tree: the frame it was
/// copied from (its address), that frame's version then, and the image.
struct PageCopy {
    frame: usize,
    version: u64,
    image: Vec<u8>,
}

thread_local! {
    static COPIES: RefCell<(Vec<PageCopy>, usize)> = const { RefCell::new((Vec::new(), 0)) };
}

/// Where `target` leads in branch page `frame`, read from this thread's
/// copy of it (made under its read latch when the frame's version moved
/// since): the copy's version and where the descent went (`Parent`), and
/// the child. Copies `bounds` as a latched read does. None when the frame
/// is not a branch page any more or has left the cache: the caller latches
/// it.
fn read_copy(
    frame: &Frame,
    target: Target<'_>,
    bounds: Option<&mut Bounds>,
    ctx: &mut ReadContext,
) -> Option<(Parent, u64)> {
    COPIES
        .try_with(|copies| {
            let mut copies = copies.try_borrow_mut().ok()?;
            let (copies, next) = &mut *copies;
            let at = frame as *const Frame as usize;
            let version = frame.version();
            let i = match copies
                .iter()
                .position(|c| c.frame == at && c.version == version)
            {
                Some(i) => i,
                None => {
                    let page = frame.read_if_current()?;
                    if page::kind(&page.image) != page::KIND_BRANCH {
                        return None;
                    }
                    // Stable while the read latch is held: it changes only
                    // as the write latch is taken.
                    let version = frame.version();
                    let i = match copies.iter().position(|c| c.frame == at) {
                        Some(i) => i,
                        None if copies.len() < COPIES_MAX => {
                            copies.push(PageCopy {
                                frame: at,
                                version,
                                image: Vec::new(),
                            });
                            copies.len() - 1
                        }
                        None => {
                            *next = (*next + 1) % COPIES_MAX;
                            *next
                        }
                    };
                    let c = copies.get_mut(i)?;
                    c.frame = at;
                    c.version = version;
                    c.image.clear();
                    c.image.extend_from_slice(&page.image);
                    i
                }
            };
            let c = copies.get(i)?;
            let (child, pos, n) = branch_step(&c.image, target, bounds, ctx);
            ctx.blocks_from_cache += 1;
            let parent = Parent {
                pgno: frame.pgno,
                version: c.version,
                pos,
                n,
            };
            Some((parent, child))
        })
        .ok()
        .flatten()
}

/// The child of branch page `p` that `target` leads to, its position, and
/// the page's separator count; the separators around it are copied into
/// `bounds`.
fn branch_step(
    p: &[u8],
    target: Target<'_>,
    bounds: Option<&mut Bounds>,
    ctx: &mut ReadContext,
) -> (u64, usize, usize) {
    let n = page::count(p);
    let pos = match target {
        Target::First => 0,
        Target::Last => n,
        Target::AtOrAfter(t) => page::branch_position(p, t, &mut ctx.keys_compared),
        Target::Before(t) => page::lower_bound(p, t, &mut ctx.keys_compared),
    };
    if let Some(b) = bounds {
        // A deeper level's separator is the tighter one.
        if pos > 0 {
            b.set_low(page::ikey(p, pos - 1));
        }
        if pos < n {
            b.set_high(page::ikey(p, pos));
        }
    }
    (page::child_at(p, pos), pos, n)
}

impl BtreeTable {
    /// Descends to a leaf: the top of the tree from this thread's copies,
    /// then with latch coupling (see the module's invariants). None when
    /// the tree is empty.
    /// The separators around the leaf are copied into `bounds` if given.
    /// The caller is pinned in `epoch` for as long as it reads the leaf:
    /// pages are found through the frame table (`latch_for_read`).
    pub(crate) fn descend<'g>(
        &'g self,
        target: Target<'_>,
        bounds: Option<&mut Bounds>,
        ctx: &mut ReadContext,
        epoch: &'g Guard,
    ) -> Result<Option<Leaf<'g>>> {
        match self.descend_or_map(target, bounds, ctx, epoch, None)? {
            Some(Reached::Leaf(leaf)) => Ok(Some(leaf)),
            // Only asked for with a map read.
            Some(Reached::Mapped(..)) | None => Ok(None),
        }
    }

    /// `descend`, which with `mapped` reads a leaf that no frame holds
    /// through the file's memory map into `mapped`'s buffer instead of
    /// caching it (`PageStore::read_leaf_mapped`, which runs `mapped`'s
    /// function while the leaf is as read): `Reached::Mapped` then.
    pub(crate) fn descend_or_map<'g>(
        &'g self,
        target: Target<'_>,
        mut bounds: Option<&mut Bounds>,
        ctx: &mut ReadContext,
        epoch: &'g Guard,
        mut mapped: Option<MapRead<'_>>,
    ) -> Result<Option<Reached<'g>>> {
        let descent = self.store.descents.enter();
        // The top of the tree read from this thread's copies, and the first
        // page below them latched, while the root stayed where it was read
        // (`RootCell`) and no page read from a copy changed (their
        // versions): else the descent starts over, and latches from the
        // root down.
        let mut from_copies = true;
        let mut parent: Option<Parent>;
        let (height, mut depth, mut frame, mut guard, found) = loop {
            parent = None;
            if let Some(b) = bounds.as_deref_mut() {
                b.clear();
            }
            let (seq, root) = self.root.begin_read();
            if root.pgno == 0 {
                if self.root.unchanged(seq) {
                    return Ok(None);
                }
                continue;
            }
            let mut copied: [(Option<&Frame>, u64); COPIED_LEVELS] = [(None, 0); COPIED_LEVELS];
            let (mut pgno, mut depth, mut fanout) = (root.pgno, 1, 0);
            for c in copied.iter_mut() {
                if !from_copies || depth >= root.height || (depth > 1 && fanout > COPIED_FANOUT) {
                    break;
                }
                let Some(frame) = self.store.find_frame(pgno, epoch) else {
                    break;
                };
                let Some((read, child)) = read_copy(frame, target, bounds.as_deref_mut(), ctx)
                else {
                    break;
                };
                *c = (Some(frame), read.version);
                parent = Some(read);
                (pgno, depth, fanout) = (child, depth + 1, read.n + 1);
            }
            let copies = copied.iter().filter(|c| c.0.is_some()).count() as u64;
            let (frame, guard, found) = if copies == 0 {
                self.store.latch_for_read(pgno, epoch, ctx)?
            } else {
                // A page a copy named may have been freed since: only a
                // cached one is latched (a freed page's frame is gone, and
                // its place in the file holds no page to read).
                let still = |&(f, v): &(Option<&Frame>, u64)| f.is_none_or(|f| f.version() == v);
                match self.store.latch_if_cached(pgno, epoch, ctx) {
                    Some((frame, guard)) => (frame, guard, true),
                    None => {
                        // A leaf under the copies, read through the map:
                        // kept if the pages copied above it did not change
                        // meanwhile (else it may have been freed).
                        if depth == root.height {
                            if let Some(m) = mapped.as_mut() {
                                if self
                                    .store
                                    .read_leaf_mapped(pgno, m.buf, ctx, &mut *m.between)
                                    && self.root.unchanged(seq)
                                    && copied.iter().all(still)
                                {
                                    self.count_found(copies);
                                    return Ok(Some(Reached::Mapped(descent, pgno)));
                                }
                            }
                        }
                        from_copies = false;
                        continue;
                    }
                }
            };
            let still = |&(f, v): &(Option<&Frame>, u64)| f.is_none_or(|f| f.version() == v);
            if self.root.unchanged(seq) && copied.iter().all(still) {
                break (root.height, depth, frame, guard, u64::from(found) + copies);
            }
            from_copies = false;
        };
        // Pages found through the frame table, counted once per descent
        // (the cache's path counts its own).
        let mut found_here = found;
        let leaf = loop {
            let p = &guard.image;
            match page::kind(p) {
                page::KIND_LEAF => {
                    break Leaf {
                        frame,
                        guard,
                        parent,
                        _descent: descent,
                    }
                }
                page::KIND_BRANCH if depth < height => {}
                _ => {
                    return Err(self.store.file.corrupt(
                        frame.pgno,
                        "tree is deeper than its height or not a tree page",
                    ))
                }
            }
            let (child, pos, n) = branch_step(p, target, bounds.as_deref_mut(), ctx);
            // Stable while the read latch is held.
            parent = Some(Parent {
                pgno: frame.pgno,
                version: frame.version(),
                pos,
                n,
            });
            // A leaf no frame holds, read through the map under its
            // parent's latch.
            if depth + 1 == height {
                if let Some(m) = mapped.as_mut() {
                    if self
                        .store
                        .read_leaf_mapped(child, m.buf, ctx, &mut *m.between)
                    {
                        drop(guard);
                        if found_here > 0 {
                            self.count_found(found_here);
                        }
                        return Ok(Some(Reached::Mapped(descent, child)));
                    }
                }
            }
            // The child's latch is taken before the parent's is let go.
            let (child_frame, child_guard, found) = self.store.latch_for_read(child, epoch, ctx)?;
            found_here += u64::from(found);
            (frame, guard) = (child_frame, child_guard);
            depth += 1;
        };
        if found_here > 0 {
            self.count_found(found_here);
        }
        Ok(Some(Reached::Leaf(leaf)))
    }

    /// Counts pages a read found through the frame table (the cache's own
    /// path counts its hits itself).
    fn count_found(&self, pages: u64) {
        self.store.file.counters.from_cache.add(pages);
        self.store.cache.count_hits(pages);
    }

    /// The leaf a cursor read last (`place`) again, latched, if its frame
    /// is still cached and unchanged since (the same version: the same
    /// frame in the same state), without a descent. None when it is not.
    ///
    /// Reading a leaf that the tree has since replaced (copied after a
    /// checkpoint, and still cached) is right for the cursor: it was the
    /// tree's leaf after the cursor's snapshot was taken, so it holds every
    /// version the snapshot sees, and nothing it names is reused before it
    /// leaves the cache (a page and the overflow runs it names are freed no
    /// earlier than the checkpoint after its replacement, and a freed
    /// page's frame is marked gone, which changes its version).
    pub(crate) fn again<'g>(
        &'g self,
        place: &Place,
        ctx: &mut ReadContext,
        epoch: &'g Guard,
    ) -> Option<Leaf<'g>> {
        let descent = self.store.descents.enter();
        let (frame, guard) = self.store.latch_if_cached(place.leaf, epoch, ctx)?;
        if frame.version() != place.version {
            return None;
        }
        self.count_found(1);
        Some(Leaf {
            frame,
            guard,
            parent: place.parent,
            _descent: descent,
        })
    }

    /// The leaf beside the one at `place` under the same parent (the next
    /// one when `forward`, else the one before), latched, with the
    /// separators around it in `bounds`, if the parent is still cached and
    /// unchanged since the descent read it and holds both separators;
    /// None when it is not (the caller descends). The parent stays latched
    /// until the child is (latch coupling, as in a descent); its children
    /// are the leaf's level. Why reading a replaced parent is right: as
    /// for `again` (a page is replaced together with its parent, whose
    /// version then changes if it was changed in place, and a replaced
    /// parent names only pages no older than itself).
    pub(crate) fn beside<'g>(
        &'g self,
        place: &Place,
        forward: bool,
        bounds: &mut Bounds,
        ctx: &mut ReadContext,
        epoch: &'g Guard,
    ) -> Result<Option<Leaf<'g>>> {
        let Some(parent) = place.parent else {
            return Ok(None);
        };
        // Child `pos` lies between separators `pos - 1` and `pos`.
        let pos = match forward {
            true if parent.pos + 1 < parent.n => parent.pos + 1,
            false if parent.pos >= 2 => parent.pos - 1,
            _ => return Ok(None),
        };
        let descent = self.store.descents.enter();
        let Some((frame, guard)) = self.store.latch_if_cached(parent.pgno, epoch, ctx) else {
            return Ok(None);
        };
        if frame.version() != parent.version {
            return Ok(None);
        }
        let p = &guard.image;
        let (leaf, leaf_guard, found) =
            self.store
                .latch_for_read(page::child_at(p, pos), epoch, ctx)?;
        if page::kind(&leaf_guard.image) != page::KIND_LEAF {
            return Err(self.store.file.corrupt(
                leaf.pgno,
                "a branch page's children are not all at one level",
            ));
        }
        bounds.set_low(page::ikey(p, pos - 1));
        bounds.set_high(page::ikey(p, pos));
        drop(guard);
        self.count_found(1 + u64::from(found));
        Ok(Some(Leaf {
            frame: leaf,
            guard: leaf_guard,
            parent: Some(Parent { pos, ..parent }),
            _descent: descent,
        }))
    }

    /// Reads a value out of its overflow run.
    pub(crate) fn read_value(&self, v: Value<'_>, ctx: &mut ReadContext) -> Result<Vec<u8>> {
        match v {
            Value::Inline(b) => Ok(b.to_vec()),
            Value::Overflow { len, first, pages } => {
                ctx.blocks_from_storage += u64::from(pages);
                ctx.bytes_read += u64::from(pages) * self.store.file.page_size as u64;
                read_run(&self.store.file, first, pages, len, page::KIND_OVERFLOW)
            }
        }
    }

    /// `read_value`, appended to `out`.
    pub(super) fn read_value_into(
        &self,
        v: Value<'_>,
        ctx: &mut ReadContext,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        match v {
            Value::Inline(b) => out.extend_from_slice(b),
            overflow => out.extend_from_slice(&self.read_value(overflow, ctx)?),
        }
        Ok(())
    }

    /// The seqno of the newest version of `user_key` (a put or a delete),
    /// if the tree holds one: a transaction's commit asks whether a key was
    /// written after its snapshot. The newest version is always in the leaf
    /// a descent to the key's first version reaches (a version before it in
    /// key order would be newer).
    pub(crate) fn newest_seqno(&self, user_key: &[u8]) -> Result<Option<u64>> {
        let mut ctx = ReadContext {
            trees_searched: 1,
            ..ReadContext::default()
        };
        let newest = KeyRef::seek(user_key, SEQNO_MAX);
        let epoch = crossbeam_epoch::pin();
        let found = match self.descend(Target::AtOrAfter(newest), None, &mut ctx, &epoch)? {
            None => None,
            Some(leaf) => {
                let p = &leaf.guard.image;
                let pos = page::lower_bound(p, newest, &mut ctx.keys_compared);
                if pos < page::count(p) {
                    match ParsedKey::parse(page::ikey(p, pos)) {
                        Some(k) => (k.user_key == user_key).then_some(k.seqno),
                        None => {
                            return Err(self.store.file.corrupt(leaf.frame.pgno, "bad key trailer"))
                        }
                    }
                } else {
                    None
                }
            }
        };
        read_context::add(&ctx);
        Ok(found)
    }

    /// Height, pages and fill, and the file's size.
    pub(crate) fn shape(&self) -> Result<BtreeShape> {
        let mut shape = {
            let st = self.tree.lock();
            let (_, height) = self.root.read().place();
            BtreeShape {
                height,
                file_bytes: st.space.page_count * self.store.file.page_size as u64,
                free_pages: st.space.free_pages(),
                image_pages: st.space.image_pages(),
                page_size: self.store.file.page_size as u64,
                ..BtreeShape::default()
            }
        };
        let mut used_bytes = 0u64;
        let mut ctx = ReadContext::default();
        let mut stack = Vec::new();
        let _descent = self.store.descents.enter();
        let root = self.root.read().pgno;
        if root != 0 {
            stack.push(root);
        }
        while let Some(pgno) = stack.pop() {
            let frame = self.store.fetch(pgno, &mut ctx)?;
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
            shape.fill = used_bytes as f64 / (pages * self.store.file.image_len() as u64) as f64;
        }
        Ok(shape)
    }

    /// Cheap figures for stats, without walking the tree: the height, the
    /// file's pages, its free pages and of those the image's.
    pub(crate) fn quick_shape(&self) -> (u32, u64, u64, u64) {
        let st = self.tree.lock();
        let (_, height) = self.root.read().place();
        (
            height,
            st.space.page_count,
            st.space.free_pages(),
            st.space.image_pages(),
        )
    }
}
