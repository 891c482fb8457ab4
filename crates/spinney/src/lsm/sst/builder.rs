//! `SstBuilder`: writes a sorted stream of internal keys and values into a
//! new SST, block by block, then the filter, properties, index and footer.
//!
//! Byte layout: docs/format.md#sst. The builder checks its input (strictly
//! increasing, well-formed internal keys; sizes within `limits`) so that a
//! caller's bug becomes `Error::InvalidArgument`, never a file that readers
//! would call corrupt. After a failed write every later call returns the
//! error again.
//!
//! Thread-safety: one owner.
#![deny(clippy::indexing_slicing)]

use std::cmp::Ordering;

use super::block::BlockBuilder;
use super::filter;
use super::format::{self, BlockHandle, CompressionType, Footer, Properties};
use super::{SstInfo, SstOptions};
use crate::error::{Error, Result};
use crate::fs::WritableFile;
use crate::limits;
use crate::mvcc::key::{self, Kind, ParsedKey};

pub(crate) struct SstBuilder {
    file: Box<dyn WritableFile>,
    options: SstOptions,
    compression: CompressionType,
    /// Bytes written so far (the offset of the next block).
    offset: u64,
    data_block: BlockBuilder,
    index_block: BlockBuilder,
    /// Hashes of distinct user keys, for the filter (empty when no filter).
    filter_hashes: Vec<u64>,
    last_key: Vec<u8>,
    /// The handle of the last data block written, whose index entry waits
    /// for the next key so that its separator can be shortened.
    pending_index: Option<BlockHandle>,
    properties: Properties,
    /// The first error; every later call repeats it.
    failed: Option<Error>,
}

impl SstBuilder {
    pub(crate) fn new(file: Box<dyn WritableFile>, options: SstOptions) -> SstBuilder {
        let compression = CompressionType::from_option(options.compression);
        let offset = file.len();
        SstBuilder {
            file,
            compression,
            offset,
            data_block: BlockBuilder::new(),
            index_block: BlockBuilder::with_restart_interval(format::INDEX_RESTART_INTERVAL),
            filter_hashes: Vec::new(),
            last_key: Vec::new(),
            pending_index: None,
            properties: Properties {
                compression,
                bloom_bits_per_key: options.bloom_bits_per_key,
                ..Properties::default()
            },
            options,
            failed: None,
        }
    }

    fn check(&self) -> Result<()> {
        match &self.failed {
            Some(e) => Err(e.duplicate()),
            None => Ok(()),
        }
    }

    /// Adds an entry; internal keys come in strictly increasing order.
    pub(crate) fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        self.check()?;
        let Some(parsed) = ParsedKey::parse(ikey) else {
            return Err(Error::invalid(format!(
                "SST builder: malformed internal key of {} bytes",
                ikey.len()
            )));
        };
        if parsed.user_key.len() > limits::KEY_BYTES_MAX || value.len() > limits::VALUE_BYTES_MAX {
            return Err(Error::invalid(format!(
                "SST builder: key of {} bytes or value of {} bytes is over the limit",
                parsed.user_key.len(),
                value.len()
            )));
        }
        let first = self.properties.entries == 0;
        if !first && key::compare(&self.last_key, ikey) != Ordering::Less {
            return Err(Error::invalid(
                "SST builder: keys must be added in strictly increasing internal-key order",
            ));
        }

        if self.options.bloom_bits_per_key > 0
            && (first || key::user_key(&self.last_key) != parsed.user_key)
        {
            self.filter_hashes
                .push(filter::hash_user_key(parsed.user_key));
        }
        let p = &mut self.properties;
        if first {
            p.smallest = ikey.to_vec();
            p.seqno_min = parsed.seqno;
            p.seqno_max = parsed.seqno;
        }
        p.entries += 1;
        if parsed.kind == Kind::Delete {
            p.deletions += 1;
        }
        p.raw_key_bytes += ikey.len() as u64;
        p.raw_value_bytes += value.len() as u64;
        p.seqno_min = p.seqno_min.min(parsed.seqno);
        p.seqno_max = p.seqno_max.max(parsed.seqno);

