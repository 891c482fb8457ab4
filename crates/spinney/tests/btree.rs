//! B-tree tables through the public API: space reuse across checkpoints,
//! overflow values, the key length limit, snapshots, bounded and reverse
//! iteration over a tree of several levels, dropping, statistics, readers
//! and writers at once, and three races pinned down with a file system that
//! holds one page read or write until the test lets it go (`GateFs`).
//!
//! Page numbers, heights and fills are never assumed: each test reads the
//! shape it needs from `Table::shape` and checks it before relying on it.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;

use parking_lot::{Condvar, Mutex};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use spinney::fs::{FileLock, Fs, IoStats, OsFs, PagedFile, RandomAccessFile, WritableFile};
use spinney::{
    BtreeShape, Db, Error, Options, ReadContext, Table, TableKind, TableOptions, WriteBatch,
};

mod common;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn key(i: u32) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

fn btree(page_size: usize) -> TableOptions {
    TableOptions {
        page_size,
        ..TableOptions::btree()
    }
}

fn shape(t: &Table) -> BtreeShape {
    t.shape()
        .expect("shape")
        .btree
        .expect("a B-tree table has a B-tree shape")
}

fn scan(t: &Table) -> Model {
    t.iter()
        .expect("iter")
        .collect::<spinney::Result<_>>()
        .expect("scan")
}

/// The `.btree` files of `dir`.
fn btree_files(dir: &Path) -> Vec<PathBuf> {
    common::files::with_extension(dir, "btree")
}

/// The size on disk of the only `.btree` file of `dir`.
fn btree_file_size(dir: &Path) -> u64 {
    let files = btree_files(dir);
    assert_eq!(files.len(), 1, "{files:?}");
    std::fs::metadata(&files[0]).expect("metadata").len()
}

#[test]
fn overwriting_every_key_ten_times_reuses_the_pages_of_older_images() {
    // Goal: copy-on-write checkpoints give back the pages of older images,
    // and rewriting keys leaves no lasting trace in the tree: the file
    // stays within twice its size after the first round.
    // Method (after space.rs): 200,000 keys of 16 bytes with 100-byte
    // values, written over ten times in batches of 1,000 in key order,
    // `db.checkpoint()` after each round. A round rewrites every leaf, so
    // the file holds the durable image and the one being built and no
    // more: from round 2 on it stops growing. A batch rewriting a whole
    // leaf splits it (both versions of its keys are needed until the batch
    // is published); the pieces are packed again once it is (`tidy`), so
    // the tree after every round holds one version per key in full pages.
    // The sizes, and their ratios to round 1 and to the live data, are
    // printed (`--nocapture`).
    const KEYS: u32 = 200_000;
    const ROUNDS: usize = 10;
    const BATCH: u32 = 1000;
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), Options::default()).expect("open");
    let t = db.create_table("t", TableOptions::btree()).expect("create");
    let key16 = |i: u32| format!("key{i:013}").into_bytes();
    let mut sizes = Vec::new();
    let mut value = vec![b'v'; 100];
    for round in 0..ROUNDS {
        value[0] = b'0' + round as u8;
        for start in (0..KEYS).step_by(BATCH as usize) {
            let mut b = WriteBatch::new();
            for i in start..start + BATCH {
                b.put(&t, &key16(i), &value);
            }
            db.write(b).expect("write");
        }
        db.checkpoint().expect("checkpoint");
        sizes.push(btree_file_size(dir.path()));
    }
    let s = shape(&t);
    let live = u64::from(KEYS) * (16 + 100);
    let last = sizes[ROUNDS - 1];
    eprintln!(
        "B-tree file after each of {ROUNDS} rounds of {KEYS} overwrites: {sizes:?} bytes; \
         round 10 / round 1 {:.2}; round 10 / live data {:.2}; {s:?}",
        last as f64 / sizes[0] as f64,
        last as f64 / live as f64
    );
    assert!(
        sizes[2..].iter().all(|&size| size <= sizes[1]),
        "the file kept growing: {sizes:?}"
    );
    assert!(
        last <= 2 * sizes[0],
        "round 10 is {:.2} times round 1: {sizes:?}; {s:?}",
        last as f64 / sizes[0] as f64
    );
    // The largest two images (round 1's and any later one) and no more.
    let tree = (s.leaf_pages + s.branch_pages) * s.page_size;
    assert!(
        last <= sizes[0] + tree + 16 * s.page_size,
        "{last} bytes in the file for a tree of {tree}: more than two images; {s:?}"
    );
    assert!(
        s.entries < u64::from(KEYS) + u64::from(KEYS) / 100,
        "versions the last round hid are still in the tree: {s:?}"
    );
    // Pages allocated past the end and freed again are not written.
    assert!(s.file_bytes >= last, "{s:?}");
    for i in (0..KEYS).step_by(7919) {
        assert_eq!(t.get(&key16(i)).expect("get"), Some(value.clone()), "{i}");
    }
    assert_eq!(db.verify().expect("verify"), s.entries);
}

#[test]
fn values_larger_than_a_page_round_trip_survive_reopen_and_are_freed() {
    // Goal: a value too large for a leaf goes to overflow pages; it reads
    // back, survives close and reopen, and its pages are given back when it
    // is overwritten or deleted. Method: 40 keys with values from 3 KiB to
    // 100 KiB (pages of 8 KiB), overwritten with new values of other sizes
    // or deleted in twelve rounds with a checkpoint after each; the file
    // holds about three rounds of values (see below), and the shape counts
    // at least the overflow pages of the live values.
    let dir = tempfile::tempdir().expect("tempdir");
    let value = |i: u32, round: u32| -> Vec<u8> {
        let len = 3000 + ((i * 7919 + round * 104_729) % 97_000) as usize;
        (0..len)
            .map(|j| (j as u32 ^ i ^ (round << 4)) as u8)
            .collect()
    };
    let overflow_pages = |model: &Model| -> u64 {
        // 8192-byte pages: 8180 bytes of image, 16 of them a header.
        model
            .values()
            .map(|v| v.len().div_ceil(8192 - 12 - 16) as u64)
            .sum()
    };
    let mut model = Model::new();
    let mut sizes = Vec::new();
    let mut live = Vec::new();
    {
        let db = Db::open(dir.path(), Options::default()).expect("open");
        let t = db
            .create_table("big", TableOptions::btree())
            .expect("create");
        for round in 0..12u32 {
            for i in 0..40u32 {
                if round > 0 && (i + round) % 5 == 0 {
                    t.delete(&key(i)).expect("delete");
                    model.remove(&key(i));
                } else {
                    t.put(&key(i), &value(i, round)).expect("put");
                    model.insert(key(i), value(i, round));
                }
            }
            assert!(scan(&t) == model, "round {round}: scan differs");
            db.checkpoint().expect("checkpoint");
            sizes.push(btree_file_size(dir.path()));
            live.push(overflow_pages(&model));
        }
        let s = shape(&t);
        eprintln!(
            "file after each round: {sizes:?} bytes; overflow pages of the live values: \
             {live:?}; {s:?}"
        );
        assert!(s.overflow_pages >= overflow_pages(&model), "{s:?}");
        // A replaced value stays until its leaf is next copied (the first
        // write of the next round), and its pages are free once the
        // checkpoint after that is durable: the file holds the values of
        // about three rounds (10% allowed for holes that runs of other
        // lengths leave), not of every round so far.
        for r in 2..sizes.len() {
            let three_rounds = live[r] + live[r - 1] + live[r - 2];
            assert!(
                sizes[r] / 8192 <= three_rounds * 11 / 10 + 8,
                "round {r}: {} pages for {three_rounds} pages of values: {sizes:?} {live:?}",
                sizes[r] / 8192
            );
        }
        db.verify().expect("verify");
        db.close().expect("close");
    }
    let db = Db::open(dir.path(), Options::default()).expect("reopen");
    let t = db.table("big").expect("table");
    assert!(scan(&t) == model, "after reopen");
    for (k, v) in &model {
        assert_eq!(t.get(k).expect("get").as_ref(), Some(v));
    }
    let mut rev: Vec<(Vec<u8>, Vec<u8>)> = t
        .iter()
        .expect("iter")
        .rev()
        .collect::<spinney::Result<_>>()
        .expect("reverse scan");
    rev.reverse();
    assert!(
        rev.into_iter().eq(model.clone()),
        "reverse scan after reopen"
    );
    db.verify().expect("verify");
}

/// Table `t` ("t" of `db`, in `dir`) holds `model`, by scan and by get,
/// verifies, and does again after the database is reopened.
fn holds_after_reopen(dir: &Path, db: Db, t: Table, model: &Model) {
    assert!(scan(&t) == *model, "after compact_all");
    for (k, v) in model {
        assert_eq!(t.get(k).expect("get").as_ref(), Some(v));
    }
    db.verify().expect("verify");
    drop(t);
    db.close().expect("close");
    let db = Db::open(dir, Options::default()).expect("reopen");
    assert!(
        scan(&db.table("t").expect("table")) == *model,
        "after reopen"
    );
    db.verify().expect("verify after reopen");
}

