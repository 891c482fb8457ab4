//! Whole-SST tests: build a file, read it back every way, and damage it.

use std::cmp::Ordering;
use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::Mutex;

use super::format::{CompressionType, FOOTER_BYTES};
use super::*;
use crate::cache::Cache;
use crate::error::{Error, Result};
use crate::fs::mem::{MemFile, MemWritable};
use crate::fs::{Fs, OsFs};
use crate::mvcc::iter::InternalIterator;
use crate::mvcc::key::{self, internal_key, Kind, KIND_SEEK, SEQNO_MAX};

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

fn options(compression: Compression, bloom_bits_per_key: u32, block_size: usize) -> SstOptions {
    SstOptions {
        compression,
        bloom_bits_per_key,
        block_size,
    }
}

/// Entries in internal-key order: several versions of some keys, some
/// deletions, the empty user key, values short, long and compressible.
fn sample_entries(users: usize) -> Entries {
    let mut out = Vec::new();
    for u in 0..users {
        let user = if u == 0 {
            Vec::new()
        } else {
            format!("key{:06}", u * 2).into_bytes()
        };
        let versions = 1 + u % 3;
        for v in (0..versions).rev() {
            let seqno = (u * 10 + v) as u64;
            let kind = if (u + v) % 7 == 3 {
                Kind::Delete
            } else {
                Kind::Put
            };
            let value = match kind {
                Kind::Delete | Kind::RangeDelete => Vec::new(),
                Kind::Put => format!("value {u} version {v} ")
                    .repeat(1 + (u % 11))
                    .into_bytes(),
            };
            out.push((internal_key(&user, seqno, kind), value));
        }
    }
    out
}

fn build_in_memory(entries: &[(Vec<u8>, Vec<u8>)], opts: SstOptions) -> (Vec<u8>, SstInfo) {
    let data = Arc::new(Mutex::new(Vec::new()));
    let file = MemWritable {
        data: Arc::clone(&data),
        path: PathBuf::from("mem.sst"),
    };
    let mut b = SstBuilder::new(Box::new(file), opts);
    for (k, v) in entries {
        b.add(k, v).expect("add");
    }
    assert_eq!(b.entries(), entries.len() as u64);
    let info = b.finish().expect("finish");
    let bytes = data.lock().clone();
    (bytes, info)
}

fn open_in_memory(bytes: Vec<u8>, cache: Arc<Cache>) -> Result<Arc<Sst>> {
    let file = Arc::new(MemFile {
        data: bytes,
        path: PathBuf::from("mem.sst"),
    });
    Sst::open(file, 7, cache)
}

fn collect_forward(sst: &Arc<Sst>) -> Result<Entries> {
    let mut it = sst.iter();
    let mut out = Vec::new();
    it.seek_to_first();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status().map(|()| out)
}

fn collect_backward(sst: &Arc<Sst>) -> Result<Entries> {
    let mut it = sst.iter();
    let mut out = Vec::new();
    it.seek_to_last();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.prev();
    }
    out.reverse();
    it.status().map(|()| out)
}

/// What `get(seek, user_key)` must return, computed from the entry list.
fn expected_get(entries: &Entries, seek: &[u8], user: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    let i = entries.partition_point(|(k, _)| key::compare(k, seek) == Ordering::Less);
    entries
        .get(i)
        .filter(|(k, _)| key::user_key(k) == user)
        .cloned()
}

fn seek_targets(entries: &Entries) -> Vec<Vec<u8>> {
    let mut targets = Vec::new();
    for (k, _) in entries {
        let user = key::user_key(k);
        targets.push(k.clone());
        targets.push(internal_key(user, SEQNO_MAX, KIND_SEEK));
        targets.push(internal_key(user, 0, Kind::Delete));
        // A user key between this one and the next.
        let mut between = user.to_vec();
        between.push(b'!');
        targets.push(internal_key(&between, 5, KIND_SEEK));
    }
    targets.push(internal_key(b"\xff\xff", SEQNO_MAX, KIND_SEEK));
    targets
}

