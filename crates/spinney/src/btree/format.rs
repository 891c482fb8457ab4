//! The byte layouts of a B-tree file, as constants and pure encode/decode:
//! the header slots (the checkpoint record), the disk framing of a page,
//! the free map, the page header's sizes and kinds, and the cell sizes a
//! page must hold.
//!
//! Byte layout: docs/format.md#b-tree-file (the spec; keep it in step). The
//! slotted page image itself (cells, slots, heap) is read and built by
//! `page.rs`, whose constants are these.
//!
//! ```text
//! file       := header_slot_0 (page 0) header_slot_1 (page 1) page{2 ..}
//! disk page  := crc32c u32 | codec u8 | kind u8 | 0 u16 | stored_len u32 | payload
//! free_map   := (first u64 | pages u64)*
//! ```
//! A disk page's checksum covers the page number (so a page read from the
//! wrong place fails) and bytes 4.. up to the end of the payload. The
//! payload is the image, raw or compressed; a compressed page writes only
//! its used sectors.
//!
//! Everything here is pure: bytes in, values or a reason out (the caller
//! names the file and offset). Thread-safety: no state.
#![deny(clippy::indexing_slicing)]

use std::collections::BTreeMap;

use crate::encoding::{crc32c, crc32c2};
use crate::limits;
use crate::mvcc::key::{self, SEQNO_MAX};
use crate::options::Compression;

/// Pages 0 and 1 hold the two header slots; data pages start at 2.
pub(crate) const FIRST_DATA_PAGE: u64 = 2;
const HEADER_MAGIC: &[u8; 8] = b"SPNYBTR1";
/// 2: slots hold key heads, page headers a prefix length (1 had neither;
/// this build refuses its files).
pub(crate) const HEADER_VERSION: u32 = 2;
/// Bytes of a header slot.
pub(crate) const HEADER_BYTES: usize = 88;
/// Bytes of the checksummed part of a header slot (the checksum follows).
pub(crate) const HEADER_BODY_BYTES: usize = 72;

/// Bytes of the on-disk framing before the payload.
pub(crate) const DISK_HEADER: usize = 12;
/// Bytes of the image header.
pub(crate) const HEADER: usize = 16;
/// Bytes of a slot: a cell's offset and its key's head.
pub(crate) const SLOT: usize = 6;

/// The bytes of a page's start that whoever finds a page prefetches (the
/// store, `PREFETCH_IMAGE_LINES`): the header and the slots a search
/// probes first (`page::search` loads those past them).
pub(crate) const SLOTS_PREFETCHED: usize = 4 * 64;

// Page kinds, in the image's first byte. On disk: never renumber.
pub(crate) const KIND_LEAF: u8 = 1;
pub(crate) const KIND_BRANCH: u8 = 2;
pub(crate) const KIND_OVERFLOW: u8 = 3;
pub(crate) const KIND_FREE_MAP: u8 = 4;

// Page codecs, in the framing. On disk: never renumber.
const CODEC_NONE: u8 = 0;
const CODEC_LZ4: u8 = 1;
const CODEC_ZSTD: u8 = 2;

/// Compressed pages are written in whole sectors.
const SECTOR: usize = 512;

/// Bytes of one extent of the free map: first u64, pages u64.
pub(crate) const FREE_EXTENT_BYTES: usize = 16;

// The largest user key (`limits::btree_key_bytes_max`) fits a leaf cell
// of `max_cell_len` holding a value in overflow pages: a key length u16,
// the key and its seqno trailer, the value's length u32, its first
// overflow page u64 and page count u32 (`page::leaf_cell`), and the slot.
const _: () = assert!(limits::BTREE_PAGE_HEADER_BYTES == DISK_HEADER + HEADER);
const _: () =
    assert!(limits::BTREE_CELL_OVERHEAD_BYTES == SLOT + 2 + 4 + 8 + 4 + key::TRAILER_BYTES);

// The page header's fields, read and written in place (the slotted page
// built on them: `page.rs`). Images are checked by `page::check_structure`
// when read, and built only through these and `page.rs`, so reads stay in
// bounds; they return zeros rather than panic if they ever do not.

