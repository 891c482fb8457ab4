//! `Sst`: an open SST file, and `SstIter`, the two-level iterator over it.
//!
//! `Sst::open` reads the footer, then keeps the index block, the filter and
//! the properties in memory for the life of the `Sst`. Data blocks are read
//! on demand through the shared block cache, keyed by (file number, block
//! offset) and charged their decoded size; a block is checked (CRC32C) and
//! decompressed before it is cached, so the cache only holds good blocks.
//!
//! Every handle read from the file is checked against the file length before
//! it is used, so bad bytes give `Error::Corruption` naming the file and
//! offset, never an I/O error, a panic or an oversized allocation.
//!
//! Reads report their work to the thread's `ReadContext` once per operation
//! (a get, a seek, a block load), from counts kept in local variables.
//!
//! Thread-safety: `Sst` is immutable and shared (`Arc<Sst>`) by any number of
//! readers; each `SstIter` has one owner and holds an `Arc<Sst>`.
#![deny(clippy::indexing_slicing)]

use std::cmp::Ordering;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::block::{Block, BlockIter, Bytes};
use super::filter::BloomFilter;
use super::format::{
    self, BlockHandle, CompressionType, Footer, Properties, Unsealed, FOOTER_BYTES,
};
use super::spare;
use crate::cache::Cache;
use crate::encoding::Decoder;
use crate::error::{Error, Result};
use crate::fs::RandomAccessFile;
use crate::mvcc::iter::InternalIterator;
use crate::mvcc::key::{self, ParsedKey};
use crate::read_context::{self, ReadContext};

/// An open SST: footer, index and filter in memory, data blocks through the cache.
pub(crate) struct Sst {
    file: Arc<dyn RandomAccessFile>,
    path: PathBuf,
    file_number: u64,
    cache: Arc<Cache>,
    file_size: u64,
    footer: Footer,
    index: Arc<Block>,
    filter: Option<BloomFilter>,
    properties: Properties,
}

impl std::fmt::Debug for Sst {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sst")
            .field("path", &self.path)
            .field("file_number", &self.file_number)
            .field("file_size", &self.file_size)
            .field("footer", &self.footer)
            .field("properties", &self.properties)
            .finish_non_exhaustive()
    }
}

impl Sst {
    pub(crate) fn open(
        file: Arc<dyn RandomAccessFile>,
        file_number: u64,
        cache: Arc<Cache>,
    ) -> Result<Arc<Sst>> {
        let path = file.path().to_path_buf();
        let file_size = file.len();
        let Some(footer_at) = file_size.checked_sub(FOOTER_BYTES as u64) else {
            return Err(Error::corruption(
                &path,
                0,
                format!("file of {file_size} bytes is shorter than an SST footer ({FOOTER_BYTES} bytes)"),
            ));
        };
        let footer_bytes = file.read_at(footer_at, FOOTER_BYTES)?;
        let footer = Footer::decode(&footer_bytes, &path, footer_at)?;

        let read = |handle: BlockHandle| read_block(file.as_ref(), &path, footer_at, handle);
        let (props, _) = read(footer.properties)?;
        let properties = Properties::decode(&props, &path, footer.properties.offset)?;
        let (index, index_compressed) = read(footer.index)?;
        let mut index = Block::new(index, &path, footer.index.offset, index_compressed)?;
        index.build_heads();
        let index = Arc::new(index);
        let filter = if footer.filter.size == 0 {
            None
        } else {
            let (data, _) = read(footer.filter)?;
            Some(BloomFilter::new(data, &path, footer.filter.offset)?)
        };
        Ok(Arc::new(Sst {
            file,
            path,
            file_number,
            cache,
            file_size,
            footer,
            index,
            filter,
            properties,
        }))
    }

    pub(crate) fn properties(&self) -> &Properties {
        &self.properties
    }

