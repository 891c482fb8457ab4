//! The public API's edges: locking, names, limits, table lifecycle, reopen.

use spinney::fs::{DirectIo, Fs, OsFs};
use spinney::{limits, Db, Error, Options, TableKind, TableOptions, WriteBatch};

fn open(dir: &std::path::Path) -> Db {
    Db::open(dir, Options::default()).expect("open")
}

#[test]
fn second_opener_gets_locked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = open(dir.path());
    assert!(matches!(
        Db::open(dir.path(), Options::default()),
        Err(Error::Locked { .. })
    ));
    drop(db);
    let _again = open(dir.path());
}

#[test]
fn missing_database_without_create_is_an_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let options = Options {
        create_if_missing: false,
        ..Options::default()
    };
    assert!(matches!(
        Db::open(dir.path().join("nope"), options),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn tables_are_created_listed_dropped_and_survive_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let db = open(dir.path());
        let lz4 = TableOptions {
            compression: spinney::Compression::Lz4,
            ..TableOptions::default()
        };
        let a = db.create_table("a", lz4.clone()).expect("a");
        db.create_table(
            "b",
            TableOptions {
                bloom_bits_per_key: 0,
                ..TableOptions::default()
            },
        )
        .expect("b");
        assert!(matches!(
            db.create_table("a", TableOptions::default()),
            Err(Error::TableExists(_))
        ));
        a.put(b"k", b"v").expect("put");
        let c = db.create_table("c", TableOptions::default()).expect("c");
        c.put(b"x", b"y").expect("put");
        db.drop_table("c").expect("drop");
        assert!(matches!(c.put(b"x", b"z"), Err(Error::NoSuchTable(_))));
        assert!(matches!(db.table("c"), Err(Error::NoSuchTable(_))));
        let names: Vec<_> = db.tables().into_iter().map(|t| t.name).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(db.table("a").expect("a").options(), &lz4);
        db.close().expect("close");
    }
    let db = open(dir.path());
    let names: Vec<_> = db.tables().into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(
        db.table("a").expect("a").get(b"k").expect("get"),
        Some(b"v".to_vec())
    );
    assert_eq!(db.table("b").expect("b").options().bloom_bits_per_key, 0);
    // A new table of a dropped name starts empty.
    let c = db.create_table("c", TableOptions::default()).expect("c");
    assert_eq!(c.get(b"x").expect("get"), None);
}

#[test]
fn bad_names_and_options_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = open(dir.path());
    for name in [
        "",
        "a/b",
        "..",
        "x y",
        &"n".repeat(limits::TABLE_NAME_BYTES_MAX + 1),
    ] {
        if name == ".." {
            continue;
        }
        assert!(
            matches!(
                db.create_table(name, TableOptions::default()),
                Err(Error::InvalidArgument(_))
            ),
            "{name:?}"
        );
    }
    let bad = TableOptions {
        block_size: 1,
        ..TableOptions::default()
    };
    assert!(matches!(
        db.create_table("t", bad),
        Err(Error::InvalidArgument(_))
    ));
    let bad = TableOptions {
        bloom_bits_per_key: 1000,
        ..TableOptions::default()
    };
    assert!(matches!(
        db.create_table("t", bad),
        Err(Error::InvalidArgument(_))
    ));
    for page_size in [0, 1000, 2048, 6000, 65536] {
        let bad = TableOptions {
            kind: TableKind::Btree,
            page_size,
            ..TableOptions::default()
        };
        assert!(matches!(
            db.create_table("t", bad),
            Err(Error::InvalidArgument(_))
        ));
    }
    assert!(db.tables().is_empty(), "a refused table left a trace");
}

#[test]
fn oversized_keys_and_values_are_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = open(dir.path());
    let t = db.create_table("t", TableOptions::default()).expect("t");
    let long_key = vec![b'k'; limits::KEY_BYTES_MAX + 1];
    assert!(matches!(
        t.put(&long_key, b"v"),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(t.get(&long_key), Err(Error::InvalidArgument(_))));
    let mut b = WriteBatch::new();
    b.put(&t, b"fine", b"v");
    b.put(&t, b"k", &vec![0u8; limits::VALUE_BYTES_MAX + 1]);
    assert!(matches!(db.write(b), Err(Error::InvalidArgument(_))));
    assert_eq!(
        t.get(b"fine").expect("get"),
        None,
        "a refused batch wrote part of itself"
    );
    // The largest key and value allowed work.
    let key = vec![b'k'; limits::KEY_BYTES_MAX];
    t.put(&key, b"v").expect("max key");
    assert_eq!(t.get(&key).expect("get"), Some(b"v".to_vec()));
}

