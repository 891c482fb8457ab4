//! One thread's session on a RocksDB store: the write batch it fills and
//! commits, its point reads (pinned, so never copied), its seeks through
//! an iterator per table kept and refreshed, its scans, and its read
//! counting.
//!
//! Thread-safety: a session belongs to the thread that made it, whose perf
//! context it sets and reads.

use std::ffi::c_char;
use std::ptr::{self, NonNull};

use super::stats::Counting;
use super::{
    ffi, peer, PerfContext, ReadOptions, RocksStore, Rocksdb, WriteBatch, PERF_LEVEL_DISABLE,
};
use crate::engine::leveldb_shape::{self, check, seek_steps};
use crate::engine::{Batch, EngineResult, Op, ReadCounts, Seek, Session};

/// One thread's handle: the store, and a batch and read options reused
/// from call to call.
pub(super) struct RocksSession<'a> {
    store: &'a RocksStore,
    batch: WriteBatch,
    read_options: ReadOptions,
    /// While counting reads: the thread's perf context and what was read.
    counting: Option<Counting>,
    /// An iterator per table for seeks, kept and refreshed before each
    /// (`Iterator::Refresh`), as spinney's sessions keep a cursor and
    /// WiredTiger's and LMDB's theirs; made at the table's first seek.
    iterators: Vec<Option<Iter<'a>>>,
}

impl Drop for RocksSession<'_> {
    fn drop(&mut self) {
        if self.counting.is_some() {
            // A session dropped while counting leaves its thread as the
            // session found it.
            // SAFETY: sets a thread-local level; any value is accepted.
            unsafe { ffi::rocksdb_set_perf_level(PERF_LEVEL_DISABLE) };
        }
    }
}

impl<'a> RocksSession<'a> {
    /// A new session on `store`, made in the thread that uses it.
    pub(super) fn new(store: &'a RocksStore) -> EngineResult<RocksSession<'a>> {
        // RocksDB counts perf-context events in every thread by default (a
        // thread-local update per operation); db_bench turns that off
        // (`--perf_level` 1, kDisable) in each of its threads, and so does
        // the lab.
        // SAFETY: sets a thread-local level; any value is accepted.
        unsafe { ffi::rocksdb_set_perf_level(PERF_LEVEL_DISABLE) };
        // SAFETY: plain constructors.
        let batch = WriteBatch::new(
            unsafe { ffi::rocksdb_writebatch_create() },
            "create a write batch",
        )?;
        // SAFETY: a plain constructor.
        let read_options = ReadOptions::new(
            unsafe { ffi::rocksdb_readoptions_create() },
            "create read options",
        )?;
        Ok(RocksSession {
            store,
            batch,
            read_options,
            counting: None,
            iterators: Vec::new(),
        })
    }

    /// A new iterator over table `index` (a view as of now). It copies the
    /// read options, so it may outlive the session's; it lives no longer
    /// than the store.
    fn iterator(&self, index: usize) -> EngineResult<Iter<'a>> {
        let family = self.store.family(index)?;
        // SAFETY: the database, read options and handle are live; the
        // iterator is destroyed before the session, so before the store.
        unsafe {
            let raw = ffi::rocksdb_create_iterator_cf(
                self.store.db.ptr(),
                self.read_options.ptr(),
                family.ptr(),
            );
            Iter::new(raw)
        }
    }
}