/// Seeks to every key and between keys (checking one step back too), and
/// gets every seek target, against the entry list.
fn check_reads_back(sst: &Arc<Sst>, entries: &Entries) {
    let mut it = sst.iter();
    for target in seek_targets(entries) {
        it.seek(&target);
        let i = entries.partition_point(|(k, _)| key::compare(k, &target) == Ordering::Less);
        match entries.get(i) {
            Some((k, v)) => {
                assert!(it.valid());
                assert_eq!((it.key(), it.value()), (k.as_slice(), v.as_slice()));
                // One step back lands on the entry before.
                it.prev();
                match i.checked_sub(1).and_then(|j| entries.get(j)) {
                    Some((pk, _)) => assert_eq!(it.key(), pk.as_slice()),
                    None => assert!(!it.valid()),
                }
            }
            None => assert!(!it.valid()),
        }
        it.status().expect("no error");

        let user = key::user_key(&target);
        assert_eq!(
            sst.get(&target, user).expect("get"),
            expected_get(entries, &target, user)
        );
    }
}

#[test]
fn random_keys_with_shortened_separators_read_back() {
    // Goal: index separators that are not keys of the file (shortened)
    // still route every seek and get. Method: random sparse user keys, so
    // that most block boundaries get a shorter separator; check that some
    // did, then read everything back.
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};
    let mut rng = SmallRng::seed_from_u64(11);
    let mut entries: Entries = (0..2000)
        .map(|_| {
            let len = rng.gen_range(1..24);
            let user: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
            let k = internal_key(&user, rng.gen_range(0..100), Kind::Put);
            (k, vec![b'v'; rng.gen_range(0..40)])
        })
        .collect();
    entries.sort_by(|a, b| key::compare(&a.0, &b.0));
    entries.dedup_by(|a, b| a.0 == b.0);
    for compression in [Compression::None, Compression::Lz4] {
        let (bytes, _) = build_in_memory(&entries, options(compression, 10, 256));
        let sst = open_in_memory(bytes, Arc::new(Cache::new(1 << 16))).expect("open");
        let mut index = sst.index_iter();
        let mut shortened = 0;
        index.seek_to_first();
        while index.valid() {
            if entries
                .binary_search_by(|(k, _)| key::compare(k, index.key()))
                .is_err()
            {
                shortened += 1;
            }
            index.next();
        }
        assert!(shortened > 10, "only {shortened} shortened separators");
        assert_eq!(sst.verify().expect("verify"), entries.len() as u64);
        assert_eq!(collect_forward(&sst).expect("forward"), entries);
        assert_eq!(collect_backward(&sst).expect("backward"), entries);
        check_reads_back(&sst, &entries);
    }
}

#[test]
fn full_sst_round_trips_for_every_compression_and_filter() {
    // Goal: what goes in comes out, whatever the compression and filter.
    // Method: build ~1000 entries in small blocks, read forward, backward,
    // seek to every key and between keys, get every key, verify.
    let entries = sample_entries(500);
    let mut uncompressed_size = None;
    for compression in [Compression::None, Compression::Lz4, Compression::Zstd] {
        for bloom in [0, 10] {
            let (bytes, info) = build_in_memory(&entries, options(compression, bloom, 512));
            assert_eq!(info.file_size, bytes.len() as u64);
            assert_eq!(info.entries, entries.len() as u64);
            assert_eq!(Some(&info.smallest), entries.first().map(|e| &e.0));
            assert_eq!(Some(&info.largest), entries.last().map(|e| &e.0));
            assert_eq!((info.seqno_min, info.seqno_max), (0, 4991));
            match (compression, uncompressed_size) {
                (Compression::None, _) => uncompressed_size = Some(bytes.len()),
                (_, Some(raw)) => assert!(bytes.len() < raw, "{compression:?} did not shrink"),
                _ => {}
            }

            let sst = open_in_memory(bytes, Arc::new(Cache::new(1 << 20))).expect("open");
            let p = sst.properties();
            assert_eq!(p.entries, entries.len() as u64);
            assert!(p.data_blocks > 10, "only {} blocks", p.data_blocks);
            assert_eq!(p.bloom_bits_per_key, bloom);
            assert_eq!(p.compression, CompressionType::from_option(compression));
            assert_eq!(sst.file_size(), info.file_size);
            assert_eq!(sst.verify().expect("verify"), entries.len() as u64);

            assert_eq!(collect_forward(&sst).expect("forward"), entries);
            assert_eq!(collect_backward(&sst).expect("backward"), entries);

            check_reads_back(&sst, &entries);
        }
    }
}

