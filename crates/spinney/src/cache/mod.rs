//! The cache: one byte budget (`Options::cache_size`) for every cached SST
//! block and every B-tree page of the database.
//!
//! Keys are `(owner, offset)`: `owner` is a number unique to a file for the
//! life of the database (an SST's file number, or the number a B-tree file
//! got at open), `offset` the block's place or the page's number in it.
//! Values are opaque `Entry`s, reference-counted: the cache knows no table
//! kind and does no I/O. Each entry says, when the clock hand reaches it,
//! whether it may leave now (`State`): a block always may (an evicted block
//! stays alive while a reader holds its `Arc`); a B-tree page may not while
//! anyone besides the cache holds it (pinned), and a dirty page may not until
//! its owner has written it.
//!
//! Eviction is CLOCK (second chance): a hit sets the entry's referenced bit;
//! a hand clears bits and takes the first entry it finds unreferenced and
//! not busy (`choose`). A clean one is evicted. A dirty one is **handed
//! back**: put on a list (`take_handed_back`) that the B-tree page store drains
//! outside every cache lock, at its next write or checkpoint; it writes the
//! page and then evicts it (`evict_if_idle`). The budget is global: an insert
//! that takes the usage past it moves a hand over the shards in turn until
//! the usage, less the bytes handed back and not yet written, is within it,
//! or nothing more can leave; so blocks and pages compete for the one budget.
//! The bytes handed back are capped (`HANDED_BACK_MAX_DIVISOR`): past the
//! cap a sweep passes dirty pages by and evicts clean entries instead, so a
//! thread that never drains (an LSM read) cannot push the cache further over.
//!
//! Thread-safety: 16 shards, each behind its own mutex; lookups of different
//! entries rarely contend. A lookup touches only its shard: one hash of the
//! key (foldhash, not the std's SipHash: keys are the engine's own numbers,
//! not an attacker's) picks the shard, and the hit and miss counters live
//! in the shard, so that readers on different cores share no counter. The
//! handed-back list has its own mutex, never held while a shard's is taken. No I/O happens under either.

use std::any::Any;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::counter::Striped;

const SHARD_BITS: u32 = 4;
const SHARDS: usize = 1 << SHARD_BITS;

/// The bytes handed back and not yet written are kept under the budget
/// divided by this (but one entry may always be handed back): the most the
/// cache runs over its budget by, beside pinned pages, while no B-tree
/// writer drains the list.
pub(crate) const HANDED_BACK_MAX_DIVISOR: u64 = 16;

/// At most 1/PINNED_SHARE of the budget is kept in the cache on purpose by
/// its owners, for all of them together (`Cache::try_pin`): B-tree pages
/// reused before the checkpoint that frees them is durable, which may be
/// neither written nor evicted until then. Past it, a B-tree takes new
/// pages at its file's end, as it would without early reuse.
pub(crate) const PINNED_SHARE: u64 = 4;

/// Cache key: (owner, offset).
pub(crate) type CacheKey = (u64, u64);

/// Whether an entry may leave the cache now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    /// It may be dropped.
    Clean,
    /// It holds changes its owner has not written: it leaves only once the
    /// owner has written it (it is handed back).
    Dirty,
    /// It cannot leave now (in use).
    Busy,
    /// It holds changes its owner will never write (a B-tree page the
    /// log's replay changed in a read-only open): it stays until its owner
    /// replaces or erases it, beside the budget (`Cache::kept`), and the
    /// hand passes it by from then on.
    Kept,
}

/// A value the cache holds: an SST block, a B-tree page. The cache charges
/// it the bytes given at insert and asks it, when the clock hand reaches it,
/// whether it may leave.
pub(crate) trait Entry: Any + Send + Sync {
    /// Whether the entry may leave now; `shared`: someone besides the cache
    /// holds it. Called under a shard's mutex: it must not block or do I/O.
    fn state(&self, shared: bool) -> State {
        let _ = shared;
        State::Clean
    }

    /// Called when the clock evicted it (for its owner's counters).
    fn evicted(&self) {}

    /// Called once it is in the map (under the shard's mutex): an entry
    /// that readers also find another way (a B-tree page, through its
    /// file's frame table) makes itself findable there.
    fn cached(&self) {}

