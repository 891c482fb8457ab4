//! What a log segment's records are, and the header that says which format
//! version a segment is in. docs/format.md#segment-header is the byte-level
//! truth.
//!
//! ```text
//! header := seqno 0:u64 | count 0xFFFFFFFE:u32 | magic "SPNYWAL!" | version:u32
//! ```
//! The header is the first record of a segment of version 2 or later, and
//! only there. Its first 12 bytes are a batch header no batch can have (no
//! batch holds 0xFFFFFFFE entries), as a sync mark's are: a build that
//! knows neither reads it as a batch too short for its count and refuses
//! the segment. A segment whose first record is no header is version 1
//! (written before headers), which is the same format without it.
#![deny(clippy::indexing_slicing)]

use std::path::Path;

use super::batch::{parse_sync_mark, HEADER_BYTES};
use crate::error::{Error, Result};

/// The log format version this build writes (in a database of format 2 or
/// later) and the newest it reads.
pub(crate) const LOG_VERSION: u32 = 2;

/// The count field of a segment header.
const HEADER_COUNT: u32 = u32::MAX - 1;

const MAGIC: &[u8; 8] = b"SPNYWAL!";

/// Bytes of a segment header record.
pub(crate) const SEGMENT_HEADER_BYTES: usize = HEADER_BYTES + 8 + 4;

/// The header record a segment of `version` begins with.
pub(crate) fn encode_header(version: u32) -> [u8; SEGMENT_HEADER_BYTES] {
    let mut h = [0u8; SEGMENT_HEADER_BYTES];
    let (batch_header, rest) = h.split_at_mut(HEADER_BYTES);
    let (_seqno, count) = batch_header.split_at_mut(8);
    count.copy_from_slice(&HEADER_COUNT.to_le_bytes());
    let (magic, v) = rest.split_at_mut(MAGIC.len());
    magic.copy_from_slice(MAGIC);
    v.copy_from_slice(&version.to_le_bytes());
    h
}

/// What a record of a log segment is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Record {
    /// The segment header: the segment's format version.
    Header { version: u32 },
    /// A sync mark (`batch::encode_sync_mark`).
    Mark { synced_seqno: u64 },
    /// A batch, or bytes that must parse as one.
    Batch,
}

/// Tells a header and a sync mark from a batch, by their bytes alone.
pub(crate) fn classify(record: &[u8]) -> Record {
    if let Some(synced_seqno) = parse_sync_mark(record) {
        return Record::Mark { synced_seqno };
    }
    let is_header = record.len() == SEGMENT_HEADER_BYTES
        && record.get(..8) == Some(&[0u8; 8][..])
        && record.get(8..HEADER_BYTES) == Some(&HEADER_COUNT.to_le_bytes()[..])
        && record.get(HEADER_BYTES..HEADER_BYTES + MAGIC.len()) == Some(&MAGIC[..]);
    match record.get(HEADER_BYTES + MAGIC.len()..) {
        Some(v) if is_header => Record::Header {
            version: v.try_into().map(u32::from_le_bytes).unwrap_or_default(),
        },
        _ => Record::Batch,
    }
}

/// Checks a header read at `offset` of the segment at `path`: at the
/// segment's start, of a version this build reads.
pub(crate) fn check_header(path: &Path, offset: u64, version: u32) -> Result<()> {
    if offset != 0 {
        return Err(Error::corruption(
            path,
            offset,
            "a log segment header inside the segment (it is only ever the first record)",
        ));
    }
    if version > LOG_VERSION {
        return Err(Error::newer_format(
            path,
            "log segment",
            version,
            LOG_VERSION,
        ));
    }
    if version < 2 {
        return Err(Error::corruption(
            path,
            offset,
            format!("log segment header of version {version}: headers begin at version 2"),
        ));
    }
    Ok(())
}

/// Whether the record at `offset` of the segment at `path` is a batch (or
/// bytes that must parse as one), for a reader that skips the rest: a
/// header is checked (`check_header`), a sync mark passed over.
pub(crate) fn is_batch(path: &Path, offset: u64, record: &[u8]) -> Result<bool> {
    match classify(record) {
        Record::Batch => Ok(true),
        Record::Header { version } => check_header(path, offset, version).map(|()| false),
        Record::Mark { .. } => Ok(false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mvcc::key::Kind;
    use crate::wal::batch::{encode_sync_mark, BatchRep};

    #[test]
    fn golden_bytes_of_a_segment_header() {
        // Goal: the header's bytes are pinned (docs/format.md, "Segment
        // header"), and only they read as a header.
        let h = encode_header(2);
        assert_eq!(
            h,
            [
                0, 0, 0, 0, 0, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff, b'S', b'P', b'N', b'Y', b'W', b'A',
                b'L', b'!', 2, 0, 0, 0
            ]
        );
        assert_eq!(classify(&h), Record::Header { version: 2 });
        assert_eq!(classify(&encode_header(7)), Record::Header { version: 7 });
        assert_eq!(
            classify(&encode_sync_mark(5)),
            Record::Mark { synced_seqno: 5 }
        );
        let mut batch = BatchRep::default();
        batch.push(Kind::Put, 1, b"a", b"b");
        assert_eq!(classify(batch.encode(7)), Record::Batch);
        // Anything but the exact shape is no header (and fails as a batch).
        assert_eq!(classify(h.get(..23).unwrap_or_default()), Record::Batch);
        assert_eq!(classify(&[&h[..], &[0]].concat()), Record::Batch);
        let mut other_magic = h;
        if let Some(b) = other_magic.get_mut(12) {
            *b = b'X';
        }
        assert_eq!(classify(&other_magic), Record::Batch);
        let mut nonzero_seqno = h;
        if let Some(b) = nonzero_seqno.first_mut() {
            *b = 1;
        }
        assert_eq!(classify(&nonzero_seqno), Record::Batch);
    }

    #[test]
    fn a_header_is_checked_for_its_place_and_version() {
        let p = Path::new("000001.wal");
        assert!(check_header(p, 0, LOG_VERSION).is_ok());
        match check_header(p, 0, LOG_VERSION + 1) {
            Err(Error::NewerFormat {
                found, supported, ..
            }) => assert_eq!((found, supported), (LOG_VERSION + 1, LOG_VERSION)),
            other => panic!("{other:?}"),
        }
        assert!(check_header(p, 40, LOG_VERSION).is_err_and(|e| e.is_corruption()));
        assert!(check_header(p, 0, 1).is_err_and(|e| e.is_corruption()));
    }
}
