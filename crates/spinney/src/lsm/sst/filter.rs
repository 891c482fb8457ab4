//! The bloom filter of an SST: one filter over the user keys of the whole
//! file, so that a point read of an absent key usually reads no data block.
//!
//! Byte layout (docs/format.md#filter-block), two forms told apart by the
//! last byte's top bit:
//! ```text
//! filter  := blocked | spread
//! blocked := lines[n_lines * 64] (0x80 | num_probes):u8
//! spread  := bits[n_bytes] num_probes:u8
//! ```
//! Both hash a user key with `h = xxh3_64(user_key)`. A **blocked** filter
//! (what the builder writes) puts all of a key's probes in one 64-byte line:
//! line `((h >> 32) * n_lines) >> 32`, and within it the top 9 bits of
//! `g, g * M, g * M^2, ...` (wrapping u32 products, `g = h as u32`,
//! `M = 0x9E37_79B9`), bit `b` being bit `b % 8` of the line's byte `b / 8`.
//! A point read then waits for one cache miss, not one per probe, for an
//! eighth more false positives (0.94% against 0.83% at 10 bits per key;
//! the cache-local bloom of RocksDB's format 5 filters). A **spread**
//! filter (files written before 2026-11-24) sets the probes `(h + j * delta) mod (8 * n_bytes)`, `delta = rotl(h, 32) | 1`
//! (double hashing, Kirsch and Mitzenmacher).
//!
//! Thread-safety: a built `BloomFilter` is immutable and shared.
#![deny(clippy::indexing_slicing)]

use std::path::Path;

use xxhash_rust::xxh3::xxh3_64;

use crate::error::{Error, Result};

/// Most probes a filter may ask for; the builder never uses more than 30.
const PROBES_MAX: u8 = 30;

/// The filter never has fewer bits than this, so that tiny files still get
/// a useful false-positive rate.
const BITS_MIN: u64 = 64;

/// The last byte's top bit: a blocked filter.
const BLOCKED: u8 = 0x80;

/// Bytes of a blocked filter's line: a cache line.
const LINE_BYTES: usize = 64;

/// The multiplier that steps from one probe of a line to the next.
const PROBE_STEP: u32 = 0x9E37_79B9;

pub(crate) fn hash_user_key(user_key: &[u8]) -> u64 {
    xxh3_64(user_key)
}

/// Probes per key: bits_per_key * ln 2 minimises false positives.
fn probes_for(bits_per_key: u32) -> u8 {
    (u64::from(bits_per_key) * 69 / 100).clamp(1, u64::from(PROBES_MAX)) as u8
}

/// Whether bit `bit` of `bytes` is set (bit `b` is bit `b % 8` of byte
/// `b / 8`); false past the end.
fn has_bit(bytes: &[u8], bit: usize) -> bool {
    bytes
        .get(bit / 8)
        .is_some_and(|byte| byte & (1 << (bit % 8)) != 0)
}

/// Sets bit `bit` of `bytes` (nothing past the end).
fn set_bit(bytes: &mut [u8], bit: usize) {
    if let Some(byte) = bytes.get_mut(bit / 8) {
        *byte |= 1 << (bit % 8);
    }
}

/// The probes of a spread filter.
fn spread_probes(hash: u64, num_probes: u8, num_bits: u64) -> impl Iterator<Item = u64> {
    let delta = hash.rotate_left(32) | 1;
    (0..u64::from(num_probes)).map(move |j| hash.wrapping_add(j.wrapping_mul(delta)) % num_bits)
}

/// The line of a blocked filter that holds a key's probes.
fn line_of(hash: u64, num_lines: usize) -> usize {
    (((hash >> 32) * num_lines as u64) >> 32) as usize
}

/// The probes of a blocked filter, bits within the key's line.
fn line_probes(hash: u64, num_probes: u8) -> impl Iterator<Item = usize> {
    let mut g = hash as u32;
    (0..num_probes).map(move |_| {
        let bit = (g >> (32 - 9)) as usize;
        g = g.wrapping_mul(PROBE_STEP);
        bit
    })
}