    /// Asked when the hand would evict it, under the shard's mutex, after
    /// `state` said `Clean`: an entry that readers may be using without a
    /// handle takes itself out of their way and says yes, or says no if it
    /// cannot now. `holders` counts the handles to it now (the cache's
    /// among them), for an entry whose users may take a handle without the
    /// cache: it asks once it has shut them out. Must not block.
    fn try_leave(&self, holders: &dyn Fn() -> usize) -> bool {
        let _ = holders;
        true
    }

    /// The cache lets go of its handle (evicted, replaced, removed, or its
    /// owner erased), under the shard's mutex. An entry that readers may
    /// still be using without a handle defers the drop until they are done.
    /// (Not when the cache itself is dropped: its owners, and so every
    /// reader, are gone then, and its entries are freed at once.)
    fn release(self: Arc<Self>) {}

    /// Whether a reader used it without going through the cache since the
    /// hand last asked (a second chance, as a hit gives); clears it.
    fn take_touched(&self) -> bool {
        false
    }
}

/// An entry handed back for its owner to write: its key, itself, its charge.
pub(crate) type HandedBack = (CacheKey, Arc<dyn Entry>, u64);

/// Hit and miss counters of the cache.
///
/// ```
/// # fn main() -> spinney::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
/// let t = db.create_table("t", spinney::TableOptions::lsm())?;
/// t.put(b"k", b"v")?;
/// db.flush()?;
/// t.get(b"k")?;
/// let c: spinney::CacheStats = db.stats().cache;
/// assert!(c.hits + c.misses >= 1);
/// # Ok(()) }
/// ```
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

/// What the clock hand does with an unreferenced entry (the policy, apart
/// from the sweep): evict it, hand it back to be written, or pass it by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Choice {
    Evict,
    HandBack,
    Pass,
    /// Counted beside the budget, and passed by for good.
    Keep,
}

fn choose(state: State, may_hand_back: bool) -> Choice {
    match state {
        State::Clean => Choice::Evict,
        State::Dirty if may_hand_back => Choice::HandBack,
        State::Dirty | State::Busy => Choice::Pass,
        State::Kept => Choice::Keep,
    }
}

pub(crate) struct Cache {
    shards: Vec<Mutex<Shard>>,
    capacity: u64,
    usage: AtomicU64,
    /// The shard the next eviction starts in.
    hand: AtomicUsize,
    evictions: AtomicU64,
    /// Dirty entries handed back, waiting for their owner to write them.
    handed_back: Mutex<Vec<HandedBack>>,
    /// The charges of `handed_back`.
    handed_back_bytes: AtomicU64,
    /// Bytes owners keep in the cache on purpose (`try_pin`).
    pinned: AtomicU64,
    /// Bytes of entries that will not leave (`State::Kept`): the budget is
    /// over the rest, so that they do not make every insert sweep the
    /// cache for room they hold. Shared with the shards.
    kept: Arc<AtomicU64>,
    /// Hits counted by readers that found their entry without the map (B-tree
    /// pages found through a frame table): striped, as those readers share
    /// nothing else.
    hits_elsewhere: Striped,
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cache")
            .field("capacity", &self.capacity)
            .field("usage", &self.usage)
            .finish()
    }
}

/// The map's hasher: foldhash with a fixed seed (the keys are file and
/// page numbers the engine chose).
type KeyHasher = foldhash::fast::FixedState;

/// A shard: the map from key to entry, and the clock's ring of slots. A hit
/// touches only the map (the entry, its referenced bit, its slot's number
/// are in the map's bucket); the hand walks the slots, which name their
/// keys, and looks the entry up in the map.
#[derive(Default)]
struct Shard {
    map: HashMap<CacheKey, Cached, KeyHasher>,
    slots: Vec<Slot>,
    free: Vec<usize>,
    hand: usize,
    hits: u64,
    misses: u64,
    /// The cache's count of kept bytes (`Cache::kept`), which the shard
    /// raises as the hand finds a kept entry and lowers when one leaves.
    kept: Arc<AtomicU64>,
}

struct Cached {
    entry: Arc<dyn Entry>,
    charge: u64,
    /// The clock's second-chance bit, set by a hit.
    referenced: bool,
    /// Its place in `Shard::slots`.
    slot: usize,
    /// Said `State::Kept`: its charge is in `Cache::kept`, and the hand
    /// passes it by.
    kept: bool,
}

