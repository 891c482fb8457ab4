//! B-tree pages: the slotted page layout, read and built in place
//! (docs/format.md#page-image).
//!
//! A page in memory is an *image* of `page_size - DISK_HEADER` bytes:
//! ```text
//! image  := header(16) slots(count x 6) free heap
//! header := kind u8 | prefix u8 | count u16 | heap u16 | garbage u16 | link u64
//! slot   := offset u16 | head [u8; 4]
//! ```
//! Slots hold the offsets of cells, in key order; cells fill the heap from
//! the end of the image down to `heap`. `garbage` counts the bytes of dead
//! cells inside the heap (reclaimed by `compact`). `link` is a branch's
//! leftmost child.
//!
//! Every user key in a page begins with the same `prefix` bytes, and a
//! slot's `head` holds the next four bytes of its cell's user key (zero
//! padded). A search compares heads in the slot array, which a few cache
//! lines hold, and reads cells only where heads tie: one or two cells per
//! search instead of one per probe.
//!
//! ```text
//! leaf cell   := ikey_len u15 | overflow u1 | ikey | inline | overflow
//!   inline    := value_len u16 | value                   (overflow 0)
//!   overflow  := value_len u32 | first u64 | pages u32   (overflow 1)
//! branch cell := ikey_len u16 | child u64 | ikey
//! ```
//! Keys are internal keys (user key + trailer, `mvcc::key`), so a leaf holds
//! versions, newest first within a user key. Branch cell `i` says that
//! `child` holds the keys at or above `ikey` (and below the next cell's).
//!
//! On disk each page is framed (checksummed, perhaps compressed): see
//! `format.rs`, whose constants the layout above uses.
//!
//! Everything here is pure, over a page image in memory. Thread-safety: the
//! caller holds the page's latch.

pub(crate) use super::format::{
    init, kind, link, set_link, u16_at, u32_at, u64_at, HEADER, KIND_BRANCH, KIND_FREE_MAP,
    KIND_LEAF, KIND_OVERFLOW, SLOT,
};
use super::format::{init_header, put_u16, put_u64, SLOTS_PREFETCHED};
use std::ops::Range;

use crate::mvcc::key::{self, KeyRef};

/// The longest prefix a page header records.
const PREFIX_MAX: usize = u8::MAX as usize;

fn head_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u32::from_be_bytes)
}

pub(crate) fn count(p: &[u8]) -> usize {
    u16_at(p, 2)
}

/// How many leading bytes every user key in the page shares.
fn prefix_len(p: &[u8]) -> usize {
    p.get(1).map_or(0, |&l| usize::from(l))
}

fn set_prefix_len(p: &mut [u8], len: usize) {
    if let Some(b) = p.get_mut(1) {
        *b = len.min(PREFIX_MAX) as u8;
    }
}

fn heap(p: &[u8]) -> usize {
    u16_at(p, 4)
}

fn garbage(p: &[u8]) -> usize {
    u16_at(p, 6)
}

/// Where slot `i` starts in the image.
fn slot_at(i: usize) -> usize {
    HEADER + SLOT * i
}

fn cell_offset(p: &[u8], i: usize) -> usize {
    u16_at(p, slot_at(i))
}

/// The head in slot `i`.
fn slot_head(p: &[u8], i: usize) -> u32 {
    head_at(p, slot_at(i) + 2)
}

fn put_slot(p: &mut [u8], i: usize, offset: usize, head: u32) {
    put_u16(p, slot_at(i), offset);
    if let Some(s) = p.get_mut(slot_at(i) + 2..slot_at(i) + SLOT) {
        s.copy_from_slice(&head.to_be_bytes());
    }
}

/// The four bytes of `user_key` after its first `prefix`, zero padded, as
/// a number that orders as they do: of two keys that share the prefix, the
/// one with the smaller head is the smaller key.
fn head(user_key: &[u8], prefix: usize) -> u32 {
    let rest = user_key.get(prefix..).unwrap_or_default();
    if let Some(b) = rest.get(..4).and_then(|b| <[u8; 4]>::try_from(b).ok()) {
        return u32::from_be_bytes(b);
    }
    // Built in a register: bytes copied into an array and read back as a
    // word stall the search (the load waits for the stores to retire).
    (0..4).fold(0u32, |h, i| {
        (h << 8) | u32::from(rest.get(i).copied().unwrap_or(0))
    })
}

