//! Appends framed records to a log file (a WAL segment or a manifest).
//!
//! Thread-safety: one owner; the database guards its writer with a mutex.

use super::format::{fragment_crc, FragmentType, BLOCK_BYTES, HEADER_BYTES};
use crate::error::Result;
use crate::fs::WritableFile;

pub(crate) struct LogWriter {
    file: Box<dyn WritableFile>,
    /// Bytes used in the current block.
    block_offset: usize,
    scratch: Vec<u8>,
    /// A record written just before the first record appended (a log
    /// segment's header), so that a file nothing was appended to stays
    /// empty.
    first: Option<Vec<u8>>,
}

impl LogWriter {
    pub(crate) fn new(file: Box<dyn WritableFile>) -> LogWriter {
        let block_offset = (file.len() % BLOCK_BYTES as u64) as usize;
        LogWriter {
            file,
            block_offset,
            scratch: Vec::new(),
            first: None,
        }
    }

    /// A writer of a new file whose first record, written just before the
    /// first record appended, is `header`: a file it is dropped from with
    /// nothing appended stays empty.
    pub(crate) fn with_header(file: Box<dyn WritableFile>, header: &[u8]) -> LogWriter {
        LogWriter {
            first: Some(header.to_vec()),
            ..LogWriter::new(file)
        }
    }

    /// Appends one record. It reaches the OS at the next `flush` or `sync`
    /// (or earlier, when the file's buffer fills).
    pub(crate) fn add_record(&mut self, record: &[u8]) -> Result<()> {
        if let Some(header) = self.first.take() {
            self.add_record(&header)?;
        }
        self.scratch.clear();
        let mut rest = record;
        let mut first = true;
        loop {
            let left_in_block = BLOCK_BYTES - self.block_offset;
            if left_in_block < HEADER_BYTES {
                // Too small for a header: pad with zeros and start a new block.
                self.scratch.extend(std::iter::repeat_n(0u8, left_in_block));
                self.block_offset = 0;
                continue;
            }
            let room = left_in_block - HEADER_BYTES;
            let take = rest.len().min(room);
            let (payload, tail) = rest.split_at(take);
            let last = tail.is_empty();
            let kind = match (first, last) {
                (true, true) => FragmentType::Full,
                (true, false) => FragmentType::First,
                (false, false) => FragmentType::Middle,
                (false, true) => FragmentType::Last,
            };
            self.scratch
                .extend_from_slice(&fragment_crc(kind, payload).to_le_bytes());
            self.scratch.extend_from_slice(&(take as u16).to_le_bytes());
            self.scratch.push(kind as u8);
            self.scratch.extend_from_slice(payload);
            self.block_offset += HEADER_BYTES + take;
            rest = tail;
            first = false;
            if last {
                break;
            }
        }
        self.file.append(&self.scratch)
    }

    pub(crate) fn flush(&mut self) -> Result<()> {
        self.file.flush()
    }

    pub(crate) fn sync(&mut self) -> Result<()> {
        self.file.sync()
    }

    /// Syncs a log that takes no more records (`WritableFile::finish`).
    pub(crate) fn finish(&mut self) -> Result<()> {
        self.file.finish()
    }

    /// Bytes written to the file so far.
    pub(crate) fn len(&self) -> u64 {
        self.file.len()
    }
}
