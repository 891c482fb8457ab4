//! `--flips N`: damaged bytes, each opened and read through.
//!
//! A small database with both kinds of table is built twice (LSM entries in
//! SSTs and in the log only; a checkpointed B-tree and writes after the
//! checkpoint, every commit writing both tables): once closed cleanly, so
//! that its log ends in a synced sync mark, and once copied while open
//! after 60 commits past the last sync, so that its log ends in records no
//! sync mark covers, as a power loss that kept them would leave it. Their
//! files are kept in memory. Each trial puts one image's files back,
//! damages them in one way, opens the database, reads every key ever
//! written, deleted ones included, in both tables (point reads and a scan)
//! and runs `verify`:
//!
//! - every byte of `CURRENT`, of the manifest, of each SST's footer, of the
//!   B-tree file's two header slots and of each log segment's first
//!   fragment, XORed with a random non-zero mask (once each, in the closed
//!   image);
//! - then random bit flips anywhere in any file, and whole 4 KiB pieces
//!   swapped within a file or copied from one file over another (one trial
//!   in ten), until `N` trials in all, one in four in the unsynced image.
//!
//! Every answer is checked before any error counts. A trial passes when
//! the damage is **detected** (an error from the open, a read or `verify`,
//! and no wrong answer before it) or **harmless** (everything reads back
//! exactly as built), or, in the unsynced image, when everything reads back
//! but a suffix of the unsynced commits (**tail dropped**: the log ended at
//! damage no sync mark covers). A **violation** is a read that answers
//! differently (a value not written, a deleted key back, an unsynced commit
//! without the one before it, the tables at different points), a panic, or
//! a trial that runs longer than 20 seconds. Errors that are not
//! `Corruption` (an I/O error for a file that a damaged name points at,
//! say) are counted apart, so that they can be looked at.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use spinney::{Db, Durability, Options, Table, TableOptions, WriteBatch, WriteOptions};

/// What a built database holds, the same in both tables: `base`, every
/// key written up to the last sync of the log with its value (None: it was
/// deleted), and `tail`, the commits after that sync, in order, each a put
/// of a key of its own. After damage, a database whose log ends in
/// unsynced commits may lose a suffix of them (the log ends at damage no
/// sync mark covers), never anything else.
#[derive(Clone, Default)]
struct Expected {
    base: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    tail: Vec<(Vec<u8>, Vec<u8>)>,
}

impl Expected {
    /// Every key to read.
    fn keys(&self) -> impl Iterator<Item = &Vec<u8>> {
        self.base.keys().chain(self.tail.iter().map(|(k, _)| k))
    }

    /// How many of the tail's commits `got` (what one table read) holds,
    /// if it holds exactly the base and a prefix of the tail.
    fn prefix_in(&self, got: &BTreeMap<Vec<u8>, Option<Vec<u8>>>) -> Result<usize, String> {
        let show =
            |v: &Option<Vec<u8>>| v.as_ref().map(|v| String::from_utf8_lossy(v).into_owned());
        for (k, want) in &self.base {
            if let Some(v) = got.get(k) {
                if v != want {
                    return Err(format!(
                        "{} read {:?}, expected {:?}",
                        String::from_utf8_lossy(k),
                        show(v),
                        show(want)
                    ));
                }
            }
        }
        let mut held = 0;
        for (i, (k, want)) in self.tail.iter().enumerate() {
            match got.get(k) {
                Some(Some(v)) if v == want && held == i => held += 1,
                Some(None) => {}
                None => {} // an error reading it
                Some(v) => {
                    return Err(format!(
                        "{} read {:?}: tail commit {i}, after {held} of the tail",
                        String::from_utf8_lossy(k),
                        show(v)
                    ))
                }
            }
        }
        Ok(held)
    }
}

const TABLES: [&str; 2] = ["lsm", "btree"];

fn options() -> Options {
    Options {
        durability: Durability::Normal,
        background_threads: 0,
        autowork: false,
        cache_size: 1 << 20,
        wal_segment_size: 64 << 10,
        checkpoint_wal_bytes: 1 << 40,
        ..Options::default()
    }
}

fn value(i: u32, round: u32) -> Vec<u8> {
    let mut v = format!("value-{i}-{round}-").into_bytes();
    v.resize(20 + (i as usize * 7) % 90, b'a' + (i % 26) as u8);
    v
}

