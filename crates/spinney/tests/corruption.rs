//! Byte flips and truncations in every kind of file, on a real directory.
//!
//! Goal: a damaged byte anywhere in an SST, a log segment or the manifest is
//! either detected (an error from open, a read or `verify`) or harmless; it
//! never panics, never returns a value that was not written for that key,
//! and never makes a key appear that was never written. After LevelDB's
//! `corruption_test`.
//!
//! Method: one database is built once (several flushes, so there are SSTs;
//! data written after the last flush, so the log holds some). Each case
//! copies its directory, damages the copy, opens it and reads everything.
//! Every key is written exactly once, in a known order, so a read has only
//! three honest answers: the value, an error, or (where a lost log tail is
//! allowed) nothing, with what survives being a prefix of the write order.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use spinney::{Db, Durability, Error, Options, Table, TableOptions, WalRecovery};
use tempfile::TempDir;

const TABLE: &str = "things";
const KEYS: usize = 1500;
/// Keys at or past this index are written after the last flush: they live
/// only in the log when the database is closed.
const UNFLUSHED_FROM: usize = 1300;
/// Byte positions tried per file kind.
const POSITIONS_PER_KIND: usize = 150;

fn key(i: usize) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn value(i: usize) -> Vec<u8> {
    let mut v = format!("value-{i}-").into_bytes();
    v.resize(40 + i % 120, b'a' + (i % 26) as u8);
    v
}

fn table_options() -> TableOptions {
    TableOptions {
        write_buffer_size: 64 << 10,
        block_size: 1024,
        ..TableOptions::default()
    }
}

fn options(recovery: WalRecovery) -> Options {
    Options {
        durability: Durability::Normal,
        wal_recovery: recovery,
        // Small segments, so that flushed ones are deleted and the log kept
        // at close holds mostly unflushed data.
        wal_segment_size: 64 << 10,
        ..Options::default()
    }
}

/// The written state: key index by key, in write order.
fn written() -> BTreeMap<Vec<u8>, usize> {
    (0..KEYS).map(|i| (key(i), i)).collect()
}

/// Builds the database every case starts from and closes it cleanly.
fn build() -> TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options(WalRecovery::TornTailOnly)).expect("open");
    let table = db.create_table(TABLE, table_options()).expect("create");
    for i in 0..KEYS {
        table.put(&key(i), &value(i)).expect("put");
        if i % 400 == 399 || i + 1 == UNFLUSHED_FROM {
            db.flush().expect("flush");
        }
    }
    drop(table);
    db.close().expect("close");
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    for entry in fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        fs::copy(entry.path(), to.join(entry.file_name())).expect("copy");
    }
}

/// Files of `dir` whose names satisfy `pred`, sorted.
fn files(dir: &Path, pred: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(&pred))
        .collect();
    out.sort();
    out
}

