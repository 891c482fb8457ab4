//! `ReadContext`: per-thread counters of the work reads do (read
//! amplification), off unless a thread turns them on.
//!
//! The counters answer "why was this read slow?": how many memtables and SSTs
//! a get consulted, how often the bloom filter spared a data block, how many
//! keys the searches compared, and whether blocks came from the cache or from
//! the file. They live in a thread-local, so a caller measures exactly the
//! reads it made, without locks and without other threads' reads mixed in.
//!
//! Cost when off: each read operation (a memtable search, an SST get, an SST
//! seek, a block load, a cursor seek or step) checks one thread-local flag
//! once. Inside their loops the searches count into local variables, never
//! into the thread-local, and hand the totals to `add` once. The memtable
//! search, the hottest loop, goes further: it checks `enabled()` before it
//! starts and runs a form of the loop compiled without a counter when off.
//!
//! What counts: reads made in this thread. A manual `flush` or `compact_all`
//! runs its work in the calling thread, so the block loads of a manual
//! compaction count too; the background worker's never do (counting is off
//! on that thread).
//!
//! Thread-safety: the counters are per thread by construction; a
//! `ReadContext` value is a plain copy.

use std::cell::Cell;
use std::ops::Sub;

/// Read-amplification counters of the reads done by this thread while
/// enabled.
///
/// Counting is off by default and costs almost nothing while off. Turn it on
/// for the current thread with [`ReadContext::enable`], read the counts with
/// [`ReadContext::current`] or [`ReadContext::take`]:
///
/// ```
/// # fn main() -> spinney::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// use spinney::{Db, Options, ReadContext, TableOptions};
///
/// let db = Db::open(dir.path(), Options::default())?;
/// let t = db.create_table("t", TableOptions::default())?;
/// t.put(b"k", b"v")?;
///
/// ReadContext::enable();
/// ReadContext::reset();
/// t.get(b"k")?;
/// let counts = ReadContext::take();
/// ReadContext::disable();
/// assert_eq!(counts.gets, 1);
/// assert_eq!(counts.trees_searched, 1); // the memtable answered
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadContext {
    /// Point reads (`Table::get`, `Snapshot::get`).
    pub gets: u64,
    /// Cursor positionings asked for by the user: `seek`, `seek_for_prev`,
    /// `seek_to_first`, `seek_to_last` (a `Range` makes one per end it
    /// starts).
    pub seeks: u64,
    /// Cursor steps (`next`, `prev`) asked for by the user, including the
    /// step that runs off the end.
    pub nexts: u64,
    /// Trees consulted: for a get, each memtable, L0 run and deeper-level
    /// file actually searched (a run whose key range misses the key is not);
    /// for a seek, each source of the merging iterator (memtables, L0 runs
    /// and one per non-empty deeper level).
    pub trees_searched: u64,
    /// Bloom filters consulted by gets.
    pub bloom_checks: u64,
    /// Bloom filters that said "absent", so that the file's blocks were not
    /// read.
    pub bloom_negatives: u64,
    /// Key comparisons in memtable skiplist searches and in SST index and
    /// data block searches (file-range searches of a level are not counted).
    pub keys_compared: u64,
    /// Data blocks found in the block cache.
    pub blocks_from_cache: u64,
    /// Data blocks read from their file (cache misses).
    pub blocks_from_storage: u64,
    /// Bytes read from files for those blocks, block trailers included.
    pub bytes_read: u64,
}

/// All counters zero; `Default` cannot be used to initialise a const.
const ZERO: ReadContext = ReadContext {
    gets: 0,
    seeks: 0,
    nexts: 0,
    trees_searched: 0,
    bloom_checks: 0,
    bloom_negatives: 0,
    keys_compared: 0,
    blocks_from_cache: 0,
    blocks_from_storage: 0,
    bytes_read: 0,
};

thread_local! {
    /// Whether this thread counts. Const-initialised and without a
    /// destructor, so that reading it is a plain thread-local load.
    static ENABLED: Cell<bool> = const { Cell::new(false) };
    /// This thread's counts so far.
    static COUNTS: Cell<ReadContext> = const { Cell::new(ZERO) };
}

