//! Spare block buffers: the bytes of blocks let go (evicted from the
//! cache, or dropped by the last reader holding them), kept by the thread
//! that let them go for its next block read.
//!
//! Why: a read that misses the cache reads a block and, to stay within
//! the budget, evicts one. Freeing the evicted block's bytes and
//! allocating the next block's took 9-13% of an LSM readrandom with a
//! cache smaller than the data (glibc's `free` of a 4 KiB chunk merges it
//! with its neighbours, whose headers are cold). A thread reuses the
//! buffer it just let go instead. (B-tree page images are not kept: the
//! cache's frames are dropped after a grace period, not by the thread that
//! evicts them, and keeping them measured no faster.)
//!
//! A thread keeps at most `SPARE_MAX` buffers of at most
//! `SPARE_CAPACITY_MAX` bytes, outside the cache's budget: 64 KiB a
//! thread at most. Thread-safety: thread-local; nothing is shared.

use std::cell::RefCell;

/// Buffers a thread keeps: a miss takes one and its eviction gives one
/// back, so two cover the pattern.
const SPARE_MAX: usize = 2;
/// Larger buffers (a block far over the usual size) go back to the
/// allocator.
const SPARE_CAPACITY_MAX: usize = 32 << 10;

thread_local! {
    static SPARE: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// Keeps `buf` for this thread's next block read, or frees it.
pub(crate) fn give(buf: Vec<u8>) {
    if buf.capacity() == 0 || buf.capacity() > SPARE_CAPACITY_MAX {
        return;
    }
    // During the thread's exit the store may be gone: then `buf` is freed.
    let _ = SPARE.try_with(|spare| {
        if let Ok(mut spare) = spare.try_borrow_mut() {
            if spare.len() < SPARE_MAX {
                spare.push(buf);
            }
        }
    });
}

/// A buffer for a read of `len` bytes: one this thread let go, or a new
/// empty one. A spare far larger than `len` is freed instead: the cache
/// charges a block its length, so a block must not hold much more than
/// that (the reader grows a smaller one to `len` exactly).
pub(crate) fn take(len: usize) -> Vec<u8> {
    SPARE
        .try_with(|spare| spare.try_borrow_mut().ok().and_then(|mut s| s.pop()))
        .ok()
        .flatten()
        .filter(|buf| buf.capacity() <= len + len / 8)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_gets_back_the_buffers_it_gave_up_to_the_limits() {
        // Goal: a buffer given is the next one taken (no allocation), at
        // most SPARE_MAX are kept, oversized ones are not kept, and none
        // much larger than the read is used.
        let a = Vec::<u8>::with_capacity(4096);
        let at = a.as_ptr();
        give(a);
        let b = take(4000);
        assert_eq!(b.as_ptr(), at);
        assert!(b.capacity() >= 4096);

        for _ in 0..SPARE_MAX + 3 {
            give(Vec::with_capacity(4096));
        }
        let kept = std::iter::from_fn(|| Some(take(4096)))
            .take_while(|b| b.capacity() > 0)
            .count();
        assert_eq!(kept, SPARE_MAX);

        give(Vec::with_capacity(SPARE_CAPACITY_MAX + 1));
        assert_eq!(take(SPARE_CAPACITY_MAX).capacity(), 0);

        // A spare much larger than the read is not used (the cache would
        // charge the block less than it holds).
        give(Vec::with_capacity(16 << 10));
        assert_eq!(take(4096).capacity(), 0);
    }
}
