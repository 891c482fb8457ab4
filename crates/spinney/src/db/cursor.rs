//! `Cursor` and `Range`: reading a table in key order. Both read through
//! the multi-version layer's user cursor (`mvcc::cursor::UserCursor`) over
//! the table's internal entries (`TableIter`), at one seqno, with what
//! keeps that state readable (`Pin`) held as long as they live.
//!
//! Thread-safety: a cursor or range belongs to one thread at a time
//! (`Send`); any number may read one table at once.

use std::ops::Bound;
use std::sync::Arc;

use super::snapshot::Snapshot;
use super::table::{ReadOptions, Table};
use super::Core;
use crate::btree::iter::BtreeIter;
use crate::error::{Error, Result};
use crate::lsm::table::SuperVersion;
use crate::mvcc::cursor::UserCursor;
use crate::mvcc::iter::InternalIterator;
use crate::mvcc::merge::MergingIter;

impl Table {
    /// A user cursor over this table at `seqno`, kept readable by `pin`
    /// (which `pin` made for this table).
    pub(super) fn cursor_at(
        &self,
        pin: &Pin,
        seqno: u64,
        lower: Bound<Vec<u8>>,
        upper: Bound<Vec<u8>>,
    ) -> Result<UserCursor<TableIter>> {
        let source = match (&self.core, pin) {
            (Core::Lsm(t), Pin::Lsm(sv, _)) => TableIter::Lsm(t.source(sv, seqno)?),
            (Core::Btree(t), _) => TableIter::Btree(BtreeIter::new(Arc::clone(t))),
            // An LSM read at a seqno needs the super version held before
            // the seqno was taken (`pin`); a later one may lack versions
            // it needs (`mvcc::horizon`).
            (Core::Lsm(t), _) => {
                return Err(Error::invalid(format!(
                    "a cursor over LSM table '{}' needs the state pinned with its seqno",
                    t.name
                )))
            }
        };
        Ok(UserCursor::new(source, seqno, lower, upper))
    }

    /// What keeps a cursor's state readable, and the seqno it reads at:
    /// for an LSM table the super version, taken before the visible seqno
    /// is loaded (so that it holds every version at or below it); for a
    /// B-tree a registered snapshot (so the writer prunes nothing it sees).
    pub(super) fn pin(&self, snapshot: Option<&Snapshot>) -> Result<(Pin, u64)> {
        match &self.core {
            Core::Lsm(t) => {
                let sv = t.super_version();
                let seqno = self.read_seqno(snapshot)?;
                Ok((Pin::Lsm(sv, self.clone()), seqno))
            }
            Core::Btree(_) => {
                // Checks that a given snapshot is this database's.
                self.read_seqno(snapshot)?;
                let snap = match snapshot {
                    Some(s) => s.clone(),
                    None => Snapshot::new(&self.db),
                };
                let seqno = snap.seqno;
                Ok((Pin::Snapshot(snap), seqno))
            }
        }
    }
}

/// The internal entries of one table: an LSM table's merge of its trees,
/// or a B-tree's one tree. An enum rather than a boxed iterator, so that
/// the cursor's calls are not dynamic. Neither variant is boxed: a cursor
/// is often made for one seek (as db_bench's are), and a box would be an
/// allocation more each time; the B-tree's is the larger by its window's
/// bookkeeping, some tens of bytes.
#[allow(clippy::large_enum_variant)]
pub(crate) enum TableIter {
    Lsm(MergingIter),
    Btree(BtreeIter),
}

macro_rules! each {
    ($self:expr, $it:ident => $e:expr) => {
        match $self {
            TableIter::Lsm($it) => $e,
            TableIter::Btree($it) => $e,
        }
    };
}