/// A place on the clock's ring: the key it holds, or none (free).
struct Slot {
    key: Option<CacheKey>,
}

/// What one step of the hand did.
enum Swept {
    /// The entry left, with its charge; whoever swept drops it once the
    /// shard's lock is let go (freeing its bytes is not the shard's work).
    Evicted(Arc<dyn Entry>, u64),
    HandedBack(HandedBack),
    /// The entry will not leave: its charge is counted beside the budget.
    Kept,
    Nothing,
}

fn downcast<T: Entry>(entry: Arc<dyn Entry>) -> Option<Arc<T>> {
    let any: Arc<dyn Any + Send + Sync> = entry;
    any.downcast::<T>().ok()
}

impl Cache {
    /// A cache that keeps at most `capacity` bytes (by the charges given to
    /// `insert`), beyond what pinned pages and the pages handed back hold. A
    /// capacity of 0 caches no block; pages in use are kept regardless.
    pub(crate) fn new(capacity: u64) -> Cache {
        let kept = Arc::new(AtomicU64::new(0));
        Cache {
            shards: (0..SHARDS)
                .map(|_| {
                    Mutex::new(Shard {
                        kept: Arc::clone(&kept),
                        ..Shard::default()
                    })
                })
                .collect(),
            capacity,
            usage: AtomicU64::new(0),
            hand: AtomicUsize::new(0),
            evictions: AtomicU64::new(0),
            handed_back: Mutex::new(Vec::new()),
            handed_back_bytes: AtomicU64::new(0),
            pinned: AtomicU64::new(0),
            kept,
            hits_elsewhere: Striped::default(),
        }
    }