/// How many leading bytes `a` and `b` share.
fn shared_len(a: &[u8], b: &[u8]) -> usize {
    key::compare_bytes_shared(a, b).1
}

/// Bytes free between the slots and the heap.
pub(crate) fn free_space(p: &[u8]) -> usize {
    heap(p).saturating_sub(slot_at(count(p)))
}

/// Bytes in use: header, slots and live cells.
pub(crate) fn used(p: &[u8]) -> usize {
    p.len().saturating_sub(free_space(p) + garbage(p))
}

/// A leaf cell's first field: its key's length, with the top bit set when
/// its value is in an overflow run.
const OVERFLOW_BIT: usize = 0x8000;

/// A raw leaf cell's key length, and whether its value is in an overflow
/// run.
fn leaf_key_len(c: &[u8]) -> (usize, bool) {
    let v = u16_at(c, 0);
    (v & !OVERFLOW_BIT, v & OVERFLOW_BIT != 0)
}

/// The bytes of a leaf cell after its key: the inline value's length and
/// the value, or the overflow run's length, first page and pages.
const OVERFLOW_FIELDS: usize = 4 + 8 + 4;

/// The length of the cell at `off`.
fn cell_len(p: &[u8], off: usize) -> usize {
    match kind(p) {
        KIND_BRANCH => 2 + 8 + u16_at(p, off),
        _ => match leaf_key_len(p.get(off..).unwrap_or_default()) {
            (klen, false) => inline_cell_len(klen, u16_at(p, off + 2 + klen)),
            (klen, true) => 2 + klen + OVERFLOW_FIELDS,
        },
    }
}

/// The internal key of cell `i`.
pub(crate) fn ikey(p: &[u8], i: usize) -> &[u8] {
    cell_key(p.get(cell_offset(p, i)..).unwrap_or_default(), kind(p))
}

/// The internal key of a raw cell of a page of `kind`.
pub(crate) fn cell_key(c: &[u8], kind: u8) -> &[u8] {
    let (klen, start) = match kind {
        KIND_BRANCH => (u16_at(c, 0), 10),
        _ => (leaf_key_len(c).0, 2),
    };
    c.get(start..start + klen).unwrap_or(&[])
}

/// A leaf cell's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Value<'a> {
    Inline(&'a [u8]),
    Overflow { len: u32, first: u64, pages: u32 },
}

pub(crate) fn value(p: &[u8], i: usize) -> Value<'_> {
    let off = cell_offset(p, i);
    cell_value(p.get(off..).unwrap_or(&[]))
}

/// Leaf cell `i`'s internal key and value, from one read of its offset.
pub(crate) fn leaf_entry(p: &[u8], i: usize) -> (&[u8], Value<'_>) {
    let c = p.get(cell_offset(p, i)..).unwrap_or_default();
    (cell_key(c, KIND_LEAF), cell_value(c))
}

/// Leaf cell `i` as one slice when its value is inline: its internal key,
/// the value's length (`u16`), and the value, with the key's length. None
/// for a value in an overflow run. A cursor copies an entry with one copy.
pub(crate) fn leaf_inline_cell(p: &[u8], i: usize) -> Option<(&[u8], usize)> {
    let c = p.get(cell_offset(p, i)..).unwrap_or_default();
    let (klen, overflow) = leaf_key_len(c);
    if overflow {
        return None;
    }
    let len = u16_at(c, 2 + klen);
    c.get(2..2 + klen + 2 + len).map(|body| (body, klen))
}

/// The value of a raw leaf cell (see `cell_bytes`).
pub(crate) fn cell_value(c: &[u8]) -> Value<'_> {
    let (klen, overflow) = leaf_key_len(c);
    let at = 2 + klen;
    match overflow {
        false => {
            let len = u16_at(c, at);
            Value::Inline(c.get(at + 2..at + 2 + len).unwrap_or(&[]))
        }
        true => Value::Overflow {
            len: u32_at(c, at),
            first: u64_at(c, at + 4),
            pages: u32_at(c, at + 12),
        },
    }
}

/// Points overflow cell `i` of a leaf at a run starting at `first`.
pub(crate) fn set_overflow_first(p: &mut [u8], i: usize, first: u64) {
    let off = cell_offset(p, i);
    if let (klen, true) = leaf_key_len(p.get(off..).unwrap_or_default()) {
        put_u64(p, off + 2 + klen + 4, first);
    }
}

