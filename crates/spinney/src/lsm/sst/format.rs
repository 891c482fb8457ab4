//! SST constants and the encode/decode of its fixed parts: block handles,
//! block trailers (compression type and checksum), the properties block and
//! the footer.
//!
//! Byte layout: docs/format.md#sst (the spec; keep it in step). Everything here is pure: bytes in, values
//! or `Error::Corruption` (naming the file and the absolute offset) out.
#![deny(clippy::indexing_slicing)]

use std::path::Path;

use crate::encoding::{self, Decoder};
use crate::error::{Error, Result};
use crate::limits;
use crate::options::Compression;

/// The footer's magic number; on disk it reads as the ASCII bytes `SPNYSST!`.
pub(crate) const MAGIC: u64 = u64::from_le_bytes(*b"SPNYSST!");

/// The only format version written and read so far.
pub(crate) const FORMAT_VERSION: u32 = 1;

/// Every block is followed by a compression-type byte and a CRC32C (u32 LE).
pub(crate) const BLOCK_TRAILER_BYTES: usize = 5;

/// A block handle is two varint64s, at most 10 bytes each.
pub(crate) const BLOCK_HANDLE_BYTES_MAX: usize = 20;

/// The handles region of the footer: three handles, zero-padded.
const FOOTER_HANDLES_BYTES: usize = 3 * BLOCK_HANDLE_BYTES_MAX;

/// Footer: handles (60) + version u32 + magic u64 + CRC32C u32.
pub(crate) const FOOTER_BYTES: usize = FOOTER_HANDLES_BYTES + 4 + 8 + 4;

/// Entries between restart points of a data block (keys stored whole).
/// 8 rather than LevelDB's 16: a point read scans half as many entries
/// after its binary search, for about 1% more bytes (2M keys of 16 bytes,
/// fully compacted: readrandom 434-448k -> 481k ops/s, seekrandom
/// 258-261k -> 271k; interval 4 was no faster and 3% larger). Readers
/// accept any interval.
pub(crate) const RESTART_INTERVAL: usize = 8;

/// Entries between restart points of an index block: every key is whole,
/// so a seek is a binary search with no scan after it (LevelDB's choice
/// too: an index block is searched by every read that reaches its file,
/// and its separators share little).
pub(crate) const INDEX_RESTART_INTERVAL: usize = 1;

/// The zstd level used for `CompressionType::Zstd`.
pub(crate) const ZSTD_LEVEL: i32 = 3;

/// How a stored block is compressed. On disk: never renumber.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(u8)]
pub(crate) enum CompressionType {
    /// Stored as is.
    #[default]
    None = 0,
    /// varint64 uncompressed length, then an LZ4 block.
    Lz4 = 1,
    /// varint64 uncompressed length, then a zstd frame.
    Zstd = 2,
}

impl CompressionType {
    pub(crate) fn from_u8(v: u8) -> Option<CompressionType> {
        match v {
            0 => Some(CompressionType::None),
            1 => Some(CompressionType::Lz4),
            2 => Some(CompressionType::Zstd),
            _ => None,
        }
    }

    pub(crate) fn from_option(c: Compression) -> CompressionType {
        match c {
            Compression::None => CompressionType::None,
            Compression::Lz4 => CompressionType::Lz4,
            Compression::Zstd => CompressionType::Zstd,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            CompressionType::None => "none",
            CompressionType::Lz4 => "lz4",
            CompressionType::Zstd => "zstd",
        }
    }
}

/// Where a block lives: `size` counts the stored bytes, not the trailer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct BlockHandle {
    pub offset: u64,
    pub size: u64,
}

impl BlockHandle {
    pub(crate) fn encode_to(&self, dst: &mut Vec<u8>) {
        encoding::put_varint64(dst, self.offset);
        encoding::put_varint64(dst, self.size);
    }

    pub(crate) fn decode_from(d: &mut Decoder<'_>) -> Result<BlockHandle, encoding::DecodeError> {
        let offset = d.varint64()?;
        let size = d.varint64()?;
        Ok(BlockHandle { offset, size })
    }

