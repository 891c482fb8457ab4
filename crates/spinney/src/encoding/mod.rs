//! Integer encodings and checksums shared by every on-disk format.
//!
//! Fixed-width integers are little-endian. Varints are LEB128 (7 bits per
//! byte, low bits first), as in LevelDB. Checksums are CRC32C. Decoding never
//! panics: a short or malformed input is a `DecodeError` with the offset at
//! which it was found, which the caller turns into `Error::Corruption` naming
//! its file.

mod decoder;

pub(crate) use decoder::{DecodeError, Decoder};

/// CRC32C of `data`.
pub(crate) fn crc32c(data: &[u8]) -> u32 {
    crc32c::crc32c(data)
}

/// CRC32C of the concatenation of `a` and `b`.
pub(crate) fn crc32c2(a: &[u8], b: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(a), b)
}

pub(crate) fn put_u8(dst: &mut Vec<u8>, v: u8) {
    dst.push(v);
}

pub(crate) fn put_u32(dst: &mut Vec<u8>, v: u32) {
    dst.extend_from_slice(&v.to_le_bytes());
}

pub(crate) fn put_u64(dst: &mut Vec<u8>, v: u64) {
    dst.extend_from_slice(&v.to_le_bytes());
}

pub(crate) fn put_varint32(dst: &mut Vec<u8>, v: u32) {
    put_varint64(dst, u64::from(v));
}

pub(crate) fn put_varint64(dst: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        dst.push((v as u8) | 0x80);
        v >>= 7;
    }
    dst.push(v as u8);
}

/// A varint length followed by that many bytes.
pub(crate) fn put_length_prefixed(dst: &mut Vec<u8>, bytes: &[u8]) {
    put_varint64(dst, bytes.len() as u64);
    dst.extend_from_slice(bytes);
}

/// Number of bytes `put_varint64(v)` writes.
#[cfg(test)]
pub(crate) fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// Reads a little-endian u32 at `pos`, or None if `buf` is too short.
pub(crate) fn get_u32_at(buf: &[u8], pos: usize) -> Option<u32> {
    let bytes = buf.get(pos..pos.checked_add(4)?)?;
    Some(u32::from_le_bytes(bytes.try_into().ok()?))
}

/// Reads a little-endian u64 at `pos`, or None if `buf` is too short.
pub(crate) fn get_u64_at(buf: &[u8], pos: usize) -> Option<u64> {
    let bytes = buf.get(pos..pos.checked_add(8)?)?;
    Some(u64::from_le_bytes(bytes.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_round_trips_at_every_width() {
        let values = [
            0u64,
            1,
            127,
            128,
            255,
            300,
            16_383,
            16_384,
            u32::MAX as u64,
            u64::MAX - 1,
            u64::MAX,
        ];
        for &v in &values {
            let mut buf = Vec::new();
            put_varint64(&mut buf, v);
            assert_eq!(buf.len(), varint_len(v));
            let mut d = Decoder::new(&buf);
            assert_eq!(d.varint64().expect("decodes"), v);
            assert!(d.is_empty());
        }
    }

    #[test]
    fn varint_golden_bytes() {
        let mut buf = Vec::new();
        put_varint64(&mut buf, 300);
        assert_eq!(buf, [0xAC, 0x02]);
    }

    #[test]
    fn truncated_varint_is_an_error_not_a_panic() {
        let mut d = Decoder::new(&[0x80, 0x80]);
        assert!(d.varint64().is_err());
    }

    #[test]
    fn overlong_varint_is_an_error() {
        let buf = [0xFFu8; 11];
        assert!(Decoder::new(&buf).varint64().is_err());
        // A 10-byte varint whose last byte carries bits past 64 is rejected too.
        let mut buf = vec![0xFFu8; 9];
        buf.push(0x7F);
        assert!(Decoder::new(&buf).varint64().is_err());
        // But u64::MAX itself decodes.
        let mut buf = vec![0xFFu8; 9];
        buf.push(0x01);
        assert_eq!(Decoder::new(&buf).varint64().expect("fits"), u64::MAX);
    }

    #[test]
    fn varint32_rejects_values_past_u32() {
        let mut buf = Vec::new();
        put_varint64(&mut buf, u64::from(u32::MAX) + 1);
        assert!(Decoder::new(&buf).varint32().is_err());
    }
}