/// Runs `compact_all` on `t` while a thread scans it again and again, each
/// scan checked against `model` (compact_all changes no data); returns the
/// scans made (at least one).
fn compact_all_while_scanning(t: &Table, model: &Model) -> u32 {
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let (t, model, stop) = (t.clone(), model.clone(), Arc::clone(&stop));
        thread::spawn(move || {
            let mut scans = 0u32;
            while !stop.load(Ordering::Acquire) || scans == 0 {
                assert!(scan(&t) == model, "scan {scans} during compact_all");
                scans += 1;
            }
            scans
        })
    };
    t.compact_all().expect("compact_all with a snapshot");
    stop.store(true, Ordering::Release);
    reader.join().expect("reader")
}

#[test]
fn compact_all_packs_moves_and_cuts_while_a_snapshot_and_a_reader_see_their_data() {
    // Goal: `compact_all` of a B-tree table (pack the leaves, move pages
    // and overflow runs from the end of the file, cut it) keeps what a live
    // snapshot reads, never shows a reader a state that was not there, and
    // gives the space back once the snapshot is gone.
    // Method: 4,000 small values and 60 values of 9 to 30 KiB (overflow
    // runs of 8 KiB pages), overwritten twice with checkpoints between;
    // a snapshot; three keys of every four deleted; compact_all while a
    // thread scans the table again and again (each scan must equal the
    // state after the deletes: compact_all changes no data); the snapshot
    // reads its values; then the snapshot is dropped and compact_all runs
    // again: the file shrinks, overflow values read back, and everything
    // holds after reopen.
    let dir = tempfile::tempdir().expect("tempdir");
    let value = |i: u32, round: u32| -> Vec<u8> {
        let len = if i.is_multiple_of(67) {
            9000 + (i * 131 + round * 977) % 21_000
        } else {
            100
        };
        (0..len).map(|j| (j ^ i ^ (round << 5)) as u8).collect()
    };
    let mut model = Model::new();
    let db = Db::open(dir.path(), Options::default()).expect("open");
    let t = db.create_table("t", btree(8192)).expect("create");
    for round in 0..3u32 {
        for i in 0..4000u32 {
            t.put(&key(i), &value(i, round)).expect("put");
            model.insert(key(i), value(i, round));
        }
        db.checkpoint().expect("checkpoint");
    }
    let snap = db.snapshot();
    let old = model.clone();
    for i in (0..4000u32).filter(|i| i % 4 != 0) {
        t.delete(&key(i)).expect("delete");
        model.remove(&key(i));
    }
    db.checkpoint().expect("checkpoint");
    let before = shape(&t);

    let scans = compact_all_while_scanning(&t, &model);
    for i in (0..4000u32).step_by(7) {
        assert_eq!(
            snap.get(&t, &key(i)).expect("snapshot get").as_ref(),
            old.get(&key(i)),
            "snapshot, key {i}"
        );
    }
    assert!(scan(&t) == model, "after compact_all");
    let pinned = shape(&t);
    drop(snap);
    t.compact_all().expect("compact_all");
    let after = shape(&t);
    eprintln!(
        "compact_all: {} bytes with the deletes, {} with the snapshot, {} without it; \
         {scans} scans during the first; {after:?}",
        before.file_bytes, pinned.file_bytes, after.file_bytes
    );
    assert!(
        after.file_bytes < before.file_bytes / 2,
        "{before:?} -> {after:?}"
    );
    assert!(after.entries < pinned.entries, "{pinned:?} -> {after:?}");
    assert_eq!(btree_file_size(dir.path()), after.file_bytes);
    holds_after_reopen(dir.path(), db, t, &model);
}

#[test]
fn compact_all_lets_a_writer_write_between_its_slices_and_keeps_what_it_wrote() {
    // Goal: `compact_all` packs and moves pages a slice at a time, with
    // writers let in between: what a writer thread puts, overwrites and
    // deletes while it runs (new keys, overflow values, keys packed and not
    // yet reached) reads back after it, through verify and a reopen, and
    // the space is still given back.
    // Method: 60,000 keys in 4 KiB pages, 90% deleted; a thread writes
    // until compact_all returns, and its model joins the table's.
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), Options::default()).expect("open");
    let t = db.create_table("t", btree(4096)).expect("create");
    let keys = 60_000u32;
    let mut model = Model::new();
    for i in 0..keys {
        let k = key(i * 7919 % keys);
        t.put(&k, &[b'v'; 100]).expect("put");
        model.insert(k, vec![b'v'; 100]);
    }
    db.checkpoint().expect("checkpoint");
    for i in keys / 10..keys {
        let k = key(i * 7919 % keys);
        t.delete(&k).expect("delete");
        model.remove(&k);
    }
    db.checkpoint().expect("checkpoint");
    let before = shape(&t);
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (t, stop, mut model) = (t.clone(), Arc::clone(&stop), model.clone());
        thread::spawn(move || {
            let kept: Vec<Vec<u8>> = model.keys().cloned().collect();
            let mut writes = 0u32;
            while !stop.load(Ordering::Acquire) || writes == 0 {
                let n = writes as usize;
                let new = format!("new{n:08}").into_bytes();
                let v = vec![n as u8; if n.is_multiple_of(16) { 3000 } else { 100 }];
                t.put(&new, &v).expect("put during compact_all");
                model.insert(new, v);
                let old = &kept[n * 37 % kept.len()];
                t.put(old, &[n as u8; 150])
                    .expect("overwrite during compact_all");
                model.insert(old.clone(), vec![n as u8; 150]);
                let gone = &kept[(n * 101 + 7) % kept.len()];
                t.delete(gone).expect("delete during compact_all");
                model.remove(gone);
                writes += 1;
            }
            (writes, model)
        })
    };
    t.compact_all().expect("compact_all");
    stop.store(true, Ordering::Release);
    let (writes, model) = writer.join().expect("writer");
    let after = shape(&t);
    eprintln!("{writes} rounds of writes during compact_all; {before:?} -> {after:?}");
    assert!(
        after.file_bytes < before.file_bytes / 3,
        "{before:?} -> {after:?}"
    );
    holds_after_reopen(dir.path(), db, t, &model);
}

#[test]
fn compact_all_merges_the_branches_of_a_tall_tree_while_a_reader_and_a_snapshot_see_their_data() {
    // Goal: `compact_all` packs the branches as well as the leaves: after
    // most keys are deleted, the leaves' parents, which held many leaves
    // each, hold a few, and each parent's run of leaves packed apart
    // leaves a partly empty page; merged, they hold as many leaves as fit,
    // the leaves are packed again in the longer runs, and a root left with
    // one child gives the tree a level less. Readers and snapshots see
    // their data throughout.
    // Method: 4 KiB pages and keys of 200 bytes that differ only in their
    // last 8 (so separators are long and a branch holds about 18
    // children): 30,000 keys make a tree of at least 4 levels. A snapshot;
    // 9 keys of 10 deleted in a shuffled order; compact_all while a thread
    // scans the table (each scan must equal the state after the deletes);
    // the snapshot reads its values; compact_all again without it. Then
    // the branches are at most an eighth of the leaves (without the
    // branches merged, about half), the leaves are 90% full, and the tree
    // is lower; every key reads back, verify, reopen.
    let dir = tempfile::tempdir().expect("tempdir");
    let long_key = |i: u32| format!("{}{i:08}", "k".repeat(192)).into_bytes();
    let value = |i: u32| format!("value{i:055}").into_bytes();
    let mut model = Model::new();
    let db = Db::open(dir.path(), Options::default()).expect("open");
    let t = db.create_table("t", btree(4096)).expect("create");
    let keys = 30_000u32;
    for i in 0..keys {
        t.put(&long_key(i), &value(i)).expect("put");
        model.insert(long_key(i), value(i));
    }
    db.checkpoint().expect("checkpoint");
    let full = shape(&t);
    assert!(full.height >= 4, "the tree is not tall enough: {full:?}");
    let snap = db.snapshot();
    let old = model.clone();
    let mut order: Vec<u32> = (0..keys).collect();
    let mut rng = StdRng::seed_from_u64(38);
    for i in (1..order.len()).rev() {
        order.swap(i, rng.gen_range(0..=i));
    }
    for &i in &order[..(keys as usize * 9 / 10)] {
        t.delete(&long_key(i)).expect("delete");
        model.remove(&long_key(i));
    }
    db.checkpoint().expect("checkpoint");

    let scans = compact_all_while_scanning(&t, &model);
    for &i in order.iter().step_by(13) {
        assert_eq!(
            snap.get(&t, &long_key(i)).expect("snapshot get").as_ref(),
            old.get(&long_key(i)),
            "snapshot, key {i}"
        );
    }
    drop(snap);
    t.compact_all().expect("compact_all");
    let after = shape(&t);
    eprintln!("{scans} scans during compact_all; {full:?} -> {after:?}");
    assert!(
        after.branch_pages * 8 <= after.leaf_pages,
        "branches not merged: {after:?}"
    );
    assert!(after.fill >= 0.9, "leaves not packed: {after:?}");
    assert!(after.height < full.height, "{full:?} -> {after:?}");
    holds_after_reopen(dir.path(), db, t, &model);
}