impl ReadContext {
    /// Starts counting the reads of this thread. The counters keep the values
    /// they had; call [`ReadContext::reset`] to start from zero.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// t.put(b"k", b"v")?;
    /// spinney::ReadContext::enable();
    /// spinney::ReadContext::reset();
    /// t.get(b"k")?;
    /// let counts = spinney::ReadContext::take();
    /// spinney::ReadContext::disable();
    /// assert_eq!(counts.gets, 1);
    /// assert!(counts.trees_searched >= 1);
    /// # Ok(()) }
    /// ```
    pub fn enable() {
        ENABLED.set(true);
    }

    /// Stops counting the reads of this thread. The counters keep their
    /// values.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// spinney::ReadContext::enable();
    /// spinney::ReadContext::disable();
    /// spinney::ReadContext::reset();
    /// t.get(b"k")?;
    /// assert_eq!(spinney::ReadContext::current().gets, 0); // not counted
    /// # Ok(()) }
    /// ```
    pub fn disable() {
        ENABLED.set(false);
    }

    /// True when this thread counts its reads.
    ///
    /// ```
    /// spinney::ReadContext::enable();
    /// assert!(spinney::ReadContext::is_enabled());
    /// spinney::ReadContext::disable();
    /// assert!(!spinney::ReadContext::is_enabled());
    /// ```
    pub fn is_enabled() -> bool {
        ENABLED.get()
    }

    /// This thread's counts so far.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// spinney::ReadContext::enable();
    /// spinney::ReadContext::reset();
    /// t.get(b"a")?;
    /// t.get(b"b")?;
    /// assert_eq!(spinney::ReadContext::current().gets, 2); // and it keeps counting
    /// spinney::ReadContext::disable();
    /// # Ok(()) }
    /// ```
    pub fn current() -> ReadContext {
        COUNTS.get()
    }

    /// This thread's counts so far; the counters are reset to zero.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// spinney::ReadContext::enable();
    /// spinney::ReadContext::reset();
    /// t.get(b"a")?;
    /// assert_eq!(spinney::ReadContext::take().gets, 1);
    /// assert_eq!(spinney::ReadContext::current().gets, 0); // zero again
    /// spinney::ReadContext::disable();
    /// # Ok(()) }
    /// ```
    pub fn take() -> ReadContext {
        COUNTS.replace(ZERO)
    }

    /// Sets this thread's counters to zero.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// spinney::ReadContext::enable();
    /// t.get(b"a")?;
    /// spinney::ReadContext::reset();
    /// assert_eq!(spinney::ReadContext::current().gets, 0);
    /// spinney::ReadContext::disable();
    /// # Ok(()) }
    /// ```
    pub fn reset() {
        COUNTS.set(ZERO);
    }

    /// Every counter of `self` plus the same counter of `other`. Wrapping
    /// adds (a u64 of reads does not wrap in practice), so that the ten
    /// adds of every read while counting compile to a few vector adds.
    fn plus(self, other: &ReadContext) -> ReadContext {
        ReadContext {
            gets: self.gets.wrapping_add(other.gets),
            seeks: self.seeks.wrapping_add(other.seeks),
            nexts: self.nexts.wrapping_add(other.nexts),
            trees_searched: self.trees_searched.wrapping_add(other.trees_searched),
            bloom_checks: self.bloom_checks.wrapping_add(other.bloom_checks),
            bloom_negatives: self.bloom_negatives.wrapping_add(other.bloom_negatives),
            keys_compared: self.keys_compared.wrapping_add(other.keys_compared),
            blocks_from_cache: self.blocks_from_cache.wrapping_add(other.blocks_from_cache),
            blocks_from_storage: self
                .blocks_from_storage
                .wrapping_add(other.blocks_from_storage),
            bytes_read: self.bytes_read.wrapping_add(other.bytes_read),
        }
    }
}

/// The counts between two readings: `later - earlier`, each counter
/// saturating at zero (so a reset in between gives zeros, not a panic).
impl Sub for ReadContext {
    type Output = ReadContext;