#[test]
fn empty_sst_opens_and_holds_nothing() {
    for bloom in [0, 10] {
        let (bytes, info) = build_in_memory(&[], options(Compression::Lz4, bloom, 4096));
        assert_eq!(info.entries, 0);
        assert!(info.smallest.is_empty() && info.largest.is_empty());
        let sst = open_in_memory(bytes, Arc::new(Cache::new(0))).expect("open");
        assert_eq!(sst.verify().expect("verify"), 0);
        assert!(collect_forward(&sst).expect("forward").is_empty());
        assert!(collect_backward(&sst).expect("backward").is_empty());
        let k = internal_key(b"a", 1, KIND_SEEK);
        assert_eq!(sst.get(&k, b"a").expect("get"), None);
    }
}

#[test]
fn empty_user_key_and_empty_value_are_entries_like_any_other() {
    let entries = vec![
        (internal_key(b"", 3, Kind::Put), Vec::new()),
        (internal_key(b"", 2, Kind::Delete), Vec::new()),
        (internal_key(b"x", 1, Kind::Put), b"v".to_vec()),
    ];
    let (bytes, _) = build_in_memory(&entries, options(Compression::None, 10, 4096));
    let sst = open_in_memory(bytes, Arc::new(Cache::new(0))).expect("open");
    assert_eq!(collect_forward(&sst).expect("forward"), entries);
    let seek = internal_key(b"", SEQNO_MAX, KIND_SEEK);
    assert_eq!(sst.get(&seek, b"").expect("get"), entries.first().cloned());
    let seek = internal_key(b"", 2, KIND_SEEK);
    assert_eq!(sst.get(&seek, b"").expect("get"), entries.get(1).cloned());
}

#[test]
fn builder_rejects_keys_out_of_order_and_malformed_keys() {
    let file = MemWritable {
        data: Arc::new(Mutex::new(Vec::new())),
        path: PathBuf::from("mem.sst"),
    };
    let mut b = SstBuilder::new(Box::new(file), options(Compression::None, 0, 4096));
    b.add(&internal_key(b"b", 1, Kind::Put), b"")
        .expect("first");
    for bad in [
        internal_key(b"a", 1, Kind::Put),
        internal_key(b"b", 1, Kind::Put),
        internal_key(b"b", 2, Kind::Put),
        b"short".to_vec(),
    ] {
        assert!(matches!(b.add(&bad, b""), Err(Error::InvalidArgument(_))));
    }
    b.add(&internal_key(b"b", 0, Kind::Put), b"")
        .expect("older version");
    assert_eq!(b.finish().expect("finish").entries, 2);
}