#[test]
fn keys_up_to_the_limit_work_and_longer_ones_are_invalid_arguments() {
    // Goal: `max_key_len` is the B-tree's limit: a longer key is
    // `InvalidArgument` from put, from a batch and from delete, never a
    // panic, and nothing of the refused batch is applied; keys of exactly
    // the limit work, also many of them mixed with short keys, whose
    // separators then differ in length by a quarter page (a branch split
    // by count once put more than a page of them on one side and dropped
    // whole subtrees). Method: pages of 4 KiB and 8 KiB, a model, verify,
    // reopen.
    for page_size in [4096usize, 8192] {
        let dir = tempfile::tempdir().expect("tempdir");
        let options = btree(page_size);
        let max = options.max_key_len();
        assert!(
            max > 100 && max < page_size / 4,
            "{max} for {page_size}-byte pages"
        );
        let mut model = Model::new();
        {
            let db = Db::open(dir.path(), Options::default()).expect("open");
            let t = db.create_table("t", options.clone()).expect("create");
            let too_long = vec![b'x'; max + 1];
            match t.put(&too_long, b"v") {
                Err(Error::InvalidArgument(_)) => {}
                other => panic!("put of a key of {} bytes: {other:?}", max + 1),
            }
            match t.delete(&too_long) {
                Err(Error::InvalidArgument(_)) => {}
                other => panic!("delete of a key of {} bytes: {other:?}", max + 1),
            }
            // A get answers as a put does.
            match t.get(&too_long) {
                Err(Error::InvalidArgument(_)) => {}
                other => panic!("get of a key of {} bytes: {other:?}", max + 1),
            }
            let mut b = WriteBatch::new();
            b.put(&t, b"fine", b"v");
            b.put(&t, &too_long, b"v");
            match db.write(b) {
                // The error says which operation of the batch was refused.
                Err(Error::InvalidArgument(why)) => {
                    assert!(why.contains("operation 2 of the batch (a put"), "{why}")
                }
                other => panic!("batch with a key of {} bytes: {other:?}", max + 1),
            }
            assert_eq!(t.get(b"fine").expect("get"), None, "half a refused batch");
            // Short keys first, so that the root holds short separators, then
            // keys of the limit sharing all but their last six bytes.
            for i in 0..300u32 {
                let (k, v) = (format!("b{i:05}").into_bytes(), vec![b'v'; 700]);
                t.put(&k, &v).expect("put");
                model.insert(k, v);
            }
            let long = |i: u32| {
                let mut k = vec![b'a'; max - 6];
                k.extend_from_slice(format!("{i:06}").as_bytes());
                k
            };
            for i in 0..200u32 {
                let v = format!("long{i}").into_bytes();
                t.put(&long(i), &v).expect("put of a key of the limit");
                model.insert(long(i), v);
            }
            let mut b = WriteBatch::new();
            b.put(&t, &long(1000), b"in a batch");
            db.write(b).expect("batch of a key of the limit");
            model.insert(long(1000), b"in a batch".to_vec());
            assert_eq!(t.get(&long(7)).expect("get"), Some(b"long7".to_vec()));
            let s = shape(&t);
            assert!(s.height >= 3, "{page_size}: {s:?}");
            assert!(
                scan(&t) == model,
                "{page_size}: scan differs from the model"
            );
            db.checkpoint().expect("checkpoint");
            db.verify().expect("verify");
        }
        let db = Db::open(dir.path(), Options::default()).expect("reopen");
        let t = db.table("t").expect("table");
        assert!(scan(&t) == model, "{page_size}: after reopen");
    }
}

#[test]
fn a_snapshot_keeps_reading_its_versions_until_dropped() {
    // Goal: a snapshot taken before overwrites and deletes reads the old
    // values through get and range, across many later writes and
    // checkpoints (which copy and prune every leaf); once it is dropped,
    // the old versions go: after more writes and a checkpoint the tree
    // holds fewer versions, at most two per key.
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), Options::default()).expect("open");
    let t = db.create_table("t", btree(4096)).expect("create");
    const KEYS: u32 = 3000;
    let mut model = Model::new();
    for i in 0..KEYS {
        let v = format!("v0-{i}").into_bytes();
        t.put(&key(i), &v).expect("put");
        model.insert(key(i), v);
    }
    let old = model.clone();
    let snap = db.snapshot();
    for round in 1..=6u32 {
        for i in 0..KEYS {
            if (i + round) % 4 == 0 {
                t.delete(&key(i)).expect("delete");
                model.remove(&key(i));
            } else {
                let v = format!("v{round}-{i}").into_bytes();
                t.put(&key(i), &v).expect("put");
                model.insert(key(i), v);
            }
        }
        db.checkpoint().expect("checkpoint");
        for i in (0..KEYS).step_by(97) {
            assert_eq!(
                snap.get(&t, &key(i)).expect("snapshot get").as_ref(),
                old.get(&key(i)),
                "round {round}, key {i}"
            );
        }
        let lo = key(round * 100);
        let hi = key(round * 100 + 700);
        let got: Vec<_> = snap
            .range(&t, lo.clone()..hi.clone())
            .expect("range")
            .collect::<spinney::Result<_>>()
            .expect("snapshot range");
        let want: Vec<_> = old
            .range(lo.clone()..hi.clone())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        assert_eq!(got, want, "round {round}: snapshot range");
        assert!(scan(&t) == model, "round {round}: current state");
    }
    let whole: Model = snap
        .range::<&[u8], _>(&t, ..)
        .expect("range")
        .rev()
        .collect::<spinney::Result<_>>()
        .expect("snapshot scan");
    assert!(whole == old, "the snapshot's whole table");
    let pinned = shape(&t).entries;
    // Versions: the snapshot's, the current ones and the tombstones.
    assert!(pinned >= u64::from(KEYS) + model.len() as u64, "{pinned}");
    drop(snap);
    for round in 7..=8u32 {
        for i in 0..KEYS {
            if (i + round) % 4 != 0 {
                let v = format!("v{round}-{i}").into_bytes();
                t.put(&key(i), &v).expect("put");
                model.insert(key(i), v);
            }
        }
        db.checkpoint().expect("checkpoint");
    }
    let free = shape(&t);
    eprintln!(
        "versions: {pinned} with the snapshot, {} after",
        free.entries
    );
    // Each key keeps at most its value and the one the last round
    // replaced (pruned when its leaf next fills or is copied).
    assert!(
        free.entries <= 2 * u64::from(KEYS) && free.entries < pinned,
        "old versions stayed: {pinned} -> {}",
        free.entries
    );
    assert!(scan(&t) == model);
    db.verify().expect("verify");
}

#[test]
fn versions_pinned_by_snapshots_survive_leaf_splits() {
    // Goal: a key with more versions than a leaf holds (each pinned by a
    // snapshot) between two other keys: every snapshot reads its own
    // version. A leaf split once took the change of user key nearest the
    // middle even when that left more than a page on one side, and
    // dropped the versions that did not fit.
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), Options::default()).expect("open");
    let t = db.create_table("t", btree(4096)).expect("create");
    t.put(b"a", b"a").expect("put");
    t.put(b"c", &[b'c'; 900]).expect("put");
    let version = |i: u32| format!("{i:0>300}").into_bytes();
    let mut snaps = Vec::new();
    for i in 0..60u32 {
        t.put(b"b", &version(i)).expect("put");
        snaps.push(db.snapshot());
    }
    // And many versions in one batch: only its last can ever be read, and
    // the others go when a leaf fills while it is applied.
    let mut batch = WriteBatch::new();
    for i in 60..100u32 {
        batch.put(&t, b"b", &version(i));
    }
    db.write(batch).expect("write");
    let entries = shape(&t).entries;
    assert!((63..102).contains(&entries), "{entries} versions");
    for (i, s) in snaps.iter().enumerate() {
        assert_eq!(
            s.get(&t, b"b").expect("get"),
            Some(version(i as u32)),
            "snapshot {i}"
        );
        let all: Vec<_> = s
            .range::<&[u8], _>(&t, ..)
            .expect("range")
            .map(|e| e.expect("entry").0)
            .collect();
        assert_eq!(all, [b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]);
    }
    assert_eq!(t.get(b"b").expect("get"), Some(version(99)));
    assert_eq!(t.get(b"c").expect("get"), Some(vec![b'c'; 900]));
    db.checkpoint().expect("checkpoint");
    db.verify().expect("verify");
}

#[test]
fn a_delete_hides_versions_that_spilled_into_the_next_leaf() {
    // Goal: a deleted key stays deleted when its older versions fill more
    // than a leaf. Method: 40 versions of "k", each pinned by a snapshot
    // (so all stay, over several leaves); then "k" is deleted, the
    // snapshots are dropped, and checkpoints and writes make the writer
    // copy, prune and merge the leaf holding the tombstone. Pruning once dropped
    // a tombstone that was the oldest version left in its leaf, and the
    // older versions in the next leaf came back.
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), Options::default()).expect("open");
    let t = db.create_table("t", btree(4096)).expect("create");
    t.put(b"j", b"j0").expect("put");
    let mut snapshots = Vec::new();
    for i in 0..40u32 {
        t.put(b"k", format!("{i:0>300}").as_bytes()).expect("put");
        snapshots.push(db.snapshot());
    }
    assert!(shape(&t).leaf_pages >= 4, "{:?}", shape(&t));
    t.delete(b"k").expect("delete");
    drop(snapshots);
    for round in 0..4 {
        db.checkpoint().expect("checkpoint");
        if round % 2 == 0 {
            t.delete(b"k").expect("delete again");
        } else {
            t.put(b"j", format!("j{round}").as_bytes()).expect("put");
        }
        assert_eq!(t.get(b"k").expect("get"), None, "round {round}");
        let keys: Vec<_> = t
            .iter()
            .expect("iter")
            .map(|e| e.expect("entry").0)
            .collect();
        assert_eq!(keys, [b"j".to_vec()], "round {round}");
    }
    db.checkpoint().expect("checkpoint");
    db.close().expect("close");
    let db = Db::open(dir.path(), Options::default()).expect("reopen");
    let t = db.table("t").expect("table");
    assert_eq!(t.get(b"k").expect("get"), None, "after reopen");
}

