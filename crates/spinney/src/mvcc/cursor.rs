//! From internal entries to what a user sees: the newest version of each key
//! visible at the cursor's snapshot, tombstones hidden, within bounds, both
//! directions. The logic follows LevelDB's DBIter.
//!
//! Moving forward, the inner iterator sits on the entry the cursor shows,
//! and the cursor's key and value are the iterator's (no copy; a step
//! copies the key it leaves, to skip that key's older versions). Moving
//! backward, it sits just before every entry of the key the cursor shows
//! (the cursor's key and value are copies). Changing direction repositions
//! it.
//!
//! This is the user-level cursor: each public seek and step is one operation
//! for the thread's `ReadContext`; the repositionings it does on its own
//! (changing direction, stepping over versions) are not counted as seeks.

use std::ops::Bound;

use super::iter::InternalIterator;
use super::key::{self, internal_key, Kind, ParsedKey, KIND_SEEK, SEQNO_MAX};
use crate::error::{Error, Result};
use crate::read_context::{self, ReadContext};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Forward,
    Reverse,
}

/// A user cursor over the internal entries of `I`: one table's versions,
/// merged (an LSM table's `MergingIter`) or not (a B-tree's `BtreeIter`).
pub(crate) struct UserCursor<I> {
    iter: I,
    snapshot: u64,
    lower: Bound<Vec<u8>>,
    upper: Bound<Vec<u8>>,
    direction: Direction,
    valid: bool,
    /// Moving forward: the last key stepped past or deleted, whose older
    /// versions are skipped. Moving backward: the key shown.
    key: Vec<u8>,
    /// Moving backward: the value shown.
    value: Vec<u8>,
    error: Option<Error>,
}

impl<I: InternalIterator> UserCursor<I> {
    pub(crate) fn new(
        iter: I,
        snapshot: u64,
        lower: Bound<Vec<u8>>,
        upper: Bound<Vec<u8>>,
    ) -> UserCursor<I> {
        UserCursor {
            iter,
            snapshot,
            lower,
            upper,
            direction: Direction::Forward,
            valid: false,
            key: Vec::new(),
            value: Vec::new(),
            error: None,
        }
    }

    pub(crate) fn valid(&self) -> bool {
        self.valid
    }

    /// The inner iterator.
    pub(crate) fn iter_mut(&mut self) -> &mut I {
        &mut self.iter
    }

    /// The bounds the cursor shows keys within.
    pub(crate) fn bounds(&self) -> (&Bound<Vec<u8>>, &Bound<Vec<u8>>) {
        (&self.lower, &self.upper)
    }

    /// Unpositioned, reading at `snapshot` from now on, with no error.
    pub(crate) fn reset(&mut self, snapshot: u64) {
        self.snapshot = snapshot;
        self.direction = Direction::Forward;
        self.valid = false;
        self.key.clear();
        self.value.clear();
        self.error = None;
    }

    /// The key shown (empty when not valid).
    #[inline]
    pub(crate) fn key(&self) -> &[u8] {
        match (self.valid, self.direction) {
            (false, _) => &[],
            (true, Direction::Forward) => key::user_key(self.iter.key()),
            (true, Direction::Reverse) => &self.key,
        }
    }

    /// The value shown (empty when not valid).
    #[inline]
    pub(crate) fn value(&self) -> &[u8] {
        match (self.valid, self.direction) {
            (false, _) => &[],
            (true, Direction::Forward) => self.iter.value(),
            (true, Direction::Reverse) => &self.value,
        }
    }

    pub(crate) fn status(&self) -> Result<()> {
        match &self.error {
            Some(e) => Err(e.duplicate()),
            None => Ok(()),
        }
    }

    fn above_upper(&self, user_key: &[u8]) -> bool {
        match &self.upper {
            Bound::Included(u) => user_key > u.as_slice(),
            Bound::Excluded(u) => user_key >= u.as_slice(),
            Bound::Unbounded => false,
        }
    }

    fn below_lower(&self, user_key: &[u8]) -> bool {
        match &self.lower {
            Bound::Included(l) => user_key < l.as_slice(),
            Bound::Excluded(l) => user_key <= l.as_slice(),
            Bound::Unbounded => false,
        }
    }

    /// Stops the cursor on an error from the sources; true if there was one.
    fn check_error(&mut self) -> bool {
        if self.error.is_none() {
            if let Err(e) = self.iter.status() {
                self.error = Some(e);
            }
        }
        if self.error.is_some() {
            self.valid = false;
            return true;
        }
        false
    }

    fn malformed(&mut self) {
        self.error = Some(Error::corruption(
            "(table iterator)",
            0,
            "malformed internal key in a source",
        ));
        self.valid = false;
    }

