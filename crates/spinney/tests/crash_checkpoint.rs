//! Crashes and I/O errors in the checkpoint of a B-tree table, on the
//! fault-injecting file system.
//!
//! Goal: a B-tree table is made durable by the shared log plus
//! copy-on-write checkpoints (see `btree/checkpoint.rs`). Whatever operation of a
//! checkpoint the machine dies at, or fails with EIO or ENOSPC, the
//! database reopens with every acknowledged batch, `verify` passes (every
//! page of the durable image used exactly once), and no file is left over.
//!
//! Method: the deterministic state of `common::checkpointed` (height 2,
//! overflow values, pages copied after two earlier checkpoints, a free map,
//! dirty pages evicted); a dry run counts the checkpoint's mutating file
//! operations; then the fault at each of them in turn, after which the
//! `Db` is dropped, `FaultFs::crash` rolls the files back to what was
//! synced (alternately keeping a random subset of unsynced page writes,
//! whole or torn in 512-byte sectors), and the reopened state is compared
//! with the model. Then races the load tests found: checkpoints racing a
//! failed checkpoint, leaf merges during a checkpoint, and a free map that
//! shrinks as it is allocated (deterministic).
//!
//! These cases are of B-tree tables only: the checkpoint of a B-tree table
//! is what the flush of an LSM table is (`Db::flush` does both), and the
//! same sweeps over a flush of either kind are in `crash_flush_compaction.rs`.
//! Crashes under a load with background checkpoints are in
//! `crash_commit.rs`, the recovery that checkpoints in `crash_recovery.rs`.

