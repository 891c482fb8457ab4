//! The horizon: which old versions a reader may still need, one rule for
//! both table kinds.
//!
//! A reader reads at a sequence number: a registered snapshot's, or the
//! visible seqno when it started. It sees, of each key, the newest version
//! at or below that number. So a version at `seqno` whose next newer version
//! is at `newer` is needed exactly when some reader's number falls in
//! `[seqno, newer)`; readers that start later read at the visible seqno or
//! above. LSM compaction drops the versions no one needs as it merges
//! (`lsm::table::write_merged`); a B-tree drops them from a leaf when it
//! copies, splits or packs it (`btree::reshape::versions_kept`).
//!
//! What protects readers that are not registered snapshots differs by kind,
//! and the rule relies on it: an LSM reader holds its super version, whose
//! files compaction never changes, and takes it *before* it loads the
//! visible seqno (so its files hold every version at or below that number);
//! a B-tree changes its pages in place, so each of its readers that may
//! outlive a commit registers a snapshot first.
//!
//! Tombstones: a tombstone hides the older versions of its key from readers
//! at or above it. When nothing older of its key is kept and none lies
//! deeper, it hides nothing from anyone and may go too: the LSM decides as
//! it meets the tombstone, before the older versions, so it drops one at
//! its bottom only at or below `oldest()`, where every older version goes
//! as well (`tombstone_droppable`); a B-tree leaf sees the whole run of a
//! key's versions and drops a tombstone left as the oldest kept, by the
//! same rule (`btree::reshape::versions_kept`). Below every reader, not
//! merely once visible: while an older snapshot lives, the tombstone is the
//! record that its key was written after it, which a transaction's commit
//! check needs.

/// Who may still read old versions: the visible seqno and the live
/// snapshots (sorted, ascending), taken together at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Horizon {
    /// The seqno reads that start now are at.
    pub visible: u64,
    /// The registered snapshots' seqnos, ascending (duplicates allowed).
    pub snapshots: Vec<u64>,
}

impl Horizon {
    /// The horizon where no reader exists and none can be older than
    /// `visible` (recovery, before the database is handed out).
    pub(crate) fn no_readers(visible: u64) -> Horizon {
        Horizon {
            visible,
            snapshots: Vec::new(),
        }
    }

    /// The oldest seqno any reader may read at: every version at or below
    /// it that has a newer version at or below it too is needed by no one.
    pub(crate) fn oldest(&self) -> u64 {
        self.snapshots
            .first()
            .copied()
            .unwrap_or(self.visible)
            .min(self.visible)
    }

    /// Whether a version at `seqno`, whose next newer version of the same
    /// key is at `newer` (`u64::MAX` if none), can still be read.
    pub(crate) fn needed(&self, seqno: u64, newer: u64) -> bool {
        if seqno > self.visible {
            // Written by the commit group being applied: readers will see
            // only its newest version of a key, once it is published.
            return newer == u64::MAX;
        }
        let i = self.snapshots.partition_point(|&s| s < seqno);
        let boundary = self.snapshots.get(i).copied().unwrap_or(self.visible);
        boundary.min(self.visible) < newer
    }

    /// Whether a tombstone at `seqno`, with no version of its key in a
    /// deeper place, may go: every reader is at or above it, and every
    /// older version beside it is dropped by `needed` as well.
    pub(crate) fn tombstone_droppable(&self, seqno: u64) -> bool {
        seqno <= self.oldest()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_what_some_reader_can_see() {
        let h = Horizon {
            visible: 100,
            snapshots: vec![20, 50],
        };
        // Versions of one key at 90, 60, 40, 30, 10 (newest first).
        assert!(h.needed(110, u64::MAX)); // not yet visible
        assert!(!h.needed(105, 110)); // replaced within the group applied
        assert!(h.needed(90, 110)); // newest at visible
        assert!(!h.needed(60, 90)); // no reader between 60 and 90
        assert!(h.needed(40, 60)); // snapshot 50
        assert!(!h.needed(30, 40));
        assert!(h.needed(10, 30)); // snapshot 20
        assert!(!h.needed(5, 10)); // replaced below every reader
    }

    #[test]
    fn oldest_and_tombstones() {
        let h = Horizon {
            visible: 100,
            snapshots: vec![20, 50],
        };
        assert_eq!(h.oldest(), 20);
        assert!(h.tombstone_droppable(20));
        assert!(!h.tombstone_droppable(21));
        let none = Horizon::no_readers(100);
        assert_eq!(none.oldest(), 100);
        assert!(none.tombstone_droppable(100));
        assert!(!none.tombstone_droppable(101));
        // A snapshot above visible (not possible, but the rule holds).
        let odd = Horizon {
            visible: 10,
            snapshots: vec![30],
        };
        assert_eq!(odd.oldest(), 10);
    }
}
