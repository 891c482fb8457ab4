//! Range tombstones: a delete of every key in `[start, end)` at one seqno.
//!
//! An LSM table keeps its range tombstones beside its trees, not in them:
//! a memtable holds the ones written since it began, and a version the
//! flushed ones (recorded in the manifest). A tombstone at `seqno` hides,
//! from readers at or above `seqno`, every version older than it of every
//! key in its range. Reads ask the tombstones of their snapshot for the
//! newest one over a key (`Fragments::covering`); a cursor's sources skip
//! what a tombstone hides (`Skipping`), seeking past a whole range when
//! the source holds nothing newer than the tombstone, so a scan over a
//! million deleted keys does not step through them. Compaction drops what
//! no reader can see (`lsm::table::write_merged`), and a tombstone goes
//! once no file holds a version it hides (`lsm::job`).
//!
//! A B-tree table turns a range delete into a point tombstone per live key
//! as it applies it (`btree::write`): nothing here concerns it.

use std::collections::{BTreeMap, BinaryHeap};
use std::sync::Arc;

use super::iter::InternalIterator;
use super::key::{self, KIND_SEEK, SEQNO_MAX};
use crate::error::Result;

/// A delete of the keys in `[start, end)` at `seqno`. An empty `end` has
/// no bound above (a bounded range ending at the empty key is empty, and
/// never recorded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RangeTombstone {
    pub seqno: u64,
    pub start: Vec<u8>,
    pub end: Vec<u8>,
}

impl RangeTombstone {
    #[cfg(test)]
    pub(crate) fn covers(&self, user_key: &[u8]) -> bool {
        contains(&self.start, &self.end, user_key)
    }

    /// True when the range intersects the user keys `[lo, hi]`.
    pub(crate) fn overlaps(&self, lo: &[u8], hi: &[u8]) -> bool {
        reaches(&self.start, &self.end, lo, hi)
    }

    /// Bytes it takes in memory, for a memtable's size.
    pub(crate) fn charge(&self) -> usize {
        self.start.len() + self.end.len() + 48
    }
}

/// Whether `user_key` is below the end of a range (an empty `end`: none).
pub(crate) fn below_end(user_key: &[u8], end: &[u8]) -> bool {
    end.is_empty() || user_key < end
}

/// Whether the range `[start, end)` (an empty `end`: no bound above), as
/// range deletes give it, holds `user_key`.
pub(crate) fn contains(start: &[u8], end: &[u8], user_key: &[u8]) -> bool {
    user_key >= start && below_end(user_key, end)
}

/// Whether the range `[start, end)` intersects the user keys `[lo, hi]`
/// (a file's, say).
pub(crate) fn reaches(start: &[u8], end: &[u8], lo: &[u8], hi: &[u8]) -> bool {
    hi >= start && below_end(lo, end)
}

/// Whether the ranges `[a, a_end)` and `[b, b_end)` share a key.
pub(crate) fn meet(a: &[u8], a_end: &[u8], b: &[u8], b_end: &[u8]) -> bool {
    below_end(b, a_end) && below_end(a, b_end)
}

/// A stretch of keys no tombstone begins or ends inside, with the seqnos of
/// the tombstones over all of it, newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fragment {
    pub start: Vec<u8>,
    /// Empty: no bound above.
    pub end: Vec<u8>,
    pub seqnos: Vec<u64>,
}

impl Fragment {
    /// The newest seqno at or below `snapshot`, or 0.
    fn newest_at(&self, snapshot: u64) -> u64 {
        self.seqnos
            .iter()
            .copied()
            .find(|&s| s <= snapshot)
            .unwrap_or(0)
    }
}

/// Tombstones cut into fragments that do not overlap, sorted by key, for
/// searches by key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Fragments {
    frags: Vec<Fragment>,
}

