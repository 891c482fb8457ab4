//! Blocks: sorted runs of key/value entries with prefix-compressed keys, the
//! unit of SST I/O and caching. Data blocks and the index block share this
//! format; keys are internal keys ordered by `key::compare`.
//!
//! Byte layout (docs/format.md#sst, LevelDB's block format):
//! ```text
//! block   := entry* restart* num_restarts:u32
//! entry   := shared:varint32 non_shared:varint32 value_len:varint32
//!            key_delta[non_shared] value[value_len]
//! restart := u32 offset of an entry whose `shared` is 0 (every 8th entry of a data block)
//! ```
//! `Block::new` checks the restart array once; the iterator checks every
//! entry as it decodes it and turns bad bytes into a sticky error, so a
//! damaged block never causes a panic or a read out of bounds.
//!
//! Thread-safety: a `Block` is immutable and shared (through the cache) by
//! many iterators; a `BlockIter` has one owner.
#![deny(clippy::indexing_slicing)]

use std::cmp::Ordering;
use std::path::Path;
use std::sync::Arc;

use super::format::RESTART_INTERVAL;
use crate::encoding::{self, Decoder};
use crate::error::{Error, Result};
use crate::fs::RandomAccessFile;
use crate::mvcc::key;
use crate::prefetch::prefetch;

/// A search over at most this many restart points prefetches all their
/// entries first.
const PREFETCH_RESTARTS: usize = 16;

/// How many leading bytes `a` and `b` share.
fn shared_prefix_len(a: &[u8], b: &[u8]) -> usize {
    key::compare_bytes_shared(a, b).1
}

/// Builds one block from entries added in strictly increasing key order.
#[derive(Debug)]
pub(crate) struct BlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    /// Entries between restart points.
    restart_interval: usize,
    /// Entries since the last restart point.
    counter: usize,
    last_key: Vec<u8>,
    entries: usize,
}

impl BlockBuilder {
    /// A data block's builder (a restart point every `RESTART_INTERVAL`
    /// entries).
    pub(crate) fn new() -> BlockBuilder {
        BlockBuilder::with_restart_interval(RESTART_INTERVAL)
    }

