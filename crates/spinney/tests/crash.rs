//! Crash tests on the fault-injecting file system.
//!
//! Goal: whatever mutating file operation the machine dies at, the database
//! reopens to a state the durability level promises: with `Full`, every
//! acknowledged commit and possibly the one in flight; with `Normal` and
//! `Off`, some prefix of the commits tried (never less than what an explicit
//! flush made durable). A batch is all there or not at all.
//!
//! Method: a seeded plan of batches over two tables with small write buffers
//! (so background flushes and compactions run) is executed once without a
//! fault to count its mutating operations; then again and again with a
//! `FaultKind::Crash` injected at points spread over that count. After the
//! first error the `Db` is dropped, `FaultFs::crash` rolls the files back to
//! what was synced (with or without torn tails), and the reopened state is
//! compared against a `BTreeMap` model after each prefix of the plan.

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use spinney::fs::{FaultFs, FaultKind};
use spinney::{Db, Durability, Error, Options, Table, TableOptions, WriteBatch};

const DB: &str = "/db";
const TABLES: [&str; 2] = ["alpha", "beta"];

type State = BTreeMap<Vec<u8>, Vec<u8>>;

#[derive(Debug, Clone)]
enum Op {
    Put {
        table: usize,
        key: Vec<u8>,
        value: Vec<u8>,
    },
    Delete {
        table: usize,
        key: Vec<u8>,
    },
}

#[derive(Debug, Clone)]
enum Step {
    /// A batch committed with `Db::write` (one op or many, over both tables).
    Batch(Vec<Op>),
    /// A single put through `Table::put`; a batch of one in the model.
    Single(Op),
    /// `Db::flush`.
    Flush,
}

fn table_options() -> TableOptions {
    TableOptions {
        write_buffer_size: 64 << 10,
        ..TableOptions::default()
    }
}

fn options(fs: &Arc<FaultFs>, durability: Durability) -> Options {
    Options {
        durability,
        fs: fs.clone(),
        ..Options::default()
    }
}

fn key(rng: &mut StdRng) -> Vec<u8> {
    format!("key{:05}", rng.gen_range(0..1500u32)).into_bytes()
}

fn random_op(rng: &mut StdRng) -> Op {
    let table = rng.gen_range(0..TABLES.len());
    let key = key(rng);
    if rng.gen_bool(0.15) {
        Op::Delete { table, key }
    } else {
        let len = rng.gen_range(20..300);
        let fill = rng.gen::<u8>();
        let mut value = vec![fill; len];
        // A value names its writer's step, so a stale value cannot pass for
        // a newer one.
        value.extend_from_slice(&rng.gen::<u64>().to_le_bytes());
        Op::Put { table, key, value }
    }
}

/// The plan of one workload, the same for every crash point of a seed.
fn plan(seed: u64, steps: usize) -> Vec<Step> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..steps)
        .map(|_| match rng.gen_range(0..100) {
            0..=3 => Step::Flush,
            4..=19 => Step::Single(random_op(&mut rng)),
            _ => {
                let n = rng.gen_range(1..=24);
                Step::Batch((0..n).map(|_| random_op(&mut rng)).collect())
            }
        })
        .collect()
}

fn apply(model: &mut [State; 2], op: &Op) {
    match op {
        Op::Put { table, key, value } => {
            model[*table].insert(key.clone(), value.clone());
        }
        Op::Delete { table, key } => {
            model[*table].remove(key);
        }
    }
}

/// The batches of a plan (flushes left out), as the model sees them.
fn batches(plan: &[Step]) -> Vec<Vec<Op>> {
    plan.iter()
        .filter_map(|s| match s {
            Step::Batch(ops) => Some(ops.clone()),
            Step::Single(op) => Some(vec![op.clone()]),
            Step::Flush => None,
        })
        .collect()
}

/// What a run of the workload got done before the machine died.
#[derive(Debug, Default)]
struct Outcome {
    /// Batches whose commit was tried (acknowledged or not).
    attempted: usize,
    /// Batches whose commit returned Ok.
    acknowledged: usize,
    /// Batches acknowledged before the last `Db::flush` that returned Ok:
    /// they are in synced SSTs, whatever the durability.
    flushed: usize,
    /// The first error, if any.
    error: Option<String>,
}