    /// Checks that the block and its trailer end at or before `limit` (the
    /// start of the footer) and that its size is within limits. `at` is the
    /// offset of the handle's own bytes, reported on failure.
    pub(crate) fn check(&self, file: &Path, limit: u64, at: u64, what: &str) -> Result<()> {
        if self.size > limits::SST_BLOCK_BYTES_MAX {
            return Err(Error::corruption(
                file,
                at,
                format!(
                    "{what} handle size {} is over the limit of {} bytes",
                    self.size,
                    limits::SST_BLOCK_BYTES_MAX
                ),
            ));
        }
        let end = self
            .offset
            .checked_add(self.size)
            .and_then(|e| e.checked_add(BLOCK_TRAILER_BYTES as u64));
        match end {
            Some(end) if end <= limit => Ok(()),
            _ => Err(Error::corruption(
                file,
                at,
                format!(
                    "{what} handle (offset {}, size {}) runs past the end of the blocks at {limit}",
                    self.offset, self.size
                ),
            )),
        }
    }
}

/// The fixed-size record at the end of every SST.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Footer {
    /// Size 0 when the SST has no filter.
    pub filter: BlockHandle,
    pub properties: BlockHandle,
    pub index: BlockHandle,
}

impl Footer {
    pub(crate) fn encode(&self) -> [u8; FOOTER_BYTES] {
        let mut buf = Vec::with_capacity(FOOTER_BYTES);
        self.filter.encode_to(&mut buf);
        self.properties.encode_to(&mut buf);
        self.index.encode_to(&mut buf);
        buf.resize(FOOTER_HANDLES_BYTES, 0);
        encoding::put_u32(&mut buf, FORMAT_VERSION);
        encoding::put_u64(&mut buf, MAGIC);
        let crc = encoding::crc32c(&buf);
        encoding::put_u32(&mut buf, crc);
        let mut out = [0u8; FOOTER_BYTES];
        out.copy_from_slice(&buf);
        out
    }

    /// Decodes the footer found at `base` (= file length - FOOTER_BYTES) and
    /// checks its handles against the region before it.
    pub(crate) fn decode(buf: &[u8], file: &Path, base: u64) -> Result<Footer> {
        let at = |pos: usize| base + pos as u64;
        if buf.len() != FOOTER_BYTES {
            return Err(Error::corruption(file, base, "footer is short"));
        }
        let magic_pos = FOOTER_HANDLES_BYTES + 4;
        let magic = encoding::get_u64_at(buf, magic_pos).unwrap_or(0);
        if magic != MAGIC {
            return Err(Error::corruption(
                file,
                at(magic_pos),
                format!("bad magic {magic:#018x}: not a spinney SST (or its end was cut off)"),
            ));
        }
        let crc_pos = FOOTER_BYTES - 4;
        let stored = encoding::get_u32_at(buf, crc_pos).unwrap_or(0);
        let actual = encoding::crc32c(buf.get(..crc_pos).unwrap_or(&[]));
        if stored != actual {
            return Err(Error::corruption(
                file,
                base,
                format!(
                    "footer checksum mismatch (stored {stored:#010x}, computed {actual:#010x})"
                ),
            ));
        }
        let version = encoding::get_u32_at(buf, FOOTER_HANDLES_BYTES).unwrap_or(0);
        if version > FORMAT_VERSION {
            return Err(Error::newer_format(file, "SST", version, FORMAT_VERSION));
        }
        if version != FORMAT_VERSION {
            return Err(Error::corruption(
                file,
                at(FOOTER_HANDLES_BYTES),
                format!("unknown SST format version {version} (this build reads {FORMAT_VERSION})"),
            ));
        }
        let mut d = Decoder::new(buf.get(..FOOTER_HANDLES_BYTES).unwrap_or(&[]));
        let mut handle = |what: &str| -> Result<BlockHandle> {
            let pos = d.pos();
            let h = BlockHandle::decode_from(&mut d).map_err(|e| e.corruption(file, base))?;
            h.check(file, base, at(pos), what)?;
            Ok(h)
        };
        let filter = handle("filter")?;
        let properties = handle("properties")?;
        let index = handle("index")?;
        Ok(Footer {
            filter,
            properties,
            index,
        })
    }
}