    /// Takes `bytes` of the share of the budget that owners may keep from
    /// leaving the cache on purpose (`PINNED_SHARE`: B-tree pages that may
    /// not be written yet), if that much is left; false if not.
    pub(crate) fn try_pin(&self, bytes: u64) -> bool {
        let limit = self.capacity / PINNED_SHARE;
        self.pinned
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |p| {
                p.checked_add(bytes).filter(|&n| n <= limit)
            })
            .is_ok()
    }

    /// Gives back what `try_pin` took.
    pub(crate) fn unpin(&self, bytes: u64) {
        let _ = self
            .pinned
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |p| {
                debug_assert!(p >= bytes, "unpinned {bytes} bytes of {p} pinned");
                Some(p.saturating_sub(bytes))
            });
    }

    fn shard(&self, key: &CacheKey) -> &Mutex<Shard> {
        // A seed apart from the map's, so that the shard's bits and the
        // map's buckets do not follow each other.
        let h = foldhash::fast::FixedState::with_seed(0x5eed_5a1d).hash_one(key);
        let index = (h >> (64 - SHARD_BITS)) as usize;

        // index < SHARDS: it is the top SHARD_BITS bits of the hash.
        &self.shards[index]
    }

    /// The entry cached under `key`, if it is a `T`.
    pub(crate) fn get<T: Entry>(&self, key: &CacheKey) -> Option<Arc<T>> {
        let mut shard = self.shard(key).lock();
        let found = shard.lookup(key).map(Arc::clone).and_then(downcast::<T>);
        if found.is_some() {
            shard.hits += 1;
        } else {
            shard.misses += 1;
        }
        drop(shard);
        found
    }

    /// Whether an entry is cached under `key`, counted neither as a hit nor
    /// as a miss.
    pub(crate) fn contains(&self, key: &CacheKey) -> bool {
        self.shard(key).lock().map.contains_key(key)
    }

    /// Counts `n` hits made without the map (entries found another way).
    pub(crate) fn count_hits(&self, n: u64) {
        self.hits_elsewhere.add(n);
    }

    /// Inserts (or replaces) `key`, charging `charge` bytes, and evicts
    /// until the cache is within its budget. An entry larger than the whole
    /// budget is not cached.
    pub(crate) fn insert<T: Entry>(&self, key: CacheKey, value: Arc<T>, charge: u64) {
        if charge > self.capacity {
            return;
        }
        let old = {
            let mut shard = self.shard(&key).lock();
            let old = shard.remove(&key);
            shard.put(key, value, charge);
            old
        };
        self.account(charge, old.map(|o| o.1));
        self.shrink();
    }

    /// Caches `value` under `key`, unless a `T` is already cached there and
    /// `replace` is false: then that one is returned and `value` dropped
    /// (two readers that missed the same page share the first frame, so
    /// that a change made to it is never hidden by a reload). A new page of
    /// a file replaces whatever stale frame its number had. Cached whatever
    /// its charge (a page in use must be in the cache).
    pub(crate) fn insert_or_share<T: Entry>(
        &self,
        key: CacheKey,
        value: Arc<T>,
        charge: u64,
        replace: bool,
    ) -> Arc<T> {
        let old = {
            let mut shard = self.shard(&key).lock();
            if !replace {
                if let Some(existing) = shard.lookup(&key).map(Arc::clone) {
                    if let Some(existing) = downcast::<T>(existing) {
                        return existing;
                    }
                }
            }
            let old = shard.remove(&key);
            shard.put(key, Arc::clone(&value) as Arc<dyn Entry>, charge);
            old
        };
        self.account(charge, old.map(|o| o.1));
        self.shrink();
        value
    }

    /// Drops `key` from the cache (a page that was freed); returns what it
    /// held (the cache has released its own handle).
    pub(crate) fn remove(&self, key: &CacheKey) -> Option<Arc<dyn Entry>> {
        let old = self.shard(key).lock().remove(key);
        let (entry, charge) = old.unzip();
        self.account(0, charge);
        entry
    }

    fn account(&self, added: u64, removed: Option<u64>) {
        self.usage.fetch_add(added, Ordering::Relaxed);
        if let Some(r) = removed {
            self.usage.fetch_sub(r, Ordering::Relaxed);
        }
    }

    /// Whether the hand may hand back an entry of `charge` bytes now.
    fn may_hand_back(&self, charge_max: u64) -> bool {
        let waiting = self.handed_back_bytes.load(Ordering::Relaxed);
        waiting == 0 || waiting + charge_max <= self.capacity / HANDED_BACK_MAX_DIVISOR
    }

    /// Evicts (and hands back dirty entries) until the usage, less the
    /// bytes handed back, is within the budget, or two whole turns of the
    /// shards find nothing to take (the first clears referenced bits).
    pub(crate) fn shrink(&self) {
        let mut failures = 0;
        while self.usage.load(Ordering::Relaxed)
            > self.capacity
                + self.handed_back_bytes.load(Ordering::Relaxed)
                + self.kept.load(Ordering::Relaxed)
            && failures < 2 * SHARDS
        {
            let i = self.hand.fetch_add(1, Ordering::Relaxed) % SHARDS;
            let Some(shard) = self.shards.get(i) else {
                break;
            };
            let swept = shard.lock().evict_one(|charge| self.may_hand_back(charge));
            match swept {
                Swept::Evicted(entry, charge) => {
                    failures = 0;
                    self.usage.fetch_sub(charge, Ordering::Relaxed);
                    self.evictions.fetch_add(1, Ordering::Relaxed);
                    drop(entry);
                }
                Swept::HandedBack(handed) => {
                    failures = 0;
                    self.handed_back_bytes
                        .fetch_add(handed.2, Ordering::Relaxed);
                    self.handed_back.lock().push(handed);
                }
                Swept::Kept => failures = 0,
                Swept::Nothing => failures += 1,
            }
        }
    }

    /// Whether entries wait for their owner to write them (a load, cheap
    /// enough for every write).
    pub(crate) fn has_handed_back(&self) -> bool {
        self.handed_back_bytes.load(Ordering::Relaxed) > 0
    }

    /// The dirty entries handed back since the last call, for their owner to
    /// write (outside every cache lock) and then pass to `evict_if_idle`.
    pub(crate) fn take_handed_back(&self) -> Vec<HandedBack> {
        let taken = std::mem::take(&mut *self.handed_back.lock());
        let bytes: u64 = taken.iter().map(|h| h.2).sum();
        self.handed_back_bytes.fetch_sub(bytes, Ordering::Relaxed);
        taken
    }

    /// Drops what is cached under `key` if it may leave now (clean, held
    /// by no one else, and its `try_leave` succeeds); never waits. For an
    /// owner letting go of what it freed: counted neither as a lookup nor
    /// as an eviction (which the stats keep for the budget's).
    pub(crate) fn drop_key_if_idle(&self, key: &CacheKey) {
        let freed = self.shard(key).lock().remove_if_idle(key);
        if let Some((_, charge)) = freed {
            self.account(0, Some(charge));
        }
    }

    /// Evicts `entry`, handed back and since written by its owner, if it is
    /// still the one cached under `key` and may leave now.
    pub(crate) fn evict_if_idle(&self, key: CacheKey, entry: Arc<dyn Entry>) {
        let freed = {
            let mut shard = self.shard(&key).lock();
            let Some(cached) = shard.map.get(&key) else {
                return;
            };
            if !Arc::ptr_eq(&cached.entry, &entry) {
                return;
            }
            // The caller's handle goes first, so that it does not count as
            // someone holding the entry.
            drop(entry);
            shard.remove_if_idle(&key)
        };
        if let Some((_, charge)) = freed {
            self.account(0, Some(charge));
            self.evictions.fetch_add(1, Ordering::Relaxed);
        }
        self.shrink();
    }

    /// Drops every entry of `owner` (a deleted file) from the cache.
    pub(crate) fn erase_owner(&self, owner: u64) {
        for shard in &self.shards {
            let mut shard = shard.lock();
            let keys: Vec<CacheKey> = shard.map.keys().filter(|k| k.0 == owner).copied().collect();
            for k in keys {
                let old = shard.remove(&k);
                self.account(0, old.map(|o| o.1));
            }
        }
    }

    pub(crate) fn stats(&self) -> CacheStats {
        let (mut hits, mut misses) = (0, 0);
        for shard in &self.shards {
            let shard = shard.lock();
            hits += shard.hits;
            misses += shard.misses;
        }
        CacheStats {
            hits: hits + self.hits_elsewhere.get(),
            misses,
            evictions: self.evictions.load(Ordering::Relaxed),
            usage_bytes: self.usage.load(Ordering::Relaxed),
            capacity_bytes: self.capacity,
        }
    }
}

