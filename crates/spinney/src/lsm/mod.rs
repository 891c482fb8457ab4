//! The LSM table kind: memtables, SSTs, versions, compaction, iterators.

pub(crate) mod iter;
pub(crate) mod key;
pub(crate) mod memtable;
pub(crate) mod sst;
