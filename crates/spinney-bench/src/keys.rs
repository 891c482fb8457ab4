//! Keys and values as LevelDB's db_bench makes them (and keys as RocksDB's,
//! for comparing figures with its db_bench).
//!
//! A key is the decimal number of the entry, zero-padded to a fixed width of
//! `--key_size` bytes (`%016d` for the default 16), so that key order is
//! number order. With `--key_format=binary` it is RocksDB's db_bench key
//! instead: the number in (up to) 8 big-endian bytes, then `'0'` bytes up
//! to the width; key order is number order too, and a shorter common
//! prefix makes comparisons cheaper. A missing key is an existing key with `.` appended: one byte
//! longer, as RocksDB's `readmissing` makes its keys (it reads with
//! `key_size + 1`), and sorted right after the key it extends, so that a
//! lookup walks the same path as a hit and only the last comparison (or the
//! bloom filter) tells it apart.
//!
//! Values come from a buffer of random bytes that compresses to about half
//! its size (db_bench's `RandomGenerator` with `--compression_ratio=0.5`):
//! pieces of 100 bytes, each 50 random printable bytes written twice. A value
//! is the next `value_size` bytes of the buffer, wrapping at its end.
//!
//! Thread-safety: plain values; each worker thread owns its own.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// The share of a value that survives compression, as db_bench's default
/// `--compression_ratio`.
pub const COMPRESSION_RATIO: f64 = 0.5;

/// Bytes of the value buffer, as db_bench's: far larger than a block or a
/// page (the unit the engine compresses), so that the values in one block
/// are different bytes and compress only by the ratio's own redundancy.
const VALUE_BUFFER_BYTES: usize = 1 << 20;

/// Bytes of one compressible piece of the value buffer.
const PIECE_BYTES: usize = 100;

/// How the number of an entry is written into its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KeyStyle {
    /// Zero-padded decimal digits (LevelDB's db_bench).
    #[default]
    Decimal,
    /// Up to 8 big-endian bytes, then `'0'` padding (RocksDB's db_bench).
    Binary,
}

impl KeyStyle {
    /// The name `--key_format` takes.
    pub fn name(self) -> &'static str {
        match self {
            KeyStyle::Decimal => "decimal",
            KeyStyle::Binary => "binary",
        }
    }
}

/// How keys look: numbers of a fixed width, in decimal or binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyFormat {
    width: usize,
    style: KeyStyle,
}

impl KeyFormat {
    /// Decimal keys of `width` bytes. A width of 0 is treated as 1.
    pub fn new(width: usize) -> KeyFormat {
        KeyFormat::with_style(width, KeyStyle::Decimal)
    }

    /// Keys of `width` bytes in `style`. A width of 0 is treated as 1.
    pub fn with_style(width: usize, style: KeyStyle) -> KeyFormat {
        KeyFormat {
            width: width.max(1),
            style,
        }
    }

    /// The key width in bytes.
    pub fn width(&self) -> usize {
        self.width
    }

    /// How many distinct keys fit the width (10^width or 256^width,
    /// saturating).
    pub fn capacity(&self) -> u64 {
        let digits = u32::try_from(self.width).unwrap_or(u32::MAX);
        let base: u64 = match self.style {
            KeyStyle::Decimal => 10,
            KeyStyle::Binary => 256,
        };
        base.checked_pow(digits).unwrap_or(u64::MAX)
    }

    /// Writes the key of entry `k` into `buf`, replacing its contents. A
    /// number with more digits than the width keeps its low digits (the
    /// configuration checks that `num` fits, so this does not happen in a run).
    pub fn write(&self, k: u64, buf: &mut Vec<u8>) {
        buf.clear();
        buf.resize(self.width, b'0');
        match self.style {
            KeyStyle::Decimal => {
                let mut rest = k;
                for byte in buf.iter_mut().rev() {
                    if rest == 0 {
                        break;
                    }
                    // `rest % 10` is a single digit, so the cast cannot
                    // truncate.
                    *byte = b'0' + (rest % 10) as u8;
                    rest /= 10;
                }
            }
            KeyStyle::Binary => {
                let fill = self.width.min(8);
                let bytes = k.to_be_bytes();
                let tail = bytes.get(8 - fill..).unwrap_or_default();
                if let Some(head) = buf.get_mut(..fill) {
                    head.copy_from_slice(tail);
                }
            }
        }
    }

    /// Writes a key that no fill ever writes, next to the key of entry `k`.
    pub fn write_missing(&self, k: u64, buf: &mut Vec<u8>) {
        self.write(k, buf);
        buf.push(b'.');
    }

    /// The key of entry `k`, as a new vector.
    pub fn key(&self, k: u64) -> Vec<u8> {
        let mut buf = Vec::with_capacity(self.width + 1);
        self.write(k, &mut buf);
        buf
    }
}

/// Compressible value bytes, handed out in slices.
#[derive(Debug, Clone)]
pub struct ValueGenerator {
    data: Vec<u8>,
    pos: usize,
}

