//! The model the crash tests compare a recovered database with: a
//! `BTreeMap` per table, batches of puts and deletes over several tables,
//! and the prefixes of a sequence of batches a state can be.

use std::collections::BTreeMap;
use std::ops::Range;

use rand::rngs::StdRng;
use rand::Rng;
use spinney::{Table, WriteBatch};

/// The contents of one table.
pub type State = BTreeMap<Vec<u8>, Vec<u8>>;

/// A batch: (table index, key, value or None for a delete).
pub type Batch = Vec<(usize, Vec<u8>, Option<Vec<u8>>)>;

/// The key of number `n`: "key" and five digits, so keys sort as numbers.
pub fn key(n: u32) -> Vec<u8> {
    format!("key{n:05}").into_bytes()
}

/// A 16-byte key of number `i` ("key" and 13 digits: db_bench's size, in
/// number order).
pub fn key16(i: u64) -> Vec<u8> {
    format!("key{i:013}").into_bytes()
}

/// A 100-byte value that names its key's number and a version.
pub fn value100(i: u64, version: u64) -> Vec<u8> {
    let mut v = format!("value {i} version {version} ").into_bytes();
    v.resize(100, b'.');
    v
}

/// A value of a length drawn from `len` and a random fill, ending in 8
/// random bytes, so that a stale value cannot pass for a newer one.
pub fn value(rng: &mut StdRng, len: Range<usize>) -> Vec<u8> {
    let len = rng.gen_range(len);
    let mut v = vec![rng.gen::<u8>(); len];
    v.extend_from_slice(&rng.gen::<u64>().to_le_bytes());
    v
}

/// Applies `batch` to the models of the tables it writes.
pub fn apply(models: &mut [State], batch: &Batch) {
    for (table, key, value) in batch {
        match value {
            Some(v) => models[*table].insert(key.clone(), v.clone()),
            None => models[*table].remove(key),
        };
    }
}

/// The models of `tables` tables after all of `batches`.
pub fn state_after(batches: &[Batch], tables: usize) -> Vec<State> {
    let mut models = vec![State::new(); tables];
    for b in batches {
        apply(&mut models, b);
    }
    models
}

/// `batch` as a `WriteBatch` over `tables`.
pub fn write_batch(tables: &[Table], batch: &Batch) -> WriteBatch {
    let mut b = WriteBatch::new();
    for (table, key, value) in batch {
        match value {
            Some(v) => b.put(&tables[*table], key, v),
            None => b.delete(&tables[*table], key),
        }
    }
    b
}

/// The prefix lengths `n` in `lo..=hi` whose models after the first `n`
/// of `batches` equal `state`.
pub fn matching_prefixes(batches: &[Batch], state: &[State], lo: usize, hi: usize) -> Vec<usize> {
    let mut model = vec![State::new(); state.len()];
    let mut found = Vec::new();
    for n in 0..=hi.min(batches.len()) {
        if n >= lo && model == state {
            found.push(n);
        }
        if let Some(b) = batches.get(n) {
            apply(&mut model, b);
        }
    }
    found
}

/// A value that is, `overflow_percent` times in 100, too large for a 4 KiB
/// page's cell (1,015 bytes), so that it goes to one or two overflow pages;
/// otherwise short.
pub fn overflow_value(rng: &mut StdRng, overflow_percent: u32) -> Vec<u8> {
    let len = if rng.gen_range(0..100) < overflow_percent {
        1_100..7_000
    } else {
        20..200
    };
    value(rng, len)
}