fn bounded(
    model: &Model,
    lower: &Bound<Vec<u8>>,
    upper: &Bound<Vec<u8>>,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let empty = match (lower, upper) {
        (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => {
            a > b
                || (a == b
                    && !(matches!(lower, Bound::Included(_))
                        && matches!(upper, Bound::Included(_))))
        }
        _ => false,
    };
    if empty {
        return Vec::new();
    }
    model
        .range((lower.clone(), upper.clone()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

#[test]
fn bounded_and_reverse_iteration_over_a_tall_tree_equal_the_model() {
    // Goal: ranges with every kind of bound, forward, reversed, and with
    // `next` and `next_back` mixed, give exactly the model's entries over a
    // tree of at least three levels (pages of 4 KiB), with deleted keys and
    // overflow values among them, before and after a checkpoint.
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), Options::default()).expect("open");
    let t = db.create_table("t", btree(4096)).expect("create");
    let mut rng = StdRng::seed_from_u64(7);
    let mut model = Model::new();
    for start in (0..30_000u32).step_by(500) {
        let mut b = WriteBatch::new();
        for i in start..start + 500 {
            if rng.gen_bool(0.7) {
                let len = if rng.gen_bool(0.005) {
                    9000
                } else {
                    rng.gen_range(0..150)
                };
                let v: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
                b.put(&t, &key(i), &v);
                model.insert(key(i), v);
            }
        }
        db.write(b).expect("write");
    }
    for i in (0..30_000u32).step_by(3) {
        if model.remove(&key(i)).is_some() {
            t.delete(&key(i)).expect("delete");
        }
    }
    let s = shape(&t);
    assert!(s.height >= 3, "{s:?}");
    let random_bound = |rng: &mut StdRng| {
        // Keys that exist, that do not, and that lie between two keys.
        let k = match rng.gen_range(0..3) {
            0 => key(rng.gen_range(0..30_100)),
            1 => {
                let mut k = key(rng.gen_range(0..30_000));
                k.push(b'!');
                k
            }
            _ => format!("key{:05}", rng.gen_range(0..400)).into_bytes(),
        };
        match rng.gen_range(0..3) {
            0 => Bound::Unbounded,
            1 => Bound::Included(k),
            _ => Bound::Excluded(k),
        }
    };
    for pass in 0..2 {
        for case in 0..150 {
            let lower = random_bound(&mut rng);
            let upper = random_bound(&mut rng);
            let want = bounded(&model, &lower, &upper);
            let ctx = format!("pass {pass} case {case}: {lower:?}..{upper:?}");
            let fwd: Vec<_> = t
                .range((lower.clone(), upper.clone()))
                .expect("range")
                .collect::<spinney::Result<_>>()
                .expect("forward");
            assert!(
                fwd == want,
                "{ctx}: forward ({} vs {})",
                fwd.len(),
                want.len()
            );
            let mut rev: Vec<_> = t
                .range((lower.clone(), upper.clone()))
                .expect("range")
                .rev()
                .collect::<spinney::Result<_>>()
                .expect("reverse");
            rev.reverse();
            assert!(
                rev == want,
                "{ctx}: reverse ({} vs {})",
                rev.len(),
                want.len()
            );
            // Both ends at once, at random, until they meet.
            let mut r = t.range((lower.clone(), upper.clone())).expect("range");
            let (mut front, mut back) = (0usize, want.len());
            loop {
                let from_front = rng.gen_bool(0.5);
                let got = if from_front { r.next() } else { r.next_back() };
                match got {
                    Some(e) => {
                        let e = e.expect("entry");
                        assert!(front < back, "{ctx}: an entry past where the ends met");
                        if from_front {
                            assert!(e == want[front], "{ctx}: next at {front}");
                            front += 1;
                        } else {
                            back -= 1;
                            assert!(e == want[back], "{ctx}: next_back at {back}");
                        }
                    }
                    None => {
                        assert_eq!(front, back, "{ctx}: ended with entries left");
                        break;
                    }
                }
            }
        }
        db.checkpoint().expect("checkpoint");
    }
}

#[test]
fn dropping_a_btree_table_removes_its_file_and_reopen_keeps_both_kinds() {
    // Goal: `drop_table` of a B-tree table deletes its file; a new table of
    // the same name starts empty (with its own file); and an LSM and a
    // B-tree table both come back after reopen with their data.
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let db = Db::open(dir.path(), Options::default()).expect("open");
        let lsm = db
            .create_table("lsm", TableOptions::default())
            .expect("lsm");
        let bt = db.create_table("bt", TableOptions::btree()).expect("btree");
        for i in 0..2000u32 {
            lsm.put(&key(i), b"lsm").expect("put");
            bt.put(&key(i), b"btree").expect("put");
        }
        db.checkpoint().expect("checkpoint");
        let files = btree_files(dir.path());
        assert_eq!(files.len(), 1, "{files:?}");
        db.drop_table("bt").expect("drop");
        assert!(!files[0].exists(), "{files:?} still there after the drop");
        assert!(btree_files(dir.path()).is_empty());
        assert!(matches!(bt.get(&key(1)), Err(Error::NoSuchTable(_))));
        let again = db
            .create_table("bt", TableOptions::btree())
            .expect("create again");
        assert_eq!(again.get(&key(1)).expect("get"), None);
        assert_eq!(again.iter().expect("iter").count(), 0);
        assert_eq!(btree_files(dir.path()).len(), 1);
        for i in 0..100u32 {
            again.put(&key(i), b"second").expect("put");
        }
        db.close().expect("close");
    }
    let db = Db::open(dir.path(), Options::default()).expect("reopen");
    let kinds: Vec<_> = db
        .tables()
        .iter()
        .map(|t| (t.name.clone(), t.options.kind))
        .collect();
    assert_eq!(
        kinds,
        [
            ("bt".to_string(), TableKind::Btree),
            ("lsm".to_string(), TableKind::Lsm)
        ]
    );
    let lsm = db.table("lsm").expect("lsm");
    let bt = db.table("bt").expect("bt");
    assert_eq!(lsm.iter().expect("iter").count(), 2000);
    assert_eq!(lsm.get(&key(1999)).expect("get"), Some(b"lsm".to_vec()));
    assert_eq!(bt.iter().expect("iter").count(), 100);
    assert_eq!(bt.get(&key(99)).expect("get"), Some(b"second".to_vec()));
    assert_eq!(bt.get(&key(100)).expect("get"), None);
    db.verify().expect("verify");
}

#[test]
fn an_lsm_read_never_writes_a_btree_page_and_the_btree_writes_its_dirty_pages() {
    // Goal: the cache does no I/O. An LSM read that inserts blocks into a
    // cache full of dirty B-tree pages writes no page (the cache hands cold
    // dirty pages back to the B-tree pager rather than writing them); the
    // next B-tree write writes them; and the cache stays within its budget
    // plus the stated slack throughout: the bytes handed back and not yet
    // written (at most a sixteenth of the budget, or one page) and one page
    // more.
    // Method: no background threads; B-tree writes larger than the cache,
    // then a read of every key of a flushed LSM table, counting the B-tree
    // file's page writes (`pages_written`) and the cache's usage.
    let dir = tempfile::tempdir().expect("tempdir");
    let charge = 8192 + 96;
    let capacity = 32 * charge;
    let slack = (capacity / 16).max(charge) + charge;
    let options = Options {
        cache_size: capacity,
        background_threads: 0,
        autowork: false,
        checkpoint_wal_bytes: 1 << 40,
        ..Options::default()
    };
    let db = Db::open(dir.path(), options).expect("open");
    let lsm = db.create_table("lsm", TableOptions::lsm()).expect("lsm");
    let bt = db.create_table("bt", btree(8192)).expect("btree");
    let within_budget = |what: &str| {
        let usage = db.stats().cache.usage_bytes;
        assert!(
            usage <= capacity + slack,
            "{what}: {usage} bytes cached, budget {capacity} + slack {slack}"
        );
    };
    let btree_stats = || {
        db.stats()
            .tables
            .into_iter()
            .find(|t| t.name == "bt")
            .and_then(|t| t.btree)
            .expect("B-tree stats")
    };
    for i in 0..20_000u32 {
        lsm.put(&key(i), &[b'l'; 100]).expect("lsm put");
    }
    lsm.flush().expect("flush");
    for i in 0..4_000u32 {
        bt.put(&key(i * 7 % 4_000), &[b'b'; 200])
            .expect("btree put");
        if i % 100 == 99 {
            within_budget("B-tree load");
        }
    }
    let loaded = btree_stats();
    assert!(
        loaded.evictions_dirty > 0,
        "the load wrote no page: {loaded:?}"
    );

    for i in 0..20_000u32 {
        assert_eq!(lsm.get(&key(i)).expect("lsm get"), Some(vec![b'l'; 100]));
        if i % 500 == 499 {
            within_budget("LSM reads");
        }
    }
    let read = btree_stats();
    assert_eq!(
        read.pages_written, loaded.pages_written,
        "LSM reads wrote B-tree pages"
    );
    assert!(db.stats().cache.evictions > 0);

    // The next B-tree write writes what the reads handed back.
    bt.put(b"another", b"value").expect("btree put");
    let written = btree_stats();
    assert!(
        written.evictions_dirty > read.evictions_dirty,
        "the B-tree write wrote no page handed back: {written:?}"
    );
    within_budget("after a B-tree write");
    db.checkpoint().expect("checkpoint");
    within_budget("after a checkpoint");
    for i in (0..4_000u32).step_by(7) {
        assert_eq!(bt.get(&key(i)).expect("get"), Some(vec![b'b'; 200]));
    }
    db.verify().expect("verify");
}

#[test]
fn stats_count_pages_evictions_and_checkpoints_and_a_get_reads_one_tree() {
    // Goal: `BtreeStats` after a workload that outgrows a small cache shows
    // pages read from the file, dirty pages written out to be evicted, and
    // the checkpoints; `ReadContext` of a get counts one tree searched and
    // one page per level, from storage when cold and from the cache when
    // read again.
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let options = Options {
            cache_size: 8 * 8192,
            ..Options::default()
        };
        let db = Db::open(dir.path(), options).expect("open");
        let t = db.create_table("t", TableOptions::btree()).expect("create");
        for round in 0..3u32 {
            for i in 0..20_000u32 {
                t.put(&key(i * 7 % 20_000), format!("{round:0>100}").as_bytes())
                    .expect("put");
            }
            db.checkpoint().expect("checkpoint");
        }
        for i in (0..20_000u32).step_by(13) {
            assert!(t.get(&key(i)).expect("get").is_some());
        }
        let stats = db.stats();
        let b = stats.tables[0].btree.clone().expect("B-tree stats");
        eprintln!("{b:?}");
        assert_eq!(stats.tables[0].kind, spinney::TableKind::Btree);
        assert!(b.pages_from_storage > 0, "{b:?}");
        assert!(b.evictions_dirty > 0, "{b:?}");
        assert!(b.evictions_clean > 0, "{b:?}");
        assert!(b.checkpoints >= 3, "{b:?}");
        assert!(b.checkpoint_pages > 0 && b.checkpoint_bytes > 0, "{b:?}");
        assert!(b.pages_written >= b.checkpoint_pages, "{b:?}");
        assert!(b.height >= 2 && b.file_pages > 100, "{b:?}");
        assert_eq!(b.page_size, 8192);
        db.close().expect("close");
    }
    let db = Db::open(dir.path(), Options::default()).expect("reopen");
    let t = db.table("t").expect("table");
    let height = u64::from(shape(&t).height);
    assert!(height >= 2);
    // `shape` read every page into the cache: empty it by reopening.
    drop(t);
    db.close().expect("close");
    let db = Db::open(dir.path(), Options::default()).expect("reopen");
    let t = db.table("t").expect("table");
    let counted = |k: &[u8]| {
        ReadContext::enable();
        ReadContext::reset();
        let v = t.get(k).expect("get");
        let c = ReadContext::take();
        ReadContext::disable();
        (v, c)
    };
    let (v, cold) = counted(&key(12_345));
    assert_eq!(v, Some(format!("{:0>100}", 2).into_bytes()));
    assert_eq!((cold.gets, cold.trees_searched), (1, 1), "{cold:?}");
    assert_eq!(
        (cold.blocks_from_storage, cold.blocks_from_cache),
        (height, 0),
        "{cold:?}"
    );
    assert!(cold.bytes_read >= height * 8192, "{cold:?}");
    let (_, warm) = counted(&key(12_345));
    assert_eq!(warm.trees_searched, 1, "{warm:?}");
    assert_eq!(
        (warm.blocks_from_storage, warm.blocks_from_cache),
        (0, height),
        "{warm:?}"
    );
    let (v, absent) = counted(b"nope");
    assert_eq!(v, None);
    assert_eq!(absent.trees_searched, 1, "{absent:?}");
}