/// A branch cell's child.
pub(crate) fn child(p: &[u8], i: usize) -> u64 {
    u64_at(p, cell_offset(p, i) + 2)
}

/// The child of a branch that covers slot position `pos`: the leftmost
/// child for 0, else the child of cell `pos - 1`.
pub(crate) fn child_at(p: &[u8], pos: usize) -> u64 {
    if pos == 0 {
        link(p)
    } else {
        child(p, pos - 1)
    }
}

pub(crate) fn set_child_at(p: &mut [u8], pos: usize, pgno: u64) {
    if pos == 0 {
        set_link(p, pgno);
    } else {
        let off = cell_offset(p, pos - 1);
        put_u64(p, off + 2, pgno);
    }
}

/// Builds a leaf cell. The caller keeps the cell within the largest a page
/// takes (`format::max_cell_len`, checked with `inline_cell_len` before an
/// inline value), so that the key's and the inline value's lengths fit
/// their fields.
pub(crate) fn leaf_cell(ikey: &[u8], value: Value<'_>) -> Vec<u8> {
    let mut c = Vec::with_capacity(match value {
        Value::Inline(v) => inline_cell_len(ikey.len(), v.len()),
        Value::Overflow { .. } => 2 + ikey.len() + OVERFLOW_FIELDS,
    });
    match value {
        Value::Inline(v) => {
            c.extend_from_slice(&(ikey.len() as u16).to_le_bytes());
            c.extend_from_slice(ikey);
            c.extend_from_slice(&(v.len() as u16).to_le_bytes());
            c.extend_from_slice(v);
        }
        Value::Overflow { len, first, pages } => {
            c.extend_from_slice(&((ikey.len() | OVERFLOW_BIT) as u16).to_le_bytes());
            c.extend_from_slice(ikey);
            c.extend_from_slice(&len.to_le_bytes());
            c.extend_from_slice(&first.to_le_bytes());
            c.extend_from_slice(&pages.to_le_bytes());
        }
    }
    c
}

/// The length of a leaf cell holding a key of `ikey_len` bytes and a value
/// of `value_len` inline.
pub(crate) fn inline_cell_len(ikey_len: usize, value_len: usize) -> usize {
    2 + ikey_len + 2 + value_len
}

/// Builds a branch cell.
pub(crate) fn branch_cell(ikey: &[u8], child: u64) -> Vec<u8> {
    let mut c = Vec::with_capacity(ikey.len() + 10);
    c.extend_from_slice(&(ikey.len() as u16).to_le_bytes());
    c.extend_from_slice(&child.to_le_bytes());
    c.extend_from_slice(ikey);
    c
}

/// The raw bytes of cell `i` (to move it to another page).
pub(crate) fn cell_bytes(p: &[u8], i: usize) -> &[u8] {
    let off = cell_offset(p, i);
    p.get(off..off + cell_len(p, off)).unwrap_or(&[])
}

/// Asks the CPU to start loading the cell of slot `i` (if there is one),
/// so that the misses of a cold page overlap instead of coming one after
/// the other.
#[inline]
fn prefetch_cell(p: &[u8], i: usize) {
    if i < count(p) {
        crate::prefetch::prefetch(p.get(cell_offset(p, i)..).unwrap_or_default());
    }
}

/// Asks the CPU to start loading the cells of the slots in `range`, all
/// at once (a cursor's window of a leaf).
pub(crate) fn prefetch_cells(p: &[u8], range: Range<usize>) {
    let end = range.end.min(count(p));
    let Some(slots) = p.get(HEADER + range.start * SLOT..HEADER + end * SLOT) else {
        return;
    };
    let base = p.as_ptr() as usize;
    for s in slots.as_chunks::<SLOT>().0 {
        // A cell's first three lines: its length is on the first, which
        // has not arrived yet. (A prefetch of any address is harmless: a
        // damaged offset costs a wasted load.)
        crate::prefetch::prefetch_lines(base + usize::from(u16::from_le_bytes([s[0], s[1]])), 3);
    }
}

