//! The multi-version layer both table kinds share: internal keys (a user
//! key, a sequence number and a kind), the internal iterator protocol, the
//! merging of sorted sources, the user-facing cursor that turns versions
//! into what a reader at a sequence number sees, and the horizon: which old
//! versions some reader may still need.
//!
//! Both kinds store versions under internal keys and both read them through
//! `UserCursor`; an LSM table merges its memtables and runs
//! (`MergingIter`), a B-tree table gives its one tree. Compaction (LSM) and
//! leaf pruning (B-tree) drop versions by the same rule, `Horizon::needed`.
//! Neither `lsm/` nor `btree/` depends on the other; both depend on this.

pub(crate) mod cursor;
pub(crate) mod horizon;
pub(crate) mod iter;
pub(crate) mod key;
pub(crate) mod merge;
pub(crate) mod range_del;

pub(crate) use horizon::Horizon;
