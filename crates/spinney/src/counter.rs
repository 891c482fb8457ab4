//! A counter that readers on different cores add to without sharing a cache
//! line: `Striped` keeps one padded atomic per stripe, and each thread adds
//! to its own (threads get stripes in turn, so the first `STRIPES` threads
//! never share one). Reading it sums the stripes, so a read is exact once
//! the adding stops and may miss adds in flight, like any relaxed counter.
//!
//! For the figures counted on every read (pages found in the cache, bloom
//! filter checks): one shared atomic there makes two reader threads bounce
//! its line between their cores at every lookup.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

const STRIPES: usize = 8;

/// One stripe, alone on its cache line (128 bytes: a pair of lines, as the
/// adjacent-line prefetcher fetches them together).
#[derive(Debug, Default)]
#[repr(align(128))]
struct Stripe(AtomicU64);

#[derive(Debug, Default)]
pub(crate) struct Striped {
    stripes: [Stripe; STRIPES],
}

static NEXT_STRIPE: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static STRIPE: Cell<Option<usize>> = const { Cell::new(None) };
}

fn my_stripe() -> usize {
    STRIPE.with(|s| {
        s.get().unwrap_or_else(|| {
            let i = NEXT_STRIPE.fetch_add(1, Ordering::Relaxed) % STRIPES;
            s.set(Some(i));
            i
        })
    })
}

impl Striped {
    pub(crate) fn add(&self, n: u64) {
        if let Some(s) = self.stripes.get(my_stripe()) {
            s.0.fetch_add(n, Ordering::Relaxed);
        }
    }

    pub(crate) fn get(&self) -> u64 {
        self.stripes
            .iter()
            .map(|s| s.0.load(Ordering::Relaxed))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds_from_many_threads_sum_exactly() {
        // Goal: no add is lost, whichever stripes the threads got.
        let c = Striped::default();
        std::thread::scope(|s| {
            for _ in 0..12 {
                s.spawn(|| {
                    for _ in 0..1000 {
                        c.add(3);
                    }
                });
            }
        });
        assert_eq!(c.get(), 12 * 1000 * 3);
    }
}
