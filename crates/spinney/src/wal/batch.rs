//! The payload of a WAL record: one committed write batch.
//!
//! ```text
//! batch := seqno_first u64 | count u32 | entry{count}
//! entry := kind u8 | table_id varint32 | key_len varint | key | (value_len varint | value, if kind = Put)
//! ```
//! Entry `i` of the batch has seqno `seqno_first + i`. Kinds are those of
//! internal keys (0 delete, 1 put; on disk: never renumber).
//!
//! A record of exactly a header whose count is `SYNC_MARK_COUNT` is no
//! batch but a sync mark: its seqno field is the seqno through which the
//! log had been synced when the mark was written (`parse_sync_mark`).
#![deny(clippy::indexing_slicing)]

use crate::encoding::{put_length_prefixed, put_u8, put_varint32, DecodeError, Decoder};
use crate::limits;
use crate::mvcc::key::Kind;

/// Bytes of the batch header (seqno_first, count).
pub(crate) const HEADER_BYTES: usize = 12;

/// The count field of a sync mark (no batch has so many entries).
pub(crate) const SYNC_MARK_COUNT: u32 = u32::MAX;

/// A sync mark: the log has been synced through `synced_seqno`. Appended
/// as a record of its own after each sync (and not synced itself), so that
/// an open that meets damage in the newest segment can tell whether it lies
/// in what was synced (a mark after the damage names a later seqno) or in
/// what a power loss may leave of unsynced writes in any state.
pub(crate) fn encode_sync_mark(synced_seqno: u64) -> [u8; HEADER_BYTES] {
    let mut mark = [0u8; HEADER_BYTES];
    let (seqno, count) = mark.split_at_mut(8);
    seqno.copy_from_slice(&synced_seqno.to_le_bytes());
    count.copy_from_slice(&SYNC_MARK_COUNT.to_le_bytes());
    mark
}

/// The seqno of a sync mark, if `record` is one: a batch header and
/// nothing after it, its count `SYNC_MARK_COUNT`.
pub(crate) fn parse_sync_mark(record: &[u8]) -> Option<u64> {
    let header = DecodedBatch::parse(record).ok()?;
    (header.count == SYNC_MARK_COUNT && header.entries.is_empty()).then_some(header.seqno_first)
}

/// An encoded batch under construction.
#[derive(Debug, Clone)]
pub(crate) struct BatchRep {
    bytes: Vec<u8>,
    count: u32,
}

/// The bytes a new batch reserves: its header and a small entry or two,
/// so that a batch of one typical put grows no buffer.
const INITIAL_BYTES: usize = 256;

impl Default for BatchRep {
    fn default() -> Self {
        let mut bytes = Vec::with_capacity(INITIAL_BYTES);
        bytes.resize(HEADER_BYTES, 0);
        BatchRep { bytes, count: 0 }
    }
}

impl BatchRep {
    pub(crate) fn push(&mut self, kind: Kind, table_id: u32, key: &[u8], value: &[u8]) {
        put_u8(&mut self.bytes, kind as u8);
        put_varint32(&mut self.bytes, table_id);
        put_length_prefixed(&mut self.bytes, key);
        if kind != Kind::Delete {
            put_length_prefixed(&mut self.bytes, value);
        }
        self.count += 1;
    }

    pub(crate) fn count(&self) -> u32 {
        self.count
    }

    pub(crate) fn byte_len(&self) -> usize {
        self.bytes.len()
    }

    pub(crate) fn clear(&mut self) {
        self.bytes.truncate(HEADER_BYTES);
        self.count = 0;
    }

    /// The record bytes with `seqno_first` filled in.
    pub(crate) fn encode(&mut self, seqno_first: u64) -> &[u8] {
        if let Some(h) = self.bytes.get_mut(..8) {
            h.copy_from_slice(&seqno_first.to_le_bytes());
        }
        if let Some(h) = self.bytes.get_mut(8..HEADER_BYTES) {
            h.copy_from_slice(&self.count.to_le_bytes());
        }
        &self.bytes
    }

    /// The entries, for applying the batch to memtables.
    pub(crate) fn entries(&self) -> BatchEntries<'_> {
        BatchEntries {
            d: Decoder::new(self.bytes.get(HEADER_BYTES..).unwrap_or(&[])),
            left: self.count,
        }
    }
}

/// One entry of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BatchEntry<'a> {
    pub kind: Kind,
    pub table_id: u32,
    pub key: &'a [u8],
    pub value: &'a [u8],
}

pub(crate) struct BatchEntries<'a> {
    d: Decoder<'a>,
    left: u32,
}