    /// A builder with a restart point every `interval` entries (at least 1).
    pub(crate) fn with_restart_interval(interval: usize) -> BlockBuilder {
        BlockBuilder {
            buf: Vec::new(),
            restarts: vec![0],
            restart_interval: interval.max(1),
            counter: 0,
            last_key: Vec::new(),
            entries: 0,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// The size of the block if it were finished now.
    pub(crate) fn size_estimate(&self) -> usize {
        self.buf.len() + 4 * self.restarts.len() + 4
    }

    pub(crate) fn add(&mut self, key: &[u8], value: &[u8]) {
        let shared = if self.counter < self.restart_interval {
            shared_prefix_len(key, &self.last_key)
        } else {
            self.restarts.push(self.buf.len() as u32);
            self.counter = 0;
            0
        };
        let delta = key.get(shared..).unwrap_or_default();
        encoding::put_varint32(&mut self.buf, shared as u32);
        encoding::put_varint32(&mut self.buf, delta.len() as u32);
        encoding::put_varint32(&mut self.buf, value.len() as u32);
        self.buf.extend_from_slice(delta);
        self.buf.extend_from_slice(value);
        self.last_key.clear();
        self.last_key.extend_from_slice(key);
        self.counter += 1;
        self.entries += 1;
    }

    /// Appends the restart array and returns the block, leaving the builder
    /// empty and ready for the next block.
    pub(crate) fn finish(&mut self) -> Vec<u8> {
        let mut out = std::mem::take(&mut self.buf);
        for &r in &self.restarts {
            encoding::put_u32(&mut out, r);
        }
        encoding::put_u32(&mut out, self.restarts.len() as u32);
        self.restarts.clear();
        self.restarts.push(0);
        self.counter = 0;
        self.last_key.clear();
        self.entries = 0;
        out
    }
}

/// A decoded block's bytes with its restart array located and checked.
#[derive(Debug)]
pub(crate) struct Block {
    data: Bytes,
    /// Where the restart array begins (= end of the entries).
    restarts_offset: usize,
    num_restarts: usize,
    /// Offset of the stored block in its file.
    file_offset: u64,
    /// True when the stored bytes were compressed: offsets inside `data`
    /// then do not map to file offsets, and errors name the block's start.
    compressed: bool,
    /// Key heads of a block whose every entry is a restart point (an index
    /// block), built by `build_heads`: a seek searches them first.
    heads: Option<Heads>,
}

impl Drop for Block {
    /// Bytes of its own go to this thread's spare buffers, for its next
    /// block read.
    fn drop(&mut self) {
        if let Bytes::Owned(data) = &mut self.data {
            super::spare::give(std::mem::take(data));
        }
    }
}

/// Where a block's bytes are: its own buffer, or in place in its file's
/// read-only memory map (`Options::mmap_reads`), which the block keeps
/// mapped by holding the file.
pub(crate) enum Bytes {
    Owned(Vec<u8>),
    Mapped {
        at: *const u8,
        len: usize,
        _file: Arc<dyn RandomAccessFile>,
    },
}

// SAFETY: a mapped block points into a read-only mapping that nothing
// writes and that lives while `_file` (an `Arc` the block holds) does;
// reading it from any thread is reading immutable memory.
unsafe impl Send for Bytes {}
// SAFETY: as for `Send`.
unsafe impl Sync for Bytes {}

impl Bytes {
    /// `bytes`, which lie in `file`'s memory map (`RandomAccessFile::mapped`),
    /// in place.
    pub(crate) fn mapped(bytes: &[u8], file: &Arc<dyn RandomAccessFile>) -> Bytes {
        Bytes::Mapped {
            at: bytes.as_ptr(),
            len: bytes.len(),
            _file: Arc::clone(file),
        }
    }
}

impl std::ops::Deref for Bytes {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Owned(v) => v,
            // SAFETY: see `Send`: `len` bytes at `at` stay mapped and
            // unchanged while `self` holds the file.
            Bytes::Mapped { at, len, .. } => unsafe { std::slice::from_raw_parts(*at, *len) },
        }
    }
}

impl std::fmt::Debug for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Bytes::Owned(v) => write!(f, "{} bytes", v.len()),
            Bytes::Mapped { len, .. } => write!(f, "{len} bytes in a map"),
        }
    }
}

/// An in-memory search aid for a block whose every entry is a restart
/// point: the user keys' common prefix, and for each entry the eight bytes
/// of its user key after that prefix (zero-padded, big-endian). A seek
/// binary-searches the heads, one contiguous array, and decodes entries only
/// where heads tie, instead of two scattered loads (restart offset, entry)
/// at every step. Heads never decide alone: `head(a) < head(b)` implies
/// `a < b` for keys that share the prefix, and ties are compared whole.
#[derive(Debug)]
struct Heads {
    prefix: Vec<u8>,
    heads: Vec<u64>,
}

impl Heads {
    fn head(prefix_len: usize, user_key: &[u8]) -> u64 {
        let mut window = [0u8; 8];
        let rest = user_key.get(prefix_len..).unwrap_or_default();
        let n = rest.len().min(8);
        if let (Some(w), Some(r)) = (window.get_mut(..n), rest.get(..n)) {
            w.copy_from_slice(r);
        }
        u64::from_be_bytes(window)
    }

    /// The entries `target`'s position lies among: every entry before the
    /// range is below it, every entry from its end on above it.
    fn range(&self, target_user_key: &[u8]) -> (usize, usize) {
        let n = self.heads.len();
        let p = self.prefix.len();
        let shown = target_user_key.get(..p).unwrap_or(target_user_key);
        match key::compare_bytes(shown, self.prefix.get(..shown.len()).unwrap_or_default()) {
            Ordering::Less => return (0, 0),
            Ordering::Greater => return (n, n),
            // A proper prefix of the common prefix is below every key.
            Ordering::Equal if shown.len() < p => return (0, 0),
            Ordering::Equal => {}
        }
        let h = Heads::head(p, target_user_key);
        let lo = self.heads.partition_point(|&x| x < h);
        let hi = lo
            + self
                .heads
                .get(lo..)
                .unwrap_or_default()
                .partition_point(|&x| x <= h);
        (lo, hi)
    }
}

