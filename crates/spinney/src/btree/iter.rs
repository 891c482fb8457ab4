//! `BtreeIter`: a B-tree table as an `InternalIterator`, so that the user
//! cursor both kinds share (`mvcc::cursor::UserCursor`) resolves versions,
//! bounds and direction over it exactly as over an LSM table. It reads a
//! leaf a window of entries at a time (see `BtreeIter`).

use std::cell::RefCell;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use super::page;
use super::read::{
    give_back_leaf_buffer, take_leaf_buffer, Bounds, Leaf, Lookup, MapRead, Place, Reached,
};
use super::{BtreeTable, Target};
use crate::error::{Error, Result};
use crate::mvcc::iter::InternalIterator;
use crate::mvcc::key::{internal_key, KeyRef, Kind, ParsedKey, KIND_SEEK};
use crate::read_context::{self, ReadContext};

thread_local! {
    /// Buffers of this thread's dropped iterators, for its next ones: an
    /// iterator made for each seek (as db_bench's are) otherwise allocates
    /// and frees them each time.
    static SPARE_WINDOWS: RefCell<Vec<Buffers>> = const { RefCell::new(Vec::new()) };
}

/// An iterator's buffers: the window's bytes and spans, the separators
/// around its leaf, and the key a load is positioned by.
#[derive(Default)]
struct Buffers {
    data: Vec<u8>,
    spans: Vec<Span>,
    bounds: Bounds,
    edge: Vec<u8>,
}

/// The most window buffers a thread keeps for later iterators.
const SPARE_WINDOWS_MAX: usize = 4;

/// The entries a seek copies from a leaf: a seek and the few steps after
/// it (db_bench's seekrandom takes ten) need no more. Each copy that a
/// leaf's end did not cut short doubles it, up to a whole leaf, and each
/// seek starts again from this (a cursor kept for many seeks otherwise
/// copied whole leaves for each).
const WINDOW_FIRST: usize = 16;
const WINDOW_MAX: usize = 1 << 12;

/// The bytes of keys and values a window takes at most, beyond its first
/// entry: a leaf can point to dozens of overflow values of up to 64 MiB,
/// and a cursor stepping over them holds one at a time, not a leaf's worth.
const WINDOW_BYTES_MAX: usize = 1 << 20;

/// Where a copied entry lies in the window's bytes: its internal key at
/// `key..key_end`, its value at `value..end` (an inline value's length
/// may lie between them: a leaf cell is copied whole).
#[derive(Clone, Copy, Default)]
struct Span {
    key: usize,
    key_end: usize,
    value: usize,
    end: usize,
}

impl Span {
    /// The entry's internal key, in the window's bytes `data`.
    fn key(self, data: &[u8]) -> &[u8] {
        data.get(self.key..self.key_end).unwrap_or_default()
    }

    /// The entry's value, in the window's bytes `data`.
    fn value(self, data: &[u8]) -> &[u8] {
        data.get(self.value..self.end).unwrap_or_default()
    }
}

