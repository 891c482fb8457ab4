//! Reads framed records back, telling a torn tail from damage.
//!
//! The reader works on a whole file in memory (a segment is bounded by
//! `Options::wal_segment_size`, a manifest by its rewrite at every open).
//! When it meets a bad fragment it looks at the start of every later block:
//! if none holds a valid fragment, the damage is the tail of the last append
//! and is reported as `Torn`; otherwise data was damaged in the middle of the
//! log and is reported as `Corrupt`.
#![deny(clippy::indexing_slicing)]

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
    Bad(&'static str),
    End,
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
                Fragment::Bad("non-zero block padding")
            };
        }
        let Some(header) = self.data.get(pos..pos + HEADER_BYTES) else {
            return Fragment::Bad("truncated fragment header");
        };
        let crc = get_u32_at(header, 0).unwrap_or(0);
        let len = u16::from_le_bytes([
            header.get(4).copied().unwrap_or(0),
            header.get(5).copied().unwrap_or(0),
        ]) as usize;
        let kind_byte = header.get(6).copied().unwrap_or(0);
        let Some(kind) = FragmentType::from_u8(kind_byte) else {
            return Fragment::Bad("unknown fragment type");
        };
        if HEADER_BYTES + len > block_left {
            return Fragment::Bad("fragment length crosses its block");
        }
        let Some(payload) = self.data.get(pos + HEADER_BYTES..pos + HEADER_BYTES + len) else {
            return Fragment::Bad("fragment runs past the end of the file");
        };
        if fragment_crc(kind, payload) != crc {
            return Fragment::Bad("fragment checksum mismatch");
        }
        Fragment::Good {
            kind,
            payload,
            next: pos + HEADER_BYTES + len,
        }
    }

    /// True when some block after the one holding `pos` starts with a valid fragment.
    fn valid_data_after(&self, pos: usize) -> bool {
        let mut block = (pos / BLOCK_BYTES + 1) * BLOCK_BYTES;
        while block < self.data.len() {
            if matches!(self.fragment_at(block), Fragment::Good { .. }) {
                return true;
            }
            block += BLOCK_BYTES;
        }
        false
    }

    /// Ends reading at a damaged record that starts at `offset` and whose bad
    /// fragment is at `bad`: only blocks after the bad fragment decide whether
    /// the damage is a torn tail.
    fn damaged(&mut self, offset: usize, bad: usize, detail: &'static str) -> Read {
        let valid_after = self.valid_data_after(bad);
        // Reading stops here either way.
        self.pos = self.data.len();
        if valid_after {
            Read::Corrupt {
                offset: offset as u64,
                detail,
            }
        } else {
            Read::Torn {
                offset: offset as u64,
                detail,
            }
        }
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
                        Some((start, _)) => {
                            self.damaged(start, pos, "record cut short at the end of the log")
                        }
                    };
                }
                Fragment::Padding => {
                    self.pos = (pos / BLOCK_BYTES + 1) * BLOCK_BYTES;
                }
                Fragment::Bad(detail) => {
                    let start = record.map_or(pos, |(s, _)| s);
                    return self.damaged(start, pos, detail);
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
                            return self.damaged(start, pos, "record interrupted by a new record")
                        }
                        (_, None) => {
                            return self.damaged(
                                pos,
                                pos,
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
