//! spinney: an embedded storage engine whose tables are B-trees or LSM
//! trees, chosen per table, in one database with one write-ahead log, one
//! cache budget, one set of background workers, and atomic writes across tables.
//!
//! A table's kind is fixed when it is made (`TableOptions::lsm()` or
//! `TableOptions::btree()`); every other call is the same for both: one
//! `WriteBatch` or `Transaction` commits over tables of either kind at
//! once, and snapshots, cursors and ranges read both alike. An LSM table
//! (memtables flushed into sorted runs, merged by compaction) takes writes
//! cheaply; a B-tree table (pages changed in place in the cache, made
//! durable by copy-on-write checkpoints) reads with fewer lookups.
//! `docs/design.md` in the repository describes both.
//!
//! ```
//! # fn main() -> spinney::Result<()> {
//! # let dir = tempfile::tempdir().unwrap();
//! use spinney::{Db, Durability, Options, TableOptions, WriteBatch};
//!
//! let db = Db::open(dir.path(), Options { durability: Durability::Full, ..Options::default() })?;
//! // Balances are read more than written: a B-tree. The audit trail is
//! // appended to and seldom read: an LSM tree.
//! let accounts = db.create_table("accounts", TableOptions::btree())?;
//! let audit = db.create_table("audit", TableOptions::lsm())?;
//!
//! // One atomic commit over both tables.
//! let mut batch = WriteBatch::new();
//! batch.put(&accounts, b"alice", b"90");
//! batch.put(&accounts, b"bob", b"110");
//! batch.put(&audit, b"0001", b"alice->bob 10");
//! db.write(batch)?;
//!
//! // A transaction reads at its snapshot and sees its own writes; its
//! // commit is refused (`Error::Conflict`) if another commit since it
//! // began wrote a key it wrote or read with `get_for_update`.
//! let mut tx = db.begin();
//! let bob = tx.get_for_update(&accounts, b"bob")?;
//! assert_eq!(bob, Some(b"110".to_vec()));
//! tx.put(&accounts, b"bob", b"115")?;
//! tx.put(&audit, b"0002", b"bank->bob 5")?;
//! assert_eq!(tx.get(&accounts, b"bob")?, Some(b"115".to_vec()));
//! tx.commit()?;
//!
//! let snapshot = db.snapshot();
//! accounts.put(b"alice", b"0")?;
//! assert_eq!(snapshot.get(&accounts, b"alice")?, Some(b"90".to_vec()));
//! assert_eq!(accounts.get(b"alice")?, Some(b"0".to_vec()));
//! assert_eq!(snapshot.get(&audit, b"0001")?, Some(b"alice->bob 10".to_vec()));
//!
//! let newest_first: Vec<_> = accounts.iter()?.rev().collect::<spinney::Result<_>>()?;
//! assert_eq!(newest_first[0].0, b"bob");
//!
//! // A range delete: one range tombstone in the LSM table, whatever it
//! // covers; a tombstone per key in a B-tree table. Both read the same.
//! audit.delete_range(&b"0000"[..]..&b"0002"[..])?;
//! let left: Vec<_> = audit.prefix(b"000")?.map(|e| e.map(|(k, _)| k)).collect::<spinney::Result<_>>()?;
//! assert_eq!(left, [b"0002"]);
//! # Ok(()) }
//! ```

/// The README's example, compiled with the doc tests (not run: it writes
/// to `/tmp/bank`).
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeExample;

// The file system layer (`fs/os.rs`, `fs/read_map.rs`) reads and writes at
// offsets through `std::os::unix::fs::FileExt` and maps files with mmap(2).
#[cfg(not(unix))]
compile_error!(
    "spinney needs a Unix-like target: its file system layer (fs/os.rs) uses \
     positional reads and writes (std::os::unix::fs::FileExt) and mmap(2). \
     It is tested on Linux and compiles for macOS; other targets are not supported yet."
);

pub(crate) mod btree;
pub(crate) mod cache;
pub(crate) mod codec;
pub(crate) mod counter;
mod db;
mod dump;
pub(crate) mod encoding;
pub mod error;
pub(crate) mod file_names;
pub mod fs;
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
pub mod limits;
pub(crate) mod lsm;
pub(crate) mod manifest;
pub(crate) mod mvcc;
pub mod options;
pub(crate) mod prefetch;
pub(crate) mod read_context;
pub(crate) mod wal;

pub use btree::BtreeShape;
pub use cache::CacheStats;
pub use db::{
    BtreeStats, Cursor, Db, LevelStats, Range, ReadOptions, Shape, ShapeLevel, Snapshot, Stats,
    Table, TableInfo, TableStats, Transaction, TxRange, WorkDone, WriteBatch, TRANSACT_ATTEMPTS,
};
pub use dump::dump;
pub use error::{Error, Result};
pub use fs::LogWrites;
pub use manifest::FORMAT_VERSION;
pub use options::{
    Backpressure, CompactionOptions, CompactionStyle, Compression, Durability, Options, TableKind,
    TableOptions, WalRecovery, WriteOptions,
};
pub use read_context::ReadContext;

/// For tests only (feature `testing`): see `codec::hide_in_this_thread`.
#[cfg(feature = "testing")]
#[doc(hidden)]
pub use codec::hide_in_this_thread as hide_codec_in_this_thread;

/// Thin public wrappers over internal types, for the criterion benches only.
/// Not part of the API: hidden, behind the `testing` feature, and free to
/// change.
#[doc(hidden)]
#[cfg(feature = "testing")]
pub mod bench_support {
    use crate::lsm::memtable::{MemGet, MemTable as Inner};
    use crate::mvcc::key::Kind;

    /// A memtable without a key filter (the skiplist alone), for benchmarks.
    pub struct MemTable(Inner);

    impl MemTable {
        #[expect(
            clippy::new_without_default,
            reason = "a wrapper for benchmarks, not an API: nothing wants a Default"
        )]
        pub fn new() -> MemTable {
            MemTable(Inner::new(0))
        }

        /// Adds a put of `user_key` at `seqno`; one writer at a time.
        pub fn put(&self, seqno: u64, user_key: &[u8], value: &[u8]) {
            self.0.add(seqno, Kind::Put, user_key, value)
        }

        /// The newest value of `user_key` at `snapshot`, None if absent or
        /// deleted.
        pub fn get(&self, user_key: &[u8], snapshot: u64) -> Option<Vec<u8>> {
            match self.0.get(user_key, snapshot)? {
                MemGet::Value(v) => Some(v),
                MemGet::Deleted => None,
            }
        }

        /// Arena bytes used.
        pub fn approximate_bytes(&self) -> usize {
            self.0.approximate_bytes()
        }
    }
}
