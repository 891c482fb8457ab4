//! The bloom filter of an SST: one filter over the user keys of the whole
//! file, so that a point read of an absent key usually reads no data block.
//!
//! Byte layout (docs/format.md#sst):
//! ```text
//! filter := bits[n_bytes] num_probes:u8
//! ```
//! Bit `i` is bit `i % 8` of byte `i / 8`. A key sets the probes
//! `(h1 + j * h2) mod (8 * n_bytes)` for `j` in `0..num_probes`, where
//! `h = xxh3_64(user_key)`, `h1 = h` and `h2 = (h >> 32) | (h << 32) | 1`
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

pub(crate) fn hash_user_key(user_key: &[u8]) -> u64 {
    xxh3_64(user_key)
}

/// Probes per key: bits_per_key * ln 2 minimises false positives.
fn probes_for(bits_per_key: u32) -> u8 {
    (u64::from(bits_per_key) * 69 / 100).clamp(1, u64::from(PROBES_MAX)) as u8
}

fn probes(hash: u64, num_probes: u8, num_bits: u64) -> impl Iterator<Item = u64> {
    let delta = hash.rotate_left(32) | 1;
    (0..u64::from(num_probes)).map(move |j| hash.wrapping_add(j.wrapping_mul(delta)) % num_bits)
}

/// Builds the filter block from the hashes of the file's user keys.
pub(crate) fn build(hashes: &[u64], bits_per_key: u32) -> Vec<u8> {
    let num_probes = probes_for(bits_per_key);
    let bits = (hashes.len() as u64)
        .saturating_mul(u64::from(bits_per_key))
        .max(BITS_MIN);
    let num_bytes = bits.div_ceil(8);
    let num_bits = num_bytes * 8;
    let mut out = vec![0u8; num_bytes as usize];
    for &h in hashes {
        for bit in probes(h, num_probes, num_bits) {
            if let Some(byte) = out.get_mut((bit / 8) as usize) {
                *byte |= 1 << (bit % 8);
            }
        }
    }
    out.push(num_probes);
    out
}

/// A filter read back from its block.
#[derive(Debug)]
pub(crate) struct BloomFilter {
    bits: Vec<u8>,
    num_probes: u8,
}

impl BloomFilter {
    /// Parses the filter block whose contents start at `offset` in `file`.
    pub(crate) fn new(mut data: Vec<u8>, file: &Path, offset: u64) -> Result<BloomFilter> {
        let num_probes = data.pop().unwrap_or(0);
        if data.is_empty() || num_probes == 0 || num_probes > PROBES_MAX {
            return Err(Error::corruption(
                file,
                offset + data.len() as u64,
                format!(
                    "bad filter block: {} bytes of bits and {num_probes} probes",
                    data.len()
                ),
            ));
        }
        Ok(BloomFilter {
            bits: data,
            num_probes,
        })
    }

    /// False when the key is certainly absent from the file.
    pub(crate) fn may_contain(&self, user_key: &[u8]) -> bool {
        let num_bits = self.bits.len() as u64 * 8;
        probes(hash_user_key(user_key), self.num_probes, num_bits).all(|bit| {
            self.bits
                .get((bit / 8) as usize)
                .is_some_and(|byte| byte & (1 << (bit % 8)) != 0)
        })
    }

    /// Bytes of the bit array (for dumps).
    pub(crate) fn bytes(&self) -> usize {
        self.bits.len()
    }

    pub(crate) fn num_probes(&self) -> u8 {
        self.num_probes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter_of(keys: &[Vec<u8>], bits_per_key: u32) -> BloomFilter {
        let hashes: Vec<u64> = keys.iter().map(|k| hash_user_key(k)).collect();
        BloomFilter::new(build(&hashes, bits_per_key), Path::new("f"), 0).expect("parses")
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
        // Goal: the filter earns its keep. Method: 10,000 keys in, 10,000
        // different keys out, count the out-keys the filter lets through.
        let keys: Vec<Vec<u8>> = (0..10_000u32)
            .map(|i| format!("key{i:08}").into_bytes())
            .collect();
        let f = filter_of(&keys, 10);
        let false_positives = (0..10_000u32)
            .filter(|i| f.may_contain(format!("absent{i:08}").as_bytes()))
            .count();
        assert!(
            false_positives < 200,
            "{false_positives} false positives in 10,000"
        );
    }

    #[test]
    fn empty_filter_rejects_everything() {
        let f = filter_of(&[], 10);
        assert!(!f.may_contain(b"anything"));
    }

    #[test]
    fn bad_probe_counts_are_corruption() {
        for bad in [vec![], vec![0], vec![0xFF, 0], vec![0xFF, 31]] {
            assert!(BloomFilter::new(bad, Path::new("f"), 0)
                .expect_err("refused")
                .is_corruption());
        }
    }
}