mod common;

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::checkpointed::{build, check_recovery, checkpoint_span, quiet_options, Built};
use common::load::{batches, load, open_busy};
use common::model::{key, matching_prefixes, write_batch, Change, State};
use common::{
    btree_table, check_scans, drop_within_seconds, each_way, read_all, reopen_after_crash,
    table_stats, DB,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use spinney::fs::{FaultFs, FaultKind, PendingWrites};
use spinney::{Db, Durability, Error, Options, WriteBatch};

#[test]
fn crash_at_every_operation_of_a_checkpoint_keeps_every_acknowledged_batch() {
    // Goal: a checkpoint that dies at any of its file operations (a frozen
    // page, the free map, the file sync, the header slot, the second sync,
    // the removal of log segments it made obsolete), with the unsynced page
    // writes lost, or kept whole, torn or not at random, leaves every
    // acknowledged Full commit recoverable: from the previous image plus
    // the log, or from the new image.
    // Method: the deterministic state of `build` (height 2, overflow
    // values, copy-on-write of pages earlier checkpoints wrote, a free
    // map, dirty pages evicted), then `Db::checkpoint` with a crash at each
    // of its operations in turn, once without and once with a tear seed.
    let span = checkpoint_span();
    assert!(
        span >= 10,
        "a checkpoint of two tables took only {span} ops"
    );
    for k in 0..span {
        for pending in each_way(k * 7 + 1) {
            let ctx = format!("checkpoint: crash at op {k} of {span}, {pending:?}");
            let fs = FaultFs::new();
            let built = build(&fs);
            fs.inject(k, FaultKind::Crash);
            // A crash in the removal of an old log segment, after the
            // header is durable, fails no call.
            let _ = built.db.checkpoint();
            assert!(fs.is_crashed(), "{ctx}: the crash missed the checkpoint");
            let Built { db, tables, models } = built;
            drop_within_seconds(db, tables, &ctx);
            fs.crash_with(pending);
            check_recovery(&ctx, &fs, &models, pending);
        }
    }
}

#[test]
fn crash_at_every_operation_of_a_btree_compact_all_keeps_every_acknowledged_batch() {
    // Goal: `compact_all` of a B-tree table packs its leaves, moves the
    // pages at the end of its file to free pages before them, and cuts the
    // file, across several checkpoints (`btree/vacuum.rs`). Dying at any of
    // its file operations (the cut included: it is durable only at the next
    // sync, and an image written before it names a longer file) loses no
    // acknowledged batch, and the file reopens and verifies.
    // Method: the state of `build`; a dry run checks that the file shrank
    // and counts the operations; then a crash at each of them in turn
    // (alternately without and with a tear seed), and `check_recovery`.
    // Each run reads the shape first, as the dry run does: the walk can
    // write pages the cache hands back, and the runs must be the same up
    // to the crash.
    let size = |t: &spinney::Table| {
        t.shape()
            .expect("shape")
            .btree
            .expect("a B-tree shape")
            .file_bytes
    };
    let (span, before, after) = {
        let fs = FaultFs::new();
        let built = build(&fs);
        let before = size(&built.tables[0]);
        let start = fs.mutating_ops();
        built.tables[0].compact_all().expect("dry run");
        let span = fs.mutating_ops() - start;
        let after = size(&built.tables[0]);
        let Built { db, tables, models } = built;
        drop(tables);
        db.close().expect("close after the dry run");
        check_recovery("compact_all, no fault", &fs, &models, PendingWrites::Lost);
        (span, before, after)
    };
    eprintln!("compact_all: file {before} -> {after} bytes in {span} operations");
    assert!(
        after < before,
        "compact_all did not shrink the file: {before} -> {after} bytes"
    );
    assert!(span >= 10, "compact_all took only {span} ops");
    for (k, pending) in (0..span).flat_map(|k| each_way(k * 5 + 3).map(|p| (k, p))) {
        let ctx = format!("compact_all: crash at op {k} of {span}, {pending:?}");
        let fs = FaultFs::new();
        let built = build(&fs);
        size(&built.tables[0]);
        fs.inject(k, FaultKind::Crash);
        let _ = built.tables[0].compact_all();
        assert!(fs.is_crashed(), "{ctx}: the crash missed compact_all");
        let Built { db, tables, models } = built;
        drop_within_seconds(db, tables, &ctx);
        fs.crash_with(pending);
        check_recovery(&ctx, &fs, &models, pending);
    }
}

/// An I/O error of `kind` (not a crash) at each operation of a checkpoint;
/// see the tests below.
fn io_error_in_a_checkpoint(kind: FaultKind) {
    let span = checkpoint_span();
    let mut failed = 0;
    for k in 0..span {
        for crash in [false, true] {
            let ctx = format!("checkpoint: {kind:?} at op {k} of {span}, crash {crash}");
            let fs = FaultFs::new();
            let built = build(&fs);
            fs.inject(k, kind);
            match built.db.checkpoint() {
                Err(Error::Io { .. }) => {
                    failed += 1;
                    let again = built.tables[0].put(b"after", b"fault");
                    match &again {
                        Err(Error::ReadOnly { reason }) if reason.contains("checkpoint") => {}
                        _ => panic!("{ctx}: a write after the fault returned {again:?}"),
                    }
                    let again = built.db.write(write_batch(
                        &built.tables,
                        &vec![(1, b"after".to_vec(), Change::Delete)],
                    ));
                    assert!(
                        matches!(again, Err(Error::ReadOnly { .. })),
                        "{ctx}: a batch after the fault returned {again:?}"
                    );
                    let again = built.db.checkpoint();
                    assert!(
                        matches!(again, Err(Error::ReadOnly { .. })),
                        "{ctx}: a checkpoint after the fault returned {again:?}"
                    );
                }
                // The EIO hit the removal of an obsolete log segment, which
                // the checkpoint ignores (the next open removes it).
                Ok(()) => {}
                Err(e) => panic!("{ctx}: the checkpoint returned {e}"),
            }
            // Reads still answer with the acknowledged state.
            check_scans(&ctx, &built.tables, &built.models);
            for (i, table) in built.tables.iter().enumerate() {
                for (key, value) in built.models[i].iter().step_by(97) {
                    assert_eq!(
                        table
                            .get(key)
                            .unwrap_or_else(|e| panic!("{ctx}: get: {e}"))
                            .as_ref(),
                        Some(value),
                        "{ctx}"
                    );
                }
            }
            let Built { db, tables, models } = built;
            drop_within_seconds(db, tables, &ctx);
            let pending = if crash {
                let pending = PendingWrites::nth(k + 1, k);
                fs.crash_with(pending);
                pending
            } else {
                PendingWrites::Lost
            };
            check_recovery(&ctx, &fs, &models, pending);
        }
    }
    assert!(
        failed as u64 >= span,
        "only {failed} faults of {span} failed the checkpoint"
    );
}

#[test]
fn eio_in_a_checkpoint_makes_the_database_read_only_and_loses_nothing_acknowledged() {
    // Goal: an I/O error (not a crash) at any operation of a checkpoint
    // fails it, makes the database refuse writes and checkpoints with
    // `Error::ReadOnly` naming the failed checkpoint, keeps reads working
    // (cached and uncached pages, overflow values), and a reopen, with or
    // without a crash first, has every acknowledged batch.
    io_error_in_a_checkpoint(FaultKind::Eio);
}

#[test]
fn enospc_in_a_checkpoint_makes_the_database_read_only_and_loses_nothing_acknowledged() {
    // As for EIO: a full disk while a checkpoint extends the file.
    io_error_in_a_checkpoint(FaultKind::NoSpace);
}

#[test]
fn background_threads_checkpoint_a_btree_only_database() {
    // Goal: `Options::checkpoint_wal_bytes` promises a background
    // checkpoint of a B-tree table every so many bytes of log; with two
    // background threads and no LSM table, one must run.
    let fs = FaultFs::new();
    let (db, tables) = open_busy(&fs, Durability::Normal, false);
    // Let the threads start and wait for work: a thread whose first look
    // for work comes after the writes finds the checkpoint due without
    // being woken, which hides the bug.
    std::thread::sleep(Duration::from_millis(100));
    for b in batches(&load(51, 300, 1)) {
        db.write(write_batch(&tables, &b)).expect("write");
    }
    let wal_bytes = db.stats().wal_bytes;
    assert!(wal_bytes > 8 * (64 << 10), "only {wal_bytes} bytes of log");
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    let checkpoints = loop {
        let n = table_stats(&db, "bt").btree.expect("stats").checkpoints;
        if n > 0 || std::time::Instant::now() > deadline {
            break n;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(
        checkpoints > 0,
        "{wal_bytes} bytes of log written with checkpoint_wal_bytes = 64 KiB, and no checkpoint ran"
    );
}

/// `quiet_options` with `Off` commits (only checkpoints sync the log) and
/// a cache that holds the whole tree.
fn unsynced_options(fs: &Arc<FaultFs>) -> Options {
    Options {
        durability: Durability::Off,
        cache_size: 64 << 20,
        ..quiet_options(fs)
    }
}

#[test]
fn checkpoints_racing_a_failed_checkpoint_claim_nothing_that_is_not_durable() {
    // Goal: two threads checkpoint at once while a third commits; an EIO
    // fails one checkpoint. A checkpoint that returns Ok has made every
    // batch acknowledged before it began durable (it syncs the log up to
    // its freeze), so after a crash the recovered state is a prefix at
    // least that long, and `verify` passes.
    // Method: Off commits (only checkpoints sync the log), an EIO at
    // spread operations, then a crash with and without tears.
    let plan = batches(&load(61, 500, 1));
    let warm = 100;
    let mut failed_checkpoints = 0;
    for point in 0..80u64 {
        let k = point * 11;
        let pending = PendingWrites::nth(point, point);
        let ctx = format!("checkpoint race: EIO at op {k}, {pending:?}");
        let fs = FaultFs::new();
        // A cache that holds the whole tree: the operations are mostly the
        // checkpoints' (and the log's), not evictions.
        let opts = unsynced_options(&fs);
        let db = Db::open(DB, opts.clone()).expect("open");
        let bt = db.create_table("bt", btree_table()).expect("create");
        let tables = vec![bt];
        for b in &plan[..warm] {
            db.write(write_batch(&tables, b)).expect("write");
        }
        db.checkpoint().expect("checkpoint");
        let acked = AtomicUsize::new(warm);
        let attempted = AtomicUsize::new(warm);
        let lower = AtomicUsize::new(warm);
        let stop = AtomicBool::new(false);
        let errors = Mutex::new(Vec::new());
        fs.inject(k, FaultKind::Eio);
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    while !stop.load(Ordering::Acquire) {
                        let before = acked.load(Ordering::Acquire);
                        match db.checkpoint() {
                            Ok(()) => {
                                lower.fetch_max(before, Ordering::AcqRel);
                            }
                            Err(e) => {
                                errors
                                    .lock()
                                    .expect("lock")
                                    .push(format!("checkpoint: {e}"));
                                break;
                            }
                        }
                    }
                });
            }
            for b in &plan[warm..] {
                if stop.load(Ordering::Acquire) {
                    break;
                }
                attempted.fetch_add(1, Ordering::AcqRel);
                if let Err(e) = db.write(write_batch(&tables, b)) {
                    errors.lock().expect("lock").push(format!("write: {e}"));
                    break;
                }
                acked.fetch_add(1, Ordering::AcqRel);
                if !errors.lock().expect("lock").is_empty() {
                    break;
                }
            }
            stop.store(true, Ordering::Release);
        });
        let errors = errors.into_inner().expect("lock");
        failed_checkpoints += usize::from(errors.iter().any(|e| e.starts_with("checkpoint: I/O")));
        drop_within_seconds(db, tables, &ctx);
        fs.crash_with(pending);
        let db = reopen_after_crash(&ctx, pending, &opts);
        let state = read_all(&db, &["bt"], &ctx);
        let (lo, hi) = (lower.into_inner(), attempted.into_inner());
        let found = matching_prefixes(&plan, &state, lo, hi);
        if found.is_empty() {
            let any = matching_prefixes(&plan, &state, 0, plan.len());
            panic!("{ctx}: recovered prefixes {any:?}, allowed {lo}..={hi}; errors {errors:?}");
        }
        db.verify()
            .unwrap_or_else(|e| panic!("{ctx}: verify after recovery: {e}; errors {errors:?}"));
    }
    assert!(
        failed_checkpoints >= 4,
        "only {failed_checkpoints} of the EIOs failed a checkpoint"
    );
}

