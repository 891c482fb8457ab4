//! Snapshots, write batches and transactions.

use std::sync::Mutex;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::table::{bound, entries, Iter, Part, Table};
use crate::{bytes_of, engine, py_bytes, Db};

/// A consistent view of the database as of its making, until closed.
#[pyclass(module = "spinney", frozen)]
pub(crate) struct Snapshot {
    pub(crate) snap: Mutex<Option<spinney::Snapshot>>,
}

impl Snapshot {
    fn with<T>(&self, f: impl FnOnce(&spinney::Snapshot) -> PyResult<T>) -> PyResult<T> {
        let g = self
            .snap
            .lock()
            .map_err(|_| PyValueError::new_err("snapshot poisoned"))?;
        match g.as_ref() {
            Some(s) => f(s),
            None => Err(PyValueError::new_err("the snapshot is closed")),
        }
    }
}

#[pymethods]
impl Snapshot {
    /// The value of `key` in `table` as of the snapshot, or `default`.
    #[pyo3(signature = (table, key, default=None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        table: &Table,
        key: &Bound<'py, PyAny>,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let k = bytes_of(key, "key")?;
        let v = self.with(|s| engine(py, || s.get(&table.table, k)))?;
        Ok(match v {
            Some(v) => Some(py_bytes(py, &v).into_any()),
            None => default,
        })
    }

    /// (key, value) pairs of `table` in [start, end) as of the snapshot.
    #[pyo3(signature = (table, start=None, end=None, reverse=false))]
    fn range(
        &self,
        py: Python<'_>,
        table: &Table,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        reverse: bool,
    ) -> PyResult<Iter> {
        let (lo, hi) = (bound(start, "start", true)?, bound(end, "end", false)?);
        let range = self.with(|s| engine(py, || s.range(&table.table, (lo, hi))))?;
        Ok(Iter {
            entries: Mutex::new(entries(range, reverse)),
            part: Part::Items,
        })
    }

    /// (key, value) pairs of `table` whose keys begin with `prefix`.
    #[pyo3(signature = (table, prefix, reverse=false))]
    fn prefix(
        &self,
        py: Python<'_>,
        table: &Table,
        prefix: &Bound<'_, PyAny>,
        reverse: bool,
    ) -> PyResult<Iter> {
        let p = bytes_of(prefix, "prefix")?;
        let range = self.with(|s| engine(py, || s.prefix(&table.table, p)))?;
        Ok(Iter {
            entries: Mutex::new(entries(range, reverse)),
            part: Part::Items,
        })
    }

    /// Lets the versions the snapshot kept go.
    fn close(&self) {
        if let Ok(mut g) = self.snap.lock() {
            g.take();
        }
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, _exc: &Bound<'_, PyTuple>) -> bool {
        self.close();
        false
    }
}

/// Writes collected across tables, applied whole by `write()`.
#[pyclass(module = "spinney")]
pub(crate) struct Batch {
    pub(crate) db: Py<Db>,
    /// None once written or discarded.
    pub(crate) batch: Option<spinney::WriteBatch>,
}

impl Batch {
    fn open(&mut self) -> PyResult<&mut spinney::WriteBatch> {
        self.batch
            .as_mut()
            .ok_or_else(|| PyValueError::new_err("the batch was written or discarded"))
    }
}

#[pymethods]
impl Batch {
    /// Adds `key` = `value` in `table`.
    fn put(
        &mut self,
        table: &Table,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let (k, v) = (bytes_of(key, "key")?, bytes_of(value, "value")?);
        self.open()?.put(&table.table, k, v);
        Ok(())
    }

    /// Adds a delete of `key` in `table`.
    fn delete(&mut self, table: &Table, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let k = bytes_of(key, "key")?;
        self.open()?.delete(&table.table, k);
        Ok(())
    }

    /// Adds a delete of every key in [start, end) of `table`.
    fn delete_range(
        &mut self,
        table: &Table,
        start: &Bound<'_, PyAny>,
        end: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let (s, e) = (bytes_of(start, "start")?, bytes_of(end, "end")?);
        self.open()?.delete_range(&table.table, s..e);
        Ok(())
    }