/// A block is cached as is: always clean, evictable even while a reader
/// holds it (the reader's `Arc` keeps it alive).
impl crate::cache::Entry for Block {}

impl Block {
    /// Checks the restart array of `data`, the contents of the block stored
    /// at `file_offset` in `file`.
    pub(crate) fn new(
        data: Vec<u8>,
        file: &Path,
        file_offset: u64,
        compressed: bool,
    ) -> Result<Block> {
        Block::of(Bytes::Owned(data), file, file_offset, compressed)
    }

    /// `new`, of bytes owned or mapped.
    pub(crate) fn of(
        data: Bytes,
        file: &Path,
        file_offset: u64,
        compressed: bool,
    ) -> Result<Block> {
        let mut block = Block {
            data,
            restarts_offset: 0,
            num_restarts: 0,
            file_offset,
            compressed,
            heads: None,
        };
        let len = block.data.len();
        let bad = |block: &Block, pos: usize, what: &str| Err(block.corruption(file, pos, what));
        let Some(count_at) = len.checked_sub(4) else {
            return bad(&block, 0, "block shorter than its restart count");
        };
        let num = encoding::get_u32_at(&block.data, count_at).unwrap_or(0) as usize;
        let restarts_offset = num
            .checked_mul(4)
            .and_then(|bytes| count_at.checked_sub(bytes));
        let Some(restarts_offset) = restarts_offset else {
            return bad(&block, count_at, "restart count larger than the block");
        };
        if num == 0 {
            return bad(&block, count_at, "block has no restart points");
        }
        block.restarts_offset = restarts_offset;
        block.num_restarts = num;
        let mut previous = None;
        for i in 0..num {
            let r = block.restart_point(i);
            let ok = match previous {
                None => r == 0,
                Some(p) => r > p && r < restarts_offset,
            };
            if !ok {
                return bad(
                    &block,
                    restarts_offset + 4 * i,
                    "restart points out of order",
                );
            }
            previous = Some(r);
        }
        Ok(block)
    }

    /// Whether its bytes are in place in a memory map.
    pub(crate) fn is_mapped(&self) -> bool {
        matches!(self.data, Bytes::Mapped { .. })
    }

    /// Bytes of the decoded block (its cache charge).
    pub(crate) fn size(&self) -> usize {
        self.data.len()
    }

    /// Builds the key heads (`Heads`) if every entry is a restart point and
    /// decodes cleanly; otherwise seeks go on without them (and report the
    /// damage when they meet it).
    pub(crate) fn build_heads(&mut self) {
        let mut keys: Vec<&[u8]> = Vec::with_capacity(self.num_restarts);
        for i in 0..self.num_restarts {
            let next = if i + 1 < self.num_restarts {
                self.restart_point(i + 1)
            } else {
                self.restarts_offset
            };
            let Ok(entry) = self.restart_entry(i) else {
                return;
            };
            if entry.end != next {
                return;
            }
            keys.push(key::user_key(self.key_of(&entry)));
        }
        let (Some(first), Some(last)) = (keys.first(), keys.last()) else {
            return;
        };
        let p = shared_prefix_len(first, last);
        let prefix = first.get(..p).unwrap_or_default().to_vec();
        let heads = keys.iter().map(|k| Heads::head(p, k)).collect();
        self.heads = Some(Heads { prefix, heads });
    }

    fn restart_point(&self, i: usize) -> usize {
        let at = self.restarts_offset + 4 * i;
        encoding::get_u32_at(&self.data, at).unwrap_or(0) as usize
    }

    /// The corruption error for bad bytes at `pos` inside this block.
    pub(crate) fn corruption(&self, file: &Path, pos: usize, what: &str) -> Error {
        let offset = if self.compressed {
            self.file_offset
        } else {
            self.file_offset + pos as u64
        };
        Error::corruption(
            file,
            offset,
            format!(
                "{what} (byte {pos} of the {}block at offset {})",
                if self.compressed { "decompressed " } else { "" },
                self.file_offset
            ),
        )
    }