impl Shard {
    fn lookup(&mut self, key: &CacheKey) -> Option<&Arc<dyn Entry>> {
        let cached = self.map.get_mut(key)?;
        cached.referenced = true;
        Some(&cached.entry)
    }

    fn put(&mut self, key: CacheKey, entry: Arc<dyn Entry>, charge: u64) {
        let slot = match self.free.pop() {
            Some(i) => {
                if let Some(s) = self.slots.get_mut(i) {
                    s.key = Some(key);
                }
                i
            }
            None => {
                self.slots.push(Slot { key: Some(key) });
                self.slots.len() - 1
            }
        };
        entry.cached();
        self.map.insert(
            key,
            Cached {
                entry,
                charge,
                referenced: false,
                slot,
                kept: false,
            },
        );
    }

    /// Removes `key`'s entry if it may leave now: clean, held by no one
    /// besides the cache, and its `try_leave` succeeds (never waited for).
    fn remove_if_idle(&mut self, key: &CacheKey) -> Option<(Arc<dyn Entry>, u64)> {
        let e = &self.map.get(key)?.entry;
        if e.state(Arc::strong_count(e) > 1) != State::Clean
            || !e.try_leave(&|| Arc::strong_count(e))
        {
            return None;
        }
        self.remove(key)
    }

    /// Removes `key`; returns its entry and charge if it was cached. The
    /// cache's handle is released (`Entry::release`); the one returned is
    /// another.
    fn remove(&mut self, key: &CacheKey) -> Option<(Arc<dyn Entry>, u64)> {
        let cached = self.map.remove(key)?;
        // A kept entry leaves when its owner replaces it (a new page of the
        // same number) or erases it.
        if cached.kept {
            self.kept.fetch_sub(cached.charge, Ordering::Relaxed);
        }
        if let Some(s) = self.slots.get_mut(cached.slot) {
            s.key = None;
        }
        self.free.push(cached.slot);
        Arc::clone(&cached.entry).release();
        Some((cached.entry, cached.charge))
    }

