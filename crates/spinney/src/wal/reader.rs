//! Reads framed records back, telling a torn tail from damage.
//!
//! The reader works on a whole file in memory (a segment is bounded by
//! `Options::wal_segment_size`, a manifest by its rewrite at every open).
//!
//! A bad fragment is reported as `Torn` — the tail of an append cut short by
//! a crash — only when it looks like one: the fragment runs past the end of
//! the file, or its header is all zeros, or its last byte is zero (the part
//! never written reads as zeros); and nothing but zeros follows it. Anything
//! else is damage in the middle of the log, reported as `Corrupt`. A bit flip
//! in the very last record whose last byte is zero cannot be told from a torn
//! write and is reported as `Torn`.
#![deny(clippy::indexing_slicing)]

use super::batch::HEADER_BYTES as MARK_BYTES;
use super::format::{fragment_crc, FragmentType, BLOCK_BYTES, HEADER_BYTES};
use crate::encoding::get_u32_at;

/// What `next` found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Read {
    /// A whole record, and the offset of its first fragment.
    Record { offset: u64, data: Vec<u8> },
    /// The clean end of the log.
    End,
    /// A damaged region with nothing valid after it: a torn last append.
    Torn { offset: u64, detail: &'static str },
    /// A damaged region followed by valid data.
    Corrupt { offset: u64, detail: &'static str },
}

pub(crate) struct LogReader {
    data: Vec<u8>,
    pos: usize,
}

enum Fragment<'a> {
    Good {
        kind: FragmentType,
        payload: &'a [u8],
        next: usize,
    },
    Padding,
    /// A damaged fragment: where its bytes end (at most the end of the file),
    /// and whether it looks like an append cut short.
    Bad {
        detail: &'static str,
        end: usize,
        cut_short: bool,
    },
    End,
}

/// True when `crc` is the checksum of `kind` and some prefix of `bytes`.
/// Linear: the CRC is extended one byte at a time.
fn checksum_matches_some_prefix(kind: FragmentType, bytes: &[u8], crc: u32) -> bool {
    let mut running = crate::encoding::crc32c(&[kind as u8]);
    if running == crc {
        return true;
    }
    bytes.iter().any(|b| {
        running = crc32c::crc32c_append(running, std::slice::from_ref(b));
        running == crc
    })
}

impl LogReader {
    pub(crate) fn new(data: Vec<u8>) -> LogReader {
        LogReader { data, pos: 0 }
    }