/// A user key of 900 bytes: four to a 4 KiB leaf, so that leaves fill,
/// empty and merge every few writes.
fn wide_key(n: u32) -> Vec<u8> {
    let mut k = format!("{n:06}").into_bytes();
    k.resize(900, b'x');
    k
}

#[test]
fn merges_while_a_checkpoint_runs_keep_its_image_whole() {
    // Goal: a checkpoint writes its frozen pages after it lets writers go
    // on; a writer that merges two leaves meanwhile must not take the
    // frozen right-hand leaf (dirty, not yet written) from under it, or
    // the image names a page that was never written.
    // Method: wide keys (leaves of four), runs of deletes and puts committed
    // without sync while a second thread checkpoints and verifies the
    // durable image (read from the file, not the cache) in a loop; then a
    // last checkpoint, a crash, and the reopened table against the model.
    let fs = FaultFs::new();
    let opts = unsynced_options(&fs);
    let db = Db::open(DB, opts.clone()).expect("open");
    let bt = db.create_table("bt", btree_table()).expect("create");
    let keys = 1500;
    let mut model = State::new();
    for n in 0..keys {
        bt.put(&wide_key(n), b"first").expect("put");
        model.insert(wide_key(n), b"first".to_vec());
    }
    db.checkpoint().expect("checkpoint");
    let stop = AtomicBool::new(false);
    let checkpoints = AtomicUsize::new(0);
    let started = std::time::Instant::now();
    std::thread::scope(|s| {
        let checker = s.spawn(|| {
            let mut result = Ok(());
            while !stop.load(Ordering::Acquire) && result.is_ok() {
                result = db.checkpoint().and_then(|()| db.verify().map(|_| ()));
                checkpoints.fetch_add(1, Ordering::Relaxed);
            }
            stop.store(true, Ordering::Release);
            result
        });
        let mut rng = StdRng::seed_from_u64(71);
        while !stop.load(Ordering::Acquire)
            && started.elapsed() < Duration::from_millis(2500)
            && checkpoints.load(Ordering::Relaxed) < 400
        {
            let start = rng.gen_range(0..keys);
            let end = (start + rng.gen_range(1..40)).min(keys);
            let delete = rng.gen_bool(0.5);
            let value = rng.gen::<u64>().to_le_bytes();
            let mut b = WriteBatch::new();
            for n in start..end {
                if delete {
                    b.delete(&bt, &wide_key(n));
                    model.remove(&wide_key(n));
                } else {
                    b.put(&bt, &wide_key(n), &value);
                    model.insert(wide_key(n), value.to_vec());
                }
            }
            db.write(b).expect("write");
        }
        stop.store(true, Ordering::Release);
        let result = checker.join().expect("checker thread");
        if let Err(e) = result {
            panic!(
                "after {} checkpoints and {:?}: {e}",
                checkpoints.load(Ordering::Relaxed),
                started.elapsed()
            );
        }
    });
    assert!(checkpoints.into_inner() >= 20, "too few checkpoints ran");
    db.checkpoint().expect("last checkpoint");
    drop_within_seconds(db, vec![bt], "merge race");
    fs.crash(Some(71));
    let db = Db::open(DB, opts).expect("reopen");
    assert!(
        read_all(&db, &["bt"], "merge race")[0] == model,
        "recovered state differs"
    );
    db.verify().expect("verify after recovery");
}