/// Positions to damage in a file of `len` bytes: the first bytes (header,
/// first block), the last bytes (footer, index, tail record), and evenly
/// spread ones between, jittered.
fn positions(len: u64, count: usize, rng: &mut StdRng) -> Vec<u64> {
    let edge = (count / 3) as u64;
    let mut out: Vec<u64> = (0..edge.min(len)).collect();
    out.extend((len.saturating_sub(edge)..len).filter(|p| *p >= edge));
    let middle = count.saturating_sub(out.len()) as u64;
    for j in 0..middle {
        let span = len.saturating_sub(2 * edge).max(1);
        let p = edge + span * j / middle.max(1) + rng.gen_range(0..(span / middle.max(1)).max(1));
        if p < len {
            out.push(p);
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// What the reads of one damaged copy may return for a key that is absent.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Absent {
    /// Never: every key must read as its value or as an error.
    Never,
    /// Keys written after the last flush may be missing, as long as what is
    /// present of them is a prefix of the write order.
    LogTail,
    /// Only the last commit may be missing: a damaged last record looks
    /// like a torn tail, but damage to any earlier one is Corruption.
    LastCommit,
}

/// Reads every key of `table` with `get` and with full scans both ways, and
/// checks each answer; `verify` may fail but must not panic. Returns the
/// number of answers that were errors.
fn check_reads(db: &Db, table: &Table, absent: Absent, ctx: &str) -> usize {
    let written = written();
    let mut errors = 0;
    let mut present = vec![false; KEYS];
    let mut absent_keys = vec![false; KEYS];
    for i in 0..KEYS {
        match table.get(&key(i)) {
            Ok(Some(v)) => {
                assert!(
                    v == value(i),
                    "{ctx}: get of key {i} returned a wrong value"
                );
                present[i] = true;
            }
            Ok(None) => absent_keys[i] = true,
            Err(_) => errors += 1,
        }
    }
    // Keys never written must stay absent.
    for probe in [
        b"key".to_vec(),
        b"key0000".to_vec(),
        key(KEYS),
        b"zzz".to_vec(),
    ] {
        if let Ok(Some(_)) = table.get(&probe) {
            panic!("{ctx}: a key never written has a value");
        }
    }
    let check_entry = |k: &[u8], v: &[u8]| {
        let Some(&i) = written.get(k) else {
            panic!("{ctx}: a scan returned a key never written: {k:?}")
        };
        assert!(
            v == value(i),
            "{ctx}: a scan returned a wrong value for key {i}"
        );
        i
    };
    match table.iter() {
        Ok(iter) => {
            let mut last = None;
            for entry in iter {
                let Ok((k, v)) = entry else {
                    errors += 1;
                    break;
                };
                let i = check_entry(&k, &v);
                assert!(
                    last.is_none_or(|l| l < i),
                    "{ctx}: forward scan out of order"
                );
                last = Some(i);
                if absent_keys[i] {
                    panic!("{ctx}: key {i} is absent for get but present in a scan");
                }
            }
        }
        Err(_) => errors += 1,
    }
    match table.iter() {
        Ok(iter) => {
            let mut last = None;
            for entry in iter.rev() {
                let Ok((k, v)) = entry else {
                    errors += 1;
                    break;
                };
                let i = check_entry(&k, &v);
                assert!(
                    last.is_none_or(|l| l > i),
                    "{ctx}: reverse scan out of order"
                );
                last = Some(i);
            }
        }
        Err(_) => errors += 1,
    }
    match absent {
        Absent::Never => {
            let missing: Vec<usize> = (0..KEYS).filter(|&i| absent_keys[i]).collect();
            assert!(
                missing.is_empty(),
                "{ctx}: keys silently missing: {missing:?}"
            );
        }
        Absent::LogTail => {
            if let Some(i) = (0..UNFLUSHED_FROM).find(|&i| absent_keys[i]) {
                panic!("{ctx}: flushed key {i} silently missing");
            }
            // What survives of the log is a prefix of the write order.
            let first_missing = (UNFLUSHED_FROM..KEYS).find(|&i| absent_keys[i]);
            if let Some(m) = first_missing {
                if let Some(j) = (m..KEYS).find(|&j| present[j]) {
                    panic!("{ctx}: key {m} is missing but the later key {j} is there");
                }
            }
        }
        Absent::LastCommit => {
            let missing: Vec<usize> = (0..KEYS - 1).filter(|&i| absent_keys[i]).collect();
            assert!(
                missing.is_empty(),
                "{ctx}: acknowledged, synced commits silently missing: keys {:?}..={:?} ({} keys)",
                missing.first(),
                missing.last(),
                missing.len()
            );
        }
    }
    if db.verify().is_err() {
        errors += 1;
    }
    errors
}

/// Flips one byte of `victim` (a file of the built database, by name) at
/// each position in a fresh copy and checks what the database makes of it.
/// Returns (opens refused, cases with read errors, harmless cases); fails
/// after trying every position if any case went wrong, listing them all.
fn flip_each(
    built: &Path,
    victim: &str,
    offsets: &[u64],
    recovery: WalRecovery,
    absent: Absent,
) -> (usize, usize, usize) {
    let (mut refused, mut detected, mut harmless) = (0, 0, 0);
    let mut wrong: Vec<String> = Vec::new();
    for &offset in offsets {
        let ctx = format!("{victim} byte {offset} flipped, {recovery:?}");
        let copy = tempfile::tempdir().expect("tempdir");
        copy_dir(built, copy.path());
        let path = copy.path().join(victim);
        let mut bytes = fs::read(&path).expect("read victim");
        let Some(byte) = bytes.get_mut(offset as usize) else {
            continue;
        };
        *byte ^= 0x5a;
        fs::write(&path, &bytes).expect("write victim");

        let db = match Db::open(copy.path(), options(recovery)) {
            Ok(db) => db,
            Err(_) => {
                refused += 1;
                continue;
            }
        };
        let table = match db.table(TABLE) {
            Ok(t) => t,
            Err(e) => {
                wrong.push(format!("{ctx}: opened without its table: {e}"));
                continue;
            }
        };
        // Catch the panic of a failed check so that every position is tried
        // and the report lists them all.
        let checked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            check_reads(&db, &table, absent, &ctx)
        }));
        match checked {
            Ok(0) => harmless += 1,
            Ok(_) => detected += 1,
            Err(panic) => wrong.push(
                panic
                    .downcast_ref::<String>()
                    .cloned()
                    .unwrap_or_else(|| format!("{ctx}: panicked")),
            ),
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} flips went wrong (refused {refused}, detected {detected}, harmless {harmless}):\n{}",
        wrong.len(),
        offsets.len(),
        wrong.join("\n")
    );
    (refused, detected, harmless)
}