        if let Some(handle) = self.pending_index.take() {
            let separator = shortest_separator(&self.last_key, ikey);
            self.add_index_entry(&separator, handle);
        }
        self.last_key.clear();
        self.last_key.extend_from_slice(ikey);
        self.data_block.add(ikey, value);
        if self.data_block.size_estimate() >= self.options.block_size {
            self.flush_data_block()?;
        }
        Ok(())
    }

    /// Writes the current data block. Its index entry is added when the
    /// next key arrives (or at `finish`).
    fn flush_data_block(&mut self) -> Result<()> {
        if self.data_block.is_empty() {
            return Ok(());
        }
        let raw = self.data_block.finish();
        let handle = self.write_block(&raw, self.compression)?;
        self.pending_index = Some(handle);
        self.properties.data_blocks += 1;
        Ok(())
    }

    fn add_index_entry(&mut self, separator: &[u8], handle: BlockHandle) {
        let mut encoded = Vec::with_capacity(format::BLOCK_HANDLE_BYTES_MAX);
        handle.encode_to(&mut encoded);
        self.index_block.add(separator, &encoded);
    }

    /// Writes a block (compressed if `kind` asks and it pays) and its trailer.
    fn write_block(&mut self, raw: &[u8], kind: CompressionType) -> Result<BlockHandle> {
        let (stored, used) = format::compress_block(raw, kind);
        let trailer = format::block_trailer(&stored, used);
        let handle = BlockHandle {
            offset: self.offset,
            size: stored.len() as u64,
        };
        self.append(&stored)?;
        self.append(&trailer)?;
        Ok(handle)
    }

    fn append(&mut self, bytes: &[u8]) -> Result<()> {
        if let Err(e) = self.file.append(bytes) {
            self.failed = Some(e.duplicate());
            return Err(e);
        }
        self.offset += bytes.len() as u64;
        Ok(())
    }

    /// Bytes written so far plus the pending block (an estimate of the file size).
    pub(crate) fn estimated_size(&self) -> u64 {
        self.offset + self.data_block.size_estimate() as u64
    }

    /// Entries added so far.
    #[cfg(test)]
    pub(crate) fn entries(&self) -> u64 {
        self.properties.entries
    }

    /// Writes filter, index, properties and footer, and syncs the file.
    pub(crate) fn finish(mut self) -> Result<SstInfo> {
        self.check()?;
        self.flush_data_block()?;
        if let Some(handle) = self.pending_index.take() {
            // The last block's index key is its last key: nothing follows.
            let last = std::mem::take(&mut self.last_key);
            self.add_index_entry(&last, handle);
            self.last_key = last;
        }
        let mut footer = Footer::default();
        if self.options.bloom_bits_per_key > 0 {
            let block = filter::build(&self.filter_hashes, self.options.bloom_bits_per_key);
            footer.filter = self.write_block(&block, CompressionType::None)?;
        }
        self.properties.largest = self.last_key.clone();
        let props = self.properties.encode();
        footer.properties = self.write_block(&props, CompressionType::None)?;
        let index = self.index_block.finish();
        footer.index = self.write_block(&index, CompressionType::None)?;
        self.append(&footer.encode())?;
        self.file.sync()?;
        let p = self.properties;
        Ok(SstInfo {
            file_size: self.offset,
            entries: p.entries,
            smallest: p.smallest,
            largest: p.largest,
            seqno_min: p.seqno_min,
            seqno_max: p.seqno_max,
        })
    }
}

/// An internal key `k` with `last <= k < next`, as short as this cheap rule
/// finds: if the user keys differ at byte `i` and `last`'s byte there can be
/// raised by one and stay below `next`'s, the separator is that shortened
/// user key with the largest trailer (which sorts first among its versions).
/// Otherwise `last` itself.
pub(crate) fn shortest_separator(last: &[u8], next: &[u8]) -> Vec<u8> {
    let (a, b) = (key::user_key(last), key::user_key(next));
    let i = a.iter().zip(b.iter()).take_while(|(x, y)| x == y).count();
    if let (Some(&x), Some(&y)) = (a.get(i), b.get(i)) {
        if x < 0xFF && x + 1 < y {
            let mut user = a.get(..i).unwrap_or_default().to_vec();
            user.push(x + 1);
            if user.len() < a.len() {
                let sep = key::internal_key(&user, key::SEQNO_MAX, key::KIND_SEEK);
                debug_assert!(key::compare(last, &sep) == Ordering::Less);
                debug_assert!(key::compare(&sep, next) == Ordering::Less);
                return sep;
            }
        }
    }
    last.to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mvcc::key::internal_key;

    #[test]
    fn separator_is_shorter_when_it_can_be_and_always_separates() {
        let k = |u: &[u8], s| internal_key(u, s, Kind::Put);
        let sep = shortest_separator(&k(b"abcdef", 5), &k(b"abzzz", 9));
        assert_eq!(key::user_key(&sep), b"abd");
        for (a, b) in [
            (k(b"abc", 5), k(b"abd", 9)), // adjacent bytes: no room
            (k(b"ab", 5), k(b"abc", 9)),  // prefix
            (k(b"abc", 5), k(b"abc", 4)), // same user key
            (k(b"a\xff", 5), k(b"b", 4)), // 0xFF cannot be raised
            (k(b"", 5), k(b"x", 4)),      // empty user key
            (k(b"b", 5), k(b"d", 4)),     // not shorter than last
        ] {
            let sep = shortest_separator(&a, &b);
            assert!(key::compare(&a, &sep).is_le(), "{a:?} {sep:?}");
            assert!(key::compare(&sep, &b).is_lt(), "{sep:?} {b:?}");
            assert!(sep.len() <= a.len());
        }
    }
}
