//! Transactions: reads at a snapshot with the transaction's own writes over
//! it, conflicts (first committer wins), the retry helper, and the money a
//! bank moves between accounts in both kinds of table, with concurrent
//! transfers, snapshot readers, and a killed process.
//!
//! - Own writes: get, ranges both ways and prefixes see them, over both
//!   kinds; nobody else does until the commit; a rollback or a drop
//!   discards them.
//! - Conflicts by name: write-write, a write outside any transaction, a
//!   delete, `get_for_update`, writes already flushed or checkpointed,
//!   and what is not a conflict (disjoint keys, writes before the
//!   snapshot, a plain `get`: write skew).
//! - Errors at the call: bad keys and values, tables of another database
//!   or dropped, a closed database.
//! - A model: random transactions interleaved, with range deletes inside
//!   them and out, against a `BTreeMap` and the rule "conflict iff a key
//!   written, read for update or in a range deleted was committed after
//!   the snapshot" (a range delete writes every key it covers on an LSM
//!   table, one tombstone over them all, and the keys it deletes on a
//!   B-tree, a tombstone each).
//! - The bank: threads move amounts between accounts in a B-tree and an
//!   LSM table with `Db::transact`; the total never changes for snapshot
//!   readers while it runs, nor after; a process killed while moving
//!   money leaves every acknowledged transfer whole and none in part; and
//!   power lost at spread points (`FaultFs`, each way unsynced writes may
//!   fare) leaves whole transfers, all acknowledged ones with `Full`, a
//!   prefix with `Off`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use spinney::{Db, Error, Options, Table, TableOptions};

fn kinds() -> [(&'static str, TableOptions); 2] {
    [
        (
            "lsm",
            TableOptions {
                write_buffer_size: 64 << 10,
                ..TableOptions::lsm()
            },
        ),
        (
            "btree",
            TableOptions {
                page_size: 4 << 10,
                ..TableOptions::btree()
            },
        ),
    ]
}

fn open(dir: &Path) -> Db {
    Db::open(dir, Options::default()).expect("open")
}

fn entries(r: spinney::Result<spinney::TxRange>) -> Vec<(Vec<u8>, Vec<u8>)> {
    r.expect("range")
        .collect::<spinney::Result<_>>()
        .expect("entries")
}

fn kv(k: &str, v: &str) -> (Vec<u8>, Vec<u8>) {
    (k.as_bytes().to_vec(), v.as_bytes().to_vec())
}

fn is_conflict_on(e: &Error, table: &str, key: &[u8]) -> bool {
    matches!(e, Error::Conflict { table: t, key: k } if t == table && k == key)
}

#[test]
fn a_transaction_reads_its_own_writes_over_its_snapshot_and_nobody_else_does() {
    for (kind, options) in kinds() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = open(dir.path());
        let t = db.create_table("t", options).expect("create");
        for k in ["a", "b", "c", "d", "pa", "pb"] {
            t.put(k.as_bytes(), b"old").expect("put");
        }
        let mut tx = db.begin();
        tx.put(&t, b"b", b"new").expect("put");
        tx.delete(&t, b"c").expect("delete");
        tx.put(&t, b"bb", b"added").expect("put");
        tx.put(&t, b"pc", b"added").expect("put");
        tx.delete(&t, b"zz").expect("delete of an absent key");
        // Written after the transaction began: not seen by it.
        t.put(b"e", b"later").expect("put");

        assert_eq!(
            tx.get(&t, b"b").expect("get"),
            Some(b"new".to_vec()),
            "{kind}"
        );
        assert_eq!(tx.get(&t, b"c").expect("get"), None, "{kind}");
        assert_eq!(
            tx.get(&t, b"a").expect("get"),
            Some(b"old".to_vec()),
            "{kind}"
        );
        assert_eq!(tx.get(&t, b"e").expect("get"), None, "{kind}");
        let want = vec![
            kv("a", "old"),
            kv("b", "new"),
            kv("bb", "added"),
            kv("d", "old"),
            kv("pa", "old"),
            kv("pb", "old"),
            kv("pc", "added"),
        ];
        assert_eq!(entries(tx.iter(&t)), want, "{kind}: forward");
        let mut back: Vec<_> = tx
            .iter(&t)
            .expect("iter")
            .rev()
            .collect::<spinney::Result<_>>()
            .expect("backward");
        back.reverse();
        assert_eq!(back, want, "{kind}: backward");
        assert_eq!(
            entries(tx.range(&t, b"b".as_slice()..b"d".as_slice())),
            vec![kv("b", "new"), kv("bb", "added")],
            "{kind}: range"
        );
        assert_eq!(
            entries(tx.prefix(&t, b"p")),
            vec![kv("pa", "old"), kv("pb", "old"), kv("pc", "added")],
            "{kind}: prefix"
        );
        // Both ends at once meet in the middle without losing or repeating.
        let mut both = tx.iter(&t).expect("iter");
        let mut got = Vec::new();
        let mut tail = Vec::new();
        while let Some(e) = both.next() {
            got.push(e.expect("entry"));
            match both.next_back() {
                Some(e) => tail.push(e.expect("entry")),
                None => break,
            }
        }
        tail.reverse();
        got.extend(tail);
        assert_eq!(got, want, "{kind}: from both ends");
        // An inverted or empty range is empty, not a panic.
        assert!(entries(tx.range(&t, b"d".as_slice()..b"b".as_slice())).is_empty());
        assert!(entries(tx.range(&t, b"b".as_slice()..b"b".as_slice())).is_empty());

        // Nobody else sees the writes before the commit.
        assert_eq!(t.get(b"b").expect("get"), Some(b"old".to_vec()), "{kind}");
        assert_eq!(tx.len(), 5);
        tx.commit().expect("commit");
        assert_eq!(t.get(b"b").expect("get"), Some(b"new".to_vec()), "{kind}");
        assert_eq!(t.get(b"c").expect("get"), None, "{kind}");
        assert_eq!(
            t.get(b"bb").expect("get"),
            Some(b"added".to_vec()),
            "{kind}"
        );
        assert_eq!(t.get(b"e").expect("get"), Some(b"later".to_vec()), "{kind}");

        // Rollback and drop discard.
        let mut tx = db.begin();
        tx.put(&t, b"a", b"gone").expect("put");
        tx.rollback();
        let mut tx = db.begin();
        tx.put(&t, b"a", b"gone").expect("put");
        drop(tx);
        assert_eq!(t.get(b"a").expect("get"), Some(b"old".to_vec()), "{kind}");
    }
}