/// (generation, free map pages) of the newest header slot of the file of
/// the first table (the layout of `Checkpoint::encode` in btree/format.rs).
fn free_map_pages(fs: &FaultFs) -> (u64, u32) {
    use spinney::fs::Fs;
    let raw = fs
        .read_all(Path::new("/db/000000.btree"))
        .expect("read the B-tree file");
    let field = |slot: usize, at: usize, len: usize| {
        let start = slot * 4096 + at;
        raw.get(start..start + len)
            .map(|b| b.iter().rev().fold(0u64, |acc, &x| acc << 8 | u64::from(x)))
            .expect("header bytes")
    };
    (0..2)
        .map(|slot| (field(slot, 20, 8), field(slot, 56, 4) as u32))
        .max()
        .expect("two slots")
}

#[test]
fn a_free_map_that_shrinks_as_it_is_allocated_reads_back() {
    // Goal: a checkpoint sizes its free map's run from the free list, then
    // allocates the run from that list; when the allocation takes a whole
    // extent, the list can need a page fewer than the run has. Every page
    // of the run must still be a free-map page, or `verify` fails and the
    // file cannot be opened.
    // Method (deterministic, no fault): 600 keys with two-page overflow
    // values, then every other value replaced (twice, so that the old
    // versions are pruned): about 300 free extents, more than one page of
    // free map holds (254). Then single overwrites, each followed by a
    // checkpoint and `verify`, while the extents are used up one by one
    // and the free map drops from two pages to one; then a reopen.
    let fs = FaultFs::new();
    let opts = quiet_options(&fs);
    let db = Db::open(DB, opts.clone()).expect("open");
    let bt = db.create_table("bt", btree_table()).expect("create");
    let n = 600u32;
    let mut model = State::new();
    let mut put = |k: u32, v: Vec<u8>| {
        bt.put(&key(k), &v).expect("put");
        model.insert(key(k), v);
    };
    for i in 0..n {
        put(i, vec![i as u8; 5000]);
    }
    db.checkpoint().expect("checkpoint");
    for round in 0..2u8 {
        for i in (0..n).step_by(2) {
            put(i, vec![round; 10]);
        }
        db.checkpoint().expect("checkpoint");
    }
    let mut pages_seen = Vec::new();
    for c in 0..130u32 {
        put(c * 7 % n, c.to_le_bytes().to_vec());
        db.checkpoint().expect("checkpoint");
        let (generation, pages) = free_map_pages(&fs);
        if pages_seen.last() != Some(&pages) {
            pages_seen.push(pages);
        }
        db.verify()
            .unwrap_or_else(|e| panic!("checkpoint {generation} ({pages} free map pages): {e}"));
    }
    assert!(
        pages_seen.windows(2).any(|w| w[0] > w[1]),
        "the free map never shrank: {pages_seen:?}"
    );
    drop(bt);
    db.close().expect("close");
    let db = Db::open(DB, opts).expect("reopen");
    assert!(
        read_all(&db, &["bt"], "free map")[0] == model,
        "reopened state differs"
    );
    db.verify().expect("verify after reopen");
}

