//! `Transaction`: reads at one snapshot, sees its own writes, and commits
//! them as one batch, refused when a commit made since its snapshot wrote
//! a key it wrote or read for update (snapshot isolation, the first
//! committer wins).
//!
//! Nothing is locked while a transaction runs: its writes wait in memory
//! (per table, in key order) and its snapshot keeps every version it can
//! read. At commit they become one `WriteBatch`, with a `write::Check` the
//! commit leader makes under the commit lock, before the batch is logged:
//! for each key written or read for update, the newest version the table
//! holds (`Core::newest_seqno`) must be at or below the snapshot's seqno,
//! and no batch ahead in the same group may write it. The tables hold
//! every earlier group whole at that moment (groups are applied before the
//! lock is let go), so the check and the write are one step in the order
//! of commits. The snapshot stays registered until the commit returns, so
//! no version (a tombstone included) the check needs is dropped by
//! compaction or pruning meanwhile.
//!
//! Thread-safety: a transaction is `Send`; it belongs to one thread at a
//! time (its calls take `&mut self` to write). Any number run at once.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use super::batch::{KeyRange, WriteBatch};
use super::cursor::Range;
use super::snapshot::Snapshot;
use super::table::{owned_bound, prefix_bounds, Table};
use super::write::{self, Check};
use super::DbInner;
use crate::error::{Error, Result};
use crate::limits;
use crate::mvcc::range_del;
use crate::options::WriteOptions;

/// Bytes a write is counted as in the batch it becomes, beside its key and
/// value (as `WriteBatch` counts it against `limits::BATCH_BYTES_MAX`).
const ENTRY_OVERHEAD: usize = 32;

/// A unit of reads and writes over any tables of both kinds, committed
/// whole or not at all.
///
/// Reads see the database as it was when the transaction began, with the
/// transaction's own writes over it. Writes are held in memory until
/// [`commit`](Transaction::commit), which writes them as one batch (one
/// log record, atomic across tables, durable as the commit's
/// `WriteOptions` say), or refuses them all with [`Error::Conflict`] when
/// another commit since the transaction began wrote a key it wrote, or a
/// key it read with [`get_for_update`](Transaction::get_for_update).
/// Dropping a transaction without committing it discards its writes.
///
/// This is snapshot isolation: no dirty or non-repeatable reads, no lost
/// updates on keys written or read for update. It is not serializable:
/// two transactions that each read what the other writes, with plain
/// `get`s or ranges, can both commit (write skew), and a range read is not
/// checked for keys added into it (phantoms). Reading a key with
/// `get_for_update` instead of `get` makes a concurrent write of it a
/// conflict, which closes write skew over that key.
///
/// ```
/// # fn main() -> spinney::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// use spinney::{Db, Options, TableOptions};
///
/// let db = Db::open(dir.path(), Options::default())?;
/// let accounts = db.create_table("accounts", TableOptions::btree())?;
/// let log = db.create_table("log", TableOptions::lsm())?;
/// accounts.put(b"alice", b"100")?;
///
/// let mut tx = db.begin();
/// let balance: u64 = match tx.get_for_update(&accounts, b"alice")? {
///     Some(v) => String::from_utf8_lossy(&v).parse().unwrap(),
///     None => 0,
/// };
/// tx.put(&accounts, b"alice", (balance - 30).to_string().as_bytes())?;
/// tx.put(&log, b"0001", b"alice -30")?;
/// // The transaction reads its own writes; nobody else sees them yet.
/// assert_eq!(tx.get(&accounts, b"alice")?, Some(b"70".to_vec()));
/// assert_eq!(accounts.get(b"alice")?, Some(b"100".to_vec()));
/// tx.commit()?;
/// assert_eq!(accounts.get(b"alice")?, Some(b"70".to_vec()));
/// # Ok(()) }
/// ```
pub struct Transaction {
    db: Arc<DbInner>,
    snapshot: Snapshot,
    tables: Vec<Pending>,
    /// What the writes weigh in the batch they become.
    bytes: usize,
}

/// A transaction's business with one table.
struct Pending {
    table: Table,
    /// The writes, by key: a value put, or None for a delete.
    writes: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    /// Keys read with `get_for_update`.
    for_update: BTreeSet<Vec<u8>>,
    /// Ranges deleted, `[start, end)` (an empty end: to the last key).
    /// They hide the snapshot's keys; an own write in one was made after
    /// it (a range delete removes the own writes it covers).
    ranges: Vec<KeyRange>,
}

/// Whether one of a transaction's deleted `ranges` holds `key`.
fn hidden(ranges: &[KeyRange], key: &[u8]) -> bool {
    ranges.iter().any(|(s, e)| range_del::contains(s, e, key))
}