    /// Decodes the entry header at `pos`: (shared, key delta range, value
    /// range, end of entry).
    #[inline]
    fn decode_entry(&self, pos: usize) -> Result<Entry, (usize, &'static str)> {
        let region = self
            .data
            .get(pos..self.restarts_offset)
            .ok_or((pos, "entry offset past the entries"))?;
        // The common case, as in LevelDB: the three lengths are below 128,
        // one byte each.
        if let Some(&[shared, non_shared, value_len]) = region.get(..3) {
            if (shared | non_shared | value_len) < 0x80 {
                let key_start = pos + 3;
                let value_start = key_start + usize::from(non_shared);
                let end = value_start + usize::from(value_len);
                if end > self.restarts_offset {
                    return Err(self.entry_overrun(pos, region));
                }
                return Ok(Entry {
                    shared: usize::from(shared),
                    key_start,
                    value_start,
                    end,
                });
            }
        }
        self.decode_entry_slow(pos, region)
    }

    /// The first restart point in `lo..hi` whose key is not below `target`
    /// (`hi` if none), by binary search; adds the keys compared.
    fn first_restart_not_below(
        &self,
        mut lo: usize,
        mut hi: usize,
        target: &[u8],
        compared: &mut u64,
    ) -> Result<usize, (usize, &'static str)> {
        // A data block has a few restart points (a 4 KiB block of 100-byte
        // values about five): start loading each probe's entry at once.
        if hi.saturating_sub(lo) <= PREFETCH_RESTARTS {
            for i in lo..hi {
                prefetch(self.data.get(self.restart_point(i)..).unwrap_or_default());
            }
        }
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            *compared += 1;
            if key::compare(self.restart_key(mid)?, target) == Ordering::Less {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(lo)
    }

    /// The whole key stored at restart point `i`.
    fn restart_key(&self, i: usize) -> Result<&[u8], (usize, &'static str)> {
        self.restart_entry(i).map(|e| self.key_of(&e))
    }

    /// The entry at restart point `i`, which must store its whole key.
    fn restart_entry(&self, i: usize) -> Result<Entry, (usize, &'static str)> {
        let pos = self.restart_point(i);
        let entry = self.decode_entry(pos)?;
        if entry.shared != 0 {
            return Err((pos, "entry at a restart point shares key bytes"));
        }
        Ok(entry)
    }

    /// The key bytes an entry stores (whole at a restart point, else the
    /// delta after its shared prefix).
    fn key_of(&self, e: &Entry) -> &[u8] {
        self.data
            .get(e.key_start..e.value_start)
            .unwrap_or_default()
    }

    /// `decode_entry` for any lengths, and the error of a damaged header.
    #[cold]
    fn decode_entry_slow(&self, pos: usize, region: &[u8]) -> Result<Entry, (usize, &'static str)> {
        let mut d = Decoder::new(region);
        let err = |e: encoding::DecodeError| (pos + e.offset, e.what);
        let shared = d.varint32().map_err(err)? as usize;
        let non_shared = d.varint32().map_err(err)? as usize;
        let value_len = d.varint32().map_err(err)? as usize;
        let key_start = pos + d.pos();
        d.bytes(non_shared, "key runs past the entries")
            .map_err(err)?;
        let value_start = pos + d.pos();
        d.bytes(value_len, "value runs past the entries")
            .map_err(err)?;
        Ok(Entry {
            shared,
            key_start,
            value_start,
            end: pos + d.pos(),
        })
    }

    /// The error for an entry whose one-byte lengths run past the entries:
    /// the slow path names which part does.
    #[cold]
    fn entry_overrun(&self, pos: usize, region: &[u8]) -> (usize, &'static str) {
        match self.decode_entry_slow(pos, region) {
            Err(e) => e,
            Ok(_) => (pos, "entry runs past the entries"),
        }
    }
}

struct Entry {
    shared: usize,
    key_start: usize,
    value_start: usize,
    end: usize,
}

/// Walks one block in both directions.
#[derive(Debug)]
pub(crate) struct BlockIter {
    block: Arc<Block>,
    /// Offset of the current entry; `restarts_offset` when invalid.
    current: usize,
    /// Offset just past the current entry (where `next` decodes).
    next_offset: usize,
    /// The restart point at or before `current`.
    restart_index: usize,
    key: Vec<u8>,
    value: (usize, usize),
    /// Position and description of the first bad bytes met.
    err: Option<(usize, &'static str)>,
}

impl BlockIter {
    pub(crate) fn new(block: Arc<Block>) -> BlockIter {
        let end = block.restarts_offset;
        BlockIter {
            block,
            current: end,
            next_offset: end,
            restart_index: 0,
            key: Vec::new(),
            value: (0, 0),
            err: None,
        }
    }