/// The first slot position in `lo..hi` where `before` is false, for a
/// `before` that is true up to some position and false after it.
fn partition(mut lo: usize, mut hi: usize, mut before: impl FnMut(usize) -> bool) -> usize {
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if before(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// The heads of a page's slots, read out of its slot array.
struct Heads<'a> {
    slots: &'a [[u8; SLOT]],
}

impl Heads<'_> {
    /// The head of slot `i` (0 past the array, which no search asks for).
    #[inline]
    fn at(&self, i: usize) -> u32 {
        self.slots
            .get(i)
            .map_or(0, |s| u32::from_be_bytes([s[2], s[3], s[4], s[5]]))
    }

    /// The first slot whose head is not below `head`: a binary search whose
    /// steps do not branch on the heads' order, so that a cold page costs
    /// its misses and no mispredictions. Returns it and the heads compared.
    #[inline]
    fn first_not_below(&self, head: u32) -> (usize, u64) {
        let n = self.slots.len();
        if n == 0 {
            return (0, 0);
        }
        let (mut base, mut size, mut probes) = (0, n, 1);
        while size > 1 {
            let half = size / 2;
            // A select, not a branch: which way a probe goes is a coin toss
            // the branch predictor loses half the time.
            base = std::hint::select_unpredictable(self.at(base + half) < head, base + half, base);
            size -= half;
            probes += 1;
        }
        (base + usize::from(self.at(base) < head), probes)
    }
}

/// How many cells of `p` come before `target`: those whose key is below it,
/// or also those equal to it when `or_equal`. Heads narrow the search to
/// the cells whose head ties the target's (usually none or one); full keys
/// decide among those. `compared` counts the heads and keys compared.
fn search(
    p: &[u8],
    target: KeyRef<'_>,
    or_equal: bool,
    window: usize,
    compared: &mut u64,
) -> usize {
    let n = count(p);
    // A page whose header counts more slots than the image holds is
    // refused when read (`check_structure`); this one never is.
    let Some(slots) = p.get(HEADER..HEADER + n * SLOT) else {
        return 0;
    };
    // The slots past the lines the finder prefetched start loading
    // together, not one probe's miss after the other.
    let slots_end = HEADER + n * SLOT;
    crate::prefetch::prefetch_lines(
        p.as_ptr() as usize + SLOTS_PREFETCHED,
        slots_end.saturating_sub(SLOTS_PREFETCHED).div_ceil(64),
    );
    let heads = Heads {
        slots: slots.as_chunks::<SLOT>().0,
    };
    let prefix = prefix_len(p);
    let t = target.user_key;
    let th = head(t, prefix);
    let (lo, mut probes) = heads.first_not_below(th);
    // The cell the caller reads next: the child's separator in a branch,
    // the found key in a leaf.
    let probe = if or_equal { lo.saturating_sub(1) } else { lo };
    if window > 0 {
        // The cells a cursor copies next, loading beside the one the
        // search compares (the heads place the target within one slot).
        prefetch_cells(p, lo.saturating_sub(1)..lo + window);
    } else {
        prefetch_cell(p, probe.min(n.saturating_sub(1)));
    }
    // The cells whose heads tie the target's follow `lo`: a few at most
    // unless the keys share more than the page's prefix and four bytes.
    let mut hi = lo;
    while hi < n && heads.at(hi) == th {
        hi += 1;
        probes += 1;
        if hi - lo == 4 {
            hi = partition(hi, n, |i| {
                probes += 1;
                heads.at(i) <= th
            });
            break;
        }
    }
    if prefix > 0 && n > 0 {
        // Heads order the target among the cells only if it shares their
        // prefix; if it does not, it is below or above them all. The cell
        // read to know: the one tie, when there is one (then this one
        // comparison also places the target against it), else the one
        // the caller reads next.
        let cell = if hi == lo + 1 { lo } else { probe.min(n - 1) };
        let cell_key = ikey(p, cell);
        probes += 1;
        let (order, shared) = key::compare_bytes_shared(t, key::user_key(cell_key));
        if shared < prefix {
            *compared += probes;
            return if order.is_lt() { 0 } else { n };
        }
        if hi == lo + 1 {
            // The target against the one tie, as internal keys order:
            // user keys, then trailers, the larger (newer) first.
            let order = order.then_with(|| key::trailer(cell_key).cmp(&target.trailer));
            let before = order.is_gt() || (or_equal && order.is_eq());
            *compared += probes;
            return lo + usize::from(before);
        }
    }
    let pos = partition(lo, hi, |mid| {
        prefetch_cell(p, lo + (mid - lo) / 2);
        prefetch_cell(p, mid + 1 + (hi - mid - 1) / 2);
        probes += 1;
        let order = key::compare_to(ikey(p, mid), target);
        order.is_lt() || (or_equal && order.is_eq())
    });
    *compared += probes;
    pos
}

