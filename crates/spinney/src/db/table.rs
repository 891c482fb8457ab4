//! `Table`: the handle users hold on one table, and what it does: reads,
//! single-key writes, cursors and ranges, flushes, compactions and its
//! shape. Each call checks that the database is open and the table not
//! dropped, then goes to the table's kind.
//!
//! Thread-safety: a `Table` is `Send + Sync` and cheap to clone; it holds
//! the database's shared state and the table's core by `Arc`.

use std::ops::{Bound, RangeBounds};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::batch::WriteBatch;
use super::cursor::{Cursor, Range};
use super::snapshot::Snapshot;
use super::{work, write, Core, DbInner, Shape};
use crate::error::{Error, Result};
use crate::lsm::compaction;
use crate::options::{TableOptions, WriteOptions};

/// A handle on one table. Cheap to clone; valid until the table is dropped
/// or the database closed.
///
/// ```
/// # fn main() -> spinney::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
/// let users: spinney::Table = db.create_table("users", spinney::TableOptions::btree())?;
/// let same = db.table("users")?; // handles are cheap to clone and share
/// users.put(b"u1", b"ada")?;
/// assert_eq!(same.get(b"u1")?, Some(b"ada".to_vec()));
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Table {
    pub(crate) db: Arc<DbInner>,
    pub(crate) core: Core,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("name", &self.core.name())
            .field("kind", &self.core.options().kind)
            .finish()
    }
}

impl Table {
    pub(crate) fn db_id(&self) -> u64 {
        self.db.id
    }

    pub(super) fn check(&self) -> Result<()> {
        self.db.check_open()?;
        if self.core.is_dropped() {
            return Err(Error::NoSuchTable(self.core.name().to_string()));
        }
        Ok(())
    }

    /// The table's name.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// assert_eq!(t.name(), "t");
    /// # Ok(()) }
    /// ```
    pub fn name(&self) -> &str {
        self.core.name()
    }

    /// The table's options.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::btree())?;
    /// assert_eq!(t.options().kind, spinney::TableKind::Btree);
    /// # Ok(()) }
    /// ```
    pub fn options(&self) -> &TableOptions {
        self.core.options()
    }

    /// Refuses a key longer than this table takes (a B-tree table's limit
    /// is smaller than the engine's): for writes and reads alike.
    pub(crate) fn check_key(&self, key: &[u8]) -> Result<()> {
        let max_key = self.options().max_key_len();
        if key.len() > max_key {
            return Err(Error::invalid(format!(
                "key of {} bytes is longer than the limit of {max_key} bytes for table {:?}",
                key.len(),
                self.name()
            )));
        }
        Ok(())
    }

    pub(super) fn get_at(
        &self,
        key: &[u8],
        snapshot: Option<&Snapshot>,
    ) -> Result<Option<Vec<u8>>> {
        let mut value = Vec::new();
        Ok(self
            .get_into_at(key, &mut value, snapshot)?
            .then_some(value))
    }

    /// The value of `key` into `value` (cleared first); true if found.
    pub(super) fn get_into_at(
        &self,
        key: &[u8],
        value: &mut Vec<u8>,
        snapshot: Option<&Snapshot>,
    ) -> Result<bool> {
        value.clear();
        self.check()?;
        // The table's own limit, as a put answers.
        self.check_key(key)?;
        let snapshot = match snapshot {
            Some(s) => Some((s, self.read_seqno(Some(s))?)),
            None => None,
        };
        let found = self.core.get_into(&self.db, key, snapshot, value);
        if !matches!(found, Ok(true)) {
            // Nothing half-read is left for the caller.
            value.clear();
        }
        found
    }