impl ValueGenerator {
    /// A buffer made from `seed`, large enough for values of `value_size`.
    pub fn new(seed: u64, value_size: usize) -> ValueGenerator {
        let mut rng = SmallRng::seed_from_u64(seed);
        let target = VALUE_BUFFER_BYTES.max(value_size.saturating_mul(2));
        let raw = ((PIECE_BYTES as f64) * COMPRESSION_RATIO) as usize;
        let mut data = Vec::with_capacity(target + PIECE_BYTES);
        let mut piece = Vec::with_capacity(PIECE_BYTES);
        while data.len() < target {
            // A piece: `raw` random printable bytes, repeated to fill it, so
            // a compressor keeps the first copy and refers to it after.
            piece.clear();
            for _ in 0..raw.max(1) {
                piece.push(b' ' + rng.gen_range(0..95u8));
            }
            while piece.len() < PIECE_BYTES {
                let take = (PIECE_BYTES - piece.len()).min(raw.max(1));
                piece.extend_from_within(..take);
            }
            data.extend_from_slice(&piece);
        }
        ValueGenerator { data, pos: 0 }
    }

    /// The next `len` bytes of the buffer, starting over at its beginning
    /// when fewer than `len` remain.
    pub fn next(&mut self, len: usize) -> &[u8] {
        if self.pos + len > self.data.len() {
            self.pos = 0;
        }
        let start = self.pos;
        self.pos += len;
        self.data.get(start..start + len).unwrap_or_default()
    }
}

/// The random number generator of one worker of one benchmark: seeded from
/// `--seed`, the benchmark's position in the list and the thread, so that a
/// run with the same flags makes the same keys, and two threads or two
/// benchmarks do not make the same sequence.
pub fn worker_rng(seed: u64, benchmark_index: usize, thread: usize) -> SmallRng {
    SmallRng::seed_from_u64(mix(seed
        ^ (benchmark_index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ (thread as u64 + 1).wrapping_mul(0xBF58_476D_1CE4_E5B9)))
}

/// SplitMix64's finaliser: spreads the bits of `z` over all 64 bits.
pub fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_zero_padded_decimal_of_the_width() {
        // Goal: the key layout of db_bench (`%016d`), for the default and
        // for other widths, and the missing key is the key plus '.'.
        let f = KeyFormat::new(16);
        assert_eq!(f.key(0), b"0000000000000000");
        assert_eq!(f.key(42), b"0000000000000042");
        assert_eq!(f.key(1_234_567), b"0000000001234567");
        let mut buf = Vec::new();
        f.write_missing(42, &mut buf);
        assert_eq!(buf, b"0000000000000042.");
        assert_eq!(KeyFormat::new(4).key(7), b"0007");
        assert_eq!(KeyFormat::new(4).capacity(), 10_000);
        assert_eq!(KeyFormat::new(30).capacity(), u64::MAX);
    }

    #[test]
    fn binary_keys_are_rocksdb_db_bench_keys() {
        // Goal: RocksDB's GenerateKeyFromInt: 8 big-endian bytes, then '0'
        // padding; fewer bytes for narrow keys; order is number order.
        let f = KeyFormat::with_style(16, KeyStyle::Binary);
        assert_eq!(f.key(0x0102), b"\0\0\0\0\0\0\x01\x0200000000");
        let narrow = KeyFormat::with_style(3, KeyStyle::Binary);
        assert_eq!(narrow.key(0x010203), b"\x01\x02\x03");
        assert_eq!(narrow.capacity(), 1 << 24);
        assert_eq!(f.capacity(), u64::MAX);
        let keys: Vec<Vec<u8>> = [0u64, 255, 256, 70_000, 1 << 40]
            .iter()
            .map(|&k| f.key(k))
            .collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn key_order_is_number_order() {
        // Goal: sequential fills are in key order, so fillseq appends.
        let f = KeyFormat::new(8);
        let keys: Vec<Vec<u8>> = [0u64, 9, 10, 99, 100, 12_345_678]
            .iter()
            .map(|&k| f.key(k))
            .collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn values_compress_to_about_half() {
        // Goal: the value buffer has the redundancy db_bench's has: every
        // 100-byte piece is its first 50 bytes twice over.
        let mut g = ValueGenerator::new(7, 100);
        let v = g.next(100).to_vec();
        assert_eq!(v.len(), 100);
        assert_eq!(v[..50], v[50..]);
        assert!(v.iter().all(|b| (b' '..=b'~').contains(b)));
        // Successive values are different slices of the buffer.
        assert_ne!(g.next(100), &v[..]);
    }

    #[test]
    fn values_wrap_at_the_end_of_the_buffer() {
        // Goal: a value never runs past the buffer and always has its length.
        let mut g = ValueGenerator::new(1, 3000);
        for _ in 0..1000 {
            assert_eq!(g.next(3000).len(), 3000);
        }
    }
}
