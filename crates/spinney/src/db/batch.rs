//! `WriteBatch`: puts and deletes over any tables, committed atomically.

use std::ops::{Bound, RangeBounds};

use super::{Core, Table};
use crate::error::{Error, Result};
use crate::limits;
use crate::mvcc::key::Kind;
use crate::wal::batch::BatchRep;

/// A set of writes to one or more tables, applied all together or not at
/// all, also across a crash.
///
/// ```
/// # fn main() -> spinney::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
/// let users = db.create_table("users", spinney::TableOptions::default())?;
/// let by_email = db.create_table("users_by_email", spinney::TableOptions::default())?;
/// let mut batch = spinney::WriteBatch::new();
/// batch.put(&users, b"u1", b"ada");
/// batch.put(&by_email, b"ada@example.com", b"u1");
/// db.write(batch)?;
/// # Ok(()) }
/// ```
#[derive(Default)]
pub struct WriteBatch {
    pub(crate) rep: BatchRep,
    /// The tables written, each once (inline for the usual one or two).
    pub(crate) tables: smallvec::SmallVec<[Core; 2]>,
    pub(crate) db_id: Option<u64>,
    pub(crate) invalid: Option<Error>,
}

impl std::fmt::Debug for WriteBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteBatch")
            .field("entries", &self.rep.count())
            .field("bytes", &self.rep.byte_len())
            .field(
                "tables",
                &self.tables.iter().map(Core::name).collect::<Vec<_>>(),
            )
            .field("invalid", &self.invalid)
            .finish()
    }
}

impl WriteBatch {
    /// An empty batch.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let batch = spinney::WriteBatch::new();
    /// assert!(batch.is_empty());
    /// # Ok(()) }
    /// ```
    pub fn new() -> WriteBatch {
        WriteBatch::default()
    }

    /// Sets `key` to `value` in `table`.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// let mut batch = spinney::WriteBatch::new();
    /// batch.put(&t, b"k", b"v");
    /// db.write(batch)?;
    /// assert_eq!(t.get(b"k")?, Some(b"v".to_vec()));
    /// # Ok(()) }
    /// ```
    pub fn put(&mut self, table: &Table, key: &[u8], value: &[u8]) {
        self.add(table, Kind::Put, key, value);
    }

    /// Deletes `key` from `table`.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// t.put(b"k", b"v")?;
    /// let mut batch = spinney::WriteBatch::new();
    /// batch.delete(&t, b"k");
    /// db.write(batch)?;
    /// assert_eq!(t.get(b"k")?, None);
    /// # Ok(()) }
    /// ```
    pub fn delete(&mut self, table: &Table, key: &[u8]) {
        self.add(table, Kind::Delete, key, &[]);
    }

    /// Deletes every key of `table` in `range` (`a..b`, `a..=b`, `a..`,
    /// `..b`, `..`), as one entry of the batch. A range whose start is
    /// after its end is an error (at `Db::write`); an empty range deletes
    /// nothing.
    ///
    /// An LSM table records one range tombstone, whatever the number of
    /// keys: reads and cursors honour it at once (a cursor seeks past a
    /// deleted range in each run older than the tombstone, rather than
    /// stepping through it), and compaction drops the versions it hides and
    /// then the tombstone. A B-tree table writes a tombstone for each key
    /// in the range as the batch is applied (the work grows with the keys
    /// deleted, as in WiredTiger's truncate of a range), and gives their
    /// space back as leaves are pruned and merged.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let orders = db.create_table("orders", spinney::TableOptions::btree())?;
    /// let events = db.create_table("events", spinney::TableOptions::lsm())?;
    /// for i in 0..100u32 {
    ///     orders.put(format!("c7/{i:03}").as_bytes(), b"order")?;
    ///     events.put(format!("c7/{i:03}").as_bytes(), b"event")?;
    /// }
    /// // Forget customer 7 in both tables, atomically.
    /// let mut batch = spinney::WriteBatch::new();
    /// batch.delete_range(&orders, &b"c7/"[..]..&b"c70"[..]);
    /// batch.delete_range(&events, &b"c7/"[..]..&b"c70"[..]);
    /// db.write(batch)?;
    /// assert_eq!(orders.prefix(b"c7/")?.count(), 0);
    /// assert_eq!(events.prefix(b"c7/")?.count(), 0);
    /// # Ok(()) }
    /// ```
    pub fn delete_range<K: AsRef<[u8]>, R: RangeBounds<K>>(&mut self, table: &Table, range: R) {
        if self.invalid.is_some() {
            return;
        }
        match range_bounds(&range) {
            Ok(Some((start, end))) => self.add(table, Kind::RangeDelete, &start, &end),
            Ok(None) => {}
            Err(why) => {
                self.invalid = Some(Error::InvalidArgument(format!(
                    "operation {} of the batch (a range delete in table {:?}): {why}",
                    self.rep.count() + 1,
                    table.name()
                )))
            }
        }
    }

    /// Adds a range delete of `[start, end)` made by `range_bounds`.
    pub(crate) fn push_range_delete(&mut self, table: &Table, start: &[u8], end: &[u8]) {
        self.add(table, Kind::RangeDelete, start, end);
    }

