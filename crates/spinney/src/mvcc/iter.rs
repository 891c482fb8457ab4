//! The iterator protocol shared by memtables, SST blocks, SST files, levels
//! and the merging iterator.
//!
//! An `InternalIterator` walks internal keys (see `key.rs`) in internal-key
//! order, both ways. It is positioned on an entry or invalid (before the first
//! or after the last). An error (a corrupt block, a failed read) makes it
//! invalid and is reported by `status`; callers check `status` whenever
//! `valid` turns false.

use super::key;
use crate::error::Result;

pub(crate) trait InternalIterator: Send {
    /// True when positioned on an entry.
    fn valid(&self) -> bool;
    /// Positions on the first entry.
    fn seek_to_first(&mut self);
    /// Positions on the last entry.
    fn seek_to_last(&mut self);
    /// Positions on the first entry whose internal key is >= `target`.
    fn seek(&mut self, target: &[u8]);
    /// Moves to the next entry. Requires `valid()`.
    fn next(&mut self);
    /// Moves to the previous entry. Requires `valid()`.
    fn prev(&mut self);
    /// The internal key of the current entry. Requires `valid()`.
    fn key(&self) -> &[u8];
    /// The value of the current entry. Requires `valid()`.
    fn value(&self) -> &[u8];
    /// The first error met, if any.
    fn status(&self) -> Result<()>;
    /// The trees a seek searches (for `ReadContext`): one, but for a
    /// merge of several.
    fn sources(&self) -> usize {
        1
    }
}

impl<I: InternalIterator + ?Sized> InternalIterator for Box<I> {
    fn valid(&self) -> bool {
        (**self).valid()
    }
    fn seek_to_first(&mut self) {
        (**self).seek_to_first()
    }
    fn seek_to_last(&mut self) {
        (**self).seek_to_last()
    }
    fn seek(&mut self, target: &[u8]) {
        (**self).seek(target)
    }
    fn next(&mut self) {
        (**self).next()
    }
    fn prev(&mut self) {
        (**self).prev()
    }
    fn key(&self) -> &[u8] {
        (**self).key()
    }
    fn value(&self) -> &[u8] {
        (**self).value()
    }
    fn status(&self) -> Result<()> {
        (**self).status()
    }
    fn sources(&self) -> usize {
        (**self).sources()
    }
}

/// Whether `it` holds an entry of a key in `[start, end)` newer than
/// `after`.
pub(crate) fn any_newer_in_range(
    mut it: impl InternalIterator,
    start: &[u8],
    end: &[u8],
    after: u64,
) -> Result<bool> {
    it.seek(&key::internal_key(start, key::SEQNO_MAX, key::KIND_SEEK));
    while it.valid() {
        let k = it.key();
        if !super::range_del::below_end(key::user_key(k), end) {
            break;
        }
        if key::trailer(k) >> 8 > after {
            return Ok(true);
        }
        it.next();
    }
    it.status()?;
    Ok(false)
}