#[test]
fn one_transaction_writes_both_kinds_atomically_and_survives_a_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let db = open(dir.path());
        let b = db.create_table("b", TableOptions::btree()).expect("create");
        let l = db.create_table("l", TableOptions::lsm()).expect("create");
        let mut tx = db.begin();
        tx.put(&b, b"k", b"btree").expect("put");
        tx.put(&l, b"k", b"lsm").expect("put");
        tx.commit().expect("commit");
        db.close().expect("close");
    }
    let db = open(dir.path());
    let b = db.table("b").expect("b");
    let l = db.table("l").expect("l");
    assert_eq!(b.get(b"k").expect("get"), Some(b"btree".to_vec()));
    assert_eq!(l.get(b"k").expect("get"), Some(b"lsm".to_vec()));
}

#[test]
fn the_second_of_two_transactions_writing_one_key_conflicts() {
    for (kind, options) in kinds() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = open(dir.path());
        let t = db.create_table("t", options).expect("create");
        t.put(b"k", b"0").expect("put");
        let mut first = db.begin();
        let mut second = db.begin();
        first.put(&t, b"k", b"1").expect("put");
        second.put(&t, b"k", b"2").expect("put");
        second.put(&t, b"other", b"2").expect("put");
        first.commit().expect("the first committer wins");
        let e = second.commit().expect_err("the second conflicts");
        assert!(is_conflict_on(&e, "t", b"k"), "{kind}: {e}");
        assert!(e.is_conflict());
        assert!(e.to_string().contains("transaction conflict"), "{e}");
        // Nothing of the refused transaction was written.
        assert_eq!(t.get(b"k").expect("get"), Some(b"1".to_vec()), "{kind}");
        assert_eq!(t.get(b"other").expect("get"), None, "{kind}");
        // The database takes writes after a conflict.
        t.put(b"after", b"ok").expect("put after a conflict");
    }
}

#[test]
fn a_write_or_delete_outside_any_transaction_after_the_snapshot_conflicts() {
    for (kind, options) in kinds() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = open(dir.path());
        let t = db.create_table("t", options).expect("create");
        t.put(b"k", b"0").expect("put");
        t.put(b"d", b"0").expect("put");

        let mut tx = db.begin();
        t.put(b"k", b"outside").expect("put");
        tx.put(&t, b"k", b"inside").expect("put");
        let e = tx.commit().expect_err("conflict");
        assert!(is_conflict_on(&e, "t", b"k"), "{kind}: {e}");

        let mut tx = db.begin();
        t.delete(b"d").expect("delete");
        tx.put(&t, b"d", b"inside").expect("put");
        let e = tx.commit().expect_err("a delete is a write");
        assert!(is_conflict_on(&e, "t", b"d"), "{kind}: {e}");

        // A key nobody else has written: no conflict.
        let mut tx = db.begin();
        t.put(b"k", b"again").expect("put");
        tx.put(&t, b"fresh", b"inside").expect("put");
        tx.commit().expect("disjoint keys commit");

        // Writes before the snapshot are no conflict.
        t.put(b"k", b"before").expect("put");
        let mut tx = db.begin();
        tx.put(&t, b"k", b"inside").expect("put");
        tx.commit()
            .expect("a write before the snapshot is no conflict");
        assert_eq!(t.get(b"k").expect("get"), Some(b"inside".to_vec()));
    }
}

