//! The native module of the Python package `spinney` (`spinney._spinney`):
//! classes over the engine's `Db`, `Table`, `Snapshot`, `WriteBatch` and
//! `Transaction`, each engine call made with the GIL released
//! (`Python::detach`), so that Python threads run in parallel.
//!
//! Keys and values are `bytes` in and out; anything else is a `TypeError`
//! that says so. Engine errors become the exceptions of `spinney.errors`.
//! A `Table` is a mutable mapping of bytes to bytes (registered as a
//! `collections.abc.MutableMapping` by `spinney/__init__.py`).

mod db;
mod table;
mod write;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use table::{Iter, Table};
use write::{Batch, Snapshot, Transaction};

/// The exception of `spinney.errors` for an engine error.
pub(crate) fn error(py: Python<'_>, e: spinney::Error) -> PyErr {
    use spinney::Error as E;
    let name = match &e {
        E::Io { .. } => "IoError",
        E::Corruption { .. } => "CorruptionError",
        E::InvalidArgument(_) => "InvalidArgumentError",
        E::NoSuchTable(_) => "NoSuchTableError",
        E::TableExists(_) => "TableExistsError",
        E::Locked { .. } => "LockedError",
        E::ReadOnly { .. } => "ReadOnlyError",
        E::Unsupported(_) => "UnsupportedError",
        E::Conflict { .. } => "ConflictError",
        E::Closed => "ClosedError",
        E::NewerFormat { .. } => "NewerFormatError",
        _ => "Error",
    };
    let class = py.import("spinney.errors").and_then(|m| m.getattr(name));
    match class {
        Ok(class) => match class.call1((e.to_string(),)) {
            Ok(exc) => PyErr::from_value(exc),
            Err(err) => err,
        },
        Err(err) => err,
    }
}

/// Runs an engine call with the GIL released.
pub(crate) fn engine<T: Send>(
    py: Python<'_>,
    f: impl FnOnce() -> spinney::Result<T> + Send,
) -> PyResult<T> {
    py.detach(f).map_err(|e| error(py, e))
}

/// The bytes of a key or value: `bytes` only.
pub(crate) fn bytes_of<'a>(obj: &'a Bound<'_, PyAny>, what: &str) -> PyResult<&'a [u8]> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(b.as_bytes());
    }
    let kind = obj
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_default();
    let hint = match kind.as_str() {
        "str" => ": encode it (for example with .encode())",
        _ => "",
    };
    Err(PyTypeError::new_err(format!(
        "{what} must be bytes, not {kind}{hint}"
    )))
}

pub(crate) fn py_bytes<'py>(py: Python<'py>, b: &[u8]) -> Bound<'py, PyBytes> {
    PyBytes::new(py, b)
}

/// An open database: `spinney.open(path, **options)`. A context manager
/// that closes it on exit.
#[pyclass(module = "spinney", frozen)]
pub(crate) struct Db {
    pub(crate) db: spinney::Db,
}

#[pymodule]
fn _spinney(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(db::open, m)?)?;
    m.add("TRANSACT_ATTEMPTS", spinney::TRANSACT_ATTEMPTS)?;
    m.add_class::<Db>()?;
    m.add_class::<Table>()?;
    m.add_class::<Snapshot>()?;
    m.add_class::<Batch>()?;
    m.add_class::<Transaction>()?;
    m.add_class::<Iter>()?;
    Ok(())
}
