//! The merging iterator: one ordered view over several sorted sources
//! (memtables, L0 runs, levels), both directions.
//!
//! Sources never hold the same internal key (every entry has its own seqno),
//! so the merge needs no tie-breaking. Changing direction repositions every
//! source other than the current one around the current key, as LevelDB's
//! merger does. With the handful of sources an LSM table has, a linear scan
//! for the smallest or largest key beats a heap.

use std::cmp::Ordering;

use super::iter::InternalIterator;
use super::key::compare;
use crate::error::Result;

pub(crate) struct MergingIter {
    children: Vec<Box<dyn InternalIterator>>,
    current: Option<usize>,
    forward: bool,
}

impl MergingIter {
    pub(crate) fn new(children: Vec<Box<dyn InternalIterator>>) -> MergingIter {
        MergingIter {
            children,
            current: None,
            forward: true,
        }
    }

    fn find_smallest(&mut self) {
        self.current = self.find_extreme(Ordering::Less);
    }

    fn find_largest(&mut self) {
        self.current = self.find_extreme(Ordering::Greater);
    }

    /// The valid child whose key is furthest in the direction `wanted`
    /// (Less: the smallest, Greater: the largest).
    fn find_extreme(&self, wanted: Ordering) -> Option<usize> {
        let mut best: Option<(usize, &[u8])> = None;
        for (i, c) in self.children.iter().enumerate() {
            if !c.valid() {
                continue;
            }
            let key = c.key();
            if best.is_none_or(|(_, b)| compare(key, b) == wanted) {
                best = Some((i, key));
            }
        }
        best.map(|(i, _)| i)
    }

    fn current(&self) -> Option<&dyn InternalIterator> {
        self.current
            .and_then(|i| self.children.get(i))
            .map(|c| &**c as &dyn InternalIterator)
    }
}

impl InternalIterator for MergingIter {
    /// Number of sources merged (the trees a seek searches).
    fn sources(&self) -> usize {
        self.children.len()
    }

    fn valid(&self) -> bool {
        self.current().is_some_and(|c| c.valid())
    }

    fn seek_to_first(&mut self) {
        for c in &mut self.children {
            c.seek_to_first();
        }
        self.forward = true;
        self.find_smallest();
    }

    fn seek_to_last(&mut self) {
        for c in &mut self.children {
            c.seek_to_last();
        }
        self.forward = false;
        self.find_largest();
    }

    fn seek(&mut self, target: &[u8]) {
        for c in &mut self.children {
            c.seek(target);
        }
        self.forward = true;
        self.find_smallest();
    }

    fn next(&mut self) {
        let Some(cur) = self.current else { return };
        if !self.forward {
            // Every other source must move to the first entry after the current key.
            let key = self.key().to_vec();
            for (i, c) in self.children.iter_mut().enumerate() {
                if i == cur {
                    continue;
                }
                c.seek(&key);
                if c.valid() && compare(c.key(), &key) == Ordering::Equal {
                    c.next();
                }
            }
            self.forward = true;
        }
        if let Some(c) = self.children.get_mut(cur) {
            c.next();
        }
        self.find_smallest();
    }

    fn prev(&mut self) {
        let Some(cur) = self.current else { return };
        if self.forward {
            // Every other source must move to the last entry before the current key.
            let key = self.key().to_vec();
            for (i, c) in self.children.iter_mut().enumerate() {
                if i == cur {
                    continue;
                }
                c.seek(&key);
                if c.valid() {
                    c.prev();
                } else {
                    c.seek_to_last();
                }
            }
            self.forward = false;
        }
        if let Some(c) = self.children.get_mut(cur) {
            c.prev();
        }
        self.find_largest();
    }

    fn key(&self) -> &[u8] {
        self.current().map_or(&[], |c| c.key())
    }

    fn value(&self) -> &[u8] {
        self.current().map_or(&[], |c| c.value())
    }

    fn status(&self) -> Result<()> {
        for c in &self.children {
            c.status()?;
        }
        Ok(())
    }
}

