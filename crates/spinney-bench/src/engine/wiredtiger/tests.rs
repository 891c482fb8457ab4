//! The WiredTiger adapter's tests: both kinds through the checks every
//! engine passes, WiredTiger's codes and statistics keys against its
//! header, reads and writes across tables and threads, write conflicts,
//! the operations, reopening, and the options it refuses.

use spinney::{Compression, Durability};

use super::config::{lsm_chunk_size, lsm_threads, CHUNK_SIZE_MIN, LSM_MERGE_CACHE_BYTES};
use super::ffi::{WT_NOTFOUND, WT_ROLLBACK};
use super::handles::failure_text;
use super::*;
use crate::engine::{conformance, Batch, Op, Seek};

#[test]
fn both_kinds_do_what_every_engine_does() {
    // Goal: the checks every adapter passes (see `conformance`), on
    // WiredTiger's B-tree and LSM.
    for engine in ENGINES {
        conformance::all(&|dir: &Path| open_store(engine, dir));
    }
}

#[test]
fn lsm_chunks_shrink_to_fit_the_cache() {
    // Goal: WiredTiger wants three chunks and the merges' pages in the
    // cache; a chunk that does not fit is made smaller, and a cache too
    // small for the smallest chunks is a usage error.
    let with = |cache_size: u64, write_buffer_size: usize| Config {
        cache_size,
        write_buffer_size,
        ..Config::default()
    };
    assert_eq!(lsm_chunk_size(&with(64 << 20, 8 << 20)).ok(), Some(8 << 20));
    let shrunk = lsm_chunk_size(&with(20 << 20, 8 << 20)).expect("fits");
    assert!(shrunk < 8 << 20 && 3 * shrunk + LSM_MERGE_CACHE_BYTES <= 20 << 20);
    assert_eq!(shrunk % (64 << 10), 0);
    let err = lsm_chunk_size(&with(2 << 20, 8 << 20)).expect_err("too small");
    assert!(matches!(err, BenchError::Config(_)), "{err}");
    assert!(Engine::WiredtigerLsm.cache_bytes_min() >= 3 * CHUNK_SIZE_MIN + LSM_MERGE_CACHE_BYTES);
}

#[test]
fn table_files_are_told_apart() {
    // Goal: a table's bytes count its own files only, not another
    // table's whose name it begins, nor WiredTiger's own.
    assert!(is_table_file("default.wt", "default"));
    assert!(is_table_file("by_price-000012.lsm", "by_price"));
    assert!(is_table_file("by_price-000012.bf", "by_price"));
    assert!(!is_table_file("by_price_2-000012.lsm", "by_price"));
    assert!(!is_table_file("by_price-.lsm", "by_price"));
    assert!(!is_table_file("WiredTiger.wt", "default"));
    assert!(!is_table_file("default.wtx", "default"));
}

const ENGINES: [Engine; 2] = [Engine::WiredtigerBtree, Engine::WiredtigerLsm];

fn config(engine: Engine) -> Config {
    Config {
        engine,
        threads: 4,
        progress: false,
        ..Config::default()
    }
}

fn specs() -> [TableSpec; 2] {
    [TableSpec::named("one"), TableSpec::named("two")]
}

fn open_store(engine: Engine, dir: &Path) -> Box<dyn Store> {
    open(engine, &config(engine), dir, &specs())
        .unwrap_or_else(|e| panic!("open {engine} in {}: {e}", dir.display()))
}

fn key(i: usize) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

/// A value whose length tells which key and which version wrote it.
fn value(i: usize, version: usize) -> Vec<u8> {
    vec![b'a' + (version % 26) as u8; 10 + i % 50 + 100 * version]
}

/// A write of `write`: table, key, and the value of a put (`None` for
/// a delete).
type Write<'a> = (usize, &'a [u8], Option<&'a [u8]>);

