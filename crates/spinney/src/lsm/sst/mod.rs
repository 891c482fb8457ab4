//! Sorted string tables (SSTs): immutable files of internal keys and values,
//! written once by a flush or a compaction and read by point lookups and
//! iterators until compaction deletes them.
//!
//! Byte layout: docs/format.md#sst. In short:
//! ```text
//! sst     := data_block* filter_block? properties_block index_block footer
//! block   := contents (compressed or not) type:u8 crc32c:u32
//! footer  := filter_handle properties_handle index_handle (zero-padded to 60 bytes)
//!            version:u32 magic:u64 crc32c:u32
//! ```
//!
//! The pieces, lowest first: `format` (constants, handles, trailers, footer,
//! properties), `block` (prefix-compressed key/value blocks and their
//! iterator), `filter` (the whole-file bloom filter over user keys),
//! `builder` (`SstBuilder`), `reader` (`Sst` and the two-level `SstIter`),
//! `dump` (a human-readable listing).
//!
//! Nothing read from an SST file can make these modules panic or index out
//! of bounds (each file denies `clippy::indexing_slicing`): bad bytes are
//! `Error::Corruption` naming the file and the offset.
//!
//! Thread-safety: an `Sst` is immutable and shared through `Arc`; builders
//! and iterators have one owner each.

pub(crate) mod block;
mod builder;
mod dump;
pub(crate) mod filter;
pub(crate) mod format;
mod reader;
mod spare;
#[cfg(test)]
mod tests;

pub(crate) use builder::SstBuilder;
pub(crate) use dump::{dump, format_key};
pub(crate) use reader::{Sst, SstIter};

use crate::options::Compression;

/// How to build an SST.
#[derive(Debug, Clone)]
pub(crate) struct SstOptions {
    pub compression: Compression,
    /// Bloom filter bits per user key; 0 writes no filter block.
    pub bloom_bits_per_key: u32,
    /// A data block is closed once its uncompressed size reaches this.
    pub block_size: usize,
}

/// What a finished SST holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SstInfo {
    pub file_size: u64,
    pub entries: u64,
    /// Smallest and largest internal keys; empty when there are no entries.
    pub smallest: Vec<u8>,
    pub largest: Vec<u8>,
    /// 0 and 0 when there are no entries.
    pub seqno_min: u64,
    pub seqno_max: u64,
}
