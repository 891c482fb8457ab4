//! spinney-stress: kills real processes that write to a spinney database,
//! and checks what each reopen finds against what was acknowledged.
//!
//! The parent runs `--kills` rounds. In each, a child process (this binary
//! with `--child`) opens the database, with background flushes,
//! compactions and checkpoints going and a thread running the B-tree
//! table's `compact_all` again and again (its packing and moving of pages,
//! in slices with commits between them, and its checkpoints), and commits
//! batches that write the same keys and values to an LSM table and a
//! B-tree table. The parent
//! kills it with SIGKILL after a random time (one round in five within
//! 30 ms, while the child is still opening and recovering), reopens the
//! database itself, and checks every key of both tables against the
//! expected-state file.
//!
//! The expected state is a header, `acked batch u64 | 0 u64`, and one slot
//! per key, `acked u32 | pending u32 | batch u64`: the version of the key
//! whose content the database holds as of the last acknowledged commit,
//! the version a commit in flight is writing (0: none), and the number of
//! that commit (its batch). Batches are numbered from 1 across all rounds.
//! The child marks each key of a batch pending before it commits; once the
//! commit returns it writes the batch's number to the header (the batch is
//! acknowledged), then moves each key's mark to acked. Each step is one
//! `pwrite`; a killed process does not lose what it wrote to the page
//! cache. Version `v` of key `k` is a delete when `is_delete(k, v)`, else a
//! put of `value(k, v)`; version 0 is never written. One batch in eight is
//! a range delete of up to 16 consecutive keys instead: each of them moves
//! to its next version that is a delete.
//!
//! What a reopen must show, in both tables alike (they are always written
//! by the same batches), in every durability mode (a killed process loses
//! nothing acknowledged: under `Off` because spinney's log is appended
//! through a shared memory map, `LogWrites::Mapped`, the default this tool
//! runs, so a commit is in the page cache when it returns):
//! - a key with no pending mark: the content of version `acked`;
//! - a key whose pending batch is acknowledged (the header's number is at
//!   least the batch's): the content of version `pending`;
//! - the keys of the one batch in flight: all of them the content of their
//!   `pending` version, or all of them their `acked` version (a batch is
//!   atomic, across both tables and with its range delete).
//!
//! A scan of each table must find exactly the keys the point reads found,
//! and every tenth round `Db::verify` checks every file. The parent then
//! records what it found as acked (never an older version than acked) and
//! clears the pending marks, and the next child goes on from there. At the
//! end it prints `kills: N, violations: V, reopen failures: F` with the
//! batches acknowledged and the key reads checked, and exits non-zero if
//! either count is not 0.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

mod flips;

use clap::{Parser, ValueEnum};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use spinney::{Db, Durability, Options, Table, TableOptions, WriteBatch};