#[test]
fn after_a_crash_a_btree_table_whose_log_its_checkpoint_let_go_still_shows_its_data() {
    // Goal: once a checkpoint has made a B-tree table's writes durable, the
    // log segments holding them are deleted. After a crash the table's
    // versions are still visible, and new writes get newer seqnos. Recovery
    // once resumed from the manifest's last seqno, which checkpoints do not
    // edit: every version in the checkpoint was newer than it, so the table
    // read as empty, and new writes took its seqnos again. (Segment
    // removals were not synced then, and the crash of this file system put
    // the segments back, hiding it; a real file system makes the removals
    // durable on its own soon enough.)
    let fs = FaultFs::new();
    let options = || Options {
        fs: fs.clone(),
        wal_segment_size: 32 << 10,
        background_threads: 0,
        autowork: false,
        ..Options::default()
    };
    let db = Db::open(DB, options()).expect("open");
    let t = db.create_table("bt", btree_table()).expect("create");
    let key = |i: u32| format!("key{i:06}").into_bytes();
    let segments = || {
        fs.files()
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "wal"))
            .count()
    };
    // Writes until the log rolls to a fourth segment: the open segment is
    // then empty, and the checkpoint lets every write's segment go.
    let mut n = 0u32;
    while segments() < 4 {
        t.put(&key(n), &[1; 100]).expect("put");
        n += 1;
    }
    db.checkpoint().expect("checkpoint");
    assert_eq!(segments(), 1, "the checkpoint let the log go");
    fs.inject(0, FaultKind::Crash);
    drop_within_seconds(db, t, "crash after the checkpoint");
    fs.crash(None);

    let db = Db::open(DB, options()).expect("reopen");
    let t = db.table("bt").expect("table");
    for i in (0..n).step_by(37) {
        assert_eq!(t.get(&key(i)).expect("get"), Some(vec![1; 100]), "key {i}");
    }
    t.put(&key(0), &[2; 100]).expect("put after reopen");
    assert_eq!(t.get(&key(0)).expect("get"), Some(vec![2; 100]));
    drop(t);
    db.close().expect("close");
    let db = Db::open(DB, options()).expect("second reopen");
    let t = db.table("bt").expect("table");
    assert_eq!(t.get(&key(0)).expect("get"), Some(vec![2; 100]));
    assert_eq!(t.get(&key(n - 1)).expect("get"), Some(vec![1; 100]));
}