impl std::fmt::Debug for Transaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transaction")
            .field("seqno", &self.snapshot.seqno)
            .field("writes", &self.len())
            .field(
                "tables",
                &self
                    .tables
                    .iter()
                    .map(|p| p.table.name())
                    .collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl Transaction {
    pub(super) fn new(db: &Arc<DbInner>) -> Transaction {
        Transaction {
            db: Arc::clone(db),
            snapshot: Snapshot::new(db),
            tables: Vec::new(),
            bytes: 0,
        }
    }

    /// The snapshot the transaction reads at.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// let tx = db.begin();
    /// t.put(b"k", b"later")?;
    /// assert_eq!(tx.snapshot().get(&t, b"k")?, None);
    /// # Ok(()) }
    /// ```
    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }

    /// Number of keys the transaction writes (a key written twice counts
    /// once) and of ranges it deletes.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// let mut tx = db.begin();
    /// tx.put(&t, b"a", b"1")?;
    /// tx.put(&t, b"a", b"2")?;
    /// tx.delete(&t, b"b")?;
    /// assert_eq!(tx.len(), 2);
    /// # Ok(()) }
    /// ```
    pub fn len(&self) -> usize {
        self.tables
            .iter()
            .map(|p| p.writes.len() + p.ranges.len())
            .sum()
    }

    /// True when the transaction writes nothing.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// let mut tx = db.begin();
    /// assert!(tx.is_empty());
    /// tx.put(&t, b"a", b"1")?;
    /// assert!(!tx.is_empty());
    /// # Ok(()) }
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value of `key` in `table`: the transaction's own write of it if
    /// it made one, else the value at its snapshot.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// t.put(b"k", b"committed")?;
    /// let mut tx = db.begin();
    /// assert_eq!(tx.get(&t, b"k")?, Some(b"committed".to_vec()));
    /// tx.put(&t, b"k", b"mine")?;
    /// assert_eq!(tx.get(&t, b"k")?, Some(b"mine".to_vec()));
    /// assert_eq!(t.get(b"k")?, Some(b"committed".to_vec())); // not yet
    /// # Ok(()) }
    /// ```
    pub fn get(&self, table: &Table, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.check_table(table)?;
        table.check_key(key)?;
        let pending = self.pending(table);
        match pending.and_then(|p| p.writes.get(key)) {
            Some(own) => Ok(own.clone()),
            None if pending.is_some_and(|p| hidden(&p.ranges, key)) => Ok(None),
            None => self.snapshot.get(table, key),
        }
    }

    /// `get`, and the commit is refused if another commit writes `key`
    /// after this transaction's snapshot: what the transaction does with
    /// the value read cannot be based on a value already replaced (no lost
    /// update, no write skew over this key).
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// t.put(b"stock", b"5")?;
    /// let mut tx = db.begin();
    /// tx.get_for_update(&t, b"stock")?;
    /// t.put(b"stock", b"4")?; // another writer, after the read
    /// tx.put(&t, b"log", b"sold one")?;
    /// assert!(tx.commit().is_err_and(|e| e.is_conflict()));
    /// # Ok(()) }
    /// ```
    pub fn get_for_update(&mut self, table: &Table, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let value = self.get(table, key)?;
        self.pending_mut(table).for_update.insert(key.to_vec());
        Ok(value)
    }

    /// Sets `key` to `value` in `table` when the transaction commits. An
    /// invalid key or value, or a transaction grown past the largest batch
    /// (`limits::BATCH_BYTES_MAX`), is refused here.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// let mut tx = db.begin();
    /// tx.put(&t, b"k", b"v")?;
    /// tx.commit()?;
    /// assert_eq!(t.get(b"k")?, Some(b"v".to_vec()));
    /// # Ok(()) }
    /// ```
    pub fn put(&mut self, table: &Table, key: &[u8], value: &[u8]) -> Result<()> {
        if value.len() > limits::VALUE_BYTES_MAX {
            return Err(Error::invalid(format!(
                "value of {} bytes is larger than the limit of {} bytes",
                value.len(),
                limits::VALUE_BYTES_MAX
            )));
        }
        self.write(table, key, Some(value))
    }

    /// Deletes `key` from `table` when the transaction commits (not an
    /// error if it is absent).
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// t.put(b"k", b"v")?;
    /// let mut tx = db.begin();
    /// tx.delete(&t, b"k")?;
    /// assert_eq!(tx.get(&t, b"k")?, None);
    /// tx.commit()?;
    /// assert_eq!(t.get(b"k")?, None);
    /// # Ok(()) }
    /// ```
    pub fn delete(&mut self, table: &Table, key: &[u8]) -> Result<()> {
        self.write(table, key, None)
    }

    /// Deletes every key of `table` in `range`, as
    /// `WriteBatch::delete_range` does, seen by the transaction's reads at
    /// once. At commit it conflicts with any write since the snapshot to a
    /// key in the range: the check reads, in the range, the trees that
    /// hold writes newer than the snapshot (an LSM table's newer memtables
    /// and files; all of a B-tree's keys in the range), under the commit
    /// lock.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let carts = db.create_table("carts", spinney::TableOptions::btree())?;
    /// carts.put(b"c1/apple", b"2")?;
    /// carts.put(b"c1/pear", b"1")?;
    /// let mut tx = db.begin();
    /// tx.delete_range(&carts, &b"c1/"[..]..&b"c10"[..])?;
    /// tx.put(&carts, b"c1/plum", b"3")?;
    /// assert_eq!(tx.prefix(&carts, b"c1/")?.count(), 1);
    /// tx.commit()?;
    /// assert_eq!(carts.get(b"c1/apple")?, None);
    /// assert_eq!(carts.get(b"c1/plum")?, Some(b"3".to_vec()));
    /// # Ok(()) }
    /// ```
    pub fn delete_range<K: AsRef<[u8]>, R: RangeBounds<K>>(
        &mut self,
        table: &Table,
        range: R,
    ) -> Result<()> {
        self.check_table(table)?;
        let Some((start, end)) =
            super::batch::range_bounds(&range).map_err(Error::InvalidArgument)?
        else {
            return Ok(());
        };
        self.resize(self.bytes + start.len() + end.len() + ENTRY_OVERHEAD)?;
        let p = self.pending_mut(table);
        let upper = if end.is_empty() {
            Bound::Unbounded
        } else {
            Bound::Excluded(end.as_slice())
        };
        let covered: Vec<Vec<u8>> = p
            .writes
            .range::<[u8], _>((Bound::Included(start.as_slice()), upper))
            .map(|(k, _)| k.clone())
            .collect();
        for k in covered {
            p.writes.remove(&k);
        }
        p.ranges.push((start, end));
        Ok(())
    }

    /// Takes `bytes` as the size of the writes, refused past the batch limit.
    fn resize(&mut self, bytes: usize) -> Result<()> {
        if bytes > limits::BATCH_BYTES_MAX {
            return Err(Error::invalid(format!(
                "transaction grows past the limit of {} bytes",
                limits::BATCH_BYTES_MAX
            )));
        }
        self.bytes = bytes;
        Ok(())
    }

    fn write(&mut self, table: &Table, key: &[u8], value: Option<&[u8]>) -> Result<()> {
        self.check_table(table)?;
        table.check_key(key)?;
        let weight = |v: Option<&[u8]>| key.len() + v.map_or(0, <[u8]>::len) + ENTRY_OVERHEAD;
        let old = self
            .pending(table)
            .and_then(|p| p.writes.get(key))
            .map(|v| weight(v.as_deref()));
        self.resize(self.bytes - old.unwrap_or(0) + weight(value))?;
        self.pending_mut(table)
            .writes
            .insert(key.to_vec(), value.map(<[u8]>::to_vec));
        Ok(())
    }

    /// The entries of `table` in `range`, as of the snapshot with the
    /// transaction's own writes over it, in key order (reverse with
    /// `.rev()`). The own writes are those made before the call.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// for k in [b"a", b"b", b"c"] {
    ///     t.put(k, k)?;
    /// }
    /// let mut tx = db.begin();
    /// tx.put(&t, b"bb", b"")?;
    /// tx.delete(&t, b"c")?;
    /// let keys: Vec<_> = tx.range(&t, &b"b"[..]..)?.map(|e| e.map(|(k, _)| k)).collect::<spinney::Result<_>>()?;
    /// assert_eq!(keys, [b"b".to_vec(), b"bb".to_vec()]);
    /// # Ok(()) }
    /// ```
    pub fn range<K: AsRef<[u8]>, R: RangeBounds<K>>(
        &self,
        table: &Table,
        range: R,
    ) -> Result<TxRange> {
        let lower = owned_bound(range.start_bound());
        let upper = owned_bound(range.end_bound());
        self.range_of(table, lower, upper)
    }

    /// Every entry of `table`, as `range(table, ..)`.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// for k in [b"a", b"b", b"c"] {
    ///     t.put(k, k)?;
    /// }
    /// let mut tx = db.begin();
    /// tx.delete(&t, b"a")?;
    /// assert_eq!(tx.iter(&t)?.count(), 2);
    /// # Ok(()) }
    /// ```
    pub fn iter(&self, table: &Table) -> Result<TxRange> {
        self.range_of(table, Bound::Unbounded, Bound::Unbounded)
    }

    /// The entries of `table` whose keys begin with `prefix` (as
    /// `Table::prefix`), with the transaction's own writes.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// t.put(b"user/1", b"")?;
    /// let mut tx = db.begin();
    /// tx.put(&t, b"user/2", b"")?;
    /// assert_eq!(tx.prefix(&t, b"user/")?.count(), 2);
    /// # Ok(()) }
    /// ```
    pub fn prefix(&self, table: &Table, prefix: &[u8]) -> Result<TxRange> {
        let (lower, upper) = prefix_bounds(prefix);
        self.range_of(table, lower, upper)
    }

    fn range_of(
        &self,
        table: &Table,
        lower: Bound<Vec<u8>>,
        upper: Bound<Vec<u8>>,
    ) -> Result<TxRange> {
        self.check_table(table)?;
        let hidden = self
            .pending(table)
            .map(|p| p.ranges.clone())
            .unwrap_or_default();
        let own = match self.pending(table) {
            Some(p) if !empty_bounds(&lower, &upper) => p
                .writes
                .range::<[u8], _>((as_slice(&lower), as_slice(&upper)))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            _ => VecDeque::new(),
        };
        let base = Range::new(table, Some(&self.snapshot), lower, upper)?;
        Ok(TxRange {
            base,
            front: None,
            back: None,
            base_done: false,
            own,
            hidden,
            failed: false,
        })
    }

    /// Commits the writes with the database's durability.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// let mut tx = db.begin();
    /// tx.put(&t, b"k", b"v")?;
    /// tx.commit()?;
    /// assert_eq!(t.get(b"k")?, Some(b"v".to_vec()));
    /// # Ok(()) }
    /// ```
    pub fn commit(self) -> Result<()> {
        self.commit_with(WriteOptions::default())
    }

    /// Commits the writes as one batch, durable as `options` say, or
    /// refuses them all: `Error::Conflict` when a commit since the
    /// snapshot wrote a key this transaction wrote or read for update. A
    /// transaction that writes nothing commits at once (its reads were all
    /// at one snapshot).
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// let mut tx = db.begin();
    /// tx.put(&t, b"k", b"v")?;
    /// // Synced before it returns, whatever the database's durability.
    /// tx.commit_with(spinney::WriteOptions { durability: Some(spinney::Durability::Full) })?;
    /// # Ok(()) }
    /// ```
    pub fn commit_with(mut self, options: WriteOptions) -> Result<()> {
        let mut batch = WriteBatch::new();
        let mut keys = Vec::with_capacity(self.tables.len());
        let mut ranges = Vec::new();
        for p in std::mem::take(&mut self.tables) {
            // The ranges first: an own write in one was made after it.
            for (start, end) in &p.ranges {
                batch.push_range_delete(&p.table, start, end);
            }
            if !p.ranges.is_empty() {
                ranges.push((p.table.core.clone(), p.ranges));
            }
            let mut checked = Vec::with_capacity(p.writes.len() + p.for_update.len());
            for (key, value) in p.writes {
                match &value {
                    Some(v) => batch.put(&p.table, &key, v),
                    None => batch.delete(&p.table, &key),
                }
                checked.push(key);
            }
            checked.extend(p.for_update);
            keys.push((p.table.core.clone(), checked));
        }
        if batch.is_empty() {
            return Ok(());
        }
        let check = Check {
            seqno: self.snapshot.seqno,
            keys,
            ranges,
        };
        // `self.snapshot` stays registered until the commit returns: the
        // check reads the newest versions, which nothing may drop.
        write::write_checked(&self.db, batch, options, Some(check))
    }

    /// Discards the writes (as dropping the transaction does).
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// let mut tx = db.begin();
    /// tx.put(&t, b"k", b"v")?;
    /// tx.rollback(); // as dropping it
    /// assert_eq!(t.get(b"k")?, None);
    /// # Ok(()) }
    /// ```
    pub fn rollback(self) {}

    fn check_table(&self, table: &Table) -> Result<()> {
        table.check()?;
        if table.db.id != self.db.id {
            return Err(Error::invalid(format!(
                "table {:?} belongs to another database than the transaction",
                table.name()
            )));
        }
        Ok(())
    }

    fn pending(&self, table: &Table) -> Option<&Pending> {
        self.tables
            .iter()
            .find(|p| p.table.core.id() == table.core.id())
    }

    fn pending_mut(&mut self, table: &Table) -> &mut Pending {
        let id = table.core.id();
        let at = match self.tables.iter().position(|p| p.table.core.id() == id) {
            Some(at) => at,
            None => {
                self.tables.push(Pending {
                    table: table.clone(),
                    writes: BTreeMap::new(),
                    for_update: BTreeSet::new(),
                    ranges: Vec::new(),
                });
                self.tables.len() - 1
            }
        };
        &mut self.tables[at]
    }
}

