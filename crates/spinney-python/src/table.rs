//! A table as a mutable mapping of bytes to bytes, and iterators over
//! its entries.

use std::ops::Bound as RangeBound;
use std::sync::Mutex;

use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};

use crate::{bytes_of, engine, error, py_bytes, Db};

type Entry = (Vec<u8>, Vec<u8>);
pub(crate) type Entries = Box<dyn Iterator<Item = spinney::Result<Entry>> + Send>;

/// A table: a mutable mapping of bytes to bytes, and ranges over it.
#[pyclass(module = "spinney", frozen)]
pub(crate) struct Table {
    pub(crate) table: spinney::Table,
    /// Its database, for `update`'s batch.
    pub(crate) db: Py<Db>,
}

pub(crate) fn bound(
    obj: Option<&Bound<'_, PyAny>>,
    what: &str,
    included: bool,
) -> PyResult<RangeBound<Vec<u8>>> {
    Ok(match obj {
        None => RangeBound::Unbounded,
        Some(o) if o.is_none() => RangeBound::Unbounded,
        Some(o) if included => RangeBound::Included(bytes_of(o, what)?.to_vec()),
        Some(o) => RangeBound::Excluded(bytes_of(o, what)?.to_vec()),
    })
}

/// The smallest key above every key that begins with `prefix`.
fn successor(prefix: &[u8]) -> RangeBound<Vec<u8>> {
    match prefix.iter().rposition(|&b| b != 0xff) {
        Some(last) => {
            let mut s = prefix[..=last].to_vec();
            s[last] += 1;
            RangeBound::Excluded(s)
        }
        None => RangeBound::Unbounded,
    }
}

pub(crate) fn entries(range: spinney::Range, reverse: bool) -> Entries {
    match reverse {
        true => Box::new(range.rev()),
        false => Box::new(range),
    }
}

#[pymethods]
impl Table {
    /// The table's name.
    #[getter]
    fn name(&self) -> String {
        self.table.name().to_string()
    }