impl InternalIterator for TableIter {
    #[inline]
    fn valid(&self) -> bool {
        each!(self, it => it.valid())
    }
    #[inline]
    fn seek_to_first(&mut self) {
        each!(self, it => it.seek_to_first())
    }
    #[inline]
    fn seek_to_last(&mut self) {
        each!(self, it => it.seek_to_last())
    }
    #[inline]
    fn seek(&mut self, target: &[u8]) {
        each!(self, it => it.seek(target))
    }
    #[inline]
    fn next(&mut self) {
        each!(self, it => it.next())
    }
    #[inline]
    fn prev(&mut self) {
        each!(self, it => it.prev())
    }
    #[inline]
    fn key(&self) -> &[u8] {
        each!(self, it => it.key())
    }
    #[inline]
    fn value(&self) -> &[u8] {
        each!(self, it => it.value())
    }
    #[inline]
    fn status(&self) -> Result<()> {
        each!(self, it => it.status())
    }
    #[inline]
    fn sources(&self) -> usize {
        each!(self, it => it.sources())
    }
}

/// A movable position in a table: seek, step both ways, read the entry.
/// It sees one consistent state, the one of its creation (or its snapshot).
///
/// ```
/// # fn main() -> spinney::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
/// let t = db.create_table("t", spinney::TableOptions::lsm())?;
/// for k in [b"a", b"b", b"c"] {
///     t.put(k, k)?;
/// }
/// let mut cursor: spinney::Cursor = t.cursor()?;
/// cursor.seek_to_first();
/// let mut keys = Vec::new();
/// while cursor.valid() {
///     keys.push(cursor.key().to_vec());
///     cursor.next();
/// }
/// cursor.status()?;
/// assert_eq!(keys, [b"a", b"b", b"c"]);
/// # Ok(()) }
/// ```
pub struct Cursor {
    pub(super) inner: UserCursor<TableIter>,
    pub(super) pin: Pin,
}

