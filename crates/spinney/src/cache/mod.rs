//! The cache: one byte budget (`Options::cache_size`) for every cached SST
//! block and every B-tree page of the database.
//!
//! Keys are `(owner, offset)`: `owner` is a number unique to a file for the
//! life of the database (an SST's file number, or the number a B-tree file
//! got at open), `offset` the block's place or the page's number in it.
//! Blocks are reference-counted, type-erased values: an evicted block stays
//! alive while a reader holds its `Arc`. B-tree pages are frames: a frame
//! held by anyone besides the cache is pinned and never evicted, and a dirty
//! frame is written to its file before it leaves (`btree::write_back`), so
//! that the cache is the one place a page lives while it is in memory.
//!
//! Eviction is CLOCK (second chance): a hit sets the entry's referenced bit;
//! a hand clears bits and evicts the first entry it finds unreferenced (and,
//! for a page, unpinned). The budget is global: an insert that takes the
//! usage past it moves a hand over the shards in turn until the usage is
//! back within it or nothing more can be evicted (every page left is pinned),
//! so blocks and pages compete for the one budget.
//!
//! Thread-safety: 16 shards, each behind its own mutex; lookups of different
//! entries rarely contend. A dirty page's write happens under its shard's
//! mutex (one page, to the OS page cache).

use std::any::Any;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::btree::pager::Frame;

const SHARD_BITS: u32 = 4;
const SHARDS: usize = 1 << SHARD_BITS;

/// A cached value.
pub(crate) type CacheValue = Arc<dyn Any + Send + Sync>;

/// Cache key: (owner, offset).
pub(crate) type CacheKey = (u64, u64);

/// Hit and miss counters of the cache.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct CacheStats {
    /// Lookups that found their block or page.
    pub hits: u64,
    /// Lookups that did not.
    pub misses: u64,
    /// Entries evicted to stay within the budget.
    pub evictions: u64,
    /// Bytes currently charged to the cache.
    pub usage_bytes: u64,
    /// The budget.
    pub capacity_bytes: u64,
}

#[derive(Debug)]
pub(crate) struct Cache {
    shards: Vec<Mutex<Shard>>,
    capacity: u64,
    usage: AtomicU64,
    /// The shard the next eviction starts in.
    hand: AtomicUsize,
    hits: AtomicU64,
    misses: AtomicU64,
    evictions: AtomicU64,
}

#[derive(Debug, Default)]
struct Shard {
    map: HashMap<CacheKey, usize>,
    slots: Vec<Slot>,
    free: Vec<usize>,
    hand: usize,
}

#[derive(Debug)]
enum Entry {
    Block(CacheValue),
    Page(Arc<Frame>),
}

#[derive(Debug)]
struct Slot {
    key: CacheKey,
    entry: Option<Entry>,
    charge: u64,
    referenced: bool,
}

impl Cache {
    /// A cache that keeps at most `capacity` bytes (by the charges given to
    /// `insert`), beyond what pinned pages hold. A capacity of 0 caches no
    /// block; pages in use are kept regardless.
    pub(crate) fn new(capacity: u64) -> Cache {
        Cache {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            capacity,
            usage: AtomicU64::new(0),
            hand: AtomicUsize::new(0),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
        }
    }

    fn shard(&self, key: &CacheKey) -> &Mutex<Shard> {
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&key.0.to_le_bytes());
        bytes[8..].copy_from_slice(&key.1.to_le_bytes());
        let h = xxhash_rust::xxh3::xxh3_64(&bytes);
        let index = (h >> (64 - SHARD_BITS)) as usize;