#[derive(Parser, Debug)]
#[command(
    name = "spinney-stress",
    about = "Kill real processes writing to a spinney database; check each reopen against what was acknowledged"
)]
struct Args {
    /// Rounds: each runs a child, kills it, reopens and checks.
    #[arg(long, default_value_t = 100)]
    kills: u64,
    /// Seed of every random choice (the children's batches, the kill times).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The database's durability mode.
    #[arg(long, value_enum, default_value_t = Mode::Normal)]
    durability: Mode,
    /// Keys in each table.
    #[arg(long, default_value_t = 4000)]
    keys: u32,
    /// The longest a child runs before it is killed, in milliseconds.
    #[arg(long, default_value_t = 400)]
    max_run_ms: u64,
    /// The work directory (the database and the expected-state file);
    /// default: a new temporary directory, removed at the end unless a
    /// check failed.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Run as the child of round N (internal).
    #[arg(long, hide = true)]
    child: Option<u64>,
    /// Instead of killing processes: damage the files of a small database
    /// in this many ways, one at a time, and check that each is detected
    /// or harmless (see flips.rs).
    #[arg(long)]
    flips: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Mode {
    Full,
    Normal,
    Off,
}

impl Mode {
    fn durability(self) -> Durability {
        match self {
            Mode::Full => Durability::Full,
            Mode::Normal => Durability::Normal,
            Mode::Off => Durability::Off,
        }
    }
}

const LSM: &str = "lsm";
const BTREE: &str = "btree";

/// The pause between two vacuums of the B-tree in a child.
const VACUUM_PAUSE_MS: u64 = 50;

/// Small logs, buffers, cache and checkpoint interval, so that a child's
/// few hundred milliseconds roll the log, flush, compact and checkpoint.
fn options(mode: Mode) -> Options {
    Options {
        durability: mode.durability(),
        background_threads: 2,
        cache_size: 4 << 20,
        wal_segment_size: 256 << 10,
        checkpoint_wal_bytes: 1 << 20,
        ..Options::default()
    }
}

fn table_options() -> [(&'static str, TableOptions); 2] {
    [
        (
            LSM,
            TableOptions {
                write_buffer_size: 128 << 10,
                ..TableOptions::lsm()
            },
        ),
        (
            BTREE,
            TableOptions {
                page_size: 4 << 10,
                ..TableOptions::btree()
            },
        ),
    ]
}

/// Both tables, created if missing.
fn open_tables(db: &Db) -> Result<Vec<Table>, String> {
    table_options()
        .into_iter()
        .map(|(name, o)| db.open_table(name, o))
        .collect::<spinney::Result<_>>()
        .map_err(|e| format!("tables: {e}"))
}

fn mix(k: u32, v: u32) -> u64 {
    // splitmix64 of the pair.
    let mut z = (u64::from(k) << 32 | u64::from(v)).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn key(k: u32) -> Vec<u8> {
    format!("key{k:07}").into_bytes()
}

fn is_delete(k: u32, v: u32) -> bool {
    v > 0 && mix(k, v).is_multiple_of(6)
}

/// The content of version `v` of key `k`: None for a delete or version 0.
fn content(k: u32, v: u32) -> Option<Vec<u8>> {
    if v == 0 || is_delete(k, v) {
        return None;
    }
    let mut out = format!("{k}:{v}:").into_bytes();
    let len = 16 + (mix(v, k) % 180) as usize;
    let fill = (mix(k, v) % 251) as u8;
    out.resize(len, fill);
    Some(out)
}

/// One key's slot of the expected state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Slot {
    /// The version the database holds as of the last acknowledged commit.
    acked: u32,
    /// The version a commit in flight writes (0: none).
    pending: u32,
    /// The number of that commit's batch (0: none).
    batch: u64,
}

const HEADER: u64 = 16;
const SLOT: u64 = 16;

/// The expected-state file and its copy in memory.
struct State {
    file: File,
    /// The newest batch whose commit returned.
    acked_batch: u64,
    slots: Vec<Slot>,
}

impl State {
    fn open(path: &Path, keys: u32) -> std::io::Result<State> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        let len = HEADER + u64::from(keys) * SLOT;
        if file.metadata()?.len() != len {
            file.set_len(len)?;
        }
        let mut bytes = vec![0u8; len as usize];
        file.read_exact_at(&mut bytes, 0)?;
        let (header, slots) = bytes.split_at(HEADER as usize);
        let u32_at =
            |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap_or_default());
        let u64_at =
            |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or_default());
        let slots = slots
            .chunks_exact(SLOT as usize)
            .map(|c| Slot {
                acked: u32_at(c, 0),
                pending: u32_at(c, 4),
                batch: u64_at(c, 8),
            })
            .collect();
        Ok(State {
            file,
            acked_batch: u64_at(header, 0),
            slots,
        })
    }

    fn get(&self, k: u32) -> Slot {
        self.slots.get(k as usize).copied().unwrap_or_default()
    }

    fn set(&mut self, k: u32, slot: Slot) -> std::io::Result<()> {
        if let Some(s) = self.slots.get_mut(k as usize) {
            *s = slot;
        }
        let mut b = [0u8; SLOT as usize];
        b[..4].copy_from_slice(&slot.acked.to_le_bytes());
        b[4..8].copy_from_slice(&slot.pending.to_le_bytes());
        b[8..].copy_from_slice(&slot.batch.to_le_bytes());
        self.file.write_all_at(&b, HEADER + u64::from(k) * SLOT)
    }

    /// Marks `k` as written at version `v` by `batch`, in flight.
    fn mark_pending(&mut self, k: u32, v: u32, batch: u64) -> std::io::Result<()> {
        let acked = self.get(k).acked;
        self.set(
            k,
            Slot {
                acked,
                pending: v,
                batch,
            },
        )
    }

    /// Records that `batch`'s commit returned.
    fn ack_batch(&mut self, batch: u64) -> std::io::Result<()> {
        self.acked_batch = batch;
        self.file.write_all_at(&batch.to_le_bytes(), 0)
    }

    /// Moves `k`'s mark to acked at version `v`.
    fn settle(&mut self, k: u32, v: u32) -> std::io::Result<()> {
        self.set(
            k,
            Slot {
                acked: v,
                pending: 0,
                batch: 0,
            },
        )
    }
}