fn write(session: &mut dyn Session, ops: &[Write<'_>]) {
    let mut batch = Batch::new();
    for &(table, k, v) in ops {
        match v {
            Some(v) => batch.put(table, k, v),
            None => batch.delete(table, k),
        }
    }
    session.write(&batch).expect("write");
}

#[test]
fn wiredtiger_codes_and_statistics_keys_match_the_header() {
    // Goal: the codes and statistics keys written by hand in this file
    // are the library's. Method: WiredTiger's own words for each code,
    // and the description a statistics cursor gives each key.
    let words = |code| failure_text("probe", code);
    assert!(
        words(WT_NOTFOUND).contains("WT_NOTFOUND"),
        "{}",
        words(WT_NOTFOUND)
    );
    assert!(
        words(WT_ROLLBACK).contains("WT_ROLLBACK"),
        "{}",
        words(WT_ROLLBACK)
    );
    assert!(version().starts_with("3."), "{}", version());

    let dir = tempfile::tempdir().expect("tempdir");
    let store = WiredTigerStore::open(
        Engine::WiredtigerLsm,
        &config(Engine::WiredtigerLsm),
        dir.path(),
        &specs(),
    )
    .expect("open");
    let mut session = store.conn.session().expect("session");
    let expected_connection = [
        (
            stats::LSM_WORK_QUEUE_APP,
            "LSM: application work units currently queued",
        ),
        (
            stats::LSM_WORK_QUEUE_MANAGER,
            "LSM: merge work units currently queued",
        ),
        (stats::LSM_ROWS_MERGED, "LSM: rows merged in an LSM tree"),
        (
            stats::LSM_CHECKPOINT_THROTTLE,
            "LSM: sleep for LSM checkpoint throttle",
        ),
        (
            stats::LSM_MERGE_THROTTLE,
            "LSM: sleep for LSM merge throttle",
        ),
        (
            stats::LSM_WORK_QUEUE_SWITCH,
            "LSM: switch work units currently queued",
        ),
        (
            stats::LSM_WORK_UNITS_DONE,
            "LSM: tree maintenance operations executed",
        ),
        (stats::BLOCK_BYTE_READ, "block-manager: bytes read"),
        (stats::BLOCK_BYTE_WRITE, "block-manager: bytes written"),
        (
            stats::BLOCK_BYTE_WRITE_CHECKPOINT,
            "block-manager: bytes written for checkpoint",
        ),
        (
            stats::CACHE_BYTES_INUSE,
            "cache: bytes currently in the cache",
        ),
        (stats::CACHE_BYTES_READ, "cache: bytes read into cache"),
        (stats::CACHE_BYTES_WRITE, "cache: bytes written from cache"),
        (stats::CACHE_BYTES_MAX, "cache: maximum bytes configured"),
        (stats::CACHE_EVICTION_DIRTY, "cache: modified pages evicted"),
        (
            stats::CACHE_EVICTION_APP,
            "cache: pages evicted by application threads",
        ),
        (stats::CACHE_READ, "cache: pages read into cache"),
        (stats::CACHE_WRITE, "cache: pages written from cache"),
        (
            stats::CACHE_BYTES_DIRTY,
            "cache: tracked dirty bytes in the cache",
        ),
        (
            stats::CACHE_EVICTION_CLEAN,
            "cache: unmodified pages evicted",
        ),
        (stats::LOG_BYTES_WRITTEN, "log: log bytes written"),
        (stats::LOG_FLUSH, "log: log flush operations"),
        (stats::LOG_SYNC, "log: log sync operations"),
        (stats::LOG_WRITES, "log: log write operations"),
        (
            stats::TXN_CHECKPOINT,
            "transaction: transaction checkpoints",
        ),
        (stats::TXN_COMMIT, "transaction: transactions committed"),
        (stats::TXN_ROLLBACK, "transaction: transactions rolled back"),
    ];
    {
        let mut statistics = session.statistics(c"statistics:").expect("statistics");
        for (key, description) in expected_connection {
            let found = statistics.get(key).expect("read").map(|(d, _)| d);
            assert_eq!(
                found.as_deref(),
                Some(description),
                "connection statistic {key}"
            );
        }
        assert_eq!(
            statistics.value(stats::CACHE_BYTES_MAX).expect("read"),
            i64::try_from(Config::default().cache_size).expect("fits"),
            "the cache is the one configured"
        );
    }
    let expected_table = [
        (
            stats::BLOOM_FALSE_POSITIVE,
            "LSM: bloom filter false positives",
        ),
        (stats::BLOOM_HIT, "LSM: bloom filter hits"),
        (stats::BLOOM_MISS, "LSM: bloom filter misses"),
        (stats::BLOOM_COUNT, "LSM: bloom filters in the LSM tree"),
        (stats::LSM_CHUNK_COUNT, "LSM: chunks in the LSM tree"),
        (
            stats::LSM_GENERATION_MAX,
            "LSM: highest merge generation in the LSM tree",
        ),
        (
            stats::LSM_LOOKUP_NO_BLOOM,
            "LSM: queries that could have benefited from a Bloom filter that did not exist",
        ),
        (stats::BLOOM_SIZE, "LSM: total size of bloom filters"),
        (stats::BLOCK_SIZE, "block-manager: file size in bytes"),
        (stats::BTREE_MAXIMUM_DEPTH, "btree: maximum tree depth"),
    ];
    let uri = store.table(0).expect("table").statistics_uri.clone();
    let mut statistics = session.statistics(&uri).expect("statistics");
    for (key, description) in expected_table {
        let found = statistics.get(key).expect("read").map(|(d, _)| d);
        assert_eq!(found.as_deref(), Some(description), "table statistic {key}");
    }
}

#[test]
fn puts_and_deletes_across_two_tables_read_back() {
    // Goal: batches of one entry (auto-commit) and of many (one
    // transaction across tables) land, puts overwrite, deletes remove,
    // and deleting a missing key is no error. Method: write, then read
    // every key back through `get` (lengths) and the values themselves.
    for engine in ENGINES {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open_store(engine, dir.path());
        let mut session = store.session().expect("session");
        let mut batch = Batch::new();
        for i in 0..100 {
            batch.put(i % 2, &key(i), &value(i, 0));
        }
        session.write(&batch).expect("batch of puts");
        write(session.as_mut(), &[(0, &key(0), Some(&value(0, 1)))]);
        write(
            session.as_mut(),
            &[(1, &key(1), None), (0, &key(2), None), (1, &key(777), None)],
        );
        write(session.as_mut(), &[(0, &key(999), None)]);
        write(
            session.as_mut(),
            &[
                (1, &key(3), Some(&value(3, 2))),
                (0, &key(4), Some(&value(4, 2))),
            ],
        );

        for i in 0..100 {
            let table = i % 2;
            let expected = match i {
                0 => Some(value(0, 1)),
                1 | 2 => None,
                3 | 4 => Some(value(i, 2)),
                _ => Some(value(i, 0)),
            };
            assert_eq!(
                session.get(table, &key(i)).expect("get"),
                expected.as_ref().map(Vec::len),
                "{engine}: key {i} of table {table}"
            );
            // The other table never held this key.
            assert_eq!(
                session.get(1 - table, &key(i)).expect("get"),
                None,
                "{engine}: key {i}"
            );
        }
        // WiredTiger refuses empty keys: none can be found or deleted,
        // and a put of one is an error.
        assert_eq!(session.get(0, b"").expect("get"), None);
        write(session.as_mut(), &[(0, b"", None)]);
        let mut empty = Batch::new();
        empty.put(0, b"", b"v");
        let refused = session.write(&empty).expect_err("an empty key");
        assert!(refused.to_string().contains("empty key"), "{refused}");
        drop(session);

        let mut session = WiredTigerSession {
            store: store_of(store.as_ref()),
            handle: store_of(store.as_ref()).conn.session().expect("session"),
            cursors: vec![None; 2],
            rollback_wait_max: ROLLBACK_RETRY_WAIT_MAX,
        };
        assert_eq!(
            session.value(0, &key(0)).expect("value"),
            Some(value(0, 1)),
            "{engine}"
        );
        assert_eq!(
            session.value(1, &key(3)).expect("value"),
            Some(value(3, 2)),
            "{engine}"
        );
        assert_eq!(
            session.value(1, &key(5)).expect("value"),
            Some(value(5, 0)),
            "{engine}"
        );
        drop(session);
        store.close().expect("close");
    }
}

/// The store behind a `dyn Store` these tests opened.
fn store_of(store: &dyn Store) -> &WiredTigerStore {
    // SAFETY: every store these tests open comes from `open`, which
    // boxes a `WiredTigerStore`; the cast keeps the borrow's lifetime.
    unsafe { &*(store as *const dyn Store).cast::<WiredTigerStore>() }
}

#[test]
fn seek_lands_on_or_after_the_key_and_steps_forward() {
    // Goal: a seek finds exactly its key, lands on the next key when
    // its key is missing, counts the bytes of up to `steps` entries
    // from there, and stops at the end of the table. Method: keys
    // key00000, key00002, ... key00018 with values of known lengths.
    for engine in ENGINES {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open_store(engine, dir.path());
        let mut session = store.session().expect("session");
        assert_eq!(
            session.seek(0, &key(0), 3).expect("seek"),
            Seek::default(),
            "{engine}: empty table"
        );
        let mut batch = Batch::new();
        for i in (0..20).step_by(2) {
            batch.put(0, &key(i), &value(i, 0));
        }
        session.write(&batch).expect("write");
        let bytes = |from: usize, count: usize| -> u64 {
            (from..20)
                .step_by(2)
                .take(count)
                .map(|i| (key(i).len() + value(i, 0).len()) as u64)
                .sum()
        };

        let exact = session.seek(0, &key(4), 3).expect("seek");
        assert_eq!(
            exact,
            Seek {
                found: true,
                bytes: bytes(4, 3)
            },
            "{engine}: on the key"
        );
        let missing = session.seek(0, &key(5), 2).expect("seek");
        assert_eq!(
            missing,
            Seek {
                found: false,
                bytes: bytes(6, 2)
            },
            "{engine}: after the key"
        );
        let first = session.seek(0, b"a", 1).expect("seek");
        assert_eq!(
            first,
            Seek {
                found: false,
                bytes: bytes(0, 1)
            },
            "{engine}: before the first"
        );
        let past_end = session.seek(0, &key(16), 10).expect("seek");
        assert_eq!(
            past_end,
            Seek {
                found: true,
                bytes: bytes(16, 2)
            },
            "{engine}: steps past the end"
        );
        let beyond = session.seek(0, &key(19), 5).expect("seek");
        assert_eq!(beyond, Seek::default(), "{engine}: beyond the last key");
        let empty = session.seek(0, b"", 2).expect("seek");
        assert_eq!(
            empty,
            Seek {
                found: false,
                bytes: bytes(0, 2)
            },
            "{engine}: the empty key"
        );
        let no_steps = session.seek(0, &key(8), 0).expect("seek");
        assert_eq!(
            no_steps,
            Seek {
                found: true,
                bytes: 0
            },
            "{engine}: no steps"
        );
        // The other table is empty.
        assert_eq!(
            session.seek(1, &key(4), 3).expect("seek"),
            Seek::default(),
            "{engine}"
        );
    }
}

#[test]
fn scans_see_every_entry_in_order_both_ways() {
    // Goal: a scan visits every entry once, in key order forward and in
    // reverse order backward, and stops when `visit` says so. Method:
    // value lengths grow with the key, so the bytes visited give the
    // order; deleted keys must not show.
    for engine in ENGINES {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open_store(engine, dir.path());
        let mut session = store.session().expect("session");
        let mut batch = Batch::new();
        for i in 0..300 {
            batch.put(0, &key(i), &vec![b'v'; i]);
        }
        session.write(&batch).expect("write");
        write(
            session.as_mut(),
            &[(0, &key(7), None), (0, &key(299), None)],
        );
        let expected: Vec<u64> = (0..299)
            .filter(|&i| i != 7)
            .map(|i| (key(i).len() + i) as u64)
            .collect();

        let mut seen = Vec::new();
        session
            .scan(0, true, &mut |bytes| {
                seen.push(bytes);
                true
            })
            .expect("scan");
        assert_eq!(seen, expected, "{engine}: forward");

        seen.clear();
        session
            .scan(0, false, &mut |bytes| {
                seen.push(bytes);
                true
            })
            .expect("scan");
        let reversed: Vec<u64> = expected.iter().rev().copied().collect();
        assert_eq!(seen, reversed, "{engine}: backward");

        seen.clear();
        session
            .scan(0, true, &mut |bytes| {
                seen.push(bytes);
                seen.len() < 3
            })
            .expect("scan");
        assert_eq!(seen, expected[..3], "{engine}: stopped after three");
        // A stopped scan leaves no position behind: the next starts over.
        let mut count = 0;
        session
            .scan(0, true, &mut |_| {
                count += 1;
                true
            })
            .expect("scan");
        assert_eq!(count, expected.len(), "{engine}: a second scan");
    }
}

#[test]
fn a_btree_checkpoints_every_checkpoint_log_bytes_of_log() {
    // Goal: WiredTiger's B-tree checkpoints by itself after
    // `--checkpoint_log_bytes` of log, as spinney's B-tree does (the
    // same cadence for both; with WiredTiger's default, none, its tree is
    // written only by eviction and at close). Method: 1 MiB between
    // checkpoints and about 7 MiB of log written; the connection's count
    // of checkpoints is read until it shows several (the checkpoint thread
    // runs on its own).
    let dir = tempfile::tempdir().expect("tempdir");
    let config = Config {
        checkpoint_log_bytes: 1 << 20,
        ..config(Engine::WiredtigerBtree)
    };
    let text = connection_config(Engine::WiredtigerBtree, &config).expect("config");
    assert!(
        text.contains(",log=(enabled=true,file_max=1048576),checkpoint=(log_size=1048576),"),
        "{text}"
    );
    let store = open(Engine::WiredtigerBtree, &config, dir.path(), &specs()).expect("open");
    let mut session = store.session().expect("session");
    for i in 0..60_000 {
        let mut batch = Batch::new();
        batch.put(0, &key(i), &[b'x'; 100]);
        session.write(&batch).expect("write");
    }
    let checkpoints = || -> i64 {
        let mut handle = store_of(store.as_ref()).conn.session().expect("session");
        let mut connection = handle.statistics(c"statistics:").expect("statistics");
        connection
            .value(stats::TXN_CHECKPOINT)
            .expect("checkpoints")
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while checkpoints() < 3 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(checkpoints() >= 3, "{} checkpoints", checkpoints());
}

#[test]
fn operations_run_and_levels_are_not_supported() {
    // Goal: flush, checkpoint and the compactions run and report true,
    // the level compactions report false (WiredTiger has no levels),
    // waitforcompaction runs only on the LSM, the printouts say
    // something, and the data survives all of it. Method: enough writes
    // to fill more LSM chunks of the smallest size (512 KB) than a merge
    // takes at least, so that compact has chunks to flush and merge.
    for engine in ENGINES {
        let dir = tempfile::tempdir().expect("tempdir");
        let config = Config {
            write_buffer_size: CHUNK_SIZE_MIN as usize,
            ..config(engine)
        };
        let store = open(engine, &config, dir.path(), &specs()).expect("open");
        let mut session = store.session().expect("session");
        let count = 60_000;
        let mut batch = Batch::new();
        for i in 0..count {
            batch.put(0, &key(i), &[b'x'; 100]);
            if batch.ops().count() == 500 {
                session.write(&batch).expect("write");
                batch.clear();
            }
        }
        session.write(&batch).expect("write");
        let lsm = engine == Engine::WiredtigerLsm;
        let chunks_before = if lsm {
            store_of(store.as_ref()).lsm_shape().expect("shape").chunks
        } else {
            0
        };

        for op in [
            Benchmark::Flush,
            Benchmark::Checkpoint,
            Benchmark::Compact,
            Benchmark::CompactAll,
        ] {
            assert!(store.operation(op).expect("operation"), "{engine}: {op}");
        }
        for op in [
            Benchmark::Compact0,
            Benchmark::Compact1,
            Benchmark::ReadRandom,
        ] {
            assert!(!store.operation(op).expect("operation"), "{engine}: {op}");
        }
        assert_eq!(
            store.operation(Benchmark::WaitForCompaction).expect("wait"),
            lsm,
            "{engine}"
        );

        let stats = store
            .printout(Benchmark::Stats)
            .expect("stats")
            .expect("some stats");
        assert!(
            stats.contains("cache: maximum bytes configured: 67108864"),
            "{engine}: {stats}"
        );
        assert!(
            stats.contains("transaction: transaction checkpoints"),
            "{engine}: {stats}"
        );
        let shape = store.printout(Benchmark::Shape).expect("shape");
        let counts = store.shape_counts();
        if lsm {
            let shape = shape.expect("an LSM shape");
            assert!(shape.contains("chunks"), "{shape}");
            // The writes filled more chunks than merge_min (7), some of
            // which background merges may have merged already (more so
            // on a loaded machine). Compact flushes the in-memory one
            // and merges; how far WiredTiger's compact of an LSM tree
            // gets while its own merge threads run varies from run to
            // run (on a loaded machine it once left as many chunks as
            // before, and once, under the whole test suite, one more:
            // the flush that runs first makes the in-memory chunk one
            // more, which no merge had taken yet), so the test holds it
            // to what it always does: a merge has run, and no chunk
            // was added but the flushed one.
            let tree = store_of(store.as_ref()).lsm_shape().expect("shape");
            assert!(chunks_before > 1, "{chunks_before} chunks before compact");
            assert!(tree.generation_max >= 1, "{tree:?}");
            assert!(
                tree.chunks <= chunks_before + 1,
                "{tree:?} after {chunks_before} chunks"
            );
        } else {
            assert_eq!(shape, None);
        }
        // The time series never reads WiredTiger's statistics (see
        // `shape_counts`).
        assert_eq!(counts, ShapeCounts::default());
        for i in (0..count).step_by(997) {
            assert_eq!(
                session.get(0, &key(i)).expect("get"),
                Some(100),
                "{engine}: key {i}"
            );
        }
        assert_eq!(session.get(0, &key(count)).expect("get"), None);
        drop(session);
        store.close().expect("close");
    }
}

#[test]
fn close_then_reopen_keeps_the_data() {
    // Goal: data survives a clean close, and a store dropped without
    // close (its connection closes in drop) reopens with its data.
    // Method: write, close or drop, reopen the directory, read back.
    for engine in ENGINES {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open_store(engine, dir.path());
        let mut session = store.session().expect("session");
        write(
            session.as_mut(),
            &[(0, b"kept", Some(b"one")), (1, b"also", Some(b"two!"))],
        );
        drop(session);
        store.close().expect("close");

        let store = open_store(engine, dir.path());
        let mut session = store.session().expect("session");
        assert_eq!(session.get(0, b"kept").expect("get"), Some(3), "{engine}");
        assert_eq!(session.get(1, b"also").expect("get"), Some(4), "{engine}");
        write(session.as_mut(), &[(0, b"later", Some(b"three"))]);
        drop(session);
        drop(store);

        let store = open_store(engine, dir.path());
        let mut session = store.session().expect("session");
        assert_eq!(session.get(0, b"later").expect("get"), Some(5), "{engine}");
        assert_eq!(session.get(0, b"kept").expect("get"), Some(3), "{engine}");
    }
}

#[test]
fn threads_with_their_own_sessions_read_and_write_concurrently() {
    // Goal: several threads, each with its own session, write and read
    // at once without losing a write or seeing a torn batch. Method:
    // each thread writes its own keys in batches of ten across both
    // tables (a batch puts the same value length in both), and reads
    // keys of the others as it goes: a key in one table must have its
    // twin in the other.
    for engine in ENGINES {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open_store(engine, dir.path());
        let threads = 4;
        let per_thread = 1000;
        std::thread::scope(|scope| {
            for t in 0..threads {
                let store = store.as_ref();
                scope.spawn(move || {
                    let mut session = store.session().expect("session");
                    let mut batch = Batch::new();
                    for i in 0..per_thread {
                        let k = key(t * per_thread + i);
                        let v = value(i, 0);
                        batch.put(0, &k, &v);
                        batch.put(1, &k, &v);
                        if i % 10 == 9 {
                            session.write(&batch).expect("write");
                            batch.clear();
                        }
                        let other = key(((t + 1) % threads) * per_thread + i);
                        let a = session.get(0, &other).expect("get");
                        let b = session.get(1, &other).expect("get");
                        if let (Some(a), Some(b)) = (a, b) {
                            assert_eq!(a, b, "{engine}: twins differ");
                        }
                        if a.is_some() && b.is_none() {
                            // Table 1 is read after table 0, so it can
                            // only have gained entries since.
                            panic!("{engine}: a batch was seen in half");
                        }
                    }
                });
            }
        });
        let mut session = store.session().expect("session");
        for t in 0..threads {
            for i in 0..per_thread {
                let k = key(t * per_thread + i);
                let expected = Some(value(i, 0).len());
                assert_eq!(
                    session.get(0, &k).expect("get"),
                    expected,
                    "{engine}: {t}/{i}"
                );
                assert_eq!(
                    session.get(1, &k).expect("get"),
                    expected,
                    "{engine}: {t}/{i}"
                );
            }
        }
        let mut count = 0;
        session
            .scan(1, true, &mut |_| {
                count += 1;
                true
            })
            .expect("scan");
        assert_eq!(count, threads * per_thread, "{engine}");
    }
}

#[test]
fn a_write_conflict_is_retried_then_reported() {
    // Goal: a batch that collides with another transaction on the same
    // key (WiredTiger answers WT_ROLLBACK) is retried, reported with
    // WiredTiger's words once the retries run out without leaving half
    // of it applied, and succeeds once the other transaction is gone.
    // Method: one session holds an uncommitted put of a key while
    // another session writes a batch holding it.
    for engine in ENGINES {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open_store(engine, dir.path());
        let inner = store_of(store.as_ref());
        let mut holder = WiredTigerSession {
            store: inner,
            handle: inner.conn.session().expect("session"),
            cursors: vec![None; 2],
            rollback_wait_max: ROLLBACK_RETRY_WAIT_MAX,
        };
        // SAFETY: the holder's session is open and used by this thread.
        let begun = unsafe { ffi::spinney_wt_begin(holder.handle.ptr.as_ptr()) };
        assert_eq!(begun, 0);
        let held = Op::Put {
            table: 0,
            key: b"contended",
            value: b"held",
        };
        holder.apply_one(held).expect("the held put");

        // A batch of two runs in an explicit transaction, which gets the
        // conflict back. (A single put would not: WiredTiger retries a
        // conflicting auto-commit write itself, until the holder ends.)
        let mut other = WiredTigerSession {
            store: inner,
            handle: inner.conn.session().expect("session"),
            cursors: vec![None; 2],
            rollback_wait_max: Duration::from_millis(200),
        };
        let mut batch = Batch::new();
        batch.put(1, b"free", b"x");
        batch.put(0, b"contended", b"other");
        let error = other.write(&batch).expect_err(engine.name()).to_string();
        assert!(error.contains("WT_ROLLBACK"), "{engine}: {error}");
        assert!(error.contains(" times over 0.2 s)"), "{error}");
        assert_eq!(
            other.get(1, b"free").expect("get"),
            None,
            "{engine}: no half batch"
        );

        // SAFETY: a transaction is running in the holder's session.
        let rolled_back = unsafe { ffi::spinney_wt_rollback(holder.handle.ptr.as_ptr()) };
        assert_eq!(rolled_back, 0);
        other.write(&batch).expect("no conflict left");
        assert_eq!(
            other.get(0, b"contended").expect("get"),
            Some(5),
            "{engine}"
        );
        assert_eq!(other.get(1, b"free").expect("get"), Some(1), "{engine}");
    }
}

#[test]
fn overlapping_batches_of_threads_stay_whole() {
    // Goal: threads whose batches write the same keys never leave a
    // batch half applied, whether or not their transactions collide.
    // Method: four threads write overlapping keys, each batch putting
    // one value length (the thread's) into both tables; at the end each
    // key must hold the same thread's value in both.
    for engine in ENGINES {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open_store(engine, dir.path());
        std::thread::scope(|scope| {
            for t in 0..4usize {
                let store = store.as_ref();
                scope.spawn(move || {
                    let mut session = store.session().expect("session");
                    let mut batch = Batch::new();
                    for round in 0..200 {
                        batch.clear();
                        for j in 0..10 {
                            let k = key((round * 7 + j * 13 + t) % 50);
                            batch.put(0, &k, &vec![b't'; 10 + t]);
                            batch.put(1, &k, &vec![b't'; 10 + t]);
                        }
                        session.write(&batch).expect("a batch");
                    }
                });
            }
        });
        let mut session = store.session().expect("session");
        for i in 0..50 {
            let a = session.get(0, &key(i)).expect("get");
            assert!(a.is_some(), "{engine}: key {i}");
            assert_eq!(
                a,
                session.get(1, &key(i)).expect("get"),
                "{engine}: key {i}"
            );
        }
    }
}

#[test]
fn a_table_of_the_other_kind_is_a_usage_error() {
    // Goal: reopening a directory with the other WiredTiger engine is
    // refused with a message naming the right one, not silently run.
    let dir = tempfile::tempdir().expect("tempdir");
    open_store(Engine::WiredtigerBtree, dir.path())
        .close()
        .expect("close");
    match open(
        Engine::WiredtigerLsm,
        &config(Engine::WiredtigerLsm),
        dir.path(),
        &specs(),
    ) {
        Err(BenchError::Config(m)) => {
            assert!(m.contains("--engine=wiredtiger-btree"), "{m}")
        }
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("a B-tree table opened as an LSM table"),
    }
}

#[test]
fn options_wiredtiger_cannot_honour_are_usage_errors() {
    // Goal: options outside what WiredTiger takes are refused before it
    // sees them, naming the flag.
    let dir = tempfile::tempdir().expect("tempdir");
    let refused =
        |config: Config, flag: &str| match open(config.engine, &config, dir.path(), &specs()) {
            Err(BenchError::Config(m)) => assert!(m.contains(flag), "{flag}: {m}"),
            Err(e) => panic!("{flag}: wrong error: {e}"),
            Ok(_) => panic!("{flag}: accepted"),
        };
    let lsm = config(Engine::WiredtigerLsm);
    refused(
        Config {
            compression: Compression::Lz4,
            ..config(Engine::WiredtigerBtree)
        },
        "--compression_type=lz4",
    );
    refused(
        Config {
            compression: Compression::Zstd,
            ..lsm.clone()
        },
        "--compression_type=zstd",
    );
    refused(
        Config {
            write_buffer_size: 4096,
            ..lsm.clone()
        },
        "--write_buffer_size=4096",
    );
    refused(
        Config {
            bloom_bits: 1,
            ..lsm.clone()
        },
        "--bloom_bits=1",
    );
    refused(
        Config {
            cache_size: 1000,
            ..lsm.clone()
        },
        "--cache_size=1000",
    );
    // Nothing was created by the refusals.
    assert!(!dir.path().join("WiredTiger").exists());
    // bloom_bits 0 turns the filters off rather than failing.
    let config = Config {
        bloom_bits: 0,
        ..lsm
    };
    let text =
        table_config(Engine::WiredtigerLsm, &config, &TableSpec::named("t")).expect("config");
    assert!(text.contains("bloom=false"), "{text}");
}

#[test]
fn a_refused_open_says_what_wiredtiger_said() {
    // Goal: a WiredTiger error names the call, WiredTiger's words and
    // code, and the detail its event handler gave. Method: a database
    // "directory" that is a regular file.
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("not-a-directory");
    std::fs::write(&file, b"x").expect("write");
    match open(
        Engine::WiredtigerBtree,
        &config(Engine::WiredtigerBtree),
        &file,
        &specs(),
    ) {
        Err(BenchError::Engine { context, error }) => {
            let text = error.to_string();
            assert!(context.contains("not-a-directory"), "{context}");
            assert!(
                text.starts_with("wiredtiger-btree: wiredtiger_open with"),
                "{text}"
            );
            assert!(text.contains("WiredTiger said:"), "{text}");
            assert!(text.contains(" ("), "{text}");
        }
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("opened a database in a file"),
    }
}

#[test]
fn describe_names_the_settings() {
    // Goal: the header line names what the adapter set.
    let lsm = describe(&Config {
        durability: Durability::Full,
        ..config(Engine::WiredtigerLsm)
    });
    assert_eq!(
        lsm,
        "wiredtiger lsm table, bloom 10 bits/key (8 hashes), chunk 8 MB, cache 64 MB, log on, synced at each commit, compression none, eviction threads up to 2, lsm workers 2 + manager"
    );
    let btree = describe(&Config {
        durability: Durability::Off,
        background_threads: 0,
        ..config(Engine::WiredtigerBtree)
    });
    assert!(
        btree.starts_with("wiredtiger btree table (row store"),
        "{btree}"
    );
    assert!(
        btree.contains("log on, buffered and written within about 50 ms, not synced"),
        "{btree}"
    );
    assert!(btree.contains("eviction threads up to 1"), "{btree}");
    assert_eq!(lsm_threads(0), 3);
    assert_eq!(lsm_threads(5), 6);
    assert_eq!(lsm_threads(100), 20);
    let text =
        connection_config(Engine::WiredtigerLsm, &config(Engine::WiredtigerLsm)).expect("config");
    assert_eq!(
        text,
        "create,cache_size=67108864,session_max=100,log=(enabled=true),transaction_sync=(enabled=false),eviction=(threads_min=1,threads_max=2),statistics=(fast),lsm_manager=(worker_thread_max=3)"
    );
}
