//! A counter that readers on different cores add to without sharing a cache
//! line: `Striped` keeps one padded atomic per stripe, and each thread adds
//! to its own (threads get stripes in turn, so the first `STRIPES` threads
//! never share one). Reading it sums the stripes, so a read is exact once
//! the adding stops and may miss adds in flight, like any relaxed counter.
//!
//! For the figures counted on every read (pages found in the cache, bloom
//! filter checks): one shared atomic there makes two reader threads bounce
//! its line between their cores at every lookup.
//!
//! `StripedGate` is the same idea for a reader count that a rare writer
//! must see at zero: readers enter their stripe's lock shared, the writer
//! takes every stripe's exclusively.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use parking_lot::{RwLock, RwLockReadGuard, RwLockWriteGuard};

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

/// One stripe of a gate, alone on its cache line.
#[derive(Debug, Default)]
#[repr(align(128))]
struct GateStripe(RwLock<()>);

/// Readers pass shared, each through its thread's stripe; `try_close`
/// succeeds only while no reader is inside any stripe, and keeps new ones
/// out until its guard drops.
#[derive(Debug, Default)]
pub(crate) struct StripedGate {
    stripes: [GateStripe; STRIPES],
}

/// A reader inside a `StripedGate`.
pub(crate) type GatePass<'a> = RwLockReadGuard<'a, ()>;

impl StripedGate {
    pub(crate) fn enter(&self) -> GatePass<'_> {
        // my_stripe() < STRIPES; the modulo lets the index need no check.
        self.stripes[my_stripe() % STRIPES].0.read()
    }

    /// Every stripe closed, or None if a reader is inside one (the stripes
    /// already taken are let go).
    pub(crate) fn try_close(&self) -> Option<Vec<RwLockWriteGuard<'_, ()>>> {
        let mut closed = Vec::with_capacity(STRIPES);
        for s in &self.stripes {
            closed.push(s.0.try_write()?);
        }
        Some(closed)
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

    #[test]
    fn a_gate_closes_only_with_no_reader_inside() {
        // Goal: a reader in any stripe (this thread's or another's) keeps
        // the gate from closing; with none inside it closes and keeps
        // readers out until it opens.
        let gate = StripedGate::default();
        let pass = gate.enter();
        assert!(gate.try_close().is_none());
        drop(pass);
        std::thread::scope(|s| {
            let (tx, rx) = std::sync::mpsc::channel();
            let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
            let gate = &gate;
            s.spawn(move || {
                let _pass = gate.enter();
                tx.send(()).expect("send");
                let _ = done_rx.recv();
            });
            rx.recv().expect("reader inside");
            assert!(gate.try_close().is_none());
            done_tx.send(()).expect("send");
        });
        let closed = gate.try_close().expect("no reader inside");
        let entered = std::thread::scope(|s| {
            s.spawn(|| gate.stripes.iter().any(|st| st.0.try_read().is_some()))
                .join()
                .expect("join")
        });
        assert!(!entered, "a reader got in while the gate was closed");
        drop(closed);
        drop(gate.enter());
    }
}