#[inline]
pub(crate) fn u16_at(b: &[u8], at: usize) -> usize {
    b.get(at..at + 2)
        .and_then(|s| s.try_into().ok())
        .map_or(0, |a| u16::from_le_bytes(a) as usize)
}

#[inline]
pub(crate) fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u32::from_le_bytes)
}

#[inline]
pub(crate) fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

#[inline]
pub(crate) fn put_u16(b: &mut [u8], at: usize, v: usize) {
    if let Some(s) = b.get_mut(at..at + 2) {
        s.copy_from_slice(&(v as u16).to_le_bytes());
    }
}

#[inline]
pub(crate) fn put_u64(b: &mut [u8], at: usize, v: u64) {
    if let Some(s) = b.get_mut(at..at + 8) {
        s.copy_from_slice(&v.to_le_bytes());
    }
}

#[inline]
pub(crate) fn kind(p: &[u8]) -> u8 {
    p.first().copied().unwrap_or(0)
}

#[inline]
pub(crate) fn link(p: &[u8]) -> u64 {
    u64_at(p, 8)
}

#[inline]
pub(crate) fn set_link(p: &mut [u8], v: u64) {
    put_u64(p, 8, v);
}

/// Makes `p` an empty page of `kind`.
pub(crate) fn init(p: &mut [u8], kind: u8, link: u64) {
    p.fill(0);
    init_header(p, kind, link);
}

/// Writes the header of an empty page of `kind` (no cells, the heap at the
/// end), leaving the rest of `p` as it is.
#[inline]
pub(crate) fn init_header(p: &mut [u8], kind: u8, link: u64) {
    if let Some(h) = p.get_mut(..HEADER) {
        h.fill(0);
    }
    if let Some(k) = p.first_mut() {
        *k = kind;
    }
    let len = p.len();
    put_u16(p, 4, len);
    set_link(p, link);
}

pub(crate) fn max_cell_len(page_size: usize) -> usize {
    (page_size - DISK_HEADER - HEADER) / 4 - SLOT
}

/// The durable state a header slot records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Checkpoint {
    pub generation: u64,
    pub root: u64,
    pub height: u32,
    pub page_count: u64,
    pub free_map_first: u64,
    pub free_map_pages: u32,
    pub free_map_len: u32,
    /// Every log entry up to this seqno is in the image.
    pub seqno: u64,
}