    pub(crate) fn valid(&self) -> bool {
        self.err.is_none() && self.current < self.block.restarts_offset
    }

    pub(crate) fn key(&self) -> &[u8] {
        &self.key
    }

    pub(crate) fn value(&self) -> &[u8] {
        self.block
            .data
            .get(self.value.0..self.value.1)
            .unwrap_or_default()
    }

    /// The error for the bad bytes met, if any.
    pub(crate) fn error(&self, file: &Path) -> Option<Error> {
        self.err
            .map(|(pos, what)| self.block.corruption(file, pos, what))
    }

    fn invalidate(&mut self) {
        self.current = self.block.restarts_offset;
        self.next_offset = self.block.restarts_offset;
        self.key.clear();
    }

    fn fail(&mut self, err: (usize, &'static str)) {
        self.err = Some(err);
        self.invalidate();
    }

    fn seek_to_restart(&mut self, i: usize) {
        self.key.clear();
        self.restart_index = i;
        self.next_offset = self.block.restart_point(i);
        self.current = self.block.restarts_offset;
    }

    /// Decodes the entry at `next_offset`; false at the end or on bad bytes.
    fn parse_next(&mut self) -> bool {
        if self.err.is_some() {
            return false;
        }
        let pos = self.next_offset;
        if pos >= self.block.restarts_offset {
            self.invalidate();
            return false;
        }
        let entry = match self.block.decode_entry(pos) {
            Ok(e) => e,
            Err(e) => {
                self.fail(e);
                return false;
            }
        };
        if entry.shared > self.key.len() {
            self.fail((pos, "entry shares more bytes than the previous key has"));
            return false;
        }
        self.key.truncate(entry.shared);
        self.key.extend_from_slice(self.block.key_of(&entry));
        self.value = (entry.value_start, entry.end);
        self.current = pos;
        self.next_offset = entry.end;
        while self.restart_index + 1 < self.block.num_restarts
            && self.block.restart_point(self.restart_index + 1) <= pos
        {
            self.restart_index += 1;
        }
        true
    }

    pub(crate) fn seek_to_first(&mut self) {
        if self.err.is_some() {
            return;
        }
        self.seek_to_restart(0);
        self.parse_next();
    }

    pub(crate) fn seek_to_last(&mut self) {
        if self.err.is_some() {
            return;
        }
        self.seek_to_restart(self.block.num_restarts.saturating_sub(1));
        while self.parse_next() && self.next_offset < self.block.restarts_offset {}
    }

    pub(crate) fn next(&mut self) {
        if self.valid() {
            self.parse_next();
        }
    }

    pub(crate) fn prev(&mut self) {
        if !self.valid() {
            return;
        }
        let original = self.current;
        while self.block.restart_point(self.restart_index) >= original {
            if self.restart_index == 0 {
                self.invalidate();
                return;
            }
            self.restart_index -= 1;
        }
        self.seek_to_restart(self.restart_index);
        while self.parse_next() && self.next_offset < original {}
    }

    /// Positions on the first entry whose key is >= `target`. Returns the
    /// number of keys compared (for the thread's `ReadContext`; the caller
    /// adds it up, so that this loop touches no thread-local).
    pub(crate) fn seek(&mut self, target: &[u8]) -> u64 {
        let mut compared = 0;
        if self.err.is_some() {
            return compared;
        }
        // With key heads (every entry a restart point) the answer lies in
        // the range they give. Without, the scan starts at the last restart
        // point below target, or at the first (which is never probed: in
        // an empty block it is the end of the entries).
        let (lo, hi) = match &self.block.heads {
            Some(heads) => heads.range(key::user_key(target)),
            None => (1, self.block.num_restarts),
        };
        let first = match self
            .block
            .first_restart_not_below(lo, hi, target, &mut compared)
        {
            Ok(i) => i,
            Err(e) => {
                self.fail(e);
                return compared;
            }
        };
        if self.block.heads.is_some() {
            if first >= self.block.num_restarts {
                self.invalidate();
            } else {
                self.seek_to_restart(first);
                self.parse_next();
            }
            return compared;
        }
        // The answer is after the last restart point below target: scan on
        // from there.
        let left = first.saturating_sub(1);
        // The scan reads on from the restart point: load its lines at once.
        let start = self.block.restart_point(left);
        let end = if left + 1 < self.block.num_restarts {
            self.block.restart_point(left + 1)
        } else {
            self.block.restarts_offset
        };
        for at in (start..end).step_by(64) {
            prefetch(self.block.data.get(at..).unwrap_or_default());
        }
        self.seek_to_restart(left);
        while self.parse_next() {
            compared += 1;
            if key::compare(&self.key, target) != Ordering::Less {
                break;
            }
        }
        compared
    }
}

#[cfg(test)]
mod tests {
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    use super::*;
    use crate::mvcc::key::{internal_key, Kind, KIND_SEEK};