fn open_tables(db: &Db) -> [Table; 2] {
    TABLES.map(|name| db.open_table(name, table_options()).expect("open table"))
}

/// Runs `plan` until the first error.
fn run(db: &Db, tables: &[Table; 2], plan: &[Step]) -> Outcome {
    let mut out = Outcome::default();
    for step in plan {
        let result = match step {
            Step::Batch(ops) => {
                let mut batch = WriteBatch::new();
                for op in ops {
                    match op {
                        Op::Put { table, key, value } => batch.put(&tables[*table], key, value),
                        Op::Delete { table, key } => batch.delete(&tables[*table], key),
                    }
                }
                out.attempted += 1;
                db.write(batch).map(|()| out.acknowledged += 1)
            }
            Step::Single(op) => {
                out.attempted += 1;
                match op {
                    Op::Put { table, key, value } => tables[*table].put(key, value),
                    Op::Delete { table, key } => tables[*table].delete(key),
                }
                .map(|()| out.acknowledged += 1)
            }
            Step::Flush => db.flush().map(|()| out.flushed = out.acknowledged),
        };
        if let Err(e) = result {
            out.error = Some(e.to_string());
            break;
        }
    }
    out
}

/// Drops `db` on another thread and fails the test if that takes more than
/// a few seconds: dropping a database whose file system died must not hang.
fn drop_within_seconds(db: Db, tables: [Table; 2], what: &str) {
    let (done_tx, done_rx) = mpsc::channel();
    std::thread::spawn(move || {
        drop(tables);
        drop(db);
        let _ = done_tx.send(());
    });
    match done_rx.recv_timeout(Duration::from_secs(20)) {
        Ok(()) => {}
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what}: dropping the Db hung"),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("{what}: dropping the Db panicked"),
    }
}

fn read_table(table: &Table) -> spinney::Result<State> {
    table.iter()?.collect()
}

fn read_all(db: &Db, ctx: &str) -> [State; 2] {
    TABLES.map(|name| {
        let table = db
            .table(name)
            .unwrap_or_else(|e| panic!("{ctx}: table {name} after recovery: {e}"));
        read_table(&table)
            .unwrap_or_else(|e| panic!("{ctx}: full scan of {name} after recovery: {e}"))
    })
}

/// The prefix lengths `n` in `lo..=hi` whose model state equals `state`.
fn matching_prefixes(batches: &[Vec<Op>], state: &[State; 2], lo: usize, hi: usize) -> Vec<usize> {
    let mut model: [State; 2] = Default::default();
    let mut found = Vec::new();
    for n in 0..=hi {
        if n >= lo && model == *state {
            found.push(n);
        }
        if let Some(batch) = batches.get(n) {
            for op in batch {
                apply(&mut model, op);
            }
        }
    }
    found
}

/// The `Full` promise: every acknowledged batch and perhaps the one in
/// flight. `Normal` and `Off`: a prefix of the attempted batches, no shorter
/// than what an explicit flush made durable.
fn allowed_prefixes(durability: Durability, out: &Outcome) -> (usize, usize) {
    match durability {
        Durability::Full => (out.acknowledged, out.attempted),
        Durability::Normal | Durability::Off => (out.flushed, out.attempted),
    }
}

struct CrashCase {
    seed: u64,
    durability: Durability,
    steps: usize,
    crash_points: usize,
}