impl Checkpoint {
    /// A valid header's fields, for tests and the fuzz targets' seeds.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn sample() -> Checkpoint {
        Checkpoint {
            generation: 7,
            root: 5,
            height: 2,
            page_count: 10,
            free_map_first: 8,
            free_map_pages: 1,
            free_map_len: 32,
            seqno: 99,
        }
    }

    /// Encodes a header slot: `HEADER_BYTES` bytes, zero after the checksum.
    pub(crate) fn encode(&self, page_size: usize, table_id: u32) -> Vec<u8> {
        let mut b = Vec::with_capacity(HEADER_BYTES);
        b.extend_from_slice(HEADER_MAGIC);
        b.extend_from_slice(&HEADER_VERSION.to_le_bytes());
        b.extend_from_slice(&(page_size as u32).to_le_bytes());
        b.extend_from_slice(&table_id.to_le_bytes());
        b.extend_from_slice(&self.generation.to_le_bytes());
        b.extend_from_slice(&self.root.to_le_bytes());
        b.extend_from_slice(&self.height.to_le_bytes());
        b.extend_from_slice(&self.page_count.to_le_bytes());
        b.extend_from_slice(&self.free_map_first.to_le_bytes());
        b.extend_from_slice(&self.free_map_pages.to_le_bytes());
        b.extend_from_slice(&self.free_map_len.to_le_bytes());
        b.extend_from_slice(&self.seqno.to_le_bytes());
        let crc = crc32c(&b);
        b.extend_from_slice(&crc.to_le_bytes());
        b.resize(HEADER_BYTES, 0);
        b
    }

    /// The version of a header slot of a newer format than this build
    /// reads: its magic, version and checksum are where every version keeps
    /// them (docs/format.md, "Header slots"), the checksum matches, and the
    /// version is past `HEADER_VERSION`. A damaged slot is never one.
    pub(crate) fn newer_version(b: &[u8]) -> Option<u32> {
        let body = b.get(..HEADER_BODY_BYTES)?;
        let version = u32_at(b, 8);
        (b.get(..8) == Some(HEADER_MAGIC.as_slice())
            && crc32c(body) == u32_at(b, HEADER_BODY_BYTES)
            && version > HEADER_VERSION)
            .then_some(version)
    }

    /// Decodes a header slot; Err says why it is not a valid one.
    pub(crate) fn decode(
        b: &[u8],
        page_size: usize,
        table_id: u32,
    ) -> std::result::Result<Checkpoint, String> {
        if b.get(..8) != Some(HEADER_MAGIC.as_slice()) {
            return Err("no header magic".into());
        }
        let body = b.get(..HEADER_BODY_BYTES).ok_or("short header")?;
        if crc32c(body) != u32_at(b, HEADER_BODY_BYTES) {
            return Err("header checksum mismatch".into());
        }
        match u32_at(b, 8) {
            HEADER_VERSION => {}
            1 => {
                return Err("header version 1: a file of an earlier spinney, whose \
                            pages have no key heads; this build reads version 2"
                    .into())
            }
            v => return Err(format!("unknown header version {v}")),
        }
        if u32_at(b, 12) as usize != page_size || u32_at(b, 16) != table_id {
            return Err(format!(
                "header is for table {} with {}-byte pages, expected table {table_id} with {page_size}",
                u32_at(b, 16),
                u32_at(b, 12)
            ));
        }
        let c = Checkpoint {
            generation: u64_at(b, 20),
            root: u64_at(b, 28),
            height: u32_at(b, 36),
            page_count: u64_at(b, 40),
            free_map_first: u64_at(b, 48),
            free_map_pages: u32_at(b, 56),
            free_map_len: u32_at(b, 60),
            seqno: u64_at(b, 64),
        };
        let in_file = |p: u64| p >= FIRST_DATA_PAGE && p < c.page_count;
        if c.page_count < FIRST_DATA_PAGE
            || (c.root != 0 && !in_file(c.root))
            || (c.root == 0) != (c.height == 0)
            || (c.free_map_pages > 0
                && !(in_file(c.free_map_first)
                    && c.free_map_first
                        .checked_add(u64::from(c.free_map_pages))
                        .is_some_and(|end| end <= c.page_count)))
            || c.seqno > SEQNO_MAX
        {
            return Err(format!("header fields out of range: {c:?}"));
        }
        Ok(c)
    }
}

/// Frames `image` as disk page `pgno` of a file of `page_size`-byte pages,
/// compressed with `compression` when that saves an eighth of the image:
/// the bytes to write at the page's place (the whole page when raw, whole
/// sectors when compressed).
pub(crate) fn encode_page(
    pgno: u64,
    image: &[u8],
    compression: Compression,
    page_size: usize,
) -> Vec<u8> {
    let compressed = match compression {
        Compression::None => None,
        Compression::Lz4 => crate::codec::lz4_compress(image).map(|c| (CODEC_LZ4, c)),
        Compression::Zstd => crate::codec::zstd_compress(image, 3).map(|c| (CODEC_ZSTD, c)),
    };
    let (codec, payload) = match &compressed {
        Some((codec, c)) if c.len() + image.len() / 8 <= image.len() => (*codec, c.as_slice()),
        _ => (CODEC_NONE, image),
    };
    let mut out = Vec::with_capacity(page_size);
    out.extend_from_slice(&[0; 4]);
    out.push(codec);
    out.push(image.first().copied().unwrap_or(0));
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(payload);
    let crc = crc32c2(&pgno.to_le_bytes(), out.get(4..).unwrap_or(&[]));
    if let Some(head) = out.get_mut(..4) {
        head.copy_from_slice(&crc.to_le_bytes());
    }
    let len = if codec == CODEC_NONE {
        page_size
    } else {
        out.len().div_ceil(SECTOR) * SECTOR
    };
    out.resize(len.min(page_size), 0);
    out
}

