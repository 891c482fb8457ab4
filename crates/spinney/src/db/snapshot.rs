//! `Snapshot`: a registered read point. While it lives, no version it can
//! see is dropped: LSM compaction and B-tree pruning both weigh the live
//! snapshots (`mvcc::Horizon`).
//!
//! Thread-safety: `Send + Sync`; the registry is the database's
//! `snapshots` map, under its own lock.

use std::ops::{Bound, RangeBounds};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::cursor::Range;
use super::table::{owned_bound, prefix_bounds, Table};
use super::DbInner;
use crate::error::Result;

/// A frozen view of the whole database: reads through it see the state at
/// the moment it was taken, whatever is written after.
///
/// ```
/// # fn main() -> spinney::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
/// let t = db.create_table("t", spinney::TableOptions::lsm())?;
/// t.put(b"k", b"1")?;
/// let snapshot: spinney::Snapshot = db.snapshot();
/// t.put(b"k", b"2")?;
/// assert_eq!(snapshot.get(&t, b"k")?, Some(b"1".to_vec())); // until it is dropped
/// # Ok(()) }
/// ```
pub struct Snapshot {
    pub(super) db: Arc<DbInner>,
    pub(super) seqno: u64,
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("seqno", &self.seqno)
            .finish()
    }
}

impl Snapshot {
    /// Registers a snapshot at the visible seqno (under the snapshots'
    /// lock, so that a horizon taken meanwhile sees it or an older
    /// visible seqno).
    pub(super) fn new(db: &Arc<DbInner>) -> Snapshot {
        let mut snaps = db.snapshots.lock();
        let seqno = db.visible_seqno.load(Ordering::Acquire);
        *snaps.entry(seqno).or_insert(0) += 1;
        Snapshot {
            db: Arc::clone(db),
            seqno,
        }
    }

    /// What keeps a read at `seqno` that goes on past one B-tree leaf
    /// readable, and the seqno to read on at: a read at a snapshot
    /// (`given`, at `seqno`) holds it; a read at the visible seqno holds a
    /// snapshot registered now, and reads at its seqno.
    pub(super) fn to_read_on(
        db: &Arc<DbInner>,
        given: Option<(&Snapshot, u64)>,
        seqno: u64,
    ) -> (Snapshot, u64) {
        match given {
            Some((s, _)) => (s.clone(), seqno),
            None => {
                let pin = Snapshot::new(db);
                let seqno = pin.seqno;
                (pin, seqno)
            }
        }
    }

    /// The value of `key` in `table` as of the snapshot.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// t.put(b"k", b"old")?;
    /// let snap = db.snapshot();
    /// t.put(b"k", b"new")?;
    /// assert_eq!(snap.get(&t, b"k")?, Some(b"old".to_vec()));
    /// # Ok(()) }
    /// ```
    pub fn get(&self, table: &Table, key: &[u8]) -> Result<Option<Vec<u8>>> {
        table.get_at(key, Some(self))
    }

    /// The value of `key` in `table` as of the snapshot, read into `value`
    /// (cleared first) as `Table::get_into` does; true if present.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// t.put(b"k", b"old")?;
    /// let snap = db.snapshot();
    /// t.delete(b"k")?;
    /// let mut buf = Vec::new();
    /// assert!(snap.get_into(&t, b"k", &mut buf)?);
    /// assert_eq!(buf, b"old");
    /// # Ok(()) }
    /// ```
    pub fn get_into(&self, table: &Table, key: &[u8], value: &mut Vec<u8>) -> Result<bool> {
        table.get_into_at(key, value, Some(self))
    }

    /// The entries of `table` in `range` as of the snapshot.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// for k in [b"a", b"b", b"c"] {
    ///     t.put(k, k)?;
    /// }
    /// let snap = db.snapshot();
    /// t.delete(b"b")?;
    /// let keys: Vec<_> = snap.range(&t, &b"a"[..]..&b"c"[..])?.map(|e| e.map(|(k, _)| k)).collect::<spinney::Result<_>>()?;
    /// assert_eq!(keys, [b"a", b"b"]);
    /// # Ok(()) }
    /// ```
    pub fn range<K: AsRef<[u8]>, R: RangeBounds<K>>(
        &self,
        table: &Table,
        range: R,
    ) -> Result<Range> {
        let lower = owned_bound(range.start_bound());
        let upper = owned_bound(range.end_bound());
        Range::new(table, Some(self), lower, upper)
    }

    /// Every entry of `table` as of the snapshot, in key order (reverse
    /// with `.rev()`): `range(table, ..)`, as `Table::iter` is.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// for k in [b"a", b"b", b"c"] {
    ///     t.put(k, k)?;
    /// }
    /// let snap = db.snapshot();
    /// t.put(b"d", b"d")?;
    /// assert_eq!(snap.iter(&t)?.count(), 3);
    /// # Ok(()) }
    /// ```
    pub fn iter(&self, table: &Table) -> Result<Range> {
        Range::new(table, Some(self), Bound::Unbounded, Bound::Unbounded)
    }

    /// The entries of `table` whose keys begin with `prefix`, as of the
    /// snapshot (as `Table::prefix`).
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// t.put(b"user/1", b"")?;
    /// t.put(b"user/2", b"")?;
    /// let snap = db.snapshot();
    /// t.put(b"user/3", b"")?;
    /// assert_eq!(snap.prefix(&t, b"user/")?.count(), 2);
    /// # Ok(()) }
    /// ```
    pub fn prefix(&self, table: &Table, prefix: &[u8]) -> Result<Range> {
        let (lower, upper) = prefix_bounds(prefix);
        Range::new(table, Some(self), lower, upper)
    }

    /// The sequence number the snapshot reads at.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// let before = db.snapshot();
    /// t.put(b"k", b"v")?;
    /// assert!(db.snapshot().seqno() > before.seqno());
    /// # Ok(()) }
    /// ```
    pub fn seqno(&self) -> u64 {
        self.seqno
    }
}

impl Clone for Snapshot {
    fn clone(&self) -> Self {
        *self.db.snapshots.lock().entry(self.seqno).or_insert(0) += 1;
        Snapshot {
            db: Arc::clone(&self.db),
            seqno: self.seqno,
        }
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        let mut snaps = self.db.snapshots.lock();
        if let Some(n) = snaps.get_mut(&self.seqno) {
            *n -= 1;
            if *n == 0 {
                snaps.remove(&self.seqno);
            }
        }
    }
}