/// Runs `case.crash_points` crash points of one seeded plan; returns how
/// many crash points ran.
fn crash_at_spread_points(case: &CrashCase) -> usize {
    let plan = plan(case.seed, case.steps);
    let batches = batches(&plan);

    // A dry run, to learn how many mutating operations the workload makes.
    let span = {
        let fs = FaultFs::new();
        let db = Db::open(DB, options(&fs, case.durability)).expect("open");
        let tables = open_tables(&db);
        let start = fs.mutating_ops();
        let out = run(&db, &tables, &plan);
        assert!(out.error.is_none(), "dry run failed: {out:?}");
        let span = fs.mutating_ops() - start;
        let stats = db.stats();
        assert!(stats.flushes > 0, "the workload never flushed: {stats:?}");
        drop_within_seconds(db, tables, "dry run");
        span
    };
    assert!(span > case.crash_points as u64, "only {span} operations");

    let mut rng = StdRng::seed_from_u64(case.seed ^ 0x5eed);
    let mut died = 0;
    for point in 0..case.crash_points {
        // Spread over the whole run, jittered so that seeds cover different ops.
        let base = span * point as u64 / case.crash_points as u64;
        let k = base + rng.gen_range(0..(span / case.crash_points as u64).max(1));
        let tear = if point % 2 == 0 {
            Some(rng.gen())
        } else {
            None
        };
        let ctx = format!(
            "seed {} {:?} crash after {k} of {span} ops, tear {tear:?}",
            case.seed, case.durability
        );

        let fs = FaultFs::new();
        let opts = options(&fs, case.durability);
        let db = Db::open(DB, opts.clone()).expect("open");
        let tables = open_tables(&db);
        fs.inject(k, FaultKind::Crash);
        let out = run(&db, &tables, &plan);
        died += usize::from(out.error.is_some());
        drop_within_seconds(db, tables, &ctx);
        fs.crash(tear);

        let db = Db::open(DB, opts.clone()).unwrap_or_else(|e| panic!("{ctx}: reopen: {e}"));
        let state = read_all(&db, &ctx);
        let (lo, hi) = allowed_prefixes(case.durability, &out);
        let found = matching_prefixes(&batches, &state, lo, hi);
        if found.is_empty() {
            let any = matching_prefixes(&batches, &state, 0, batches.len());
            panic!(
                "{ctx}: recovered state is no allowed prefix ({lo}..={hi}); \
                 it matches prefixes {any:?} of all; outcome {out:?}; \
                 sizes {} and {}",
                state[0].len(),
                state[1].len()
            );
        }
        db.verify()
            .unwrap_or_else(|e| panic!("{ctx}: verify after recovery: {e}"));
        db.close().unwrap_or_else(|e| panic!("{ctx}: close: {e}"));

        let db = Db::open(DB, opts).unwrap_or_else(|e| panic!("{ctx}: second reopen: {e}"));
        assert!(read_all(&db, &ctx) == state, "{ctx}: second reopen differs");
        db.close().unwrap_or_else(|e| panic!("{ctx}: close: {e}"));
    }
    // A crash point past the workload's last operation (the background
    // worker makes the count vary) lets it finish; most must not.
    assert!(
        died * 4 >= case.crash_points * 3,
        "seed {}: only {died} of {} runs met their crash",
        case.seed,
        case.crash_points
    );
    case.crash_points
}

#[test]
fn full_durability_keeps_every_acknowledged_batch_across_crashes() {
    let mut points = 0;
    for seed in [1, 2, 3] {
        points += crash_at_spread_points(&CrashCase {
            seed,
            durability: Durability::Full,
            steps: 400,
            crash_points: 100,
        });
    }
    assert!(points >= 300);
}

#[test]
fn normal_durability_recovers_a_prefix_across_crashes() {
    let mut points = 0;
    for seed in [4, 5, 6] {
        points += crash_at_spread_points(&CrashCase {
            seed,
            durability: Durability::Normal,
            steps: 400,
            crash_points: 80,
        });
    }
    assert!(points >= 240);
}

#[test]
fn off_durability_recovers_a_prefix_across_crashes() {
    let mut points = 0;
    for seed in [7, 8, 9] {
        points += crash_at_spread_points(&CrashCase {
            seed,
            durability: Durability::Off,
            steps: 400,
            crash_points: 60,
        });
    }
    assert!(points >= 180);
}

/// Writes `batches` of `Full` commits through `tables`; the model gets each
/// acknowledged one.
fn write_acknowledged(db: &Db, tables: &[Table; 2], model: &mut [State; 2], batches: &[Vec<Op>]) {
    for ops in batches {
        let mut batch = WriteBatch::new();
        for op in ops {
            match op {
                Op::Put { table, key, value } => batch.put(&tables[*table], key, value),
                Op::Delete { table, key } => batch.delete(&tables[*table], key),
            }
        }
        db.write(batch).expect("write before the fault");
        for op in ops {
            apply(model, op);
        }
    }
}