/// An iterator over a slice of sorted entries, for tests of the iterator stack.
#[cfg(test)]
pub(crate) struct VecIter {
    entries: Vec<(Vec<u8>, Vec<u8>)>,
    pos: Option<usize>,
}

#[cfg(test)]
impl VecIter {
    pub(crate) fn new(mut entries: Vec<(Vec<u8>, Vec<u8>)>) -> VecIter {
        entries.sort_by(|a, b| compare(&a.0, &b.0));
        VecIter { entries, pos: None }
    }
}

#[cfg(test)]
impl InternalIterator for VecIter {
    fn valid(&self) -> bool {
        self.pos.is_some_and(|p| p < self.entries.len())
    }
    fn seek_to_first(&mut self) {
        self.pos = Some(0);
    }
    fn seek_to_last(&mut self) {
        self.pos = self.entries.len().checked_sub(1);
    }
    fn seek(&mut self, target: &[u8]) {
        self.pos = Some(
            self.entries
                .partition_point(|e| compare(&e.0, target) == Ordering::Less),
        );
    }
    fn next(&mut self) {
        self.pos = self.pos.map(|p| p + 1);
    }
    fn prev(&mut self) {
        self.pos = self.pos.and_then(|p| p.checked_sub(1));
    }
    fn key(&self) -> &[u8] {
        self.pos
            .and_then(|p| self.entries.get(p))
            .map_or(&[], |e| &e.0)
    }
    fn value(&self) -> &[u8] {
        self.pos
            .and_then(|p| self.entries.get(p))
            .map_or(&[], |e| &e.1)
    }
    fn status(&self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mvcc::key::{internal_key, Kind};
    use rand::{Rng, SeedableRng};

    #[test]
    fn merge_matches_a_sorted_union_both_ways_with_direction_changes() {
        // Goal: the merge of random sources equals the sorted union, whatever
        // sequence of next/prev/seek is applied. Method: random walk against
        // an index into the sorted union.
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let mut all = Vec::new();
        let mut sources = Vec::new();
        let mut seqno = 1;
        for _ in 0..5 {
            let mut entries = Vec::new();
            for _ in 0..rng.gen_range(0..40) {
                let k = internal_key(
                    format!("k{:03}", rng.gen_range(0..60)).as_bytes(),
                    seqno,
                    Kind::Put,
                );
                seqno += 1;
                entries.push((k, vec![seqno as u8]));
            }
            all.extend(entries.clone());
            sources.push(Box::new(VecIter::new(entries)) as Box<dyn InternalIterator>);
        }
        all.sort_by(|a, b| compare(&a.0, &b.0));
        let mut m = MergingIter::new(sources);
        let mut model: Option<usize> = None;
        m.seek_to_first();
        if !all.is_empty() {
            model = Some(0);
        }
        for _ in 0..2000 {
            match (model, m.valid()) {
                (Some(i), true) => {
                    assert_eq!(m.key(), all.get(i).expect("model in range").0.as_slice())
                }
                (None, false) => {}
                (mi, v) => panic!("model {mi:?} vs merge valid={v}"),
            }
            match rng.gen_range(0..10) {
                0 => {
                    m.seek_to_first();
                    model = if all.is_empty() { None } else { Some(0) };
                }
                1 => {
                    m.seek_to_last();
                    model = all.len().checked_sub(1);
                }
                2 => {
                    let t = internal_key(
                        format!("k{:03}", rng.gen_range(0..61)).as_bytes(),
                        rng.gen_range(0..300),
                        Kind::Put,
                    );
                    m.seek(&t);
                    let p = all.partition_point(|e| compare(&e.0, &t) == Ordering::Less);
                    model = (p < all.len()).then_some(p);
                }
                3..=6 => {
                    if let Some(i) = model {
                        m.next();
                        model = (i + 1 < all.len()).then_some(i + 1);
                    }
                }
                _ => {
                    if let Some(i) = model {
                        m.prev();
                        model = i.checked_sub(1);
                    }
                }
            }
        }
    }
}
