//! One thread's session on a LevelDB store: the write batch it fills and
//! commits (a range delete becomes a delete of each key the range holds),
//! its point reads, and its seeks and scans through an iterator confined
//! to one table's key prefix (`TableIter`).
//!
//! Thread-safety: a session belongs to one thread.

use std::ffi::{c_char, c_void};
use std::ptr;

use super::{encode, ffi, LevelStore, Leveldb, ReadOptions, WriteBatch};
use crate::engine::leveldb_shape::{self, check, seek_steps, Cursor, Iter};
use crate::engine::{Batch, EngineResult, Op, Seek, Session};

/// One thread's handle: the store, and a batch, read options and a key
/// buffer reused from call to call.
pub(super) struct LevelSession<'a> {
    store: &'a LevelStore,
    batch: WriteBatch,
    read_options: ReadOptions,
    /// The stored form of the key at hand.
    key: Vec<u8>,
}

impl<'a> LevelSession<'a> {
    /// A new session on `store`.
    pub(super) fn new(store: &'a LevelStore) -> EngineResult<LevelSession<'a>> {
        // SAFETY: plain constructors.
        let batch = WriteBatch::new(
            unsafe { ffi::leveldb_writebatch_create() },
            "create a write batch",
        )?;
        // SAFETY: a plain constructor.
        let read_options = ReadOptions::new(
            unsafe { ffi::leveldb_readoptions_create() },
            "create read options",
        )?;
        Ok(LevelSession {
            store,
            batch,
            read_options,
            key: Vec::new(),
        })
    }
}

impl LevelSession<'_> {
    /// A new iterator over the database (a view as of now).
    fn iterator(&self) -> EngineResult<TableIter<'_>> {
        // SAFETY: the database and read options are live; the iterator is
        // destroyed before the session, so before the store.
        let iter = unsafe {
            let raw = ffi::leveldb_create_iterator(self.store.db.ptr(), self.read_options.ptr());
            Iter::new(raw)?
        };
        Ok(TableIter { iter, prefix: None })
    }

    /// A new iterator over table `table` only.
    fn table_iterator(&self, table: usize) -> EngineResult<TableIter<'_>> {
        self.store.check_table(table)?;
        let mut iter = self.iterator()?;
        if self.store.prefixed {
            // Fits: open refuses more than TABLES_MAX tables.
            iter.prefix = Some(table as u8);
        }
        Ok(iter)
    }
}