fn name_of(path: &Path) -> String {
    path.file_name()
        .and_then(|n| n.to_str())
        .expect("file name")
        .to_string()
}

#[test]
fn the_built_database_reads_back_whole() {
    // Goal: the baseline every flip is judged against: the undamaged copy
    // opens, has SSTs and a log, and reads back every key.
    let built = build();
    assert!(!files(built.path(), |n| n.ends_with(".sst")).is_empty());
    assert!(!files(built.path(), |n| n.ends_with(".wal")).is_empty());
    let copy = tempfile::tempdir().expect("tempdir");
    copy_dir(built.path(), copy.path());
    let db = Db::open(copy.path(), options(WalRecovery::TornTailOnly)).expect("open");
    let table = db.table(TABLE).expect("table");
    assert_eq!(check_reads(&db, &table, Absent::Never, "undamaged"), 0);
}

#[test]
fn byte_flips_in_an_sst_are_detected_or_harmless() {
    let built = build();
    let ssts = files(built.path(), |n| n.ends_with(".sst"));
    let mut rng = StdRng::seed_from_u64(1);
    let mut total = (0, 0, 0);
    // Spread the positions over two SSTs: the oldest and the newest.
    let victims = [ssts.first(), ssts.last()];
    for victim in victims.into_iter().flatten() {
        let len = fs::metadata(victim).expect("metadata").len();
        let offsets = positions(len, POSITIONS_PER_KIND / 2, &mut rng);
        let (r, d, h) = flip_each(
            built.path(),
            &name_of(victim),
            &offsets,
            WalRecovery::TornTailOnly,
            Absent::Never,
        );
        total = (total.0 + r, total.1 + d, total.2 + h);
    }
    assert!(total.0 + total.1 > 0, "no SST flip was detected: {total:?}");
}

#[test]
fn byte_flips_in_the_manifest_are_detected_or_harmless() {
    let built = build();
    let manifest = files(built.path(), |n| n.starts_with("MANIFEST-"));
    assert_eq!(manifest.len(), 1, "{manifest:?}");
    let len = fs::metadata(&manifest[0]).expect("metadata").len();
    let offsets = positions(len, POSITIONS_PER_KIND, &mut StdRng::seed_from_u64(2));
    // A torn last record of the manifest is dropped at open; the log still
    // holds what it described, so nothing may go missing.
    let (refused, detected, _) = flip_each(
        built.path(),
        &name_of(&manifest[0]),
        &offsets,
        WalRecovery::TornTailOnly,
        Absent::Never,
    );
    assert!(refused + detected > 0, "no manifest flip was detected");
}

#[test]
fn byte_flips_in_the_log_are_refused_or_lose_only_a_tail() {
    // Goal: with TornTailOnly a damaged record in the middle of the log is
    // Corruption at open; one at the very end may be taken for a torn tail
    // and dropped. Either way no wrong value and no gap in the write order.
    let built = build();
    let wal = files(built.path(), |n| n.ends_with(".wal"));
    let newest = wal.last().expect("a log segment");
    let len = fs::metadata(newest).expect("metadata").len();
    assert!(len > 0);
    let offsets = positions(len, POSITIONS_PER_KIND, &mut StdRng::seed_from_u64(3));
    let (refused, _, _) = flip_each(
        built.path(),
        &name_of(newest),
        &offsets,
        WalRecovery::TornTailOnly,
        Absent::LastCommit,
    );
    assert!(refused > 0, "no flip in the log was refused at open");
}

#[test]
fn byte_flips_in_the_log_with_point_in_time_recovery_open_to_a_prefix() {
    // Goal: PointInTime recovery opens what TornTailOnly refuses, keeping
    // the commits before the damage and none after it.
    let built = build();
    let wal = files(built.path(), |n| n.ends_with(".wal"));
    let newest = wal.last().expect("a log segment");
    let len = fs::metadata(newest).expect("metadata").len();
    let offsets = positions(len, POSITIONS_PER_KIND, &mut StdRng::seed_from_u64(4));
    let (refused, _, _) = flip_each(
        built.path(),
        &name_of(newest),
        &offsets,
        WalRecovery::PointInTime,
        Absent::LogTail,
    );
    assert_eq!(refused, 0, "PointInTime recovery refused to open");
}

