//! The catalog: every table of the database by name (`VersionSet::tables`,
//! under the `vs` lock, recorded by the manifest), finding a table in it,
//! and the `Db` methods that create, open, list and drop tables. A table is
//! a `Core`, which creates, opens and drops it whatever its kind; the
//! catalog only lists the tables of each kind for the scheduler
//! (`lsm_tables`, `btrees`).
//!
//! Thread-safety: the catalog changes under the `vs` lock, after the
//! manifest records the change; readers take the lock only to find a
//! table, and keep its `Core`.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::{Core, Db, DbInner, Table, VersionSet};
use crate::btree::BtreeTable;
use crate::error::{Error, Result};
use crate::limits;
use crate::lsm::table::LsmTable;
use crate::manifest::{TableRecord, VersionEdit};
use crate::options::TableOptions;

/// A table's name, kind and options, as the catalog records them.
///
/// ```
/// # fn main() -> spinney::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
/// db.create_table("t", spinney::TableOptions::btree())?;
/// let info: spinney::TableInfo = db.tables().remove(0);
/// assert_eq!((info.name.as_str(), info.options.kind), ("t", spinney::TableKind::Btree));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableInfo {
    /// The table's name.
    pub name: String,
    /// Its options (kind included).
    pub options: TableOptions,
}

impl VersionSet {
    /// The LSM tables of the catalog.
    pub(crate) fn lsm_tables(&self) -> Vec<Arc<LsmTable>> {
        self.tables
            .values()
            .filter_map(Core::lsm)
            .cloned()
            .collect()
    }

    /// The B-tree tables of the catalog.
    pub(crate) fn btree_tables(&self) -> Vec<Arc<BtreeTable>> {
        self.tables
            .values()
            .filter_map(Core::btree)
            .cloned()
            .collect()
    }
}

impl DbInner {
    /// The table named `name`.
    pub(crate) fn table(&self, name: &str) -> Result<Core> {
        self.vs
            .lock()
            .tables
            .get(name)
            .cloned()
            .ok_or_else(|| Error::NoSuchTable(name.to_string()))
    }

    /// Every LSM table.
    pub(crate) fn lsm_tables(&self) -> Vec<Arc<LsmTable>> {
        self.vs.lock().lsm_tables()
    }

    /// Every B-tree table.
    pub(crate) fn btrees(&self) -> Vec<Arc<BtreeTable>> {
        self.vs.lock().btree_tables()
    }
}

impl Db {
    /// Creates a table. `Error::TableExists` if the name is taken.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// use spinney::{Db, Error, Options, TableKind, TableOptions};
    ///
    /// let db = Db::open(dir.path(), Options::default())?;
    /// db.create_table("orders", TableOptions::btree())?;
    /// assert!(matches!(
    ///     db.create_table("orders", TableOptions::btree()),
    ///     Err(Error::TableExists(_))
    /// ));
    /// // `open_table` creates a missing table and opens an existing one
    /// // (refusing another kind); `table` only opens.
    /// let events = db.open_table("events", TableOptions::lsm())?;
    /// assert_eq!(db.table("orders")?.options().kind, TableKind::Btree);
    /// assert_eq!(db.tables().len(), 2);
    /// drop(events);
    /// db.drop_table("events")?;
    /// assert!(matches!(db.table("events"), Err(Error::NoSuchTable(_))));
    /// # Ok(()) }
    /// ```
    pub fn create_table(&self, name: &str, options: TableOptions) -> Result<Table> {
        let inner = &self.inner;
        inner.check_writable()?;
        validate_table_name(name)?;
        options.validate()?;
        options.compression.check_built(name)?;
        let mut vs = inner.vs.lock();
        if vs.tables.contains_key(name) {
            return Err(Error::TableExists(name.to_string()));
        }
        if vs.tables.len() >= limits::TABLES_MAX {
            return Err(Error::invalid(format!(
                "a database holds at most {} tables",
                limits::TABLES_MAX
            )));
        }
        let id = vs.next_table_id;
        // Entries of a new table are all newer than now: none is persisted yet,
        // and none is older than the current last seqno.
        let flushed = inner.last_seqno.load(Ordering::Acquire);
        // A B-tree table's file first: see `Core::create_files`. A refused
        // create leaves the database writable.
        Core::create_files(inner, id, &options, flushed)?;
        let edit = VersionEdit {
            next_table_id: Some(id + 1),
            created: vec![TableRecord {
                id,
                name: name.to_string(),
                options: options.clone(),
            }],
            flushed: vec![(id, flushed)],
            ..VersionEdit::default()
        };
        if let Err(e) = vs.log(inner, &edit) {
            drop(vs);
            inner.poison(format!("writing the manifest failed: {e}"));
            return Err(e);
        }
        vs.next_table_id = id + 1;
        let core = match Core::create(inner, id, name, options, flushed) {
            Ok(core) => core,
            Err(e) => {
                drop(vs);
                inner.poison(format!("opening the new table {name:?} failed: {e}"));
                return Err(e);
            }
        };
        vs.live_versions.extend(core.live_version());
        vs.tables.insert(name.to_string(), core.clone());
        Ok(Table {
            db: Arc::clone(inner),
            core,
        })
    }