/// Checks one state of the concurrency test's table: each writer's ten
/// counter keys agree, and its accounts add up to its total.
fn check_invariants(entries: &[(Vec<u8>, Vec<u8>)], writers: u32, ctx: &str) {
    for w in 0..writers {
        let counters: Vec<&Vec<u8>> = entries
            .iter()
            .filter(|(k, _)| k.starts_with(format!("c{w}-").as_bytes()))
            .map(|(_, v)| v)
            .collect();
        assert_eq!(counters.len(), 10, "{ctx}: writer {w}'s counters");
        assert!(
            counters.iter().all(|v| *v == counters[0]),
            "{ctx}: writer {w}'s counters disagree: a torn batch"
        );
        let sum: i64 = entries
            .iter()
            .filter(|(k, _)| k.starts_with(format!("a{w}-").as_bytes()))
            .map(|(_, v)| {
                std::str::from_utf8(v)
                    .expect("utf8")
                    .parse::<i64>()
                    .expect("a balance")
            })
            .sum();
        assert_eq!(sum, 100 * 1000, "{ctx}: writer {w}'s accounts");
    }
    assert!(
        entries.windows(2).all(|w| w[0].0 < w[1].0),
        "{ctx}: keys out of order"
    );
}

/// Writers commit batches that keep invariants (ten counter keys written
/// together; units moved between accounts) while readers scan and get and a
/// thread checkpoints; then the final state is compared with what the
/// writers wrote, before and after reopen.
fn readers_and_writers(cache_size: u64, seed: u64) {
    const WRITERS: u32 = 2;
    const READERS: u32 = 3;
    const BATCHES: u32 = 1200;
    let dir = tempfile::tempdir().expect("tempdir");
    let options = || Options {
        cache_size,
        checkpoint_wal_bytes: 512 << 10,
        ..Options::default()
    };
    let db = Db::open(dir.path(), options()).expect("open");
    let t = db.create_table("t", btree(4096)).expect("create");
    let counter = |w: u32, i: u32| {
        // Some values are too large for a leaf.
        let len = if i % 50 == 7 {
            6000
        } else {
            20 + (i % 60) as usize
        };
        let mut v = format!("{w}:{i}:").into_bytes();
        v.resize(len, b'.');
        v
    };
    let mut initial = WriteBatch::new();
    for w in 0..WRITERS {
        for c in 0..10 {
            initial.put(&t, format!("c{w}-{c}").as_bytes(), &counter(w, 0));
        }
        for a in 0..100 {
            initial.put(&t, format!("a{w}-{a:03}").as_bytes(), b"1000");
        }
        for f in 0..1500 {
            initial.put(&t, format!("f{w}-{f:05}").as_bytes(), &[b'f'; 80]);
        }
    }
    db.write(initial).expect("initial");
    assert!(shape(&t).height >= 2);
    let done = AtomicBool::new(false);
    // What each writer wrote last to each key it touched (None: deleted).
    let models: Vec<BTreeMap<Vec<u8>, Option<Vec<u8>>>> = thread::scope(|s| {
        let mut readers = Vec::new();
        for r in 0..READERS {
            let (db, t, done) = (&db, &t, &done);
            readers.push(s.spawn(move || {
                let mut rng = StdRng::seed_from_u64(seed * 100 + u64::from(r));
                let mut checks = 0u64;
                while !done.load(Ordering::Acquire) || checks < 3 {
                    match rng.gen_range(0..4) {
                        0 => {
                            let all: Vec<_> = t
                                .iter()
                                .expect("iter")
                                .collect::<spinney::Result<_>>()
                                .expect("scan");
                            check_invariants(&all, WRITERS, "forward scan");
                        }
                        1 => {
                            let mut all: Vec<_> = t
                                .iter()
                                .expect("iter")
                                .rev()
                                .collect::<spinney::Result<_>>()
                                .expect("scan");
                            all.reverse();
                            check_invariants(&all, WRITERS, "reverse scan");
                        }
                        2 => {
                            // Point reads at one snapshot see whole batches.
                            let snap = db.snapshot();
                            let w = rng.gen_range(0..WRITERS);
                            let first = snap.get(t, format!("c{w}-0").as_bytes()).expect("get");
                            for c in 1..10 {
                                let v = snap.get(t, format!("c{w}-{c}").as_bytes()).expect("get");
                                assert_eq!(v, first, "gets at one snapshot: a torn batch");
                            }
                            let sum: i64 = (0..100)
                                .map(|a| {
                                    let v = snap
                                        .get(t, format!("a{w}-{a:03}").as_bytes())
                                        .expect("get")
                                        .expect("an account");
                                    std::str::from_utf8(&v)
                                        .expect("utf8")
                                        .parse::<i64>()
                                        .expect("balance")
                                })
                                .sum();
                            assert_eq!(sum, 100_000, "gets at one snapshot: accounts");
                        }
                        _ => {
                            // A plain get returns some value its writer wrote.
                            let w = rng.gen_range(0..WRITERS);
                            let v = t
                                .get(format!("c{w}-{}", rng.gen_range(0..10)).as_bytes())
                                .expect("get")
                                .expect("a counter");
                            assert!(v.starts_with(format!("{w}:").as_bytes()));
                        }
                    }
                    checks += 1;
                }
                checks
            }));
        }
        let checkpointer = s.spawn(|| {
            let mut n = 0u32;
            while !done.load(Ordering::Acquire) {
                db.checkpoint().expect("checkpoint");
                n += 1;
            }
            n
        });
        let mut writers = Vec::new();
        for w in 0..WRITERS {
            let (db, t) = (&db, &t);
            writers.push(s.spawn(move || {
                let mut rng = StdRng::seed_from_u64(seed * 1000 + u64::from(w));
                let mut model = BTreeMap::new();
                let mut balances = vec![1000i64; 100];
                for i in 1..=BATCHES {
                    let mut b = WriteBatch::new();
                    for c in 0..10 {
                        let k = format!("c{w}-{c}").into_bytes();
                        b.put(t, &k, &counter(w, i));
                        model.insert(k, Some(counter(w, i)));
                    }
                    let (from, to) = (rng.gen_range(0..100), rng.gen_range(0..100));
                    let units = rng.gen_range(0..50);
                    balances[from] -= units;
                    balances[to] += units;
                    for a in [from, to] {
                        let k = format!("a{w}-{a:03}").into_bytes();
                        let v = balances[a].to_string().into_bytes();
                        b.put(t, &k, &v);
                        model.insert(k, Some(v));
                    }
                    // Filler churn: overwrites and deletes that split,
                    // prune and merge leaves under the readers.
                    let f0 = rng.gen_range(0..1500);
                    for f in f0..(f0 + rng.gen_range(1..40)).min(1500) {
                        let k = format!("f{w}-{f:05}").into_bytes();
                        if rng.gen_bool(0.4) {
                            b.delete(t, &k);
                            model.insert(k, None);
                        } else {
                            let v = vec![b'g'; rng.gen_range(10..200)];
                            b.put(t, &k, &v);
                            model.insert(k, Some(v));
                        }
                    }
                    db.write(b).expect("write");
                }
                (model, balances)
            }));
        }
        let results: Vec<_> = writers
            .into_iter()
            .map(|h| h.join().expect("writer"))
            .collect();
        done.store(true, Ordering::Release);
        for r in readers {
            assert!(r.join().expect("reader") >= 3);
        }
        assert!(checkpointer.join().expect("checkpointer") > 0);
        results.into_iter().map(|(m, _)| m).collect()
    });
    // No write lost: each writer's keys hold exactly what it wrote last
    // (filler keys it never touched keep their initial value).
    let check_final = |t: &Table, ctx: &str| {
        let all = scan(t);
        for (w, model) in models.iter().enumerate() {
            for (k, v) in model {
                assert_eq!(all.get(k), v.as_ref(), "{ctx}: writer {w}, key {k:?}");
            }
            for f in 0..1500 {
                let k = format!("f{w}-{f:05}").into_bytes();
                if !model.contains_key(&k) {
                    assert_eq!(
                        all.get(&k),
                        Some(&vec![b'f'; 80]),
                        "{ctx}: untouched filler {k:?}"
                    );
                }
            }
        }
        let entries: Vec<_> = all.into_iter().collect();
        check_invariants(&entries, WRITERS, ctx);
    };
    check_final(&t, "final state");
    db.verify().expect("verify");
    let stats = db.stats().tables[0].btree.clone().expect("btree stats");
    eprintln!("cache {cache_size}: {stats:?}");
    assert!(stats.checkpoints > 0);
    drop(t);
    db.close().expect("close");
    let db = Db::open(dir.path(), options()).expect("reopen");
    let t = db.table("t").expect("table");
    check_final(&t, "after reopen");
    db.verify().expect("verify");
}