    pub(crate) fn file_size(&self) -> u64 {
        self.file_size
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn footer(&self) -> &Footer {
        &self.footer
    }

    pub(crate) fn filter(&self) -> Option<&BloomFilter> {
        self.filter.as_ref()
    }

    /// An iterator over the index block: separator keys and block handles.
    pub(crate) fn index_iter(&self) -> BlockIter {
        BlockIter::new(Arc::clone(&self.index))
    }

    /// The data-block handle of the index entry `it` is on.
    pub(crate) fn decode_handle(&self, it: &BlockIter) -> Result<BlockHandle> {
        let mut d = Decoder::new(it.value());
        let handle = BlockHandle::decode_from(&mut d).map_err(|e| {
            Error::corruption(
                &self.path,
                self.footer.index.offset,
                format!("index entry: {}", e.what),
            )
        })?;
        Ok(handle)
    }

    fn footer_offset(&self) -> u64 {
        self.file_size - FOOTER_BYTES as u64
    }

    /// Reads and checks a data block without the cache. In a file read
    /// through a memory map, the block's trailer is checked in the map,
    /// and a block stored uncompressed is used in place (`Bytes::Mapped`,
    /// no copy); a compressed one is decompressed from there.
    pub(crate) fn read_data_block(&self, handle: BlockHandle) -> Result<Block> {
        if let Some(map) = self.file.mapped() {
            handle.check(&self.path, self.footer_offset(), handle.offset, "block")?;
            let len = handle.size as usize + format::BLOCK_TRAILER_BYTES;
            let at = handle.offset as usize;
            if let Some(stored) = map.get(at..at + len) {
                crate::prefetch::prefetch_all(stored);
                return match format::unseal_in_place(stored, &self.path, handle.offset)? {
                    Unsealed::InPlace(contents) => {
                        let data = Bytes::mapped(contents, &self.file);
                        Block::of(data, &self.path, handle.offset, false)
                    }
                    Unsealed::Decompressed(data) => {
                        Block::new(data, &self.path, handle.offset, true)
                    }
                };
            }
        }
        let (data, compressed) =
            read_block(self.file.as_ref(), &self.path, self.footer_offset(), handle)?;
        Block::new(data, &self.path, handle.offset, compressed)
    }

    /// The cache's key of the data block at `handle`.
    fn cache_key(&self, handle: BlockHandle) -> (u64, u64) {
        (self.file_number, handle.offset)
    }

    /// The data block at `handle` if the cache holds it, counted in
    /// `counts` as found there.
    fn cached_block(&self, handle: BlockHandle, counts: &mut ReadContext) -> Option<Arc<Block>> {
        let block = self.cache.get::<Block>(&self.cache_key(handle))?;
        counts.blocks_from_cache += 1;
        Some(block)
    }

    /// A data block for a scan that does not fill the cache, from the
    /// cache or from `ahead`, which reads further ahead while the scan
    /// reads blocks in order (for files read around the OS's page cache,
    /// which reads ahead for the others). Adds where it came from, and the
    /// bytes read, to `counts`.
    fn data_block_ahead(
        &self,
        handle: BlockHandle,
        ahead: &mut Readahead,
        counts: &mut ReadContext,
    ) -> Result<Arc<Block>> {
        if let Some(block) = self.cached_block(handle, counts) {
            return Ok(block);
        }
        let limit = self.footer_offset();
        handle.check(&self.path, limit, handle.offset, "block")?;
        let len = handle.size as usize + format::BLOCK_TRAILER_BYTES;
        let within = |a: &Readahead| {
            handle.offset >= a.offset
                && handle.offset + len as u64 <= a.offset + a.bytes.len() as u64
        };
        if !within(ahead) {
            // A read that follows the last reads twice as far (up to
            // `READAHEAD_BYTES`); any other reads the block alone, so
            // that a seek reads no more than it needs.
            let follows =
                !ahead.bytes.is_empty() && handle.offset == ahead.offset + ahead.bytes.len() as u64;
            let window = if follows {
                (ahead.bytes.len() as u64 * 2).clamp(READAHEAD_FIRST_BYTES, READAHEAD_BYTES)
            } else {
                0
            };
            let want = (len as u64).max(window).min(limit - handle.offset);
            self.file
                .read_into(handle.offset, want as usize, &mut ahead.bytes)?;
            ahead.offset = handle.offset;
            counts.bytes_read += want;
        }
        let at = (handle.offset - ahead.offset) as usize;
        // A spare buffer keeps the bytes of the block it held.
        let mut buf = spare::take(len);
        buf.clear();
        buf.extend_from_slice(ahead.bytes.get(at..at + len).unwrap_or_default());
        let (data, compressed) = unseal(buf, &self.path, handle)?;
        counts.blocks_from_storage += 1;
        Ok(Arc::new(Block::new(
            data,
            &self.path,
            handle.offset,
            compressed,
        )?))
    }

    /// A data block, from the cache or from the file (then cached if
    /// `fill`). Adds where it came from, and the bytes read, to `counts`.
    fn data_block(
        &self,
        handle: BlockHandle,
        fill: bool,
        counts: &mut ReadContext,
    ) -> Result<Arc<Block>> {
        if let Some(block) = self.cached_block(handle, counts) {
            return Ok(block);
        }
        let block = Arc::new(self.read_data_block(handle)?);
        counts.blocks_from_storage += 1;
        counts.bytes_read += handle.size + format::BLOCK_TRAILER_BYTES as u64;
        // A block used in place in the map is not cached (as LevelDB's): it
        // costs the cache nothing to read again but its checks.
        if fill && !block.is_mapped() {
            self.cache.insert(
                self.cache_key(handle),
                Arc::clone(&block),
                block.size() as u64,
            );
        }
        Ok(block)
    }

    /// The first entry whose internal key is >= `seek_key`, if its user key
    /// is `user_key`. Consults the bloom filter first. The thread's
    /// `ReadContext` counts the file as one tree searched.
    #[cfg(test)]
    pub(crate) fn get(
        &self,
        seek_key: &[u8],
        user_key: &[u8],
    ) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        let mut counts = ReadContext {
            trees_searched: 1,
            ..ReadContext::default()
        };
        let found = self.find_counted(seek_key, user_key, &mut counts, |k, v| {
            (k.to_vec(), v.to_vec())
        });
        read_context::add(&counts);
        found
    }

