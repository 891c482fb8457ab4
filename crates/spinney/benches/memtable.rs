//! Memtable micro-benchmark: spinney's arena skiplist against
//! crossbeam-skiplist's `SkipMap` and a `BTreeMap` behind an `RwLock`, all
//! holding internal keys (user key ++ u64 LE trailer, user key ascending then
//! trailer descending).
//!
//! Each contender inserts 200,000 random 16-byte keys with 100-byte values
//! into an empty map, then looks every key up at the latest snapshot. All
//! three copy the found value out, as the memtable's `get` does.
//!
//! Run: `cargo bench -p spinney --bench memtable --features testing`.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use crossbeam_skiplist::SkipMap;
use parking_lot::RwLock;
use rand::rngs::SmallRng;
use rand::{RngCore, SeedableRng};
use spinney::bench_support::MemTable;

const ENTRIES: usize = 200_000;
const KEY_BYTES: usize = 16;
const VALUE_BYTES: usize = 100;
const SEQNO_MAX: u64 = (1 << 56) - 1;
const KIND_PUT: u64 = 1;

/// An internal key in spinney's order, for the maps that need `Ord`.
#[derive(PartialEq, Eq)]
struct InternalKey(Vec<u8>);

impl InternalKey {
    fn new(user_key: &[u8], seqno: u64) -> InternalKey {
        let mut k = Vec::with_capacity(user_key.len() + 8);
        k.extend_from_slice(user_key);
        k.extend_from_slice(&((seqno << 8) | KIND_PUT).to_le_bytes());
        InternalKey(k)
    }

    fn split(&self) -> (&[u8], u64) {
        match self.0.split_last_chunk::<8>() {
            Some((user_key, trailer)) => (user_key, u64::from_le_bytes(*trailer)),
            None => (&self.0, 0),
        }
    }
}

impl Ord for InternalKey {
    fn cmp(&self, other: &Self) -> Ordering {
        let (a_key, a_trailer) = self.split();
        let (b_key, b_trailer) = other.split();
        a_key.cmp(b_key).then_with(|| b_trailer.cmp(&a_trailer))
    }
}

impl PartialOrd for InternalKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

fn workload() -> (Vec<[u8; KEY_BYTES]>, Vec<u8>) {
    let mut rng = SmallRng::seed_from_u64(42);
    let keys = (0..ENTRIES)
        .map(|_| {
            let mut k = [0u8; KEY_BYTES];
            rng.fill_bytes(&mut k);
            k
        })
        .collect();
    let mut value = vec![0u8; VALUE_BYTES];
    rng.fill_bytes(&mut value);
    (keys, value)
}

fn fill_spinney(keys: &[[u8; KEY_BYTES]], value: &[u8]) -> MemTable {
    let table = MemTable::new();
    for (seqno, key) in (1..).zip(keys) {
        table.put(seqno, key, value);
    }
    table
}

fn fill_crossbeam(keys: &[[u8; KEY_BYTES]], value: &[u8]) -> SkipMap<InternalKey, Vec<u8>> {
    let map = SkipMap::new();
    for (seqno, key) in (1..).zip(keys) {
        map.insert(InternalKey::new(key, seqno), value.to_vec());
    }
    map
}

fn fill_btree(keys: &[[u8; KEY_BYTES]], value: &[u8]) -> RwLock<BTreeMap<InternalKey, Vec<u8>>> {
    let map = RwLock::new(BTreeMap::new());
    for (seqno, key) in (1..).zip(keys) {
        map.write()
            .insert(InternalKey::new(key, seqno), value.to_vec());
    }
    map
}

/// The newest version of `user_key`: the first entry at or after the seek
/// key, if it has the same user key.
fn found(entry_key: &InternalKey, user_key: &[u8]) -> bool {
    entry_key.split().0 == user_key
}

fn bench_insert(c: &mut Criterion) {
    let (keys, value) = workload();
    let mut group = c.benchmark_group("memtable_insert_200k");
    group.sample_size(10);
    group.bench_function("spinney_arena_skiplist", |b| {
        b.iter_batched(
            || (),
            |()| fill_spinney(&keys, &value),
            BatchSize::PerIteration,
        )
    });
    group.bench_function("crossbeam_skipmap", |b| {
        b.iter_batched(
            || (),
            |()| fill_crossbeam(&keys, &value),
            BatchSize::PerIteration,
        )
    });
    group.bench_function("btreemap_rwlock", |b| {
        b.iter_batched(
            || (),
            |()| fill_btree(&keys, &value),
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

fn bench_get(c: &mut Criterion) {
    let (keys, value) = workload();
    let mut group = c.benchmark_group("memtable_get_200k");
    group.sample_size(10);

    let table = fill_spinney(&keys, &value);
    group.bench_function("spinney_arena_skiplist", |b| {
        b.iter(|| {
            let mut hits = 0usize;
            for key in &keys {
                hits += usize::from(table.get(key, SEQNO_MAX).is_some());
            }
            assert_eq!(black_box(hits), ENTRIES);
        })
    });
    drop(table);

    let map = fill_crossbeam(&keys, &value);
    group.bench_function("crossbeam_skipmap", |b| {
        b.iter(|| {
            let mut hits = 0usize;
            for key in &keys {
                let target = InternalKey::new(key, SEQNO_MAX);
                let value = map
                    .range(target..)
                    .next()
                    .filter(|e| found(e.key(), key))
                    .map(|e| e.value().clone());
                hits += usize::from(value.is_some());
            }
            assert_eq!(black_box(hits), ENTRIES);
        })
    });
    drop(map);

    let map = fill_btree(&keys, &value);
    group.bench_function("btreemap_rwlock", |b| {
        b.iter(|| {
            let mut hits = 0usize;
            for key in &keys {
                let target = InternalKey::new(key, SEQNO_MAX);
                let guard = map.read();
                let value = guard
                    .range(target..)
                    .next()
                    .filter(|(k, _)| found(k, key))
                    .map(|(_, v)| v.clone());
                hits += usize::from(value.is_some());
            }
            assert_eq!(black_box(hits), ENTRIES);
        })
    });
    group.finish();
}

criterion_group!(benches, bench_insert, bench_get);
criterion_main!(benches);