fn some_batches(seed: u64, count: usize) -> Vec<Vec<Op>> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..count)
        .map(|_| {
            let n = rng.gen_range(1..=10);
            (0..n).map(|_| random_op(&mut rng)).collect()
        })
        .collect()
}

/// Counts the mutating operations `f` makes on a fresh database holding the
/// batches of `seed`.
fn ops_of(seed: u64, count: usize, f: impl Fn(&Db, &[Table; 2]) -> spinney::Result<()>) -> u64 {
    let fs = FaultFs::new();
    let db = Db::open(DB, options(&fs, Durability::Full)).expect("open");
    let tables = open_tables(&db);
    write_acknowledged(
        &db,
        &tables,
        &mut Default::default(),
        &some_batches(seed, count),
    );
    let start = fs.mutating_ops();
    f(&db, &tables).expect("dry run");
    let ops = fs.mutating_ops() - start;
    drop_within_seconds(db, tables, "dry run");
    ops
}

#[test]
fn crash_at_every_operation_of_a_flush_loses_no_acknowledged_batch() {
    // Goal: a flush that dies at any of its file operations (SST writes,
    // directory sync, log sync, manifest append) leaves every acknowledged
    // Full commit recoverable, once, with nothing half-installed.
    // Method: a fixed set of batches, then `Db::flush` with a crash at each
    // of its operations in turn, alternating torn and clean crashes.
    // Few enough batches that no memtable fills: the flush is the only
    // writer of SSTs, and its operations are the same from run to run.
    let batches = some_batches(11, 50);
    let span = ops_of(11, 50, |db, _| db.flush());
    assert!(
        span >= 4,
        "a flush of two tables took only {span} operations"
    );
    for k in 0..span {
        let ctx = format!("flush crash after {k} of {span} ops");
        let fs = FaultFs::new();
        let opts = options(&fs, Durability::Full);
        let db = Db::open(DB, opts.clone()).expect("open");
        let tables = open_tables(&db);
        let mut model: [State; 2] = Default::default();
        write_acknowledged(&db, &tables, &mut model, &batches);
        fs.inject(k, FaultKind::Crash);
        // The background worker may meet the crash first (see below); either
        // way the machine is down, so the flush fails.
        assert!(db.flush().is_err(), "{ctx}: flush succeeded");
        drop_within_seconds(db, tables, &ctx);
        fs.crash(if k % 2 == 0 { Some(k) } else { None });

        let db = Db::open(DB, opts.clone()).unwrap_or_else(|e| panic!("{ctx}: reopen: {e}"));
        assert!(
            read_all(&db, &ctx) == model,
            "{ctx}: recovered state differs"
        );
        db.verify().unwrap_or_else(|e| panic!("{ctx}: verify: {e}"));
        db.close().unwrap_or_else(|e| panic!("{ctx}: close: {e}"));
        let db = Db::open(DB, opts).unwrap_or_else(|e| panic!("{ctx}: second reopen: {e}"));
        assert!(read_all(&db, &ctx) == model, "{ctx}: second reopen differs");
    }
}

