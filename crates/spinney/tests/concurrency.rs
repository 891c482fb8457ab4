//! Concurrency: many threads writing and reading one database.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;

use spinney::{Db, Durability, Options, TableOptions, WriteBatch};

fn small_tables() -> TableOptions {
    TableOptions {
        write_buffer_size: 64 << 10,
        block_size: 1024,
        ..TableOptions::default()
    }
}

/// A B-tree table of 4 KiB pages, so that a few thousand keys make a tree
/// of several levels.
fn small_btree(db: &Db) -> spinney::Table {
    db.create_table(
        "tree",
        TableOptions {
            page_size: 4096,
            ..TableOptions::btree()
        },
    )
    .expect("create")
}

#[test]
fn concurrent_writers_lose_nothing_and_readers_see_whole_batches() {
    // Goal: with 4 writers and 3 readers at once, every acknowledged write
    // is readable afterwards, and no reader ever sees part of a batch.
    // Method: each batch writes the same counter value under a pair of keys
    // in two tables; readers iterate one table at a snapshot and check that
    // the other table agrees at that same snapshot.
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Arc::new(Db::open(dir.path(), Options::default()).expect("open"));
    let left = db.create_table("left", small_tables()).expect("left");
    let right = db.create_table("right", small_tables()).expect("right");
    let writers = 4;
    let per_writer = 1500u32;
    let stop = Arc::new(AtomicBool::new(false));
    let barrier = Arc::new(Barrier::new(writers + 3));

    let mut readers = Vec::new();
    for _ in 0..3 {
        let (db, left, right, stop, barrier) = (
            Arc::clone(&db),
            left.clone(),
            right.clone(),
            Arc::clone(&stop),
            Arc::clone(&barrier),
        );
        readers.push(thread::spawn(move || {
            barrier.wait();
            let mut checks = 0u64;
            while !stop.load(Ordering::Acquire) {
                let snap = db.snapshot();
                let mut prev: Option<Vec<u8>> = None;
                for entry in snap.range::<&[u8], _>(&left, ..).expect("range") {
                    let (k, v) = entry.expect("entry");
                    if let Some(p) = &prev {
                        assert!(p < &k, "keys out of order");
                    }
                    assert_eq!(
                        snap.get(&right, &k).expect("get"),
                        Some(v),
                        "half a batch visible"
                    );
                    prev = Some(k);
                    checks += 1;
                }
            }
            checks
        }));
    }
    let mut handles = Vec::new();
    for w in 0..writers {
        let (db, left, right, barrier) = (
            Arc::clone(&db),
            left.clone(),
            right.clone(),
            Arc::clone(&barrier),
        );
        handles.push(thread::spawn(move || {
            barrier.wait();
            for i in 0..per_writer {
                let key = format!("w{w}-{:05}", i % 700);
                let value = format!("{i}");
                let mut b = WriteBatch::new();
                b.put(&left, key.as_bytes(), value.as_bytes());
                b.put(&right, key.as_bytes(), value.as_bytes());
                db.write(b).expect("write");
            }
        }));
    }
    for h in handles {
        h.join().expect("writer");
    }
    stop.store(true, Ordering::Release);
    for r in readers {
        assert!(r.join().expect("reader") > 0);
    }
    // Every key holds the last value its writer wrote.
    for w in 0..writers {
        for slot in 0..700u32 {
            let last = (0..per_writer)
                .filter(|i| i % 700 == slot)
                .max()
                .expect("written");
            let key = format!("w{w}-{slot:05}");
            assert_eq!(
                left.get(key.as_bytes()).expect("get"),
                Some(last.to_string().into_bytes())
            );
            assert_eq!(
                right.get(key.as_bytes()).expect("get"),
                Some(last.to_string().into_bytes())
            );
        }
    }
    db.wait_for_compaction().expect("idle");
    db.verify().expect("verify");
}

#[test]
fn full_durability_writers_share_syncs() {
    // Goal: group commit. Concurrent `Full` commits are acknowledged with
    // fewer log syncs than commits. Method: 8 threads commit 200 small
    // batches each; the counters must show fewer syncs than commits.
    let dir = tempfile::tempdir().expect("tempdir");
    let options = Options {
        durability: Durability::Full,
        ..Options::default()
    };
    let db = Arc::new(Db::open(dir.path(), options).expect("open"));
    let t = db
        .create_table("t", TableOptions::default())
        .expect("table");
    let threads: Vec<_> = (0..8)
        .map(|n| {
            let (db, t) = (Arc::clone(&db), t.clone());
            thread::spawn(move || {
                for i in 0..200 {
                    t.put(format!("{n}-{i}").as_bytes(), b"v").expect("put");
                }
                drop(db);
            })
        })
        .collect();
    for th in threads {
        th.join().expect("thread");
    }
    let stats = db.stats();
    assert_eq!(stats.commits, 1600);
    assert!(
        stats.wal_syncs < stats.commits,
        "{} syncs for {} commits",
        stats.wal_syncs,
        stats.commits
    );
    assert!(stats.commit_groups < stats.commits);
}