#[test]
fn writes_since_the_snapshot_conflict_after_a_flush_compaction_or_checkpoint() {
    for (kind, options) in kinds() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = open(dir.path());
        let t = db.create_table("t", options).expect("create");
        for i in 0..200u32 {
            t.put(format!("k{i:04}").as_bytes(), b"0").expect("put");
        }
        let mut tx = db.begin();
        t.put(b"k0100", b"1").expect("put");
        t.delete(b"k0150").expect("delete");
        // The writes leave the memtable (LSM: into an SST, merged into
        // one run; B-tree: a checkpoint, then a packing compaction).
        t.compact_all().expect("compact");
        tx.put(&t, b"k0100", b"tx").expect("put");
        let e = tx.commit().expect_err("conflict");
        assert!(is_conflict_on(&e, "t", b"k0100"), "{kind}: {e}");
        // Begun after the delete: no conflict.
        let mut tx = db.begin();
        tx.put(&t, b"k0150", b"tx").expect("put");
        tx.commit().expect("commit");

        let mut tx = db.begin();
        t.delete(b"k0160").expect("delete");
        t.compact_all().expect("compact");
        tx.put(&t, b"k0160", b"tx").expect("put");
        let e = tx.commit().expect_err("a compacted delete still conflicts");
        assert!(is_conflict_on(&e, "t", b"k0160"), "{kind}: {e}");
    }
}

#[test]
fn get_for_update_makes_a_write_of_the_key_read_a_conflict_and_plain_get_does_not() {
    for (kind, options) in kinds() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = open(dir.path());
        let t = db.create_table("t", options).expect("create");
        t.put(b"on_call_a", b"yes").expect("put");
        t.put(b"on_call_b", b"yes").expect("put");

        // Write skew with plain gets: both read both, each takes one off
        // call; both commit, and nobody is on call. Snapshot isolation
        // allows it; the docs say so.
        let mut a = db.begin();
        let mut b = db.begin();
        assert!(a.get(&t, b"on_call_b").expect("get").is_some());
        assert!(b.get(&t, b"on_call_a").expect("get").is_some());
        a.delete(&t, b"on_call_a").expect("delete");
        b.delete(&t, b"on_call_b").expect("delete");
        a.commit().expect("commit");
        b.commit().expect("write skew is allowed with plain gets");

        // With get_for_update the second conflicts.
        t.put(b"on_call_a", b"yes").expect("put");
        t.put(b"on_call_b", b"yes").expect("put");
        let mut a = db.begin();
        let mut b = db.begin();
        assert!(a.get_for_update(&t, b"on_call_b").expect("get").is_some());
        assert!(b.get_for_update(&t, b"on_call_a").expect("get").is_some());
        a.delete(&t, b"on_call_a").expect("delete");
        b.delete(&t, b"on_call_b").expect("delete");
        a.commit().expect("commit");
        let e = b.commit().expect_err("b read on_call_a for update");
        assert!(is_conflict_on(&e, "t", b"on_call_a"), "{kind}: {e}");

        // A key read for update and written by nobody: no conflict.
        let mut c = db.begin();
        c.get_for_update(&t, b"absent").expect("get");
        c.put(&t, b"x", b"1").expect("put");
        c.commit().expect("commit");

        // A transaction that only reads commits at once.
        let mut r = db.begin();
        r.get_for_update(&t, b"x").expect("get");
        t.put(b"x", b"2").expect("put");
        r.commit().expect("nothing written: nothing refused");
    }
}

#[test]
fn invalid_calls_are_refused_at_the_call() {
    let dir = tempfile::tempdir().expect("tempdir");
    let other_dir = tempfile::tempdir().expect("tempdir");
    let db = open(dir.path());
    let other = open(other_dir.path());
    let b = db.create_table("b", TableOptions::btree()).expect("create");
    let elsewhere = other
        .create_table("x", TableOptions::lsm())
        .expect("create");
    let mut tx = db.begin();
    let too_long = vec![b'k'; b.options().max_key_len() + 1];
    assert!(matches!(
        tx.put(&b, &too_long, b"v"),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        tx.get(&b, &too_long),
        Err(Error::InvalidArgument(_))
    ));
    let huge = vec![0u8; spinney::limits::VALUE_BYTES_MAX + 1];
    assert!(matches!(
        tx.put(&b, b"k", &huge),
        Err(Error::InvalidArgument(_))
    ));
    let e = tx
        .put(&elsewhere, b"k", b"v")
        .expect_err("another database's table");
    assert!(e.to_string().contains("another database"), "{e}");
    assert!(tx.iter(&elsewhere).is_err());
    assert!(tx.is_empty(), "nothing refused was kept");

    let dropped = db
        .create_table("gone", TableOptions::lsm())
        .expect("create");
    tx.put(&dropped, b"k", b"v").expect("put");
    db.drop_table("gone").expect("drop");
    assert!(matches!(tx.get(&dropped, b"k"), Err(Error::NoSuchTable(_))));
    let e = tx.commit().expect_err("a dropped table");
    assert!(matches!(e, Error::NoSuchTable(_)), "{e}");

    let mut tx = db.begin();
    tx.put(&b, b"k", b"v").expect("put");
    db.close().expect("close");
    assert!(matches!(tx.commit(), Err(Error::Closed)));
    drop(other);
}

