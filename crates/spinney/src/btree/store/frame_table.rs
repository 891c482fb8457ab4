//! The frame table: for each page of a B-tree file that is in the cache,
//! where its frame is, so that a reader's descent finds a page with three
//! loads instead of a cache lookup (a hash, a shard's mutex, a reference
//! count, each at every level of every descent).
//!
//! The cache stays the owner of frames and the one place that decides what
//! is cached: a frame is published here when the cache takes it
//! (`Entry::cached`) and unpublished when the cache lets it go
//! (`Entry::release`), both under the cache shard's mutex, so the table and
//! the cache agree about each page. A reader that found a frame here holds
//! no reference to it. What keeps the frame's memory alive is the reader's
//! epoch (`crossbeam_epoch`): a frame the cache lets go is dropped only once
//! every thread pinned before then has unpinned (`Frame::release`). What
//! keeps its contents right is its latch: a frame is evicted only under its
//! write latch, which marks it gone (`Frame::try_leave`), so a reader that
//! has latched it checks the mark and, if it is set, looks again.
//!
//! Layout: a radix tree of three levels of slots (256 x 1024 x 1024: page
//! numbers below 2^28, 2 TiB of 8 KiB pages). The top level is inline; the
//! inner arrays are allocated on first use and kept until the file is
//! closed: 16 bytes per page of the file's range (the frame, and its
//! image's address beside it), 16 KiB per 1024 pages. Pages beyond the range
//! are not published; their readers go through the cache.
//!
//! When the cache itself is dropped (the database closed), its frames are
//! freed at once, without being unpublished: the tables, and so every
//! reader, are gone by then (each holds the cache), and nothing reads a
//! frame table again; deferring them would leave a large cache's worth of
//! pages for the epoch collector to free later.
//!
//! Generic over the frame type (`pages::Frame`), which the table only
//! stores and hands back as a pointer, never reads.
//!
//! Thread-safety: lock-free. A missing level is allocated and installed
//! with a compare-and-swap (the loser frees its copy); slots are atomic
//! pointers, published with release and read with acquire ordering.

use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

const LOW_BITS: u32 = 10;
const MID_BITS: u32 = 10;
const TOP_LEN: usize = 256;
const MID_LEN: usize = 1 << MID_BITS;
const LOW_LEN: usize = 1 << LOW_BITS;

/// Page numbers at or above this are not published.
pub(crate) const PAGES_MAX: u64 = (TOP_LEN * MID_LEN * LOW_LEN) as u64;

/// A slot: a frame, and the address of its image beside it (in the same
/// line, so that one load brings both).
struct Slot<F> {
    frame: AtomicPtr<F>,
    image: AtomicUsize,
}

/// The middle level: pointers to the low arrays.
type Mid<F> = [AtomicPtr<Low<F>>; MID_LEN];

/// The low level: the slots.
type Low<F> = [Slot<F>; LOW_LEN];

pub(crate) struct FrameTable<F> {
    /// The top level, inline: one load from the file's own struct.
    top: [AtomicPtr<Mid<F>>; TOP_LEN],
}

impl<F> Default for FrameTable<F> {
    fn default() -> FrameTable<F> {
        FrameTable {
            top: std::array::from_fn(|_| AtomicPtr::new(ptr::null_mut())),
        }
    }
}

impl<F> std::fmt::Debug for FrameTable<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameTable").finish_non_exhaustive()
    }
}

/// The three indexes of `pgno` (the caller has checked it is below
/// `PAGES_MAX`; the masks keep each within its array regardless).
#[inline]
fn indexes(pgno: u64) -> (usize, usize, usize) {
    let p = pgno as usize;
    (
        (p >> (MID_BITS + LOW_BITS)) & (TOP_LEN - 1),
        (p >> LOW_BITS) & (MID_LEN - 1),
        p & (LOW_LEN - 1),
    )
}

/// The array `slot` points to, allocated and installed if it is missing
/// and `create`.
#[inline]
fn level<T>(slot: &AtomicPtr<T>, create: bool, new: impl FnOnce() -> Box<T>) -> Option<&T> {
    let mut p = slot.load(Ordering::Acquire);
    if p.is_null() {
        if !create {
            return None;
        }
        let fresh = Box::into_raw(new());
        p = match slot.compare_exchange(ptr::null_mut(), fresh, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => fresh,
            Err(theirs) => {
                // SAFETY: `fresh` came from `Box::into_raw` above and was not
                // installed, so nothing else points at it.
                drop(unsafe { Box::from_raw(fresh) });
                theirs
            }
        };
    }
    // SAFETY: a non-null pointer in a slot came from `Box::into_raw` and is
    // freed only when the table is dropped, which `&self` rules out.
    Some(unsafe { &*p })
}