/// Compresses `raw` as `kind` asks, keeping the result only if it saves at
/// least an eighth. Returns the bytes to store and the type that says how.
pub(crate) fn compress_block(raw: &[u8], kind: CompressionType) -> (Vec<u8>, CompressionType) {
    let payload = match kind {
        CompressionType::None => None,
        CompressionType::Lz4 => crate::codec::lz4_compress(raw),
        // A zstd failure (out of memory) just means the block stays raw.
        CompressionType::Zstd => crate::codec::zstd_compress(raw, ZSTD_LEVEL),
    };
    if let Some(payload) = payload {
        let mut stored = Vec::with_capacity(payload.len() + 10);
        encoding::put_varint64(&mut stored, raw.len() as u64);
        stored.extend_from_slice(&payload);
        if stored.len() + raw.len() / 8 <= raw.len() {
            return (stored, kind);
        }
    }
    (raw.to_vec(), CompressionType::None)
}

/// The 5-byte trailer of a stored block.
pub(crate) fn block_trailer(stored: &[u8], kind: CompressionType) -> [u8; BLOCK_TRAILER_BYTES] {
    let type_byte = [kind as u8];
    let crc = encoding::crc32c2(stored, &type_byte).to_le_bytes();
    let [c0, c1, c2, c3] = crc;
    [kind as u8, c0, c1, c2, c3]
}

/// Checks a stored block's trailer (`buf` holds the block and its
/// trailer): its checksum and compression type. Returns the stored
/// block's size and its type.
fn check_trailer(buf: &[u8], file: &Path, offset: u64) -> Result<(usize, CompressionType)> {
    let size = buf
        .len()
        .checked_sub(BLOCK_TRAILER_BYTES)
        .ok_or_else(|| Error::corruption(file, offset, "block shorter than its trailer"))?;
    let (stored, trailer) = buf.split_at(size);
    let type_byte = trailer.first().copied().unwrap_or(0xFF);
    let crc_stored = encoding::get_u32_at(trailer, 1).unwrap_or(0);
    let crc_actual = encoding::crc32c2(stored, &[type_byte]);
    if crc_stored != crc_actual {
        return Err(Error::corruption(
            file,
            offset,
            format!(
                "block checksum mismatch (block of {size} bytes; stored {crc_stored:#010x}, computed {crc_actual:#010x})"
            ),
        ));
    }
    let trailer_at = offset + size as u64;
    let kind = CompressionType::from_u8(type_byte).ok_or_else(|| {
        Error::corruption(
            file,
            trailer_at,
            format!("unknown block compression type {type_byte}"),
        )
    })?;
    Ok((size, kind))
}

/// A stored block's contents once its trailer checks where it lies
/// (`unseal_in_place`).
pub(crate) enum Unsealed<'a> {
    /// Stored uncompressed: the contents in place.
    InPlace(&'a [u8]),
    /// Stored compressed: the contents decompressed.
    Decompressed(Vec<u8>),
}

/// Checks the trailer of the block at `offset` where it lies in `buf` (the
/// block and its trailer, in a memory map) and returns its contents: in
/// place if the block is stored uncompressed, else decompressed.
pub(crate) fn unseal_in_place<'a>(buf: &'a [u8], file: &Path, offset: u64) -> Result<Unsealed<'a>> {
    let (size, kind) = check_trailer(buf, file, offset)?;
    let stored = buf.get(..size).unwrap_or_default();
    Ok(match kind {
        CompressionType::None => Unsealed::InPlace(stored),
        _ => Unsealed::Decompressed(decompress(stored, kind, file, offset)?),
    })
}