    /// "lsm" or "btree".
    #[getter]
    fn kind(&self) -> &'static str {
        match self.table.options().kind {
            spinney::TableKind::Btree => "btree",
            _ => "lsm",
        }
    }

    /// The value of `key`, or `default`.
    #[pyo3(signature = (key, default=None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let k = bytes_of(key, "key")?;
        Ok(match engine(py, || self.table.get(k))? {
            Some(v) => Some(py_bytes(py, &v).into_any()),
            None => default,
        })
    }

    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let k = bytes_of(key, "key")?;
        match engine(py, || self.table.get(k))? {
            Some(v) => Ok(py_bytes(py, &v)),
            None => Err(PyKeyError::new_err(key.clone().unbind())),
        }
    }

    fn __setitem__(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let (k, v) = (bytes_of(key, "key")?, bytes_of(value, "value")?);
        engine(py, || self.table.put(k, v))
    }

    /// Deletes `key`; `KeyError` if it is absent (as a mapping's `del`
    /// does; `delete` does not check).
    fn __delitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let k = bytes_of(key, "key")?;
        let had = engine(py, || {
            let mut scratch = Vec::new();
            let had = self.table.get_into(k, &mut scratch)?;
            if had {
                self.table.delete(k)?;
            }
            Ok(had)
        })?;
        match had {
            true => Ok(()),
            false => Err(PyKeyError::new_err(key.clone().unbind())),
        }
    }

    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let k = bytes_of(key, "key")?;
        engine(py, || {
            let mut scratch = Vec::new();
            self.table.get_into(k, &mut scratch)
        })
    }

    /// The keys, in order (a cursor over the table as of this call).
    fn __iter__(&self, py: Python<'_>) -> PyResult<Iter> {
        self.iter_of(
            py,
            RangeBound::Unbounded,
            RangeBound::Unbounded,
            false,
            Part::Keys,
        )
    }

    /// The number of keys: a scan of the whole table.
    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        engine(py, || {
            let mut n = 0;
            for e in self.table.iter()? {
                e?;
                n += 1;
            }
            Ok(n)
        })
    }

    /// Writes `key` = `value`.
    fn put(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        self.__setitem__(py, key, value)
    }

    /// Deletes `key` (nothing if it is absent).
    fn delete(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let k = bytes_of(key, "key")?;
        engine(py, || self.table.delete(k))
    }

    /// Deletes every key in [start, end).
    fn delete_range(
        &self,
        py: Python<'_>,
        start: &Bound<'_, PyAny>,
        end: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let (s, e) = (bytes_of(start, "start")?, bytes_of(end, "end")?);
        engine(py, || self.table.delete_range(s..e))
    }

    /// (key, value) pairs of the keys in [start, end) (None: no bound), in
    /// order, or in reverse.
    #[pyo3(signature = (start=None, end=None, reverse=false))]
    fn range(
        &self,
        py: Python<'_>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        reverse: bool,
    ) -> PyResult<Iter> {
        let (lo, hi) = (bound(start, "start", true)?, bound(end, "end", false)?);
        self.iter_of(py, lo, hi, reverse, Part::Items)
    }

    /// (key, value) pairs of the keys that begin with `prefix`.
    #[pyo3(signature = (prefix, reverse=false))]
    fn prefix(&self, py: Python<'_>, prefix: &Bound<'_, PyAny>, reverse: bool) -> PyResult<Iter> {
        let p = bytes_of(prefix, "prefix")?;
        let hi = successor(p);
        self.iter_of(
            py,
            RangeBound::Included(p.to_vec()),
            hi,
            reverse,
            Part::Items,
        )
    }

    /// The keys, in order.
    fn keys(&self, py: Python<'_>) -> PyResult<Iter> {
        self.__iter__(py)
    }

    /// The values, in key order.
    fn values(&self, py: Python<'_>) -> PyResult<Iter> {
        self.iter_of(
            py,
            RangeBound::Unbounded,
            RangeBound::Unbounded,
            false,
            Part::Values,
        )
    }

    /// (key, value) pairs, in key order.
    fn items(&self, py: Python<'_>) -> PyResult<Iter> {
        self.iter_of(
            py,
            RangeBound::Unbounded,
            RangeBound::Unbounded,
            false,
            Part::Items,
        )
    }

    /// Removes `key` and returns its value; `default` if absent, or
    /// `KeyError` without one.
    #[pyo3(signature = (key, *default))]
    fn pop<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        default: &Bound<'py, PyTuple>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let k = bytes_of(key, "key")?;
        let old = engine(py, || {
            let old = self.table.get(k)?;
            if old.is_some() {
                self.table.delete(k)?;
            }
            Ok(old)
        })?;
        match (old, default.get_item(0)) {
            (Some(v), _) => Ok(py_bytes(py, &v).into_any()),
            (None, Ok(d)) => Ok(d),
            (None, Err(_)) => Err(PyKeyError::new_err(key.clone().unbind())),
        }
    }

    /// Removes and returns the first (key, value); `KeyError` when empty.
    fn popitem<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let first = engine(py, || {
            let first = self.table.iter()?.next().transpose()?;
            if let Some((k, _)) = &first {
                self.table.delete(k)?;
            }
            Ok(first)
        })?;
        match first {
            Some((k, v)) => PyTuple::new(py, [py_bytes(py, &k), py_bytes(py, &v)]),
            None => Err(PyKeyError::new_err("popitem(): the table is empty")),
        }
    }

    /// The value of `key`, written as `default` first if it is absent.
    fn setdefault<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        default: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let (k, d) = (bytes_of(key, "key")?, bytes_of(default, "default")?);
        let v = engine(py, || match self.table.get(k)? {
            Some(v) => Ok(v),
            None => self.table.put(k, d).map(|()| d.to_vec()),
        })?;
        Ok(py_bytes(py, &v))
    }

    /// Writes every pair of a mapping or an iterable of pairs, and of the
    /// keyword arguments (as UTF-8 keys), in one batch.
    #[pyo3(signature = (other=None, **kwargs))]
    fn update(
        &self,
        py: Python<'_>,
        other: Option<&Bound<'_, PyAny>>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<()> {
        let mut batch = spinney::WriteBatch::new();
        if let Some(o) = other {
            let pairs = match o.hasattr("keys")? {
                true => o.call_method0("items")?,
                false => o.clone(),
            };
            for pair in pairs.try_iter()? {
                let pair = pair?;
                let (k, v) = (pair.get_item(0)?, pair.get_item(1)?);
                batch.put(&self.table, bytes_of(&k, "key")?, bytes_of(&v, "value")?);
            }
        }
        if let Some(kw) = kwargs {
            for (k, v) in kw.iter() {
                let k: String = k.extract()?;
                batch.put(&self.table, k.as_bytes(), bytes_of(&v, "value")?);
            }
        }
        let db = self.db.get();
        engine(py, move || db.db.write(batch))
    }

    /// Deletes every key (one range delete).
    fn clear(&self, py: Python<'_>) -> PyResult<()> {
        engine(py, || self.table.delete_range::<Vec<u8>, _>(..))
    }

    fn __repr__(&self) -> String {
        format!("<spinney.Table {:?} ({})>", self.table.name(), self.kind())
    }
}

impl Table {
    fn iter_of(
        &self,
        py: Python<'_>,
        lo: RangeBound<Vec<u8>>,
        hi: RangeBound<Vec<u8>>,
        reverse: bool,
        part: Part,
    ) -> PyResult<Iter> {
        let range = engine(py, || self.table.range((lo, hi)))?;
        Ok(Iter {
            entries: Mutex::new(entries(range, reverse)),
            part,
        })
    }
}

#[derive(Clone, Copy)]
pub(crate) enum Part {
    Keys,
    Values,
    Items,
}

/// An iterator over a table's entries, as of its making.
#[pyclass(module = "spinney")]
pub(crate) struct Iter {
    pub(crate) entries: Mutex<Entries>,
    pub(crate) part: Part,
}

#[pymethods]
impl Iter {
    #[expect(
        clippy::self_named_constructors,
        reason = "Python's iterator protocol: an iterator's __iter__ returns it"
    )]
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let entries = self
            .entries
            .get_mut()
            .map_err(|_| PyValueError::new_err("iterator poisoned"))?;
        let next = py
            .detach(|| entries.next().transpose())
            .map_err(|e| error(py, e))?;
        let Some((k, v)) = next else {
            return Ok(None);
        };
        Ok(Some(match self.part {
            Part::Keys => py_bytes(py, &k).into_any(),
            Part::Values => py_bytes(py, &v).into_any(),
            Part::Items => PyTuple::new(py, [py_bytes(py, &k), py_bytes(py, &v)])?.into_any(),
        }))
    }
}