    /// Moves forward from the inner position to the first visible put,
    /// where the iterator stays. If `skipping`, every entry of `self.key` (a
    /// key already shown) is skipped; so are those of each deleted key met
    /// on the way (copied into `self.key`).
    fn find_next_user_entry(&mut self, mut skipping: bool) {
        self.direction = Direction::Forward;
        self.valid = false;
        while self.iter.valid() {
            let Some(p) = ParsedKey::parse(self.iter.key()) else {
                return self.malformed();
            };
            if self.above_upper(p.user_key) {
                break;
            }
            if p.seqno <= self.snapshot && !(skipping && key::equal_bytes(p.user_key, &self.key)) {
                match p.kind {
                    // (`parse` gives no range delete.)
                    Kind::Delete | Kind::RangeDelete => {
                        self.key.clear();
                        self.key.extend_from_slice(p.user_key);
                        skipping = true;
                    }
                    Kind::Put => {
                        self.valid = true;
                        return;
                    }
                }
            }
            self.iter.next();
        }
        self.check_error();
    }

    /// Moves backward from the inner position to the previous visible put.
    fn find_prev_user_entry(&mut self) {
        self.direction = Direction::Reverse;
        // The key found so far (with its value) is kept in the cursor's
        // buffers; a newer version of it replaces it, a newer tombstone
        // unsets it.
        let mut found = false;
        while self.iter.valid() {
            let Some(p) = ParsedKey::parse(self.iter.key()) else {
                return self.malformed();
            };
            if self.below_lower(p.user_key) {
                break;
            }
            if p.seqno <= self.snapshot {
                if found && p.user_key < self.key.as_slice() {
                    // Every entry of the found key has been seen: it is the answer.
                    break;
                }
                found = p.kind == Kind::Put;
                if found {
                    self.key.clear();
                    self.key.extend_from_slice(p.user_key);
                    self.value.clear();
                    self.value.extend_from_slice(self.iter.value());
                }
            }
            self.iter.prev();
        }
        let failed = self.check_error();
        self.valid = found && !failed;
    }

    fn seek_lower(&mut self) {
        match self.lower.clone() {
            Bound::Included(l) => self.iter.seek(&internal_key(&l, SEQNO_MAX, KIND_SEEK)),
            // Seqno 0 with the smallest kind sorts after every real entry of `l`.
            Bound::Excluded(l) => self.iter.seek(&internal_key(&l, 0, Kind::Delete)),
            Bound::Unbounded => self.iter.seek_to_first(),
        }
    }

    /// Positions the inner iterator on the last entry whose user key is
    /// `<= key` (inclusive) or `< key` (exclusive).
    fn position_before(&mut self, key: &[u8], inclusive: bool) {
        let target = if inclusive {
            internal_key(key, 0, Kind::Delete)
        } else {
            internal_key(key, SEQNO_MAX, KIND_SEEK)
        };
        self.iter.seek(&target);
        if self.iter.valid() {
            self.iter.prev();
        } else if !self.check_error() {
            self.iter.seek_to_last();
        }
    }

    /// Counts one seek in the thread's `ReadContext`: a seek searches every
    /// source (every tree of a merge).
    fn count_seek(&self) {
        read_context::add(&ReadContext {
            seeks: 1,
            trees_searched: self.iter.sources() as u64,
            ..ReadContext::default()
        });
    }

    /// Counts one step in the thread's `ReadContext`.
    fn count_step() {
        read_context::add_step();
    }

    pub(crate) fn seek_to_first(&mut self) {
        self.count_seek();
        self.first();
    }

    pub(crate) fn seek_to_last(&mut self) {
        self.count_seek();
        self.last();
    }

    /// `seek_to_first` without counting.
    fn first(&mut self) {
        self.error = None;
        self.seek_lower();
        self.find_next_user_entry(false);
    }

    /// `seek_to_last` without counting.
    fn last(&mut self) {
        self.error = None;
        match self.upper.clone() {
            Bound::Included(u) => self.position_before(&u, true),
            Bound::Excluded(u) => self.position_before(&u, false),
            Bound::Unbounded => self.iter.seek_to_last(),
        }
        self.find_prev_user_entry();
    }

    /// The first key `>= key` (and within bounds).
    pub(crate) fn seek(&mut self, key: &[u8]) {
        self.count_seek();
        if self.below_lower(key) {
            return self.first();
        }
        self.error = None;
        let iter = &mut self.iter;
        key::with_internal_key(key, SEQNO_MAX, KIND_SEEK, |target| iter.seek(target));
        self.find_next_user_entry(false);
    }