/// Checks the framing of disk page `pgno` (its length and checksum), and
/// returns its codec and where its payload ends.
fn check_frame(pgno: u64, raw: &[u8]) -> std::result::Result<(Option<u8>, usize), String> {
    if raw.len() < DISK_HEADER {
        return Err(format!(
            "short page: {} bytes, past the end of the file",
            raw.len()
        ));
    }
    let stored_len = u32_at(raw, 8) as usize;
    let end = DISK_HEADER
        .checked_add(stored_len)
        .filter(|&e| e <= raw.len())
        .ok_or_else(|| format!("payload length {stored_len} runs past the page"))?;
    let crc = u32_at(raw, 0);
    let actual = crc32c2(&pgno.to_le_bytes(), raw.get(4..end).unwrap_or(&[]));
    if crc != actual {
        return Err(format!(
            "checksum mismatch (stored {crc:#010x}, computed {actual:#010x})"
        ));
    }
    Ok((raw.get(4).copied(), end))
}

/// The image of disk page `pgno` where it lies in `raw`, if the page is
/// stored uncompressed and its framing checks (`check_frame`); None if it
/// does not check or is compressed (`decode_page` decodes it).
pub(crate) fn raw_image(pgno: u64, raw: &[u8], image_len: usize) -> Option<&[u8]> {
    match check_frame(pgno, raw) {
        Ok((Some(CODEC_NONE), end)) => raw.get(DISK_HEADER..end).filter(|i| i.len() == image_len),
        _ => None,
    }
}

/// Checks the framing of a disk page and returns its image.
pub(crate) fn decode_page(
    pgno: u64,
    mut raw: Vec<u8>,
    image_len: usize,
) -> std::result::Result<Vec<u8>, String> {
    let (codec, end) = check_frame(pgno, &raw)?;
    let payload = raw.get(DISK_HEADER..end).unwrap_or(&[]);
    let image = match codec {
        Some(CODEC_NONE) => {
            // The image is the payload: moved to the front of the buffer
            // read (no second page allocated for each page read).
            raw.copy_within(DISK_HEADER..end, 0);
            raw.truncate(end - DISK_HEADER);
            raw
        }
        Some(CODEC_LZ4) => crate::codec::lz4_decompress(payload, image_len)
            .map_err(|e| format!("lz4 payload does not decompress: {e}"))?,
        Some(CODEC_ZSTD) => crate::codec::zstd_decompress(payload, image_len)
            .map_err(|e| format!("zstd payload does not decompress: {e}"))?,
        Some(other) => return Err(format!("unknown codec {other}")),
        None => return Err("short page".into()),
    };
    if image.len() != image_len {
        return Err(format!(
            "page image is {} bytes, expected {image_len}",
            image.len()
        ));
    }
    Ok(image)
}

/// Encodes the free map: the extents (first page -> pages) in order.
pub(crate) fn encode_free_map(extents: &BTreeMap<u64, u64>) -> Vec<u8> {
    let mut blob = Vec::with_capacity(extents.len() * FREE_EXTENT_BYTES);
    for (f, n) in extents {
        blob.extend_from_slice(&f.to_le_bytes());
        blob.extend_from_slice(&n.to_le_bytes());
    }
    blob
}