#[test]
fn empty_keys_and_values_round_trip_through_flush() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = open(dir.path());
    let t = db.create_table("t", TableOptions::default()).expect("t");
    t.put(b"", b"").expect("put");
    t.put(b"a", b"").expect("put");
    db.flush().expect("flush");
    assert_eq!(t.get(b"").expect("get"), Some(Vec::new()));
    let all: Vec<_> = t
        .iter()
        .expect("iter")
        .collect::<spinney::Result<_>>()
        .expect("scan");
    assert_eq!(
        all,
        vec![(b"".to_vec(), b"".to_vec()), (b"a".to_vec(), b"".to_vec())]
    );
}

#[test]
fn handles_report_closed_after_the_database_closes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = open(dir.path());
    let t = db.create_table("t", TableOptions::default()).expect("t");
    db.close().expect("close");
    assert!(matches!(t.put(b"k", b"v"), Err(Error::Closed)));
    assert!(matches!(t.get(b"k"), Err(Error::Closed)));
    // The directory is free again.
    let _db = open(dir.path());
}

#[test]
fn batches_over_two_databases_are_refused() {
    let d1 = tempfile::tempdir().expect("tempdir");
    let d2 = tempfile::tempdir().expect("tempdir");
    let (db1, db2) = (open(d1.path()), open(d2.path()));
    let (t1, t2) = (
        db1.create_table("t", TableOptions::default()).expect("t"),
        db2.create_table("t", TableOptions::default()).expect("t"),
    );
    let mut b = WriteBatch::new();
    b.put(&t1, b"k", b"v");
    b.put(&t2, b"k", b"v");
    assert!(matches!(db1.write(b), Err(Error::InvalidArgument(_))));
}

