//! I/O errors by chance in a busy database: EIO or ENOSPC on any mutating
//! file operation (a log append or sync, a flush's or compaction's SST, a
//! checkpoint's pages, a manifest edit, a rename, a removal), from the
//! writer or from the background threads, wherever the seed puts them.
//!
//! After the first error the database refuses writes and says why; reads
//! of what was acknowledged still answer; and a reopen, with or without a
//! power loss after the error, has every acknowledged batch and, perhaps,
//! the one that failed with an I/O error, never anything else, and passes
//! `verify`. A commit refused as `ReadOnly` was refused before the log: it
//! is not there after the reopen. (Seed 14 found a commit refused as
//! `ReadOnly` after it was logged: a page write-back between two of its
//! entries had failed. The next open recovered it.)

mod common;

use common::load::{at_rest_options, load, open_busy, Step};
use common::model::{apply, write_batch, Batch, State};
use common::{drop_within_seconds, read_all, reopen_after_crash};
use spinney::fs::{FaultFs, FaultKind, PendingWrites};
use spinney::{Durability, Error};

const TABLES: [&str; 2] = ["lsm", "bt"];

fn run(seed: u64, kind: FaultKind) -> (usize, bool) {
    let ctx = format!("seed {seed}, {kind:?}");
    let fs = FaultFs::new();
    let (db, tables) = open_busy(&fs, Durability::Full, true);
    let plan = load(seed, 400, 2);
    let mut model = vec![State::new(); 2];
    let mut failed: Option<Batch> = None;
    let mut acknowledged = 0;
    let mut hit = false;
    // One mutating operation in 120 fails, from here on.
    fs.inject_randomly(seed, 120, kind);
    for step in &plan {
        let result = match step {
            Step::Batch(b) | Step::Single(b) => {
                let r = db.write(write_batch(&tables, b));
                match &r {
                    Ok(()) => {
                        apply(&mut model, b);
                        acknowledged += 1;
                    }
                    Err(Error::Io { .. }) => failed = Some(b.clone()),
                    Err(_) => {}
                }
                r
            }
            Step::Flush => db.flush(),
            Step::Checkpoint => db.checkpoint(),
        };
        if let Err(e) = result {
            assert!(
                matches!(e, Error::Io { .. } | Error::ReadOnly { .. }),
                "{ctx}: the error is {e:?}"
            );
            hit = true;
            if std::env::var_os("IO_ERRORS_DEBUG").is_some() {
                eprintln!("{ctx}: the step after {acknowledged} acknowledged failed: {e}");
            }
            break;
        }
    }
    fs.clear_faults();
    if hit {
        // Refused, saying why; reads still answer with what was acknowledged.
        match tables[0].put(b"after", b"error") {
            Err(Error::ReadOnly { reason }) => assert!(!reason.is_empty(), "{ctx}"),
            other => panic!("{ctx}: a write after the error returned {other:?}"),
        }
        for (t, m) in tables.iter().zip(&model) {
            if let Some((k, v)) = m.iter().next_back() {
                assert_eq!(t.get(k).expect("get").as_ref(), Some(v), "{ctx}");
            }
        }
    }
    drop_within_seconds(db, tables, &ctx);
    let power_lost = seed % 2 == 1;
    let pending = if power_lost {
        let pending = PendingWrites::nth(seed / 2, seed);
        fs.crash_with(pending);
        pending
    } else {
        PendingWrites::Lost
    };
    let ctx = format!("{ctx}, power lost: {power_lost}, {pending:?}");
    let db = reopen_after_crash(&ctx, pending, &at_rest_options(&fs));
    let state = read_all(&db, &TABLES, &ctx);
    let mut with_failed = model.clone();
    if let Some(b) = &failed {
        apply(&mut with_failed, b);
    }
    if std::env::var_os("IO_ERRORS_DEBUG").is_some() && state != model && state != with_failed {
        let all = common::load::batches(&plan);
        eprintln!(
            "{ctx}: the state matches the first {:?} batches",
            common::model::matching_prefixes(&all, &state, 0, all.len())
        );
        for (t, table_state) in state.iter().enumerate() {
            let one: Vec<State> = vec![table_state.clone()];
            let only: Vec<Batch> = all
                .iter()
                .map(|b| {
                    b.iter()
                        .filter(|e| e.0 == t)
                        .map(|e| (0, e.1.clone(), e.2.clone()))
                        .collect()
                })
                .collect();
            eprintln!(
                "{ctx}: table {t} alone matches the first {:?} batches",
                common::model::matching_prefixes(&only, &one, 0, all.len())
            );
        }
        for (i, (got, want)) in state.iter().zip(&model).enumerate() {
            let diff: Vec<_> = want
                .iter()
                .filter(|(k, v)| got.get(*k) != Some(v))
                .map(|(k, _)| String::from_utf8_lossy(k).into_owned())
                .take(5)
                .collect();
            let extra: Vec<_> = got
                .keys()
                .filter(|k| !want.contains_key(*k))
                .map(|k| String::from_utf8_lossy(k).into_owned())
                .take(5)
                .collect();
            eprintln!(
                "{ctx}: table {i}: {} entries, model {}; missing or different {diff:?}; extra {extra:?}",
                got.len(),
                want.len()
            );
        }
    }
    assert!(
        state == model || state == with_failed,
        "{ctx}: after {acknowledged} acknowledged batches the reopened state is neither \
         them nor them and the failed one"
    );
    db.verify().unwrap_or_else(|e| panic!("{ctx}: verify: {e}"));
    db.table(TABLES[0])
        .expect("table")
        .put(b"after", b"reopen")
        .unwrap_or_else(|e| panic!("{ctx}: write after reopen: {e}"));
    (acknowledged, hit)
}