#[test]
fn filtered_miss_reads_no_data_block() {
    // Goal: the filter saves the read. Method: count read requests on an
    // OsFs around each get of an absent key, with and without a filter,
    // with a cache too small to keep anything.
    let dir = tempfile::tempdir().expect("tempdir");
    let entries = sample_entries(300);
    for bloom in [0, 10] {
        let fs = OsFs::new();
        let path = dir.path().join(format!("bloom{bloom}.sst"));
        let file = fs.create(&path).expect("create");
        let mut b = SstBuilder::new(file, options(Compression::None, bloom, 1024));
        for (k, v) in &entries {
            b.add(k, v).expect("add");
        }
        b.finish().expect("finish");
        let sst =
            Sst::open(fs.open(&path).expect("open"), 1, Arc::new(Cache::new(0))).expect("sst");
        let reads = || fs.io_stats().snapshot().read_requests;

        let mut filtered = 0;
        for i in 0..200 {
            // Odd numbers are never written, and sit inside the key range.
            let user = format!("key{:06}", i * 2 + 1).into_bytes();
            let seek = internal_key(&user, SEQNO_MAX, KIND_SEEK);
            let before = reads();
            assert_eq!(sst.get(&seek, &user).expect("get"), None);
            let spent = reads() - before;
            let rejected = sst.filter().is_some_and(|f| !f.may_contain(&user));
            if rejected {
                filtered += 1;
                assert_eq!(spent, 0, "a filtered miss read a block");
            } else {
                assert_eq!(spent, 1, "an unfiltered miss reads one data block");
            }
        }
        if bloom == 0 {
            assert_eq!(filtered, 0);
        } else {
            assert!(filtered >= 190, "filter rejected only {filtered} of 200");
        }

        // A present key always costs one data block read here.
        let (k, _) = entries.get(10).expect("entry");
        let user = key::user_key(k);
        let seek = internal_key(user, SEQNO_MAX, KIND_SEEK);
        let before = reads();
        let got = sst.get(&seek, user).expect("get");
        assert!(got.is_some());
        assert_eq!(got, expected_get(&entries, &seek, user));
        assert_eq!(reads() - before, 1);
    }
}

#[test]
fn cached_blocks_are_not_read_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fs = OsFs::new();
    let path = dir.path().join("c.sst");
    let mut b = SstBuilder::new(
        fs.create(&path).expect("create"),
        options(Compression::Lz4, 10, 1024),
    );
    let entries = sample_entries(200);
    for (k, v) in &entries {
        b.add(k, v).expect("add");
    }
    b.finish().expect("finish");
    let cache = Arc::new(Cache::new(1 << 20));
    let sst = Sst::open(fs.open(&path).expect("open"), 3, Arc::clone(&cache)).expect("sst");
    assert_eq!(collect_forward(&sst).expect("forward"), entries);
    let before = fs.io_stats().snapshot().read_requests;
    assert_eq!(collect_backward(&sst).expect("backward"), entries);
    assert_eq!(fs.io_stats().snapshot().read_requests, before);
    assert!(cache.stats().hits > 0);
}

#[test]
fn iterator_is_send_and_static() {
    fn check<T: Send + 'static>() {}
    check::<SstIter>();
    check::<Arc<Sst>>();
}

/// Opens, iterates both ways, verifies and gets every key of a damaged
/// copy; everything must fail with Corruption or give the original data.
fn check_damaged_copy(bytes: Vec<u8>, entries: &Entries, what: &str) {
    let must_be_corruption = |e: Error| assert!(e.is_corruption(), "{what}: {e}");
    let sst = match open_in_memory(bytes, Arc::new(Cache::new(1 << 20))) {
        Ok(s) => s,
        Err(e) => return must_be_corruption(e),
    };
    match collect_forward(&sst) {
        Ok(got) => assert_eq!(&got, entries, "{what}: forward scan returned wrong data"),
        Err(e) => must_be_corruption(e),
    }
    match collect_backward(&sst) {
        Ok(got) => assert_eq!(&got, entries, "{what}: backward scan returned wrong data"),
        Err(e) => must_be_corruption(e),
    }
    match sst.verify() {
        Ok(n) => assert_eq!(n, entries.len() as u64, "{what}"),
        Err(e) => must_be_corruption(e),
    }
    for (k, _) in entries {
        let user = key::user_key(k);
        match sst.get(k, user) {
            Ok(got) => assert_eq!(got, expected_get(entries, k, user), "{what}: wrong get"),
            Err(e) => must_be_corruption(e),
        }
    }
}