fn names_in(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_database_without_current_is_refused_and_recover_current_brings_it_back() {
    // Goal: a directory that holds a database's files but no CURRENT (lost,
    // or deleted by hand) is never taken for an empty one: a creating open
    // once made a new database there and deleted the old files as garbage.
    // The open is refused with Corruption naming CURRENT and what it found,
    // and leaves every file; `Db::recover_current` names the newest manifest
    // again, and the data is back.
    let dir = tempfile::tempdir().expect("tempdir");
    let db = open(dir.path());
    let lsm = db.create_table("lsm", TableOptions::lsm()).expect("lsm");
    let bt = db.create_table("bt", TableOptions::btree()).expect("btree");
    for i in 0..2_000u32 {
        let mut b = WriteBatch::new();
        b.put(&lsm, &i.to_be_bytes(), b"l");
        b.put(&bt, &i.to_be_bytes(), b"b");
        db.write(b).expect("write");
    }
    db.flush().expect("flush");
    db.checkpoint().expect("checkpoint");
    drop((lsm, bt));
    db.close().expect("close");
    std::fs::remove_file(dir.path().join("CURRENT")).expect("remove CURRENT");
    let before = names_in(dir.path());

    for create_if_missing in [true, false] {
        let options = Options {
            create_if_missing,
            ..Options::default()
        };
        let err = Db::open(dir.path(), options).expect_err("refused");
        let text = err.to_string();
        assert!(err.is_corruption(), "{text}");
        assert!(
            text.contains("CURRENT is missing") && text.contains(".btree"),
            "{text}"
        );
        assert_eq!(names_in(dir.path()), before, "the open changed no file");
    }

    let manifest = Db::recover_current(dir.path(), &Options::default()).expect("recover");
    assert!(manifest.starts_with("MANIFEST-"), "{manifest}");
    let db = open(dir.path());
    db.verify().expect("verify");
    let (lsm, bt) = (db.table("lsm").expect("lsm"), db.table("bt").expect("bt"));
    for i in (0..2_000u32).step_by(97) {
        assert_eq!(lsm.get(&i.to_be_bytes()).expect("get"), Some(b"l".to_vec()));
        assert_eq!(bt.get(&i.to_be_bytes()).expect("get"), Some(b"b".to_vec()));
    }
    drop((lsm, bt));
    db.close().expect("close");
    let again = Db::recover_current(dir.path(), &Options::default());
    assert!(matches!(again, Err(Error::InvalidArgument(_))), "{again:?}");
}

#[test]
fn a_manifest_alone_left_by_a_first_open_that_died_gets_a_new_database() {
    // Goal: the first open makes its first log segment, then the manifest,
    // then CURRENT; dying between them leaves an empty segment and perhaps
    // a manifest that records no table (or a torn one). That is no
    // database, and a creating open makes one there.
    let dir = tempfile::tempdir().expect("tempdir");
    open(dir.path()).close().expect("close");
    for name in names_in(dir.path()) {
        let path = dir.path().join(&name);
        if name == "CURRENT" {
            std::fs::remove_file(&path).expect("remove");
        } else if name.ends_with(".wal") {
            std::fs::write(&path, b"").expect("empty");
        }
    }
    let db = open(dir.path());
    db.create_table("t", TableOptions::lsm()).expect("create");
    drop(db);

    // A torn manifest (its first record cut) is no database either.
    let dir = tempfile::tempdir().expect("tempdir");
    open(dir.path()).close().expect("close");
    for name in names_in(dir.path()) {
        let path = dir.path().join(&name);
        if name == "CURRENT" || name.ends_with(".wal") {
            std::fs::remove_file(&path).expect("remove");
        } else if name.starts_with("MANIFEST-") {
            let bytes = std::fs::read(&path).expect("read");
            std::fs::write(&path, &bytes[..bytes.len() / 2]).expect("cut");
        }
    }
    open(dir.path()).close().expect("close");
}

#[test]
fn open_table_refuses_a_kind_or_page_size_other_than_the_tables() {
    // Goal: asking `open_table` for an LSM table named like an existing
    // B-tree table (or for other pages) is an error that says which, not
    // the other table returned in silence; options not fixed at creation
    // are the table's own, and the same request opens it.
    let dir = tempfile::tempdir().expect("tempdir");
    let db = open(dir.path());
    db.create_table("bt", TableOptions::btree())
        .expect("create bt");
    db.create_table("lsm", TableOptions::lsm())
        .expect("create lsm");

    match db.open_table("bt", TableOptions::lsm()) {
        Err(Error::InvalidArgument(why)) => {
            assert!(why.contains("Btree") && why.contains("Lsm"), "{why}")
        }
        other => panic!("an LSM table asked for over a B-tree one: {other:?}"),
    }
    match db.open_table("lsm", TableOptions::btree()) {
        Err(Error::InvalidArgument(why)) => assert!(why.contains("Lsm"), "{why}"),
        other => panic!("a B-tree table asked for over an LSM one: {other:?}"),
    }
    let small_pages = TableOptions {
        page_size: 4096,
        ..TableOptions::btree()
    };
    match db.open_table("bt", small_pages) {
        Err(Error::InvalidArgument(why)) => assert!(why.contains("4096"), "{why}"),
        other => panic!("4 KiB pages asked for over 8 KiB ones: {other:?}"),
    }
    let bigger_buffer = TableOptions {
        write_buffer_size: 16 << 20,
        ..TableOptions::lsm()
    };
    let t = db.open_table("lsm", bigger_buffer).expect("same kind");
    assert_eq!(
        t.options().write_buffer_size,
        TableOptions::lsm().write_buffer_size
    );
    assert_eq!(
        db.open_table("bt", TableOptions::btree())
            .expect("same")
            .options()
            .kind,
        TableKind::Btree
    );
}

#[test]
fn the_handles_a_user_holds_print_with_debug() {
    // Goal: `{:?}` of a database, a batch, a cursor and a range says what
    // they are (a struct holding one can derive Debug).
    let dir = tempfile::tempdir().expect("tempdir");
    let db = open(dir.path());
    let t = db.create_table("t", TableOptions::lsm()).expect("create");
    t.put(b"apple", b"red").expect("put");
    let shown = format!("{db:?}");
    assert!(
        shown.contains("Db") && shown.contains("tables: 1"),
        "{shown}"
    );
    let mut b = WriteBatch::new();
    b.put(&t, b"k", b"v");
    b.delete(&t, b"j");
    let shown = format!("{b:?}");
    assert!(
        shown.contains("entries: 2") && shown.contains("\"t\""),
        "{shown}"
    );
    let mut c = t.cursor().expect("cursor");
    c.seek_to_first();
    let shown = format!("{c:?}");
    assert!(
        shown.contains("valid: true") && shown.contains("apple"),
        "{shown}"
    );
    let r = t.range::<&[u8], _>(..).expect("range");
    let shown = format!("{r:?}");
    assert!(
        shown.contains("Range") && shown.contains("\"t\""),
        "{shown}"
    );
}

#[test]
fn a_shared_database_closes_through_any_handle() {
    // Goal: a database held in an `Arc` (shared by threads) can be closed
    // and report the log's sync: later calls say `Closed`, a second close
    // is `Ok`, and what was written is there at the next open.
    let dir = tempfile::tempdir().expect("tempdir");
    let db = std::sync::Arc::new(open(dir.path()));
    let t = db.create_table("t", TableOptions::btree()).expect("create");
    let writer = {
        let t = t.clone();
        std::thread::spawn(move || {
            for i in 0..100u32 {
                t.put(&i.to_be_bytes(), b"v").expect("put before the close");
            }
        })
    };
    writer.join().expect("writer");
    let other = std::sync::Arc::clone(&db);
    other.close().expect("close through a shared handle");
    assert!(matches!(t.put(b"late", b"v"), Err(Error::Closed)));
    assert!(matches!(db.table("t"), Err(Error::Closed)));
    db.close().expect("a second close");
    drop((t, db, other));
    let db = open(dir.path());
    let t = db.table("t").expect("table");
    assert_eq!(
        t.get(&99u32.to_be_bytes()).expect("get"),
        Some(b"v".to_vec())
    );
}

#[test]
fn a_snapshot_iterates_a_whole_table_as_of_its_moment() {
    // Goal: `Snapshot::iter` is the whole table as of the snapshot, both
    // ways, for both kinds, whatever is written after it.
    let dir = tempfile::tempdir().expect("tempdir");
    let db = open(dir.path());
    for options in [TableOptions::lsm(), TableOptions::btree()] {
        let name = format!("{:?}", options.kind);
        let t = db.create_table(&name, options).expect("create");
        t.put(b"a", b"1").expect("put");
        t.put(b"b", b"2").expect("put");
        let snap = db.snapshot();
        t.put(b"c", b"3").expect("put after");
        t.delete(b"a").expect("delete after");
        let seen: Vec<(Vec<u8>, Vec<u8>)> = snap
            .iter(&t)
            .expect("iter")
            .collect::<spinney::Result<_>>()
            .expect("scan");
        assert_eq!(
            seen,
            vec![
                (b"a".to_vec(), b"1".to_vec()),
                (b"b".to_vec(), b"2".to_vec())
            ],
            "{name}"
        );
        let back: Vec<Vec<u8>> = snap
            .iter(&t)
            .expect("iter")
            .rev()
            .map(|e| e.map(|(k, _)| k))
            .collect::<spinney::Result<_>>()
            .expect("reverse scan");
        assert_eq!(back, vec![b"b".to_vec(), b"a".to_vec()], "{name}");
    }
}

#[test]
fn prefix_scans_find_exactly_the_keys_that_begin_with_the_prefix() {
    // Goal: `prefix` finds every key that begins with the prefix and no
    // other, both ways, on both kinds and through a snapshot, with the
    // 0xFF edge right (a prefix ending in 0xFF, one of 0xFF bytes only,
    // keys that are the prefix itself or longer than it by 0xFF bytes).
    let dir = tempfile::tempdir().expect("tempdir");
    let db = open(dir.path());
    let keys: Vec<Vec<u8>> = vec![
        vec![],
        b"a".to_vec(),
        b"a\x00".to_vec(),
        b"ab".to_vec(),
        b"abc".to_vec(),
        b"a\xff".to_vec(),
        b"a\xff\xff".to_vec(),
        b"a\xff\x00".to_vec(),
        b"b".to_vec(),
        b"\xfe\xff".to_vec(),
        b"\xff".to_vec(),
        b"\xff\x00".to_vec(),
        b"\xff\xff".to_vec(),
        b"\xff\xff\xff".to_vec(),
    ];
    let prefixes: Vec<&[u8]> = vec![
        b"",
        b"a",
        b"ab",
        b"a\xff",
        b"a\xff\xff",
        b"b",
        b"c",
        b"\xfe",
        b"\xff",
        b"\xff\xff",
        b"\xff\xff\xff\xff",
    ];
    for options in [TableOptions::lsm(), TableOptions::btree()] {
        let name = format!("{:?}", options.kind);
        let t = db.create_table(&name, options).expect("create");
        for k in &keys {
            t.put(k, k).expect("put");
        }
        let snap = db.snapshot();
        t.put(b"a-after", b"x").expect("put after the snapshot");
        for p in &prefixes {
            let mut want: Vec<Vec<u8>> =
                keys.iter().filter(|k| k.starts_with(p)).cloned().collect();
            want.sort();
            let forward: Vec<Vec<u8>> = snap
                .prefix(&t, p)
                .expect("prefix")
                .map(|e| e.map(|(k, _)| k))
                .collect::<spinney::Result<_>>()
                .expect("scan");
            assert_eq!(forward, want, "{name}: prefix {p:?} through the snapshot");
            let mut backward: Vec<Vec<u8>> = t
                .prefix(p)
                .expect("prefix")
                .rev()
                .map(|e| e.map(|(k, _)| k))
                .filter(|k| k.as_deref().map_or(true, |k| k != b"a-after"))
                .collect::<spinney::Result<_>>()
                .expect("reverse scan");
            backward.reverse();
            assert_eq!(backward, want, "{name}: prefix {p:?} backwards");
        }
    }
}

#[test]
fn multi_get_reads_many_keys_at_one_moment() {
    // Goal: `multi_get` answers each key as `get` would, in order, with
    // absent keys and refused ones alike, on both kinds; and a writer
    // moving a value between two keys is never seen half done.
    let dir = tempfile::tempdir().expect("tempdir");
    let db = std::sync::Arc::new(open(dir.path()));
    for options in [TableOptions::lsm(), TableOptions::btree()] {
        let name = format!("{:?}", options.kind);
        let t = db.create_table(&name, options).expect("create");
        t.put(b"a", b"1").expect("put");
        t.put(b"c", b"3").expect("put");
        let got = t.multi_get(&[&b"c"[..], b"b", b"a"]).expect("multi_get");
        assert_eq!(got, vec![Some(b"3".to_vec()), None, Some(b"1".to_vec())]);
        let too_long = vec![b'k'; t.options().max_key_len() + 1];
        assert!(matches!(
            t.multi_get(&[too_long]),
            Err(Error::InvalidArgument(_))
        ));

        // A token moves between "x" and "y" in atomic batches; every
        // multi_get sees it in exactly one of them.
        t.put(b"x", b"token").expect("put");
        let mover = {
            let (db, t) = (std::sync::Arc::clone(&db), t.clone());
            std::thread::spawn(move || {
                for i in 0..2000 {
                    let (from, to) = if i % 2 == 0 {
                        (b"x", b"y")
                    } else {
                        (b"y", b"x")
                    };
                    let mut b = WriteBatch::new();
                    b.delete(&t, from);
                    b.put(&t, to, b"token");
                    db.write(b).expect("move");
                }
            })
        };
        for _ in 0..2000 {
            let got = t.multi_get(&[b"x", b"y"]).expect("multi_get");
            assert_eq!(got.iter().flatten().count(), 1, "{name}: {got:?}");
        }
        mover.join().expect("mover");
    }
}

#[test]
fn get_into_reads_into_the_callers_buffer_as_get_reads() {
    // Goal: `get_into` answers as `get` does (present, absent, deleted, as
    // of a snapshot; inline and overflow values; memtable, SST and
    // across a checkpoint), leaves the buffer holding exactly the value or
    // nothing, and refuses what `get` refuses.
    for kind in [TableKind::Lsm, TableKind::Btree] {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = open(dir.path());
        let options = match kind {
            TableKind::Lsm => TableOptions::lsm(),
            TableKind::Btree => TableOptions {
                page_size: 4096,
                ..TableOptions::btree()
            },
        };
        let t = db.create_table("t", options).expect("create");
        let big = vec![7u8; 20_000];
        t.put(b"small", b"s").expect("put");
        t.put(b"big", &big).expect("put");
        t.put(b"gone", b"x").expect("put");
        t.delete(b"gone").expect("delete");
        let snap = db.snapshot();
        t.put(b"small", b"changed").expect("put");
        let mut buf = b"left over".to_vec();
        for round in 0..2 {
            let ctx = format!("{kind:?} round {round}");
            assert!(t.get_into(b"small", &mut buf).expect("get_into"), "{ctx}");
            assert_eq!(buf, b"changed", "{ctx}");
            assert!(t.get_into(b"big", &mut buf).expect("get_into"), "{ctx}");
            assert_eq!(buf, big, "{ctx}");
            assert!(!t.get_into(b"gone", &mut buf).expect("get_into"), "{ctx}");
            assert!(buf.is_empty(), "{ctx}: a miss leaves the buffer empty");
            assert!(!t.get_into(b"never", &mut buf).expect("get_into"), "{ctx}");
            assert!(
                snap.get_into(&t, b"small", &mut buf).expect("get_into"),
                "{ctx}"
            );
            assert_eq!(buf, b"s", "{ctx}: as of the snapshot");
            for key in [&b"small"[..], b"big", b"gone", b"never"] {
                let found = t.get_into(key, &mut buf).expect("get_into");
                assert_eq!(
                    t.get(key).expect("get"),
                    found.then(|| buf.clone()),
                    "{ctx}"
                );
            }
            // Round two reads from SSTs or from a checkpointed tree.
            t.flush().expect("flush");
        }
        let too_long = vec![b'k'; t.options().max_key_len() + 1];
        buf = b"stale".to_vec();
        assert!(matches!(
            t.get_into(&too_long, &mut buf),
            Err(Error::InvalidArgument(_))
        ));
        assert!(buf.is_empty());
    }
}

#[test]
fn a_refreshed_cursor_reads_the_current_state_within_its_bounds() {
    // Goal: `Cursor::refresh` moves a cursor of either kind to the current
    // state (from its creation's, or from a snapshot's), unpositioned,
    // keeping its bounds, and a cursor reused for many seeks reads what
    // fresh ones read; a cursor of a dropped table is refused.
    for kind in [TableOptions::lsm(), TableOptions::btree()] {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = open(dir.path());
        let t = db.create_table("t", kind.clone()).expect("table");
        for k in [b"a", b"c", b"e"] {
            t.put(k, b"1").expect("put");
        }
        let snap = db.snapshot();
        let options = spinney::ReadOptions {
            snapshot: Some(&snap),
            lower: std::ops::Bound::Included(b"b".to_vec()),
            upper: std::ops::Bound::Excluded(b"e".to_vec()),
        };
        let mut c = t.cursor_with(&options).expect("cursor");
        t.put(b"d", b"2").expect("put");
        t.put(b"c", b"2").expect("put");
        c.seek_to_first();
        assert_eq!((c.key(), c.value()), (&b"c"[..], &b"1"[..]), "{kind:?}");
        c.refresh().expect("refresh");
        assert!(!c.valid(), "{kind:?}: unpositioned");
        let mut seen = Vec::new();
        c.seek_to_first();
        while c.valid() {
            seen.push((c.key().to_vec(), c.value().to_vec()));
            c.next();
        }
        c.status().expect("status");
        assert_eq!(
            seen,
            [
                (b"c".to_vec(), b"2".to_vec()),
                (b"d".to_vec(), b"2".to_vec())
            ],
            "{kind:?}: the current state, within the bounds"
        );
        // Many seeks through one refreshed cursor, against fresh cursors,
        // while writes go on.
        let mut reused = t.cursor().expect("cursor");
        for i in 0..2000u32 {
            let k = format!("k{:04}", (i * 7919) % 1000);
            t.put(k.as_bytes(), format!("{i}").as_bytes()).expect("put");
            reused.refresh().expect("refresh");
            reused.seek(k.as_bytes());
            let mut fresh = t.cursor().expect("cursor");
            fresh.seek(k.as_bytes());
            for _ in 0..3 {
                assert_eq!(reused.valid(), fresh.valid(), "{kind:?}: {k}");
                assert_eq!(reused.key(), fresh.key(), "{kind:?}: {k}");
                assert_eq!(reused.value(), fresh.value(), "{kind:?}: {k}");
                reused.next();
                fresh.next();
            }
            if i == 1000 {
                db.flush().expect("flush");
            }
        }
        db.drop_table("t").expect("drop");
        assert!(
            matches!(reused.refresh(), Err(Error::NoSuchTable(_))),
            "{kind:?}"
        );
    }
}

#[test]
fn the_log_reaches_the_os_the_way_log_writes_says() {
    // Goal: `Options::log_writes` decides how commits reach the OS, and the
    // I/O counters say which way they went: `Write` passes every commit to
    // a write call and maps nothing; `Mapped` (on Linux) copies the
    // commits into the segment's map, counted as bytes mapped, with no
    // write call for them. Method: 200 single-put commits each way on the
    // real file system, reading the counters around them.
    for writes in [spinney::LogWrites::Write, spinney::LogWrites::Mapped] {
        let dir = tempfile::tempdir().expect("tempdir");
        let fs = std::sync::Arc::new(spinney::fs::OsFs::new());
        let db = Db::open(
            dir.path(),
            Options {
                fs: fs.clone(),
                log_writes: writes,
                background_threads: 0,
                ..Options::default()
            },
        )
        .expect("open");
        let t = db.create_table("t", TableOptions::lsm()).expect("create");
        let before = spinney::fs::Fs::io_stats(&*fs).snapshot();
        for i in 0..200u32 {
            t.put(&i.to_be_bytes(), b"value").expect("put");
        }
        let after = spinney::fs::Fs::io_stats(&*fs).snapshot();
        let mapped = after.bytes_mapped - before.bytes_mapped;
        let calls = after.write_requests - before.write_requests;
        let written = after.bytes_written - before.bytes_written;
        match writes {
            spinney::LogWrites::Write => {
                assert_eq!(mapped, 0, "a log written with write() maps nothing");
                assert!(calls >= 200, "{calls} write calls for 200 commits");
            }
            spinney::LogWrites::Mapped if cfg!(target_os = "linux") => {
                assert_eq!(
                    mapped, written,
                    "every byte of the log went through its map"
                );
                assert_eq!(calls, 0, "{calls} write calls for mapped commits");
            }
            spinney::LogWrites::Mapped => assert_eq!(mapped, 0),
        }
        assert!(written >= 200 * 9, "{written} bytes for 200 commits");
    }
}

/// Pages of `path` in the OS's page cache (`mincore` over a map of the
/// file, which maps without reading).
fn resident_pages(path: &std::path::Path) -> usize {
    use std::os::fd::AsRawFd;
    let file = std::fs::File::open(path).expect("open");
    let len = file.metadata().expect("stat").len() as usize;
    if len == 0 {
        return 0;
    }
    let mut vec = vec![0u8; len.div_ceil(4096)];
    // SAFETY: a private read-only map of our own open file, read by
    // nothing but `mincore`, which fills `vec` (one byte a page) and is
    // unmapped before returning.
    unsafe {
        let map = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_PRIVATE,
            file.as_raw_fd(),
            0,
        );
        assert_ne!(map, libc::MAP_FAILED, "mmap");
        assert_eq!(libc::mincore(map, len, vec.as_mut_ptr()), 0, "mincore");
        libc::munmap(map, len);
    }
    vec.iter().filter(|&&b| b & 1 == 1).count()
}