    /// Sets `key` to `value`.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// t.put(b"k", b"v")?;
    /// assert_eq!(t.get(b"k")?, Some(b"v".to_vec()));
    /// t.delete(b"k")?;
    /// assert_eq!(t.get(b"k")?, None);
    /// # Ok(()) }
    /// ```
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.put(self, key, value);
        write::write(&self.db, b, WriteOptions::default())
    }

    /// Deletes `key` (not an error if it is absent).
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// t.put(b"k", b"v")?;
    /// t.delete(b"k")?;
    /// t.delete(b"never there")?; // not an error
    /// assert_eq!(t.get(b"k")?, None);
    /// # Ok(()) }
    /// ```
    pub fn delete(&self, key: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete(self, key);
        write::write(&self.db, b, WriteOptions::default())
    }

    /// Deletes every key in `range`: see `WriteBatch::delete_range` for
    /// what it costs on each kind.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let log = db.create_table("log", spinney::TableOptions::lsm())?;
    /// for day in ["2026-11-24", "2026-11-25", "2026-11-26"] {
    ///     log.put(format!("{day}/event").as_bytes(), b"")?;
    /// }
    /// log.delete_range(&b"2026-11-24"[..]..&b"2026-11-26"[..])?;
    /// let left: Vec<_> = log.iter()?.map(|e| e.map(|(k, _)| k)).collect::<spinney::Result<_>>()?;
    /// assert_eq!(left, [b"2026-11-26/event"]);
    /// # Ok(()) }
    /// ```
    pub fn delete_range<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete_range(self, range);
        write::write(&self.db, b, WriteOptions::default())
    }

    /// The value of `key`, if present.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::btree())?;
    /// t.put(b"k", b"v")?;
    /// assert_eq!(t.get(b"k")?, Some(b"v".to_vec()));
    /// assert_eq!(t.get(b"other")?, None);
    /// # Ok(()) }
    /// ```
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get_at(key, None)
    }

    /// Reads the value of `key` into `value`, which is cleared first (and
    /// left empty when the key is absent); true if the key is present. A
    /// buffer reused over many reads allocates only while it grows, where
    /// `get` allocates a vector per value found.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::btree())?;
    /// t.put(b"a", b"apple")?;
    /// let mut value = Vec::with_capacity(64);
    /// for key in [&b"a"[..], b"b"] {
    ///     if t.get_into(key, &mut value)? {
    ///         assert_eq!(value, b"apple");
    ///     } else {
    ///         assert!(value.is_empty());
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub fn get_into(&self, key: &[u8], value: &mut Vec<u8>) -> Result<bool> {
        self.get_into_at(key, value, None)
    }

    /// The values of `keys`, in their order, all read at one moment (a
    /// write committed meanwhile is seen by all of them or by none).
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::btree())?;
    /// t.put(b"a", b"1")?;
    /// t.put(b"c", b"3")?;
    /// let got = t.multi_get(&[&b"a"[..], b"b", b"c"])?;
    /// assert_eq!(got, [Some(b"1".to_vec()), None, Some(b"3".to_vec())]);
    /// # Ok(()) }
    /// ```
    pub fn multi_get<K: AsRef<[u8]>>(&self, keys: &[K]) -> Result<Vec<Option<Vec<u8>>>> {
        self.check()?;
        let snapshot = Snapshot::new(&self.db);
        keys.iter()
            .map(|k| self.get_at(k.as_ref(), Some(&snapshot)))
            .collect()
    }

    /// A cursor over the whole table at the current state.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::btree())?;
    /// for k in [b"a", b"c", b"e"] {
    ///     t.put(k, b"")?;
    /// }
    /// let mut cursor = t.cursor()?;
    /// cursor.seek(b"b"); // the first key at or after "b"
    /// assert_eq!(cursor.key(), b"c");
    /// cursor.next();
    /// assert_eq!(cursor.key(), b"e");
    /// cursor.seek_for_prev(b"d"); // the last key at or before "d"
    /// assert_eq!(cursor.key(), b"c");
    /// cursor.next();
    /// cursor.next();
    /// assert!(!cursor.valid());
    /// cursor.status()?; // the end, not an error
    /// # Ok(()) }
    /// ```
    pub fn cursor(&self) -> Result<Cursor> {
        self.cursor_with(&ReadOptions::default())
    }

    /// A cursor with bounds and, optionally, a snapshot.
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
    /// t.put(b"bb", b"")?;
    /// let options = spinney::ReadOptions {
    ///     snapshot: Some(&snap),
    ///     lower: std::ops::Bound::Included(b"b".to_vec()),
    ///     ..spinney::ReadOptions::default()
    /// };
    /// let mut c = t.cursor_with(&options)?;
    /// c.seek_to_first();
    /// assert_eq!(c.key(), b"b");
    /// c.next();
    /// assert_eq!(c.key(), b"c"); // "bb" came after the snapshot
    /// # Ok(()) }
    /// ```
    pub fn cursor_with(&self, options: &ReadOptions<'_>) -> Result<Cursor> {
        self.check()?;
        let (pin, seqno) = self.pin(options.snapshot)?;
        let inner = self.cursor_at(&pin, seqno, options.lower.clone(), options.upper.clone())?;
        Ok(Cursor { inner, pin })
    }

    pub(super) fn read_seqno(&self, snapshot: Option<&Snapshot>) -> Result<u64> {
        match snapshot {
            Some(s) if s.db.id != self.db.id => {
                Err(Error::invalid("snapshot belongs to another database"))
            }
            Some(s) => Ok(s.seqno),
            None => Ok(self.db.visible_seqno.load(Ordering::Acquire)),
        }
    }

    /// The entries whose keys fall in `range`, in key order (reverse with `.rev()`).
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// for k in [b"a", b"b", b"c", b"d"] {
    ///     t.put(k, b"")?;
    /// }
    /// fn keys(r: impl Iterator<Item = spinney::Result<(Vec<u8>, Vec<u8>)>>) -> spinney::Result<Vec<Vec<u8>>> {
    ///     r.map(|e| e.map(|(k, _)| k)).collect()
    /// }
    /// assert_eq!(keys(t.range(&b"b"[..]..&b"d"[..])?)?, [b"b", b"c"]);
    /// assert_eq!(keys(t.range(&b"b"[..]..)?.rev())?, [b"d", b"c", b"b"]);
    /// # Ok(()) }
    /// ```
    pub fn range<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> Result<Range> {
        let lower = owned_bound(range.start_bound());
        let upper = owned_bound(range.end_bound());
        Range::new(self, None, lower, upper)
    }

    /// Every entry, in key order.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// for k in [b"a", b"b", b"c"] {
    ///     t.put(k, k)?;
    /// }
    /// let keys: Vec<_> = t.iter()?.map(|e| e.map(|(k, _)| k)).collect::<spinney::Result<_>>()?;
    /// assert_eq!(keys, [b"a", b"b", b"c"]);
    /// # Ok(()) }
    /// ```
    pub fn iter(&self) -> Result<Range> {
        Range::new(self, None, Bound::Unbounded, Bound::Unbounded)
    }

    /// The entries whose keys begin with `prefix`, in key order (reverse
    /// with `.rev()`). A prefix of 0xFF bytes has no key above its range:
    /// the range then runs to the end of the table.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::btree())?;
    /// for k in ["user/1", "user/2", "userx", "video/1"] {
    ///     t.put(k.as_bytes(), b"")?;
    /// }
    /// let users: Vec<_> = t.prefix(b"user/")?.map(|e| e.map(|(k, _)| k)).collect::<spinney::Result<_>>()?;
    /// assert_eq!(users, [b"user/1", b"user/2"]);
    /// # Ok(()) }
    /// ```
    pub fn prefix(&self, prefix: &[u8]) -> Result<Range> {
        let (lower, upper) = prefix_bounds(prefix);
        Range::new(self, None, lower, upper)
    }

    /// Flushes this table's memtables to SSTs (LSM), or checkpoints it
    /// (B-tree), and waits for it.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// t.put(b"k", b"v")?;
    /// t.flush()?;
    /// assert_eq!(t.shape()?.l0_runs, 1);
    /// # Ok(()) }
    /// ```
    pub fn flush(&self) -> Result<()> {
        self.check()?;
        self.db.check_writable()?;
        self.core.flush(&self.db)
    }

    /// Checkpoints this table (B-tree tables; the same as `flush`).
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::btree())?;
    /// t.put(b"k", b"v")?;
    /// t.checkpoint()?; // its image on disk holds "k" now
    /// assert_eq!(t.get(b"k")?, Some(b"v".to_vec()));
    /// # Ok(()) }
    /// ```
    pub fn checkpoint(&self) -> Result<()> {
        self.flush()
    }

    /// Flushes, then merges every file into one sorted run in the last
    /// level, dropping deleted and overwritten entries that no snapshot can
    /// see. A B-tree table is checkpointed, its leaves pruned the same way
    /// and packed, and the pages at the end of its file moved to free pages
    /// before them, so that the file is cut to about the pages in use
    /// (several checkpoints; writers wait for each step, readers do not).
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// for run in 0..3u8 {
    ///     t.put(&[run], b"v")?;
    ///     t.flush()?;
    /// }
    /// assert_eq!(t.shape()?.l0_runs, 3);
    /// t.compact_all()?;
    /// let shape = t.shape()?;
    /// assert_eq!(shape.l0_runs, 0);
    /// assert_eq!(shape.levels.iter().filter(|l| l.files > 0).count(), 1);
    /// # Ok(()) }
    /// ```
    pub fn compact_all(&self) -> Result<()> {
        self.flush()?;
        self.core.compact(&self.db, work::Manual::All)
    }

    /// Compacts every file of `level` into the level below it, and waits
    /// for it. For L0 of a leveled table that is the level L0 compacts into
    /// (L1, or with dynamic level sizing the highest level in use); for
    /// tiered tables and deeper levels, `level + 1`. Does nothing when the
    /// level is empty. The memtables are not flushed (see `flush`).
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// t.put(b"k", b"v")?;
    /// t.flush()?;
    /// t.compact_level(0)?;
    /// assert_eq!(t.shape()?.l0_runs, 0);
    /// # Ok(()) }
    /// ```
    pub fn compact_level(&self, level: usize) -> Result<()> {
        self.check()?;
        self.db.check_writable()?;
        if level >= compaction::LAST_LEVEL {
            return Err(Error::invalid(format!(
                "level {level} has no level below it (levels are 0..={})",
                compaction::LAST_LEVEL
            )));
        }
        self.core.compact(&self.db, work::Manual::Level(level))
    }

    /// The table's shape now. LSM: memtables, L0 runs, and each deeper
    /// level. B-tree: `Shape::btree` (height, pages, fill; it reads every
    /// page of the tree).
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// t.put(b"k", b"v")?;
    /// let shape = t.shape()?;
    /// assert_eq!(shape.memtable_entries, 1);
    /// assert!(shape.btree.is_none());
    /// # Ok(()) }
    /// ```
    pub fn shape(&self) -> Result<Shape> {
        self.check()?;
        self.core.shape()
    }
}