    /// The table named `name`.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// db.create_table("orders", spinney::TableOptions::btree())?;
    /// let orders = db.table("orders")?;
    /// assert_eq!(orders.name(), "orders");
    /// assert!(db.table("missing").is_err());
    /// # Ok(()) }
    /// ```
    pub fn table(&self, name: &str) -> Result<Table> {
        self.inner.check_open()?;
        Ok(Table {
            db: Arc::clone(&self.inner),
            core: self.inner.table(name)?,
        })
    }

    /// The table named `name`, created with `options` if it does not exist.
    /// An existing table must be of the kind asked for, and a B-tree table
    /// of the page size asked for (both are fixed when a table is created):
    /// `InvalidArgument` says which differs. Its other options are the ones
    /// it was created with (`Table::options`).
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let a = db.open_table("events", spinney::TableOptions::lsm())?; // created
    /// let b = db.open_table("events", spinney::TableOptions::lsm())?; // opened
    /// assert_eq!(a.name(), b.name());
    /// // Of another kind: refused, not silently the LSM table.
    /// assert!(db.open_table("events", spinney::TableOptions::btree()).is_err());
    /// # Ok(()) }
    /// ```
    pub fn open_table(&self, name: &str, options: TableOptions) -> Result<Table> {
        let table = match self.table(name) {
            Err(Error::NoSuchTable(_)) => return self.create_table(name, options),
            other => other?,
        };
        match table.options().fixed_differs(&options) {
            Some(why) => Err(Error::invalid(format!("table {name:?} {why}"))),
            None => Ok(table),
        }
    }

    /// Every table, by name.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// db.create_table("a", spinney::TableOptions::lsm())?;
    /// db.create_table("b", spinney::TableOptions::btree())?;
    /// let names: Vec<String> = db.tables().into_iter().map(|t| t.name).collect();
    /// assert_eq!(names, ["a", "b"]);
    /// # Ok(()) }
    /// ```
    pub fn tables(&self) -> Vec<TableInfo> {
        // The catalog is ordered by name.
        let vs = self.inner.vs.lock();
        vs.tables
            .values()
            .map(|t| TableInfo {
                name: t.name().to_string(),
                options: t.options().clone(),
            })
            .collect()
    }

    /// Drops a table and, once no reader needs them, its files.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("scratch", spinney::TableOptions::lsm())?;
    /// t.put(b"k", b"v")?;
    /// db.drop_table("scratch")?;
    /// assert!(db.table("scratch").is_err());
    /// assert!(t.get(b"k").is_err()); // a handle to a dropped table refuses
    /// # Ok(()) }
    /// ```
    pub fn drop_table(&self, name: &str) -> Result<()> {
        let inner = &self.inner;
        inner.check_writable()?;
        inner.table(name)?.drop_table(inner)
    }
}

fn validate_table_name(name: &str) -> Result<()> {
    if name.is_empty() || name.len() > limits::TABLE_NAME_BYTES_MAX {
        return Err(Error::invalid(format!(
            "table name must be 1 to {} bytes long, got {}",
            limits::TABLE_NAME_BYTES_MAX,
            name.len()
        )));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    {
        return Err(Error::invalid(format!(
            "table name {name:?} may hold only letters, digits, '_', '-' and '.'"
        )));
    }
    Ok(())
}