        // index < SHARDS: it is the top SHARD_BITS bits of the hash.
        &self.shards[index]
    }

    fn count(&self, hit: bool) {
        if hit {
            self.hits.fetch_add(1, Ordering::Relaxed);
        } else {
            self.misses.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub(crate) fn get(&self, key: &CacheKey) -> Option<CacheValue> {
        let mut shard = self.shard(key).lock();
        let found = match shard.lookup(key) {
            Some(Entry::Block(v)) => Some(Arc::clone(v)),
            _ => None,
        };
        drop(shard);
        self.count(found.is_some());
        found
    }

    /// The page frame cached under `key`, pinned by the returned `Arc`.
    pub(crate) fn get_page(&self, key: &CacheKey) -> Option<Arc<Frame>> {
        let mut shard = self.shard(key).lock();
        let found = match shard.lookup(key) {
            Some(Entry::Page(f)) => Some(Arc::clone(f)),
            _ => None,
        };
        drop(shard);
        self.count(found.is_some());
        found
    }

    /// Inserts (or replaces) the block `key`, charging `charge` bytes, and
    /// evicts until the cache is within its budget. A block larger than the
    /// whole budget is not cached.
    pub(crate) fn insert(&self, key: CacheKey, value: CacheValue, charge: u64) {
        if charge > self.capacity {
            return;
        }
        let old = {
            let mut shard = self.shard(&key).lock();
            let old = shard.remove(&key);
            shard.put(key, Entry::Block(value), charge);
            old
        };
        self.account(charge, old);
        self.shrink();
    }

    /// Caches the page frame `frame` under `key`, unless a frame is already
    /// cached there and `replace` is false: then that one is returned and
    /// `frame` dropped (two readers that missed the same page share the
    /// first frame, so that a change made to it is never hidden by a
    /// reload). A new page of a file replaces whatever stale frame its
    /// number had.
    pub(crate) fn insert_page(
        &self,
        key: CacheKey,
        frame: Arc<Frame>,
        charge: u64,
        replace: bool,
    ) -> Arc<Frame> {
        let old = {
            let mut shard = self.shard(&key).lock();
            if !replace {
                if let Some(Entry::Page(f)) = shard.lookup(&key) {
                    return Arc::clone(f);
                }
            }
            let old = shard.remove(&key);
            shard.put(key, Entry::Page(Arc::clone(&frame)), charge);
            old
        };
        self.account(charge, old);
        self.shrink();
        frame
    }

    /// Drops `key` from the cache (a page that was freed).
    pub(crate) fn remove(&self, key: &CacheKey) {
        let old = self.shard(key).lock().remove(key);
        self.account(0, old);
    }

    fn account(&self, added: u64, removed: Option<u64>) {
        self.usage.fetch_add(added, Ordering::Relaxed);
        if let Some(r) = removed {
            self.usage.fetch_sub(r, Ordering::Relaxed);
        }
    }

    /// Evicts until the usage is within the budget, or two whole turns of
    /// the shards find nothing to evict (the first clears referenced bits).
    fn shrink(&self) {
        let mut failures = 0;
        while self.usage.load(Ordering::Relaxed) > self.capacity && failures < 2 * SHARDS {
            let i = self.hand.fetch_add(1, Ordering::Relaxed) % SHARDS;
            let Some(shard) = self.shards.get(i) else {
                break;
            };
            let freed = shard.lock().evict_one();
            match freed {
                Some(charge) => {
                    failures = 0;
                    self.usage.fetch_sub(charge, Ordering::Relaxed);
                    self.evictions.fetch_add(1, Ordering::Relaxed);
                }
                None => failures += 1,
            }
        }
    }

    /// Drops every entry of `owner` (a deleted file) from the cache.
    pub(crate) fn erase_owner(&self, owner: u64) {
        for shard in &self.shards {
            let mut shard = shard.lock();
            let keys: Vec<CacheKey> = shard.map.keys().filter(|k| k.0 == owner).copied().collect();
            for k in keys {
                let old = shard.remove(&k);
                self.account(0, old);
            }
        }
    }

    pub(crate) fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
            usage_bytes: self.usage.load(Ordering::Relaxed),
            capacity_bytes: self.capacity,
        }
    }
}

impl Shard {
    fn lookup(&mut self, key: &CacheKey) -> Option<&Entry> {
        let i = *self.map.get(key)?;
        let slot = self.slots.get_mut(i)?;
        slot.referenced = true;
        slot.entry.as_ref()
    }

