//! The LSM table kind: memtables, SSTs, versions, compaction (choosing it,
//! and carrying out flushes and compactions: `job`), backpressure (what a
//! commit group waits for: `backpressure`), the table at open (`recover`),
//! and the iterator over one level. Internal keys, merging and the user
//! cursor are the multi-version layer's (`crate::mvcc`).

pub(crate) mod backpressure;
pub(crate) mod compaction;
pub(crate) mod job;
pub(crate) mod level_iter;
pub(crate) mod memtable;
pub(crate) mod recover;
pub(crate) mod sst;
pub(crate) mod table;
pub(crate) mod version;