impl Fragments {
    /// The fragments of the tombstones at or below `snapshot`.
    pub(crate) fn build<'a>(
        tombstones: impl IntoIterator<Item = &'a RangeTombstone>,
        snapshot: u64,
    ) -> Fragments {
        let mut list: Vec<&RangeTombstone> = tombstones
            .into_iter()
            .filter(|t| t.seqno <= snapshot && below_end(&t.start, &t.end))
            .collect();
        if list.is_empty() {
            return Fragments::default();
        }
        list.sort_by(|a, b| a.start.cmp(&b.start));
        // The places where a tombstone begins or ends, in key order; the
        // unbounded end is past them all.
        let mut bounds: Vec<&[u8]> = list.iter().map(|t| t.start.as_slice()).collect();
        bounds.extend(
            list.iter()
                .map(|t| t.end.as_slice())
                .filter(|e| !e.is_empty()),
        );
        bounds.sort_unstable();
        bounds.dedup();
        // A sweep: the tombstones open at each bound (their seqnos, and
        // their ends in a heap, the nearest on top).
        let mut frags = Vec::new();
        let mut next = 0;
        let mut open: BTreeMap<u64, usize> = BTreeMap::new();
        let mut ends: BinaryHeap<std::cmp::Reverse<(EndKey<'_>, u64)>> = BinaryHeap::new();
        for (i, &at) in bounds.iter().enumerate() {
            while let Some(std::cmp::Reverse((end, seqno))) = ends.peek() {
                if end.is_at_or_below(at) {
                    if let Some(n) = open.get_mut(seqno) {
                        *n -= 1;
                        if *n == 0 {
                            open.remove(seqno);
                        }
                    }
                    ends.pop();
                } else {
                    break;
                }
            }
            while let Some(t) = list.get(next).filter(|t| t.start.as_slice() <= at) {
                *open.entry(t.seqno).or_insert(0) += 1;
                ends.push(std::cmp::Reverse((EndKey(&t.end), t.seqno)));
                next += 1;
            }
            if open.is_empty() {
                continue;
            }
            let end = bounds.get(i + 1).map(|b| b.to_vec()).unwrap_or_default();
            frags.push(Fragment {
                start: at.to_vec(),
                end,
                seqnos: open.keys().rev().copied().collect(),
            });
        }
        Fragments { frags }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.frags.is_empty()
    }

    /// The fragment that holds `user_key`, if a tombstone covers it.
    pub(crate) fn find(&self, user_key: &[u8]) -> Option<&Fragment> {
        self.frags.get(self.find_index(user_key)?)
    }

    pub(crate) fn find_index(&self, user_key: &[u8]) -> Option<usize> {
        let i = self
            .frags
            .partition_point(|f| f.start.as_slice() <= user_key)
            .checked_sub(1)?;
        let f = self.frags.get(i)?;
        below_end(user_key, &f.end).then_some(i)
    }

    /// The seqno of the newest tombstone at or below `snapshot` over
    /// `user_key`, or 0 if none: every version of the key older than it is
    /// deleted for a reader at `snapshot`.
    pub(crate) fn covering(&self, user_key: &[u8], snapshot: u64) -> u64 {
        self.find(user_key).map_or(0, |f| f.newest_at(snapshot))
    }

    /// The seqno of the oldest tombstone over `user_key` newer than
    /// `seqno`, or `u64::MAX`: from it on, readers see the version at
    /// `seqno` deleted.
    pub(crate) fn hidden_from(&self, user_key: &[u8], seqno: u64) -> u64 {
        self.find(user_key)
            .and_then(|f| f.seqnos.iter().rev().copied().find(|&s| s > seqno))
            .unwrap_or(u64::MAX)
    }
}

/// A range end in the sweep's heap: the empty end sorts last.
#[derive(Debug, PartialEq, Eq)]
struct EndKey<'a>(&'a [u8]);

impl EndKey<'_> {
    fn is_at_or_below(&self, at: &[u8]) -> bool {
        !self.0.is_empty() && self.0 <= at
    }
}

impl Ord for EndKey<'_> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        match (self.0.is_empty(), other.0.is_empty()) {
            (true, true) => std::cmp::Ordering::Equal,
            (true, false) => std::cmp::Ordering::Greater,
            (false, true) => std::cmp::Ordering::Less,
            (false, false) => self.0.cmp(other.0),
        }
    }
}

