//! The block cache: one byte budget for every cached block of the database.
//!
//! Keys are `(owner, offset)`: `owner` is a number unique to a file for the
//! life of the database (its file number), `offset` the block's place in it.
//! Values are reference-counted and type-erased so that SST blocks today and
//! B-tree pages later share the one budget (`Options::cache_size`).
//!
//! Eviction is CLOCK (second chance) per shard: a hit sets the entry's
//! referenced bit; the hand clears bits and evicts the first entry it finds
//! unreferenced. An evicted value stays alive while a reader holds its `Arc`,
//! so the budget bounds what the cache keeps, not what readers pin.
//!
//! Thread-safety: 16 shards, each behind its own mutex; lookups of different
//! blocks rarely contend.

use std::any::Any;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

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
    /// Lookups that found their block.
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
    hits: AtomicU64,
    misses: AtomicU64,
}

#[derive(Debug, Default)]
struct Shard {
    capacity: u64,
    usage: u64,
    evictions: u64,
    map: HashMap<CacheKey, usize>,
    slots: Vec<Slot>,
    free: Vec<usize>,
    hand: usize,
}

#[derive(Debug)]
struct Slot {
    key: CacheKey,
    value: Option<CacheValue>,
    charge: u64,
    referenced: bool,
}

impl Cache {
    /// A cache that keeps at most `capacity` bytes (by the charges given to
    /// `insert`). A capacity of 0 caches nothing.
    pub(crate) fn new(capacity: u64) -> Cache {
        let per_shard = capacity / SHARDS as u64;
        let shards = (0..SHARDS)
            .map(|_| {
                Mutex::new(Shard {
                    capacity: per_shard,
                    ..Shard::default()
                })
            })
            .collect();
        Cache {
            shards,
            capacity,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
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

    pub(crate) fn get(&self, key: &CacheKey) -> Option<CacheValue> {
        let mut shard = self.shard(key).lock();
        let found = match shard.map.get(key) {
            Some(&i) => shard.slots.get_mut(i).and_then(|slot| {
                slot.referenced = true;
                slot.value.clone()
            }),
            None => None,
        };
        drop(shard);
        match found {
            Some(_) => self.hits.fetch_add(1, Ordering::Relaxed),
            None => self.misses.fetch_add(1, Ordering::Relaxed),
        };
        found
    }

    /// Inserts (or replaces) `key`, charging `charge` bytes, and evicts until
    /// the shard is within its budget. A value larger than a shard's budget is
    /// not cached.
    pub(crate) fn insert(&self, key: CacheKey, value: CacheValue, charge: u64) {
        let mut shard = self.shard(&key).lock();
        if charge > shard.capacity {
            return;
        }
        shard.remove(&key);
        while shard.usage + charge > shard.capacity {
            if !shard.evict_one() {
                break;
            }
        }
        let slot = Slot {
            key,
            value: Some(value),
            charge,
            referenced: false,
        };
        let index = match shard.free.pop() {
            Some(i) => {
                if let Some(s) = shard.slots.get_mut(i) {
                    *s = slot;
                }
                i
            }
            None => {
                shard.slots.push(slot);
                shard.slots.len() - 1
            }
        };
        shard.map.insert(key, index);
        shard.usage += charge;
    }

    /// Drops every entry of `owner` (a deleted file) from the cache.
    pub(crate) fn erase_owner(&self, owner: u64) {
        for shard in &self.shards {
            let mut shard = shard.lock();
            let keys: Vec<CacheKey> = shard.map.keys().filter(|k| k.0 == owner).copied().collect();
            for k in keys {
                shard.remove(&k);
            }
        }
    }

    pub(crate) fn stats(&self) -> CacheStats {
        let mut usage = 0;
        let mut evictions = 0;
        for shard in &self.shards {
            let shard = shard.lock();
            usage += shard.usage;
            evictions += shard.evictions;
        }
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            evictions,
            usage_bytes: usage,
            capacity_bytes: self.capacity,
        }
    }
}

impl Shard {
    fn remove(&mut self, key: &CacheKey) {
        if let Some(i) = self.map.remove(key) {
            if let Some(slot) = self.slots.get_mut(i) {
                slot.value = None;
                self.usage -= slot.charge;
                slot.charge = 0;
                self.free.push(i);
            }
        }
    }

    /// Advances the clock hand until one entry is evicted; false when the
    /// shard holds nothing.
    fn evict_one(&mut self) -> bool {
        if self.map.is_empty() {
            return false;
        }
        // Two sweeps clear every referenced bit, so the loop ends.
        for _ in 0..self.slots.len() * 2 + 1 {
            if self.hand >= self.slots.len() {
                self.hand = 0;
            }
            let i = self.hand;
            self.hand += 1;
            let Some(slot) = self.slots.get_mut(i) else {
                continue;
            };
            if slot.value.is_none() {
                continue;
            }
            if slot.referenced {
                slot.referenced = false;
                continue;
            }
            let key = slot.key;
            self.remove(&key);
            self.evictions += 1;
            return true;
        }
        false
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