/// One commit that puts `v` at `k` (deletes `k` when None) in both tables.
fn in_both(lsm: &Table, btree: &Table, k: &[u8], v: Option<&[u8]>) -> WriteBatch {
    let mut batch = WriteBatch::new();
    for t in [lsm, btree] {
        match v {
            Some(v) => batch.put(t, k, v),
            None => batch.delete(t, k),
        }
    }
    batch
}

/// The commits after the last sync in the unsynced image.
const TAIL: u32 = 60;

/// Builds the database in `dir` and returns what it holds and its files.
/// Closed cleanly, or (`unsynced`) copied while open, after a `Full`
/// commit synced the log and `TAIL` more commits under `Normal`: its log
/// then ends in records no sync mark covers, as after a power loss that
/// kept them.
fn build(dir: &Path, unsynced: bool) -> Result<(Expected, BTreeMap<String, Vec<u8>>), String> {
    let e = |e: spinney::Error| e.to_string();
    let db = Db::open(dir, options()).map_err(e)?;
    let lsm = db
        .create_table(
            TABLES[0],
            TableOptions {
                write_buffer_size: 64 << 10,
                block_size: 1024,
                ..TableOptions::lsm()
            },
        )
        .map_err(e)?;
    let btree = db
        .create_table(
            TABLES[1],
            TableOptions {
                page_size: 4 << 10,
                ..TableOptions::btree()
            },
        )
        .map_err(e)?;
    let mut expected = Expected::default();
    // Into SSTs and a checkpoint first, then more that only the log holds.
    for (round, keys) in [(0u32, 0..1200u32), (1, 800..1400)] {
        for i in keys {
            let k = format!("key{i:05}").into_bytes();
            let v = if i % 17 == 5 && round == 1 {
                None
            } else {
                Some(value(i, round))
            };
            db.write(in_both(&lsm, &btree, &k, v.as_deref()))
                .map_err(e)?;
            expected.base.insert(k, v);
        }
        if round == 0 {
            db.flush().map_err(e)?;
            db.checkpoint().map_err(e)?;
        }
    }
    if !unsynced {
        drop((lsm, btree));
        db.close().map_err(e)?;
        return Ok((expected, files_of(dir)?));
    }
    // Everything so far synced (and its sync mark with it).
    let k = b"synced".to_vec();
    db.write_with(
        in_both(&lsm, &btree, &k, Some(b"by a Full commit")),
        WriteOptions {
            durability: Some(Durability::Full),
        },
    )
    .map_err(e)?;
    expected.base.insert(k, Some(b"by a Full commit".to_vec()));
    for i in 0..TAIL {
        let k = format!("tail{i:05}").into_bytes();
        let v = value(i, 2);
        db.write(in_both(&lsm, &btree, &k, Some(&v))).map_err(e)?;
        expected.tail.push((k, v));
    }
    // The files as the page cache holds them, before close adds its mark.
    let files = files_of(dir)?;
    drop((lsm, btree));
    db.close().map_err(e)?;
    Ok((expected, files))
}

/// The files of a directory, by name.
fn files_of(dir: &Path) -> Result<BTreeMap<String, Vec<u8>>, String> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(dir).map_err(|e| e.to_string())? {
        let entry = entry.map_err(|e| e.to_string())?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == "LOCK" {
            continue;
        }
        out.insert(
            name,
            std::fs::read(entry.path()).map_err(|e| e.to_string())?,
        );
    }
    Ok(out)
}