    fn path() -> &'static Path {
        Path::new("block-test")
    }

    fn build(entries: &[(Vec<u8>, Vec<u8>)]) -> Arc<Block> {
        let mut b = BlockBuilder::new();
        for (k, v) in entries {
            b.add(k, v);
        }
        Arc::new(Block::new(b.finish(), path(), 0, false).expect("valid block"))
    }

    fn random_entries(rng: &mut SmallRng, n: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut keys: Vec<Vec<u8>> = (0..n)
            .map(|_| {
                let len = rng.gen_range(0..12);
                // A small alphabet so that keys share prefixes and repeat.
                let user: Vec<u8> = (0..len).map(|_| rng.gen_range(b'a'..b'e')).collect();
                internal_key(&user, rng.gen_range(0..1000), Kind::Put)
            })
            .collect();
        keys.sort_by(|a, b| key::compare(a, b));
        keys.dedup();
        keys.into_iter()
            .map(|k| {
                let len = rng.gen_range(0..20);
                let v = (0..len).map(|_| rng.gen()).collect();
                (k, v)
            })
            .collect()
    }

    #[test]
    fn random_block_round_trips_both_ways_and_seeks() {
        // Goal: every entry comes back in order forward and backward, and a
        // seek lands on the first key >= target, for blocks of many sizes.
        let mut rng = SmallRng::seed_from_u64(7);
        for n in [0, 1, 2, 15, 16, 17, 33, 200, 1000] {
            let entries = random_entries(&mut rng, n);
            let block = build(&entries);
            let mut it = BlockIter::new(Arc::clone(&block));

            let mut seen = Vec::new();
            it.seek_to_first();
            while it.valid() {
                seen.push((it.key().to_vec(), it.value().to_vec()));
                it.next();
            }
            assert_eq!(seen, entries);

            let mut seen = Vec::new();
            it.seek_to_last();
            while it.valid() {
                seen.push((it.key().to_vec(), it.value().to_vec()));
                it.prev();
            }
            seen.reverse();
            assert_eq!(seen, entries);
            assert!(it.error(path()).is_none());

            for (i, (k, v)) in entries.iter().enumerate() {
                it.seek(k);
                assert!(it.valid());
                assert_eq!((it.key(), it.value()), (k.as_slice(), v.as_slice()));
                // The key just after k (bigger trailer order = smaller seqno)
                // lands on the next entry.
                let mut after = k.clone();
                after.push(0);
                it.seek(&after);
                match entries
                    .iter()
                    .skip(i)
                    .find(|(e, _)| key::compare(e, &after).is_ge())
                {
                    Some((e, _)) => assert_eq!(it.key(), e.as_slice()),
                    None => assert!(!it.valid()),
                }
            }
            for _ in 0..50 {
                let user: Vec<u8> = (0..rng.gen_range(0..12))
                    .map(|_| rng.gen_range(b'a'..b'f'))
                    .collect();
                let target = internal_key(&user, rng.gen_range(0..1000), Kind::Put);
                it.seek(&target);
                match entries
                    .iter()
                    .find(|(e, _)| key::compare(e, &target).is_ge())
                {
                    Some((e, _)) => assert_eq!(it.key(), e.as_slice()),
                    None => assert!(!it.valid()),
                }
            }
        }
    }