/// Builds the filter block (blocked) from the hashes of the file's user
/// keys.
pub(crate) fn build(hashes: &[u64], bits_per_key: u32) -> Vec<u8> {
    let num_probes = probes_for(bits_per_key);
    let bits = (hashes.len() as u64)
        .saturating_mul(u64::from(bits_per_key))
        .max(BITS_MIN);
    let num_lines = bits.div_ceil(8 * LINE_BYTES as u64) as usize;
    let mut out = vec![0u8; num_lines * LINE_BYTES];
    for &h in hashes {
        let base = line_of(h, num_lines) * LINE_BYTES * 8;
        for bit in line_probes(h, num_probes) {
            set_bit(&mut out, base + bit);
        }
    }
    out.push(BLOCKED | num_probes);
    out
}

/// One line of a blocked filter, aligned so that it is one cache line.
#[derive(Debug, Clone, Copy)]
#[repr(C, align(64))]
struct Line([u8; LINE_BYTES]);

#[derive(Debug)]
enum Bits {
    Blocked(Vec<Line>),
    Spread(Vec<u8>),
}

/// A filter read back from its block.
#[derive(Debug)]
pub(crate) struct BloomFilter {
    bits: Bits,
    num_probes: u8,
}

impl BloomFilter {
    /// Parses the filter block whose contents start at `offset` in `file`.
    pub(crate) fn new(mut data: Vec<u8>, file: &Path, offset: u64) -> Result<BloomFilter> {
        let last = data.pop().unwrap_or(0);
        let blocked = last & BLOCKED != 0;
        let num_probes = last & !BLOCKED;
        let bad = |why: &str| {
            Error::corruption(
                file,
                offset + data.len() as u64,
                format!(
                    "bad filter block: {} bytes of bits and {num_probes} probes{why}",
                    data.len()
                ),
            )
        };
        if data.is_empty() || num_probes == 0 || num_probes > PROBES_MAX {
            return Err(bad(""));
        }
        let bits = if blocked {
            if !data.len().is_multiple_of(LINE_BYTES) {
                return Err(bad(", not whole lines of 64"));
            }
            Bits::Blocked(
                data.chunks_exact(LINE_BYTES)
                    .map(|c| Line(c.try_into().unwrap_or([0; LINE_BYTES])))
                    .collect(),
            )
        } else {
            Bits::Spread(data)
        };
        Ok(BloomFilter { bits, num_probes })
    }

    /// False when the key is certainly absent from the file.
    pub(crate) fn may_contain(&self, user_key: &[u8]) -> bool {
        let h = hash_user_key(user_key);
        match &self.bits {
            Bits::Blocked(lines) => {
                let Some(line) = lines.get(line_of(h, lines.len())) else {
                    return true;
                };
                line_probes(h, self.num_probes).all(|bit| has_bit(&line.0, bit))
            }
            Bits::Spread(bits) => {
                let num_bits = bits.len() as u64 * 8;
                spread_probes(h, self.num_probes, num_bits).all(|bit| has_bit(bits, bit as usize))
            }
        }
    }

    /// Bytes of the bit array (for dumps).
    pub(crate) fn bytes(&self) -> usize {
        match &self.bits {
            Bits::Blocked(lines) => lines.len() * LINE_BYTES,
            Bits::Spread(bits) => bits.len(),
        }
    }

    pub(crate) fn num_probes(&self) -> u8 {
        self.num_probes
    }