    /// Parses the fragment at `pos`.
    fn fragment_at(&self, pos: usize) -> Fragment<'_> {
        let block_left = BLOCK_BYTES - pos % BLOCK_BYTES;
        if pos >= self.data.len() {
            return Fragment::End;
        }
        if block_left < HEADER_BYTES {
            // The writer pads such a tail with zeros.
            let tail = self
                .data
                .get(pos..(pos + block_left).min(self.data.len()))
                .unwrap_or(&[]);
            return if tail.iter().all(|&b| b == 0) {
                Fragment::Padding
            } else {
                Fragment::Bad {
                    detail: "non-zero block padding",
                    end: pos + tail.len(),
                    cut_short: false,
                }
            };
        }
        let eof = self.data.len();
        let Some(header) = self.data.get(pos..pos + HEADER_BYTES) else {
            return Fragment::Bad {
                detail: "truncated fragment header",
                end: eof,
                cut_short: true,
            };
        };
        let header_zero = header.iter().all(|&b| b == 0);
        let crc = get_u32_at(header, 0).unwrap_or(0);
        let len = u16::from_le_bytes([
            header.get(4).copied().unwrap_or(0),
            header.get(5).copied().unwrap_or(0),
        ]) as usize;
        let kind_byte = header.get(6).copied().unwrap_or(0);
        let Some(kind) = FragmentType::from_u8(kind_byte) else {
            return Fragment::Bad {
                detail: "unknown fragment type",
                end: pos + HEADER_BYTES,
                cut_short: header_zero,
            };
        };
        if HEADER_BYTES + len > block_left {
            let end = (pos + HEADER_BYTES).min(eof);
            return Fragment::Bad {
                detail: "fragment length crosses its block",
                end,
                cut_short: false,
            };
        }
        let Some(payload) = self.data.get(pos + HEADER_BYTES..pos + HEADER_BYTES + len) else {
            // A write cut short ends the file inside the fragment. But if
            // some shorter length makes the checksum match, the record was
            // written whole and its length field is what was damaged.
            let present = self.data.get(pos + HEADER_BYTES..eof).unwrap_or(&[]);
            if checksum_matches_some_prefix(kind, present, crc) {
                return Fragment::Bad {
                    detail: "fragment length damaged",
                    end: eof,
                    cut_short: false,
                };
            }
            return Fragment::Bad {
                detail: "fragment runs past the end of the file",
                end: eof,
                cut_short: true,
            };
        };
        if fragment_crc(kind, payload) != crc {
            let last_zero = payload.last().is_none_or(|&b| b == 0);
            let end = pos + HEADER_BYTES + len;
            return Fragment::Bad {
                detail: "fragment checksum mismatch",
                end,
                cut_short: last_zero,
            };
        }
        Fragment::Good {
            kind,
            payload,
            next: pos + HEADER_BYTES + len,
        }
    }

    /// True when a byte after `end` is not zero: something was written after
    /// the damaged fragment, so it was not the last append.
    fn written_after(&self, end: usize) -> bool {
        self.data
            .get(end..)
            .is_some_and(|rest| rest.iter().any(|&b| b != 0))
    }

    /// Ends reading at a damaged record that starts at `offset`; its bad part
    /// ends at `end`. It is a torn tail only if it was `cut_short` and nothing
    /// was written after it.
    fn damaged(
        &mut self,
        offset: usize,
        end: usize,
        cut_short: bool,
        detail: &'static str,
    ) -> Read {
        let torn = cut_short && !self.written_after(end);
        // Reading stops here either way.
        self.pos = self.data.len();
        if torn {
            Read::Torn {
                offset: offset as u64,
                detail,
            }
        } else {
            Read::Corrupt {
                offset: offset as u64,
                detail,
            }
        }
    }

    /// The newest seqno named by a sync mark (`wal::batch::encode_sync_mark`)
    /// that starts at or after byte `from`, found by its bytes alone: every
    /// offset is tried, so damage before a mark, whatever it did to the
    /// framing, cannot hide it. A mark is one FULL fragment of a 12-byte
    /// payload with a valid checksum, or a FIRST fragment that ends its
    /// block and a LAST one that starts the next, 12 bytes together; a
    /// false find (bytes inside a value that happen to frame a mark) can
    /// only make an open more careful.
    pub(crate) fn newest_sync_mark_from(&self, from: usize) -> Option<u64> {
        let mut newest: Option<u64> = None;
        let mut found = |seqno: u64| newest = Some(newest.map_or(seqno, |n| n.max(seqno)));
        // Split across a block boundary: the LAST fragment starts a block.
        let first_block = from.div_ceil(BLOCK_BYTES).max(1);
        for block in first_block..=self.data.len() / BLOCK_BYTES {
            if let Some(seqno) = self.split_mark_at(block * BLOCK_BYTES) {
                found(seqno);
            }
        }
        let last_start = self.data.len().checked_sub(HEADER_BYTES + MARK_BYTES)?;
        for pos in from..=last_start {
            let payload = self.framed_at(pos, FragmentType::Full, MARK_BYTES);
            if let Some(seqno) = payload.and_then(super::batch::parse_sync_mark) {
                found(seqno);
            }
        }
        newest
    }

    /// The payload of a good fragment of `kind` and `len` payload bytes at
    /// `pos`, if one is there (its type and length are checked before its
    /// checksum, so that a search over every offset stays cheap).
    fn framed_at(&self, pos: usize, kind: FragmentType, len: usize) -> Option<&[u8]> {
        let header = self.data.get(pos..pos + HEADER_BYTES)?;
        let framed = header.get(6) == Some(&(kind as u8))
            && header.get(4..6) == Some(&(len as u16).to_le_bytes()[..]);
        let payload = self
            .data
            .get(pos + HEADER_BYTES..pos + HEADER_BYTES + len)
            .filter(|_| framed)?;
        (get_u32_at(header, 0) == Some(fragment_crc(kind, payload))).then_some(payload)
    }

    /// True when an empty record (one FULL fragment of no payload) starts
    /// at or after byte `from`, found by its bytes alone, as
    /// `newest_sync_mark_from` finds marks. The manifest's sync mark: an
    /// empty edit, appended after each synced edit.
    pub(crate) fn has_empty_record_from(&self, from: usize) -> bool {
        let [c0, c1, c2, c3] = fragment_crc(FragmentType::Full, &[]).to_le_bytes();
        let empty = [c0, c1, c2, c3, 0, 0, FragmentType::Full as u8];
        self.data
            .get(from..)
            .is_some_and(|rest| rest.windows(HEADER_BYTES).any(|w| w == empty))
    }

    /// A sync mark written as a FIRST fragment that ends the block before
    /// `block_start` and a LAST fragment at `block_start`.
    fn split_mark_at(&self, block_start: usize) -> Option<u64> {
        let last_len = usize::from(u16::from_le_bytes([
            *self.data.get(block_start + 4)?,
            *self.data.get(block_start + 5)?,
        ]));
        let first_len = MARK_BYTES.checked_sub(last_len)?;
        let tail = self.framed_at(block_start, FragmentType::Last, last_len)?;
        let head = self.framed_at(
            block_start.checked_sub(HEADER_BYTES + first_len)?,
            FragmentType::First,
            first_len,
        )?;
        let mut mark = head.to_vec();
        mark.extend_from_slice(tail);
        super::batch::parse_sync_mark(&mark)
    }

    /// The next record.
    pub(crate) fn next(&mut self) -> Read {
        let mut record: Option<(usize, Vec<u8>)> = None;
        loop {
            let pos = self.pos;
            match self.fragment_at(pos) {
                Fragment::End => {
                    return match record {
                        None => Read::End,
                        Some((start, _)) => self.damaged(
                            start,
                            self.data.len(),
                            true,
                            "record cut short at the end of the log",
                        ),
                    };
                }
                Fragment::Padding => {
                    self.pos = (pos / BLOCK_BYTES + 1) * BLOCK_BYTES;
                }
                Fragment::Bad {
                    detail,
                    end,
                    cut_short,
                } => {
                    let start = record.map_or(pos, |(s, _)| s);
                    return self.damaged(start, end, cut_short, detail);
                }
                Fragment::Good {
                    kind,
                    payload,
                    next,
                } => {
                    let payload = payload.to_vec();
                    self.pos = next;
                    match (kind, record.take()) {
                        (FragmentType::Full, None) => {
                            return Read::Record {
                                offset: pos as u64,
                                data: payload,
                            };
                        }
                        (FragmentType::First, None) => record = Some((pos, payload)),
                        (FragmentType::Middle, Some((start, mut data))) => {
                            data.extend_from_slice(&payload);
                            record = Some((start, data));
                        }
                        (FragmentType::Last, Some((start, mut data))) => {
                            data.extend_from_slice(&payload);
                            return Read::Record {
                                offset: start as u64,
                                data,
                            };
                        }
                        (_, Some((start, _))) => {
                            return self.damaged(
                                start,
                                next,
                                false,
                                "record interrupted by a new record",
                            )
                        }
                        (_, None) => {
                            return self.damaged(
                                pos,
                                next,
                                false,
                                "continuation fragment without a first fragment",
                            )
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::{Fs, OsFs};
    use crate::wal::writer::LogWriter;

    fn write_log(records: &[Vec<u8>]) -> Vec<u8> {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("log");
        let fs = OsFs::new();
        let mut w = LogWriter::new(fs.create(&path).expect("create"));
        for r in records {
            w.add_record(r).expect("append");
        }
        w.sync().expect("sync");
        fs.read_all(&path).expect("read")
    }

    fn read_all(data: Vec<u8>) -> (Vec<Vec<u8>>, Read) {
        let mut r = LogReader::new(data);
        let mut out = Vec::new();
        loop {
            match r.next() {
                Read::Record { data, .. } => out.push(data),
                other => return (out, other),
            }
        }
    }

    #[test]
    fn golden_bytes_of_the_manifests_sync_mark() {
        // Goal: the manifest's mark, an empty record, is pinned
        // (docs/format.md), and the search finds it and only after `from`.
        let empty = write_log(&[Vec::new()]);
        assert_eq!(empty, [0x52, 0xd0, 0x16, 0xa0, 0, 0, 1]);
        let mut log = write_log(&[vec![5; 40]]);
        assert!(!LogReader::new(log.clone()).has_empty_record_from(0));
        log.extend_from_slice(&empty);
        assert!(LogReader::new(log.clone()).has_empty_record_from(47));
        assert!(!LogReader::new(log).has_empty_record_from(48));
    }

    #[test]
    fn sync_marks_are_found_after_damage_whole_or_split_across_blocks() {
        // Goal: the open's proof that damage lies in synced records, a sync
        // mark after it, is found whatever the damage did to the framing,
        // including a mark split into a FIRST and a LAST fragment at a block
        // boundary; a mark before the place looked from is not counted.
        use crate::wal::batch::encode_sync_mark;
        for filler in 0..40usize {
            // A record that leaves `filler` bytes of the first block for
            // what follows: marks land whole, split at every point, or after
            // the boundary.
            let first = BLOCK_BYTES - 2 * HEADER_BYTES - 12 - filler;
            let records = vec![
                encode_sync_mark(7).to_vec(),
                vec![0xab; first],
                encode_sync_mark(41).to_vec(),
                vec![0xcd; 300],
            ];
            let mut data = write_log(&records);
            if (HEADER_BYTES..HEADER_BYTES + 12).contains(&filler) {
                assert_eq!(
                    data.get(BLOCK_BYTES + 6),
                    Some(&(FragmentType::Last as u8)),
                    "filler {filler}: the mark is split"
                );
            }
            let reader = LogReader::new(data.clone());
            assert_eq!(reader.newest_sync_mark_from(0), Some(41), "filler {filler}");
            // Zeros over the middle of the big record: the framing after it
            // is lost to a sequential reader, not to the search.
            let hole = HEADER_BYTES * 2 + 12 + 100;
            data.get_mut(hole..hole + 512).expect("inside").fill(0);
            let mut damaged = LogReader::new(data.clone());
            assert_eq!(
                damaged.next(),
                Read::Record {
                    offset: 0,
                    data: encode_sync_mark(7).to_vec()
                }
            );
            assert!(
                matches!(damaged.next(), Read::Corrupt { .. }),
                "filler {filler}"
            );
            assert_eq!(
                damaged.newest_sync_mark_from(hole),
                Some(41),
                "filler {filler}"
            );
            // From past every mark, nothing.
            let end = data.len() - 300;
            assert_eq!(damaged.newest_sync_mark_from(end), None);
            // The first mark alone is behind the big record.
            assert_eq!(
                LogReader::new(data.get(..HEADER_BYTES + 12).expect("inside").to_vec())
                    .newest_sync_mark_from(0),
                Some(7)
            );
        }
    }

    fn sample_records() -> Vec<Vec<u8>> {
        // Sizes chosen to hit FULL, FIRST/MIDDLE/LAST, exact block fills and block-tail padding.
        [
            0usize,
            1,
            100,
            BLOCK_BYTES - 2 * HEADER_BYTES,
            3,
            BLOCK_BYTES * 3 + 17,
            5,
            1000,
        ]
        .iter()
        .enumerate()
        .map(|(i, &n)| (0..n).map(|j| (i * 31 + j) as u8).collect())
        .collect()
    }

    #[test]
    fn records_round_trip_across_blocks() {
        let records = sample_records();
        let (got, end) = read_all(write_log(&records));
        assert_eq!(got, records);
        assert_eq!(end, Read::End);
    }

    #[test]
    fn truncation_anywhere_is_a_torn_tail_and_keeps_a_prefix() {
        // Goal: a crash that cuts the log at any byte loses only whole records
        // at the end, and is never reported as corruption.
        let records = sample_records();
        let full = write_log(&records);
        let step = 97;
        for cut in (0..full.len()).step_by(step) {
            let (got, end) = read_all(full.get(..cut).expect("in range").to_vec());
            assert!(records.starts_with(&got), "cut at {cut}: not a prefix");
            assert!(
                matches!(end, Read::End | Read::Torn { .. }),
                "cut at {cut}: {end:?}"
            );
        }
    }

    #[test]
    fn zeroed_tail_is_torn() {
        let records = sample_records();
        let mut full = write_log(&records);
        let len = full.len();
        full.extend(std::iter::repeat_n(0u8, 5000));
        let (got, end) = read_all(full);
        assert_eq!(got, records);
        assert!(
            matches!(end, Read::End | Read::Torn { .. }),
            "{end:?} at len {len}"
        );
    }

    #[test]
    fn damage_before_valid_blocks_is_corruption() {
        let records: Vec<Vec<u8>> = (0..200).map(|i| vec![i as u8; 1000]).collect();
        let mut full = write_log(&records);
        if let Some(b) = full.get_mut(100) {
            *b ^= 0x40;
        }
        let (got, end) = read_all(full);
        assert!(got.is_empty());
        assert!(matches!(end, Read::Corrupt { offset: 0, .. }), "{end:?}");
    }

    #[test]
    fn a_flipped_length_in_a_small_log_is_corruption_not_a_torn_tail() {
        // Goal: a whole record whose length field was damaged so that it
        // claims to run past the end of the file is not mistaken for an
        // append cut short (which would silently drop it and what follows).
        let records: Vec<Vec<u8>> = vec![vec![1; 12], vec![2; 40], vec![3; 9]];
        let full = write_log(&records);
        let second = HEADER_BYTES + 12;
        for (byte, xor) in [(second + 5, 0x01u8), (second + 4, 0x80)] {
            let mut damaged = full.clone();
            if let Some(b) = damaged.get_mut(byte) {
                *b ^= xor;
            }
            let (got, end) = read_all(damaged);
            assert_eq!(got, records.iter().take(1).cloned().collect::<Vec<_>>());
            assert!(matches!(end, Read::Corrupt { .. }), "byte {byte}: {end:?}");
        }
    }

    #[test]
    fn a_flip_in_the_last_record_is_corruption() {
        let records: Vec<Vec<u8>> = vec![vec![1; 12], vec![2; 40]];
        let mut damaged = write_log(&records);
        let at = damaged.len() - 10;
        if let Some(b) = damaged.get_mut(at) {
            *b ^= 0x04;
        }
        let (_, end) = read_all(damaged);
        assert!(matches!(end, Read::Corrupt { .. }), "{end:?}");
    }

    #[test]
    fn every_single_byte_flip_is_detected() {
        // Goal: no flipped byte yields a record that was not written.
        let records: Vec<Vec<u8>> = (0..50).map(|i| vec![i as u8; 1500]).collect();
        let full = write_log(&records);
        for pos in (0..full.len()).step_by(37) {
            let mut damaged = full.clone();
            if let Some(b) = damaged.get_mut(pos) {
                *b ^= 0x01;
            }
            let (got, _) = read_all(damaged);
            assert!(
                records.starts_with(&got),
                "flip at {pos} produced a wrong record"
            );
        }
    }
}