#[test]
fn transact_retries_on_conflict_and_returns_other_errors_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = open(dir.path());
    let t = db.create_table("t", TableOptions::lsm()).expect("create");
    t.put(b"n", b"0").expect("put");
    let mut runs = 0;
    let value = db
        .transact(|tx| {
            runs += 1;
            let n: u32 = String::from_utf8_lossy(&tx.get_for_update(&t, b"n")?.unwrap_or_default())
                .parse()
                .unwrap_or(0);
            if runs == 1 {
                // Another writer gets in before this attempt commits.
                t.put(b"n", b"10")?;
            }
            tx.put(&t, b"n", (n + 1).to_string().as_bytes())?;
            Ok(n + 1)
        })
        .expect("transact");
    assert_eq!(
        runs, 2,
        "the first attempt conflicted, the second committed"
    );
    assert_eq!(value, 11);
    assert_eq!(t.get(b"n").expect("get"), Some(b"11".to_vec()));

    let mut runs = 0;
    let e = db
        .transact(|tx| -> spinney::Result<()> {
            runs += 1;
            tx.put(&t, b"n", b"never")?;
            Err(Error::InvalidArgument("the body gave up".into()))
        })
        .expect_err("the body's error");
    assert_eq!(runs, 1);
    assert!(e.to_string().contains("gave up"));
    assert_eq!(t.get(b"n").expect("get"), Some(b"11".to_vec()));
}

/// A model of interleaved transactions: the committed state with, per key,
/// the count of commits when it was last written; each open transaction
/// with the count it began at, its reads' state, its writes and its keys
/// read for update.
struct ModelTx {
    tx: spinney::Transaction,
    began: u64,
    seen: BTreeMap<Vec<u8>, Vec<u8>>,
    writes: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    for_update: BTreeSet<Vec<u8>>,
    /// Ranges deleted, `[start, end)`, in order.
    ranges: Vec<(Vec<u8>, Vec<u8>)>,
}

impl ModelTx {
    /// What the transaction reads for `k`: its own write, else nothing if
    /// one of its ranges covers it, else its snapshot's.
    fn own(&self, k: &[u8]) -> Option<Vec<u8>> {
        match self.writes.get(k) {
            Some(w) => w.clone(),
            None if self
                .ranges
                .iter()
                .any(|(a, b)| k >= a.as_slice() && k < b.as_slice()) =>
            {
                None
            }
            None => self.seen.get(k).cloned(),
        }
    }
}

/// The model's keys: what `random_interleaved_transactions_match_a_model`
/// writes.
fn model_key(i: u32) -> Vec<u8> {
    format!("k{i:02}").into_bytes()
}

/// A range delete in the model: the keys of `state` in `[a, b)` go, and
/// each key it writes is stamped `commit`: on an LSM table every key of the
/// range (one tombstone over all of them), on a B-tree the keys it deletes
/// (a tombstone each).
fn model_range_delete(
    state: &mut BTreeMap<Vec<u8>, Vec<u8>>,
    written_at: &mut BTreeMap<Vec<u8>, u64>,
    lsm: bool,
    (a, b): (&[u8], &[u8]),
    commit: u64,
) {
    for i in 0..40 {
        let k = model_key(i);
        // (The removal happens for every key in the range.)
        if k.as_slice() >= a && k.as_slice() < b && (state.remove(&k).is_some() || lsm) {
            written_at.insert(k, commit);
        }
    }
}

