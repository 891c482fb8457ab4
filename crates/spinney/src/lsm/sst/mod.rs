//! STUB — to be replaced by the SST implementation. The interface is fixed.
//!
//! Sorted string tables: immutable files of internal keys and values.

use std::path::Path;
use std::sync::Arc;

use crate::cache::Cache;
use crate::error::Result;
use crate::fs::{RandomAccessFile, WritableFile};
use crate::lsm::iter::InternalIterator;
use crate::options::Compression;

/// How to build an SST.
#[derive(Debug, Clone)]
pub(crate) struct SstOptions {
    pub compression: Compression,
    pub bloom_bits_per_key: u32,
    pub block_size: usize,
}

/// What a finished SST holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SstInfo {
    pub file_size: u64,
    pub entries: u64,
    pub smallest: Vec<u8>,
    pub largest: Vec<u8>,
    pub seqno_min: u64,
    pub seqno_max: u64,
}

pub(crate) struct SstBuilder {}

impl SstBuilder {
    pub(crate) fn new(_file: Box<dyn WritableFile>, _options: SstOptions) -> SstBuilder {
        todo!()
    }
    /// Adds an entry; internal keys come in strictly increasing order.
    pub(crate) fn add(&mut self, _ikey: &[u8], _value: &[u8]) -> Result<()> {
        todo!()
    }
    /// Bytes written so far (an estimate of the file size).
    pub(crate) fn estimated_size(&self) -> u64 {
        todo!()
    }
    pub(crate) fn entries(&self) -> u64 {
        todo!()
    }
    /// Writes filter, index, properties and footer, and syncs the file.
    pub(crate) fn finish(self) -> Result<SstInfo> {
        todo!()
    }
}

/// An open SST: footer, index and filter in memory, data blocks through the cache.
pub(crate) struct Sst {}

impl Sst {
    pub(crate) fn open(
        _file: Arc<dyn RandomAccessFile>,
        _file_number: u64,
        _cache: Arc<Cache>,
    ) -> Result<Arc<Sst>> {
        todo!()
    }
    /// The first entry whose internal key is >= `seek_key`, if its user key
    /// is `user_key`. Consults the bloom filter first.
    pub(crate) fn get(
        &self,
        _seek_key: &[u8],
        _user_key: &[u8],
    ) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        todo!()
    }
    pub(crate) fn iter(self: &Arc<Self>) -> SstIter {
        todo!()
    }
    /// Reads every block, checks checksums and key order.
    pub(crate) fn verify(&self) -> Result<u64> {
        todo!()
    }
}

pub(crate) struct SstIter {}

impl InternalIterator for SstIter {
    fn valid(&self) -> bool {
        todo!()
    }
    fn seek_to_first(&mut self) {
        todo!()
    }
    fn seek_to_last(&mut self) {
        todo!()
    }
    fn seek(&mut self, _target: &[u8]) {
        todo!()
    }
    fn next(&mut self) {
        todo!()
    }
    fn prev(&mut self) {
        todo!()
    }
    fn key(&self) -> &[u8] {
        todo!()
    }
    fn value(&self) -> &[u8] {
        todo!()
    }
    fn status(&self) -> Result<()> {
        todo!()
    }
}

/// Writes a human-readable description of the SST at `path` to `out`.
pub(crate) fn dump(
    _fs: &dyn crate::fs::Fs,
    _path: &Path,
    _out: &mut dyn std::io::Write,
) -> Result<()> {
    todo!()
}