/// Empties `dir` and writes `files` into it.
fn restore(dir: &Path, files: &BTreeMap<String, Vec<u8>>) -> Result<(), String> {
    for entry in std::fs::read_dir(dir).map_err(|e| e.to_string())? {
        let path = entry.map_err(|e| e.to_string())?.path();
        std::fs::remove_file(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    for (name, bytes) in files {
        std::fs::write(dir.join(name), bytes).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// What one trial found.
enum Outcome {
    Harmless,
    /// Everything read back, but for a suffix of the unsynced commits:
    /// the log ended at damage no sync mark covers.
    TailDropped,
    Detected {
        corruption: bool,
        error: String,
    },
    Wrong(String),
}

/// Opens, reads everything (the keys written, and by `get` the keys
/// deleted too) and verifies. Every answer is checked before any error
/// counts: a wrong answer is a violation even when a later read fails.
fn trial(dir: &Path, expected: &Expected) -> Outcome {
    let detected = |e: &spinney::Error| Outcome::Detected {
        corruption: e.is_corruption(),
        error: e.to_string(),
    };
    let db = match Db::open(dir, options()) {
        Ok(db) => db,
        Err(e) => return detected(&e),
    };
    let mut wrong: Vec<String> = Vec::new();
    let mut first_error: Option<spinney::Error> = None;
    let mut tables = Vec::new();
    for name in TABLES {
        match db.table(name) {
            Ok(t) => tables.push(t),
            // A catalog that lost a table reads as one: detected only if
            // the reads below would say so; the table is simply missing.
            Err(e) => return detected(&e),
        }
    }
    // What each table reads, key by key (None: absent; errors apart).
    let mut read: Vec<BTreeMap<Vec<u8>, Option<Vec<u8>>>> = vec![BTreeMap::new(); TABLES.len()];
    for (table, got) in tables.iter().zip(&mut read) {
        for k in expected.keys() {
            match table.get(k) {
                Ok(v) => {
                    got.insert(k.clone(), v);
                }
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
    }
    // Each table holds the base and a prefix of the tail, the same one.
    let mut held = Vec::new();
    for (name, got) in TABLES.iter().zip(&read) {
        match expected.prefix_in(got) {
            Ok(n) => held.push(n),
            Err(w) => wrong.push(format!("{name}: {w}")),
        }
    }
    if held.windows(2).any(|w| w[0] != w[1]) {
        wrong.push(format!(
            "the tables hold different prefixes of the tail: {held:?}"
        ));
    }
    // Scans agree with the point reads of their table.
    for ((name, table), got) in TABLES.iter().zip(&tables).zip(&read) {
        match table
            .iter()
            .and_then(|it| it.collect::<spinney::Result<BTreeMap<_, _>>>())
        {
            Ok(scanned) => {
                let points: BTreeMap<Vec<u8>, Vec<u8>> = got
                    .iter()
                    .filter_map(|(k, v)| v.clone().map(|v| (k.clone(), v)))
                    .collect();
                if scanned != points {
                    wrong.push(format!(
                        "{name}: a scan found {} entries, point reads {}",
                        scanned.len(),
                        points.len()
                    ));
                }
            }
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    if let Some(w) = wrong.into_iter().next() {
        return Outcome::Wrong(w);
    }
    if let Some(e) = first_error {
        return detected(&e);
    }
    if let Err(e) = db.verify() {
        return detected(&e);
    }
    match held.first() {
        Some(&n) if n < expected.tail.len() => Outcome::TailDropped,
        _ => Outcome::Harmless,
    }
}

/// The damage of one trial, applied to a copy of the files; a line that
/// says what it was.
fn damage(
    files: &mut BTreeMap<String, Vec<u8>>,
    rng: &mut SmallRng,
    exhaustive: &mut Vec<(String, usize)>,
) -> String {
    if let Some((name, at)) = exhaustive.pop() {
        let mask = rng.gen_range(1..=255u8);
        if let Some(b) = files.get_mut(&name).and_then(|f| f.get_mut(at)) {
            *b ^= mask;
        }
        return format!("{name} byte {at} ^ {mask:#04x}");
    }
    let names: Vec<String> = files
        .iter()
        .filter(|(_, b)| !b.is_empty())
        .map(|(n, _)| n.clone())
        .collect();
    let pick = |rng: &mut SmallRng| names[rng.gen_range(0..names.len())].clone();
    const PIECE: usize = 4096;
    if rng.gen_ratio(1, 10) {
        // A piece swapped within a file, or copied over from another.
        let (a, b) = (pick(rng), pick(rng));
        let (la, lb) = (files[&a].len(), files[&b].len());
        if la >= PIECE && lb >= PIECE {
            let at_a = rng.gen_range(0..=(la - PIECE) / PIECE) * PIECE;
            let at_b = rng.gen_range(0..=(lb - PIECE) / PIECE) * PIECE;
            let piece_b = files[&b][at_b..at_b + PIECE].to_vec();
            if a == b {
                let piece_a = files[&a][at_a..at_a + PIECE].to_vec();
                if let Some(f) = files.get_mut(&a) {
                    f[at_b..at_b + PIECE].copy_from_slice(&piece_a);
                    f[at_a..at_a + PIECE].copy_from_slice(&piece_b);
                }
                return format!("{a}: pieces at {at_a} and {at_b} swapped");
            }
            if let Some(f) = files.get_mut(&a) {
                f[at_a..at_a + PIECE].copy_from_slice(&piece_b);
            }
            return format!("{a} at {at_a}: the piece of {b} at {at_b} copied over");
        }
    }
    let name = pick(rng);
    let f = files.get_mut(&name).map(|f| {
        let at = rng.gen_range(0..f.len());
        let bit = rng.gen_range(0..8);
        f[at] ^= 1 << bit;
        (at, bit)
    });
    match f {
        Some((at, bit)) => format!("{name} byte {at} bit {bit}"),
        None => "nothing".into(),
    }
}

/// Every byte of the small regions where a damaged byte matters most.
fn exhaustive_targets(files: &BTreeMap<String, Vec<u8>>) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for (name, bytes) in files {
        let len = bytes.len();
        // (start, end) of each region.
        let regions: &[(usize, usize)] = if name == "CURRENT" || name.starts_with("MANIFEST-") {
            &[(0, len)]
        } else if name.ends_with(".sst") {
            &[(len.saturating_sub(64), len)]
        } else if name.ends_with(".btree") {
            &[(0, 88.min(len)), (4096.min(len), (4096 + 88).min(len))]
        } else if name.ends_with(".wal") {
            &[(0, 64.min(len))]
        } else {
            &[]
        };
        for &(start, end) in regions {
            out.extend((start..end).map(|at| (name.clone(), at)));
        }
    }
    out.reverse();
    out
}

/// Totals of a run.
#[derive(Debug, Default)]
pub struct Totals {
    pub trials: u64,
    pub detected: u64,
    pub detected_not_corruption: u64,
    pub harmless: u64,
    /// Trials of the unsynced image that read back all but a suffix of its
    /// unsynced commits.
    pub tail_dropped: u64,
    /// Trials of the unsynced image (one in four of the random ones).
    pub unsynced: u64,
    pub violations: u64,
}

/// Runs `count` trials in `work`, printing each violation.
pub fn run(count: u64, seed: u64, work: &Path) -> Result<Totals, String> {
    let built = work.join("built");
    std::fs::create_dir_all(&built).map_err(|e| e.to_string())?;
    let closed = build(&built, false)?;
    let built_open = work.join("built-unsynced");
    std::fs::create_dir_all(&built_open).map_err(|e| e.to_string())?;
    let unsynced = build(&built_open, true)?;
    let pristine = &closed.1;
    let dir: PathBuf = work.join("trial");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let mut exhaustive = exhaustive_targets(pristine);
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut totals = Totals::default();
    let mut not_corruption_seen = 0;
    let started = Instant::now();
    for n in 0..count {
        let image = if exhaustive.is_empty() && rng.gen_ratio(1, 4) {
            totals.unsynced += 1;
            &unsynced
        } else {
            &closed
        };
        let mut files = image.1.clone();
        let what = damage(&mut files, &mut rng, &mut exhaustive);
        restore(&dir, &files)?;
        let (tx, rx) = mpsc::channel();
        let (d, e) = (dir.clone(), image.0.clone());
        std::thread::spawn(move || {
            let outcome = std::panic::catch_unwind(|| trial(&d, &e));
            let _ = tx.send(outcome);
        });
        totals.trials += 1;
        match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(Ok(Outcome::Harmless)) => totals.harmless += 1,
            Ok(Ok(Outcome::TailDropped)) => totals.tail_dropped += 1,
            Ok(Ok(Outcome::Detected { corruption, error })) => {
                totals.detected += 1;
                if !corruption {
                    totals.detected_not_corruption += 1;
                    if not_corruption_seen < 5 {
                        not_corruption_seen += 1;
                        eprintln!("flip {n} ({what}): an error that is not Corruption: {error}");
                    }
                }
            }
            Ok(Ok(Outcome::Wrong(w))) => {
                totals.violations += 1;
                eprintln!("flip {n} ({what}): a wrong answer: {w}");
            }
            Ok(Err(_)) => {
                totals.violations += 1;
                eprintln!("flip {n} ({what}): panicked");
            }
            Err(_) => {
                totals.violations += 1;
                eprintln!("flip {n} ({what}): no answer in 20 s (a hang); stopping");
                break;
            }
        }
        if (n + 1) % 5000 == 0 {
            eprintln!(
                "{} flips, {} violations, {:.0} s",
                n + 1,
                totals.violations,
                started.elapsed().as_secs_f64()
            );
        }
    }
    Ok(totals)
}