#[test]
fn every_byte_flip_is_detected_or_harmless() {
    // Goal: no damaged byte anywhere in the file (blocks, trailers, filter,
    // properties, index, footer) gives a panic or wrong data. Method: flip
    // one bit and then the whole byte at every position of a small SST,
    // and read the copy every way.
    let entries = sample_entries(40);
    for (compression, bloom) in [
        (Compression::None, 10),
        (Compression::Lz4, 0),
        (Compression::Zstd, 10),
    ] {
        let (bytes, _) = build_in_memory(&entries, options(compression, bloom, 300));
        let sst = open_in_memory(bytes.clone(), Arc::new(Cache::new(0))).expect("open");
        assert!(sst.properties().data_blocks >= 3);
        let mut detected = 0;
        for pos in 0..bytes.len() {
            for mask in [0x01u8, 0xFF] {
                let mut damaged = bytes.clone();
                if let Some(b) = damaged.get_mut(pos) {
                    *b ^= mask;
                }
                check_damaged_copy(
                    damaged.clone(),
                    &entries,
                    &format!("{compression:?} flip {mask:#x} at {pos}"),
                );
                let copy = open_in_memory(damaged, Arc::new(Cache::new(0)));
                if copy.is_err() || copy.is_ok_and(|s| s.verify().is_err()) {
                    detected += 1;
                }
            }
        }
        // Every byte is covered by a checksum, so every flip is detected.
        assert_eq!(detected, 2 * bytes.len(), "{compression:?}");
    }
}

#[test]
fn truncated_file_is_corruption() {
    let entries = sample_entries(100);
    let (bytes, _) = build_in_memory(&entries, options(Compression::Lz4, 10, 512));
    let len = bytes.len();
    for cut in [
        0,
        1,
        FOOTER_BYTES - 1,
        FOOTER_BYTES,
        FOOTER_BYTES + 1,
        len / 2,
        len - FOOTER_BYTES,
        len - 5,
        len - 1,
    ] {
        let short = bytes.get(..cut).expect("cut inside").to_vec();
        let err = open_in_memory(short.clone(), Arc::new(Cache::new(0))).expect_err("truncated");
        assert!(err.is_corruption(), "cut at {cut}: {err}");
        check_damaged_copy(short, &entries, &format!("cut at {cut}"));
    }
}

#[test]
fn damaged_data_block_names_its_offset_and_stops_the_iterator() {
    // Goal: the error says where. Method: damage the first data block (at
    // offset 0); open still works (index, filter, properties are intact),
    // iteration stops with Corruption at offset 0 and stays stopped.
    let entries = sample_entries(100);
    let (mut bytes, _) = build_in_memory(&entries, options(Compression::None, 10, 512));
    if let Some(b) = bytes.get_mut(10) {
        *b ^= 0x40;
    }
    let sst = open_in_memory(bytes, Arc::new(Cache::new(0))).expect("open");
    let mut it = sst.iter();
    it.seek_to_first();
    assert!(!it.valid());
    match it.status() {
        Err(Error::Corruption {
            offset,
            detail,
            file,
        }) => {
            assert_eq!(offset, 0);
            assert!(detail.contains("checksum"), "{detail}");
            assert_eq!(file, PathBuf::from("mem.sst"));
        }
        other => panic!("expected corruption, got {other:?}"),
    }
    it.seek_to_last();
    assert!(!it.valid() && it.status().is_err());
    assert!(sst.verify().expect_err("damaged").is_corruption());
}

#[test]
fn dump_lists_footer_properties_index_and_entries() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fs = OsFs::new();
    let path = dir.path().join("d.sst");
    let mut b = SstBuilder::new(
        fs.create(&path).expect("create"),
        options(Compression::Zstd, 10, 256),
    );
    b.add(&internal_key(b"a\x00b", 5, Kind::Put), b"short")
        .expect("add");
    b.add(&internal_key(b"a\x00b", 4, Kind::Delete), b"")
        .expect("add");
    b.add(&internal_key(b"long", 3, Kind::Put), &[b'x'; 100])
        .expect("add");
    b.finish().expect("finish");
    let mut out = Vec::new();
    dump(&fs, &path, &mut out).expect("dump");
    let text = String::from_utf8(out).expect("utf8");
    for needle in [
        "footer (format version 1)",
        "entries:         3",
        "deletions:       1",
        "compression:     zstd",
        "index:",
        "\"a\\x00b\" @5 put => \"short\"",
        "\"a\\x00b\" @4 del => \"\"",
        "... (100 bytes)",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
}