#[test]
fn random_interleaved_transactions_match_a_model() {
    for (kind, options) in kinds() {
        for seed in 0..4u64 {
            let dir = tempfile::tempdir().expect("tempdir");
            let db = open(dir.path());
            let t = db.create_table("t", options.clone()).expect("create");
            let mut rng = StdRng::seed_from_u64(seed);
            let mut state: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
            let mut written_at: BTreeMap<Vec<u8>, u64> = BTreeMap::new();
            let mut commits = 0u64;
            let mut open_txs: Vec<ModelTx> = Vec::new();
            let (mut ok, mut refused) = (0, 0);
            let key = |rng: &mut StdRng| model_key(rng.gen_range(0..40));
            let range = |rng: &mut StdRng| {
                let a = rng.gen_range(0..39);
                (model_key(a), model_key(a + rng.gen_range(1..6).min(40 - a)))
            };
            let lsm = options.kind == spinney::TableKind::Lsm;
            for step in 0..3_000 {
                let ctx = format!("{kind} seed {seed} step {step}");
                match rng.gen_range(0..100) {
                    0..8 if open_txs.len() < 6 => open_txs.push(ModelTx {
                        tx: db.begin(),
                        began: commits,
                        seen: state.clone(),
                        writes: BTreeMap::new(),
                        for_update: BTreeSet::new(),
                        ranges: Vec::new(),
                    }),
                    8..10 => {
                        // A range delete outside any transaction.
                        let (a, b) = range(&mut rng);
                        t.delete_range(a.clone()..b.clone()).expect("delete range");
                        commits += 1;
                        model_range_delete(&mut state, &mut written_at, lsm, (&a, &b), commits);
                        for i in 0..40 {
                            let k = model_key(i);
                            let got = t.get(&k).expect("get");
                            assert_eq!(
                                got,
                                state.get(&k).cloned(),
                                "{kind} seed {seed} step {step}"
                            );
                        }
                    }
                    10..14 => {
                        // A write outside any transaction.
                        let k = key(&mut rng);
                        if rng.gen_bool(0.2) {
                            t.delete(&k).expect("delete");
                            state.remove(&k);
                        } else {
                            let v = format!("out{step}").into_bytes();
                            t.put(&k, &v).expect("put");
                            state.insert(k.clone(), v);
                        }
                        commits += 1;
                        written_at.insert(k, commits);
                    }
                    14..16 => {
                        if rng.gen_bool(0.5) {
                            t.flush().expect("flush");
                        } else {
                            t.compact_all().expect("compact");
                        }
                    }
                    _ if open_txs.is_empty() => {}
                    r => {
                        let i = rng.gen_range(0..open_txs.len());
                        let m = &mut open_txs[i];
                        let k = key(&mut rng);
                        let own = |m: &ModelTx, k: &[u8]| m.own(k);
                        match r {
                            16..19 => {
                                let (a, b) = range(&mut rng);
                                m.tx.delete_range(&t, a.clone()..b.clone())
                                    .expect("delete range");
                                m.writes.retain(|k, _| !(k >= &a && k < &b));
                                m.ranges.push((a, b));
                            }
                            19..40 => {
                                let v = format!("tx{step}").into_bytes();
                                m.tx.put(&t, &k, &v).expect("put");
                                m.writes.insert(k, Some(v));
                            }
                            40..48 => {
                                m.tx.delete(&t, &k).expect("delete");
                                m.writes.insert(k, None);
                            }
                            48..62 => {
                                let got = m.tx.get(&t, &k).expect("get");
                                assert_eq!(got, own(m, &k), "{ctx}: get");
                            }
                            62..70 => {
                                let got = m.tx.get_for_update(&t, &k).expect("get");
                                assert_eq!(got, own(m, &k), "{ctx}: get_for_update");
                                m.for_update.insert(k);
                            }
                            70..78 => {
                                let mut want: BTreeMap<Vec<u8>, Vec<u8>> = m.seen.clone();
                                want.retain(|k, _| !m.ranges.iter().any(|(a, b)| k >= a && k < b));
                                for (k, w) in &m.writes {
                                    match w {
                                        Some(v) => want.insert(k.clone(), v.clone()),
                                        None => want.remove(k),
                                    };
                                }
                                let lo = key(&mut rng);
                                let want: Vec<_> = want
                                    .range(lo.clone()..)
                                    .map(|(k, v)| (k.clone(), v.clone()))
                                    .collect();
                                let got = entries(m.tx.range(&t, lo.clone()..));
                                assert_eq!(got, want, "{ctx}: range from {lo:?}");
                                let mut back: Vec<_> =
                                    m.tx.range(&t, lo..)
                                        .expect("range")
                                        .rev()
                                        .collect::<spinney::Result<_>>()
                                        .expect("rev");
                                back.reverse();
                                assert_eq!(back, want, "{ctx}: range backward");
                            }
                            78..95 => {
                                let m = open_txs.swap_remove(i);
                                let newer =
                                    |k: &Vec<u8>| written_at.get(k).is_some_and(|&c| c > m.began);
                                let in_ranges = (0..40)
                                    .map(model_key)
                                    .filter(|k| m.ranges.iter().any(|(a, b)| k >= a && k < b));
                                let conflict = m.writes.keys().chain(&m.for_update).any(newer)
                                    || in_ranges.clone().any(|k| newer(&k));
                                let empty = m.writes.is_empty() && m.ranges.is_empty();
                                match m.tx.commit() {
                                    Ok(()) => {
                                        assert!(
                                            empty || !conflict,
                                            "{ctx}: committed over a conflict"
                                        );
                                        if !empty {
                                            commits += 1;
                                            for (a, b) in &m.ranges {
                                                model_range_delete(
                                                    &mut state,
                                                    &mut written_at,
                                                    lsm,
                                                    (a, b),
                                                    commits,
                                                );
                                            }
                                            for (k, w) in m.writes {
                                                match w {
                                                    Some(v) => state.insert(k.clone(), v),
                                                    None => state.remove(&k),
                                                };
                                                written_at.insert(k, commits);
                                            }
                                        }
                                        ok += 1;
                                    }
                                    Err(e) => {
                                        assert!(e.is_conflict(), "{ctx}: {e}");
                                        assert!(
                                            conflict && !empty,
                                            "{ctx}: refused without a conflict: {e}"
                                        );
                                        refused += 1;
                                    }
                                }
                            }
                            _ => {
                                let m = open_txs.swap_remove(i);
                                m.tx.rollback();
                            }
                        }
                    }
                }
            }
            let all: BTreeMap<Vec<u8>, Vec<u8>> = t
                .iter()
                .expect("iter")
                .collect::<spinney::Result<_>>()
                .expect("entries");
            assert_eq!(all, state, "{kind} seed {seed}: the table at the end");
            assert!(
                ok > 50 && refused > 5,
                "{kind} seed {seed}: {ok} commits, {refused} conflicts"
            );
        }
    }
}