#[test]
fn iterators_stay_consistent_while_writes_flush_and_compact() {
    // Goal: an open iterator keeps showing the state of its creation while
    // writers overwrite every key and background work replaces the files.
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), Options::default()).expect("open");
    let t = db.create_table("t", small_tables()).expect("table");
    for i in 0..2000u32 {
        t.put(format!("{i:05}").as_bytes(), b"old").expect("put");
    }
    let range = t.iter().expect("iter");
    thread::scope(|s| {
        s.spawn(|| {
            for round in 0..5 {
                for i in 0..2000u32 {
                    t.put(
                        format!("{i:05}").as_bytes(),
                        format!("new{round}").as_bytes(),
                    )
                    .expect("put");
                }
                db.flush().expect("flush");
            }
            t.compact_all().expect("compact");
        });
    });
    let seen: Vec<_> = range.collect::<spinney::Result<_>>().expect("scan");
    assert_eq!(seen.len(), 2000);
    assert!(seen.iter().all(|(_, v)| v == b"old"));
    assert!(t
        .iter()
        .expect("iter")
        .all(|e| e.expect("entry").1 == b"new4"));
}

#[test]
fn flushes_racing_commits_lose_nothing() {
    // Goal: a user `flush()` freezes the active memtable while commit
    // leaders are applying batches; no entry may land in a memtable after
    // its flush has read it. Method: writers commit unique keys while a
    // thread flushes in a loop; after a reopen every key must be there.
    let dir = tempfile::tempdir().expect("tempdir");
    let keys_per_writer = 20_000u32;
    {
        let db = Arc::new(Db::open(dir.path(), Options::default()).expect("open"));
        let t = db.create_table("t", small_tables()).expect("table");
        let done = Arc::new(AtomicBool::new(false));
        let flusher = {
            let (db, done) = (Arc::clone(&db), Arc::clone(&done));
            thread::spawn(move || {
                let mut flushes = 0u32;
                while !done.load(Ordering::Acquire) {
                    db.flush().expect("flush");
                    flushes += 1;
                }
                flushes
            })
        };
        let writers: Vec<_> = (0..3)
            .map(|w| {
                let t = t.clone();
                thread::spawn(move || {
                    for i in 0..keys_per_writer {
                        t.put(format!("{w}-{i:05}").as_bytes(), b"v").expect("put");
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().expect("writer");
        }
        done.store(true, Ordering::Release);
        assert!(flusher.join().expect("flusher") > 0);
    }
    let db = Db::open(dir.path(), Options::default()).expect("reopen");
    let t = db.table("t").expect("table");
    let keys: Vec<_> = t
        .iter()
        .expect("iter")
        .map(|e| e.expect("entry").0)
        .collect();
    assert_eq!(
        keys.len(),
        3 * keys_per_writer as usize,
        "entries lost across flushes"
    );
}

#[test]
fn btree_readers_racing_splits_new_roots_and_page_copies_read_right() {
    // Goal: descents find the root without a lock (`RootCell`): a reader
    // that reads where the root is while a split, a new root or a copy of
    // the root (after a checkpoint) is under way must start over, never
    // descend from a page the change half made or left behind. Method: a
    // B-tree table of 4 KiB pages (values of 200 bytes: about sixteen
    // entries a leaf) grows from nothing to 30,000 keys, with a checkpoint
    // every 500 puts (each copies the root and the path to every leaf
    // written after it), while two readers get keys already written, read
    // before the get where the writer is, and scan; every key written
    // before a read began must be found with its value, and a scan is in
    // order and holds every key written before it began. (Checked: with a
    // frame's version left unchanged by its write latch, readers lost keys
    // in every run, through a copy of the root whose child a copy after a
    // checkpoint had replaced. A descent that skips the root's own check
    // races in a window too narrow for this test to hit.)
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Arc::new(Db::open(dir.path(), Options::default()).expect("open"));
    let table = small_btree(&db);
    let key =
        |i: u64| format!("k{:09}", i.wrapping_mul(2_654_435_761) % 1_000_000_007).into_bytes();
    let value = |k: &[u8]| {
        let mut v = k.to_vec();
        v.resize(200, b'v');
        v
    };
    let total = 30_000u64;
    let written = std::sync::atomic::AtomicU64::new(0);
    let reads = std::sync::atomic::AtomicU64::new(0);
    thread::scope(|s| {
        for reader in 0..2u64 {
            let (table, written, reads) = (&table, &written, &reads);
            s.spawn(move || {
                let mut n = 0u64;
                loop {
                    let done = written.load(Ordering::Acquire);
                    if done == total {
                        break;
                    }
                    if done == 0 {
                        thread::yield_now();
                        continue;
                    }
                    for step in 0..64 {
                        let j = (n * 7919 + step + reader) % done;
                        let k = key(j);
                        let got = table.get(&k).expect("get");
                        assert_eq!(got, Some(value(&k)), "reader {reader}: key {j} of {done}");
                        n += 1;
                    }
                    if n % 4096 < 64 {
                        let mut seen = 0u64;
                        let mut last: Option<Vec<u8>> = None;
                        for entry in table.iter().expect("iter") {
                            let (k, v) = entry.expect("scan");
                            assert_eq!(v, value(&k), "reader {reader}: a scanned value");
                            assert!(last.as_ref().is_none_or(|l| *l < k), "out of order");
                            seen += 1;
                            last = Some(k);
                        }
                        assert!(seen >= done, "reader {reader}: a scan saw {seen} of {done}");
                    }
                }
                reads.fetch_add(n, Ordering::Relaxed);
            });
        }
        for i in 0..total {
            let k = key(i);
            table.put(&k, &value(&k)).expect("put");
            written.store(i + 1, Ordering::Release);
            if i % 500 == 499 {
                table.checkpoint().expect("checkpoint");
            }
        }
    });
    let height = table.shape().expect("shape").btree.expect("btree").height;
    assert!(height >= 3, "the tree grew to height {height}");
    assert!(reads.load(Ordering::Relaxed) > 0);
}

#[test]
fn btree_cursors_read_one_state_while_leaves_are_copied_split_and_packed() {
    // Goal: a B-tree cursor goes on past its window from the leaf it read
    // (or the leaf beside it, through their parent) while those pages are
    // unchanged, and descends again once they change; either way it reads
    // one state. Method: 3,000 keys in 4 KiB pages (about twenty entries a
    // leaf); a writer rewrites every key in ascending order, round after
    // round, in batches of 40 (so leaves split while a batch holds two
    // versions of a key and are packed after it), with a checkpoint every
    // five batches (after which each leaf written is copied); two readers
    // seek to random keys and step 1 to 300 times forward or backward.
    // Every key exists throughout, so each step must land on the next (or
    // previous) key, and the rounds a cursor sees must be those of one
    // moment: keys below some key at round r, the rest at round r - 1.
    // (Checked: it fails in every run if the cursor goes on from a leaf or
    // a parent without checking its version, or if a resumed copy skips
    // its first slot.)
    const KEYS: u64 = 3000;
    const ROUNDS: u64 = 25;
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), Options::default()).expect("open");
    let table = small_btree(&db);
    let key = |i: u64| format!("k{i:06}").into_bytes();
    let value = |round: u64| {
        let mut v = format!("{round:04}").into_bytes();
        v.resize(120, b'v');
        v
    };
    let round_of = |v: &[u8]| -> u64 {
        std::str::from_utf8(&v[..4])
            .expect("utf8")
            .parse()
            .expect("round")
    };
    let mut batch = WriteBatch::new();
    for i in 0..KEYS {
        batch.put(&table, &key(i), &value(0));
    }
    db.write(batch).expect("load");
    let done = AtomicBool::new(false);
    thread::scope(|s| {
        for reader in 0..2u64 {
            let (table, done) = (&table, &done);
            s.spawn(move || {
                let mut n = reader;
                let mut cursors = 0u64;
                while !done.load(Ordering::Acquire) || cursors < 50 {
                    n = n.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                    let start = (n >> 33) % KEYS;
                    let steps = 1 + (n >> 20) % 300;
                    let forward = (n >> 12) % 2 == 0;
                    let mut c = table.cursor().expect("cursor");
                    c.seek(&key(start));
                    let mut at = start;
                    let mut rounds = Vec::new();
                    for step in 0..steps {
                        assert!(c.valid(), "reader {reader}: {step} steps from {start}");
                        assert_eq!(
                            c.key(),
                            key(at),
                            "reader {reader}: {step} steps from {start}"
                        );
                        rounds.push(round_of(c.value()));
                        let last = if forward { at + 1 == KEYS } else { at == 0 };
                        if last {
                            break;
                        }
                        if forward {
                            c.next();
                            at += 1;
                        } else {
                            c.prev();
                            at -= 1;
                        }
                    }
                    c.status().expect("status");
                    // In key order, the rounds fall by at most one.
                    if !forward {
                        rounds.reverse();
                    }
                    let (hi, lo) = (rounds[0], rounds[rounds.len() - 1]);
                    assert!(
                        rounds.windows(2).all(|w| w[0] >= w[1]) && hi - lo <= 1,
                        "reader {reader}: from {start} ({}): rounds {rounds:?}",
                        if forward { "forward" } else { "backward" }
                    );
                    cursors += 1;
                }
            });
        }
        for round in 1..=ROUNDS {
            for (b, first) in (0..KEYS).step_by(40).enumerate() {
                let mut batch = WriteBatch::new();
                for i in first..(first + 40).min(KEYS) {
                    batch.put(&table, &key(i), &value(round));
                }
                db.write(batch).expect("write");
                if b % 5 == 4 {
                    table.checkpoint().expect("checkpoint");
                }
            }
        }
        done.store(true, Ordering::Release);
    });
    let mut c = table.cursor().expect("cursor");
    c.seek_to_first();
    for i in 0..KEYS {
        assert_eq!((c.key(), round_of(c.value())), (&key(i)[..], ROUNDS));
        c.next();
    }
    assert!(!c.valid());
}

#[test]
fn btree_leaves_read_through_maps_while_overwritten_are_never_stale() {
    // Goal: a get that reads a leaf through the file's memory map
    // (`Options::mmap_reads`) reads the leaf as it is, while the writer
    // changes it in the cache, writes it out on eviction and at
    // checkpoints, and copies and splits it. Method: a cache of eight 4 KiB
    // pages over 4,000 keys, so that most leaves are not cached; the
    // writer overwrites every key round after round (each value names its
    // key and its round) with a checkpoint every 500 puts, while two
    // readers get keys at random: each value must be its key's, and a
    // reader must never see a key's round go back (a stale leaf read from
    // the file while a newer one waits in the cache would); now and then a
    // reader scans a few entries from its key, each a key's own value, in
    // order, from the key itself. Leaves must be read through the map.
    let dir = tempfile::tempdir().expect("tempdir");
    let options = Options {
        cache_size: 8 * 4096,
        mmap_reads: true,
        ..Options::default()
    };
    let db = Arc::new(Db::open(dir.path(), options).expect("open"));
    let table = small_btree(&db);
    let keys = 4_000u64;
    let rounds = 6u64;
    let key =
        |i: u64| format!("k{:09}", i.wrapping_mul(2_654_435_761) % 1_000_000_007).into_bytes();
    let value = |k: &[u8], round: u64| {
        let mut v = k.to_vec();
        v.extend_from_slice(format!(":{round:04}:").as_bytes());
        v.resize(120, b'v');
        v
    };
    let round_of = |k: &[u8], v: &[u8]| -> u64 {
        assert!(v.starts_with(k), "the value of {k:?} names another key");
        let at = k.len() + 1;
        std::str::from_utf8(&v[at..at + 4])
            .expect("a round")
            .parse()
            .expect("a round")
    };
    for i in 0..keys {
        let k = key(i);
        table.put(&k, &value(&k, 0)).expect("put");
    }
    table.checkpoint().expect("checkpoint");
    let done = AtomicBool::new(false);
    thread::scope(|s| {
        for reader in 0..2u64 {
            let (table, done) = (&table, &done);
            s.spawn(move || {
                let mut seen = vec![0u64; keys as usize];
                let mut n = reader;
                while !done.load(Ordering::Acquire) {
                    n = n
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1_442_695_040_888_963_407);
                    let i = (n >> 33) % keys;
                    let k = key(i);
                    let v = table.get(&k).expect("get").expect("a key written");
                    let round = round_of(&k, &v);
                    let last = &mut seen[i as usize];
                    assert!(
                        round >= *last,
                        "reader {reader}: key {i} went back from round {last} to {round}"
                    );
                    *last = round;
                    // Now and then a short scan from the key: cursors read
                    // leaves through the map too.
                    if n % 16 == 0 {
                        let mut previous = k.clone();
                        let scan = table.range(k.clone()..).expect("range").take(12);
                        for (scanned, entry) in scan.enumerate() {
                            let (sk, sv) = entry.expect("scan");
                            round_of(&sk, &sv);
                            assert!(
                                scanned == 0 || sk > previous,
                                "reader {reader}: out of order"
                            );
                            assert!(
                                scanned > 0 || sk == k,
                                "reader {reader}: the scan skipped its first key"
                            );
                            previous = sk;
                        }
                    }
                }
            });
        }
        for round in 1..=rounds {
            for i in 0..keys {
                let k = key(i);
                table.put(&k, &value(&k, round)).expect("put");
                if i % 500 == 499 {
                    table.checkpoint().expect("checkpoint");
                }
            }
        }
        done.store(true, Ordering::Release);
    });
    for i in 0..keys {
        let k = key(i);
        assert_eq!(table.get(&k).expect("get"), Some(value(&k, rounds)));
    }
    let stats = db.stats();
    let b = stats.tables[0].btree.as_ref().expect("btree");
    assert!(
        b.pages_mapped > 1_000,
        "{} leaves read through the map",
        b.pages_mapped
    );
}