#[test]
fn io_errors_by_chance_in_a_busy_database_lose_nothing_acknowledged() {
    let mut hits = 0;
    let mut acknowledged = 0;
    for seed in 0..100 {
        for kind in [FaultKind::Eio, FaultKind::NoSpace] {
            let (a, hit) = run(seed, kind);
            acknowledged += a;
            hits += usize::from(hit);
        }
    }
    // The chance is high enough that nearly every run meets an error, and
    // low enough that most commit something first.
    assert!(hits >= 170, "{hits} of 200 runs met an error");
    assert!(
        acknowledged > 200 * 20,
        "{acknowledged} batches acknowledged"
    );
}

/// One read of `table` checked against `model`: Ok with the right answer,
/// or an I/O error; returns whether it failed.
fn checked_get(ctx: &str, table: &spinney::Table, model: &State, key: &[u8]) -> bool {
    match table.get(key) {
        Ok(got) => {
            assert_eq!(got.as_ref(), model.get(key), "{ctx}: a wrong value");
            false
        }
        Err(Error::Io { .. }) => true,
        Err(e) => panic!("{ctx}: a read error answered as {e}"),
    }
}

#[test]
fn reads_that_fail_by_chance_answer_an_error_or_the_right_value() {
    // Goal: EIO on reads (a file's open, a block's or page's read), by
    // chance, in both kinds with data in SSTs, memtables and B-tree pages
    // out of the cache: every get and scan answers the right value or an
    // I/O error, never a wrong value or a panic; no failed read leaves a
    // bad block or page behind (with the errors gone every read is right);
    // writes meanwhile are acknowledged or fail; a reopen has every
    // acknowledged batch and perhaps the one that failed.
    // Method: 10 seeds; a load written without faults, then one read in 12
    // failing while 600 gets, 20 scans and 40 batches run; then without
    // faults, every key read; then a reopen.
    let mut failed_reads = 0;
    for seed in 0..10u64 {
        let ctx = format!("seed {seed}");
        let fs = FaultFs::new();
        let (db, tables) = open_busy(&fs, Durability::Full, true);
        let plan = load(seed, 300, 2);
        let mut model = vec![State::new(); 2];
        let mut batches = Vec::new();
        for step in &plan {
            if let Step::Batch(b) | Step::Single(b) = step {
                db.write(write_batch(&tables, b)).expect("write");
                apply(&mut model, b);
                batches.push(b.clone());
            }
        }
        db.flush().expect("flush");
        db.wait_for_compaction().expect("compaction");
        fs.inject_read_errors(seed, 12);
        let keys: Vec<Vec<u8>> = model.iter().flat_map(|m| m.keys().cloned()).collect();
        let mut failed: Option<Batch> = None;
        for i in 0..600usize {
            let t = i % 2;
            let key = keys
                .get(i * 7 % keys.len().max(1))
                .cloned()
                .unwrap_or_default();
            failed_reads += usize::from(checked_get(&ctx, &tables[t], &model[t], &key));
            let absent = format!("absent{i}").into_bytes();
            failed_reads += usize::from(checked_get(&ctx, &tables[t], &model[t], &absent));
            if i % 30 == 0 {
                match tables[t]
                    .iter()
                    .and_then(|it| it.collect::<spinney::Result<State>>())
                {
                    Ok(all) => assert!(all == model[t], "{ctx}: a scan differs"),
                    Err(Error::Io { .. }) => failed_reads += 1,
                    Err(e) => panic!("{ctx}: a scan's read error answered as {e}"),
                }
            }
            if i % 15 == 0 && failed.is_none() {
                let b = batches[i % batches.len()].clone();
                match db.write(write_batch(&tables, &b)) {
                    Ok(()) => apply(&mut model, &b),
                    Err(Error::Io { .. }) => failed = Some(b),
                    Err(Error::ReadOnly { .. }) => {}
                    Err(e) => panic!("{ctx}: a write answered {e}"),
                }
            }
        }
        fs.clear_faults();
        let mut with_failed = model.clone();
        if let Some(b) = &failed {
            apply(&mut with_failed, b);
        }
        // A failed write may have reached the tables (it is in the log):
        // the reads now agree with one of the two.
        let now = read_all(&db, &TABLES, &ctx);
        assert!(
            now == model || now == with_failed,
            "{ctx}: reads after the errors differ"
        );
        drop_within_seconds(db, tables, &ctx);
        let db = reopen_after_crash(&ctx, PendingWrites::Lost, &at_rest_options(&fs));
        let state = read_all(&db, &TABLES, &ctx);
        assert!(
            state == model || state == with_failed,
            "{ctx}: the reopened state differs"
        );
        db.verify().unwrap_or_else(|e| panic!("{ctx}: verify: {e}"));
    }
    assert!(failed_reads >= 100, "only {failed_reads} reads failed");
}
