//! spinney-stress: kills real processes that write to a spinney database,
//! and checks what each reopen finds against what was acknowledged.
//!
//! The parent runs `--kills` rounds. In each, a child process (this binary
//! with `--child`) opens the database, with background flushes,
//! compactions and checkpoints going, and commits batches that write the
//! same keys and values to an LSM table and a B-tree table. The parent
//! kills it with SIGKILL after a random time (one round in five within
//! 30 ms, while the child is still opening and recovering), reopens the
//! database itself, and checks every key of both tables against the
//! expected-state file.
//!
//! The expected state is one slot per key, `acked u32 | pending u32`: the
//! version of the key whose content the database holds as of the last
//! acknowledged commit, and the version a commit in flight is writing (0:
//! none). The child marks a key pending before it commits and moves the
//! mark to acked once the commit returns, each with one `pwrite` of the
//! slot; a killed process does not lose what it wrote to the page cache.
//! Version `v` of key `k` is a delete when `is_delete(k, v)`, else a put of
//! `value(k, v)`; version 0 is never written. One batch in eight is a range
//! delete of up to 16 consecutive keys instead: each of them moves to its
//! next version that is a delete.
//!
//! What a reopen must show, for every key, in both tables alike (they are
//! always written by the same batches):
//! - `--durability full` or `normal` (a killed process loses nothing
//!   acknowledged): the content of version `acked` or of `pending`;
//! - `--durability off` (a killed process may lose the commits still in
//!   spinney's buffer): the content of some version up to those, never a
//!   value that was not written.
//!
//! A scan of each table must find exactly the keys the point reads found,
//! and every tenth round `Db::verify` checks every file. The parent then
//! records what it found as the acked version and clears the pending marks,
//! and the next child goes on from there. At the end it prints
//! `kills: N, violations: V, reopen failures: F` and exits non-zero if
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

/// The expected-state file and its copy in memory.
struct State {
    file: File,
    slots: Vec<(u32, u32)>,
}

impl State {
    fn open(path: &Path, keys: u32) -> std::io::Result<State> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        let len = u64::from(keys) * 8;
        if file.metadata()?.len() != len {
            file.set_len(len)?;
        }
        let mut bytes = vec![0u8; len as usize];
        file.read_exact_at(&mut bytes, 0)?;
        let slots = bytes
            .chunks_exact(8)
            .map(|c| {
                let (a, p) = c.split_at(4);
                (
                    u32::from_le_bytes(a.try_into().unwrap_or_default()),
                    u32::from_le_bytes(p.try_into().unwrap_or_default()),
                )
            })
            .collect();
        Ok(State { file, slots })
    }

    fn get(&self, k: u32) -> (u32, u32) {
        self.slots.get(k as usize).copied().unwrap_or_default()
    }

    fn set(&mut self, k: u32, acked: u32, pending: u32) -> std::io::Result<()> {
        if let Some(s) = self.slots.get_mut(k as usize) {
            *s = (acked, pending);
        }
        let mut b = [0u8; 8];
        b[..4].copy_from_slice(&acked.to_le_bytes());
        b[4..].copy_from_slice(&pending.to_le_bytes());
        self.file.write_all_at(&b, u64::from(k) * 8)
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
    let mut rng = SmallRng::seed_from_u64(args.seed ^ round.wrapping_mul(0x2545_f491_4f6c_dd1d));
    for n in 1u64.. {
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
            let (acked, _) = state.get(k);
            let v = acked + 1;
            state.set(k, acked, v).map_err(|e| e.to_string())?;
            for t in &tables {
                match content(k, v) {
                    Some(value) => batch.put(t, &key(k), &value),
                    None => batch.delete(t, &key(k)),
                }
            }
            versions.push((k, v));
        }
        db.write(batch).map_err(|e| format!("commit {n}: {e}"))?;
        for (k, v) in versions {
            state.set(k, v, 0).map_err(|e| e.to_string())?;
        }
        if n.is_multiple_of(1024) {
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
        let (acked, _) = state.get(k);
        let v = (acked + 1..).find(|&v| is_delete(k, v)).unwrap_or(acked);
        state.set(k, acked, v).map_err(|e| e.to_string())?;
        versions.push((k, v));
    }
    let mut batch = WriteBatch::new();
    for t in tables {
        batch.delete_range(t, key(first)..key(end));
    }
    db.write(batch)
        .map_err(|e| format!("commit {n} (a range delete): {e}"))?;
    for (k, v) in versions {
        state.set(k, v, 0).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// What one check found.
#[derive(Default)]
struct Check {
    violations: Vec<String>,
}

/// Reopens the database, checks every key against the expected state and
/// records what it found as acked. Err: the reopen failed.
fn check(args: &Args, work: &Path, state: &mut State, deep: bool) -> Result<Check, String> {
    let db = Db::open(db_dir(work), options(args.durability)).map_err(|e| e.to_string())?;
    let mut out = Check::default();
    let tables = open_tables(&db)?;
    let mut found: Vec<BTreeMap<Vec<u8>, Vec<u8>>> = vec![BTreeMap::new(); tables.len()];
    for k in 0..args.keys {
        let (acked, pending) = state.get(k);
        let mut read = Vec::with_capacity(tables.len());
        for (t, f) in tables.iter().zip(&mut found) {
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
        let newest = acked.max(pending);
        let candidates: Vec<u32> = match args.durability {
            Mode::Full | Mode::Normal => {
                let mut c = vec![pending, acked];
                c.retain(|&v| v > 0 || acked == 0);
                c
            }
            Mode::Off => (0..=newest).rev().collect(),
        };
        match candidates.iter().find(|&&v| content(k, v) == got) {
            Some(&v) => {
                if let Err(e) = state.set(k, v, 0) {
                    return Err(format!("expected-state file: {e}"));
                }
            }
            None => out.violations.push(format!(
                "key {k}: holds {}, expected version {acked} or {pending}",
                got.map_or("nothing".to_string(), |v| format!(
                    "{:?}",
                    String::from_utf8_lossy(&v)
                ))
            )),
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

fn run(args: &Args, work: &Path) -> Result<(u64, usize, u64), String> {
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
        if (round + 1) % 50 == 0 {
            eprintln!(
                "{} kills, {violations} violations, {:.0} s",
                round + 1,
                started.elapsed().as_secs_f64()
            );
        }
    }
    let versions: u64 = (0..args.keys).map(|k| u64::from(state.get(k).0)).sum();
    Ok((args.kills, violations, versions))
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
                    "flips: {}, detected: {} ({} not as Corruption), harmless: {}, violations: {} \
                     (seed {}, {:.0} s)",
                    t.trials,
                    t.detected,
                    t.detected_not_corruption,
                    t.harmless,
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
    let (kills, violations, failures, versions) = match run(&args, &work) {
        Ok((kills, violations, versions)) => (kills, violations, 0, versions),
        Err(e) => {
            eprintln!("{e}");
            (0, 0, 1, 0)
        }
    };
    println!(
        "kills: {kills}, violations: {violations}, reopen failures: {failures} \
         (durability {:?}, seed {}, {} keys, {versions} key versions acknowledged and checked, {:.0} s)",
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