fn db_dir(work: &Path) -> PathBuf {
    work.join("db")
}

fn state_path(work: &Path) -> PathBuf {
    work.join("expected")
}

/// The child: commits batches until it is killed.
fn child(args: &Args, work: &Path, round: u64) -> Result<(), String> {
    let mut state = State::open(&state_path(work), args.keys).map_err(|e| e.to_string())?;
    let db = Db::open(db_dir(work), options(args.durability)).map_err(|e| format!("open: {e}"))?;
    let tables = open_tables(&db)?;
    // The B-tree's vacuum runs again and again beside the commits
    // (`compact_all`: packing and moving pages a slice at a time, with the
    // commits between the slices, and its checkpoints), so that kills land
    // in it too. It stops at the first error; the commits report theirs.
    let btree = db.table(BTREE).map_err(|e| format!("table {BTREE}: {e}"))?;
    std::thread::spawn(move || {
        while btree.compact_all().is_ok() {
            std::thread::sleep(std::time::Duration::from_millis(VACUUM_PAUSE_MS));
        }
    });
    let mut rng = SmallRng::seed_from_u64(args.seed ^ round.wrapping_mul(0x2545_f491_4f6c_dd1d));
    let first = state.acked_batch + 1;
    for n in first.. {
        if rng.gen_ratio(1, 8) {
            range_delete(&db, &tables, &mut state, &mut rng, args.keys, n)?;
            continue;
        }
        let count = rng.gen_range(1..=8);
        let mut keys = BTreeSet::new();
        while keys.len() < count {
            keys.insert(rng.gen_range(0..args.keys));
        }
        let mut batch = WriteBatch::new();
        let mut versions = Vec::with_capacity(count);
        for &k in &keys {
            let v = state.get(k).acked + 1;
            state.mark_pending(k, v, n).map_err(|e| e.to_string())?;
            for t in &tables {
                match content(k, v) {
                    Some(value) => batch.put(t, &key(k), &value),
                    None => batch.delete(t, &key(k)),
                }
            }
            versions.push((k, v));
        }
        db.write(batch).map_err(|e| format!("commit {n}: {e}"))?;
        state.ack_batch(n).map_err(|e| e.to_string())?;
        for (k, v) in versions {
            state.settle(k, v).map_err(|e| e.to_string())?;
        }
        if (n - first + 1).is_multiple_of(1024) {
            db.checkpoint().map_err(|e| format!("checkpoint: {e}"))?;
        }
    }
    Ok(())
}

