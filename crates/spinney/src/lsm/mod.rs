//! The LSM table kind: memtables, SSTs, versions, compaction, iterators.

pub(crate) mod compaction;
pub(crate) mod cursor;
pub(crate) mod iter;
pub(crate) mod key;
pub(crate) mod level_iter;
pub(crate) mod memtable;
pub(crate) mod merge;
pub(crate) mod sst;
pub(crate) mod table;
pub(crate) mod version;
