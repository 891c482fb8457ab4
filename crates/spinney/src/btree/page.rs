//! B-tree pages: the slotted page layout, read and built in place
//! (docs/format.md#page-image).
//!
//! A page in memory is an *image* of `page_size - DISK_HEADER` bytes:
//! ```text
//! image  := header(16) slots(count x u16) free heap
//! header := kind u8 | flags u8 | count u16 | heap u16 | garbage u16 | link u64
//! ```
//! Slots hold the offsets of cells, in key order; cells fill the heap from
//! the end of the image down to `heap`. `garbage` counts the bytes of dead
//! cells inside the heap (reclaimed by `compact`). `link` is a branch's
//! leftmost child.
//!
//! ```text
//! leaf cell   := ikey_len u16 | tag u8 | ikey | inline | overflow
//!   inline    := value_len u32 | value            (tag 0)
//!   overflow  := value_len u32 | first u64 | pages u32   (tag 1)
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

pub(crate) use super::format::{HEADER, KIND_BRANCH, KIND_FREE_MAP, KIND_LEAF, KIND_OVERFLOW};
use crate::mvcc::key;

// Field access. Images are checked by `check_structure` when read, and
// built only by the functions below, so these reads stay in bounds; they
// return zeros rather than panic if they ever do not.

pub(crate) fn u16_at(b: &[u8], at: usize) -> usize {
    b.get(at..at + 2)
        .and_then(|s| s.try_into().ok())
        .map_or(0, |a| u16::from_le_bytes(a) as usize)
}

pub(crate) fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u32::from_le_bytes)
}

pub(crate) fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

fn put_u16(b: &mut [u8], at: usize, v: usize) {
    if let Some(s) = b.get_mut(at..at + 2) {
        s.copy_from_slice(&(v as u16).to_le_bytes());
    }
}

fn put_u64(b: &mut [u8], at: usize, v: u64) {
    if let Some(s) = b.get_mut(at..at + 8) {
        s.copy_from_slice(&v.to_le_bytes());
    }
}

pub(crate) fn kind(p: &[u8]) -> u8 {
    p.first().copied().unwrap_or(0)
}

pub(crate) fn count(p: &[u8]) -> usize {
    u16_at(p, 2)
}

fn heap(p: &[u8]) -> usize {
    u16_at(p, 4)
}

fn garbage(p: &[u8]) -> usize {
    u16_at(p, 6)
}

pub(crate) fn link(p: &[u8]) -> u64 {
    u64_at(p, 8)
}

pub(crate) fn set_link(p: &mut [u8], v: u64) {
    put_u64(p, 8, v);
}

/// Makes `p` an empty page of `kind`.
pub(crate) fn init(p: &mut [u8], kind: u8, link: u64) {
    p.fill(0);
    if let Some(k) = p.first_mut() {
        *k = kind;
    }
    let len = p.len();
    put_u16(p, 4, len);
    set_link(p, link);
}

fn cell_offset(p: &[u8], i: usize) -> usize {
    u16_at(p, HEADER + 2 * i)
}

/// Bytes free between the slots and the heap.
pub(crate) fn free_space(p: &[u8]) -> usize {
    heap(p).saturating_sub(HEADER + 2 * count(p))
}

/// Bytes in use: header, slots and live cells.
pub(crate) fn used(p: &[u8]) -> usize {
    p.len().saturating_sub(free_space(p) + garbage(p))
}

/// The length of the cell at `off`.
fn cell_len(p: &[u8], off: usize) -> usize {
    let klen = u16_at(p, off);
    match kind(p) {
        KIND_BRANCH => 2 + 8 + klen,
        _ => match p.get(off + 2) {
            Some(0) => 2 + 1 + klen + 4 + u32_at(p, off + 3 + klen) as usize,
            _ => 2 + 1 + klen + 4 + 8 + 4,
        },
    }
}

/// The internal key of cell `i`.
pub(crate) fn ikey(p: &[u8], i: usize) -> &[u8] {
    let off = cell_offset(p, i);
    let klen = u16_at(p, off);
    let start = off + if kind(p) == KIND_BRANCH { 10 } else { 3 };
    p.get(start..start + klen).unwrap_or(&[])
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

/// The value of a raw leaf cell (see `cell_bytes`).
pub(crate) fn cell_value(c: &[u8]) -> Value<'_> {
    let klen = u16_at(c, 0);
    let at = 3 + klen;
    let len = u32_at(c, at);
    match c.get(2) {
        Some(0) => Value::Inline(c.get(at + 4..at + 4 + len as usize).unwrap_or(&[])),
        _ => Value::Overflow {
            len,
            first: u64_at(c, at + 4),
            pages: u32_at(c, at + 12),
        },
    }
}

/// Whether leaf cell `i` keeps its value in an overflow run (reads the
/// cell's tag only).
pub(crate) fn is_overflow(p: &[u8], i: usize) -> bool {
    p.get(cell_offset(p, i) + 2).is_some_and(|&tag| tag != 0)
}