#[test]
fn crash_at_every_operation_of_create_table_leaves_the_catalog_whole() {
    // Goal: a crash in `create_table` leaves the existing table and its data
    // untouched, and the new table either absent or present and empty;
    // either way the database takes the table and writes afterwards.
    let fs = FaultFs::new();
    let db = Db::open(DB, options(&fs, Durability::Full)).expect("open");
    let start = fs.mutating_ops();
    db.create_table("first", table_options()).expect("create");
    let span = fs.mutating_ops() - start;
    drop(db);
    assert!(span > 0);
    for k in 0..span {
        let ctx = format!("create_table crash after {k} of {span} ops");
        let fs = FaultFs::new();
        let opts = options(&fs, Durability::Full);
        let db = Db::open(DB, opts.clone()).expect("open");
        let first = db
            .create_table("first", table_options())
            .expect("create first");
        first.put(b"k", b"v").expect("put");
        fs.inject(k, FaultKind::Crash);
        assert!(db.create_table("second", table_options()).is_err(), "{ctx}");
        drop(first);
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            drop(db);
            let _ = tx.send(());
        });
        rx.recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("{ctx}: drop hung or panicked"));
        fs.crash(if k % 2 == 0 { Some(k) } else { None });

        let db = Db::open(DB, opts.clone()).unwrap_or_else(|e| panic!("{ctx}: reopen: {e}"));
        let first = db.table("first").expect("first survives");
        assert_eq!(first.get(b"k").expect("get"), Some(b"v".to_vec()), "{ctx}");
        let second = match db.table("second") {
            Ok(t) => {
                assert_eq!(read_table(&t).expect("scan"), State::new(), "{ctx}");
                t
            }
            Err(Error::NoSuchTable(_)) => db
                .create_table("second", table_options())
                .unwrap_or_else(|e| panic!("{ctx}: create after crash: {e}")),
            Err(e) => panic!("{ctx}: table lookup: {e}"),
        };
        second.put(b"x", b"y").expect("put after crash");
        db.verify().unwrap_or_else(|e| panic!("{ctx}: verify: {e}"));
        // Table handles keep the database (and its lock) alive.
        drop((first, second));
        db.close().expect("close");
        let db = Db::open(DB, opts).unwrap_or_else(|e| panic!("{ctx}: second reopen: {e}"));
        let second = db.table("second").expect("second");
        assert_eq!(second.get(b"x").expect("get"), Some(b"y".to_vec()), "{ctx}");
    }
}

#[test]
fn crash_at_every_operation_of_recovery_recovers_the_same_state() {
    // Goal: recovery writes SSTs, a new manifest and CURRENT; a crash at any
    // of those steps must leave the database the next open recovers to the
    // same state (open.rs's recovery-order argument).
    // Method: crash a workload, then crash the reopen at each of its
    // operations, then reopen for real and compare with the model.
    let batches = some_batches(12, 150);
    let build = |fs: &Arc<FaultFs>| -> [State; 2] {
        let db = Db::open(DB, options(fs, Durability::Full)).expect("open");
        let tables = open_tables(&db);
        let mut model: [State; 2] = Default::default();
        write_acknowledged(&db, &tables, &mut model, &batches);
        fs.inject(0, FaultKind::Crash);
        drop_within_seconds(db, tables, "build");
        fs.crash(None);
        model
    };
    let span = {
        let fs = FaultFs::new();
        build(&fs);
        let start = fs.mutating_ops();
        let db = Db::open(DB, options(&fs, Durability::Full)).expect("reopen");
        let span = fs.mutating_ops() - start;
        drop(db);
        span
    };
    assert!(span >= 5, "recovery took only {span} operations");
    for k in 0..span {
        let ctx = format!("recovery crash after {k} of {span} ops");
        let fs = FaultFs::new();
        let model = build(&fs);
        fs.inject(k, FaultKind::Crash);
        // A background flush before the crash changes how much recovery
        // has to do, so a late `k` may miss it: then the open succeeds.
        if let Ok(db) = Db::open(DB, options(&fs, Durability::Full)) {
            drop(db);
        }
        fs.crash(if k % 2 == 0 { Some(k) } else { None });
        let db = Db::open(DB, options(&fs, Durability::Full))
            .unwrap_or_else(|e| panic!("{ctx}: reopen: {e}"));
        assert!(
            read_all(&db, &ctx) == model,
            "{ctx}: recovered state differs"
        );
        db.verify().unwrap_or_else(|e| panic!("{ctx}: verify: {e}"));
    }
}

