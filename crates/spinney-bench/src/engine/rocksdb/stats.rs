//! What the RocksDB adapter reads of RocksDB's statistics: the properties
//! of its column families (string and integer, `rocksdb.*`), which the
//! printouts, the shape counts and the waits for background work read,
//! and the perf context's counters, which `Session::take_read_counts`
//! turns into the lab's read counts (the columns are explained in the
//! module header of `rocksdb`).
//!
//! Thread-safety: the properties are read through the store, which any
//! thread may do; a `Counting` belongs to its session's thread, whose perf
//! context it reads.

use std::ffi::{c_int, CStr};

use super::{ffi, peer, ColumnFamily, PerfContext, RocksStore, Rocksdb};
use crate::engine::leveldb_shape::take_string;
use crate::engine::{EngineResult, ReadCounts};

impl RocksStore {
    /// A string property of a column family; `None` when RocksDB does not
    /// know it.
    pub(super) fn property(&self, family: &ColumnFamily, name: &CStr) -> Option<String> {
        // SAFETY: the database and handle are live, `name` is a C string.
        let value =
            unsafe { ffi::rocksdb_property_value_cf(self.db.ptr(), family.ptr(), name.as_ptr()) };
        take_string::<Rocksdb>(value)
    }

    /// An integer property of a column family; `None` when RocksDB does
    /// not know it.
    pub(super) fn int_property(&self, family: &ColumnFamily, name: &CStr) -> Option<u64> {
        let mut value = 0u64;
        // SAFETY: the database and handle are live, `name` is a C string,
        // `value` is a place for the result.
        let status = unsafe {
            ffi::rocksdb_property_int_cf(self.db.ptr(), family.ptr(), name.as_ptr(), &mut value)
        };
        (status == 0).then_some(value)
    }

    pub(super) fn require_int(&self, family: &ColumnFamily, name: &CStr) -> EngineResult<u64> {
        self.int_property(family, name).ok_or_else(|| {
            peer(format!(
                "RocksDB does not know the property {}",
                name.to_string_lossy()
            ))
        })
    }

    /// The background errors RocksDB has counted since the open (the
    /// property is the database's, read through any column family).
    pub(super) fn background_errors(&self) -> EngineResult<u64> {
        match self.families.first() {
            Some(f) => self.require_int(f, c"rocksdb.background-errors"),
            None => Ok(0),
        }
    }
}

/// A session's read counting: its thread's perf context, and the reads
/// made since counting started, which decide what "trees searched" is
/// read from (see the module header).
pub(super) struct Counting {
    pub(super) context: PerfContext,
    pub(super) gets_with_filter: u64,
    pub(super) gets_without_filter: u64,
    pub(super) seeks: u64,
    pub(super) scans: u64,
}

impl Counting {
    fn metric(&self, metric: c_int) -> u64 {
        // SAFETY: the context is live and belongs to this thread (a session
        // stays in the thread that made it); any metric number is accepted.
        unsafe { ffi::rocksdb_perfcontext_metric(self.context.ptr(), metric) }
    }

    /// The counts in the lab's columns.
    pub(super) fn counts(&self) -> ReadCounts {
        let memtables = self.metric(ffi::GET_FROM_MEMTABLE_COUNT);
        let bloom_hits = self.metric(ffi::BLOOM_SST_HIT_COUNT);
        let bloom_misses = self.metric(ffi::BLOOM_SST_MISS_COUNT);
        let from_cache = self.metric(ffi::BLOCK_CACHE_HIT_COUNT);
        let from_storage = self.metric(ffi::BLOCK_READ_COUNT);
        let trees_searched = match (
            self.gets_with_filter,
            self.gets_without_filter,
            self.seeks,
            self.scans,
        ) {
            (0, 0, 0, 0) => Some(0),
            (_, 0, 0, 0) => Some(memtables + bloom_hits + bloom_misses),
            (0, _, 0, 0) => Some(memtables + from_cache + from_storage),
            (0, 0, _, 0) => Some(self.metric(ffi::SEEK_CHILD_SEEK_COUNT)),
            _ => None,
        };
        ReadCounts {
            trees_searched,
            bloom_checks: Some(bloom_hits + bloom_misses),
            bloom_negatives: Some(bloom_misses),
            keys_compared: Some(self.metric(ffi::USER_KEY_COMPARISON_COUNT)),
            blocks_from_cache: Some(from_cache),
            blocks_from_storage: Some(from_storage),
        }
    }
}