/// The first slot position whose key is >= `target` (`count` if none).
pub(crate) fn lower_bound(p: &[u8], target: KeyRef<'_>, compared: &mut u64) -> usize {
    search(p, target, false, 0, compared)
}

/// `lower_bound` for a cursor that copies the `window` cells from there:
/// they start loading before the search reads its first cell, so that
/// their misses overlap its own.
pub(crate) fn lower_bound_then(
    p: &[u8],
    target: KeyRef<'_>,
    window: usize,
    compared: &mut u64,
) -> usize {
    search(p, target, false, window, compared)
}

/// The child position of a branch to descend into for `target`: the last
/// cell whose key is <= `target`, plus one (0: the leftmost child).
pub(crate) fn branch_position(p: &[u8], target: KeyRef<'_>, compared: &mut u64) -> usize {
    search(p, target, true, 0, compared)
}

/// Whether a cell of `len` bytes fits, perhaps after `compact`.
pub(crate) fn fits(p: &[u8], len: usize) -> bool {
    free_space(p) + garbage(p) >= len + SLOT
}

/// Inserts `cell` at slot position `pos`. False when it does not fit even
/// after compacting.
pub(crate) fn insert(p: &mut [u8], pos: usize, cell: &[u8]) -> bool {
    if !fits(p, cell.len()) {
        return false;
    }
    if free_space(p) < cell.len() + SLOT {
        compact(p);
    }
    keep_prefix(p, key::user_key(cell_key(cell, kind(p))));
    place(p, pos, cell);
    true
}

/// Puts `cell` at slot position `pos`, for a caller that has made room for
/// it and kept the page's prefix to one its key shares.
fn place(p: &mut [u8], pos: usize, cell: &[u8]) {
    let n = count(p);
    let user_key = key::user_key(cell_key(cell, kind(p)));
    let new_heap = heap(p) - cell.len();
    if let Some(dst) = p.get_mut(new_heap..new_heap + cell.len()) {
        dst.copy_from_slice(cell);
    }
    p.copy_within(slot_at(pos)..slot_at(n), slot_at(pos + 1));
    put_slot(p, pos, new_heap, head(user_key, prefix_len(p)));
    put_u16(p, 2, n + 1);
    put_u16(p, 4, new_heap);
}

/// Shortens the page's prefix to what `user_key` shares with it (the
/// whole key, up to `PREFIX_MAX`, in an empty page), and rewrites every
/// slot's head if it changed.
fn keep_prefix(p: &mut [u8], user_key: &[u8]) {
    let n = count(p);
    if n == 0 {
        set_prefix_len(p, user_key.len());
        return;
    }
    let prefix = prefix_len(p);
    let first = key::user_key(ikey(p, 0));
    let shared = shared_len(first.get(..prefix).unwrap_or(first), user_key);
    if shared < prefix {
        set_prefix_len(p, shared);
        for i in 0..n {
            let h = head(key::user_key(ikey(p, i)), shared);
            put_slot(p, i, cell_offset(p, i), h);
        }
    }
}

/// Removes the cell at slot position `pos`.
pub(crate) fn remove(p: &mut [u8], pos: usize) {
    let n = count(p);
    if pos >= n {
        return;
    }
    let off = cell_offset(p, pos);
    let len = cell_len(p, off);
    p.copy_within(slot_at(pos + 1)..slot_at(n), slot_at(pos));
    put_u16(p, 2, n - 1);
    if off == heap(p) {
        put_u16(p, 4, off + len);
    } else {
        let g = garbage(p) + len;
        put_u16(p, 6, g);
    }
}

/// Rewrites the heap without garbage (from one copy of the page, not a
/// copy of each cell).
pub(crate) fn compact(p: &mut [u8]) {
    let src = p.to_vec();
    let cells: Vec<&[u8]> = (0..count(&src)).map(|i| cell_bytes(&src, i)).collect();
    rebuild(p, &cells);
}

