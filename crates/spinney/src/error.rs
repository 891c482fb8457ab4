//! The one error type of the crate.
//!
//! Every failure a caller can see is one of these variants, with enough
//! context to act on: which file and offset is corrupt, which table does not
//! exist, why the database has stopped accepting writes. Bad input and bad
//! bytes on disk become errors here; they never become panics.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// The result type of every fallible spinney operation.
///
/// ```
/// # fn main() -> spinney::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
/// fn first_key(t: &spinney::Table) -> spinney::Result<Option<Vec<u8>>> {
///     Ok(t.iter()?.next().transpose()?.map(|(k, _)| k))
/// }
/// let t = db.create_table("t", spinney::TableOptions::lsm())?;
/// assert_eq!(first_key(&t)?, None);
/// # Ok(()) }
/// ```
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong.
///
/// ```
/// # fn main() -> spinney::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
/// let t = db.create_table("t", spinney::TableOptions::lsm())?;
/// match t.put(&vec![0u8; spinney::limits::KEY_BYTES_MAX + 1], b"") {
///     Err(spinney::Error::InvalidArgument(why)) => assert!(why.contains("longer than the limit")),
///     other => panic!("{other:?}"),
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The operating system refused an operation on a file.
    Io {
        /// The operation that failed ("read", "sync", "rename", ...).
        op: &'static str,
        /// The file or directory it was applied to.
        path: PathBuf,
        /// The error the operating system gave.
        source: io::Error,
    },
    /// Bytes on disk are not what spinney wrote: a checksum mismatch, a
    /// length that runs past the end of a block, an unknown format version.
    Corruption {
        /// The file that holds the bad bytes.
        file: PathBuf,
        /// The byte offset in that file where the bad region starts.
        offset: u64,
        /// What was found there.
        detail: String,
    },
    /// An argument the caller passed is outside what spinney accepts: an
    /// oversized key or value, a table name with a path separator, a
    /// contradictory option.
    InvalidArgument(String),
    /// No table of this name exists (or it was dropped).
    NoSuchTable(String),
    /// `create_table` named a table that already exists.
    TableExists(String),
    /// Another `Db` (in this or another process) holds the directory open.
    Locked {
        /// The lock file that could not be taken.
        path: PathBuf,
    },
    /// The database refuses writes: it was opened read-only
    /// (`Options::read_only`), or it stopped accepting writes after an
    /// error it cannot recover from in place (a failed write or sync of the
    /// log, a failed flush), in which case reads keep working and reopening
    /// the database recovers.
    ReadOnly {
        /// Why: the error that made the database read-only, or that it was
        /// opened so.
        reason: String,
    },
    /// The request is valid but not supported by this build or table kind.
    Unsupported(String),
    /// A transaction's commit found that another commit, made after the
    /// transaction's snapshot was taken, wrote a key this transaction wrote
    /// or read with `get_for_update` (the first committer wins). Nothing of
    /// the transaction was written; running it again from the start, on a
    /// new snapshot, can succeed (`Db::transact` does that).
    Conflict {
        /// The table of the key.
        table: String,
        /// The key the other commit wrote.
        key: Vec<u8>,
    },
    /// The database was closed; the handle used can no longer reach it.
    Closed,
    /// A file says it is in a format version newer than this build reads:
    /// a newer spinney wrote it. Nothing was read from it or written to it;
    /// a build that reads that version opens it (docs/format.md lists the
    /// versions of every kind of file).
    NewerFormat {
        /// The file.
        file: PathBuf,
        /// Which kind of file: "log segment", "manifest", "SST", "B-tree file".
        what: &'static str,
        /// The version the file says it is in.
        found: u32,
        /// The newest version of that kind of file this build reads.
        supported: u32,
    },
}