/// Points overflow cell `i` of a leaf at a run starting at `first`.
pub(crate) fn set_overflow_first(p: &mut [u8], i: usize, first: u64) {
    let off = cell_offset(p, i);
    if p.get(off + 2) == Some(&1) {
        let klen = u16_at(p, off);
        put_u64(p, off + 3 + klen + 4, first);
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

/// Builds a leaf cell.
pub(crate) fn leaf_cell(ikey: &[u8], value: Value<'_>) -> Vec<u8> {
    let mut c = Vec::with_capacity(ikey.len() + 20);
    c.extend_from_slice(&(ikey.len() as u16).to_le_bytes());
    match value {
        Value::Inline(v) => {
            c.push(0);
            c.extend_from_slice(ikey);
            c.extend_from_slice(&(v.len() as u32).to_le_bytes());
            c.extend_from_slice(v);
        }
        Value::Overflow { len, first, pages } => {
            c.push(1);
            c.extend_from_slice(ikey);
            c.extend_from_slice(&len.to_le_bytes());
            c.extend_from_slice(&first.to_le_bytes());
            c.extend_from_slice(&pages.to_le_bytes());
        }
    }
    c
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

/// The first slot position whose key is >= `target` (`count` if none).
/// Asks the CPU to start loading the cell of slot `i` (if there is one):
/// a binary search prefetches the two cells it may probe next while it
/// compares this one, so that a cold page's misses overlap instead of
/// coming one after the other.
#[inline]
fn prefetch_cell(p: &[u8], i: usize) {
    if i < count(p) {
        crate::prefetch::prefetch(p.get(cell_offset(p, i)..).unwrap_or_default());
    }
}

pub(crate) fn lower_bound(p: &[u8], target: &[u8], compared: &mut u64) -> usize {
    let (mut lo, mut hi) = (0, count(p));
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        prefetch_cell(p, lo + (mid - lo) / 2);
        prefetch_cell(p, mid + 1 + (hi - mid - 1) / 2);
        *compared += 1;
        if key::compare(ikey(p, mid), target).is_lt() {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// The child position of a branch to descend into for `target`: the last
/// cell whose key is <= `target`, plus one (0: the leftmost child).
pub(crate) fn branch_position(p: &[u8], target: &[u8], compared: &mut u64) -> usize {
    let (mut lo, mut hi) = (0, count(p));
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        prefetch_cell(p, lo + (mid - lo) / 2);
        prefetch_cell(p, mid + 1 + (hi - mid - 1) / 2);
        *compared += 1;
        if key::compare(ikey(p, mid), target).is_le() {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Whether a cell of `len` bytes fits, perhaps after `compact`.
pub(crate) fn fits(p: &[u8], len: usize) -> bool {
    free_space(p) + garbage(p) >= len + 2
}

/// Inserts `cell` at slot position `pos`. False when it does not fit even
/// after compacting.
pub(crate) fn insert(p: &mut [u8], pos: usize, cell: &[u8]) -> bool {
    if !fits(p, cell.len()) {
        return false;
    }
    if free_space(p) < cell.len() + 2 {
        compact(p);
    }
    let n = count(p);
    let new_heap = heap(p) - cell.len();
    if let Some(dst) = p.get_mut(new_heap..new_heap + cell.len()) {
        dst.copy_from_slice(cell);
    }
    let slots = HEADER + 2 * pos..HEADER + 2 * n;
    p.copy_within(slots, HEADER + 2 * pos + 2);
    put_u16(p, HEADER + 2 * pos, new_heap);
    put_u16(p, 2, n + 1);
    put_u16(p, 4, new_heap);
    true
}

/// Removes the cell at slot position `pos`.
pub(crate) fn remove(p: &mut [u8], pos: usize) {
    let n = count(p);
    if pos >= n {
        return;
    }
    let off = cell_offset(p, pos);
    let len = cell_len(p, off);
    p.copy_within(HEADER + 2 * pos + 2..HEADER + 2 * n, HEADER + 2 * pos);
    put_u16(p, 2, n - 1);
    if off == heap(p) {
        put_u16(p, 4, off + len);
    } else {
        let g = garbage(p) + len;
        put_u16(p, 6, g);
    }
}

/// Rewrites the heap without garbage.
pub(crate) fn compact(p: &mut [u8]) {
    let cells: Vec<Vec<u8>> = (0..count(p)).map(|i| cell_bytes(p, i).to_vec()).collect();
    rebuild(p, &cells);
}

/// Replaces every cell of `p` with `cells`, in order (the kind and link stay).
pub(crate) fn rebuild(p: &mut [u8], cells: &[Vec<u8>]) {
    let (k, l) = (kind(p), link(p));
    init(p, k, l);
    for (i, c) in cells.iter().enumerate() {
        insert(p, i, c);
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
    if HEADER + 2 * n > h || h > p.len() || garbage(p) > p.len() - h {
        return Err(format!(
            "bad page header: {n} cells, heap at {h}, {} garbage bytes",
            garbage(p)
        ));
    }
    for i in 0..n {
        let off = cell_offset(p, i);
        if off < h || off + 3 > p.len() {
            return Err(format!("cell {i} at {off} is outside the heap"));
        }
        let klen = u16_at(p, off);
        let fixed = if k == KIND_BRANCH {
            10
        } else {
            if !matches!(p.get(off + 2), Some(0 | 1)) {
                return Err(format!("cell {i} has an unknown value tag"));
            }
            3 + 4
        };
        if off + fixed + klen > p.len() || klen < key::TRAILER_BYTES {
            return Err(format!("cell {i} key of {klen} bytes runs past the page"));
        }
        if off + cell_len(p, off) > p.len() {
            return Err(format!("cell {i} runs past the page"));
        }
        if key::ParsedKey::parse(ikey(p, i)).is_none() {
            return Err(format!("cell {i} has a bad key trailer"));
        }
        if i > 0 && !key::compare(ikey(p, i - 1), ikey(p, i)).is_lt() {
            return Err(format!("cells {} and {i} are out of order", i - 1));
        }
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

    #[test]
    fn cells_stay_sorted_and_removal_reclaims_space() {
        let mut p = leaf(4096 - DISK_HEADER);
        let empty_free = free_space(&p);
        for k in [5u32, 1, 3, 2, 4] {
            let ik = internal_key(format!("k{k}").as_bytes(), 1, Kind::Put);
            let mut c = 0;
            let pos = lower_bound(&p, &ik, &mut c);
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
}