const ACCOUNTS: u32 = 24;
const OPENING_BALANCE: u64 = 1_000;

fn account(i: u32) -> Vec<u8> {
    format!("acct{i:03}").into_bytes()
}

/// Accounts 0..12 live in the B-tree table, 12..24 in the LSM table.
fn account_table(tables: &[Table; 2], i: u32) -> &Table {
    &tables[(i >= ACCOUNTS / 2) as usize]
}

fn open_bank(dir: &Path, options: Options) -> (Db, [Table; 2], Table) {
    let db = Db::open(dir, options).expect("open");
    let btree = db
        .open_table(
            "accounts_b",
            TableOptions {
                page_size: 4 << 10,
                ..TableOptions::btree()
            },
        )
        .expect("table");
    let lsm = db
        .open_table(
            "accounts_l",
            TableOptions {
                write_buffer_size: 64 << 10,
                ..TableOptions::lsm()
            },
        )
        .expect("table");
    let log = db
        .open_table("transfers", TableOptions::lsm())
        .expect("table");
    (db, [btree, lsm], log)
}

fn balance(v: Option<Vec<u8>>) -> u64 {
    v.map(|v| u64::from_le_bytes(v.try_into().expect("8-byte balance")))
        .expect("every account exists")
}

fn open_accounts(db: &Db, tables: &[Table; 2]) {
    let mut tx = db.begin();
    for i in 0..ACCOUNTS {
        tx.put(
            account_table(tables, i),
            &account(i),
            &OPENING_BALANCE.to_le_bytes(),
        )
        .expect("put");
    }
    tx.commit().expect("open the accounts");
}

/// Moves a random amount between two random accounts, and records it in
/// the transfers table under `id`. Returns whether money moved.
fn transfer(db: &Db, tables: &[Table; 2], log: &Table, rng: &mut StdRng, id: u64) -> bool {
    let from = rng.gen_range(0..ACCOUNTS);
    let to = (from + rng.gen_range(1..ACCOUNTS)) % ACCOUNTS;
    let amount = rng.gen_range(1..50u64);
    db.transact(|tx| {
        let (ft, tt) = (account_table(tables, from), account_table(tables, to));
        let have = balance(tx.get(ft, &account(from))?);
        if have < amount {
            return Ok(false);
        }
        let theirs = balance(tx.get(tt, &account(to))?);
        tx.put(ft, &account(from), &(have - amount).to_le_bytes())?;
        tx.put(tt, &account(to), &(theirs + amount).to_le_bytes())?;
        let record = [from.to_le_bytes(), to.to_le_bytes()].concat();
        let record = [record, amount.to_le_bytes().to_vec()].concat();
        tx.put(log, &id.to_be_bytes(), &record)?;
        Ok(true)
    })
    .expect("transfer")
}

/// Every balance at one snapshot, and their total.
fn balances(db: &Db, tables: &[Table; 2]) -> (Vec<u64>, u64) {
    let snap = db.snapshot();
    let mut all = Vec::new();
    for t in tables {
        for entry in snap.iter(t).expect("iter") {
            let (_, v) = entry.expect("entry");
            all.push(balance(Some(v)));
        }
    }
    assert_eq!(
        all.len(),
        ACCOUNTS as usize,
        "every account, at one snapshot"
    );
    let total = all.iter().sum();
    (all, total)
}