    /// Advances the clock hand, at most once around, until one entry is
    /// evicted or handed back (`choose`; `may_hand_back` is asked with the
    /// entry's charge).
    fn evict_one(&mut self, may_hand_back: impl Fn(u64) -> bool) -> Swept {
        if self.map.is_empty() {
            return Swept::Nothing;
        }
        // One sweep: a referenced entry loses its bit and survives until
        // the hand comes back to this shard.
        for _ in 0..self.slots.len() {
            if self.hand >= self.slots.len() {
                self.hand = 0;
            }
            let i = self.hand;
            self.hand += 1;
            let Some(key) = self.slots.get(i).and_then(|s| s.key) else {
                continue;
            };
            let Some(cached) = self.map.get_mut(&key) else {
                continue;
            };
            if cached.kept {
                continue;
            }
            if cached.referenced || cached.entry.take_touched() {
                cached.referenced = false;
                continue;
            }
            let e = &cached.entry;
            match choose(
                e.state(Arc::strong_count(e) > 1),
                may_hand_back(cached.charge),
            ) {
                Choice::Pass => {}
                Choice::Evict if !e.try_leave(&|| Arc::strong_count(e)) => {}
                Choice::Evict => {
                    return match self.remove(&key) {
                        Some((entry, charge)) => {
                            entry.evicted();
                            Swept::Evicted(entry, charge)
                        }
                        None => Swept::Nothing,
                    };
                }
                Choice::HandBack => {
                    return Swept::HandedBack((key, Arc::clone(e), cached.charge));
                }
                Choice::Keep => {
                    cached.kept = true;
                    self.kept.fetch_add(cached.charge, Ordering::Relaxed);
                    return Swept::Kept;
                }
            }
        }
        Swept::Nothing
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;

    use super::*;

    /// A block-like entry: always clean.
    #[derive(Debug)]
    struct Value(u64);

    impl Entry for Value {}

    fn value(n: u64) -> Arc<Value> {
        Arc::new(Value(n))
    }

    /// A page-like entry: dirty until "written", pinned while shared.
    #[derive(Debug, Default)]
    struct Page {
        dirty: AtomicBool,
    }

    impl Entry for Page {
        fn state(&self, shared: bool) -> State {
            if shared {
                State::Busy
            } else if self.dirty.load(Ordering::Relaxed) {
                State::Dirty
            } else {
                State::Clean
            }
        }
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
    fn the_pinned_share_is_one_for_all_owners_and_given_back() {
        // Goal: owners together pin at most 1/PINNED_SHARE of the budget,
        // and what they give back may be pinned again.
        let cache = Cache::new(4000 * PINNED_SHARE);
        assert!(cache.try_pin(3000), "the first owner's pin was refused");
        assert!(cache.try_pin(1000), "the second owner's pin was refused");
        assert!(!cache.try_pin(1), "a pin past the share was taken");
        cache.unpin(1000);
        assert!(
            cache.try_pin(600),
            "a pin within what was given back was refused"
        );
        assert!(!cache.try_pin(401), "a pin past the share was taken");
    }

    #[test]
    fn hit_returns_the_inserted_value() {
        let cache = Cache::new(1 << 20);
        cache.insert((7, 42), value(99), 10);
        let got = cache.get::<Value>(&(7, 42)).expect("cached");
        assert_eq!(got.0, 99);
        assert!(cache.get::<Value>(&(7, 43)).is_none());
        // An entry of another type is not returned as this one.
        assert!(cache.get::<Page>(&(7, 42)).is_none());
        let s = cache.stats();
        assert_eq!((s.hits, s.misses), (1, 2));
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
                cache.get::<Value>(&hot).is_some(),
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
        assert!(cache.get::<Value>(&(1, 0)).is_none());
        assert!(cache.get::<Value>(&(2, 0)).is_some());
        assert_eq!(cache.stats().usage_bytes, 10);
    }

    #[test]
    fn zero_capacity_caches_nothing() {
        let cache = Cache::new(0);
        cache.insert((1, 0), value(1), 1);
        assert!(cache.get::<Value>(&(1, 0)).is_none());
    }

    #[test]
    fn the_hand_evicts_clean_entries_hands_back_dirty_ones_and_passes_busy_ones() {
        assert_eq!(choose(State::Clean, false), Choice::Evict);
        assert_eq!(choose(State::Dirty, true), Choice::HandBack);
        assert_eq!(choose(State::Dirty, false), Choice::Pass);
        assert_eq!(choose(State::Busy, true), Choice::Pass);
    }

    #[test]
    fn inserts_into_a_cache_full_of_dirty_pages_hand_them_back_within_a_bounded_slack() {
        // Goal: an insert (an LSM read's block) into a cache full of dirty
        // pages never drops a dirty page, keeps the usage within the budget
        // plus the handed-back cap and one entry, and what it hands back
        // leaves once its owner has written it.
        // Method: fill with dirty pages, insert many blocks, then drain as
        // the B-tree page store does.
        let capacity = 64 * 1000;
        let cache = Cache::new(capacity);
        let pages: Vec<Arc<Page>> = (0..64u64)
            .map(|i| {
                let p = Arc::new(Page {
                    dirty: AtomicBool::new(true),
                });
                cache.insert_or_share((1, i), Arc::clone(&p), 1000, true);
                p
            })
            .collect();
        drop(pages);
        let slack = capacity / HANDED_BACK_MAX_DIVISOR + 1000;
        for i in 0..1000u64 {
            cache.insert((2, i), value(i), 100);
            let usage = cache.stats().usage_bytes;
            assert!(usage <= capacity + slack, "{usage} after {i} blocks");
        }
        for i in 0..64u64 {
            assert!(
                cache.get::<Page>(&(1, i)).is_some(),
                "dirty page {i} dropped"
            );
        }
        assert!(cache.has_handed_back());
        // The owner writes what was handed back, round after round, as
        // `btree::store::write_handed_back` does.
        for _ in 0..64 {
            let handed = cache.take_handed_back();
            assert!(handed.iter().map(|h| h.2).sum::<u64>() <= slack);
            for (key, entry, _) in handed {
                let page = downcast::<Page>(Arc::clone(&entry)).expect("a page");
                page.dirty.store(false, Ordering::Relaxed);
                drop(page);
                cache.evict_if_idle(key, entry);
            }
        }
        assert!(!cache.has_handed_back());
        assert!(cache.stats().usage_bytes <= capacity);
    }

    #[test]
    fn a_pinned_page_is_never_evicted_nor_handed_back() {
        let cache = Cache::new(2000);
        let pinned = Arc::new(Page::default());
        cache.insert_or_share((1, 0), Arc::clone(&pinned), 1000, true);
        pinned.dirty.store(true, Ordering::Relaxed);
        for i in 0..100u64 {
            cache.insert((2, i), value(i), 500);
        }
        assert!(cache.get::<Page>(&(1, 0)).is_some());
        assert!(cache.take_handed_back().is_empty());
        assert!(cache.stats().usage_bytes <= 2000);
    }

    /// A page its owner will never write (a read-only open's replay).
    #[derive(Debug)]
    struct KeptPage;

    impl Entry for KeptPage {
        fn state(&self, _shared: bool) -> State {
            State::Kept
        }
    }

    #[test]
    fn kept_entries_stay_beside_the_budget_and_the_rest_is_kept_within_it() {
        // Goal: entries that will never leave neither leave nor count
        // against the budget, so that the clean entries around them are
        // evicted down to the budget, and the hand stops passing them
        // (each is swept as kept once).
        let cache = Cache::new(2000);
        for i in 0..50u64 {
            cache.insert((1, i), Arc::new(KeptPage), 100);
        }
        for i in 0..100u64 {
            cache.insert((2, i), value(i), 100);
        }
        for i in 0..50u64 {
            assert!(
                cache.get::<KeptPage>(&(1, i)).is_some(),
                "kept entry {i} left"
            );
        }
        assert!(cache.take_handed_back().is_empty());
        assert_eq!(cache.kept.load(Ordering::Relaxed), 5000);
        let usage = cache.stats().usage_bytes;
        assert!((5000..=7000).contains(&usage), "usage {usage}");
        // One replaced by its owner leaves, and its bytes with it.
        cache.insert_or_share((1, 0), value(0), 100, true);
        assert_eq!(cache.kept.load(Ordering::Relaxed), 4900);
    }
}