#[test]
fn direct_io_keeps_both_kinds_data_out_of_the_page_cache() {
    // Goal: with `direct_reads` and `direct_writes`, flushes,
    // compactions, checkpoints and reads that miss the database's cache
    // move the tables' data between storage and spinney without the OS's
    // page cache, and everything reads back, before and after a reopen.
    // A file system without O_DIRECT is refused at open, saying so.
    let dir = tempfile::tempdir().expect("tempdir");
    let options = || Options {
        direct_reads: true,
        direct_writes: true,
        cache_size: 256 << 10,
        ..Options::default()
    };
    let db = match Db::open(dir.path(), options()) {
        Ok(db) => db,
        Err(Error::Unsupported(why)) => {
            assert!(why.contains("O_DIRECT"), "{why}");
            eprintln!("skipped: {why}");
            return;
        }
        Err(e) => panic!("open: {e}"),
    };
    let value = |i: u32| format!("value {i:08} {}", "x".repeat(i as usize % 300)).into_bytes();
    let n = 20_000u32;
    for (name, kind) in [
        ("lsm", TableOptions::lsm()),
        ("btree", TableOptions::btree()),
    ] {
        let t = db.create_table(name, kind).expect("create");
        for round in 0..2 {
            for i in (0..n).filter(|i| i % 2 == round) {
                t.put(format!("k{i:08}").as_bytes(), &value(i))
                    .expect("put");
            }
            db.flush().expect("flush");
        }
    }
    db.checkpoint().expect("checkpoint");
    db.table("lsm")
        .expect("table")
        .compact_all()
        .expect("compact");
    let check = |db: &Db| {
        for name in ["lsm", "btree"] {
            let t = db.table(name).expect("table");
            for i in (0..n).step_by(7) {
                let got = t.get(format!("k{i:08}").as_bytes()).expect("get");
                assert_eq!(got.as_deref(), Some(&value(i)[..]), "{name} key {i}");
            }
            assert_eq!(t.iter().expect("iter").count(), n as usize, "{name}");
        }
    };
    check(&db);
    db.close().expect("close");
    let db = Db::open(dir.path(), options()).expect("reopen");
    check(&db);
    db.verify().expect("verify");
    // The tables' files: SSTs, and the B-tree's file past its first two
    // pages (its empty image, written with the file's creation).
    let mut data_pages = 0;
    for name in names_in(dir.path()) {
        let path = dir.path().join(&name);
        if name.ends_with(".sst") {
            data_pages += resident_pages(&path);
        } else if name.ends_with(".btree") {
            data_pages += resident_pages(&path).saturating_sub(2);
        }
    }
    assert_eq!(data_pages, 0, "the tables' pages in the OS's page cache");
    drop(db);
    let both = Options {
        mmap_reads: true,
        ..options()
    };
    match Db::open(dir.path(), both) {
        Err(Error::InvalidArgument(why)) => assert!(why.contains("mmap_reads"), "{why}"),
        other => panic!("mmap_reads with direct_reads: {other:?}"),
    }
}