/// How a load picks the entries of the leaf it finds.
#[derive(Clone, Copy)]
enum Pick<'a> {
    /// Forward from the first entry at or after the key.
    AtOrAfter(&'a [u8]),
    /// Forward from the first entry after the key.
    After(&'a [u8]),
    /// Backward from the last entry before the key (or the leaf's last).
    Before(Option<&'a [u8]>),
    /// Forward from the leaf's first entry.
    First,
    /// Forward from the entry at this slot.
    From(usize),
    /// Backward from the entry before this slot.
    Until(usize),
}

/// An iterator over a B-tree table's internal entries.
///
/// It copies a window of a leaf's entries at a time (their keys and
/// values, overflow values read), under the leaf's latch, and holds no
/// latch between calls. A seek copies a few entries, not the leaf: the
/// cells of a leaf lie in the order they were written, so a whole-leaf
/// copy read the page from memory, which cost a seek more than its
/// descent; the few cells a window needs are prefetched together and come
/// in one wait. Past the window it descends again, for the entries after
/// its last key (within the leaf) or after the leaf's separator (the next
/// leaf), so it never follows a page number that a writer may have
/// replaced; each full window doubles the next, so a long scan soon
/// copies whole leaves. It must read under a registered snapshot: the writer then
/// keeps every version the snapshot sees, and what the iterator read from
/// one window stays consistent with what it reads from the next.
pub(crate) struct BtreeIter {
    table: Arc<BtreeTable>,
    /// The entries copied.
    w: Window,
    /// The current entry, in `w.spans`.
    pos: usize,
    valid: bool,
    /// The separators around the leaf the window came from.
    bounds: Bounds,
    /// The key the next load is positioned by (a buffer reused).
    edge: Vec<u8>,
    status: Result<()>,
}

/// The entries a `BtreeIter` copied from a leaf, and where from.
struct Window {
    /// The copied entries' keys and values.
    data: Vec<u8>,
    spans: Vec<Span>,
    /// The leaf's slot the first copied entry was at, and the leaf's entry
    /// count, when they were copied.
    first: usize,
    leaf_count: usize,
    /// The entries the next copy takes.
    size: usize,
    /// Where the window came from, for the next copy: from the same leaf
    /// or the one beside it, while the pages are unchanged, without a
    /// descent.
    place: Option<Place>,
}

impl Window {
    /// Copies the window `pick` chooses from `leaf` (see `BtreeIter`).
    fn copy(
        &mut self,
        table: &BtreeTable,
        leaf: Leaf<'_>,
        pick: Pick<'_>,
        ctx: &mut ReadContext,
    ) -> Result<()> {
        // Stable while the leaf is latched.
        self.place = Some(Place {
            leaf: leaf.frame.pgno,
            version: leaf.frame.version(),
            parent: leaf.parent,
        });
        self.copy_image(table, &leaf.guard.image, pick, ctx)
    }

    /// Copies the window `pick` chooses from leaf image `p`, latched or
    /// read through the map, whose overflow runs the caller keeps from
    /// reuse until this returns.
    fn copy_image(
        &mut self,
        table: &BtreeTable,
        p: &[u8],
        pick: Pick<'_>,
        ctx: &mut ReadContext,
    ) -> Result<()> {
        self.data.clear();
        self.spans.clear();
        let count = page::count(p);
        let mut compared = 0;
        let (lo, hi) = match pick {
            Pick::AtOrAfter(k) | Pick::After(k) => {
                let mut lo = page::lower_bound_then(p, KeyRef::of(k), self.size, &mut compared);
                if matches!(pick, Pick::After(_)) && lo < count && page::ikey(p, lo) == k {
                    lo += 1;
                }
                (lo, count.min(lo + self.size))
            }
            Pick::Before(k) => {
                let hi = k.map_or(count, |k| {
                    page::lower_bound(p, KeyRef::of(k), &mut compared)
                });
                (hi.saturating_sub(self.size), hi)
            }
            Pick::First => (0, count.min(self.size)),
            Pick::From(i) => (i.min(count), count.min(i + self.size)),
            Pick::Until(i) => {
                let hi = i.min(count);
                (hi.saturating_sub(self.size), hi)
            }
        };
        ctx.keys_compared += compared;
        if !matches!(pick, Pick::AtOrAfter(_) | Pick::After(_)) {
            // (A forward pick's search started loading them.)
            page::prefetch_cells(p, lo..hi);
        }
        // Copied from where the cursor goes on (forward from `lo`, backward
        // from `hi`), while within the byte budget.
        let backward = matches!(pick, Pick::Before(_) | Pick::Until(_));
        for k in 0..hi - lo {
            let i = if backward { hi - 1 - k } else { lo + k };
            if let Some((cell, klen)) = page::leaf_inline_cell(p, i) {
                // Key, value length and value in one copy.
                if !self.spans.is_empty() && self.data.len() + cell.len() > WINDOW_BYTES_MAX {
                    break;
                }
                let at = self.data.len();
                self.data.extend_from_slice(cell);
                self.spans.push(Span {
                    key: at,
                    key_end: at + klen,
                    value: at + klen + 2,
                    end: self.data.len(),
                });
                continue;
            }
            let (key, value) = page::leaf_entry(p, i);
            let value_len = match value {
                page::Value::Inline(v) => v.len(),
                page::Value::Overflow { len, .. } => len as usize,
            };
            if !self.spans.is_empty() && self.data.len() + key.len() + value_len > WINDOW_BYTES_MAX
            {
                break;
            }
            let at = self.data.len();
            self.data.extend_from_slice(key);
            let value_at = self.data.len();
            match value {
                page::Value::Inline(v) => self.data.extend_from_slice(v),
                overflow => {
                    // The leaf stays latched (and its overflow run unreused)
                    // until the value is read.
                    let v = table.read_value(overflow, ctx)?;
                    self.data.extend_from_slice(&v);
                }
            }
            self.spans.push(Span {
                key: at,
                key_end: value_at,
                value: value_at,
                end: self.data.len(),
            });
        }
        let lo = if backward {
            self.spans.reverse();
            hi - self.spans.len()
        } else {
            lo
        };
        self.first = lo;
        self.leaf_count = count;
        // A window the leaf's end cut short says nothing of how far the
        // cursor goes: the next leaf's copy takes as many again. A full
        // one doubles, so that a long scan soon copies whole leaves.
        if hi - lo >= self.size {
            self.size = (self.size * 2).min(WINDOW_MAX);
        }
        Ok(())
    }
}

impl BtreeIter {
    pub(crate) fn new(table: Arc<BtreeTable>) -> BtreeIter {
        let Buffers {
            data,
            spans,
            bounds,
            edge,
        } = SPARE_WINDOWS
            .try_with(|s| s.try_borrow_mut().ok().and_then(|mut s| s.pop()))
            .ok()
            .flatten()
            .unwrap_or_default();
        BtreeIter {
            table,
            w: Window {
                data,
                spans,
                first: 0,
                leaf_count: 0,
                size: WINDOW_FIRST,
                place: None,
            },
            pos: 0,
            valid: false,
            bounds,
            edge,
            status: Ok(()),
        }
    }

    /// The table it reads.
    pub(crate) fn table(&self) -> &Arc<BtreeTable> {
        &self.table
    }

    /// Unpositioned and without an error, its buffers kept: for a cursor
    /// that reads the table again at a newer snapshot.
    pub(crate) fn reset(&mut self) {
        self.valid = false;
        self.status = Ok(());
        self.w.spans.clear();
        self.w.data.clear();
        self.w.place = None;
    }

    /// Loads the leaf for `target` and copies the entries `pick` chooses.
    /// False when the tree is empty or on error.
    fn load(&mut self, target: Target<'_>, pick: Pick<'_>) -> bool {
        let mut ctx = ReadContext::default();
        let result = self.load_counted(target, pick, &mut ctx);
        read_context::add(&ctx);
        match result {
            Ok(found) => found,
            Err(e) => {
                self.fail(e);
                false
            }
        }
    }

    fn load_counted(
        &mut self,
        target: Target<'_>,
        pick: Pick<'_>,
        ctx: &mut ReadContext,
    ) -> Result<bool> {
        let epoch = crossbeam_epoch::pin();
        // A leaf no frame holds, on a file read through a memory map, is
        // read from the map (`descend_or_map`): the iterator reads under a
        // registered snapshot, so the leaf as it was at any moment of the
        // descent holds what it reads, and it keeps no place to come back
        // to (its next load descends).
        let mapped = self.table.store.file.is_mapped();
        let mut buf = if mapped {
            take_leaf_buffer()
        } else {
            Vec::new()
        };
        let mut nothing = || {};
        let map = mapped.then_some(MapRead {
            buf: &mut buf,
            between: &mut nothing,
        });
        let reached = self
            .table
            .descend_or_map(target, Some(&mut self.bounds), ctx, &epoch, map);
        let result = match reached {
            Ok(None) => {
                self.w.data.clear();
                self.w.spans.clear();
                self.w.first = 0;
                self.w.leaf_count = 0;
                self.w.place = None;
                Ok(false)
            }
            Ok(Some(Reached::Leaf(leaf))) => {
                self.w.copy(&self.table, leaf, pick, ctx).map(|()| true)
            }
            Ok(Some(Reached::Mapped(_descent, _))) => {
                self.w.place = None;
                self.w
                    .copy_image(&self.table, &buf, pick, ctx)
                    .map(|()| true)
            }
            Err(e) => Err(e),
        };
        if mapped {
            give_back_leaf_buffer(buf);
        }
        result
    }

    /// Copies the entries `pick` chooses from the leaf the window came
    /// from (`beside` None) or the one beside it (`Some(forward)`), if the
    /// pages are unchanged since (`BtreeTable::again`, `beside`): no
    /// descent. None when they are not (the caller loads with a descent).
    fn reload(&mut self, beside: Option<bool>, pick: Pick<'_>) -> Option<bool> {
        let place = self.w.place?;
        let mut ctx = ReadContext::default();
        let epoch = crossbeam_epoch::pin();
        let leaf = match beside {
            None => Ok(self.table.again(&place, &mut ctx, &epoch)),
            Some(forward) => self
                .table
                .beside(&place, forward, &mut self.bounds, &mut ctx, &epoch),
        };
        let result = leaf.and_then(|leaf| match leaf {
            Some(leaf) => self
                .w
                .copy(&self.table, leaf, pick, &mut ctx)
                .map(|()| Some(true)),
            None => Ok(None),
        });
        read_context::add(&ctx);
        match result {
            Ok(loaded) => loaded,
            Err(e) => {
                self.fail(e);
                Some(false)
            }
        }
    }

    fn fail(&mut self, e: Error) {
        if self.status.is_ok() {
            self.status = Err(e);
        }
        self.valid = false;
    }

    fn span(&self) -> Span {
        self.w.spans.get(self.pos).copied().unwrap_or_default()
    }

    /// Moves forward from the current window until one with entries: the
    /// rest of the leaf after the window's last key, or the next leaf.
    fn settle_forward(&mut self) {
        while self.pos >= self.w.spans.len() {
            let mut edge = std::mem::take(&mut self.edge);
            let after = self.w.first + self.w.spans.len();
            let loaded = if after < self.w.leaf_count {
                // The leaf has entries after the window: the rest of it if
                // unchanged, else (the tree may have changed since the
                // window was copied) after its last key, wherever that now
                // is.
                self.reload(None, Pick::From(after)).unwrap_or_else(|| {
                    let last = self.w.spans.last().copied().unwrap_or_default();
                    Bounds::copy(&mut edge, last.key(&self.w.data));
                    self.load(Target::AtOrAfter(KeyRef::of(&edge)), Pick::After(&edge))
                })
            } else if self.bounds.high().is_some() {
                // The next leaf, or the first key not yet seen, wherever it
                // now is.
                self.reload(Some(true), Pick::First).unwrap_or_else(|| {
                    Bounds::copy(&mut edge, self.bounds.high().unwrap_or_default());
                    self.load(Target::AtOrAfter(KeyRef::of(&edge)), Pick::AtOrAfter(&edge))
                })
            } else {
                false
            };
            self.edge = edge;
            self.pos = 0;
            if !loaded {
                self.valid = false;
                return;
            }
        }
        self.valid = true;
    }

    /// Sets `pos` on the last entry of the current window, or, when it has
    /// none, goes back: the part of the leaf before the window's first
    /// entry, or the leaf before.
    fn settle_backward(&mut self) {
        while self.w.spans.is_empty() {
            let mut edge = std::mem::take(&mut self.edge);
            let first = self.w.first;
            let loaded = if first > 0 {
                // Before the entry the window started at: the leaf's
                // entries before it if unchanged, else wherever it now is
                // (`edge` holds its key).
                self.reload(None, Pick::Until(first)).unwrap_or_else(|| {
                    self.load(
                        Target::AtOrAfter(KeyRef::of(&edge)),
                        Pick::Before(Some(&edge)),
                    )
                })
            } else if self.bounds.low().is_some() {
                self.reload(Some(false), Pick::Before(None))
                    .unwrap_or_else(|| {
                        Bounds::copy(&mut edge, self.bounds.low().unwrap_or_default());
                        self.load(Target::Before(KeyRef::of(&edge)), Pick::Before(Some(&edge)))
                    })
            } else {
                false
            };
            self.edge = edge;
            if !loaded {
                self.valid = false;
                return;
            }
        }
        self.pos = self.w.spans.len() - 1;
        self.valid = true;
    }
}

impl Drop for BtreeIter {
    fn drop(&mut self) {
        if self.w.data.capacity() == 0 {
            return;
        }
        let buffers = Buffers {
            data: std::mem::take(&mut self.w.data),
            spans: std::mem::take(&mut self.w.spans),
            bounds: std::mem::take(&mut self.bounds),
            edge: std::mem::take(&mut self.edge),
        };
        let _ = SPARE_WINDOWS.try_with(|s| {
            if let Ok(mut s) = s.try_borrow_mut() {
                if s.len() < SPARE_WINDOWS_MAX {
                    s.push(buffers);
                }
            }
        });
    }
}

impl InternalIterator for BtreeIter {
    fn valid(&self) -> bool {
        self.valid
    }

    fn seek_to_first(&mut self) {
        self.valid = false;
        self.w.size = WINDOW_FIRST;
        if self.status.is_err() || !self.load(Target::First, Pick::First) {
            return;
        }
        self.pos = 0;
        self.settle_forward();
    }

    fn seek_to_last(&mut self) {
        self.valid = false;
        self.w.size = WINDOW_FIRST;
        if self.status.is_err() || !self.load(Target::Last, Pick::Before(None)) {
            return;
        }
        self.settle_backward();
    }

    fn seek(&mut self, target: &[u8]) {
        self.valid = false;
        self.w.size = WINDOW_FIRST;
        if self.status.is_err()
            || !self.load(
                Target::AtOrAfter(KeyRef::of(target)),
                Pick::AtOrAfter(target),
            )
        {
            return;
        }
        self.pos = 0;
        self.settle_forward();
    }

    fn next(&mut self) {
        if !self.valid {
            return;
        }
        self.pos += 1;
        self.settle_forward();
    }

    fn prev(&mut self) {
        if !self.valid {
            return;
        }
        if self.pos > 0 {
            self.pos -= 1;
            return;
        }
        // The last entry before this one: before the window.
        let first = self.w.spans.first().copied().unwrap_or_default();
        Bounds::copy(&mut self.edge, first.key(&self.w.data));
        self.w.spans.clear();
        self.w.data.clear();
        self.settle_backward();
    }

    fn key(&self) -> &[u8] {
        if !self.valid {
            return &[];
        }
        self.span().key(&self.w.data)
    }

    fn value(&self) -> &[u8] {
        if !self.valid {
            return &[];
        }
        self.span().value(&self.w.data)
    }

    fn status(&self) -> Result<()> {
        match &self.status {
            Ok(()) => Ok(()),
            Err(e) => Err(e.duplicate()),
        }
    }
}

/// Reads that walk leaves with an iterator: a point read whose key's
/// versions run into the next leaf, and a transaction's range check.
impl BtreeTable {
    /// The value of `user_key` read with an iterator at `seqno`: the
    /// answer to a `Lookup::Continue`, for a key whose versions run into the
    /// next leaf. The caller holds a registered snapshot at `seqno` (so
    /// that no version the read needs is pruned while it walks the leaves).
    /// True if found, its value appended to `value`.
    pub(crate) fn get_across_leaves(
        self: &Arc<Self>,
        user_key: &[u8],
        seqno: u64,
        value: &mut Vec<u8>,
    ) -> Result<bool> {
        let mut it = BtreeIter::new(Arc::clone(self));
        it.seek(&internal_key(user_key, seqno, KIND_SEEK));
        if !it.valid() {
            it.status()?;
            return Ok(false);
        }
        match ParsedKey::parse(it.key()) {
            Some(k) if k.user_key == user_key && k.kind == Kind::Put => {
                value.extend_from_slice(it.value());
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// The value of `user_key` as of `snapshot`, or as of now when None:
    /// true if found, its value appended to `value`. When the key's
    /// versions span two leaves (`Lookup::Continue`), the read goes on
    /// under what `hold` returns, given the seqno the read was at: a
    /// registered snapshot, so that no version is pruned meanwhile, and the
    /// seqno to read on at.
    pub(crate) fn get_into<H>(
        self: &Arc<Self>,
        user_key: &[u8],
        snapshot: Option<u64>,
        visible: &AtomicU64,
        value: &mut Vec<u8>,
        hold: impl FnOnce(u64) -> (H, u64),
    ) -> Result<bool> {
        match self.get(user_key, snapshot, visible, value)? {
            Lookup::Value => Ok(true),
            Lookup::Absent => Ok(false),
            Lookup::Continue(at) => {
                let (held, at) = hold(at);
                let found = self.get_across_leaves(user_key, at, value);
                drop(held);
                found
            }
        }
    }

    /// Whether a version of a key in `[start, end)` (an empty `end`: to the
    /// last key) newer than `after` is in the tree.
    pub(crate) fn written_in_range(
        self: &Arc<Self>,
        start: &[u8],
        end: &[u8],
        after: u64,
    ) -> Result<bool> {
        let it = BtreeIter::new(Arc::clone(self));
        crate::mvcc::iter::any_newer_in_range(it, start, end, after)
    }
}

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::*;
    use crate::mvcc::horizon::Horizon;
    use crate::mvcc::key::{internal_key, Kind};

    #[test]
    fn a_walk_across_windows_and_leaves_meets_every_entry_once() {
        // Goal: the iterator's own positioning, below the user cursor (which
        // would hide an entry shown twice): past a window it goes on after
        // the window's last key, or before its first, inside a leaf and
        // across leaves, and a seek lands on the first entry at or after
        // its target. Method: 3,000 keys in 4 KiB leaves (about thirty
        // entries each, two windows and more), some with two versions and
        // some values in overflow runs; random seeks and runs of steps both
        // ways, against the sorted entries (the values of a few hundred
        // KB end windows early: `WINDOW_BYTES_MAX`).
        let dir = tempfile::tempdir().expect("tempdir");
        let table = Arc::new(crate::btree::scratch_table(dir.path(), 4096, 0));
        let mut rng = StdRng::seed_from_u64(5);
        let mut want: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        {
            let mut st = table.writer();
            // A snapshot at every seqno: no version is pruned.
            let horizon = Horizon {
                visible: 1 << 40,
                snapshots: (1..=3600).collect(),
            };
            for seqno in 1..=3600u64 {
                let user = format!("key{:05}", rng.gen_range(0..3000u32)).into_bytes();
                // Some overflow values, and a few so large that a window
                // of them passes its byte budget.
                let len = match rng.gen_range(0..400) {
                    0..=9 => 400_000,
                    10..=17 => 5000,
                    _ => 40,
                };
                let value = vec![(seqno % 251) as u8; len];
                table
                    .apply(&mut st, seqno, Kind::Put, &user, &value, &horizon)
                    .expect("apply");
                want.push((internal_key(&user, seqno, Kind::Put), value));
            }
        }
        want.sort_by(|a, b| crate::mvcc::key::compare(&a.0, &b.0));
        let mut it = BtreeIter::new(Arc::clone(&table));
        let check = |it: &BtreeIter, at: Option<usize>, what: &str| match at {
            Some(i) => {
                assert!(it.valid(), "{what}: invalid at {i}");
                assert_eq!(it.key(), want[i].0.as_slice(), "{what}: key at {i}");
                assert_eq!(it.value(), want[i].1.as_slice(), "{what}: value at {i}");
            }
            None => assert!(!it.valid(), "{what}: valid past the ends"),
        };
        it.seek_to_first();
        check(&it, Some(0), "first");
        it.seek_to_last();
        check(&it, Some(want.len() - 1), "last");
        for round in 0..300 {
            let target = internal_key(
                format!("key{:05}", rng.gen_range(0..3001u32)).as_bytes(),
                rng.gen_range(0..4000),
                Kind::Put,
            );
            let mut at =
                Some(want.partition_point(|e| crate::mvcc::key::compare(&e.0, &target).is_lt()))
                    .filter(|&i| i < want.len());
            it.seek(&target);
            check(&it, at, &format!("round {round}, seek"));
            for step in 0..rng.gen_range(1..80) {
                let Some(i) = at else { break };
                if rng.gen_ratio(1, 8) || round % 2 == 0 {
                    it.prev();
                    at = i.checked_sub(1);
                } else {
                    it.next();
                    at = Some(i + 1).filter(|&j| j < want.len());
                }
                check(&it, at, &format!("round {round}, step {step}"));
            }
        }
        it.status().expect("status");
    }
}