impl<'a> BatchEntries<'a> {
    fn decode_one(&mut self) -> Result<BatchEntry<'a>, DecodeError> {
        let at = self.d.pos();
        let kind = Kind::from_u8(self.d.u8("batch entry kind")?).ok_or(DecodeError {
            offset: at,
            what: "unknown batch entry kind",
        })?;
        let table_id = self.d.varint32()?;
        let key = self
            .d
            .length_prefixed(limits::KEY_BYTES_MAX + 1, "batch entry key")?;
        if key.len() > limits::KEY_BYTES_MAX && kind != Kind::RangeDelete {
            return Err(DecodeError {
                offset: at,
                what: "batch entry key longer than the limit",
            });
        }
        let value = match kind {
            Kind::Put => self
                .d
                .length_prefixed(limits::VALUE_BYTES_MAX, "batch entry value")?,
            Kind::Delete => &[],
            // The range's end: a bound one byte past the longest key.
            Kind::RangeDelete => self
                .d
                .length_prefixed(limits::KEY_BYTES_MAX + 1, "range delete end")?,
        };
        Ok(BatchEntry {
            kind,
            table_id,
            key,
            value,
        })
    }
}

impl<'a> Iterator for BatchEntries<'a> {
    type Item = Result<BatchEntry<'a>, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let item = self.decode_one();
        if item.is_err() {
            self.left = 0;
        }
        Some(item)
    }
}

/// A batch read back from the log.
#[derive(Debug)]
pub(crate) struct DecodedBatch<'a> {
    pub seqno_first: u64,
    pub count: u32,
    entries: &'a [u8],
}

impl<'a> DecodedBatch<'a> {
    /// Parses the header; entries are checked by `entries()` and `validate()`.
    pub(crate) fn parse(record: &'a [u8]) -> Result<DecodedBatch<'a>, DecodeError> {
        let mut d = Decoder::new(record);
        let seqno_first = d.u64("batch seqno")?;
        let count = d.u32("batch count")?;
        Ok(DecodedBatch {
            seqno_first,
            count,
            entries: d.remaining(),
        })
    }

    pub(crate) fn entries(&self) -> BatchEntries<'a> {
        BatchEntries {
            d: Decoder::new(self.entries),
            left: self.count,
        }
    }

    /// Decodes every entry once and checks that nothing follows the last, so
    /// that a batch is applied whole or not at all.
    pub(crate) fn validate(&self) -> Result<(), DecodeError> {
        let mut it = self.entries();
        for entry in it.by_ref() {
            entry?;
        }
        if !it.d.is_empty() {
            return Err(DecodeError {
                offset: HEADER_BYTES + it.d.pos(),
                what: "bytes after the last batch entry",
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_then_decode() {
        let mut rep = BatchRep::default();
        rep.push(Kind::Put, 3, b"k1", b"v1");
        rep.push(Kind::Delete, 300, b"k2", b"");
        rep.push(Kind::Put, 0, b"", b"");
        let bytes = rep.encode(42).to_vec();
        let b = DecodedBatch::parse(&bytes).expect("parses");
        assert_eq!((b.seqno_first, b.count), (42, 3));
        b.validate().expect("valid");
        let got: Vec<_> = b.entries().map(|e| e.expect("entry")).collect();
        assert_eq!(
            got,
            vec![
                BatchEntry {
                    kind: Kind::Put,
                    table_id: 3,
                    key: b"k1",
                    value: b"v1"
                },
                BatchEntry {
                    kind: Kind::Delete,
                    table_id: 300,
                    key: b"k2",
                    value: b""
                },
                BatchEntry {
                    kind: Kind::Put,
                    table_id: 0,
                    key: b"",
                    value: b""
                },
            ]
        );
    }

    #[test]
    fn golden_bytes() {
        let mut rep = BatchRep::default();
        rep.push(Kind::Put, 1, b"a", b"b");
        assert_eq!(
            rep.encode(7),
            [7, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, b'a', 1, b'b']
        );
    }

    #[test]
    fn golden_bytes_of_a_sync_mark() {
        // Goal: the mark's bytes are pinned (docs/format.md, "Sync marks"),
        // and only those bytes read as a mark: no batch, nothing shorter
        // or longer.
        let mark = encode_sync_mark(7);
        assert_eq!(mark, [7, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]);
        assert_eq!(parse_sync_mark(&mark), Some(7));
        let mut batch = BatchRep::default();
        batch.push(Kind::Put, 1, b"a", b"b");
        assert_eq!(parse_sync_mark(batch.encode(7)), None);
        assert_eq!(parse_sync_mark(mark.get(..11).unwrap_or_default()), None);
        assert_eq!(parse_sync_mark(&[&mark[..], &[0]].concat()), None);
    }

    #[test]
    fn truncated_and_trailing_bytes_are_rejected() {
        let mut rep = BatchRep::default();
        rep.push(Kind::Put, 1, b"key", b"value");
        let bytes = rep.encode(1).to_vec();
        for cut in 0..bytes.len() {
            let short = bytes.get(..cut).expect("in range");
            let ok = DecodedBatch::parse(short).and_then(|b| b.validate());
            assert!(ok.is_err(), "cut at {cut} accepted");
        }
        let mut long = bytes.clone();
        long.push(0);
        assert!(DecodedBatch::parse(&long)
            .expect("header")
            .validate()
            .is_err());
    }
}