    fn __len__(&self) -> usize {
        self.batch.as_ref().map_or(0, spinney::WriteBatch::len)
    }

    /// Applies the batch, whole; it cannot be used again.
    fn write(&mut self, py: Python<'_>) -> PyResult<()> {
        let batch = std::mem::take(self.open()?);
        self.batch = None;
        let db = self.db.get();
        engine(py, || db.db.write(batch))
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (exc_type, _exc=None, _tb=None))]
    fn __exit__(
        &mut self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        match exc_type.is_some_and(|t| !t.is_none()) {
            true => self.batch = None,
            false if self.batch.is_some() => self.write(py)?,
            false => {}
        }
        Ok(false)
    }
}

/// A transaction: reads at its snapshot with its own writes over them.
#[pyclass(module = "spinney")]
pub(crate) struct Transaction {
    /// None once committed or rolled back.
    pub(crate) tx: Option<spinney::Transaction>,
}

impl Transaction {
    fn open(&mut self) -> PyResult<&mut spinney::Transaction> {
        self.tx.as_mut().ok_or_else(|| {
            PyValueError::new_err("the transaction has ended (committed or rolled back)")
        })
    }
}

#[pymethods]
impl Transaction {
    /// The value of `key` as the transaction sees it, or `default`.
    #[pyo3(signature = (table, key, default=None))]
    fn get<'py>(
        &mut self,
        py: Python<'py>,
        table: &Table,
        key: &Bound<'py, PyAny>,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let k = bytes_of(key, "key")?;
        let tx = self.open()?;
        Ok(match engine(py, || tx.get(&table.table, k))? {
            Some(v) => Some(py_bytes(py, &v).into_any()),
            None => default,
        })
    }

    /// `get`, and the commit conflicts if another commit wrote `key` after
    /// the transaction began.
    #[pyo3(signature = (table, key, default=None))]
    fn get_for_update<'py>(
        &mut self,
        py: Python<'py>,
        table: &Table,
        key: &Bound<'py, PyAny>,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let k = bytes_of(key, "key")?;
        let tx = self.open()?;
        Ok(match engine(py, || tx.get_for_update(&table.table, k))? {
            Some(v) => Some(py_bytes(py, &v).into_any()),
            None => default,
        })
    }

    /// Writes `key` = `value` in the transaction.
    fn put(
        &mut self,
        py: Python<'_>,
        table: &Table,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let (k, v) = (bytes_of(key, "key")?, bytes_of(value, "value")?);
        let tx = self.open()?;
        engine(py, || tx.put(&table.table, k, v))
    }

    /// Deletes `key` in the transaction.
    fn delete(&mut self, py: Python<'_>, table: &Table, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let k = bytes_of(key, "key")?;
        let tx = self.open()?;
        engine(py, || tx.delete(&table.table, k))
    }

    /// Deletes every key in [start, end) in the transaction.
    fn delete_range(
        &mut self,
        py: Python<'_>,
        table: &Table,
        start: &Bound<'_, PyAny>,
        end: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let (s, e) = (bytes_of(start, "start")?, bytes_of(end, "end")?);
        let tx = self.open()?;
        engine(py, || tx.delete_range(&table.table, s..e))
    }

    /// Commits; `ConflictError` if a commit since the transaction began
    /// wrote a key it wrote or read for update (nothing is written).
    fn commit(&mut self, py: Python<'_>) -> PyResult<()> {
        let tx = self.tx.take().ok_or_else(|| {
            PyValueError::new_err("the transaction has ended (committed or rolled back)")
        })?;
        engine(py, || tx.commit())
    }

    /// Rolls back: nothing of the transaction is written.
    fn rollback(&mut self) {
        self.tx = None;
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (exc_type, _exc=None, _tb=None))]
    fn __exit__(
        &mut self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        match exc_type.is_some_and(|t| !t.is_none()) {
            true => self.rollback(),
            false if self.tx.is_some() => self.commit(py)?,
            false => {}
        }
        Ok(false)
    }
}