#[test]
fn truncating_the_log_keeps_a_prefix_and_everything_before_the_cut() {
    // Goal: after a clean close the log is synced; cutting it short (as a
    // torn tail would) opens under TornTailOnly and keeps exactly a prefix
    // of the commits, the longer the cut, the shorter the prefix, and no
    // cut loses a flushed key. Cutting nothing loses nothing.
    let built = build();
    let wal = files(built.path(), |n| n.ends_with(".wal"));
    let newest = name_of(wal.last().expect("a log segment"));
    let len = fs::metadata(built.path().join(&newest))
        .expect("metadata")
        .len();
    let mut survivors_before = usize::MAX;
    let mut cuts: Vec<u64> = (0..=8).map(|j| len * (8 - j) / 8).collect();
    cuts.extend([len.saturating_sub(1), len.saturating_sub(7)]);
    cuts.sort_unstable_by(|a, b| b.cmp(a));
    cuts.dedup();
    for cut in cuts {
        let ctx = format!("{newest} cut to {cut} of {len} bytes");
        let copy = tempfile::tempdir().expect("tempdir");
        copy_dir(built.path(), copy.path());
        let file = fs::OpenOptions::new()
            .write(true)
            .open(copy.path().join(&newest))
            .expect("open log");
        file.set_len(cut).expect("truncate");
        drop(file);
        let db = Db::open(copy.path(), options(WalRecovery::TornTailOnly))
            .unwrap_or_else(|e| panic!("{ctx}: open: {e}"));
        let table = db.table(TABLE).expect("table");
        let errors = check_reads(&db, &table, Absent::LogTail, &ctx);
        assert_eq!(errors, 0, "{ctx}: reads failed");
        let survivors = (0..KEYS)
            .filter(|&i| table.get(&key(i)).expect("get").is_some())
            .count();
        if cut == len {
            assert_eq!(survivors, KEYS, "{ctx}: an uncut log lost commits");
        }
        assert!(
            survivors <= survivors_before,
            "{ctx}: a shorter log kept more"
        );
        survivors_before = survivors;
    }
}

/// Flips byte 10 (a payload byte of the first record, which is not the
/// last) of the oldest file matching `pred` in a copy, and expects the open
/// to fail with a Corruption error naming the file.
fn open_refuses_naming(built: &Path, pred: impl Fn(&str) -> bool) {
    let victim = files(built, pred).remove(0);
    let name = name_of(&victim);
    let copy = tempfile::tempdir().expect("tempdir");
    copy_dir(built, copy.path());
    let path = copy.path().join(&name);
    let mut bytes = fs::read(&path).expect("read");
    bytes[10] ^= 0xff;
    fs::write(&path, &bytes).expect("write");
    match Db::open(copy.path(), options(WalRecovery::TornTailOnly)) {
        Err(e @ Error::Corruption { .. }) => assert!(
            e.to_string().contains(&name),
            "the error does not name {name}: {e}"
        ),
        Err(e) => panic!("{name}: expected Corruption, got {e}"),
        Ok(db) => panic!(
            "{name}: opened despite a damaged first record, with tables {:?}",
            db.tables()
                .iter()
                .map(|t| t.name.clone())
                .collect::<Vec<_>>()
        ),
    }
}

#[test]
fn a_corruption_error_names_the_damaged_sst() {
    // Goal: an operator can act on a corruption error: its Display names
    // the file. An SST's damage is found by verify.
    let built = build();
    let sst = files(built.path(), |n| n.ends_with(".sst"))
        .into_iter()
        .next()
        .expect("an SST");
    let copy = tempfile::tempdir().expect("tempdir");
    copy_dir(built.path(), copy.path());
    let path = copy.path().join(name_of(&sst));
    let mut bytes = fs::read(&path).expect("read");
    // Inside the first data block.
    bytes[20] ^= 0xff;
    fs::write(&path, &bytes).expect("write");
    let db = Db::open(copy.path(), options(WalRecovery::TornTailOnly)).expect("open");
    let err = db.verify().expect_err("verify of a damaged SST");
    assert!(err.is_corruption(), "{err}");
    assert!(
        err.to_string().contains(&name_of(&sst)),
        "the error does not name {}: {err}",
        name_of(&sst)
    );
}

#[test]
fn a_corruption_error_names_the_damaged_log_segment() {
    open_refuses_naming(build().path(), |n| n.ends_with(".wal"));
}

#[test]
fn a_damaged_first_manifest_record_is_corruption_naming_the_manifest() {
    // Goal: the manifest's first record holds the whole catalog; damage to
    // it must refuse the open, not be taken for a torn tail (which would
    // open an empty database and delete every SST as garbage).
    open_refuses_naming(build().path(), |n| n.starts_with("MANIFEST-"));
}