impl PartialOrd for EndKey<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// A tree's entries without the versions that the tombstones of `sets`
/// hide from a reader at `snapshot`. Where the tree holds nothing newer
/// than a tombstone (`newest` is its largest seqno), the whole fragment is
/// skipped with one seek; elsewhere hidden entries are stepped over one by
/// one.
pub(crate) struct Skipping<I> {
    inner: I,
    sets: Arc<[Arc<Fragments>]>,
    snapshot: u64,
    newest: u64,
    target: Vec<u8>,
}

/// Where a skip goes: past the end of a fragment (forward), or before its
/// start (backward); an empty end is past every key.
struct Skip {
    set: usize,
    fragment: usize,
}

impl<I: InternalIterator> Skipping<I> {
    pub(crate) fn new(inner: I, sets: Arc<[Arc<Fragments>]>, snapshot: u64, newest: u64) -> Self {
        Skipping {
            inner,
            sets,
            snapshot,
            newest,
            target: Vec::new(),
        }
    }

    /// Whether a tombstone hides the current entry: then, if the tree
    /// holds nothing newer than one over it, the fragment to skip whole
    /// (the one reaching farthest the way the cursor goes).
    fn hiding(&self, forward: bool) -> Option<Option<Skip>> {
        let ikey = self.inner.key();
        let user_key = key::user_key(ikey);
        let seqno = key::trailer(ikey) >> 8;
        let mut hidden = false;
        let mut best: Option<(Skip, &Fragment)> = None;
        for (set, fragments) in self.sets.iter().enumerate() {
            let Some(i) = fragments.find_index(user_key) else {
                continue;
            };
            let Some(f) = fragments.frags.get(i) else {
                continue;
            };
            let t = f.newest_at(self.snapshot);
            if t <= seqno {
                continue;
            }
            hidden = true;
            if t <= self.newest {
                continue;
            }
            let farther = match &best {
                None => true,
                Some((_, b)) if forward => !b.end.is_empty() && (f.end.is_empty() || f.end > b.end),
                Some((_, b)) => f.start < b.start,
            };
            if farther {
                best = Some((Skip { set, fragment: i }, f));
            }
        }
        hidden.then(|| best.map(|(s, _)| s))
    }

    /// Seeks the tree past the fragment of `skip` (forward: to its end;
    /// backward: to its start), and past the fragments next to it that
    /// hide the whole tree as well (a run of overlapping ranges is cut
    /// into many small fragments: one seek crosses them all).
    fn seek_past(&mut self, skip: &Skip, forward: bool) {
        let Some(fragments) = self.sets.get(skip.set).map(Arc::clone) else {
            return;
        };
        let frags = &fragments.frags;
        let whole = |f: &Fragment| f.newest_at(self.snapshot) > self.newest;
        let mut j = skip.fragment;
        if forward {
            while let (Some(a), Some(b)) = (frags.get(j), frags.get(j + 1)) {
                if a.end.is_empty() || a.end != b.start || !whole(b) {
                    break;
                }
                j += 1;
            }
        } else {
            while let (Some(a), Some(b)) =
                (j.checked_sub(1).and_then(|i| frags.get(i)), frags.get(j))
            {
                if a.end != b.start || !whole(a) {
                    break;
                }
                j -= 1;
            }
        }
        let Some(f) = frags.get(j) else {
            return;
        };
        if forward && f.end.is_empty() {
            // Hidden to the end.
            self.inner.seek_to_last();
            if self.inner.valid() {
                self.inner.next();
            }
            return;
        }
        let mut target = std::mem::take(&mut self.target);
        target.clear();
        let at = if forward { &f.end } else { &f.start };
        key::append_internal_key(&mut target, at, SEQNO_MAX, KIND_SEEK);
        self.inner.seek(&target);
        self.target = target;
        if !forward {
            if self.inner.valid() {
                self.inner.prev();
            } else if self.inner.status().is_ok() {
                self.inner.seek_to_last();
            }
        }
    }

