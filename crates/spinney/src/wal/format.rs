//! Record framing. docs/format.md#write-ahead-log is the byte-level truth.
//!
//! ```text
//! file      := block*            (the last block may be short)
//! block     := fragment* padding (32 KiB; padding is < 7 zero bytes)
//! fragment  := crc32c u32 | length u16 | type u8 | payload[length]
//! crc32c    := CRC32C of (type byte ++ payload)
//! type      := 1 FULL | 2 FIRST | 3 MIDDLE | 4 LAST   (on disk: never renumber)
//! ```
//! A record that fits in the rest of a block is one FULL fragment; a longer
//! one is FIRST, MIDDLE*, LAST. Fragments never straddle a block boundary.
#![deny(clippy::indexing_slicing)]

pub(crate) use crate::limits::WAL_BLOCK_BYTES as BLOCK_BYTES;

/// Bytes of a fragment header.
pub(crate) const HEADER_BYTES: usize = 7;

/// Fragment types. On disk: never renumber.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum FragmentType {
    Full = 1,
    First = 2,
    Middle = 3,
    Last = 4,
}

impl FragmentType {
    pub(crate) fn from_u8(v: u8) -> Option<FragmentType> {
        match v {
            1 => Some(FragmentType::Full),
            2 => Some(FragmentType::First),
            3 => Some(FragmentType::Middle),
            4 => Some(FragmentType::Last),
            _ => None,
        }
    }
}

/// The checksum stored in a fragment header.
pub(crate) fn fragment_crc(kind: FragmentType, payload: &[u8]) -> u32 {
    crate::encoding::crc32c2(&[kind as u8], payload)
}