/// Replaces every cell of `p` with `cells`, in order (the kind and link
/// stay; cells that do not fit are left out). The prefix is the longest
/// the cells' keys share.
pub(crate) fn rebuild<C: AsRef<[u8]>>(p: &mut [u8], cells: &[C]) {
    let (k, l) = (kind(p), link(p));
    // The header, then the slots and cells; only the space left between
    // them is zeroed, not the whole page first (a leaf rebuilt 31/32 full
    // wrote most of its bytes twice).
    init_header(p, k, l);
    let len = p.len();
    if let Some(first) = cells.first() {
        let first = key::user_key(cell_key(first.as_ref(), k));
        let shared = cells
            .iter()
            .map(|c| shared_len(first, key::user_key(cell_key(c.as_ref(), k))))
            .min()
            .unwrap_or(0);
        set_prefix_len(p, shared);
    }
    // Appended in one pass, the header's count and heap written once at
    // the end (`place`, which inserts anywhere, was most of a prune's
    // instructions).
    let prefix = prefix_len(p);
    let (mut n, mut heap) = (0, len);
    for c in cells {
        let c = c.as_ref();
        if heap < slot_at(n + 1) + c.len() {
            continue;
        }
        heap -= c.len();
        if let Some(dst) = p.get_mut(heap..heap + c.len()) {
            dst.copy_from_slice(c);
        }
        put_slot(p, n, heap, head(key::user_key(cell_key(c, k)), prefix));
        n += 1;
    }
    put_u16(p, 2, n);
    put_u16(p, 4, heap);
    if let Some(gap) = p.get_mut(slot_at(n)..heap) {
        gap.fill(0);
    }
}

