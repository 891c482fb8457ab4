//! A bounds-checked reader over a byte slice.

use std::path::Path;

use crate::error::Error;

/// A short or malformed input found while decoding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DecodeError {
    /// Offset, relative to the start of the decoded slice, where it was found.
    pub offset: usize,
    /// What was expected there.
    pub what: &'static str,
}

impl DecodeError {
    /// The corruption error for this decode failure, for a slice that starts
    /// at `base` in `file`.
    pub(crate) fn corruption(&self, file: &Path, base: u64) -> Error {
        Error::corruption(file, base + self.offset as u64, self.what)
    }
}

/// Reads integers and byte strings from a slice, never past its end.
#[derive(Debug, Clone)]
pub(crate) struct Decoder<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Decoder<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Decoder { buf, pos: 0 }
    }

    /// Bytes consumed so far.
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    pub(crate) fn remaining(&self) -> &'a [u8] {
        self.buf.get(self.pos..).unwrap_or(&[])
    }

    pub(crate) fn error(&self, what: &'static str) -> DecodeError {
        DecodeError {
            offset: self.pos,
            what,
        }
    }

    pub(crate) fn bytes(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], DecodeError> {
        let end = self.pos.checked_add(n).ok_or_else(|| self.error(what))?;
        let out = self
            .buf
            .get(self.pos..end)
            .ok_or_else(|| self.error(what))?;
        self.pos = end;
        Ok(out)
    }

    pub(crate) fn u8(&mut self, what: &'static str) -> Result<u8, DecodeError> {
        let b = self.bytes(1, what)?;
        Ok(b.first().copied().unwrap_or_default())
    }

    pub(crate) fn u32(&mut self, what: &'static str) -> Result<u32, DecodeError> {
        let b = self.bytes(4, what)?;
        Ok(u32::from_le_bytes(
            b.try_into().map_err(|_| self.error(what))?,
        ))
    }

    pub(crate) fn u64(&mut self, what: &'static str) -> Result<u64, DecodeError> {
        let b = self.bytes(8, what)?;
        Ok(u64::from_le_bytes(
            b.try_into().map_err(|_| self.error(what))?,
        ))
    }

    pub(crate) fn varint64(&mut self) -> Result<u64, DecodeError> {
        let start = self.pos;
        let mut result = 0u64;
        for i in 0..10u32 {
            let Some(&byte) = self.buf.get(self.pos) else {
                self.pos = start;
                return Err(self.error("truncated varint"));
            };
            self.pos += 1;
            let bits = u64::from(byte & 0x7F);
            // The tenth byte may only carry the single top bit of a u64.
            if i == 9 && bits > 1 {
                self.pos = start;
                return Err(self.error("varint overflows 64 bits"));
            }
            result |= bits << (7 * i);
            if byte & 0x80 == 0 {
                return Ok(result);
            }
        }
        self.pos = start;
        Err(self.error("varint longer than 10 bytes"))
    }

    pub(crate) fn varint32(&mut self) -> Result<u32, DecodeError> {
        let start = self.pos;
        let v = self.varint64()?;
        u32::try_from(v).map_err(|_| DecodeError {
            offset: start,
            what: "varint overflows 32 bits",
        })
    }

    /// A varint length (at most `max`) followed by that many bytes.
    pub(crate) fn length_prefixed(
        &mut self,
        max: usize,
        what: &'static str,
    ) -> Result<&'a [u8], DecodeError> {
        let start = self.pos;
        let len = self.varint64()?;
        if len > max as u64 {
            return Err(DecodeError {
                offset: start,
                what,
            });
        }
        self.bytes(len as usize, what)
    }
}