/// Checks the trailer of the block at `offset` (whose stored bytes plus
/// trailer are `buf`) and returns its contents, decompressed.
pub(crate) fn unseal_block(mut buf: Vec<u8>, file: &Path, offset: u64) -> Result<Vec<u8>> {
    let (size, kind) = check_trailer(&buf, file, offset)?;
    if kind == CompressionType::None {
        // The bytes read are the block: no copy (a second allocation, a
        // copy and a free were 4-5% of a read that missed the cache).
        buf.truncate(size);
        return Ok(buf);
    }
    decompress(buf.get(..size).unwrap_or_default(), kind, file, offset)
}

/// A block that did not decompress: `Corruption`, or `Unsupported` where
/// this build lacks the codec.
fn codec_error(e: crate::codec::DecompressError, codec: &str, file: &Path, offset: u64) -> Error {
    match e {
        crate::codec::DecompressError::Invalid(why) => {
            Error::corruption(file, offset, format!("{codec} block: {why}"))
        }
        not_built => Error::Unsupported(format!(
            "{}, block at offset {offset}: {not_built}",
            file.display()
        )),
    }
}

/// The contents of the block at `offset` stored as `stored` (without its
/// trailer) with compression `kind`.
fn decompress(stored: &[u8], kind: CompressionType, file: &Path, offset: u64) -> Result<Vec<u8>> {
    let mut d = Decoder::new(stored);
    let raw_len = d.varint64().map_err(|e| e.corruption(file, offset))?;
    if raw_len > limits::SST_BLOCK_BYTES_MAX {
        return Err(Error::corruption(
            file,
            offset,
            format!(
                "uncompressed block length {raw_len} is over the limit of {} bytes",
                limits::SST_BLOCK_BYTES_MAX
            ),
        ));
    }
    let raw_len = raw_len as usize;
    let payload = d.remaining();
    let raw = match kind {
        CompressionType::Lz4 => crate::codec::lz4_decompress(payload, raw_len)
            .map_err(|e| codec_error(e, "lz4", file, offset))?,
        CompressionType::Zstd => crate::codec::zstd_decompress(payload, raw_len)
            .map_err(|e| codec_error(e, "zstd", file, offset))?,
        CompressionType::None => stored.to_vec(),
    };
    if raw.len() != raw_len {
        return Err(Error::corruption(
            file,
            offset,
            format!(
                "block decompressed to {} bytes, not the {raw_len} recorded",
                raw.len()
            ),
        ));
    }
    Ok(raw)
}

/// Largest user key kept in the properties block (smallest/largest keys).
const PROPERTY_KEY_BYTES_MAX: usize = limits::KEY_BYTES_MAX + crate::mvcc::key::TRAILER_BYTES;

/// Facts about an SST, written once by the builder. Fields are encoded in
/// this order; a reader ignores bytes after the fields it knows, so later
/// versions may append fields.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Properties {
    pub entries: u64,
    pub deletions: u64,
    /// Sum of the lengths of the internal keys.
    pub raw_key_bytes: u64,
    pub raw_value_bytes: u64,
    pub data_blocks: u64,
    /// Internal keys; empty when the SST has no entries.
    pub smallest: Vec<u8>,
    pub largest: Vec<u8>,
    /// 0 and 0 when the SST has no entries.
    pub seqno_min: u64,
    pub seqno_max: u64,
    /// The compression the builder was asked for (blocks that did not shrink
    /// enough are stored raw whatever this says).
    pub compression: CompressionType,
    pub bloom_bits_per_key: u32,
}

