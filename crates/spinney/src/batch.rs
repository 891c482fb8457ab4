//! `WriteBatch`: puts and deletes over any tables, committed atomically.

use crate::db::{Core, Table};
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
    pub fn new() -> WriteBatch {
        WriteBatch::default()
    }

    /// Sets `key` to `value` in `table`.
    pub fn put(&mut self, table: &Table, key: &[u8], value: &[u8]) {
        self.add(table, Kind::Put, key, value);
    }

    /// Deletes `key` from `table`.
    pub fn delete(&mut self, table: &Table, key: &[u8]) {
        self.add(table, Kind::Delete, key, &[]);
    }

    /// Number of puts and deletes.
    pub fn len(&self) -> usize {
        self.rep.count() as usize
    }

    /// True when the batch holds no writes.
    pub fn is_empty(&self) -> bool {
        self.rep.count() == 0
    }

    /// Bytes of the batch as the log stores it.
    pub fn encoded_len(&self) -> usize {
        self.rep.byte_len()
    }

    /// Empties the batch for reuse.
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
        if let Err(e) = self.check(table, key, value) {
            // Say which operation: the error reaches the caller only at
            // `Db::write`, after every operation was added.
            let op = match kind {
                Kind::Delete => "delete",
                _ => "put",
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

    fn check(&mut self, table: &Table, key: &[u8], value: &[u8]) -> Result<()> {
        table.check_key(key)?;
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