    /// `get`, handing the entry found (internal key and value) to `found`
    /// instead of copying it, and adding its work to `counts` (the caller
    /// counts the tree).
    pub(crate) fn find_counted<T>(
        &self,
        seek_key: &[u8],
        user_key: &[u8],
        counts: &mut ReadContext,
        found: impl FnOnce(&[u8], &[u8]) -> T,
    ) -> Result<Option<T>> {
        if let Some(filter) = &self.filter {
            counts.bloom_checks += 1;
            if !filter.may_contain(user_key) {
                counts.bloom_negatives += 1;
                return Ok(None);
            }
        }
        let mut index = self.index_iter();
        counts.keys_compared += index.seek(seek_key);
        // The first block whose separator is >= seek_key holds the answer;
        // the loop moves on only if that block ends before seek_key (which a
        // shortened separator could allow).
        while index.valid() {
            let handle = self.decode_handle(&index)?;
            let mut data = BlockIter::new(self.data_block(handle, true, counts)?);
            counts.keys_compared += data.seek(seek_key);
            if data.valid() {
                if key::user_key(data.key()) == user_key {
                    return Ok(Some(found(data.key(), data.value())));
                }
                return Ok(None);
            }
            if let Some(e) = data.error(&self.path) {
                return Err(e);
            }
            index.next();
        }
        match index.error(&self.path) {
            Some(e) => Err(e),
            None => Ok(None),
        }
    }

    /// An iterator whose blocks go into the cache: a user's cursor, which
    /// may come back to them.
    pub(crate) fn iter(self: &Arc<Self>) -> SstIter {
        self.iter_filling(true)
    }

    /// An iterator that reads blocks the cache does not hold without
    /// adding them to it: a compaction's input, read once and deleted
    /// after. Caching it would evict what readers use for blocks nobody
    /// reads again (and, with a compaction thread allocating them, spread
    /// the cache's memory over more of the allocator's per-thread arenas).
    pub(crate) fn scan_iter(self: &Arc<Self>) -> SstIter {
        self.iter_filling(false)
    }

    /// `iter` if `fill_cache`, else `scan_iter`.
    pub(crate) fn iter_filling(self: &Arc<Self>, fill_cache: bool) -> SstIter {
        SstIter {
            index: self.index_iter(),
            sst: Arc::clone(self),
            data: None,
            data_offset: None,
            status: None,
            fill_cache,
            readahead: (!fill_cache && self.file.bypasses_os_cache()).then(Readahead::default),
        }
    }