    fn put(&mut self, key: CacheKey, entry: Entry, charge: u64) {
        let slot = Slot {
            key,
            entry: Some(entry),
            charge,
            referenced: false,
        };
        let index = match self.free.pop() {
            Some(i) => {
                if let Some(s) = self.slots.get_mut(i) {
                    *s = slot;
                }
                i
            }
            None => {
                self.slots.push(slot);
                self.slots.len() - 1
            }
        };
        self.map.insert(key, index);
    }

    /// Removes `key`; returns its charge if it was cached.
    fn remove(&mut self, key: &CacheKey) -> Option<u64> {
        let i = self.map.remove(key)?;
        let slot = self.slots.get_mut(i)?;
        slot.entry = None;
        let charge = std::mem::take(&mut slot.charge);
        self.free.push(i);
        Some(charge)
    }

    /// Advances the clock hand, at most once around, until one entry is
    /// evicted; returns its charge, or None when none could be.
    fn evict_one(&mut self) -> Option<u64> {
        if self.map.is_empty() {
            return None;
        }
        // One sweep: a referenced entry loses its bit and survives until
        // the hand comes back to this shard.
        for _ in 0..self.slots.len() {
            if self.hand >= self.slots.len() {
                self.hand = 0;
            }
            let i = self.hand;
            self.hand += 1;
            let Some(slot) = self.slots.get_mut(i) else {
                continue;
            };
            let evictable = match &slot.entry {
                None => continue,
                Some(_) if slot.referenced => {
                    slot.referenced = false;
                    continue;
                }
                Some(Entry::Block(_)) => true,
                // Held elsewhere: in use, so pinned. Otherwise it leaves
                // once it is clean (written now if dirty).
                Some(Entry::Page(f)) => {
                    Arc::strong_count(f) == 1 && crate::btree::pager::write_back(f)
                }
            };
            if !evictable {
                continue;
            }
            let key = slot.key;
            return self.remove(&key);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(n: u64) -> CacheValue {
        Arc::new(n)
    }

    #[test]
    fn stays_within_its_budget() {
        // Goal: many inserts never push usage past capacity.
        let cache = Cache::new(16 * 1000);
        for i in 0..10_000u64 {
            cache.insert((1, i), value(i), 100);
            assert!(cache.stats().usage_bytes <= 16 * 1000);
        }
        assert!(cache.stats().evictions > 0);
    }

    #[test]
    fn hit_returns_the_inserted_value() {
        let cache = Cache::new(1 << 20);
        cache.insert((7, 42), value(99), 10);
        let got = cache.get(&(7, 42)).expect("cached");
        assert_eq!(got.downcast_ref::<u64>(), Some(&99));
        assert!(cache.get(&(7, 43)).is_none());
        let s = cache.stats();
        assert_eq!((s.hits, s.misses), (1, 1));
    }

    #[test]
    fn referenced_entries_get_a_second_chance() {
        // Goal: CLOCK keeps a block that is being hit over one that is not.
        // Method: fill one shard's worth, keep touching one key, insert more.
        let cache = Cache::new(SHARDS as u64 * 1000);
        let hot = (1, 0);
        cache.insert(hot, value(0), 100);
        for i in 1..2000u64 {
            assert!(
                cache.get(&hot).is_some(),
                "hot entry evicted after {i} inserts"
            );
            cache.insert((1, i), value(i), 100);
        }
    }

    #[test]
    fn erase_owner_drops_only_that_owner() {
        let cache = Cache::new(1 << 20);
        cache.insert((1, 0), value(1), 10);
        cache.insert((2, 0), value(2), 10);
        cache.erase_owner(1);
        assert!(cache.get(&(1, 0)).is_none());
        assert!(cache.get(&(2, 0)).is_some());
        assert_eq!(cache.stats().usage_bytes, 10);
    }

    #[test]
    fn zero_capacity_caches_nothing() {
        let cache = Cache::new(0);
        cache.insert((1, 0), value(1), 1);
        assert!(cache.get(&(1, 0)).is_none());
    }
}