impl Properties {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut b = Vec::new();
        encoding::put_varint64(&mut b, self.entries);
        encoding::put_varint64(&mut b, self.deletions);
        encoding::put_varint64(&mut b, self.raw_key_bytes);
        encoding::put_varint64(&mut b, self.raw_value_bytes);
        encoding::put_varint64(&mut b, self.data_blocks);
        encoding::put_length_prefixed(&mut b, &self.smallest);
        encoding::put_length_prefixed(&mut b, &self.largest);
        encoding::put_varint64(&mut b, self.seqno_min);
        encoding::put_varint64(&mut b, self.seqno_max);
        encoding::put_u8(&mut b, self.compression as u8);
        encoding::put_varint32(&mut b, self.bloom_bits_per_key);
        b
    }

    /// Decodes the properties block whose contents start at `base`.
    pub(crate) fn decode(buf: &[u8], file: &Path, base: u64) -> Result<Properties> {
        let mut d = Decoder::new(buf);
        let err = |e: encoding::DecodeError| e.corruption(file, base);
        let entries = d.varint64().map_err(err)?;
        let deletions = d.varint64().map_err(err)?;
        let raw_key_bytes = d.varint64().map_err(err)?;
        let raw_value_bytes = d.varint64().map_err(err)?;
        let data_blocks = d.varint64().map_err(err)?;
        let smallest = d
            .length_prefixed(PROPERTY_KEY_BYTES_MAX, "smallest key")
            .map_err(err)?
            .to_vec();
        let largest = d
            .length_prefixed(PROPERTY_KEY_BYTES_MAX, "largest key")
            .map_err(err)?
            .to_vec();
        let seqno_min = d.varint64().map_err(err)?;
        let seqno_max = d.varint64().map_err(err)?;
        let pos = d.pos();
        let c = d.u8("compression").map_err(err)?;
        let compression = CompressionType::from_u8(c).ok_or_else(|| {
            Error::corruption(file, base + pos as u64, format!("unknown compression {c}"))
        })?;
        let bloom_bits_per_key = d.varint32().map_err(err)?;
        Ok(Properties {
            entries,
            deletions,
            raw_key_bytes,
            raw_value_bytes,
            data_blocks,
            smallest,
            largest,
            seqno_min,
            seqno_max,
            compression,
            bloom_bits_per_key,
        })
    }
}

#[cfg(test)]
mod tests {
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    use super::*;