#[test]
fn readers_see_whole_batches_while_writers_and_checkpoints_run() {
    // Goal: on one B-tree table, 3 readers (forward and reverse scans, gets
    // at a snapshot, plain gets) run while 2 writers commit batches that
    // keep invariants and a thread checkpoints in a loop (and background
    // checkpoints run every 512 KiB of log): every scan and every snapshot
    // sees whole batches, and no write is lost, before or after reopen.
    readers_and_writers(64 << 20, 1);
}

#[test]
fn readers_see_whole_batches_while_a_tiny_cache_evicts_under_them() {
    // Goal: the same with a cache of six 4 KiB pages, so that dirty pages
    // are written out and read back in while readers descend and scan.
    readers_and_writers(6 * 4096, 2);
}

#[test]
fn a_get_sees_every_commit_acknowledged_before_it_while_a_tiny_cache_evicts() {
    // Goal: readers find pages through the frame table without holding a
    // reference, so a frame can be evicted (and its page read back into a
    // new frame, and changed there) between the moment a reader finds it
    // and the moment it latches it; the reader must then look again, never
    // answer from the old frame. Method: a cache of six 4 KiB pages over a
    // tree of hundreds; a writer sets 16 counters to 1, 2, 3... and after
    // each commit returns records the number it acknowledged; two readers
    // read that number first, then the counter (and a filler key, to keep
    // pages moving in and out), and the counter must be at least that
    // number. The writer goes on until the readers have checked enough.
    use std::sync::atomic::AtomicU64;
    const COUNTERS: usize = 16;
    const ROUNDS: u64 = 3000;
    const CHECKS: u64 = 20_000;
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(
        dir.path(),
        Options {
            cache_size: 6 * 4096,
            checkpoint_wal_bytes: 256 << 10,
            ..Options::default()
        },
    )
    .expect("open");
    let t = db.create_table("t", btree(4096)).expect("create");
    let mut fill = WriteBatch::new();
    for i in 0..20_000u32 {
        fill.put(&t, &key(i), &[b'f'; 60]);
    }
    for c in 0..COUNTERS {
        fill.put(&t, format!("counter{c:02}").as_bytes(), b"0");
    }
    db.write(fill).expect("fill");
    assert!(shape(&t).leaf_pages > 100, "{:?}", shape(&t));
    let acked: Vec<AtomicU64> = (0..COUNTERS).map(|_| AtomicU64::new(0)).collect();
    let checked = AtomicU64::new(0);
    let done = AtomicBool::new(false);
    thread::scope(|s| {
        for r in 0..2u64 {
            let (t, acked, checked, done) = (&t, &acked, &checked, &done);
            s.spawn(move || {
                let mut rng = StdRng::seed_from_u64(r);
                while !done.load(Ordering::Acquire) {
                    let c = rng.gen_range(0..COUNTERS);
                    let floor = acked[c].load(Ordering::Acquire);
                    let v = t
                        .get(format!("counter{c:02}").as_bytes())
                        .expect("get")
                        .expect("a counter");
                    let got: u64 = std::str::from_utf8(&v)
                        .expect("utf8")
                        .parse()
                        .expect("a number");
                    assert!(
                        got >= floor,
                        "counter {c}: {got} read after {floor} was acknowledged"
                    );
                    let f = t.get(&key(rng.gen_range(0..20_000))).expect("get");
                    assert_eq!(f.as_deref(), Some(&[b'f'; 60][..]));
                    checked.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        let mut rng = StdRng::seed_from_u64(99);
        let mut round = 0;
        while round < ROUNDS || checked.load(Ordering::Relaxed) < CHECKS {
            round += 1;
            let c = rng.gen_range(0..COUNTERS);
            t.put(
                format!("counter{c:02}").as_bytes(),
                round.to_string().as_bytes(),
            )
            .expect("put");
            acked[c].store(round, Ordering::Release);
        }
        done.store(true, Ordering::Release);
    });
    let cache = db.stats().cache;
    assert!(cache.evictions > 1000, "{cache:?}");
}

#[test]
fn a_cursor_shows_its_own_state_while_its_leaves_change_and_are_freed() {
    // Goal: a cursor holds no latch between calls; as it steps, the leaves
    // around it take new keys, lose keys, split, and are copied and freed
    // by the writer after checkpoints. Every step, both ways, must show
    // exactly the keys as they were when the cursor was made. Method: even
    // keys; a cursor stands in the middle; between its steps, odd keys are
    // written and even keys deleted around it (its own leaf and the next),
    // and every seventh step a checkpoint makes the next writes copy their
    // leaves; each step is checked against the model.
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), Options::default()).expect("open");
    let t = db.create_table("t", btree(4096)).expect("create");
    let mut fill = WriteBatch::new();
    for i in (0..4000u32).step_by(2) {
        fill.put(&t, &key(i), format!("v{i}").as_bytes());
    }
    db.write(fill).expect("fill");
    assert!(shape(&t).leaf_pages > 10, "{:?}", shape(&t));
    let want = |i: u32| (key(i), format!("v{i}").into_bytes());
    for backward in [false, true] {
        let mut c = t.cursor().expect("cursor");
        let mut i = 2000u32;
        c.seek(&key(i));
        let mut round = 0u32;
        loop {
            assert!(c.valid(), "at {i}");
            assert_eq!(
                (c.key().to_vec(), c.value().to_vec()),
                want(i),
                "backward {backward}"
            );
            // Change the leaves around the cursor, and now and then free
            // them: the first write after a checkpoint copies a leaf.
            round += 1;
            let mut b = WriteBatch::new();
            for d in [1u32, 3, 5, 41, 81] {
                let j = if backward { i.saturating_sub(d) } else { i + d };
                b.put(&t, &key(j), b"new");
            }
            let gone = if backward { i.saturating_sub(4) } else { i + 4 };
            b.delete(&t, &key(gone));
            db.write(b).expect("write");
            if round.is_multiple_of(7) {
                db.checkpoint().expect("checkpoint");
            }
            if backward {
                if i == 1000 {
                    break;
                }
                c.prev();
                i -= 2;
            } else {
                if i == 3000 {
                    break;
                }
                c.next();
                i += 2;
            }
        }
        c.status().expect("status");
    }
}

#[test]
fn a_cursor_walking_both_ways_through_wide_leaves_shows_its_own_state() {
    // Goal: a cursor copies a window of a leaf's entries at a time and, past
    // it, descends again for the entries after (or before) the window's
    // edge key; with leaves of a hundred entries and more, a walk crosses
    // window edges inside leaves and between them, turning back at random.
    // Meanwhile writes shift the entries of its leaf (inserts and deletes
    // before and after it, overwrites of the keys it has copied) and
    // checkpoints make them copy leaves. Every step must show the state as
    // it was when the cursor was made. Method: even keys, 32 KiB pages, a
    // random walk of 3,000 steps checked against the model.
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), Options::default()).expect("open");
    let t = db.create_table("t", btree(32 << 10)).expect("create");
    let n = 6000u32;
    let mut fill = WriteBatch::new();
    for i in (0..n).step_by(2) {
        fill.put(&t, &key(i), format!("v{i}").as_bytes());
    }
    db.write(fill).expect("fill");
    let leaves = shape(&t).leaf_pages;
    assert!((3..=20).contains(&leaves), "{leaves} leaves");
    let mut rng = StdRng::seed_from_u64(19);
    let mut c = t.cursor().expect("cursor");
    let mut i = n / 2;
    c.seek(&key(i));
    for step in 0..3000u32 {
        assert!(c.valid(), "step {step}, at {i}");
        assert_eq!(
            (c.key().to_vec(), c.value().to_vec()),
            (key(i), format!("v{i}").into_bytes()),
            "step {step}"
        );
        let mut b = WriteBatch::new();
        for _ in 0..4 {
            let j = (i + rng.gen_range(0..120)).saturating_sub(60).min(n);
            match rng.gen_range(0..3) {
                0 => b.put(&t, &key(j | 1), b"odd"),
                1 => b.delete(&t, &key(j & !1)),
                _ => b.put(&t, &key(j & !1), b"changed"),
            }
        }
        db.write(b).expect("write");
        if step % 13 == 0 {
            db.checkpoint().expect("checkpoint");
        }
        let forward = match i {
            0 => true,
            _ if i + 2 >= n => false,
            _ => rng.gen_bool(0.5),
        };
        // Runs in one direction long enough to leave a window.
        for _ in 0..rng.gen_range(1..40) {
            if forward && i + 2 < n {
                c.next();
                i += 2;
            } else if !forward && i > 0 {
                c.prev();
                i -= 2;
            }
            assert!(c.valid(), "step {step}, at {i}");
            assert_eq!(c.key(), key(i).as_slice(), "step {step}");
        }
    }
    c.status().expect("status");
}