    /// Reads every data block (bypassing the cache) and checks checksums,
    /// that keys are well-formed internal keys in strictly increasing order
    /// within and across blocks, that each index key separates its block
    /// from the next, and that the counts match the properties. Returns the
    /// number of entries.
    pub(crate) fn verify(&self) -> Result<u64> {
        let mut entries = 0u64;
        let mut blocks = 0u64;
        let mut first: Option<Vec<u8>> = None;
        let mut last: Option<Vec<u8>> = None;
        let mut prev_index_key: Option<Vec<u8>> = None;
        let mut index = self.index_iter();
        index.seek_to_first();
        while index.valid() {
            let handle = self.decode_handle(&index)?;
            let corrupt = |detail: String| Error::corruption(&self.path, handle.offset, detail);
            let block = Arc::new(self.read_data_block(handle)?);
            blocks += 1;
            let mut it = BlockIter::new(block);
            it.seek_to_first();
            if !it.valid() && it.error(&self.path).is_none() {
                return Err(corrupt("data block has no entries".into()));
            }
            if let (true, Some(prev_index_key)) = (it.valid(), &prev_index_key) {
                if key::compare(prev_index_key, it.key()) != Ordering::Less {
                    return Err(corrupt(
                        "index key of the previous block is not below this block".into(),
                    ));
                }
            }
            while it.valid() {
                if ParsedKey::parse(it.key()).is_none() {
                    return Err(corrupt(format!("malformed internal key {:?}", it.key())));
                }
                if let Some(prev) = &last {
                    if key::compare(prev, it.key()) != Ordering::Less {
                        return Err(corrupt("keys out of order".into()));
                    }
                }
                if first.is_none() {
                    first = Some(it.key().to_vec());
                }
                last = Some(it.key().to_vec());
                entries += 1;
                it.next();
            }
            if let Some(e) = it.error(&self.path) {
                return Err(e);
            }
            if let Some(l) = &last {
                if key::compare(l, index.key()) == Ordering::Greater {
                    return Err(corrupt(
                        "index key is below the last key of its block".into(),
                    ));
                }
            }
            prev_index_key = Some(index.key().to_vec());
            index.next();
        }
        if let Some(e) = index.error(&self.path) {
            return Err(e);
        }
        let p = &self.properties;
        if entries != p.entries || blocks != p.data_blocks {
            return Err(Error::corruption(
                &self.path,
                self.footer.properties.offset,
                format!(
                    "properties say {} entries in {} blocks; the blocks hold {entries} in {blocks}",
                    p.entries, p.data_blocks
                ),
            ));
        }
        let wrong_bound = match (&first, &last) {
            (Some(f), Some(l)) => *f != p.smallest || *l != p.largest,
            _ => !p.smallest.is_empty() || !p.largest.is_empty(),
        };
        if wrong_bound {
            return Err(Error::corruption(
                &self.path,
                self.footer.properties.offset,
                "smallest or largest key in the properties differs from the blocks",
            ));
        }
        Ok(entries)
    }
}

/// Reads the block at `handle` (which must end before `limit`, the footer's
/// offset), checks its trailer and decompresses it. Returns the contents and
/// whether they were compressed.
fn read_block(
    file: &dyn RandomAccessFile,
    path: &Path,
    limit: u64,
    handle: BlockHandle,
) -> Result<(Vec<u8>, bool)> {
    handle.check(path, limit, handle.offset, "block")?;
    let len = handle.size as usize + format::BLOCK_TRAILER_BYTES;
    let mut buf = spare::take(len);
    file.read_into(handle.offset, len, &mut buf)?;
    unseal(buf, path, handle)
}

/// Checks the trailer of the block at `handle`, read into `buf`, and
/// decompresses it: its contents and whether they were compressed.
fn unseal(buf: Vec<u8>, path: &Path, handle: BlockHandle) -> Result<(Vec<u8>, bool)> {
    let compressed = buf
        .get(handle.size as usize)
        .is_some_and(|&t| t != CompressionType::None as u8);
    let data = format::unseal_block(buf, path, handle.offset)?;
    Ok((data, compressed))
}

/// The most a scan of a file read around the OS's page cache reads at
/// once (RocksDB reads compaction inputs 2 MiB at a time with direct
/// reads; 1 MiB already makes one transfer of 250 blocks of 4 KiB), and
/// its first read ahead, after two blocks read in order.
const READAHEAD_BYTES: u64 = 1 << 20;
const READAHEAD_FIRST_BYTES: u64 = 16 << 10;

/// A piece of a file read ahead by a scan: `bytes` from `offset`.
#[derive(Default)]
struct Readahead {
    offset: u64,
    bytes: Vec<u8>,
}

/// A two-level iterator: the index block picks the data block, a block
/// iterator walks it. An error is sticky: the iterator stays invalid and
/// `status` reports the error until it is dropped.
pub(crate) struct SstIter {
    sst: Arc<Sst>,
    index: BlockIter,
    data: Option<BlockIter>,
    /// Offset of the block `data` walks.
    data_offset: Option<u64>,
    status: Option<Error>,
    /// Whether blocks read from the file go into the cache.
    fill_cache: bool,
    /// A scan's own read-ahead, for a file read around the OS's page
    /// cache (`Sst::data_block_ahead`).
    readahead: Option<Readahead>,
}

impl SstIter {
    fn fail(&mut self, e: Error) {
        if self.status.is_none() {
            self.status = Some(e);
        }
        self.data = None;
        self.data_offset = None;
    }