/// After an injected `kind` fault in a commit: the commit fails, the
/// database is read-only, reads still answer, and a reopen has every
/// acknowledged batch (and perhaps the failed one, whose bytes may have
/// reached the log).
fn io_error_in_commit(kind: FaultKind) {
    let before = some_batches(13, 60);
    let mut rng = StdRng::seed_from_u64(14);
    let failing: Vec<Op> = (0..5).map(|_| random_op(&mut rng)).collect();
    let commit_span = {
        let fs = FaultFs::new();
        let db = Db::open(DB, options(&fs, Durability::Full)).expect("open");
        let tables = open_tables(&db);
        write_acknowledged(&db, &tables, &mut Default::default(), &before);
        let start = fs.mutating_ops();
        write_acknowledged(
            &db,
            &tables,
            &mut Default::default(),
            std::slice::from_ref(&failing),
        );
        fs.mutating_ops() - start
    };
    assert!(commit_span >= 1);
    for k in 0..commit_span {
        for crash in [false, true] {
            let ctx = format!("{kind:?} at op {k} of a commit of {commit_span}, crash {crash}");
            let fs = FaultFs::new();
            let opts = options(&fs, Durability::Full);
            let db = Db::open(DB, opts.clone()).expect("open");
            let tables = open_tables(&db);
            let mut model: [State; 2] = Default::default();
            write_acknowledged(&db, &tables, &mut model, &before);
            fs.inject(k, kind);
            let mut batch = WriteBatch::new();
            for op in &failing {
                match op {
                    Op::Put { table, key, value } => batch.put(&tables[*table], key, value),
                    Op::Delete { table, key } => batch.delete(&tables[*table], key),
                }
            }
            match db.write(batch) {
                Err(Error::Io { .. }) => {}
                other => panic!("{ctx}: the failing commit returned {other:?}"),
            }
            let again = tables[0].put(b"after", b"fault");
            assert!(
                matches!(again, Err(Error::ReadOnly { .. })),
                "{ctx}: write after the fault returned {again:?}"
            );
            let flushed = db.flush();
            assert!(
                matches!(flushed, Err(Error::ReadOnly { .. })),
                "{ctx}: flush after the fault returned {flushed:?}"
            );
            // Reads still answer with the acknowledged state.
            for (i, table) in tables.iter().enumerate() {
                let seen = read_table(table).unwrap_or_else(|e| panic!("{ctx}: scan: {e}"));
                assert!(
                    seen == model[i],
                    "{ctx}: scan of table {i} differs before reopen"
                );
                if let Some((k, v)) = model[i].iter().next() {
                    assert_eq!(table.get(k).expect("get"), Some(v.clone()), "{ctx}");
                }
            }
            drop_within_seconds(db, tables, &ctx);
            if crash {
                fs.crash(Some(k));
            }
            let db = Db::open(DB, opts).unwrap_or_else(|e| panic!("{ctx}: reopen: {e}"));
            let state = read_all(&db, &ctx);
            let mut with_failed = model.clone();
            for op in &failing {
                apply(&mut with_failed, op);
            }
            assert!(
                state == model || state == with_failed,
                "{ctx}: recovered state is neither the acknowledged state nor it plus the failed batch"
            );
            db.verify().unwrap_or_else(|e| panic!("{ctx}: verify: {e}"));
            db.table(TABLES[0])
                .expect("table")
                .put(b"after", b"reopen")
                .unwrap_or_else(|e| panic!("{ctx}: write after reopen: {e}"));
        }
    }
}

#[test]
fn eio_in_a_commit_makes_the_database_read_only_and_loses_nothing_acknowledged() {
    io_error_in_commit(FaultKind::Eio);
}

#[test]
fn enospc_in_a_commit_makes_the_database_read_only_and_loses_nothing_acknowledged() {
    io_error_in_commit(FaultKind::NoSpace);
}