#[test]
fn pages_copied_after_a_checkpoint_leave_the_cache() {
    // Goal: a write after a checkpoint copies each page on its path; the
    // page copied is the durable image's alone, and no new descent reaches
    // it, so its frame leaves the cache rather than holding a budget's
    // worth of dead pages. Method: a cache large enough for several copies
    // of the tree; every key rewritten after a checkpoint; before the
    // next checkpoint (which lets go of the pages it frees), the cache
    // holds about one tree, not two.
    let dir = tempfile::tempdir().expect("tempdir");
    let opts = Options {
        cache_size: 64 << 20,
        background_threads: 0,
        autowork: false,
        ..Options::default()
    };
    let db = Db::open(dir.path(), opts).expect("open");
    let t = db.create_table("t", btree(4096)).expect("create");
    let n = 20_000u32;
    for round in 0..2u32 {
        if round > 0 {
            db.checkpoint().expect("checkpoint");
        }
        for chunk in (0..n).collect::<Vec<_>>().chunks(100) {
            let mut b = WriteBatch::new();
            for &i in chunk {
                b.put(
                    &t,
                    &key(i),
                    format!("value {i} of round {round}").as_bytes(),
                );
            }
            db.write(b).expect("write");
        }
    }
    let s = shape(&t);
    let tree = (s.leaf_pages + s.branch_pages) * s.page_size;
    let used = db.stats().cache.usage_bytes;
    assert!(
        used < tree * 3 / 2,
        "the cache holds {used} bytes for a tree of {tree}: {s:?}"
    );
}

/// Holds one page read (after it has read) or write (before it writes) of a
/// B-tree file until released, so that a test can run other operations in
/// the middle of it.
#[derive(Debug, Default)]
struct Gate {
    state: Mutex<GateState>,
    cv: Condvar,
}

#[derive(Debug, Default, Clone, Copy)]
struct GateState {
    armed: bool,
    /// Hold a read rather than a write.
    reads: bool,
    /// Hold only a read of a leaf page.
    leaves_only: bool,
    blocked: bool,
    open: bool,
}

impl Gate {
    fn arm(&self, reads: bool, leaves_only: bool) {
        *self.state.lock() = GateState {
            armed: true,
            reads,
            leaves_only,
            ..GateState::default()
        };
    }

    fn pass(&self, read: bool, leaf: bool) {
        let mut s = self.state.lock();
        if !s.armed || s.reads != read || (s.leaves_only && !leaf) {
            return;
        }
        s.armed = false;
        s.blocked = true;
        self.cv.notify_all();
        while !s.open {
            self.cv.wait(&mut s);
        }
    }

    fn wait_blocked(&self) {
        let mut s = self.state.lock();
        while !s.blocked {
            self.cv.wait(&mut s);
        }
    }

    fn release(&self) {
        let mut s = self.state.lock();
        s.open = true;
        s.armed = false;
        self.cv.notify_all();
    }
}

/// `OsFs` whose B-tree files pass their page reads and writes through a
/// `Gate`.
#[derive(Debug)]
struct GateFs {
    os: OsFs,
    gate: Arc<Gate>,
}

struct GatedFile {
    inner: Arc<dyn PagedFile>,
    gate: Arc<Gate>,
}

impl PagedFile for GatedFile {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> spinney::Result<usize> {
        let n = self.inner.read_at(offset, buf);
        // Byte 5 of a page on disk is its kind; 1 is a leaf.
        self.gate.pass(true, buf.get(5) == Some(&1));
        n
    }
    fn write_at(&self, offset: u64, data: &[u8]) -> spinney::Result<()> {
        self.gate.pass(false, false);
        self.inner.write_at(offset, data)
    }
    fn sync(&self) -> spinney::Result<()> {
        self.inner.sync()
    }
    fn set_len(&self, len: u64) -> spinney::Result<()> {
        self.inner.set_len(len)
    }
    fn path(&self) -> &Path {
        self.inner.path()
    }
}

