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
use crate::lsm::key::{self, Kind, ParsedKey};

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
            index_block: BlockBuilder::new(),
            filter_hashes: Vec::new(),
            last_key: Vec::new(),
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
        self.last_key.clear();
        self.last_key.extend_from_slice(ikey);

        self.data_block.add(ikey, value);
        if self.data_block.size_estimate() >= self.options.block_size {
            self.flush_data_block()?;
        }
        Ok(())
    }

    /// Writes the pending data block and its index entry. The index key is
    /// the block's last key: >= every key in it, < every key after it.
    fn flush_data_block(&mut self) -> Result<()> {
        if self.data_block.is_empty() {
            return Ok(());
        }
        let raw = self.data_block.finish();
        let handle = self.write_block(&raw, self.compression)?;
        let mut encoded = Vec::with_capacity(format::BLOCK_HANDLE_BYTES_MAX);
        handle.encode_to(&mut encoded);
        self.index_block.add(&self.last_key, &encoded);
        self.properties.data_blocks += 1;
        Ok(())
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

    pub(crate) fn entries(&self) -> u64 {
        self.properties.entries
    }

    /// Writes filter, index, properties and footer, and syncs the file.
    pub(crate) fn finish(mut self) -> Result<SstInfo> {
        self.check()?;
        self.flush_data_block()?;
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