/// The test's directory, or None (and the refusal checked) where its
/// file system has no `O_DIRECT`.
fn direct_dir() -> Option<tempfile::TempDir> {
    let dir = tempfile::tempdir().expect("tempdir");
    match OsFs::new().create_direct(&dir.path().join("probe")) {
        Ok(_) => Some(dir),
        Err(Error::Unsupported(why)) => {
            assert!(why.contains("O_DIRECT"), "{why}");
            eprintln!("skipped: {why}");
            None
        }
        Err(e) => panic!("{e}"),
    }
}

/// Bytes that differ from their neighbours: byte `i` of a pattern.
fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i * 31 + usize::from(seed)) as u8)
        .collect()
}

#[test]
fn appends_of_any_size_read_back_exactly_and_stay_out_of_the_page_cache() {
    // Goal: the padding, the partial block kept across flushes and the
    // cut at sync leave exactly the bytes appended, read back whole at
    // any offset; and neither the writes nor the reads enter the OS's
    // page cache.
    let Some(dir) = direct_dir() else { return };
    let fs = OsFs::new();
    let path = dir.path().join("f");
    let mut w = fs.create_direct(&path).expect("create");
    let mut all = Vec::new();
    for (i, len) in [1usize, 4095, 4096, 7000, 1 << 20, 3, 100_000, (1 << 20) + 5]
        .into_iter()
        .enumerate()
    {
        let piece = pattern(len, i as u8);
        w.append(&piece).expect("append");
        all.extend_from_slice(&piece);
        if i % 3 == 0 {
            w.flush().expect("flush");
        }
    }
    assert_eq!(w.len(), all.len() as u64);
    w.sync().expect("sync");
    drop(w);
    assert_eq!(std::fs::read(&path).expect("read"), all, "the file's bytes");
    // `std::fs::read` filled the page cache: drop it so that what
    // follows shows whether the direct reads fill it again.
    drop_cached(&path);
    assert_eq!(resident_pages(&path), 0, "pages still cached");
    let r = fs.open_direct(&path).expect("open");
    assert!(r.bypasses_os_cache());
    for (offset, len) in [(0, 1), (1, 4096), (4095, 2), (5000, 70_000), (0, all.len())] {
        assert_eq!(
            r.read_at(offset as u64, len).expect("read"),
            all[offset..offset + len],
            "{len} bytes at {offset}"
        );
    }
    let err = r
        .read_at(all.len() as u64 - 1, 2)
        .expect_err("a read past the end");
    assert!(err.to_string().contains("past the end"), "{err}");
    assert_eq!(
        resident_pages(&path),
        0,
        "direct reads filled the page cache"
    );
}