impl Fs for GateFs {
    fn create(&self, path: &Path) -> spinney::Result<Box<dyn WritableFile>> {
        self.os.create(path)
    }
    fn open(&self, path: &Path) -> spinney::Result<Arc<dyn RandomAccessFile>> {
        self.os.open(path)
    }
    fn open_paged(&self, path: &Path, create: bool) -> spinney::Result<Arc<dyn PagedFile>> {
        Ok(Arc::new(GatedFile {
            inner: self.os.open_paged(path, create)?,
            gate: Arc::clone(&self.gate),
        }))
    }
    fn rename(&self, from: &Path, to: &Path) -> spinney::Result<()> {
        self.os.rename(from, to)
    }
    fn remove(&self, path: &Path) -> spinney::Result<()> {
        self.os.remove(path)
    }
    fn list(&self, dir: &Path) -> spinney::Result<Vec<String>> {
        self.os.list(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> spinney::Result<()> {
        self.os.create_dir_all(dir)
    }
    fn sync_dir(&self, dir: &Path) -> spinney::Result<()> {
        self.os.sync_dir(dir)
    }
    fn exists(&self, path: &Path) -> spinney::Result<bool> {
        self.os.exists(path)
    }
    fn lock(&self, path: &Path) -> spinney::Result<Box<dyn FileLock>> {
        self.os.lock(path)
    }
    fn lock_shared(&self, path: &Path) -> spinney::Result<Box<dyn FileLock>> {
        self.os.lock_shared(path)
    }
    fn io_stats(&self) -> &IoStats {
        self.os.io_stats()
    }
}

fn gated_options(gate: &Arc<Gate>, cache_size: u64) -> Options {
    Options {
        background_threads: 0,
        cache_size,
        fs: Arc::new(GateFs {
            os: OsFs::new(),
            gate: Arc::clone(gate),
        }),
        ..Options::default()
    }
}

#[test]
fn a_merge_while_a_checkpoint_writes_keeps_the_sibling_the_checkpoint_needs() {
    // Goal: a leaf merge that runs while a checkpoint is writing its pages
    // leaves the checkpoint's image whole. Method: the first leaf is all
    // tombstones in the durable image and its right sibling (nearly empty)
    // was rewritten since; a checkpoint is held at its first page write (after its
    // freeze), and a put into the first leaf then copies and prunes it and
    // merges it with that sibling. The merge once dropped the sibling's
    // frame from the cache while it was dirty and not yet written, so the
    // checkpoint skipped it and its durable tree named a page never
    // written: verify failed and a reopen read zeros.
    let gate = Arc::new(Gate::default());
    let dir = tempfile::tempdir().expect("tempdir");
    let mut model = Model::new();
    let db = Db::open(dir.path(), gated_options(&gate, 64 << 20)).expect("open");
    let t = db.create_table("t", btree(4096)).expect("create");
    const KEYS: u32 = 20_000;
    for start in (0..KEYS).step_by(1000) {
        let mut b = WriteBatch::new();
        for i in start..start + 1000 {
            b.put(&t, &key(i), &[1; 100]);
            model.insert(key(i), vec![1; 100]);
        }
        db.write(b).expect("write");
    }
    // Keys are written in order, so the leaves hold about the same number
    // of keys. Delete the first leaf and a half more, and most of the next
    // leaf and a half; rewrite what is left from there on. The first leaf
    // is then untouched since the checkpoint, and its right sibling small
    // and dirty.
    let s = shape(&t);
    assert!(s.height >= 2, "{s:?}");
    let per_leaf = (u64::from(KEYS) / s.leaf_pages) as u32;
    let (all_gone, most_gone) = (per_leaf * 3 / 2, per_leaf * 5 / 2);
    let live = |i: u32| i >= most_gone || (i >= all_gone && i.is_multiple_of(8));
    // A snapshot keeps the deleted versions through the packing after the
    // batch (`tidy` would prune them at once), so the durable leaves hold
    // the tombstones and old values that the put below prunes.
    let pin = db.snapshot();
    let mut b = WriteBatch::new();
    for i in (0..most_gone).filter(|&i| !live(i)) {
        b.delete(&t, &key(i));
        model.remove(&key(i));
    }
    db.write(b).expect("delete");
    drop(pin);
    db.checkpoint().expect("checkpoint");
    let mut b = WriteBatch::new();
    for i in (0..KEYS).filter(|&i| live(i)) {
        b.put(&t, &key(i), &[2; 100]);
        model.insert(key(i), vec![2; 100]);
    }
    db.write(b).expect("rewrite");
    let leaves_before = shape(&t).leaf_pages;
    gate.arm(false, false);
    let leaves_after = thread::scope(|s| {
        let checkpoint = s.spawn(|| db.checkpoint());
        gate.wait_blocked();
        // The held write is of a page the merge does not latch unless it is
        // that very sibling; then the put waits for the checkpoint, which
        // is let go below, and the case is simply not exercised.
        let (tx, rx) = std::sync::mpsc::channel();
        let t2 = t.clone();
        s.spawn(move || {
            let _ = tx.send(t2.put(&key(0), &[3; 100]));
        });
        let merged = match rx.recv_timeout(std::time::Duration::from_secs(20)) {
            Ok(r) => {
                r.expect("put");
                Some(shape(&t).leaf_pages)
            }
            Err(_) => None,
        };
        gate.release();
        if merged.is_none() {
            rx.recv().expect("put finished").expect("put");
        }
        checkpoint.join().expect("join").expect("checkpoint");
        merged
    });
    model.insert(key(0), vec![3; 100]);
    if let Some(after) = leaves_after {
        assert_eq!(after + 1, leaves_before, "the put did not merge two leaves");
    }
    db.verify()
        .expect("verify of the checkpoint written across the merge");
    drop(t);
    db.close().expect("close");
    let db = Db::open(dir.path(), gated_options(&gate, 64 << 20)).expect("reopen");
    db.verify().expect("verify after reopen");
    let t = db.table("t").expect("table");
    assert!(scan(&t) == model, "after reopen");
}

#[test]
fn a_page_read_racing_a_write_and_an_eviction_does_not_bring_back_the_old_page() {
    // Goal: with a cache of three pages, a reader's read of a page from the
    // file is held after it has read; meanwhile a writer loads the same
    // page, changes it, and it is evicted (reads of another table make the
    // cache hand it back, and a write to that table writes it out and lets
    // it go: the cache itself writes no page). When the reader goes on, its
    // older image must not replace the newer page in the cache: it once
    // did, and the acknowledged put was lost. The page is a leaf (a root
    // stays in memory while its table is open, so it is never read back).
    let gate = Arc::new(Gate::default());
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), gated_options(&gate, 3 * 4096)).expect("open");
    let t = db.create_table("t", btree(4096)).expect("create");
    let other = db.create_table("other", btree(4096)).expect("create");
    for i in 0..300u32 {
        other.put(&key(i), &[9; 100]).expect("put");
        t.put(&key(i), &[1; 100]).expect("put");
    }
    assert!(shape(&t).height >= 2);
    let churn = || {
        assert_eq!(other.iter().expect("iter").count(), 300);
        other.put(&key(0), &[9; 100]).expect("put");
    };
    churn();
    gate.arm(true, true);
    thread::scope(|s| {
        let reader = s.spawn(|| t.get(&key(150)));
        gate.wait_blocked();
        t.put(&key(150), &[2; 100]).expect("put");
        churn();
        gate.release();
        let got = reader.join().expect("reader").expect("get");
        assert!(
            got == Some(vec![1; 100]) || got == Some(vec![2; 100]),
            "{got:?}"
        );
    });
    assert_eq!(t.get(&key(150)).expect("get"), Some(vec![2; 100]));
    churn();
    assert_eq!(t.get(&key(150)).expect("get"), Some(vec![2; 100]));
}

#[test]
fn a_descent_begun_before_a_checkpoint_does_not_read_reused_pages() {
    // Goal: a get that has passed the root and is reading a leaf from the
    // file when the writer replaces that leaf, a checkpoint frees the old
    // one, and later writes reuse its page, still answers from the tree it
    // started in. It once found the reused page in the cache and answered
    // "absent" for a key that was there before and after.
    let gate = Arc::new(Gate::default());
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), gated_options(&gate, 3 * 4096)).expect("open");
    let t = db.create_table("t", btree(4096)).expect("create");
    let other = db.create_table("other", btree(4096)).expect("create");
    for i in 0..300u32 {
        other.put(&key(i), &[9; 100]).expect("put");
        t.put(&key(i), &[1; 100]).expect("put");
    }
    db.checkpoint().expect("checkpoint");
    assert!(shape(&t).height >= 2);
    assert_eq!(other.iter().expect("iter").count(), 300);
    gate.arm(true, true);
    thread::scope(|s| {
        let reader = s.spawn(|| t.get(&key(150)));
        gate.wait_blocked();
        t.put(&key(150), &[2; 100]).expect("put");
        db.checkpoint().expect("checkpoint");
        for i in (0..300u32).step_by(7) {
            t.put(&key(i), &[3; 100]).expect("put");
        }
        // Write on until the file grows: every free page has been reused by
        // then, the leaf the get is reading among them unless it is kept
        // aside.
        let start = shape(&t).file_bytes;
        let mut n = 0u32;
        while shape(&t).file_bytes == start {
            for _ in 0..20 {
                t.put(format!("zz{n:06}").as_bytes(), &[3; 100])
                    .expect("put");
                n += 1;
            }
        }
        gate.release();
        let got = reader.join().expect("reader").map(|v| v.map(|v| v[0]));
        assert!(matches!(got, Ok(Some(1 | 2))), "{got:?}");
    });
    db.checkpoint().expect("checkpoint");
    db.verify().expect("verify");
    for i in 0..300u32 {
        let want = if i % 7 == 0 {
            3
        } else if i == 150 {
            2
        } else {
            1
        };
        assert_eq!(t.get(&key(i)).expect("get"), Some(vec![want; 100]), "{i}");
    }
}

#[test]
fn shape_and_stats_tell_the_durable_images_pages_from_the_free_ones() {
    // Goal: after a checkpoint, the pages a copy-on-write change replaces
    // are the durable image's (reusable once the next checkpoint is
    // durable), counted apart from the pages reusable now; a checkpoint
    // makes them reusable.
    let dir = tempfile::tempdir().expect("tempdir");
    let options = Options {
        background_threads: 0,
        autowork: false,
        ..Options::default()
    };
    let db = Db::open(dir.path(), options).expect("open");
    let t = db.create_table("t", common::btree_table()).expect("table");
    let keys = 5_000u32;
    for i in 0..keys {
        t.put(format!("key{i:06}").as_bytes(), &[b'a'; 100])
            .expect("put");
    }
    db.checkpoint().expect("checkpoint");
    for i in 0..keys {
        t.put(format!("key{i:06}").as_bytes(), &[b'b'; 100])
            .expect("put");
    }
    let shape = t.shape().expect("shape").btree.expect("a B-tree");
    let leaves = shape.leaf_pages;
    assert!(leaves > 100, "{shape:?}");
    // Every leaf was replaced: its durable copy is the image's.
    assert!(shape.image_pages >= leaves, "{shape:?}");
    assert!(shape.free_pages >= shape.image_pages, "{shape:?}");
    let stats = db.stats();
    let b = stats.tables[0].btree.as_ref().expect("B-tree stats");
    assert_eq!(b.image_pages, shape.image_pages);
    assert!(
        stats.to_string().contains("after the next checkpoint"),
        "{stats}"
    );
    assert!(shape_text(&t).contains("once the next checkpoint is durable"));

    db.checkpoint().expect("checkpoint");
    let after = t.shape().expect("shape").btree.expect("a B-tree");
    assert_eq!(after.image_pages, 0, "{after:?}");
    assert!(after.free_pages >= leaves, "{after:?}");
}

fn shape_text(t: &spinney::Table) -> String {
    t.shape().expect("shape").to_string()
}