    /// The filter's form, for dumps.
    pub(crate) fn form(&self) -> &'static str {
        match self.bits {
            Bits::Blocked(_) => "blocked in 64-byte lines",
            Bits::Spread(_) => "spread",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hashes_of(keys: &[Vec<u8>]) -> Vec<u64> {
        keys.iter().map(|k| hash_user_key(k)).collect()
    }

    fn filter_of(keys: &[Vec<u8>], bits_per_key: u32) -> BloomFilter {
        BloomFilter::new(build(&hashes_of(keys), bits_per_key), Path::new("f"), 0).expect("parses")
    }

    /// `key00000000`, `key00000001`, ...: `n` keys.
    fn numbered_keys(n: u32) -> Vec<Vec<u8>> {
        (0..n).map(|i| format!("key{i:08}").into_bytes()).collect()
    }

    #[test]
    fn every_added_key_matches() {
        let keys: Vec<Vec<u8>> = (0..5000u32).map(|i| i.to_be_bytes().to_vec()).collect();
        for bits in [1, 5, 10, 30] {
            let f = filter_of(&keys, bits);
            assert!(keys.iter().all(|k| f.may_contain(k)), "bits {bits}");
        }
        let f = filter_of(&[Vec::new()], 10);
        assert!(f.may_contain(b""));
    }

    #[test]
    fn false_positive_rate_at_10_bits_is_below_2_percent() {
        // Goal: the filter earns its keep. Method: 100,000 keys in,
        // 100,000 different keys out, count the out-keys the filter lets
        // through, for the blocked form and (beside it, printed) the spread
        // form of older files.
        let keys = numbered_keys(100_000);
        let blocked = filter_of(&keys, 10);
        let spread = BloomFilter::new(build_spread(&hashes_of(&keys), 10), Path::new("f"), 0)
            .expect("parses");
        let passed = |f: &BloomFilter| {
            (0..100_000u32)
                .filter(|i| f.may_contain(format!("absent{i:08}").as_bytes()))
                .count()
        };
        let (b, s) = (passed(&blocked), passed(&spread));
        eprintln!("false positives in 100,000 at 10 bits/key: blocked {b}, spread {s}");
        assert!(b < 2_000, "{b} false positives in 100,000");
    }

    #[test]
    fn empty_filter_rejects_everything() {
        let f = filter_of(&[], 10);
        assert!(!f.may_contain(b"anything"));
    }

    /// A spread filter, as files written before the blocked form hold.
    fn build_spread(hashes: &[u64], bits_per_key: u32) -> Vec<u8> {
        let num_probes = probes_for(bits_per_key);
        let bits = (hashes.len() as u64 * u64::from(bits_per_key)).max(BITS_MIN);
        let num_bits = bits.div_ceil(8) * 8;
        let mut out = vec![0u8; (num_bits / 8) as usize];
        for &h in hashes {
            for bit in spread_probes(h, num_probes, num_bits) {
                set_bit(&mut out, bit as usize);
            }
        }
        out.push(num_probes);
        out
    }

    #[test]
    fn spread_filters_of_older_files_still_read() {
        let keys = numbered_keys(5000);
        let f = BloomFilter::new(build_spread(&hashes_of(&keys), 10), Path::new("f"), 0)
            .expect("parses");
        assert_eq!(f.form(), "spread");
        assert!(keys.iter().all(|k| f.may_contain(k)));
        let false_positives = (0..5000u32)
            .filter(|i| f.may_contain(format!("absent{i:08}").as_bytes()))
            .count();
        assert!(false_positives < 100, "{false_positives} in 5,000");
    }

    #[test]
    fn a_blocked_filter_sets_every_probe_of_a_key_in_one_line() {
        // Golden bytes: the layout docs/format.md gives, worked by hand.
        // 150 keys (all of one hash) at 5 bits each: 750 bits, so two
        // lines, and 5 * 69 / 100 = 3 probes. h >> 32 = 0xC0000000 picks
        // line (0xC0000000 * 2) >> 32 = 1; g = h as u32 = 1, so the probes
        // are the top 9 bits of 1, 0x9E3779B9 and 0x9E3779B9^2 mod 2^32 =
        // 0xE35E67B1: bits 0, 316 and 454 of line 1, that is bit 0 of its
        // byte 0, bit 4 of byte 39 and bit 6 of byte 56.
        let h: u64 = 0xC000_0000_0000_0001;
        let out = build(&[h; 150], 5);
        let mut expected = vec![0u8; 2 * 64];
        for (at, bits) in [(64, 0x01), (64 + 39, 0x10), (64 + 56, 0x40)] {
            if let Some(b) = expected.get_mut(at) {
                *b = bits;
            }
        }
        expected.push(0x80 | 3);
        assert_eq!(out, expected);
        let f = BloomFilter::new(out, Path::new("f"), 0).expect("parses");
        assert_eq!(f.form(), "blocked in 64-byte lines");
        assert_eq!(f.num_probes(), 3);
    }

    #[test]
    fn a_blocked_filter_of_partial_lines_is_corruption() {
        let mut bad = vec![0u8; 100];
        bad.push(0x80 | 6);
        let e = BloomFilter::new(bad, Path::new("f"), 0).expect_err("refused");
        assert!(
            e.is_corruption() && e.to_string().contains("lines of 64"),
            "{e}"
        );
    }

    #[test]
    fn bad_probe_counts_are_corruption() {
        for bad in [
            vec![],
            vec![0],
            vec![0xFF, 0],
            vec![0xFF, 31],
            vec![0xFF, 0x80],
        ] {
            assert!(BloomFilter::new(bad, Path::new("f"), 0)
                .expect_err("refused")
                .is_corruption());
        }
    }
}