fn as_slice(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k.as_slice()),
        Bound::Excluded(k) => Bound::Excluded(k.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// True when no key lies within the bounds (`BTreeMap::range` panics on
/// such bounds; a table's range is empty over them).
fn empty_bounds(lower: &Bound<Vec<u8>>, upper: &Bound<Vec<u8>>) -> bool {
    match (lower, upper) {
        (Bound::Included(l), Bound::Included(u)) => l > u,
        (Bound::Included(l) | Bound::Excluded(l), Bound::Excluded(u))
        | (Bound::Excluded(l), Bound::Included(u)) => l >= u,
        _ => false,
    }
}

/// The entries of a transaction's range: its snapshot's entries merged
/// with its own writes (which win, a delete hiding the entry), both ways.
///
/// ```
/// # fn main() -> spinney::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
/// let t = db.create_table("t", spinney::TableOptions::lsm())?;
/// for k in [b"a", b"b", b"c"] {
///     t.put(k, k)?;
/// }
/// let mut tx = db.begin();
/// tx.put(&t, b"d", b"")?;
/// let range: spinney::TxRange = tx.range(&t, &b"c"[..]..)?;
/// assert_eq!(range.count(), 2); // "c" committed, "d" its own
/// # Ok(()) }
/// ```
pub struct TxRange {
    base: Range,
    /// The entries `base` gave from each end and this range has not.
    front: Option<(Vec<u8>, Vec<u8>)>,
    back: Option<(Vec<u8>, Vec<u8>)>,
    /// `base` has given all its entries (to `front`, `back` or out).
    base_done: bool,
    /// The own writes in the range not yet given, in key order.
    own: VecDeque<(Vec<u8>, Option<Vec<u8>>)>,
    /// The transaction's deleted ranges: the snapshot's keys in them are
    /// not there.
    hidden: Vec<KeyRange>,
    failed: bool,
}

impl std::fmt::Debug for TxRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TxRange")
            .field("base", &self.base)
            .field("own_left", &self.own.len())
            .finish_non_exhaustive()
    }
}