    fn path() -> &'static Path {
        Path::new("test.sst")
    }

    fn footer() -> Footer {
        Footer {
            filter: BlockHandle {
                offset: 300,
                size: 0,
            },
            properties: BlockHandle {
                offset: 305,
                size: 40,
            },
            index: BlockHandle {
                offset: 350,
                size: 2,
            },
        }
    }

    #[test]
    fn footer_golden_bytes() {
        assert_eq!(MAGIC, 0x2154_5353_594E_5053);
        assert_eq!(FOOTER_BYTES, 76);
        let bytes = footer().encode();
        let mut expected = vec![
            0xAC, 0x02, 0x00, // filter: 300, 0
            0xB1, 0x02, 0x28, // properties: 305, 40
            0xDE, 0x02, 0x02, // index: 350, 2
        ];
        expected.resize(60, 0);
        expected.extend_from_slice(&[1, 0, 0, 0]);
        expected.extend_from_slice(b"SPNYSST!");
        let crc = encoding::crc32c(&expected);
        expected.extend_from_slice(&crc.to_le_bytes());
        assert_eq!(bytes.as_slice(), expected.as_slice());
        assert_eq!(
            Footer::decode(&bytes, path(), 357).expect("decodes"),
            footer()
        );
    }

    #[test]
    fn footer_rejects_bad_magic_version_checksum_and_handles() {
        // Goal: each kind of footer damage is Corruption at the right offset.
        let good = footer().encode();
        let base = 400;

        let mut bad = good;
        if let Some(b) = bad.get_mut(64) {
            *b ^= 1;
        }
        match Footer::decode(&bad, path(), base) {
            Err(Error::Corruption { offset, detail, .. }) => {
                assert_eq!(offset, base + 64);
                assert!(detail.contains("magic"), "{detail}");
            }
            other => panic!("expected corruption, got {other:?}"),
        }

        let mut bad = good;
        if let Some(b) = bad.get_mut(3) {
            *b ^= 1;
        }
        match Footer::decode(&bad, path(), base) {
            Err(Error::Corruption { offset, detail, .. }) => {
                assert_eq!(offset, base);
                assert!(detail.contains("checksum"), "{detail}");
            }
            other => panic!("expected corruption, got {other:?}"),
        }

        // A version with a valid checksum: a newer one is refused naming
        // both versions, version 0 (never written) is corruption.
        let with_version = |v: u8| {
            let mut bad = good.to_vec();
            if let Some(b) = bad.get_mut(60) {
                *b = v;
            }
            bad.truncate(72);
            let crc = encoding::crc32c(&bad);
            bad.extend_from_slice(&crc.to_le_bytes());
            bad
        };
        match Footer::decode(&with_version(2), path(), base) {
            Err(Error::NewerFormat {
                what,
                found,
                supported,
                ..
            }) => assert_eq!((what, found, supported), ("SST", 2, FORMAT_VERSION)),
            other => panic!("expected a newer format, got {other:?}"),
        }
        match Footer::decode(&with_version(0), path(), base) {
            Err(Error::Corruption { offset, detail, .. }) => {
                assert_eq!(offset, base + 60);
                assert!(detail.contains("version"), "{detail}");
            }
            other => panic!("expected corruption, got {other:?}"),
        }

        // Handles that run past the footer's start.
        match Footer::decode(&good, path(), 300) {
            Err(Error::Corruption { offset, detail, .. }) => {
                assert_eq!(offset, 300);
                assert!(detail.contains("filter"), "{detail}");
            }
            other => panic!("expected corruption, got {other:?}"),
        }
        let big = Footer {
            index: BlockHandle {
                offset: 0,
                size: limits::SST_BLOCK_BYTES_MAX + 1,
            },
            ..Footer::default()
        };
        assert!(Footer::decode(&big.encode(), path(), u64::MAX / 2)
            .expect_err("over the limit")
            .is_corruption());
    }

    #[test]
    fn block_trailer_golden_bytes() {
        let t = block_trailer(b"abc", CompressionType::None);
        let crc = encoding::crc32c(b"abc\x00").to_le_bytes();
        assert_eq!(t, [0, crc[0], crc[1], crc[2], crc[3]]);
    }

    #[test]
    fn compression_round_trips_and_keeps_raw_when_it_does_not_pay() {
        let compressible: Vec<u8> = b"spinney ".iter().copied().cycle().take(4000).collect();
        let mut rng = SmallRng::seed_from_u64(1);
        let incompressible: Vec<u8> = (0..4000).map(|_| rng.gen()).collect();
        for kind in [
            CompressionType::None,
            CompressionType::Lz4,
            CompressionType::Zstd,
        ] {
            for raw in [&compressible, &incompressible] {
                let (stored, used) = compress_block(raw, kind);
                if kind == CompressionType::None || raw == &incompressible {
                    assert_eq!(used, CompressionType::None);
                } else {
                    assert_eq!(used, kind);
                    assert!(stored.len() < raw.len() / 2);
                }
                let mut buf = stored.clone();
                buf.extend_from_slice(&block_trailer(&stored, used));
                assert_eq!(&unseal_block(buf, path(), 0).expect("unseals"), raw);
            }
        }
    }

    #[test]
    fn properties_round_trip_and_ignore_trailing_fields() {
        let p = Properties {
            entries: 5,
            deletions: 1,
            raw_key_bytes: 60,
            raw_value_bytes: 70,
            data_blocks: 2,
            smallest: b"a\x01\x00\x00\x00\x00\x00\x00\x00".to_vec(),
            largest: b"z\x01\x00\x00\x00\x00\x00\x00\x00".to_vec(),
            seqno_min: 0,
            seqno_max: 9,
            compression: CompressionType::Zstd,
            bloom_bits_per_key: 10,
        };
        let mut bytes = p.encode();
        assert_eq!(Properties::decode(&bytes, path(), 0).expect("decodes"), p);
        bytes.extend_from_slice(&[7, 7, 7]);
        assert_eq!(Properties::decode(&bytes, path(), 0).expect("decodes"), p);
        for cut in 0..p.encode().len() {
            assert!(Properties::decode(bytes.get(..cut).unwrap_or(&[]), path(), 0).is_err());
        }
    }
}