    /// Number of puts, deletes and range deletes.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// let mut batch = spinney::WriteBatch::new();
    /// batch.put(&t, b"a", b"1");
    /// batch.delete(&t, b"b");
    /// batch.delete_range(&t, &b"c"[..]..&b"d"[..]);
    /// assert_eq!(batch.len(), 3);
    /// # Ok(()) }
    /// ```
    pub fn len(&self) -> usize {
        self.rep.count() as usize
    }

    /// True when the batch holds no writes.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// let mut batch = spinney::WriteBatch::new();
    /// assert!(batch.is_empty());
    /// batch.put(&t, b"a", b"1");
    /// assert!(!batch.is_empty());
    /// # Ok(()) }
    /// ```
    pub fn is_empty(&self) -> bool {
        self.rep.count() == 0
    }

    /// Bytes of the batch as the log stores it.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// let mut batch = spinney::WriteBatch::new();
    /// let empty = batch.encoded_len();
    /// batch.put(&t, b"key", b"value");
    /// assert!(batch.encoded_len() >= empty + 8);
    /// # Ok(()) }
    /// ```
    pub fn encoded_len(&self) -> usize {
        self.rep.byte_len()
    }

    /// Empties the batch for reuse.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// let mut batch = spinney::WriteBatch::new();
    /// batch.put(&t, b"draft", b"v");
    /// batch.clear(); // changed our mind
    /// batch.put(&t, b"final", b"v");
    /// db.write(batch)?;
    /// assert_eq!(t.get(b"draft")?, None);
    /// # Ok(()) }
    /// ```
    pub fn clear(&mut self) {
        self.rep.clear();
        self.tables.clear();
        self.db_id = None;
        self.invalid = None;
    }

    fn add(&mut self, table: &Table, kind: Kind, key: &[u8], value: &[u8]) {
        if self.invalid.is_some() {
            return;
        }
        if let Err(e) = self.check(table, kind, key, value) {
            // Say which operation: the error reaches the caller only at
            // `Db::write`, after every operation was added.
            let op = match kind {
                Kind::Delete => "delete",
                Kind::RangeDelete => "range delete",
                Kind::Put => "put",
            };
            self.invalid = Some(match e {
                Error::InvalidArgument(why) => Error::InvalidArgument(format!(
                    "operation {} of the batch (a {op} in table {:?}): {why}",
                    self.rep.count() + 1,
                    table.name()
                )),
                other => other,
            });
            return;
        }
        if !self.tables.iter().any(|t| t.id() == table.core.id()) {
            self.tables.push(table.core.clone());
        }
        self.rep.push(kind, table.core.id(), key, value);
    }

    fn check(&mut self, table: &Table, kind: Kind, key: &[u8], value: &[u8]) -> Result<()> {
        if kind != Kind::RangeDelete {
            // (A range's bounds were checked against the largest key.)
            table.check_key(key)?;
        }
        if value.len() > limits::VALUE_BYTES_MAX {
            return Err(Error::invalid(format!(
                "value of {} bytes is larger than the limit of {} bytes",
                value.len(),
                limits::VALUE_BYTES_MAX
            )));
        }
        if self.rep.byte_len() + key.len() + value.len() + 32 > limits::BATCH_BYTES_MAX {
            return Err(Error::invalid(format!(
                "batch grows past the limit of {} bytes",
                limits::BATCH_BYTES_MAX
            )));
        }
        match self.db_id {
            Some(id) if id != table.db_id() => {
                return Err(Error::invalid(
                    "a batch cannot span tables of two different databases",
                ))
            }
            _ => self.db_id = Some(table.db_id()),
        }
        Ok(())
    }
}

/// A range of user keys as `[start, end)`, an empty end for none above.
pub(crate) type KeyRange = (Vec<u8>, Vec<u8>);

/// The `[start, end)` of a range of user keys; None for a range that holds
/// no key.
pub(crate) fn range_bounds<K: AsRef<[u8]>, R: RangeBounds<K>>(
    range: &R,
) -> std::result::Result<Option<KeyRange>, String> {
    let long = |k: &[u8]| {
        (k.len() > limits::KEY_BYTES_MAX).then(|| {
            format!(
                "a bound of {} bytes is longer than the largest key ({} bytes)",
                k.len(),
                limits::KEY_BYTES_MAX
            )
        })
    };
    // The key right after `k`: `k` and a zero byte.
    let after = |k: &[u8]| {
        let mut v = k.to_vec();
        v.push(0);
        v
    };
    let (start, start_key) = match range.start_bound() {
        Bound::Included(k) => (k.as_ref().to_vec(), Some(k.as_ref())),
        Bound::Excluded(k) => (after(k.as_ref()), Some(k.as_ref())),
        Bound::Unbounded => (Vec::new(), None),
    };
    let (end, end_key) = match range.end_bound() {
        Bound::Included(k) => (after(k.as_ref()), Some(k.as_ref())),
        Bound::Excluded(k) => (k.as_ref().to_vec(), Some(k.as_ref())),
        Bound::Unbounded => (Vec::new(), None),
    };
    for k in [start_key, end_key].into_iter().flatten() {
        if let Some(why) = long(k) {
            return Err(why);
        }
    }
    if let (Some(s), Some(e)) = (start_key, end_key) {
        if s > e {
            return Err(format!(
                "the range starts after it ends (\"{}\" > \"{}\")",
                s.escape_ascii(),
                e.escape_ascii()
            ));
        }
    }
    let empty = end_key.is_some() && start >= end;
    Ok((!empty).then_some((start, end)))
}