/// The balances the transfers table says, from the opening balances (in
/// the order of ids, which is not the order of commits: a balance may dip
/// below zero on the way).
fn replay(log: &Table) -> Vec<u64> {
    let mut b = vec![OPENING_BALANCE as i64; ACCOUNTS as usize];
    for entry in log.iter().expect("iter") {
        let (_, v) = entry.expect("entry");
        let from = u32::from_le_bytes(v[0..4].try_into().expect("from")) as usize;
        let to = u32::from_le_bytes(v[4..8].try_into().expect("to")) as usize;
        let amount = i64::from_le_bytes(v[8..16].try_into().expect("amount"));
        b[from] -= amount;
        b[to] += amount;
    }
    b.into_iter()
        .map(|x| u64::try_from(x).expect("a balance below zero at the end"))
        .collect()
}

#[test]
fn concurrent_transfers_never_change_the_total_seen_at_any_snapshot() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, tables, log) = open_bank(
        dir.path(),
        Options {
            background_threads: 1,
            ..Options::default()
        },
    );
    open_accounts(&db, &tables);
    let total = OPENING_BALANCE * u64::from(ACCOUNTS);
    let db = Arc::new(db);
    let next_id = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mut movers = Vec::new();
    for seed in 0..3u64 {
        let (db, tables, log, next_id) = (
            Arc::clone(&db),
            tables.clone(),
            log.clone(),
            Arc::clone(&next_id),
        );
        movers.push(std::thread::spawn(move || {
            let mut rng = StdRng::seed_from_u64(seed);
            let mut moved = 0;
            for _ in 0..1_500 {
                let id = next_id.fetch_add(1, Ordering::Relaxed);
                moved += u32::from(transfer(&db, &tables, &log, &mut rng, id));
            }
            moved
        }));
    }
    let reader = {
        let (db, tables, stop) = (Arc::clone(&db), tables.clone(), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut looks = 0;
            while !stop.load(Ordering::Relaxed) {
                let (_, seen) = balances(&db, &tables);
                assert_eq!(seen, total, "a snapshot saw money made or lost");
                looks += 1;
            }
            looks
        })
    };
    let moved: u32 = movers.into_iter().map(|m| m.join().expect("mover")).sum();
    stop.store(true, Ordering::Relaxed);
    let looks = reader.join().expect("reader");
    let (after, seen) = balances(&db, &tables);
    assert_eq!(seen, total);
    assert_eq!(
        after,
        replay(&log),
        "the balances are the transfers recorded"
    );
    assert_eq!(
        log.iter().expect("iter").count(),
        moved as usize,
        "one record per transfer that moved money"
    );
    assert!(moved > 1_000, "{moved} transfers moved money");
    assert!(looks > 0);
}

/// The child's database directory; set only in the child.
const CHILD_DIR: &str = "SPINNEY_TX_KILLED_CHILD_DIR";

/// The child: three threads move money until the process aborts (a kill:
/// no destructor, no file closed) after a while; each acknowledged
/// transfer's id is printed after its commit returns.
#[test]
#[ignore = "a child process: the test beside it starts it, with --ignored"]
fn child_moves_money_until_killed() {
    let dir = std::env::var_os(CHILD_DIR)
        .expect("a child process only: run the test that starts it, not this one");
    let (db, tables, log) = open_bank(
        Path::new(&dir),
        Options {
            background_threads: 1,
            ..Options::default()
        },
    );
    open_accounts(&db, &tables);
    let db = Arc::new(db);
    let next_id = Arc::new(AtomicU64::new(0));
    for seed in 0..3u64 {
        let (db, tables, log, next_id) = (
            Arc::clone(&db),
            tables.clone(),
            log.clone(),
            Arc::clone(&next_id),
        );
        std::thread::spawn(move || {
            let mut rng = StdRng::seed_from_u64(seed);
            loop {
                let id = next_id.fetch_add(1, Ordering::Relaxed);
                if transfer(&db, &tables, &log, &mut rng, id) {
                    println!("moved {id}");
                }
            }
        });
    }
    std::thread::sleep(Duration::from_millis(400));
    std::process::abort();
}

#[test]
fn a_killed_process_leaves_every_acknowledged_transfer_whole_and_none_in_part() {
    if std::env::var_os(CHILD_DIR).is_some() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new(std::env::current_exe().expect("current_exe"))
        .args([
            "--exact",
            "child_moves_money_until_killed",
            "--nocapture",
            "--ignored",
        ])
        .env(CHILD_DIR, dir.path())
        .output()
        .expect("run the child");
    assert!(!out.status.success(), "the child did not abort");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let acknowledged: Vec<u64> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("moved ")?.trim().parse().ok())
        .collect();
    assert!(
        acknowledged.len() > 100,
        "the child moved little: {}",
        acknowledged.len()
    );

    let (db, tables, log) = open_bank(dir.path(), Options::default());
    let (after, total) = balances(&db, &tables);
    assert_eq!(
        total,
        OPENING_BALANCE * u64::from(ACCOUNTS),
        "money made or lost"
    );
    // Each transfer is whole: the balances are what the recorded transfers
    // make of the opening ones (a transfer in part would break this).
    assert_eq!(after, replay(&log));
    // With the default durability a killed process loses nothing its
    // commits acknowledged (the log's writes were handed to the system).
    for id in &acknowledged {
        assert!(
            log.get(&id.to_be_bytes()).expect("get").is_some(),
            "acknowledged transfer {id} is gone"
        );
    }
}