    #[test]
    fn seek_counts_a_binary_search_and_one_restart_interval_of_comparisons() {
        // Goal: the count `seek` returns (for the ReadContext) is what the
        // search did: the binary search over restart points, then a scan of
        // at most one restart interval and the entry after it; never zero
        // on a block with entries. Method: every key, and a key past the
        // end, sought in blocks of several sizes.
        let mut rng = SmallRng::seed_from_u64(11);
        for n in [0, 1, 16, 17, 1000] {
            let entries = random_entries(&mut rng, n);
            let mut it = BlockIter::new(build(&entries));
            let restarts = entries.len().div_ceil(RESTART_INTERVAL).max(1);
            let binary_search = u64::from(restarts.next_power_of_two().trailing_zeros());
            let most = binary_search + RESTART_INTERVAL as u64 + 1;
            let past_end = internal_key(b"zz", 0, Kind::Put);
            for target in entries.iter().map(|(k, _)| k).chain([&past_end]) {
                let compared = it.seek(target);
                assert!(compared <= most, "{n} entries: {compared} > {most}");
                assert_eq!(compared == 0, entries.is_empty(), "{n} entries");
            }
        }
    }

    #[test]
    fn tiny_block_golden_bytes() {
        // Two entries sharing a prefix, then the restart array (one point).
        let mut b = BlockBuilder::new();
        b.add(b"apple", b"1");
        b.add(b"apply", b"22");
        assert_eq!(b.size_estimate(), 23);
        let bytes = b.finish();
        let expected: &[u8] = &[
            0, 5, 1, b'a', b'p', b'p', b'l', b'e', b'1', // "apple" -> "1"
            4, 1, 2, b'y', b'2', b'2', // shares "appl", adds "y" -> "22"
            0, 0, 0, 0, // restart[0] = 0
            1, 0, 0, 0, // one restart point
        ];
        assert_eq!(bytes, expected);
        assert!(b.is_empty());
    }

    #[test]
    fn restart_array_damage_is_corruption() {
        // Goal: a block whose restart array is impossible is refused up front.
        for bad in [
            vec![],
            vec![1, 0, 0],
            vec![0, 0, 0, 0],             // no restart points
            vec![0xFF, 0xFF, 0xFF, 0x7F], // more restarts than bytes
            vec![9, 0, 0, 0, 1, 0, 0, 0], // first restart not at 0
        ] {
            let err = Block::new(bad.clone(), path(), 100, false).expect_err("refused");
            assert!(err.is_corruption(), "{bad:?}: {err}");
        }
    }