/// Checks that an image read from disk is well formed: a known kind, slots
/// and cells inside the image, and keys in order. Returns what is wrong.
pub(crate) fn check_structure(p: &[u8]) -> std::result::Result<(), String> {
    let k = kind(p);
    if !matches!(k, KIND_LEAF | KIND_BRANCH | KIND_OVERFLOW | KIND_FREE_MAP) {
        return Err(format!("unknown page kind {k}"));
    }
    if matches!(k, KIND_OVERFLOW | KIND_FREE_MAP) {
        return Ok(());
    }
    let n = count(p);
    let h = heap(p);
    if slot_at(n) > h || h > p.len() || garbage(p) > p.len() - h {
        return Err(format!(
            "bad page header: {n} cells, heap at {h}, {} garbage bytes",
            garbage(p)
        ));
    }
    let prefix = prefix_len(p);
    // Where each cell lies, to check that none overlaps another and that
    // the heap holds exactly the cells and the garbage the header counts:
    // the writer removes, compacts and inserts on that count. A span is
    // the cell's offset in the high half and its length in the low half,
    // so that spans sort as numbers. (This check runs on every page read
    // from the file; with pairs sorted and each cell's key found three
    // times, it and its sort were a sixth of a B-tree read that missed
    // the cache.)
    let mut spans: Vec<u64> = Vec::with_capacity(n);
    // Each cell's key is found once: the first's for the prefix, the
    // previous one's for the order.
    let mut first: &[u8] = &[];
    let mut previous: &[u8] = &[];
    for i in 0..n {
        let off = cell_offset(p, i);
        let cell = p.get(off..).unwrap_or_default();
        if off < h || cell.len() < 2 {
            return Err(format!("cell {i} at {off} is outside the heap"));
        }
        let (klen, fixed) = match k {
            KIND_BRANCH => (u16_at(cell, 0), 2 + 8),
            _ => match leaf_key_len(cell) {
                (klen, false) => (klen, 2 + 2),
                (klen, true) => (klen, 2 + OVERFLOW_FIELDS),
            },
        };
        if fixed + klen > cell.len() || klen < key::TRAILER_BYTES {
            return Err(format!("cell {i} key of {klen} bytes runs past the page"));
        }
        let len = cell_len(p, off);
        if len > cell.len() {
            return Err(format!("cell {i} runs past the page"));
        }
        spans.push(((off as u64) << 32) | len as u64);
        let ikey = cell_key(cell, k);
        if key::ParsedKey::parse(ikey).is_none() {
            return Err(format!("cell {i} has a bad key trailer"));
        }
        let user_key = key::user_key(ikey);
        if i == 0 {
            first = user_key;
        }
        if user_key.len() < prefix || shared_len(first, user_key) < prefix {
            return Err(format!(
                "cell {i} does not begin with the page's {prefix}-byte prefix"
            ));
        }
        if slot_head(p, i) != head(user_key, prefix) {
            return Err(format!("slot {i}'s head does not match its cell's key"));
        }
        if i > 0 && !key::compare(previous, ikey).is_lt() {
            return Err(format!("cells {} and {i} are out of order", i - 1));
        }
        previous = ikey;
    }
    let start = |span: u64| (span >> 32) as usize;
    let length = |span: u64| (span & u64::from(u32::MAX)) as usize;
    spans.sort_unstable();
    if let Some(w) = spans
        .windows(2)
        .find(|w| start(w[0]) + length(w[0]) > start(w[1]))
    {
        return Err(format!(
            "the cells at {} and {} overlap",
            start(w[0]),
            start(w[1])
        ));
    }
    let cell_bytes: usize = spans.iter().map(|&s| length(s)).sum();
    if cell_bytes + garbage(p) != p.len() - h {
        return Err(format!(
            "the heap's {} bytes are not its cells' {cell_bytes} and its {} garbage bytes",
            p.len() - h,
            garbage(p)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::btree::format::DISK_HEADER;
    use crate::mvcc::key::{internal_key, Kind};

    fn leaf(len: usize) -> Vec<u8> {
        let mut p = vec![0u8; len];
        init(&mut p, KIND_LEAF, 0);
        p
    }

    /// A 4 KiB leaf holding `keys` (in order), each with the value "v".
    fn leaf_of(keys: &[&str]) -> Vec<u8> {
        let mut p = leaf(4096 - DISK_HEADER);
        for (i, k) in keys.iter().enumerate() {
            let ik = internal_key(k.as_bytes(), 1, Kind::Put);
            assert!(insert(&mut p, i, &leaf_cell(&ik, Value::Inline(b"v"))));
        }
        p
    }

    #[test]
    fn cells_stay_sorted_and_removal_reclaims_space() {
        let mut p = leaf(4096 - DISK_HEADER);
        let empty_free = free_space(&p);
        for k in [5u32, 1, 3, 2, 4] {
            let ik = internal_key(format!("k{k}").as_bytes(), 1, Kind::Put);
            let mut c = 0;
            let pos = lower_bound(&p, KeyRef::of(&ik), &mut c);
            assert!(insert(&mut p, pos, &leaf_cell(&ik, Value::Inline(b"v"))));
        }
        let keys: Vec<_> = (0..count(&p))
            .map(|i| key::user_key(ikey(&p, i)).to_vec())
            .collect();
        assert_eq!(keys, [b"k1", b"k2", b"k3", b"k4", b"k5"]);
        assert_eq!(value(&p, 0), Value::Inline(b"v"));
        check_structure(&p).expect("well formed");
        for _ in 0..5 {
            remove(&mut p, 0);
        }
        compact(&mut p);
        assert_eq!(free_space(&p), empty_free);
    }

    #[test]
    fn a_full_page_refuses_and_compaction_reuses_garbage() {
        let mut p = leaf(4096 - DISK_HEADER);
        let mut n = 0u32;
        loop {
            let ik = internal_key(&n.to_be_bytes(), 1, Kind::Put);
            if !insert(
                &mut p,
                n as usize,
                &leaf_cell(&ik, Value::Inline(&[7; 100])),
            ) {
                break;
            }
            n += 1;
        }
        assert!(n > 30);
        remove(&mut p, 3);
        let ik = internal_key(&3u32.to_be_bytes(), 1, Kind::Put);
        assert!(insert(&mut p, 3, &leaf_cell(&ik, Value::Inline(&[8; 100]))));
        assert_eq!(value(&p, 3), Value::Inline(&[8; 100]));
        check_structure(&p).expect("well formed");
    }

    /// Keys over a few bytes, so that they share prefixes, tie in their
    /// heads, and are prefixes of one another.
    fn small_key(rng: &mut impl rand::Rng, shared: f64) -> Vec<u8> {
        let len = rng.gen_range(0..9);
        let mut k: Vec<u8> = (0..len).map(|_| rng.gen_range(0..3u8)).collect();
        if rng.gen_bool(shared) {
            k.splice(0..0, *b"shared-");
        }
        k
    }

    #[test]
    fn searches_by_heads_agree_with_a_scan_of_the_keys() {
        // Goal: whatever the keys (sharing a prefix, tying in their heads,
        // prefixes of one another) and wherever the target falls (inside,
        // below or above the page's prefix), `lower_bound` and
        // `branch_position` find what a scan of the full keys finds, in
        // pages built by inserts in any order and by `rebuild`.
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        let mut with_prefix = 0;
        for round in 0..300 {
            let mut p = leaf(4096 - DISK_HEADER);
            // Most pages' keys share "shared-"; a third mix them.
            let shared = if round % 3 == 0 { 0.5 } else { 1.0 };
            for _ in 0..rng.gen_range(0..40) {
                let ik = internal_key(&small_key(&mut rng, shared), rng.gen_range(1..4), Kind::Put);
                let mut c = 0;
                let pos = lower_bound(&p, KeyRef::of(&ik), &mut c);
                if pos < count(&p) && ikey(&p, pos) == ik.as_slice() {
                    continue;
                }
                assert!(insert(&mut p, pos, &leaf_cell(&ik, Value::Inline(b"v"))));
            }
            if round % 2 == 1 {
                let cells: Vec<Vec<u8>> =
                    (0..count(&p)).map(|i| cell_bytes(&p, i).to_vec()).collect();
                rebuild(&mut p, &cells);
            }
            check_structure(&p).expect("well formed");
            with_prefix += usize::from(prefix_len(&p) > 0);
            let keys: Vec<Vec<u8>> = (0..count(&p)).map(|i| ikey(&p, i).to_vec()).collect();
            for _ in 0..50 {
                let t = internal_key(&small_key(&mut rng, 0.5), rng.gen_range(0..5), Kind::Put);
                let below = keys.iter().filter(|k| key::compare(k, &t).is_lt()).count();
                let at_or_below = keys.iter().filter(|k| key::compare(k, &t).is_le()).count();
                let mut c = 0;
                assert_eq!(
                    lower_bound(&p, KeyRef::of(&t), &mut c),
                    below,
                    "{t:?} in {keys:?}"
                );
                assert_eq!(
                    branch_position(&p, KeyRef::of(&t), &mut c),
                    at_or_below,
                    "{t:?} in {keys:?}"
                );
            }
        }
        assert!(with_prefix > 150, "{with_prefix} pages had a prefix");
    }

    #[test]
    fn a_wrong_head_or_prefix_is_caught_when_the_page_is_read() {
        // Goal: heads steer searches without reading the keys, so a page
        // whose heads or prefix disagree with its keys is refused.
        let p = leaf_of(&["row-10", "row-11", "row-20"]);
        assert_eq!(prefix_len(&p), 4);
        assert_eq!(slot_head(&p, 2), u32::from_be_bytes(*b"20\0\0"));
        check_structure(&p).expect("well formed");

        let mut bad = p.clone();
        put_slot(&mut bad, 1, cell_offset(&p, 1), 0);
        let why = check_structure(&bad).expect_err("a zero head");
        assert!(why.contains("slot 1's head"), "{why}");

        // A prefix longer than the keys share, with heads that follow it.
        let mut bad = p.clone();
        set_prefix_len(&mut bad, 5);
        for i in 0..3 {
            let h = head(key::user_key(ikey(&p, i)), 5);
            put_slot(&mut bad, i, cell_offset(&p, i), h);
        }
        let why = check_structure(&bad).expect_err("a prefix too long");
        assert!(why.contains("prefix"), "{why}");
    }

    #[test]
    fn cells_that_overlap_or_a_heap_the_header_miscounts_are_caught() {
        // Goal: the writer removes, compacts and inserts trusting the
        // header's heap and garbage counts, so a page whose cells overlap,
        // or whose heap holds more or less than its cells and garbage, is
        // refused when read (a fuzzer found a page that passed the check
        // and failed it after one removal).
        let p = leaf_of(&["a", "b", "c"]);
        check_structure(&p).expect("well formed");

        let mut bad = p.clone();
        put_u16(&mut bad, 6, 5);
        let why = check_structure(&bad).expect_err("garbage miscounted");
        assert!(why.contains("garbage"), "{why}");

        // A second slot pointing into the first cell's value, which holds
        // the bytes of a well-formed cell of a later key.
        let (a, b) = (
            internal_key(b"a", 1, Kind::Put),
            internal_key(b"b", 1, Kind::Put),
        );
        let inner = leaf_cell(&b, Value::Inline(b"v"));
        let mut bad = leaf(4096 - DISK_HEADER);
        assert!(insert(&mut bad, 0, &leaf_cell(&a, Value::Inline(&inner))));
        set_prefix_len(&mut bad, 0);
        let off_a = cell_offset(&bad, 0);
        put_slot(&mut bad, 0, off_a, head(b"a", 0));
        put_slot(&mut bad, 1, off_a + 2 + a.len() + 2, head(b"b", 0));
        put_u16(&mut bad, 2, 2);
        let why = check_structure(&bad).expect_err("a cell inside another");
        assert!(why.contains("overlap"), "{why}");
    }
}