/// Runs transfers one after another (ids 0, 1, ...) until one fails;
/// returns the ids acknowledged.
fn transfer_until_failure(db: &Db, tables: &[Table; 2], log: &Table, seed: u64) -> Vec<u64> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut acknowledged = Vec::new();
    for id in 0..2_000u64 {
        let from = rng.gen_range(0..ACCOUNTS);
        let to = (from + rng.gen_range(1..ACCOUNTS)) % ACCOUNTS;
        let amount = rng.gen_range(1..50u64);
        let result = db.transact(|tx| {
            let (ft, tt) = (account_table(tables, from), account_table(tables, to));
            let have = balance(tx.get(ft, &account(from))?);
            let theirs = balance(tx.get(tt, &account(to))?);
            let amount = amount.min(have);
            tx.put(ft, &account(from), &(have - amount).to_le_bytes())?;
            tx.put(tt, &account(to), &(theirs + amount).to_le_bytes())?;
            let record = [from.to_le_bytes(), to.to_le_bytes()].concat();
            tx.put(
                log,
                &id.to_be_bytes(),
                &[record, amount.to_le_bytes().to_vec()].concat(),
            )
        });
        match result {
            Ok(()) => acknowledged.push(id),
            Err(_) => break,
        }
    }
    acknowledged
}

#[test]
fn power_lost_while_moving_money_leaves_whole_transfers_and_keeps_what_full_promised() {
    // Goal: a transaction is one log record: after power is lost at any
    // point of a run of transfers (with flushes, compactions and
    // checkpoints running), each transfer is there whole or not at all;
    // with `Full` durability every acknowledged one is there, with `Off` a
    // prefix of them. Method: `FaultFs`, a crash injected at spread
    // mutating operations, each of the three ways a power loss treats
    // unsynced writes.
    use spinney::fs::{FaultFs, FaultKind, PendingWrites};
    use spinney::Durability;
    const DB: &str = "/db";
    for durability in [Durability::Full, Durability::Off] {
        let options = |fs: &Arc<FaultFs>| Options {
            durability,
            fs: fs.clone(),
            background_threads: 1,
            checkpoint_wal_bytes: 32 << 10,
            wal_segment_size: 64 << 10,
            ..Options::default()
        };
        // The operations a fault-free run makes, to spread the crashes.
        let span = {
            let fs = Arc::new(FaultFs::new());
            let (db, tables, log) = open_bank(Path::new(DB), options(&fs));
            open_accounts(&db, &tables);
            let start = fs.mutating_ops();
            let acked = transfer_until_failure(&db, &tables, &log, 1);
            assert_eq!(acked.len(), 2_000);
            let span = fs.mutating_ops() - start;
            drop((tables, log));
            db.close().expect("close");
            span
        };
        for (n, k) in (1..=6u64).map(|i| (i, span * i / 7)).collect::<Vec<_>>() {
            for pending in [
                PendingWrites::Lost,
                PendingWrites::InOrder(n),
                PendingWrites::nth(2, n),
            ] {
                let ctx = format!("{durability:?}, crash at op {k} of {span}, {pending:?}");
                let fs = Arc::new(FaultFs::new());
                let (db, tables, log) = open_bank(Path::new(DB), options(&fs));
                open_accounts(&db, &tables);
                db.flush().expect("the opening balances made durable");
                fs.inject(k, FaultKind::Crash);
                let acked = transfer_until_failure(&db, &tables, &log, 1);
                assert!(acked.len() < 2_000, "{ctx}: the crash came");
                drop((tables, log));
                drop(db);
                fs.crash_with(pending);
                let (db, tables, log) = open_bank(Path::new(DB), options(&fs));
                let (after, total) = balances(&db, &tables);
                assert_eq!(total, OPENING_BALANCE * u64::from(ACCOUNTS), "{ctx}");
                assert_eq!(after, replay(&log), "{ctx}: a transfer in part");
                let present: Vec<u64> = log
                    .iter()
                    .expect("iter")
                    .map(|e| {
                        let (k, _) = e.expect("entry");
                        u64::from_be_bytes(k.try_into().expect("an id"))
                    })
                    .collect();
                // Transfers commit in id order: what is there is a prefix.
                let prefix: Vec<u64> = (0..present.len() as u64).collect();
                assert_eq!(present, prefix, "{ctx}: not a prefix of the transfers");
                if durability == Durability::Full {
                    assert!(
                        present.len() >= acked.len(),
                        "{ctx}: {} acknowledged, {} there",
                        acked.len(),
                        present.len()
                    );
                }
                // At most the transfer the crash interrupted beyond them.
                assert!(present.len() <= acked.len() + 1, "{ctx}");
            }
        }
    }
}
