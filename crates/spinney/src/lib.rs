//! spinney: an embedded storage engine whose tables are B-trees or LSM trees.

pub(crate) mod cache;
pub(crate) mod encoding;
pub mod error;
pub mod fs;
pub mod limits;
pub(crate) mod lsm;
pub mod options;

pub use error::{Error, Result};
pub use options::{
    Compression, Durability, Options, TableKind, TableOptions, WalRecovery, WriteOptions,
};

/// Thin public wrappers over internal types, for the criterion benches only.
/// Not part of the API: hidden, behind the `testing` feature, and free to
/// change.
#[doc(hidden)]
#[cfg(feature = "testing")]
pub mod bench_support {
    use crate::lsm::key::Kind;
    use crate::lsm::memtable::{MemGet, MemTable as Inner};

    /// A memtable, for benchmarks.
    pub struct MemTable(Inner);

    impl MemTable {
        #[allow(clippy::new_without_default)]
        pub fn new() -> MemTable {
            MemTable(Inner::new())
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