impl Error {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Error::Io {
            op,
            path: path.into(),
            source,
        }
    }

    pub(crate) fn corruption(
        file: impl Into<PathBuf>,
        offset: u64,
        detail: impl Into<String>,
    ) -> Self {
        Error::Corruption {
            file: file.into(),
            offset,
            detail: detail.into(),
        }
    }

    pub(crate) fn newer_format(
        file: impl Into<PathBuf>,
        what: &'static str,
        found: u32,
        supported: u32,
    ) -> Self {
        Error::NewerFormat {
            file: file.into(),
            what,
            found,
            supported,
        }
    }

    pub(crate) fn invalid(detail: impl Into<String>) -> Self {
        Error::InvalidArgument(detail.into())
    }

    /// True when the error means bytes on disk are damaged.
    ///
    /// ```
    /// let e = spinney::Error::InvalidArgument("a key too long".into());
    /// assert!(!e.is_corruption());
    /// ```
    pub fn is_corruption(&self) -> bool {
        matches!(self, Error::Corruption { .. })
    }

    /// True when the error is a transaction's conflict: running the
    /// transaction again may succeed.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// let mut tx = db.begin();
    /// tx.put(&t, b"k", b"mine")?;
    /// t.put(b"k", b"theirs")?;
    /// let e = tx.commit().unwrap_err();
    /// assert!(e.is_conflict()); // run it again (`Db::transact` does)
    /// # Ok(()) }
    /// ```
    pub fn is_conflict(&self) -> bool {
        matches!(self, Error::Conflict { .. })
    }

    /// A copy of this error for handing to several waiters (the group-commit
    /// followers of a failed leader). `io::Error` is not `Clone`, so the copy
    /// keeps its kind and message.
    pub(crate) fn duplicate(&self) -> Error {
        match self {
            Error::Io { op, path, source } => Error::Io {
                op,
                path: path.clone(),
                source: io::Error::new(source.kind(), source.to_string()),
            },
            Error::Corruption {
                file,
                offset,
                detail,
            } => Error::Corruption {
                file: file.clone(),
                offset: *offset,
                detail: detail.clone(),
            },
            Error::InvalidArgument(s) => Error::InvalidArgument(s.clone()),
            Error::NoSuchTable(s) => Error::NoSuchTable(s.clone()),
            Error::TableExists(s) => Error::TableExists(s.clone()),
            Error::Locked { path } => Error::Locked { path: path.clone() },
            Error::ReadOnly { reason } => Error::ReadOnly {
                reason: reason.clone(),
            },
            Error::Unsupported(s) => Error::Unsupported(s.clone()),
            Error::Conflict { table, key } => Error::Conflict {
                table: table.clone(),
                key: key.clone(),
            },
            Error::Closed => Error::Closed,
            Error::NewerFormat {
                file,
                what,
                found,
                supported,
            } => Error::NewerFormat {
                file: file.clone(),
                what,
                found: *found,
                supported: *supported,
            },
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { op, path, source } => {
                write!(f, "I/O error: {op} {}: {source}", path.display())
            }
            Error::Corruption { file, offset, detail } => {
                write!(f, "corruption in {} at offset {offset}: {detail}", file.display())
            }
            Error::InvalidArgument(detail) => write!(f, "invalid argument: {detail}"),
            Error::NoSuchTable(name) => write!(f, "no such table: {name:?}"),
            Error::TableExists(name) => write!(f, "table already exists: {name:?}"),
            Error::Locked { path } => write!(
                f,
                "database is locked: {} is held by another open database (in this or another process)",
                path.display()
            ),
            Error::ReadOnly { reason } => write!(f, "database refuses writes: {reason}"),
            Error::Unsupported(what) => write!(f, "unsupported: {what}"),
            Error::Conflict { table, key } => write!(
                f,
                "transaction conflict: key \"{}\" of table {table:?} was written by another commit after this transaction's snapshot",
                key.escape_ascii()
            ),
            Error::Closed => write!(f, "the database is closed"),
            Error::NewerFormat {
                file,
                what,
                found,
                supported,
            } => write!(
                f,
                "{} is a {what} of format version {found}, written by a newer spinney; \
                 this build reads {what} versions up to {supported}",
                file.display()
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