impl std::fmt::Debug for Cursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("Cursor");
        d.field("valid", &self.valid());
        if self.valid() {
            d.field("key", &String::from_utf8_lossy(self.key()));
        }
        d.finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Range {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Range")
            .field("table", &self.table.name())
            .field("seqno", &self.seqno)
            .field("lower", &self.lower)
            .field("upper", &self.upper)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

/// What keeps a cursor's state readable.
pub(super) enum Pin {
    /// An LSM table's trees, and the table (read again by `refresh`).
    Lsm(Arc<SuperVersion>, Table),
    /// A B-tree table's registered snapshot.
    Snapshot(Snapshot),
    /// Pinned by the `Range` that holds the cursor.
    None,
}

impl Cursor {
    /// True when on an entry.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// for k in [b"a", b"b", b"c"] {
    ///     t.put(k, k)?;
    /// }
    /// let mut c = t.cursor()?;
    /// assert!(!c.valid()); // not positioned yet
    /// c.seek_to_first();
    /// assert!(c.valid());
    /// # Ok(()) }
    /// ```
    #[inline]
    pub fn valid(&self) -> bool {
        self.inner.valid()
    }
    /// The current key. Empty when not valid.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// for k in [b"a", b"b", b"c"] {
    ///     t.put(k, k)?;
    /// }
    /// let mut c = t.cursor()?;
    /// c.seek(b"b");
    /// assert_eq!(c.key(), b"b");
    /// # Ok(()) }
    /// ```
    #[inline]
    pub fn key(&self) -> &[u8] {
        self.inner.key()
    }
    /// The current value. Empty when not valid.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// for k in [b"a", b"b", b"c"] {
    ///     t.put(k, k)?;
    /// }
    /// let mut c = t.cursor()?;
    /// c.seek(b"c");
    /// assert_eq!(c.value(), b"c");
    /// # Ok(()) }
    /// ```
    #[inline]
    pub fn value(&self) -> &[u8] {
        self.inner.value()
    }
    /// The first entry.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// for k in [b"a", b"b", b"c"] {
    ///     t.put(k, k)?;
    /// }
    /// let mut c = t.cursor()?;
    /// c.seek_to_first();
    /// assert_eq!(c.key(), b"a");
    /// # Ok(()) }
    /// ```
    #[inline]
    pub fn seek_to_first(&mut self) {
        self.inner.seek_to_first()
    }
    /// The last entry.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// for k in [b"a", b"b", b"c"] {
    ///     t.put(k, k)?;
    /// }
    /// let mut c = t.cursor()?;
    /// c.seek_to_last();
    /// assert_eq!(c.key(), b"c");
    /// # Ok(()) }
    /// ```
    #[inline]
    pub fn seek_to_last(&mut self) {
        self.inner.seek_to_last()
    }
    /// The first entry with a key `>= key`.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// for k in [b"a", b"b", b"c"] {
    ///     t.put(k, k)?;
    /// }
    /// let mut c = t.cursor()?;
    /// c.seek(b"bb"); // the first key at or after "bb"
    /// assert_eq!(c.key(), b"c");
    /// # Ok(()) }
    /// ```
    #[inline]
    pub fn seek(&mut self, key: &[u8]) {
        self.inner.seek(key)
    }
    /// The last entry with a key `<= key`.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// for k in [b"a", b"b", b"c"] {
    ///     t.put(k, k)?;
    /// }
    /// let mut c = t.cursor()?;
    /// c.seek_for_prev(b"bb"); // the last key at or before "bb"
    /// assert_eq!(c.key(), b"b");
    /// # Ok(()) }
    /// ```
    #[inline]
    pub fn seek_for_prev(&mut self, key: &[u8]) {
        self.inner.seek_for_prev(key)
    }
    /// The next entry.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// for k in [b"a", b"b", b"c"] {
    ///     t.put(k, k)?;
    /// }
    /// let mut c = t.cursor()?;
    /// c.seek_to_first();
    /// c.next();
    /// assert_eq!(c.key(), b"b");
    /// # Ok(()) }
    /// ```
    #[inline]
    pub fn next(&mut self) {
        self.inner.next()
    }
    /// The previous entry.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// for k in [b"a", b"b", b"c"] {
    ///     t.put(k, k)?;
    /// }
    /// let mut c = t.cursor()?;
    /// c.seek_to_last();
    /// c.prev();
    /// assert_eq!(c.key(), b"b");
    /// # Ok(()) }
    /// ```
    #[inline]
    pub fn prev(&mut self) {
        self.inner.prev()
    }
    /// The error that stopped the cursor, if any. Check it when `valid()`
    /// turns false: a corrupt block ends iteration with an error, not silently.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// for k in [b"a", b"b", b"c"] {
    ///     t.put(k, k)?;
    /// }
    /// let mut c = t.cursor()?;
    /// c.seek_to_first();
    /// while c.valid() {
    ///     c.next();
    /// }
    /// c.status()?; // the end of the table, not an error
    /// # Ok(()) }
    /// ```
    #[inline]
    pub fn status(&self) -> Result<()> {
        self.inner.status()
    }

    /// Reads the table again as it is now: the cursor is unpositioned (seek
    /// next), keeps its bounds and buffers, lets go of the state it read
    /// (a cursor made at a snapshot moves to the current state too) and
    /// forgets an earlier error. A loop of seeks that keeps one cursor and
    /// refreshes it before each costs less than one that makes a cursor
    /// for each: a B-tree cursor only registers a newer snapshot (an LSM
    /// cursor gathers its table's trees again, as a new one does). If it
    /// fails (the database closed, the table dropped), the cursor is left
    /// as it was.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::btree())?;
    /// t.put(b"a", b"1")?;
    /// let mut c = t.cursor()?;
    /// t.put(b"b", b"2")?;
    /// c.seek(b"b");
    /// assert!(!c.valid()); // made before "b" was written
    /// c.refresh()?;
    /// c.seek(b"b");
    /// assert_eq!(c.value(), b"2");
    /// # Ok(()) }
    /// ```
    pub fn refresh(&mut self) -> Result<()> {
        match &mut self.pin {
            Pin::Snapshot(snap) => {
                let TableIter::Btree(it) = self.inner.iter_mut() else {
                    return Err(Error::invalid("this cursor cannot be refreshed"));
                };
                snap.db.check_open()?;
                let table = it.table();
                if table.dropped.load(std::sync::atomic::Ordering::Acquire) {
                    return Err(Error::NoSuchTable(table.name.clone()));
                }
                // Registered before the older one lets go.
                let fresh = Snapshot::new(&snap.db);
                let seqno = fresh.seqno;
                *snap = fresh;
                it.reset();
                self.inner.reset(seqno);
                Ok(())
            }
            Pin::Lsm(_, table) => {
                let (lower, upper) = self.inner.bounds();
                let options = ReadOptions {
                    snapshot: None,
                    lower: lower.clone(),
                    upper: upper.clone(),
                };
                *self = table.cursor_with(&options)?;
                Ok(())
            }
            Pin::None => Err(Error::invalid("this cursor cannot be refreshed")),
        }
    }
}

/// The entries of a key range, as a double-ended iterator of
/// `Result<(key, value)>`. Forward and backward ends meet without overlap.
///
/// ```
/// # fn main() -> spinney::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
/// let t = db.create_table("t", spinney::TableOptions::lsm())?;
/// for k in [b"a", b"b", b"c"] {
///     t.put(k, k)?;
/// }
/// let range: spinney::Range = t.range(&b"b"[..]..)?;
/// let back: Vec<_> = range.rev().map(|e| e.map(|(k, _)| k)).collect::<spinney::Result<_>>()?;
/// assert_eq!(back, [b"c", b"b"]);
/// # Ok(()) }
/// ```
pub struct Range {
    front: Cursor,
    back: Option<Cursor>,
    table: Table,
    seqno: u64,
    started_front: bool,
    last_front: Option<Vec<u8>>,
    last_back: Option<Vec<u8>>,
    done: bool,
    pin: Pin,
    lower: Bound<Vec<u8>>,
    upper: Bound<Vec<u8>>,
}

impl Range {
    pub(super) fn new(
        table: &Table,
        snapshot: Option<&Snapshot>,
        lower: Bound<Vec<u8>>,
        upper: Bound<Vec<u8>>,
    ) -> Result<Range> {
        table.check()?;
        let (pin, seqno) = table.pin(snapshot)?;
        let front = Cursor {
            inner: table.cursor_at(&pin, seqno, lower.clone(), upper.clone())?,
            pin: Pin::None,
        };
        Ok(Range {
            front,
            back: None,
            table: table.clone(),
            seqno,
            started_front: false,
            last_front: None,
            last_back: None,
            done: false,
            pin,
            lower,
            upper,
        })
    }

    fn finish(&mut self, status: Result<()>) -> Option<Result<(Vec<u8>, Vec<u8>)>> {
        self.done = true;
        status.err().map(Err)
    }
}

impl Iterator for Range {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if self.started_front {
            self.front.next();
        } else {
            self.started_front = true;
            self.front.seek_to_first();
        }
        if !self.front.valid() {
            let status = self.front.status();
            return self.finish(status);
        }
        let key = self.front.key();
        if self.last_back.as_deref().is_some_and(|b| key >= b) {
            return self.finish(Ok(()));
        }
        self.last_front = Some(key.to_vec());
        Some(Ok((key.to_vec(), self.front.value().to_vec())))
    }
}

impl DoubleEndedIterator for Range {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let back = match &mut self.back {
            Some(b) => {
                b.prev();
                b
            }
            None => {
                let inner = match self.table.cursor_at(
                    &self.pin,
                    self.seqno,
                    self.lower.clone(),
                    self.upper.clone(),
                ) {
                    Ok(c) => c,
                    Err(e) => return self.finish(Err(e)),
                };
                let b = self.back.insert(Cursor {
                    inner,
                    pin: Pin::None,
                });
                b.seek_to_last();
                b
            }
        };
        if !back.valid() {
            let status = back.status();
            return self.finish(status);
        }
        let key = back.key().to_vec();
        let value = back.value().to_vec();
        if self
            .last_front
            .as_deref()
            .is_some_and(|f| key.as_slice() <= f)
        {
            return self.finish(Ok(()));
        }
        self.last_back = Some(key.clone());
        Some(Ok((key, value)))
    }
}