impl Session for RocksSession<'_> {
    fn write(&mut self, batch: &Batch) -> EngineResult<()> {
        // SAFETY: the batch is this session's own.
        unsafe { ffi::rocksdb_writebatch_clear(self.batch.ptr()) };
        for op in batch.ops() {
            match op {
                Op::Put { table, key, value } => {
                    let family = self.store.family(table)?;
                    // SAFETY: the batch and handle are live; the call copies
                    // the key and value.
                    unsafe {
                        ffi::rocksdb_writebatch_put_cf(
                            self.batch.ptr(),
                            family.ptr(),
                            key.as_ptr().cast::<c_char>(),
                            key.len(),
                            value.as_ptr().cast::<c_char>(),
                            value.len(),
                        )
                    };
                }
                Op::Delete { table, key } => {
                    let family = self.store.family(table)?;
                    // SAFETY: as for the put.
                    unsafe {
                        ffi::rocksdb_writebatch_delete_cf(
                            self.batch.ptr(),
                            family.ptr(),
                            key.as_ptr().cast::<c_char>(),
                            key.len(),
                        )
                    };
                }
                Op::DeleteRange { table, start, end } => {
                    let family = self.store.family(table)?;
                    // SAFETY: as for the put; `[start, end)`, RocksDB's
                    // DeleteRange.
                    unsafe {
                        ffi::rocksdb_writebatch_delete_range_cf(
                            self.batch.ptr(),
                            family.ptr(),
                            start.as_ptr().cast::<c_char>(),
                            start.len(),
                            end.as_ptr().cast::<c_char>(),
                            end.len(),
                        )
                    };
                }
            }
        }
        let mut err = ptr::null_mut();
        // SAFETY: the database, options and batch are live for the call.
        unsafe {
            ffi::rocksdb_write(
                self.store.db.ptr(),
                self.store.write_options.ptr(),
                self.batch.ptr(),
                &mut err,
            )
        };
        check::<Rocksdb>(err, "write a batch")
    }

    fn get(&mut self, table: usize, key: &[u8]) -> EngineResult<Option<usize>> {
        let family = self.store.family(table)?;
        if let Some(c) = &mut self.counting {
            if self.store.bloom_bits.get(table).is_some_and(|&b| b > 0) {
                c.gets_with_filter += 1;
            } else {
                c.gets_without_filter += 1;
            }
        }
        let mut err = ptr::null_mut();
        // SAFETY: the database, options and handle are live; the key is
        // read during the call only.
        let pinned = unsafe {
            ffi::rocksdb_get_pinned_cf(
                self.store.db.ptr(),
                self.read_options.ptr(),
                family.ptr(),
                key.as_ptr().cast::<c_char>(),
                key.len(),
                &mut err,
            )
        };
        let pinned = NonNull::new(pinned);
        // Destroys the pinned value on every path below.
        let _guard = pinned.map(PinnedValue);
        check::<Rocksdb>(err, "get")?;
        let Some(pinned) = pinned else {
            return Ok(None);
        };
        let mut len = 0usize;
        // SAFETY: the pinned value is live; only its length is used.
        unsafe { ffi::rocksdb_pinnableslice_value(pinned.as_ptr(), &mut len) };
        Ok(Some(len))
    }

    fn seek(&mut self, table: usize, key: &[u8], steps: usize) -> EngineResult<Seek> {
        if let Some(c) = &mut self.counting {
            c.seeks += 1;
        }
        if self.iterators.len() <= table {
            self.iterators.resize_with(table + 1, || None);
        }
        let iter = match self.iterators[table].take() {
            Some(mut kept) => {
                refresh(&mut kept)?;
                kept
            }
            None => self.iterator(table)?,
        };
        let iter = self.iterators[table].insert(iter);
        iter.seek(key);
        seek_steps(iter, key, steps)
    }

    fn scan(
        &mut self,
        table: usize,
        forward: bool,
        visit: &mut dyn FnMut(u64) -> bool,
    ) -> EngineResult<()> {
        if let Some(c) = &mut self.counting {
            c.scans += 1;
        }
        leveldb_shape::scan(&mut self.iterator(table)?, forward, visit)
    }

    fn start_read_counts(&mut self) -> EngineResult<bool> {
        let context = match self.counting.take() {
            Some(c) => c.context,
            // SAFETY: a plain constructor; the handle points at this
            // thread's perf context, and the session stays in this thread.
            None => PerfContext::new(
                unsafe { ffi::rocksdb_perfcontext_create() },
                "create a perf context",
            )?,
        };
        // SAFETY: sets this thread's level and zeroes its live context.
        unsafe {
            ffi::rocksdb_set_perf_level(ffi::PERF_LEVEL_ENABLE_COUNT);
            ffi::rocksdb_perfcontext_reset(context.ptr());
        }
        self.counting = Some(Counting {
            context,
            gets_with_filter: 0,
            gets_without_filter: 0,
            seeks: 0,
            scans: 0,
        });
        Ok(true)
    }

    fn take_read_counts(&mut self) -> EngineResult<Option<ReadCounts>> {
        let Some(counting) = self.counting.take() else {
            return Ok(None);
        };
        // Off again first, as every session of the lab runs (see `session`).
        // SAFETY: sets a thread-local level; any value is accepted.
        unsafe { ffi::rocksdb_set_perf_level(PERF_LEVEL_DISABLE) };
        Ok(Some(counting.counts()))
    }
}

/// A value `rocksdb_get_pinned_cf` found, destroyed on drop.
struct PinnedValue(NonNull<ffi::rocksdb_pinnableslice_t>);

impl Drop for PinnedValue {
    fn drop(&mut self) {
        // SAFETY: the pointer came from rocksdb_get_pinned_cf, is owned by
        // this value alone and destroyed once.
        unsafe { ffi::rocksdb_pinnableslice_destroy(self.0.as_ptr()) }
    }
}

/// An iterator over one column family, which must not outlive the store.
type Iter<'a> = leveldb_shape::Iter<'a, Rocksdb>;

/// Moves `iter` to the database as it is now (`Iterator::Refresh`); its
/// position is lost, so it is sought again after.
fn refresh(iter: &mut Iter<'_>) -> EngineResult<()> {
    let mut err = ptr::null_mut();
    // SAFETY: the iterator is live; `err` is a place for the result.
    let rc = unsafe { ffi::spinney_rocksdb_iter_refresh(iter.ptr(), &mut err) };
    check::<Rocksdb>(err, "refresh an iterator")?;
    if rc != 0 {
        return Err(peer("refresh an iterator: failed without a message".into()));
    }
    Ok(())
}