    /// The last key `<= key` (and within bounds).
    pub(crate) fn seek_for_prev(&mut self, key: &[u8]) {
        self.count_seek();
        if self.above_upper(key) {
            return self.last();
        }
        self.error = None;
        self.position_before(key, true);
        self.find_prev_user_entry();
    }

    pub(crate) fn next(&mut self) {
        if !self.valid {
            return;
        }
        Self::count_step();
        match self.direction {
            // The inner iterator is before the current key's entries.
            Direction::Reverse => self
                .iter
                .seek(&internal_key(&self.key, SEQNO_MAX, KIND_SEEK)),
            // It is on the current key's newest visible version: it steps
            // off it (not read again), and the key's older versions are
            // skipped.
            Direction::Forward => {
                self.key.clear();
                self.key.extend_from_slice(key::user_key(self.iter.key()));
                self.iter.next();
            }
        }
        self.find_next_user_entry(true);
    }

    pub(crate) fn prev(&mut self) {
        if !self.valid {
            return;
        }
        Self::count_step();
        if self.direction == Direction::Forward {
            // Step back over every entry of the current key.
            let current = key::user_key(self.iter.key()).to_vec();
            self.position_before(&current, false);
            if self.check_error() {
                return;
            }
        }
        self.find_prev_user_entry();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mvcc::merge::{MergingIter, VecIter};
    use std::collections::BTreeMap;

    fn cursor(
        entries: Vec<(Vec<u8>, Vec<u8>)>,
        snapshot: u64,
        lower: Bound<Vec<u8>>,
        upper: Bound<Vec<u8>>,
    ) -> UserCursor<MergingIter> {
        UserCursor::new(
            MergingIter::new(vec![Box::new(VecIter::new(entries))]),
            snapshot,
            lower,
            upper,
        )
    }

    #[test]
    fn shows_the_visible_version_and_hides_tombstones_both_ways() {
        // Goal: for every snapshot, forward and reverse scans equal a model
        // built by replaying the writes up to that snapshot.
        let writes: Vec<(&[u8], Option<&[u8]>)> = vec![
            (b"a", Some(b"1")),
            (b"b", Some(b"1")),
            (b"a", None),
            (b"c", Some(b"1")),
            (b"b", Some(b"2")),
            (b"a", Some(b"3")),
            (b"c", None),
            (b"d", Some(b"1")),
        ];
        let mut entries = Vec::new();
        for (i, (k, v)) in writes.iter().enumerate() {
            let seqno = i as u64 + 1;
            let kind = if v.is_some() { Kind::Put } else { Kind::Delete };
            entries.push((internal_key(k, seqno, kind), v.unwrap_or_default().to_vec()));
        }
        for snapshot in 0..=writes.len() as u64 + 1 {
            let mut model = BTreeMap::new();
            for (k, v) in writes.iter().take(snapshot as usize) {
                match v {
                    Some(v) => model.insert(k.to_vec(), v.to_vec()),
                    None => model.remove(*k),
                };
            }
            let want: Vec<_> = model.into_iter().collect();
            let mut c = cursor(
                entries.clone(),
                snapshot,
                Bound::Unbounded,
                Bound::Unbounded,
            );
            let mut got = Vec::new();
            c.seek_to_first();
            while c.valid() {
                got.push((c.key().to_vec(), c.value().to_vec()));
                c.next();
            }
            assert_eq!(got, want, "forward at snapshot {snapshot}");
            let mut got = Vec::new();
            c.seek_to_last();
            while c.valid() {
                got.push((c.key().to_vec(), c.value().to_vec()));
                c.prev();
            }
            got.reverse();
            assert_eq!(got, want, "reverse at snapshot {snapshot}");
        }
    }

    #[test]
    fn bounds_and_direction_changes() {
        let entries: Vec<_> = (0..10u8)
            .map(|i| {
                (
                    internal_key(&[b'a' + i], u64::from(i) + 1, Kind::Put),
                    vec![i],
                )
            })
            .collect();
        let mut c = cursor(
            entries,
            100,
            Bound::Excluded(b"b".to_vec()),
            Bound::Included(b"g".to_vec()),
        );
        c.seek_to_first();
        assert_eq!(c.key(), b"c");
        c.seek_to_last();
        assert_eq!(c.key(), b"g");
        c.prev();
        assert_eq!(c.key(), b"f");
        c.next();
        assert_eq!(c.key(), b"g");
        c.next();
        assert!(!c.valid());
        c.seek(b"a");
        assert_eq!(c.key(), b"c");
        c.prev();
        assert!(!c.valid());
        c.seek_for_prev(b"z");
        assert_eq!(c.key(), b"g");
        c.seek_for_prev(b"d");
        assert_eq!(c.key(), b"d");
        c.next();
        assert_eq!(c.key(), b"e");
    }
}