    fn sub(self, earlier: ReadContext) -> ReadContext {
        ReadContext {
            gets: self.gets.saturating_sub(earlier.gets),
            seeks: self.seeks.saturating_sub(earlier.seeks),
            nexts: self.nexts.saturating_sub(earlier.nexts),
            trees_searched: self.trees_searched.saturating_sub(earlier.trees_searched),
            bloom_checks: self.bloom_checks.saturating_sub(earlier.bloom_checks),
            bloom_negatives: self.bloom_negatives.saturating_sub(earlier.bloom_negatives),
            keys_compared: self.keys_compared.saturating_sub(earlier.keys_compared),
            blocks_from_cache: self
                .blocks_from_cache
                .saturating_sub(earlier.blocks_from_cache),
            blocks_from_storage: self
                .blocks_from_storage
                .saturating_sub(earlier.blocks_from_storage),
            bytes_read: self.bytes_read.saturating_sub(earlier.bytes_read),
        }
    }
}

/// True when this thread counts its reads. For the hottest loops (the
/// memtable search), which check it once and then run a form of the loop
/// compiled with or without a counter.
#[inline]
pub(crate) fn enabled() -> bool {
    ENABLED.get()
}

/// Runs `f` with counting off on this thread: flushes and compactions run
/// by a reader's thread (autowork, `Db::work`, manual compactions, a stalled
/// writer) are not reads and must not inflate its read amplification.
pub(crate) fn suspended<R>(f: impl FnOnce() -> R) -> R {
    let was = ENABLED.replace(false);
    let r = f();
    ENABLED.set(was);
    r
}

/// Adds `counts` to this thread's counters if the thread counts. Called once
/// per read operation, with counts gathered in local variables; inlined so
/// that, while counting is off, it costs one thread-local load and a branch.
#[inline]
pub(crate) fn add(counts: &ReadContext) {
    if enabled() {
        add_enabled(counts);
    }
}

/// Counts one cursor step (`nexts`) if the thread counts: the one counter a
/// step adds to, alone.
#[inline]
pub(crate) fn add_step() {
    if enabled() {
        COUNTS.with(|c| {
            let mut counts = c.get();
            counts.nexts = counts.nexts.wrapping_add(1);
            c.set(counts);
        });
    }
}

/// The part of `add` that runs only while counting, kept out of line so the
/// read paths stay small.
#[inline(never)]
fn add_enabled(counts: &ReadContext) {
    COUNTS.set(COUNTS.get().plus(counts));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_of_each() -> ReadContext {
        ReadContext {
            gets: 1,
            seeks: 2,
            nexts: 3,
            trees_searched: 4,
            bloom_checks: 5,
            bloom_negatives: 6,
            keys_compared: 7,
            blocks_from_cache: 8,
            blocks_from_storage: 9,
            bytes_read: 10,
        }
    }

    #[test]
    fn nothing_counts_until_enabled_and_after_disabled() {
        // Goal: `add` is a no-op while off, and counters keep their values
        // across disable and enable. Each test runs in its own thread, so
        // the thread-local starts fresh.
        assert!(!ReadContext::is_enabled());
        add(&one_of_each());
        assert_eq!(ReadContext::current(), ReadContext::default());

        ReadContext::enable();
        add(&one_of_each());
        add(&one_of_each());
        ReadContext::disable();
        add(&one_of_each());
        assert_eq!(ReadContext::current(), one_of_each().plus(&one_of_each()));

        ReadContext::enable();
        assert_eq!(ReadContext::take(), one_of_each().plus(&one_of_each()));
        assert_eq!(ReadContext::current(), ReadContext::default());
        add(&one_of_each());
        ReadContext::reset();
        assert_eq!(ReadContext::current(), ReadContext::default());
        ReadContext::disable();
    }

    #[test]
    fn difference_of_readings_saturates() {
        // Goal: `later - earlier` gives each counter's growth, and an
        // `earlier` larger than `later` (a reset in between) gives zero.
        let earlier = one_of_each();
        let later = one_of_each().plus(&one_of_each()).plus(&one_of_each());
        assert_eq!(later - earlier, one_of_each().plus(&one_of_each()));
        assert_eq!(earlier - later, ReadContext::default());
        assert_eq!(ZERO, ReadContext::default());
    }
}