impl<F> FrameTable<F> {
    /// The slot of `pgno`.
    #[inline]
    fn slot(&self, pgno: u64, create: bool) -> Option<&Slot<F>> {
        if pgno >= PAGES_MAX {
            return None;
        }
        let (t, m, l) = indexes(pgno);
        let mid = level(self.top.get(t)?, create, || {
            Box::new(std::array::from_fn(|_| AtomicPtr::new(ptr::null_mut())))
        })?;
        let low = level(mid.get(m)?, create, || {
            Box::new(std::array::from_fn(|_| Slot {
                frame: AtomicPtr::new(ptr::null_mut()),
                image: AtomicUsize::new(0),
            }))
        })?;
        low.get(l)
    }

    /// The frame published for `pgno` (or null), and the address of its
    /// image (a hint, to prefetch: it may be another frame's, or 0, if the
    /// slot changes meanwhile). The frame pointer is valid for as long as
    /// the caller stays pinned in the epoch it was pinned in when it called
    /// (see the module's comment); the frame's contents are right only once
    /// latched and found not gone.
    #[inline]
    pub(crate) fn get(&self, pgno: u64) -> (*const F, usize) {
        match self.slot(pgno, false) {
            Some(s) => (
                s.frame.load(Ordering::Acquire).cast_const(),
                s.image.load(Ordering::Relaxed),
            ),
            None => (ptr::null(), 0),
        }
    }

    /// Publishes `frame`, whose image is at `image_at`, as the frame of
    /// `pgno` (the cache has just taken it; the cache's handle keeps it
    /// alive until `unpublish`).
    pub(crate) fn publish(&self, pgno: u64, frame: *const F, image_at: usize) {
        if let Some(s) = self.slot(pgno, true) {
            s.image.store(image_at, Ordering::Relaxed);
            s.frame.store(frame.cast_mut(), Ordering::Release);
        }
    }

    /// Unpublishes `frame` from `pgno`, if it is the one published there.
    pub(crate) fn unpublish(&self, pgno: u64, frame: *const F) {
        if let Some(s) = self.slot(pgno, false) {
            let _ = s.frame.compare_exchange(
                frame.cast_mut(),
                ptr::null_mut(),
                Ordering::AcqRel,
                Ordering::Relaxed,
            );
        }
    }
}

impl<F> Drop for FrameTable<F> {
    fn drop(&mut self) {
        for mid in self.top.iter() {
            let mid = mid.swap(ptr::null_mut(), Ordering::Acquire);
            if mid.is_null() {
                continue;
            }
            // SAFETY: installed by `level` from `Box::into_raw`, and taken
            // out of its slot here, with `&mut self`, so freed once.
            let mid = unsafe { Box::from_raw(mid) };
            for low in mid.iter() {
                let low = low.swap(ptr::null_mut(), Ordering::Acquire);
                if !low.is_null() {
                    // SAFETY: as above. The frames it points at are not
                    // owned by the table.
                    drop(unsafe { Box::from_raw(low) });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn published_frames_are_found_until_unpublished_by_the_same_frame() {
        // Goal: a slot answers what was last published there; unpublishing
        // another frame (a stale one) leaves it; pages past the range and
        // never published answer null. Method: fake addresses (never
        // dereferenced).
        let table = FrameTable::<u64>::default();
        let a = 0x1000 as *const u64;
        let b = 0x2000 as *const u64;
        for pgno in [0, 1, 1023, 1024, (1 << 20) + 5, PAGES_MAX - 1] {
            assert!(table.get(pgno).0.is_null());
            table.publish(pgno, a, 0x1100);
            assert_eq!(table.get(pgno), (a, 0x1100));
            table.publish(pgno, b, 0x2100);
            table.unpublish(pgno, a);
            assert_eq!(table.get(pgno), (b, 0x2100), "a stale frame's unpublish");
            table.unpublish(pgno, b);
            assert!(table.get(pgno).0.is_null());
        }
        table.publish(PAGES_MAX, a, 0x1100);
        assert!(table.get(PAGES_MAX).0.is_null());
        assert!(table.get(u64::MAX).0.is_null());
    }
}
