//! A hint to the CPU to start loading the cache line of a byte it will soon
//! read. A binary search whose probes are cache misses prefetches what it
//! may probe next, so that the misses overlap instead of coming one after
//! the other (B-tree pages, SST blocks).

/// Starts loading the line that holds `bytes[0]` (nothing if empty).
#[inline]
pub(crate) fn prefetch(bytes: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    if !bytes.is_empty() {
        // SAFETY: a prefetch is a hint; it reads nothing the program sees
        // and cannot fault, and the pointer is inside `bytes`.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                bytes.as_ptr().cast(),
            );
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bytes;
}

/// Starts loading the line that holds address `at`, which may be any
/// address: a prefetch reads nothing the program sees and cannot fault, so
/// a stale or wrong address costs a wasted load at most.
#[inline]
pub(crate) fn prefetch_address(at: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: as above; the pointer is never dereferenced.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            std::ptr::without_provenance::<i8>(at),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

/// Starts loading every line of `bytes`: for a page or block about to be
/// checksummed where it lies in a memory map, whose lines are in the OS's
/// page cache but rarely in the CPU's, so that their misses overlap
/// instead of each waiting for the one before (docs/performance.md,
/// 2026-11-29).
#[inline]
pub(crate) fn prefetch_all(bytes: &[u8]) {
    prefetch_lines(bytes.as_ptr() as usize, bytes.len().div_ceil(64));
}

/// Starts loading `lines` cache lines from address `at` on (any address,
/// as `prefetch_address`).
#[inline]
pub(crate) fn prefetch_lines(at: usize, lines: usize) {
    for i in 0..lines {
        prefetch_address(at.wrapping_add(i * 64));
    }
}