#[test]
fn eio_in_a_flush_makes_the_database_read_only_and_loses_nothing_acknowledged() {
    // Goal: an I/O error at any operation of `Db::flush` fails the flush,
    // makes the database refuse writes with `Error::ReadOnly`, keeps reads
    // working, and after reopen every acknowledged batch is there.
    let batches = some_batches(15, 50);
    let span = ops_of(15, 50, |db, _| db.flush());
    for k in 0..span {
        let ctx = format!("EIO at op {k} of a flush of {span}");
        let fs = FaultFs::new();
        let opts = options(&fs, Durability::Full);
        let db = Db::open(DB, opts.clone()).expect("open");
        let tables = open_tables(&db);
        let mut model: [State; 2] = Default::default();
        write_acknowledged(&db, &tables, &mut model, &batches);
        fs.inject(k, FaultKind::Eio);
        // `Db::flush` freezes the memtables, and the background worker may
        // take one of them and meet the fault instead; the flush then
        // retries and can succeed, while the database is read-only anyway.
        if db.flush().is_err() {
            let again = tables[1].delete(b"key00001");
            assert!(
                matches!(again, Err(Error::ReadOnly { .. })),
                "{ctx}: write after the fault returned {again:?}"
            );
        }
        for (i, table) in tables.iter().enumerate() {
            let seen = read_table(table).unwrap_or_else(|e| panic!("{ctx}: scan: {e}"));
            assert!(
                seen == model[i],
                "{ctx}: scan of table {i} differs before reopen"
            );
        }
        drop_within_seconds(db, tables, &ctx);
        let db = Db::open(DB, opts).unwrap_or_else(|e| panic!("{ctx}: reopen: {e}"));
        assert!(
            read_all(&db, &ctx) == model,
            "{ctx}: recovered state differs"
        );
        db.verify().unwrap_or_else(|e| panic!("{ctx}: verify: {e}"));
    }
}

#[test]
fn workload_without_faults_survives_close_and_reopen() {
    // Goal: the baseline of the crash tests. With no fault at all, the
    // workload's background flushes and compactions and its explicit
    // flushes keep every file a version needs, and a reopen after a clean
    // close has exactly the state of all batches.
    // Many seeds, because the foreground flush and the background worker
    // race: the file cleaner of one must never delete the other's output.
    for seed in 100..300 {
        let ctx = format!("seed {seed}, no fault");
        let plan = plan(seed, 400);
        let fs = FaultFs::new();
        let opts = options(&fs, Durability::Normal);
        let db = Db::open(DB, opts.clone()).expect("open");
        let tables = open_tables(&db);
        let out = run(&db, &tables, &plan);
        assert!(out.error.is_none(), "{ctx}: {out:?}");
        let mut model: [State; 2] = Default::default();
        for op in batches(&plan).iter().flatten() {
            apply(&mut model, op);
        }
        for (i, table) in tables.iter().enumerate() {
            let seen = read_table(table).unwrap_or_else(|e| panic!("{ctx}: scan: {e}"));
            assert!(seen == model[i], "{ctx}: table {i} differs before close");
        }
        db.verify().unwrap_or_else(|e| panic!("{ctx}: verify: {e}"));
        drop(tables);
        db.close().unwrap_or_else(|e| panic!("{ctx}: close: {e}"));
        let db = Db::open(DB, opts).unwrap_or_else(|e| panic!("{ctx}: reopen: {e}"));
        assert!(
            read_all(&db, &ctx) == model,
            "{ctx}: reopened state differs"
        );
    }
}

#[test]
fn eio_at_the_manifest_sync_of_a_flush_keeps_the_flushed_sst() {
    // Goal: pin one case of the sweep above. When the manifest sync that
    // installs a flushed SST fails with EIO, the record's bytes are already
    // in the manifest file; the SST it names must therefore not be deleted,
    // or the next open (no crash needed) names a file that is gone.
    let batches = some_batches(16, 20);
    for k in 0.. {
        let fs = FaultFs::new();
        let opts = options(&fs, Durability::Full);
        let db = Db::open(DB, opts.clone()).expect("open");
        let tables = open_tables(&db);
        let mut model: [State; 2] = Default::default();
        write_acknowledged(&db, &tables, &mut model, &batches);
        fs.inject(k, FaultKind::Eio);
        let error = match db.flush() {
            Ok(()) => panic!("the flush never synced the manifest"),
            Err(e) => e.to_string(),
        };
        if !(error.contains("sync") && error.contains("MANIFEST")) {
            continue;
        }
        drop_within_seconds(db, tables, "flush");
        let ctx = format!("EIO at op {k} of a flush: {error}");
        let db = Db::open(DB, opts).unwrap_or_else(|e| panic!("{ctx}; reopen: {e}"));
        assert!(
            read_all(&db, &ctx) == model,
            "{ctx}: reopened state differs"
        );
        return;
    }
}