/// One commit of a range delete of up to 16 keys in both tables: each key
/// of the range gets its next version that is a delete (the versions
/// skipped are never written).
fn range_delete(
    db: &Db,
    tables: &[Table],
    state: &mut State,
    rng: &mut SmallRng,
    keys: u32,
    n: u64,
) -> Result<(), String> {
    let first = rng.gen_range(0..keys);
    let end = (first + rng.gen_range(1..=16)).min(keys);
    let mut versions = Vec::new();
    for k in first..end {
        let acked = state.get(k).acked;
        let v = (acked + 1..).find(|&v| is_delete(k, v)).unwrap_or(acked);
        state.mark_pending(k, v, n).map_err(|e| e.to_string())?;
        versions.push((k, v));
    }
    let mut batch = WriteBatch::new();
    for t in tables {
        batch.delete_range(t, key(first)..key(end));
    }
    db.write(batch)
        .map_err(|e| format!("commit {n} (a range delete): {e}"))?;
    state.ack_batch(n).map_err(|e| e.to_string())?;
    for (k, v) in versions {
        state.settle(k, v).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// What one check found.
#[derive(Default)]
struct Check {
    violations: Vec<String>,
    /// Key reads compared with the expected state (a key in a table).
    reads: u64,
}

/// How a key of the batch in flight reads after the reopen.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Landed {
    /// Its pending version: the batch was applied.
    Yes,
    /// Its acked version: the batch was not applied.
    No,
    /// Both versions read alike (a delete of a key already deleted).
    Either,
}

/// Reopens the database, checks every key against the expected state and
/// records what it found as acked. Err: the reopen failed.
fn check(args: &Args, work: &Path, state: &mut State, deep: bool) -> Result<Check, String> {
    let db = Db::open(db_dir(work), options(args.durability)).map_err(|e| e.to_string())?;
    let mut out = Check::default();
    let tables = open_tables(&db)?;
    let mut found: Vec<BTreeMap<Vec<u8>, Vec<u8>>> = vec![BTreeMap::new(); tables.len()];
    // The keys of batches in flight (at most one), with how each landed.
    let mut in_flight: BTreeMap<u64, Vec<(u32, Landed)>> = BTreeMap::new();
    // The version each key holds now, where it is known already.
    let mut now: Vec<u32> = Vec::with_capacity(args.keys as usize);
    for k in 0..args.keys {
        let slot = state.get(k);
        now.push(slot.acked);
        let mut read = Vec::with_capacity(tables.len());
        for (t, f) in tables.iter().zip(&mut found) {
            out.reads += 1;
            match t.get(&key(k)) {
                Ok(v) => {
                    if let Some(v) = &v {
                        f.insert(key(k), v.clone());
                    }
                    read.push(v);
                }
                Err(e) => {
                    out.violations
                        .push(format!("key {k}: get from {}: {e}", t.name()));
                    read.push(None);
                }
            }
        }
        if read.windows(2).any(|w| w[0] != w[1]) {
            out.violations.push(format!(
                "key {k}: the tables differ ({})",
                read.iter()
                    .map(|r| r
                        .as_ref()
                        .map_or("absent".to_string(), |v| format!("{} bytes", v.len())))
                    .collect::<Vec<_>>()
                    .join(" vs ")
            ));
            continue;
        }
        let got = read.first().cloned().flatten();
        let is = |v: u32| content(k, v) == got;
        let shown = || {
            got.as_ref().map_or("nothing".to_string(), |v| {
                format!("{:?}", String::from_utf8_lossy(v))
            })
        };
        if slot.pending == 0 {
            if !is(slot.acked) {
                out.violations.push(format!(
                    "key {k}: holds {}, expected version {} (acknowledged)",
                    shown(),
                    slot.acked
                ));
            }
        } else if slot.batch <= state.acked_batch {
            // Its batch's commit returned: the pending version is acked.
            if is(slot.pending) {
                now[k as usize] = slot.pending;
            } else {
                out.violations.push(format!(
                    "key {k}: holds {}, expected version {} (batch {}, acknowledged)",
                    shown(),
                    slot.pending,
                    slot.batch
                ));
            }
        } else {
            let landed = match (is(slot.pending), is(slot.acked)) {
                (true, true) => Landed::Either,
                (true, false) => Landed::Yes,
                (false, true) => Landed::No,
                (false, false) => {
                    out.violations.push(format!(
                        "key {k}: holds {}, expected version {} or, with batch {} in flight, {}",
                        shown(),
                        slot.acked,
                        slot.batch,
                        slot.pending
                    ));
                    continue;
                }
            };
            in_flight.entry(slot.batch).or_default().push((k, landed));
        }
    }
    if in_flight.len() > 1 {
        out.violations.push(format!(
            "batches {:?} are all in flight, but one child commits one at a time",
            in_flight.keys().collect::<Vec<_>>()
        ));
    }
    for (batch, keys) in &in_flight {
        let yes = keys.iter().filter(|(_, l)| *l == Landed::Yes).count();
        let no = keys.iter().filter(|(_, l)| *l == Landed::No).count();
        if yes > 0 && no > 0 {
            out.violations.push(format!(
                "batch {batch} (in flight) landed in part: {yes} of its keys hold the new version, {no} the old"
            ));
        }
        // What each key holds goes on as acked (after a violation too, so
        // that one lost batch is reported once, not again every round).
        for &(k, landed) in keys {
            if landed == Landed::Yes || (landed == Landed::Either && yes > 0) {
                now[k as usize] = state.get(k).pending;
            }
        }
    }
    for k in 0..args.keys {
        let slot = state.get(k);
        // `now` never goes below `acked`: it is acked or the newer pending.
        if let Err(e) = state.settle(k, now[k as usize].max(slot.acked)) {
            return Err(format!("expected-state file: {e}"));
        }
    }
    for (t, f) in tables.iter().zip(&found) {
        let scanned: spinney::Result<BTreeMap<Vec<u8>, Vec<u8>>> =
            t.iter().and_then(|it| it.collect());
        match scanned {
            Ok(s) if &s == f => {}
            Ok(s) => out.violations.push(format!(
                "{}: a scan found {} entries, point reads {}",
                t.name(),
                s.len(),
                f.len()
            )),
            Err(e) => out.violations.push(format!("{}: scan: {e}", t.name())),
        }
    }
    if deep {
        if let Err(e) = db.verify() {
            out.violations.push(format!("verify: {e}"));
        }
    }
    drop(tables);
    if let Err(e) = db.close() {
        out.violations.push(format!("close: {e}"));
    }
    Ok(out)
}

/// What a run saw: kills, violations, batches acknowledged, key reads
/// checked.
#[derive(Default)]
struct Totals {
    kills: u64,
    violations: usize,
    batches: u64,
    reads: u64,
}

fn run(args: &Args, work: &Path) -> Result<Totals, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut state = State::open(&state_path(work), args.keys).map_err(|e| e.to_string())?;
    {
        // The tables exist before the first child runs.
        let db = Db::open(db_dir(work), options(args.durability)).map_err(|e| e.to_string())?;
        open_tables(&db)?;
        db.close().map_err(|e| e.to_string())?;
    }
    let mut rng = SmallRng::seed_from_u64(args.seed);
    let mut violations = 0usize;
    let mut reads = 0u64;
    let started = Instant::now();
    for round in 0..args.kills {
        let stderr_path = work.join("child.stderr");
        let stderr = File::create(&stderr_path).map_err(|e| e.to_string())?;
        let mut child = Command::new(&exe)
            .arg("--child")
            .arg(round.to_string())
            .arg("--seed")
            .arg(args.seed.to_string())
            .arg("--keys")
            .arg(args.keys.to_string())
            .arg("--durability")
            .arg(format!("{:?}", args.durability).to_lowercase())
            .arg("--dir")
            .arg(work)
            .stdout(Stdio::null())
            .stderr(Stdio::from(stderr))
            .spawn()
            .map_err(|e| format!("spawn: {e}"))?;
        let wait = if rng.gen_ratio(1, 5) {
            rng.gen_range(0..30)
        } else {
            rng.gen_range(30..args.max_run_ms.max(31))
        };
        std::thread::sleep(Duration::from_millis(wait));
        let exited_early = child.try_wait().map_err(|e| e.to_string())?;
        let _ = child.kill();
        let _ = child.wait();
        if let Some(status) = exited_early {
            let why = std::fs::read_to_string(&stderr_path).unwrap_or_default();
            violations += 1;
            eprintln!(
                "round {round}: the child exited by itself ({status}): {}",
                why.trim()
            );
        }
        // What the child marked, read back from the file.
        state = State::open(&state_path(work), args.keys).map_err(|e| e.to_string())?;
        let deep = round % 10 == 9 || round + 1 == args.kills;
        let found = check(args, work, &mut state, deep)
            .map_err(|e| format!("round {round}: reopen failed: {e}"))?;
        for v in found.violations.iter().take(10) {
            eprintln!("round {round}: {v}");
        }
        violations += found.violations.len();
        reads += found.reads;
        if (round + 1) % 50 == 0 {
            eprintln!(
                "{} kills, {violations} violations, {:.0} s",
                round + 1,
                started.elapsed().as_secs_f64()
            );
        }
    }
    Ok(Totals {
        kills: args.kills,
        violations,
        batches: state.acked_batch,
        reads,
    })
}

fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(round) = args.child {
        let Some(work) = args.dir.clone() else {
            eprintln!("--child needs --dir");
            return ExitCode::from(2);
        };
        return match child(&args, &work, round) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("{e}");
                ExitCode::from(3)
            }
        };
    }
    let temp;
    let work = match &args.dir {
        Some(d) => {
            if let Err(e) = std::fs::create_dir_all(d) {
                eprintln!("{}: {e}", d.display());
                return ExitCode::from(2);
            }
            d.clone()
        }
        None => match tempfile::tempdir() {
            Ok(t) => {
                temp = t;
                temp.path().to_path_buf()
            }
            Err(e) => {
                eprintln!("temporary directory: {e}");
                return ExitCode::from(2);
            }
        },
    };
    let started = Instant::now();
    if let Some(count) = args.flips {
        return match flips::run(count, args.seed, &work) {
            Ok(t) => {
                println!(
                    "flips: {}, detected: {} ({} not as Corruption), harmless: {}, \
                     unsynced tail dropped: {} (of {} trials with an unsynced tail), violations: {} \
                     (seed {}, {:.0} s)",
                    t.trials,
                    t.detected,
                    t.detected_not_corruption,
                    t.harmless,
                    t.tail_dropped,
                    t.unsynced,
                    t.violations,
                    args.seed,
                    started.elapsed().as_secs_f64()
                );
                if t.violations > 0 {
                    ExitCode::FAILURE
                } else {
                    ExitCode::SUCCESS
                }
            }
            Err(e) => {
                eprintln!("{e}");
                ExitCode::from(2)
            }
        };
    }
    let (t, failures) = match run(&args, &work) {
        Ok(t) => (t, 0),
        Err(e) => {
            eprintln!("{e}");
            (Totals::default(), 1)
        }
    };
    let Totals {
        kills,
        violations,
        batches,
        reads,
    } = t;
    println!(
        "kills: {kills}, violations: {violations}, reopen failures: {failures} \
         (durability {:?}, seed {}, {} keys, {batches} batches acknowledged, {reads} key reads checked, {:.0} s)",
        args.durability,
        args.seed,
        args.keys,
        started.elapsed().as_secs_f64()
    );
    if violations > 0 || failures > 0 {
        if args.dir.is_none() {
            // Keep the directory for a look.
            let kept = work
                .join("..")
                .join(format!("spinney-stress-{}", std::process::id()));
            if std::fs::rename(&work, &kept).is_ok() {
                eprintln!("the work directory is kept at {}", kept.display());
            }
        }
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