/// The bounds of the keys that begin with `prefix`: from the prefix
/// itself, up to the first key above all of them (the prefix without its
/// trailing 0xFF bytes, its last byte then one more), or the end when the
/// prefix is all 0xFF bytes (or empty).
pub(super) fn prefix_bounds(prefix: &[u8]) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    let mut upper = prefix.to_vec();
    while upper.last() == Some(&0xFF) {
        upper.pop();
    }
    let upper = match upper.last_mut() {
        Some(last) => {
            *last += 1;
            Bound::Excluded(upper)
        }
        None => Bound::Unbounded,
    };
    (Bound::Included(prefix.to_vec()), upper)
}

pub(super) fn owned_bound<K: AsRef<[u8]>>(b: Bound<&K>) -> Bound<Vec<u8>> {
    match b {
        Bound::Included(k) => Bound::Included(k.as_ref().to_vec()),
        Bound::Excluded(k) => Bound::Excluded(k.as_ref().to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// Options of a read.
///
/// ```
/// # fn main() -> spinney::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
/// let t = db.create_table("t", spinney::TableOptions::lsm())?;
/// for k in [b"a", b"b", b"c"] {
///     t.put(k, k)?;
/// }
/// let options = spinney::ReadOptions {
///     upper: std::ops::Bound::Excluded(b"c".to_vec()),
///     ..spinney::ReadOptions::default()
/// };
/// let mut c = t.cursor_with(&options)?;
/// c.seek_to_last();
/// assert_eq!(c.key(), b"b");
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct ReadOptions<'a> {
    /// Read as of this snapshot instead of the current state.
    pub snapshot: Option<&'a Snapshot>,
    /// Smallest key a cursor shows.
    pub lower: Bound<Vec<u8>>,
    /// Largest key a cursor shows.
    pub upper: Bound<Vec<u8>>,
}

impl Default for ReadOptions<'_> {
    fn default() -> Self {
        ReadOptions {
            snapshot: None,
            lower: Bound::Unbounded,
            upper: Bound::Unbounded,
        }
    }
}