/// Asks the kernel to drop `path`'s clean pages from its cache.
fn drop_cached(path: &std::path::Path) {
    let file = std::fs::File::open(path).expect("open");
    // SAFETY: a hint on a descriptor we own; no memory is passed.
    let rc = unsafe {
        use std::os::fd::AsRawFd;
        libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED)
    };
    assert_eq!(rc, 0, "posix_fadvise");
}

#[test]
fn paged_writes_that_are_not_whole_blocks_keep_their_neighbours() {
    // Goal: a write of part of a block (a header slot, a compressed
    // page) reads the block first, so the bytes around it are kept;
    // whole pages read back as written, by direct and buffered reads.
    let Some(dir) = direct_dir() else { return };
    let fs = OsFs::new();
    let path = dir.path().join("p");
    let both = DirectIo {
        reads: true,
        writes: true,
    };
    let f = fs.open_paged_direct(&path, true, both).expect("open");
    let mut expect = pattern(4 * 8192, 7);
    f.write_at(0, &expect).expect("pages");
    for (offset, len) in [
        (8192usize, 100usize),
        (100, 5000),
        (3 * 8192 + 4000, 8192 - 4000),
    ] {
        let piece = pattern(len, offset as u8);
        f.write_at(offset as u64, &piece).expect("part of a block");
        expect[offset..offset + len].copy_from_slice(&piece);
    }
    f.sync().expect("sync");
    let mut back = vec![0u8; expect.len()];
    assert_eq!(f.read_at(0, &mut back).expect("read"), expect.len());
    assert_eq!(back, expect);
    // At the file's end a read returns the bytes there are.
    let mut tail = vec![0u8; 8192];
    assert_eq!(
        f.read_at(3 * 8192 + 100, &mut tail).expect("read"),
        8192 - 100
    );
    let buffered = fs.open_paged(&path, false).expect("open");
    let mut back = vec![0u8; expect.len()];
    assert_eq!(buffered.read_at(0, &mut back).expect("read"), expect.len());
    assert_eq!(back, expect);
}