impl Session for LevelSession<'_> {
    fn write(&mut self, batch: &Batch) -> EngineResult<()> {
        // SAFETY: the batch is this session's own.
        unsafe { ffi::leveldb_writebatch_clear(self.batch.ptr()) };
        for op in batch.ops() {
            match op {
                Op::Put { table, key, value } => {
                    self.store.check_table(table)?;
                    encode(self.store.prefixed, table, key, &mut self.key);
                    // SAFETY: the batch is live; the call copies the key
                    // and value.
                    unsafe {
                        ffi::leveldb_writebatch_put(
                            self.batch.ptr(),
                            self.key.as_ptr().cast::<c_char>(),
                            self.key.len(),
                            value.as_ptr().cast::<c_char>(),
                            value.len(),
                        )
                    };
                }
                Op::Delete { table, key } => {
                    self.store.check_table(table)?;
                    encode(self.store.prefixed, table, key, &mut self.key);
                    // SAFETY: as for the put.
                    unsafe {
                        ffi::leveldb_writebatch_delete(
                            self.batch.ptr(),
                            self.key.as_ptr().cast::<c_char>(),
                            self.key.len(),
                        )
                    };
                }
                Op::DeleteRange { table, start, end } => {
                    // LevelDB has no range delete: the keys of the range as
                    // the database holds them now, each deleted in the batch.
                    encode(self.store.prefixed, table, start, &mut self.key);
                    let mut keys = Vec::new();
                    let mut iter = self.table_iterator(table)?;
                    iter.seek(&self.key);
                    while let Some((k, _)) = iter.entry() {
                        if k >= end {
                            break;
                        }
                        keys.push(k.to_vec());
                        iter.next();
                    }
                    iter.status("read a range")?;
                    drop(iter);
                    for k in keys {
                        encode(self.store.prefixed, table, &k, &mut self.key);
                        // SAFETY: as for the put.
                        unsafe {
                            ffi::leveldb_writebatch_delete(
                                self.batch.ptr(),
                                self.key.as_ptr().cast::<c_char>(),
                                self.key.len(),
                            )
                        };
                    }
                }
            }
        }
        let mut err = ptr::null_mut();
        // SAFETY: the database, options and batch are live for the call.
        unsafe {
            ffi::leveldb_write(
                self.store.db.ptr(),
                self.store.write_options.ptr(),
                self.batch.ptr(),
                &mut err,
            )
        };
        check::<Leveldb>(err, "write a batch")
    }

    fn get(&mut self, table: usize, key: &[u8]) -> EngineResult<Option<usize>> {
        self.store.check_table(table)?;
        encode(self.store.prefixed, table, key, &mut self.key);
        let mut len = 0usize;
        let mut err = ptr::null_mut();
        // SAFETY: the database and options are live; the key is read
        // during the call only.
        let value = unsafe {
            ffi::leveldb_get(
                self.store.db.ptr(),
                self.read_options.ptr(),
                self.key.as_ptr().cast::<c_char>(),
                self.key.len(),
                &mut len,
                &mut err,
            )
        };
        if !value.is_null() {
            // SAFETY: a found value is a malloc()ed copy now ours; only its
            // length is used, and it is freed once.
            unsafe { ffi::leveldb_free(value.cast::<c_void>()) };
        }
        check::<Leveldb>(err, "get")?;
        Ok((!value.is_null()).then_some(len))
    }

    fn seek(&mut self, table: usize, key: &[u8], steps: usize) -> EngineResult<Seek> {
        encode(self.store.prefixed, table, key, &mut self.key);
        let mut iter = self.table_iterator(table)?;
        iter.seek(&self.key);
        seek_steps(&mut iter, key, steps)
    }

    fn scan(
        &mut self,
        table: usize,
        forward: bool,
        visit: &mut dyn FnMut(u64) -> bool,
    ) -> EngineResult<()> {
        leveldb_shape::scan(&mut self.table_iterator(table)?, forward, visit)
    }
}

/// An iterator over the database, or over one table's prefix of it; it
/// must not outlive the store.
struct TableIter<'a> {
    iter: Iter<'a, Leveldb>,
    /// The table's prefix byte when the tables share the key space: the
    /// iterator then shows only that table's entries, their keys without
    /// it.
    prefix: Option<u8>,
}

impl TableIter<'_> {
    fn seek(&mut self, stored_key: &[u8]) {
        self.iter.seek(stored_key);
    }
}

impl Cursor for TableIter<'_> {
    /// To the table's first entry.
    fn seek_to_first(&mut self) {
        match self.prefix {
            Some(p) => self.seek(&[p]),
            None => self.iter.seek_to_first(),
        }
    }

    /// To the table's last entry: the one before the next table's first
    /// key, or the database's last.
    fn seek_to_last(&mut self) {
        match self.prefix {
            Some(p) if p < u8::MAX => {
                self.seek(&[p + 1]);
                if self.iter.valid() {
                    self.iter.prev();
                } else {
                    self.iter.seek_to_last();
                }
            }
            _ => self.iter.seek_to_last(),
        }
    }

    /// The table's key (without its prefix) and value the iterator is on;
    /// `None` past either end of the table.
    fn entry(&self) -> Option<(&[u8], &[u8])> {
        let (key, value) = self.iter.entry()?;
        match self.prefix {
            None => Some((key, value)),
            Some(p) => match key.split_first() {
                Some((&first, rest)) if first == p => Some((rest, value)),
                _ => None,
            },
        }
    }

    fn next(&mut self) {
        self.iter.next();
    }

    fn prev(&mut self) {
        self.iter.prev();
    }

    fn status(&self, what: &str) -> EngineResult<()> {
        self.iter.status(what)
    }
}