    /// Points `data` at the block of the current index entry. A block load
    /// is one operation for the thread's `ReadContext`.
    fn init_data_block(&mut self) {
        let mut counts = ReadContext::default();
        self.init_data_block_counted(&mut counts);
        read_context::add(&counts);
    }

    /// `init_data_block`, adding a block load to `counts` if it had to load
    /// one.
    fn init_data_block_counted(&mut self, counts: &mut ReadContext) {
        if !self.index.valid() {
            if let Some(e) = self.index.error(self.sst.path()) {
                self.fail(e);
            }
            self.data = None;
            self.data_offset = None;
            return;
        }
        let handle = match self.sst.decode_handle(&self.index) {
            Ok(h) => h,
            Err(e) => return self.fail(e),
        };
        if self.data_offset == Some(handle.offset) && self.data.is_some() {
            return;
        }
        let block = match &mut self.readahead {
            Some(ahead) => self.sst.data_block_ahead(handle, ahead, counts),
            None => self.sst.data_block(handle, self.fill_cache, counts),
        };
        match block {
            Ok(block) => {
                self.data = Some(BlockIter::new(block));
                self.data_offset = Some(handle.offset);
            }
            Err(e) => self.fail(e),
        }
    }

    /// Checks the data iterator for an error; true if it is positioned.
    fn data_valid(&mut self) -> bool {
        let err = match &self.data {
            None => return false,
            Some(d) if d.valid() => return true,
            Some(d) => d.error(self.sst.path()),
        };
        if let Some(e) = err {
            self.fail(e);
        }
        false
    }

    /// Moves on to the next block while the data iterator is exhausted. It
    /// counts only when it loads a block, so that `next` within a block
    /// touches no thread-local.
    fn skip_empty_blocks_forward(&mut self) {
        while self.status.is_none() && !self.data_valid() {
            if self.status.is_some() || !self.index.valid() {
                self.data = None;
                return;
            }
            self.index.next();
            self.init_data_block();
            if let Some(d) = &mut self.data {
                d.seek_to_first();
            }
        }
    }

    /// As `skip_empty_blocks_forward`, backward.
    fn skip_empty_blocks_backward(&mut self) {
        while self.status.is_none() && !self.data_valid() {
            if self.status.is_some() || !self.index.valid() {
                self.data = None;
                return;
            }
            self.index.prev();
            self.init_data_block();
            if let Some(d) = &mut self.data {
                d.seek_to_last();
            }
        }
    }
}

impl InternalIterator for SstIter {
    fn valid(&self) -> bool {
        self.status.is_none() && self.data.as_ref().is_some_and(BlockIter::valid)
    }

    fn seek_to_first(&mut self) {
        if self.status.is_some() {
            return;
        }
        self.index.seek_to_first();
        self.init_data_block();
        if let Some(d) = &mut self.data {
            d.seek_to_first();
        }
        self.skip_empty_blocks_forward();
    }

    fn seek_to_last(&mut self) {
        if self.status.is_some() {
            return;
        }
        self.index.seek_to_last();
        self.init_data_block();
        if let Some(d) = &mut self.data {
            d.seek_to_last();
        }
        self.skip_empty_blocks_backward();
    }

    fn seek(&mut self, target: &[u8]) {
        if self.status.is_some() {
            return;
        }
        let mut counts = ReadContext {
            keys_compared: self.index.seek(target),
            ..ReadContext::default()
        };
        self.init_data_block_counted(&mut counts);
        if let Some(d) = &mut self.data {
            counts.keys_compared += d.seek(target);
        }
        read_context::add(&counts);
        self.skip_empty_blocks_forward();
    }

    fn next(&mut self) {
        if !self.valid() {
            return;
        }
        if let Some(d) = &mut self.data {
            d.next();
        }
        self.skip_empty_blocks_forward();
    }

    fn prev(&mut self) {
        if !self.valid() {
            return;
        }
        if let Some(d) = &mut self.data {
            d.prev();
        }
        self.skip_empty_blocks_backward();
    }

    fn key(&self) -> &[u8] {
        match &self.data {
            Some(d) if self.status.is_none() => d.key(),
            _ => &[],
        }
    }

    fn value(&self) -> &[u8] {
        match &self.data {
            Some(d) if self.status.is_none() => d.value(),
            _ => &[],
        }
    }

    fn status(&self) -> Result<()> {
        match &self.status {
            Some(e) => Err(e.duplicate()),
            None => Ok(()),
        }
    }
}
