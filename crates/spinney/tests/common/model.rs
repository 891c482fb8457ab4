//! The model the crash tests compare a recovered database with: a
//! `BTreeMap` per table, batches of puts, deletes and range deletes over
//! several tables, and the prefixes of a sequence of batches a state can be.

use std::collections::BTreeMap;
use std::ops::Range;

use rand::rngs::StdRng;
use rand::Rng;
use spinney::{Table, WriteBatch};

/// The contents of one table.
pub type State = BTreeMap<Vec<u8>, Vec<u8>>;

/// What one entry of a batch does to its key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Put(Vec<u8>),
    Delete,
    /// Deletes every key from the entry's key up to this one (excluded).
    DeleteTo(Vec<u8>),
}

/// A batch: (table index, key, change).
pub type Batch = Vec<(usize, Vec<u8>, Change)>;

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
    for (table, key, change) in batch {
        let model = &mut models[*table];
        match change {
            Change::Put(v) => {
                model.insert(key.clone(), v.clone());
            }
            Change::Delete => {
                model.remove(key);
            }
            Change::DeleteTo(end) => {
                if key < end {
                    model.retain(|k, _| k < key || k >= end);
                }
            }
        }
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
    for (table, key, change) in batch {
        let table = &tables[*table];
        match change {
            Change::Put(v) => b.put(table, key, v),
            Change::Delete => b.delete(table, key),
            Change::DeleteTo(end) => b.delete_range(table, key.as_slice()..end.as_slice()),
        }
    }
    b
}

/// Commits `entry` alone through its table's own call (`put`, `delete` or
/// `delete_range`), not through a `WriteBatch`.
pub fn write_single(
    tables: &[Table],
    (table, key, change): &(usize, Vec<u8>, Change),
) -> spinney::Result<()> {
    let table = &tables[*table];
    match change {
        Change::Put(v) => table.put(key, v),
        Change::Delete => table.delete(key),
        Change::DeleteTo(end) => table.delete_range(key.as_slice()..end.as_slice()),
    }
}

/// A random change of key number `n` of `key`'s keys, below `keys`:
/// `range_percent` in 100 a range delete of 1 to 30 keys from it,
/// `delete_percent` a delete, otherwise a put of `put()`.
pub fn random_change(
    rng: &mut StdRng,
    n: u32,
    keys: u32,
    range_percent: u32,
    delete_percent: u32,
    put: impl FnOnce(&mut StdRng) -> Vec<u8>,
) -> (Vec<u8>, Change) {
    let roll = rng.gen_range(0..100);
    let change = if roll < range_percent {
        Change::DeleteTo(key((n + rng.gen_range(1..=30)).min(keys)))
    } else if roll < range_percent + delete_percent {
        Change::Delete
    } else {
        Change::Put(put(rng))
    };
    (key(n), change)
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