/// Decodes the free map of an image of `page_count` pages into its extents
/// (first page, pages), in the order stored; Err says what is wrong.
pub(crate) fn decode_free_map(
    blob: &[u8],
    page_count: u64,
) -> std::result::Result<Vec<(u64, u64)>, String> {
    if !blob.len().is_multiple_of(FREE_EXTENT_BYTES) {
        return Err("length is not a whole number of extents".into());
    }
    let mut extents = Vec::with_capacity(blob.len() / FREE_EXTENT_BYTES);
    for e in blob.chunks_exact(FREE_EXTENT_BYTES) {
        let (first, pages) = (u64_at(e, 0), u64_at(e, 8));
        let end = first.checked_add(pages);
        if first < FIRST_DATA_PAGE || end.is_none_or(|end| end > page_count) {
            return Err(format!("extent {first}+{pages} outside the file"));
        }
        extents.push((first, pages));
    }
    Ok(extents)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checkpoint() -> Checkpoint {
        Checkpoint::sample()
    }

    #[test]
    fn header_slot_golden_bytes() {
        // Goal: the slot is laid out byte for byte as docs/format.md says.
        let mut expected = Vec::new();
        expected.extend_from_slice(b"SPNYBTR1");
        expected.extend_from_slice(&[2, 0, 0, 0]); // header version
        expected.extend_from_slice(&[0x00, 0x20, 0, 0]); // page_size 8192
        expected.extend_from_slice(&[3, 0, 0, 0]); // table_id
        expected.extend_from_slice(&[7, 0, 0, 0, 0, 0, 0, 0]); // generation
        expected.extend_from_slice(&[5, 0, 0, 0, 0, 0, 0, 0]); // root
        expected.extend_from_slice(&[2, 0, 0, 0]); // height
        expected.extend_from_slice(&[10, 0, 0, 0, 0, 0, 0, 0]); // page_count
        expected.extend_from_slice(&[8, 0, 0, 0, 0, 0, 0, 0]); // free_map_first
        expected.extend_from_slice(&[1, 0, 0, 0]); // free_map_pages
        expected.extend_from_slice(&[32, 0, 0, 0]); // free_map_len
        expected.extend_from_slice(&[99, 0, 0, 0, 0, 0, 0, 0]); // seqno
        assert_eq!(expected.len(), HEADER_BODY_BYTES);
        let crc = crc32c(&expected);
        expected.extend_from_slice(&crc.to_le_bytes());
        expected.resize(HEADER_BYTES, 0);
        assert_eq!(checkpoint().encode(8192, 3), expected);
    }

    #[test]
    fn header_round_trips_and_rejects_damage() {
        let c = checkpoint();
        let b = c.encode(8192, 3);
        assert_eq!(Checkpoint::decode(&b, 8192, 3), Ok(c));
        assert!(Checkpoint::decode(&b, 4096, 3).is_err());
        assert!(Checkpoint::decode(&b, 8192, 4).is_err());
        for i in 0..HEADER_BODY_BYTES + 4 {
            let mut bad = b.clone();
            if let Some(byte) = bad.get_mut(i) {
                *byte ^= 1;
            }
            assert!(Checkpoint::decode(&bad, 8192, 3).is_err(), "flip at {i}");
        }
        for cut in 0..HEADER_BODY_BYTES + 4 {
            let short = b.get(..cut).unwrap_or(&[]);
            assert!(Checkpoint::decode(short, 8192, 3).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn header_fields_out_of_range_are_refused() {
        // Goal: a slot with a valid checksum but impossible fields is not
        // a valid one (a root outside the file, a root without a height).
        let outside = Checkpoint {
            root: 10,
            ..checkpoint()
        };
        let no_height = Checkpoint {
            height: 0,
            ..checkpoint()
        };
        for c in [outside, no_height] {
            let err = Checkpoint::decode(&c.encode(8192, 3), 8192, 3).expect_err("refused");
            assert!(err.contains("out of range"), "{err}");
        }
    }

    #[test]
    fn a_free_map_run_past_the_largest_page_number_is_refused() {
        // Goal: a header (checksum and all) whose free map run ends past
        // u64::MAX is out of range, not a sum that overflows (a fuzzer
        // found it: a panic in a debug build, a run that wraps around to
        // look valid in a release one).
        let c = Checkpoint {
            page_count: u64::MAX,
            free_map_first: u64::MAX - 2,
            free_map_pages: 5,
            ..checkpoint()
        };
        let err = Checkpoint::decode(&c.encode(8192, 3), 8192, 3).expect_err("refused");
        assert!(err.contains("out of range"), "{err}");
    }

    #[test]
    fn a_header_of_the_format_before_key_heads_is_refused_saying_so() {
        // Goal: a file whose pages have no key heads (header version 1) is
        // not read as if it had them; the reason names the version.
        let mut b = checkpoint().encode(8192, 3);
        if let Some(v) = b.get_mut(8..12) {
            v.copy_from_slice(&1u32.to_le_bytes());
        }
        let crc = crc32c(b.get(..HEADER_BODY_BYTES).unwrap_or_default());
        if let Some(c) = b.get_mut(HEADER_BODY_BYTES..HEADER_BODY_BYTES + 4) {
            c.copy_from_slice(&crc.to_le_bytes());
        }
        let err = Checkpoint::decode(&b, 8192, 3).expect_err("refused");
        assert!(err.contains("header version 1"), "{err}");
    }

    #[test]
    fn free_map_golden_bytes() {
        let mut extents = BTreeMap::new();
        extents.insert(2, 3);
        extents.insert(9, 1);
        let blob = encode_free_map(&extents);
        let mut expected = Vec::new();
        for (first, pages) in [(2u64, 3u64), (9, 1)] {
            expected.extend_from_slice(&first.to_le_bytes());
            expected.extend_from_slice(&pages.to_le_bytes());
        }
        assert_eq!(blob, expected);
        assert_eq!(decode_free_map(&blob, 10), Ok(vec![(2, 3), (9, 1)]));
        assert_eq!(decode_free_map(&[], 10), Ok(vec![]));
    }

    #[test]
    fn free_map_refuses_partial_extents_and_pages_outside_the_file() {
        let mut blob = encode_free_map(&BTreeMap::from([(2, 3)]));
        assert!(decode_free_map(&blob, 4).is_err(), "runs past page_count");
        assert!(decode_free_map(&encode_free_map(&BTreeMap::from([(1, 1)])), 10).is_err());
        assert!(decode_free_map(&encode_free_map(&BTreeMap::from([(2, u64::MAX)])), 10).is_err());
        blob.pop();
        let err = decode_free_map(&blob, 10).expect_err("partial");
        assert!(err.contains("whole number"), "{err}");
    }

    fn image(len: usize) -> Vec<u8> {
        let mut image = vec![0u8; len];
        if let Some(kind) = image.first_mut() {
            *kind = KIND_LEAF;
        }
        if let Some(tail) = image.get_mut(len - 4..) {
            tail.copy_from_slice(b"tail");
        }
        image
    }

    #[test]
    fn disk_page_golden_bytes() {
        // Goal: a raw page is its 12-byte framing and the image, and the
        // checksum covers the page number.
        let page_size = 4096;
        let image = image(page_size - DISK_HEADER);
        let out = encode_page(3, &image, Compression::None, page_size);
        assert_eq!(out.len(), page_size);
        let stored = ((page_size - DISK_HEADER) as u32).to_le_bytes();
        assert_eq!(
            out.get(4..DISK_HEADER),
            Some(
                [CODEC_NONE, KIND_LEAF, 0, 0, stored[0], stored[1], stored[2], stored[3]]
                    .as_slice()
            )
        );
        assert_eq!(out.get(DISK_HEADER..), Some(image.as_slice()));
        let crc = crc32c2(&3u64.to_le_bytes(), out.get(4..).unwrap_or(&[]));
        assert_eq!(out.get(..4), Some(crc.to_le_bytes().as_slice()));
        assert_eq!(decode_page(3, out.clone(), image.len()), Ok(image));
    }

    #[test]
    fn disk_pages_round_trip_compressed_and_reject_damage() {
        // Goal: each codec round-trips; a compressed page is whole sectors;
        // a flipped byte, a page read from another place, a short page and
        // an unknown codec are refused.
        let page_size = 4096;
        let image = image(page_size - DISK_HEADER);
        for (compression, codec) in [
            (Compression::None, CODEC_NONE),
            (Compression::Lz4, CODEC_LZ4),
            (Compression::Zstd, CODEC_ZSTD),
        ] {
            let out = encode_page(5, &image, compression, page_size);
            assert_eq!(out.get(4), Some(&codec));
            assert_eq!(out.len() % SECTOR, 0);
            assert_eq!(
                decode_page(5, out.clone(), image.len()).as_ref(),
                Ok(&image)
            );
            assert!(
                decode_page(6, out.clone(), image.len()).is_err(),
                "misplaced"
            );
            // Bytes past the payload (a compressed page's padding) mean nothing.
            let end = DISK_HEADER + u32_at(&out, 8) as usize;
            for at in [0usize, 4, 5, 8, 13, end - 1] {
                let mut bad = out.clone();
                if let Some(b) = bad.get_mut(at) {
                    *b ^= 0x10;
                }
                assert!(decode_page(5, bad, image.len()).is_err(), "flip at {at}");
            }
            let short = out.get(..DISK_HEADER - 1).unwrap_or(&[]);
            assert!(decode_page(5, short.to_vec(), image.len()).is_err());
        }
    }
}