    fn settle_forward(&mut self) {
        while self.inner.valid() {
            match self.hiding(true) {
                None => return,
                Some(None) => self.inner.next(),
                Some(Some(skip)) => self.seek_past(&skip, true),
            }
        }
    }

    fn settle_backward(&mut self) {
        while self.inner.valid() {
            match self.hiding(false) {
                None => return,
                Some(None) => self.inner.prev(),
                Some(Some(skip)) => self.seek_past(&skip, false),
            }
        }
    }
}

impl<I: InternalIterator> InternalIterator for Skipping<I> {
    fn valid(&self) -> bool {
        self.inner.valid()
    }
    fn seek_to_first(&mut self) {
        self.inner.seek_to_first();
        self.settle_forward();
    }
    fn seek_to_last(&mut self) {
        self.inner.seek_to_last();
        self.settle_backward();
    }
    fn seek(&mut self, target: &[u8]) {
        self.inner.seek(target);
        self.settle_forward();
    }
    fn next(&mut self) {
        self.inner.next();
        self.settle_forward();
    }
    fn prev(&mut self) {
        self.inner.prev();
        self.settle_backward();
    }
    fn key(&self) -> &[u8] {
        self.inner.key()
    }
    fn value(&self) -> &[u8] {
        self.inner.value()
    }
    fn status(&self) -> Result<()> {
        self.inner.status()
    }
    fn sources(&self) -> usize {
        self.inner.sources()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(seqno: u64, start: &str, end: &str) -> RangeTombstone {
        RangeTombstone {
            seqno,
            start: start.as_bytes().to_vec(),
            end: end.as_bytes().to_vec(),
        }
    }

    /// The newest covering seqno by brute force.
    fn model(list: &[RangeTombstone], key: &str, snapshot: u64) -> u64 {
        list.iter()
            .filter(|t| t.seqno <= snapshot && t.covers(key.as_bytes()))
            .map(|t| t.seqno)
            .max()
            .unwrap_or(0)
    }

    #[test]
    fn fragments_answer_as_the_tombstones_do() {
        let list = vec![
            t(5, "b", "f"),
            t(9, "d", "h"),
            t(3, "a", "c"),
            t(7, "g", ""),
            t(11, "e", "e"), // empty: never recorded, ignored
            t(2, "", "b"),
        ];
        let keys = ["", "a", "a0", "b", "c", "d", "e", "f", "g", "h", "z", "zz"];
        for snapshot in [0, 2, 3, 5, 7, 8, 9, 100] {
            let f = Fragments::build(&list, snapshot);
            for k in keys {
                assert_eq!(
                    f.covering(k.as_bytes(), u64::MAX),
                    model(&list, k, snapshot),
                    "key {k:?} at {snapshot}"
                );
            }
        }
        let all = Fragments::build(&list, u64::MAX);
        for k in keys {
            for s in [0, 3, 5, 7, 9, 100] {
                assert_eq!(all.covering(k.as_bytes(), s), model(&list, k, s));
            }
        }
        // The oldest tombstone newer than a version.
        assert_eq!(all.hidden_from(b"e", 4), 5);
        assert_eq!(all.hidden_from(b"e", 5), 9);
        assert_eq!(all.hidden_from(b"e", 9), u64::MAX);
        assert_eq!(all.hidden_from(b"zz", 1), 7);
        assert!(Fragments::build(&list, 1).is_empty());
    }

    #[test]
    fn random_tombstones_against_brute_force() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut rand = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for _ in 0..200 {
            let n = 1 + rand(12);
            let list: Vec<RangeTombstone> = (0..n)
                .map(|i| {
                    let a = rand(20);
                    let b = a + rand(8);
                    let start = if rand(6) == 0 {
                        String::new()
                    } else {
                        format!("{a:02}")
                    };
                    let end = if rand(6) == 0 {
                        String::new()
                    } else {
                        format!("{b:02}")
                    };
                    t(i + 1, &start, &end)
                })
                .collect();
            let snapshot = rand(n + 2);
            let f = Fragments::build(&list, snapshot);
            for k in 0..30 {
                let key = format!("{k:02}");
                assert_eq!(
                    f.covering(key.as_bytes(), u64::MAX),
                    model(&list, &key, snapshot),
                    "{list:?} key {key} snapshot {snapshot}"
                );
            }
        }
    }

