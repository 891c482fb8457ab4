//! The database: opening with options, tables, batches, transactions,
//! snapshots, figures.

use std::sync::Mutex;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::table::Table;
use crate::write::{Batch, Snapshot, Transaction};
use crate::{engine, error, Db};

fn durability(name: &str) -> PyResult<spinney::Durability> {
    Ok(match name {
        "off" => spinney::Durability::Off,
        "normal" => spinney::Durability::Normal,
        "full" => spinney::Durability::Full,
        other => {
            return Err(PyValueError::new_err(format!(
                "durability is \"off\", \"normal\" or \"full\", not {other:?}"
            )))
        }
    })
}

fn table_options(
    kind: &str,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<spinney::TableOptions> {
    let mut o = match kind {
        "lsm" => spinney::TableOptions::lsm(),
        "btree" => spinney::TableOptions::btree(),
        other => {
            return Err(PyValueError::new_err(format!(
                "kind is \"lsm\" or \"btree\", not {other:?}"
            )))
        }
    };
    for (name, value) in options.into_iter().flat_map(|d| d.iter()) {
        match name.extract::<String>()?.as_str() {
            "compression" => {
                o.compression = match value.extract::<String>()?.as_str() {
                    "none" => spinney::Compression::None,
                    "lz4" => spinney::Compression::Lz4,
                    "zstd" => spinney::Compression::Zstd,
                    other => {
                        return Err(PyValueError::new_err(format!(
                            "compression is \"none\", \"lz4\" or \"zstd\", not {other:?}"
                        )))
                    }
                }
            }
            "page_size" => o.page_size = value.extract()?,
            "bloom_bits_per_key" => o.bloom_bits_per_key = value.extract()?,
            "write_buffer_size" => o.write_buffer_size = value.extract()?,
            other => {
                return Err(PyTypeError::new_err(format!(
                    "unknown table option {other:?}: the options are compression, page_size, \
                     bloom_bits_per_key and write_buffer_size"
                )))
            }
        }
    }
    Ok(o)
}

/// A `Table` of the database `slf`, as `make` opens or creates it.
fn make_table(
    slf: &Bound<'_, Db>,
    py: Python<'_>,
    make: impl FnOnce(&spinney::Db) -> spinney::Result<spinney::Table> + Send,
) -> PyResult<Table> {
    let db = slf.get();
    let table = engine(py, || make(&db.db))?;
    Ok(Table {
        table,
        db: slf.clone().unbind(),
    })
}

/// Opens (or creates) the database in directory `path`.
#[pyfunction]
#[pyo3(signature = (path, *, create_if_missing=true, read_only=false, durability="normal", cache_size=None, background_threads=None))]
pub(crate) fn open(
    py: Python<'_>,
    path: std::path::PathBuf,
    create_if_missing: bool,
    read_only: bool,
    durability: &str,
    cache_size: Option<u64>,
    background_threads: Option<usize>,
) -> PyResult<Db> {
    let mut options = spinney::Options {
        create_if_missing,
        read_only,
        durability: self::durability(durability)?,
        ..spinney::Options::default()
    };
    if let Some(c) = cache_size {
        options.cache_size = c;
    }
    if let Some(t) = background_threads {
        options.background_threads = t;
    }
    let db = engine(py, || spinney::Db::open(path, options))?;
    Ok(Db { db })
}

#[pymethods]
impl Db {
    /// The table `name`; created with these options if it is missing (an
    /// existing table of another kind or page size is refused). The
    /// options: compression ("none", "lz4", "zstd"), page_size,
    /// bloom_bits_per_key, write_buffer_size.
    #[pyo3(signature = (name, kind="lsm", **options))]
    fn table(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        name: &str,
        kind: &str,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Table> {
        let o = table_options(kind, options)?;
        make_table(slf, py, |db| db.open_table(name, o))
    }

    /// Creates table `name` (the options as `table`'s);
    /// `TableExistsError` if it exists.
    #[pyo3(signature = (name, kind="lsm", **options))]
    fn create_table(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        name: &str,
        kind: &str,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Table> {
        let o = table_options(kind, options)?;
        make_table(slf, py, |db| db.create_table(name, o))
    }

    /// Drops table `name` and its files.
    fn drop_table(&self, py: Python<'_>, name: &str) -> PyResult<()> {
        engine(py, || self.db.drop_table(name))
    }

    /// The names of the tables, in order.
    fn tables(&self) -> Vec<String> {
        self.db.tables().into_iter().map(|t| t.name).collect()
    }

    /// A batch of writes across tables, applied whole by `write()` or, as
    /// a context manager, on a normal exit (discarded on an exception).
    fn batch(slf: &Bound<'_, Self>) -> Batch {
        Batch {
            db: slf.clone().unbind(),
            batch: Some(spinney::WriteBatch::new()),
        }
    }

    /// A transaction (snapshot isolation, the first committer wins). As a
    /// context manager it commits on a normal exit (`ConflictError` if it
    /// lost) and rolls back on an exception.
    fn transaction(&self) -> Transaction {
        Transaction {
            tx: Some(self.db.begin()),
        }
    }

    /// Runs `body(tx)` in a transaction and commits it, again from the
    /// start while the commit loses to a conflict (at most `attempts`
    /// times, by default the engine's `Db::transact`'s,
    /// `TRANSACT_ATTEMPTS`); returns what `body` returned.
    #[pyo3(signature = (body, attempts=spinney::TRANSACT_ATTEMPTS))]
    fn transact(
        &self,
        py: Python<'_>,
        body: Bound<'_, PyAny>,
        attempts: u32,
    ) -> PyResult<Py<PyAny>> {
        let mut last = None;
        for _ in 0..attempts.max(1) {
            let tx = Bound::new(
                py,
                Transaction {
                    tx: Some(self.db.begin()),
                },
            )?;
            let result = match body.call1((tx.clone(),)) {
                Ok(r) => r,
                Err(e) => {
                    tx.borrow_mut().tx = None;
                    return Err(e);
                }
            };
            let Some(t) = tx.borrow_mut().tx.take() else {
                return Ok(result.unbind());
            };
            match py.detach(|| t.commit()) {
                Ok(()) => return Ok(result.unbind()),
                Err(e @ spinney::Error::Conflict { .. }) => last = Some(e),
                Err(e) => return Err(error(py, e)),
            }
        }
        Err(error(py, last.unwrap_or(spinney::Error::Closed)))
    }

    /// A snapshot: reads through it see the database as of now, until it
    /// is closed (a context manager closes it on exit).
    fn snapshot(&self) -> Snapshot {
        Snapshot {
            snap: Mutex::new(Some(self.db.snapshot())),
        }
    }

    /// The database's figures as a dict (spinney::Stats).
    fn stats(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let stats = py.detach(|| self.db.stats());
        let text = serde_json::to_string(&stats)
            .map_err(|e| PyValueError::new_err(format!("stats: {e}")))?;
        Ok(py.import("json")?.call_method1("loads", (text,))?.unbind())
    }

    /// Flushes the LSM tables' memtables and checkpoints the B-trees.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        engine(py, || self.db.flush())
    }

    /// Closes the database: later calls raise `ClosedError`.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        engine(py, || self.db.close())
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }
}