impl Iterator for TxRange {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.failed {
                return None;
            }
            if self.front.is_none() && !self.base_done {
                match self.base.next() {
                    Some(Ok(entry)) if hidden(&self.hidden, &entry.0) => continue,
                    Some(Ok(entry)) => self.front = Some(entry),
                    Some(Err(e)) => {
                        self.failed = true;
                        return Some(Err(e));
                    }
                    None => self.base_done = true,
                }
            }
            if self.front.is_none() {
                // The base's last entry may wait at the other end.
                self.front = self.back.take();
            }
            let own_first = match (self.own.front(), &self.front) {
                (None, None) => return None,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some((own, _)), Some((base, _))) => {
                    let order = own.cmp(base);
                    if order.is_eq() {
                        // The own write replaces the snapshot's entry.
                        self.front = None;
                    }
                    order.is_le()
                }
            };
            if !own_first {
                return self.front.take().map(Ok);
            }
            if let Some((key, Some(value))) = self.own.pop_front() {
                return Some(Ok((key, value)));
            }
            // An own delete: the key is not there.
        }
    }
}

impl DoubleEndedIterator for TxRange {
    fn next_back(&mut self) -> Option<Self::Item> {
        loop {
            if self.failed {
                return None;
            }
            if self.back.is_none() && !self.base_done {
                match self.base.next_back() {
                    Some(Ok(entry)) if hidden(&self.hidden, &entry.0) => continue,
                    Some(Ok(entry)) => self.back = Some(entry),
                    Some(Err(e)) => {
                        self.failed = true;
                        return Some(Err(e));
                    }
                    None => self.base_done = true,
                }
            }
            if self.back.is_none() {
                self.back = self.front.take();
            }
            let own_last = match (self.own.back(), &self.back) {
                (None, None) => return None,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some((own, _)), Some((base, _))) => {
                    let order = own.cmp(base);
                    if order.is_eq() {
                        self.back = None;
                    }
                    order.is_ge()
                }
            };
            if !own_last {
                return self.back.take().map(Ok);
            }
            if let Some((key, Some(value))) = self.own.pop_back() {
                return Some(Ok((key, value)));
            }
        }
    }
}