    /// Each tree's entries through `Skipping` against brute force: walks
    /// both ways and seeks, over random versions and random tombstone sets
    /// (some trees older than every tombstone, so that whole fragments and
    /// runs of them are skipped by seeks).
    #[test]
    fn skipping_leaves_out_exactly_what_the_tombstones_hide() {
        use crate::mvcc::key::{internal_key, Kind};
        use crate::mvcc::merge::VecIter;
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut rand = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let key = |n: u64| format!("{n:03}").into_bytes();
        for _ in 0..1000 {
            // A tree of versions at seqnos 1..=newest.
            let newest = 1 + rand(60);
            let mut entries = Vec::new();
            for _ in 0..rand(80) {
                let k = key(rand(100));
                entries.push((internal_key(&k, 1 + rand(newest), Kind::Put), b"v".to_vec()));
            }
            entries.sort_by(|a, b| key::compare(&a.0, &b.0));
            entries.dedup_by(|a, b| a.0 == b.0);
            // Tombstones in one to three sets, many above the tree's newest.
            let sets: Vec<Vec<RangeTombstone>> = (0..1 + rand(3))
                .map(|_| {
                    (0..rand(8))
                        .map(|_| {
                            let a = rand(100);
                            let start = if rand(10) == 0 { Vec::new() } else { key(a) };
                            let end = if rand(10) == 0 {
                                Vec::new()
                            } else {
                                key(a + 1 + rand(30))
                            };
                            RangeTombstone {
                                seqno: 1 + rand(2 * newest),
                                start,
                                end,
                            }
                        })
                        .collect()
                })
                .collect();
            let snapshot = 1 + rand(2 * newest);
            let hidden = |ikey: &[u8]| {
                let (uk, seqno) = (key::user_key(ikey), key::trailer(ikey) >> 8);
                sets.iter().flatten().any(|t| {
                    t.seqno <= snapshot
                        && t.seqno > seqno
                        && uk >= t.start.as_slice()
                        && (t.end.is_empty() || uk < t.end.as_slice())
                })
            };
            let want: Vec<Vec<u8>> = entries
                .iter()
                .map(|e| e.0.clone())
                .filter(|k| !hidden(k))
                .collect();
            let frags: Arc<[Arc<Fragments>]> = sets
                .iter()
                .map(|s| Arc::new(Fragments::build(s, u64::MAX)))
                .collect();
            let mut it = Skipping::new(VecIter::new(entries.clone()), frags, snapshot, newest);
            let mut got = Vec::new();
            it.seek_to_first();
            while it.valid() {
                got.push(it.key().to_vec());
                it.next();
            }
            assert_eq!(got, want, "forward");
            let mut back = Vec::new();
            it.seek_to_last();
            while it.valid() {
                back.push(it.key().to_vec());
                it.prev();
            }
            back.reverse();
            assert_eq!(back, want, "backward");
            for _ in 0..10 {
                let target = internal_key(&key(rand(110)), rand(2 * newest), Kind::Put);
                it.seek(&target);
                let first = want.iter().find(|k| key::compare(k, &target).is_ge());
                assert_eq!(
                    it.valid().then(|| it.key().to_vec()).as_ref(),
                    first,
                    "seek"
                );
                if it.valid() {
                    it.prev();
                    let before = want.iter().rev().find(|k| key::compare(k, &target).is_lt());
                    assert_eq!(
                        it.valid().then(|| it.key().to_vec()).as_ref(),
                        before,
                        "prev"
                    );
                }
            }
        }
    }
}
