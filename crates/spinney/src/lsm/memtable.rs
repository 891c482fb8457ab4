//! STUB — to be replaced by the arena skiplist. The interface is fixed.
//!
//! The memtable: an ordered in-memory map of internal keys, written by one
//! thread at a time (the commit leader) and read by many at once.

use std::sync::Arc;

use crate::error::Result;
use crate::lsm::iter::InternalIterator;
use crate::lsm::key::Kind;

/// What a point lookup found in a memtable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum MemGet {
    /// The newest visible version is a put with this value.
    Value(Vec<u8>),
    /// The newest visible version is a tombstone.
    Deleted,
}

pub(crate) struct MemTable {}

impl MemTable {
    pub(crate) fn new() -> MemTable {
        todo!()
    }
    /// Adds an entry. Callers serialise calls to `add` (one writer at a
    /// time); readers may run concurrently with it. `(user_key, seqno)` is
    /// never added twice.
    pub(crate) fn add(&self, _seqno: u64, _kind: Kind, _user_key: &[u8], _value: &[u8]) {
        todo!()
    }
    /// The newest entry for `user_key` with seqno <= `snapshot`, if any.
    pub(crate) fn get(&self, _user_key: &[u8], _snapshot: u64) -> Option<MemGet> {
        todo!()
    }
    /// An iterator over all entries in internal-key order. Entries added
    /// after it was created may or may not be seen.
    pub(crate) fn iter(self: &Arc<Self>) -> MemTableIter {
        todo!()
    }
    /// Bytes of memory used by entries and their index (arena bytes).
    pub(crate) fn approximate_bytes(&self) -> usize {
        todo!()
    }
    /// Number of entries.
    pub(crate) fn len(&self) -> usize {
        todo!()
    }
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

pub(crate) struct MemTableIter {}

impl InternalIterator for MemTableIter {
    fn valid(&self) -> bool {
        todo!()
    }
    fn seek_to_first(&mut self) {
        todo!()
    }
    fn seek_to_last(&mut self) {
        todo!()
    }
    fn seek(&mut self, _target: &[u8]) {
        todo!()
    }
    fn next(&mut self) {
        todo!()
    }
    fn prev(&mut self) {
        todo!()
    }
    fn key(&self) -> &[u8] {
        todo!()
    }
    fn value(&self) -> &[u8] {
        todo!()
    }
    fn status(&self) -> Result<()> {
        Ok(())
    }
}