    #[test]
    fn seeks_with_key_heads_land_where_seeks_without_them_do() {
        // Goal: an index-like block (a restart at every entry) with key
        // heads seeks to the same entry as without them, for targets that
        // share the keys' common prefix or not, shorter and longer ones,
        // and user keys with several versions.
        let mut rng = SmallRng::seed_from_u64(5);
        for round in 0..200 {
            let prefix: Vec<u8> = (0..rng.gen_range(0..12))
                .map(|_| rng.gen_range(b'a'..b'c'))
                .collect();
            let mut keys: Vec<Vec<u8>> = (0..rng.gen_range(1..60))
                .map(|_| {
                    let mut user = prefix.clone();
                    user.extend((0..rng.gen_range(0..14)).map(|_| rng.gen_range(b'a'..b'd')));
                    internal_key(&user, rng.gen_range(0..5), Kind::Put)
                })
                .collect();
            keys.sort_by(|a, b| key::compare(a, b));
            keys.dedup();
            let mut b = BlockBuilder::with_restart_interval(1);
            for k in &keys {
                b.add(k, b"v");
            }
            let raw = b.finish();
            let plain = Arc::new(Block::new(raw.clone(), path(), 0, false).expect("block"));
            let mut headed = Block::new(raw, path(), 0, false).expect("block");
            headed.build_heads();
            assert!(headed.heads.is_some(), "round {round}: no heads built");
            let headed = Arc::new(headed);
            for _ in 0..100 {
                let mut user: Vec<u8> = if rng.gen_bool(0.7) {
                    prefix.clone()
                } else {
                    Vec::new()
                };
                user.extend((0..rng.gen_range(0..16)).map(|_| rng.gen_range(b'`'..b'e')));
                let target = internal_key(&user, rng.gen_range(0..6), KIND_SEEK);
                let mut a = BlockIter::new(Arc::clone(&plain));
                let mut h = BlockIter::new(Arc::clone(&headed));
                a.seek(&target);
                h.seek(&target);
                assert_eq!(a.valid(), h.valid(), "round {round}, target {target:?}");
                if a.valid() {
                    assert_eq!(a.key(), h.key(), "round {round}, target {target:?}");
                    a.next();
                    h.next();
                    assert_eq!(a.valid(), h.valid());
                    if a.valid() {
                        assert_eq!(a.key(), h.key());
                    }
                }
            }
        }
    }

    #[test]
    fn the_one_byte_fast_path_decodes_as_the_varint_path_does() {
        // Goal: `decode_entry`'s fast path (three lengths below 128) gives
        // the same entry, or the same error, as the general varint path,
        // at every offset of valid and of damaged blocks.
        let mut rng = SmallRng::seed_from_u64(11);
        for round in 0..50 {
            let entries = random_entries(&mut rng, 40);
            let mut b = BlockBuilder::new();
            for (k, v) in &entries {
                b.add(k, v);
            }
            let mut raw = b.finish();
            if round % 2 == 1 {
                // Damage entry bytes (not the restart array).
                let entries_end = raw.len().saturating_sub(4 * 4);
                for _ in 0..3 {
                    let at = rng.gen_range(0..entries_end.max(1));
                    if let Some(byte) = raw.get_mut(at) {
                        *byte ^= rng.gen::<u8>() | 1;
                    }
                }
            }
            let Ok(block) = Block::new(raw, path(), 0, false) else {
                continue;
            };
            for pos in 0..block.restarts_offset {
                let region = block.data.get(pos..block.restarts_offset).expect("region");
                let fast = block
                    .decode_entry(pos)
                    .map(|e| (e.shared, e.key_start, e.value_start, e.end));
                let slow = block
                    .decode_entry_slow(pos, region)
                    .map(|e| (e.shared, e.key_start, e.value_start, e.end));
                assert_eq!(fast, slow, "round {round}, offset {pos}");
            }
        }
    }

    #[test]
    fn bad_entry_makes_the_iterator_fail_not_panic() {
        // Goal: an entry whose lengths run past the entries stops iteration
        // with an error naming the file offset.
        let mut raw = vec![0, 100, 1, b'k']; // non_shared 100 > what is there
        raw.extend_from_slice(&[0, 0, 0, 0, 1, 0, 0, 0]);
        let block = Arc::new(Block::new(raw, path(), 1000, false).expect("restarts ok"));
        let mut it = BlockIter::new(block);
        it.seek_to_first();
        assert!(!it.valid());
        match it.error(path()) {
            Some(Error::Corruption { offset, .. }) => assert_eq!(offset, 1003),
            other => panic!("expected corruption, got {other:?}"),
        }
    }
}
