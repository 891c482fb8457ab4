//! `FaultFs`: an in-memory file system that enforces the durability contract
//! strictly and fails on demand, for tests.
//!
//! Model. A file is a node (think inode) with two byte strings: its current
//! bytes, which every read sees, and its durable bytes, as of its last
//! `WritableFile::sync`. A directory has two name tables: its current entries
//! and its durable entries, as of its last `Fs::sync_dir`. Creating,
//! renaming and removing a file change only the current entries. Directories
//! themselves are durable as soon as `create_dir_all` returns (the engine
//! creates its directory once, before anything that matters; modelling
//! directory durability would add cases without finding engine bugs).
//!
//! `crash` simulates power loss and reboot. What becomes of the writes and
//! directory changes made since the last sync is chosen by `PendingWrites`:
//! all lost; kept as a disk that writes in order would keep them (a prefix
//! of each appended file's unsynced tail, each positional write whole, torn
//! at a sector, or lost); or kept as a pessimistic disk would (each pending
//! write, appended or positional, independently kept, lost, torn at a
//! 512-byte sector, or filled with garbage, and a prefix of the directory
//! changes since each directory's last sync, in the order they were made, as
//! a journaling file system commits metadata). Handles opened before the
//! crash are dead afterwards (every call on them fails with EIO), locks are
//! released, and pending faults are dropped.
//!
//! Fault injection counts mutating operations. Exactly these calls count,
//! one each, whether they succeed or fail (a `remove` of a missing file
//! counts; so does a call made while crashed): `Fs::create`, `Fs::rename`,
//! `Fs::remove`, `Fs::create_dir_all`, `Fs::sync_dir`, and
//! `WritableFile::append`, `flush`, `sync`. Reads (`open`, `read_at`,
//! `list`, `exists`, `read_all`) and `lock` do not count. Operations are
//! numbered from 0; `inject(after_ops, kind)` makes operation number
//! `mutating_ops() + after_ops` fail, so `inject(0, ..)` fails the very next
//! mutating call; `inject_randomly` fails each with a seeded chance. The
//! counter never resets, not even at `crash`. Reads (`open`, `read_at`) are
//! numbered apart; `inject_read_errors` fails each with EIO by a seeded
//! chance.
//!
//! A failed operation changes nothing: an append that fails with EIO or
//! ENOSPC writes no byte, a failed sync makes nothing durable, a failed
//! rename leaves both names as they were.
//!
//! Thread-safety: all state sits behind one `parking_lot::Mutex`, shared by
//! the file system and its handles; every call takes it once.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::fmt;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use super::{FileLock, Fs, IoStats, PagedFile, RandomAccessFile, WritableFile};
use crate::error::{Error, Result};

/// ENOSPC on Linux and the BSDs.
const ENOSPC: i32 = 28;

/// How an injected fault fails an operation.
///
/// ```
/// # fn main() -> spinney::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// use spinney::fs::{FaultFs, FaultKind, PendingWrites};
/// let fs = FaultFs::new();
/// let options = spinney::Options { fs: fs.clone(), ..spinney::Options::default() };
/// let db = spinney::Db::open("/db", options.clone())?;
/// let t = db.create_table("t", spinney::TableOptions::lsm())?;
/// t.put(b"k", b"v")?;
/// fs.inject(0, FaultKind::NoSpace); // the disk is full, once
/// assert!(db.flush().is_err());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// The operation fails with EIO; later operations proceed.
    Eio,
    /// The operation fails with ENOSPC; later operations proceed.
    NoSpace,
    /// The machine dies at this operation: it and every later operation fail
    /// with EIO until `crash` is called.
    Crash,
}

/// What a crash (`FaultFs::crash_with`) does with the writes made since
/// each file's last sync and the directory changes made since each
/// directory's last sync. Every choice comes from the seed, so a crash image
/// is reproducible.
///
/// ```
/// # fn main() -> spinney::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// use spinney::fs::{FaultFs, FaultKind, PendingWrites};
/// let fs = FaultFs::new();
/// let options = spinney::Options { fs: fs.clone(), ..spinney::Options::default() };
/// let db = spinney::Db::open("/db", options.clone())?;
/// let t = db.create_table("t", spinney::TableOptions::lsm())?;
/// t.put(b"k", b"v")?;
/// drop((t, db));
/// // A disk that wrote the unsynced tail in order, then stopped somewhere.
/// fs.crash_with(PendingWrites::InOrder(7));
/// spinney::Db::open("/db", options)?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PendingWrites {
    /// All lost: every file and directory as of its last sync.
    Lost,
    /// A disk that writes in order and stops: each appended file keeps a
    /// prefix of its unsynced tail (cut anywhere); each positional write is
    /// kept whole, torn at a 512-byte sector, or lost; directories as of
    /// their last sync.
    InOrder(u64),
    /// A pessimistic disk: each pending write, appended or positional, is
    /// independently kept whole, lost, torn at a 512-byte sector, or filled
    /// with garbage (a later append may survive an earlier one, the gap
    /// reading as zeros); a truncation since the last sync is kept or not;
    /// and each directory keeps a prefix of its changes since its last
    /// sync, in the order they were made (a rename whole or not at all).
    Any(u64),
}

impl PendingWrites {
    /// The three ways, in turn by `n`, each with seed `seed`: for a crash
    /// suite to go through them at its crash points.
    ///
    /// ```
    /// use spinney::fs::PendingWrites;
    /// assert_eq!(PendingWrites::nth(0, 9), PendingWrites::Lost);
    /// assert_eq!(PendingWrites::nth(1, 9), PendingWrites::InOrder(9));
    /// assert_eq!(PendingWrites::nth(2, 9), PendingWrites::Any(9));
    /// ```
    pub fn nth(n: u64, seed: u64) -> PendingWrites {
        match n % 3 {
            0 => PendingWrites::Lost,
            1 => PendingWrites::InOrder(seed),
            _ => PendingWrites::Any(seed),
        }
    }
}

/// An in-memory file system that simulates crashes and I/O errors.
///
/// ```
/// # fn main() -> spinney::Result<()> {
/// use spinney::fs::FaultFs;
/// use spinney::{Db, Durability, Options, TableOptions};
/// let fs = FaultFs::new();
/// let options = Options { fs: fs.clone(), durability: Durability::Full, ..Options::default() };
/// let db = Db::open("/db", options.clone())?;
/// let t = db.create_table("t", TableOptions::btree())?;
/// t.put(b"k", b"v")?; // synced before it returns (Full)
/// drop((t, db));
/// fs.crash(None); // power lost: what was not synced is gone
/// let db = Db::open("/db", options)?;
/// assert_eq!(db.table("t")?.get(b"k")?, Some(b"v".to_vec()));
/// # Ok(()) }
/// ```
pub struct FaultFs {
    state: Arc<Mutex<State>>,
    stats: Arc<IoStats>,
}

/// Identifies a file node across renames, like an inode number.
type FileId = u64;

#[derive(Debug, Default)]
struct Node {
    /// What reads see now.
    data: Vec<u8>,
    /// What survives a crash.
    durable: Vec<u8>,
    /// True when `durable` is a prefix of `data`: the file has only grown
    /// since its last sync. Lets `sync` copy only the tail, and tells `crash`
    /// that the difference is an unsynced tail that may be torn.
    durable_is_prefix: bool,
    /// Writes since the last sync, in order. A crash decides the fate of
    /// each (`PendingWrites`).
    pending: Vec<Pending>,
    /// The shortest length the file was cut to (a truncating create,
    /// `set_len`) since its last sync: a pessimistic crash keeps the cut or
    /// not.
    cut_to: Option<usize>,
}

/// A write since a file's last sync.
#[derive(Debug)]
enum Pending {
    /// A positional write (paged files): where, and the bytes, which later
    /// writes may have overwritten in `data` since.
    At(usize, Vec<u8>),
    /// An append: where it began, and how long it was. Appended files are
    /// only appended to, so its bytes are still in `data` there.
    Appended(usize, usize),
}

impl Node {
    /// Makes every current byte durable, whatever was written where.
    fn sync_whole(&mut self) {
        self.durable.clone_from(&self.data);
        self.durable_is_prefix = true;
        self.pending.clear();
        self.cut_to = None;
    }

    /// Records a cut to `len` bytes.
    fn cut(&mut self, len: usize) {
        self.cut_to = Some(self.cut_to.map_or(len, |c| c.min(len)));
    }
}

/// A change of one directory entry since the directory's last sync: the
/// name now names `id`, or (None) nothing.
#[derive(Debug, Clone)]
struct EntryChange {
    dir: PathBuf,
    name: OsString,
    id: Option<FileId>,
    /// Changes with the same number happen together (a rename's two).
    op: u64,
}

#[derive(Debug, Default)]
struct Dir {
    /// File entries now (subdirectories are kept in `State::dirs`).
    entries: BTreeMap<OsString, FileId>,
    /// File entries as of the last `sync_dir`.
    durable: BTreeMap<OsString, FileId>,
}

#[derive(Debug)]
struct State {
    /// Every node that a current or durable entry, or a live handle, may
    /// refer to. Nodes that no durable entry names are dropped at `crash`.
    files: BTreeMap<FileId, Node>,
    /// Every directory, by normalised path. The roots "" and "/" always exist.
    dirs: BTreeMap<PathBuf, Dir>,
    next_file_id: FileId,
    /// Bumped at each `crash`; handles from an older generation are dead.
    generation: u64,
    /// Mutating operations started so far.
    mutating_ops: u64,
    /// Directory entry changes not yet made durable by a `sync_dir`, in
    /// the order they were made.
    entry_changes: Vec<EntryChange>,
    /// Pending faults: (operation number, kind), in injection order.
    faults: Vec<(u64, FaultKind)>,
    /// Faults by chance: (seed, one in how many operations, kind).
    random: Option<(u64, u64, FaultKind)>,
    /// Read errors by chance: (seed, one in how many reads). Reads are
    /// `open`, and `read_at` of either kind of file.
    read_faults: Option<(u64, u64)>,
    /// Reads started so far (numbering them for `read_faults`).
    reads: u64,
    /// True between a `FaultKind::Crash` firing and `FaultFs::crash`.
    crashed: bool,
    /// Held locks: path -> the tokens of the guards that hold it.
    locks: BTreeMap<PathBuf, Held>,
    next_lock_token: u64,
}

impl Default for State {
    fn default() -> Self {
        let mut dirs = BTreeMap::new();
        dirs.insert(PathBuf::new(), Dir::default());
        dirs.insert(PathBuf::from("/"), Dir::default());
        State {
            files: BTreeMap::new(),
            dirs,
            next_file_id: 0,
            generation: 0,
            mutating_ops: 0,
            entry_changes: Vec::new(),
            faults: Vec::new(),
            random: None,
            read_faults: None,
            reads: 0,
            crashed: false,
            locks: BTreeMap::new(),
            next_lock_token: 0,
        }
    }
}

/// Paths are map keys: drop `.` components and trailing slashes so that
/// "db/./x" and "db/x" name the same file. `..` is kept as written.
fn normalise(path: &Path) -> PathBuf {
    path.components()
        .filter(|c| !matches!(c, Component::CurDir))
        .collect()
}

fn injected_eio() -> io::Error {
    io::Error::other("injected EIO")
}

fn crashed_error() -> io::Error {
    io::Error::other("crashed: the simulated machine is down until FaultFs::crash")
}

fn dead_handle_error() -> io::Error {
    io::Error::other("crashed: handle opened before a simulated crash")
}

fn not_found(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, what.to_string())
}

/// splitmix64: a tiny, good-enough mixer for deterministic tear lengths.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl State {
    /// Numbers a mutating operation and decides whether it fails: because
    /// the machine is down, or because a fault was injected for it.
    fn begin_mutation(&mut self, op: &'static str, path: &Path) -> Result<()> {
        let number = self.mutating_ops;
        self.mutating_ops += 1;
        if self.crashed {
            return Err(Error::io(op, path, crashed_error()));
        }
        // A Crash aimed at this operation wins over an Eio or NoSpace aimed
        // at it too; otherwise the earliest injected fault wins.
        let mut fired: Option<FaultKind> = None;
        for &(at, kind) in &self.faults {
            if at == number && (fired.is_none() || kind == FaultKind::Crash) {
                fired = Some(kind);
            }
        }
        self.faults.retain(|&(at, _)| at > number);
        if let (None, Some((seed, one_in, kind))) = (fired, self.random) {
            if mix(seed ^ mix(number)).is_multiple_of(one_in.max(1)) {
                fired = Some(kind);
            }
        }
        match fired {
            None => Ok(()),
            Some(FaultKind::Eio) => Err(Error::io(op, path, injected_eio())),
            Some(FaultKind::NoSpace) => {
                Err(Error::io(op, path, io::Error::from_raw_os_error(ENOSPC)))
            }
            Some(FaultKind::Crash) => {
                self.crashed = true;
                Err(Error::io(op, path, crashed_error()))
            }
        }
    }

    /// Reads do not count as operations but fail while the machine is down.
    fn check_up(&self, op: &'static str, path: &Path) -> Result<()> {
        if self.crashed {
            return Err(Error::io(op, path, crashed_error()));
        }
        Ok(())
    }

    /// A read (`open`, `read_at`): fails while the machine is down, or by
    /// chance when read errors are injected.
    fn begin_read(&mut self, op: &'static str, path: &Path) -> Result<()> {
        self.check_up(op, path)?;
        let number = self.reads;
        self.reads += 1;
        if let Some((seed, one_in)) = self.read_faults {
            if mix(seed ^ mix(number) ^ 0x5eed).is_multiple_of(one_in.max(1)) {
                return Err(Error::io(op, path, injected_eio()));
            }
        }
        Ok(())
    }

    fn check_generation(&self, generation: u64, op: &'static str, path: &Path) -> Result<()> {
        if generation != self.generation {
            return Err(Error::io(op, path, dead_handle_error()));
        }
        Ok(())
    }

    /// The parent directory and file name of a normalised path.
    fn split<'p>(&self, op: &'static str, path: &'p Path) -> Result<(&'p Path, OsString)> {
        match (path.parent(), path.file_name()) {
            (Some(parent), Some(name)) => Ok((parent, name.to_os_string())),
            _ => Err(Error::io(
                op,
                path,
                io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"),
            )),
        }
    }

    /// The node a path names now, if it names a file.
    fn lookup(&self, path: &Path) -> Option<FileId> {
        let parent = path.parent()?;
        let name = path.file_name()?;
        self.dirs.get(parent)?.entries.get(name).copied()
    }

    fn node(&self, id: FileId, op: &'static str, path: &Path) -> Result<&Node> {
        self.files
            .get(&id)
            .ok_or_else(|| Error::io(op, path, not_found("file node is gone")))
    }

    fn node_mut(&mut self, id: FileId, op: &'static str, path: &Path) -> Result<&mut Node> {
        self.files
            .get_mut(&id)
            .ok_or_else(|| Error::io(op, path, not_found("file node is gone")))
    }

    /// Creates the file entry `path` if missing, else truncates its node (as
    /// `O_TRUNC` keeps the inode). Returns the node.
    fn create_or_truncate(
        &mut self,
        op: &'static str,
        path: &Path,
        truncate: bool,
    ) -> Result<FileId> {
        if self.dirs.contains_key(path) {
            return Err(Error::io(
                op,
                path,
                io::Error::new(io::ErrorKind::IsADirectory, "is a directory"),
            ));
        }
        let (parent, name) = self.split(op, path)?;
        if let Some(id) = self.lookup(path) {
            if truncate {
                let node = self.node_mut(id, op, path)?;
                node.data.clear();
                node.pending.clear();
                node.cut(0);
                node.durable_is_prefix = node.durable.is_empty();
            }
            return Ok(id);
        }
        let id = self.next_file_id;
        let dir = self
            .dirs
            .get_mut(parent)
            .ok_or_else(|| Error::io(op, path, not_found("parent directory does not exist")))?;
        dir.entries.insert(name.clone(), id);
        self.next_file_id += 1;
        let op_number = self.mutating_ops;
        self.entry_changed(parent, &name, Some(id), op_number);
        self.files.insert(
            id,
            Node {
                data: Vec::new(),
                durable: Vec::new(),
                durable_is_prefix: true,
                pending: Vec::new(),
                cut_to: None,
            },
        );
        Ok(id)
    }

    /// Records that `name` in `dir` now names `id` (or nothing), as part of
    /// operation `op`, for a pessimistic crash to keep or not.
    fn entry_changed(&mut self, dir: &Path, name: &OsString, id: Option<FileId>, op: u64) {
        self.entry_changes.push(EntryChange {
            dir: dir.to_path_buf(),
            name: name.clone(),
            id,
            op,
        });
    }

    /// Power loss and reboot; see the module comment and `PendingWrites`.
    fn crash(&mut self, mode: PendingWrites) {
        for dir in self.dirs.values_mut() {
            dir.entries = dir.durable.clone();
        }
        if let PendingWrites::Any(seed) = mode {
            // Directory changes reach the disk in order, a rename whole: a
            // prefix of them, cut between two operations, is kept.
            let changes = std::mem::take(&mut self.entry_changes);
            let ops = changes.iter().map(|c| c.op).collect::<BTreeSet<_>>();
            let kept_ops = (mix(seed ^ 0xd1) % (ops.len() as u64 + 1)) as usize;
            let last_kept = ops.iter().nth(kept_ops.wrapping_sub(1)).copied();
            for change in changes {
                if last_kept.is_none_or(|last| change.op > last) {
                    break;
                }
                if let Some(dir) = self.dirs.get_mut(&change.dir) {
                    match change.id {
                        Some(id) => dir.entries.insert(change.name, id),
                        None => dir.entries.remove(&change.name),
                    };
                }
            }
        }
        self.entry_changes.clear();
        let mut reachable = BTreeSet::new();
        for dir in self.dirs.values_mut() {
            dir.durable = dir.entries.clone();
            reachable.extend(dir.entries.values().copied());
        }
        self.files.retain(|id, _| reachable.contains(id));
        for (&id, node) in &mut self.files {
            match mode {
                PendingWrites::Lost => {}
                PendingWrites::InOrder(seed) => node.crash_in_order(id, seed),
                PendingWrites::Any(seed) => node.crash_any(id, seed),
            }
            node.data.clone_from(&node.durable);
            node.durable_is_prefix = true;
            node.pending.clear();
            node.cut_to = None;
        }
        self.generation += 1;
        self.locks.clear();
        self.faults.clear();
        self.random = None;
        self.read_faults = None;
        self.crashed = false;
    }
}

impl Node {
    /// `PendingWrites::InOrder`: positional writes each kept whole, torn (a
    /// prefix in 512-byte sectors) or lost; an appended file keeps a prefix
    /// of its unsynced tail.
    fn crash_in_order(&mut self, id: FileId, seed: u64) {
        for (i, pending) in self.pending.iter().enumerate() {
            let Pending::At(offset, bytes) = pending else {
                continue;
            };
            let roll = mix(seed ^ mix(id) ^ mix(i as u64 + 1));
            let kept = match roll % 3 {
                0 => 0,
                1 => bytes.len(),
                _ => ((roll >> 8) as usize % (bytes.len() / 512 + 1)) * 512,
            }
            .min(bytes.len());
            if let Some(src) = bytes.get(..kept) {
                overlay(&mut self.durable, *offset, src);
            }
        }
        let durable_len = self.durable.len();
        if self.durable_is_prefix && self.data.len() > durable_len {
            let unsynced = (self.data.len() - durable_len) as u64;
            let kept = mix(seed ^ mix(id)) % (unsynced + 1);
            let end = durable_len + kept as usize;
            if let Some(tail) = self.data.get(durable_len..end) {
                self.durable.extend_from_slice(tail);
            }
        }
    }

    /// `PendingWrites::Any`: each pending write on its own kept, lost, torn
    /// at a sector or filled with garbage; a cut kept or not.
    fn crash_any(&mut self, id: FileId, seed: u64) {
        if let Some(len) = self.cut_to {
            if mix(seed ^ mix(id) ^ 0xc7).is_multiple_of(2) {
                // The cut reached the disk; what was written after it is
                // below.
                self.durable.truncate(len);
            }
        }
        let pending = std::mem::take(&mut self.pending);
        for (i, write) in pending.iter().enumerate() {
            let (offset, bytes) = match write {
                Pending::At(offset, bytes) => (*offset, bytes.as_slice()),
                Pending::Appended(offset, len) => {
                    let Some(bytes) = self.data.get(*offset..offset + len) else {
                        continue;
                    };
                    (*offset, bytes)
                }
            };
            let roll = mix(seed ^ mix(id) ^ mix(i as u64 + 1));
            match roll % 4 {
                0 => {}
                1 => overlay(&mut self.durable, offset, bytes),
                2 => {
                    // Torn: whole sectors up to a boundary inside the write;
                    // a write within one sector is whole or lost.
                    let first = offset.div_ceil(512) * 512;
                    let end = offset + bytes.len();
                    let boundaries = if end > first { (end - first) / 512 } else { 0 };
                    if boundaries > 0 {
                        let at = first + ((roll >> 8) as usize % boundaries) * 512;
                        if let Some(kept) = bytes.get(..at - offset) {
                            overlay(&mut self.durable, offset, kept);
                        }
                    } else if (roll >> 8).is_multiple_of(2) {
                        overlay(&mut self.durable, offset, bytes);
                    }
                }
                _ => {
                    let garbage: Vec<u8> = (0..bytes.len())
                        .map(|j| mix(roll ^ mix(j as u64)) as u8)
                        .collect();
                    overlay(&mut self.durable, offset, &garbage);
                }
            }
        }
        self.pending = pending;
    }
}

/// Writes `bytes` into `file` at `offset`, growing it with zeros as needed.
fn overlay(file: &mut Vec<u8>, offset: usize, bytes: &[u8]) {
    let end = offset + bytes.len();
    if file.len() < end {
        file.resize(end, 0);
    }
    if let Some(dst) = file.get_mut(offset..end) {
        dst.copy_from_slice(bytes);
    }
}

/// The environment variable naming a file to which each crash image a
/// test suite reopened and checked appends one byte
/// (`count_checked_crash_image`), so that a torture run can count them
/// (`scripts/torture.sh`). Unset: nothing is counted.
pub const CRASH_COUNT_FILE: &str = "SPINNEY_CRASH_COUNT_FILE";

/// Counts one crash image that a test suite reopened after a simulated
/// power loss and checks (see `CRASH_COUNT_FILE`). Crashes that set a test
/// up, or whose image is crashed again before it is checked, are not
/// counted: the suites call this from their reopen after a crash.
pub fn count_checked_crash_image() {
    use std::io::Write;
    if let Some(path) = std::env::var_os(CRASH_COUNT_FILE) {
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = f.write_all(b".");
        }
    }
}

impl Default for FaultFs {
    fn default() -> Self {
        FaultFs {
            state: Arc::new(Mutex::new(State::default())),
            stats: Arc::new(IoStats::default()),
        }
    }
}

impl fmt::Debug for FaultFs {
    // The file contents would drown any assertion message; show the shape.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state.lock();
        f.debug_struct("FaultFs")
            .field("files", &state.files.len())
            .field("dirs", &state.dirs.len())
            .field("generation", &state.generation)
            .field("mutating_ops", &state.mutating_ops)
            .field("pending_faults", &state.faults)
            .field("crashed", &state.crashed)
            .finish()
    }
}

impl FaultFs {
    /// An empty file system whose roots ("" and "/") exist.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let fs = spinney::fs::FaultFs::new();
    /// let db = spinney::Db::open("/anywhere", spinney::Options { fs: fs.clone(), ..spinney::Options::default() })?;
    /// assert!(!fs.files().is_empty()); // in memory only
    /// # Ok(()) }
    /// ```
    pub fn new() -> Arc<FaultFs> {
        Arc::new(FaultFs::default())
    }

    /// Simulates power loss and reboot: directories and files go back to
    /// what was last synced (`PendingWrites::Lost`). With `Some(seed)`, as
    /// `PendingWrites::InOrder(seed)`: each file whose unsynced bytes extend
    /// its synced bytes keeps a prefix of 0..=all of those bytes, its length
    /// chosen from the seed and the file. Handles from before are dead,
    /// locks are released, pending faults are cleared, and a
    /// `FaultKind::Crash` that fired is over.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// use spinney::fs::{FaultFs, FaultKind, PendingWrites};
    /// let fs = FaultFs::new();
    /// let options = spinney::Options { fs: fs.clone(), ..spinney::Options::default() };
    /// let db = spinney::Db::open("/db", options.clone())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// t.put(b"k", b"v")?; // Normal durability: not synced
    /// fs.crash(None); // (a close would have synced it)
    /// drop((t, db));
    /// let db = spinney::Db::open("/db", options)?;
    /// assert_eq!(db.table("t")?.get(b"k")?, None); // lost with the power
    /// # Ok(()) }
    /// ```
    pub fn crash(&self, tear_seed: Option<u64>) {
        self.crash_with(tear_seed.map_or(PendingWrites::Lost, PendingWrites::InOrder));
    }

    /// Simulates power loss and reboot, with the writes and directory
    /// changes made since the last syncs kept as `pending` says. Otherwise
    /// as `crash`.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// use spinney::fs::{FaultFs, FaultKind, PendingWrites};
    /// let fs = FaultFs::new();
    /// let options = spinney::Options { fs: fs.clone(), ..spinney::Options::default() };
    /// let db = spinney::Db::open("/db", options.clone())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// drop((t, db));
    /// fs.crash_with(PendingWrites::Any(3)); // a pessimistic disk
    /// let db = spinney::Db::open("/db", options)?;
    /// db.table("t")?; // the table was made durable when it was created
    /// # Ok(()) }
    /// ```
    pub fn crash_with(&self, pending: PendingWrites) {
        self.state.lock().crash(pending);
    }

    /// Makes mutating operation number `mutating_ops() + after_ops` fail
    /// with `kind` (see the module comment for what counts). Several faults
    /// may be pending at once.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// use spinney::fs::{FaultFs, FaultKind};
    /// let fs = FaultFs::new();
    /// let db = spinney::Db::open("/db", spinney::Options { fs: fs.clone(), ..spinney::Options::default() })?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// t.put(b"k", b"v")?;
    /// fs.inject(0, FaultKind::Eio); // the next write to a file fails
    /// assert!(db.flush().is_err());
    /// assert!(t.put(b"k2", b"v").is_err()); // the database now refuses writes
    /// # Ok(()) }
    /// ```
    pub fn inject(&self, after_ops: u64, kind: FaultKind) {
        let mut state = self.state.lock();
        let at = state.mutating_ops.saturating_add(after_ops);
        state.faults.push((at, kind));
    }

    /// Makes each mutating operation from now on fail with `kind` with a
    /// chance of one in `one_in`, decided by `seed` and the operation's
    /// number (the same seed fails the same operations). Replaces an
    /// earlier such injection; cleared by `clear_faults` and `crash`.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// use spinney::fs::{FaultFs, FaultKind, PendingWrites};
    /// let fs = FaultFs::new();
    /// let options = spinney::Options { fs: fs.clone(), ..spinney::Options::default() };
    /// let db = spinney::Db::open("/db", options.clone())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// fs.inject_randomly(42, 3, FaultKind::Eio); // about one write in three fails
    /// let failed = (0..20u8).any(|i| t.put(&[i], b"v").and_then(|_| db.flush()).is_err());
    /// assert!(failed);
    /// # Ok(()) }
    /// ```
    pub fn inject_randomly(&self, seed: u64, one_in: u64, kind: FaultKind) {
        self.state.lock().random = Some((seed, one_in, kind));
    }

    /// Mutating operations started so far; never reset.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// use spinney::fs::{FaultFs, FaultKind, PendingWrites};
    /// let fs = FaultFs::new();
    /// let options = spinney::Options { fs: fs.clone(), ..spinney::Options::default() };
    /// let db = spinney::Db::open("/db", options.clone())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// let before = fs.mutating_ops();
    /// t.put(b"k", b"v")?;
    /// db.flush()?;
    /// assert!(fs.mutating_ops() > before);
    /// # Ok(()) }
    /// ```
    pub fn mutating_ops(&self) -> u64 {
        self.state.lock().mutating_ops
    }

    /// Makes each read from now on (`open`, and `read_at` of either kind of
    /// file) fail with EIO with a chance of one in `one_in`, decided by
    /// `seed` and the read's number. Cleared by `clear_faults` and `crash`.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// use spinney::fs::{FaultFs, FaultKind, PendingWrites};
    /// let fs = FaultFs::new();
    /// let options = spinney::Options { fs: fs.clone(), ..spinney::Options::default() };
    /// let db = spinney::Db::open("/db", options.clone())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// t.put(b"k", b"v")?;
    /// db.flush()?;
    /// drop((t, db));
    /// let db = spinney::Db::open("/db", options)?; // a cold cache
    /// fs.inject_read_errors(1, 1); // every read fails
    /// assert!(db.table("t")?.get(b"k").is_err());
    /// # Ok(()) }
    /// ```
    pub fn inject_read_errors(&self, seed: u64, one_in: u64) {
        self.state.lock().read_faults = Some((seed, one_in));
    }

    /// Drops every pending fault. A `FaultKind::Crash` that already fired
    /// stays in force until `crash`.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// use spinney::fs::{FaultFs, FaultKind, PendingWrites};
    /// let fs = FaultFs::new();
    /// let options = spinney::Options { fs: fs.clone(), ..spinney::Options::default() };
    /// let db = spinney::Db::open("/db", options.clone())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// fs.inject(0, FaultKind::Eio);
    /// fs.clear_faults(); // never mind
    /// t.put(b"k", b"v")?;
    /// db.flush()?;
    /// # Ok(()) }
    /// ```
    pub fn clear_faults(&self) {
        let mut state = self.state.lock();
        state.faults.clear();
        state.random = None;
        state.read_faults = None;
    }

    /// True when an injected `FaultKind::Crash` has fired and `crash` has
    /// not yet been called.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// use spinney::fs::{FaultFs, FaultKind, PendingWrites};
    /// let fs = FaultFs::new();
    /// let options = spinney::Options { fs: fs.clone(), ..spinney::Options::default() };
    /// let db = spinney::Db::open("/db", options.clone())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// t.put(b"k", b"v")?;
    /// fs.inject(0, FaultKind::Crash);
    /// assert!(db.flush().is_err());
    /// assert!(fs.is_crashed()); // until `crash` reboots it
    /// # Ok(()) }
    /// ```
    pub fn is_crashed(&self) -> bool {
        self.state.lock().crashed
    }

    /// XORs the byte at `offset` of the file at `path` with `xor`, in both
    /// its current and (if long enough) its durable bytes, as bit rot would.
    /// False if there is no such file or `offset` is past its current end.
    /// Works even while crashed: it is the test's hand, not the engine's.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// use spinney::fs::{FaultFs, FaultKind, PendingWrites};
    /// let fs = FaultFs::new();
    /// let options = spinney::Options { fs: fs.clone(), ..spinney::Options::default() };
    /// let db = spinney::Db::open("/db", options.clone())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// t.put(b"k", b"v")?;
    /// db.flush()?;
    /// let sst = fs.files().into_iter().find(|p| p.extension().is_some_and(|e| e == "sst")).unwrap();
    /// drop((t, db));
    /// assert!(fs.corrupt_byte(&sst, 0, 0xFF));
    /// let db = spinney::Db::open("/db", options)?;
    /// assert!(db.verify().is_err_and(|e| e.is_corruption()));
    /// # Ok(()) }
    /// ```
    pub fn corrupt_byte(&self, path: &Path, offset: u64, xor: u8) -> bool {
        let path = normalise(path);
        let mut state = self.state.lock();
        let Some(id) = state.lookup(&path) else {
            return false;
        };
        let Some(node) = state.files.get_mut(&id) else {
            return false;
        };
        let Ok(offset) = usize::try_from(offset) else {
            return false;
        };
        let Some(byte) = node.data.get_mut(offset) else {
            return false;
        };
        *byte ^= xor;
        if let Some(byte) = node.durable.get_mut(offset) {
            *byte ^= xor;
        }
        true
    }

    /// The current length of the file at `path`, if it exists.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// use spinney::fs::{FaultFs, FaultKind, PendingWrites};
    /// let fs = FaultFs::new();
    /// let options = spinney::Options { fs: fs.clone(), ..spinney::Options::default() };
    /// let db = spinney::Db::open("/db", options.clone())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// assert_eq!(fs.file_len(std::path::Path::new("/db/CURRENT")), Some(16)); // "MANIFEST-000002\n"
    /// assert_eq!(fs.file_len(std::path::Path::new("/db/none")), None);
    /// # Ok(()) }
    /// ```
    pub fn file_len(&self, path: &Path) -> Option<u64> {
        let path = normalise(path);
        let state = self.state.lock();
        let id = state.lookup(&path)?;
        state.files.get(&id).map(|node| node.data.len() as u64)
    }

    /// The paths of all files that exist now, sorted.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// use spinney::fs::{FaultFs, FaultKind, PendingWrites};
    /// let fs = FaultFs::new();
    /// let options = spinney::Options { fs: fs.clone(), ..spinney::Options::default() };
    /// let db = spinney::Db::open("/db", options.clone())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// assert!(fs.files().iter().any(|p| p.ends_with("CURRENT")));
    /// # Ok(()) }
    /// ```
    pub fn files(&self) -> Vec<PathBuf> {
        let state = self.state.lock();
        let mut paths: Vec<PathBuf> = state
            .dirs
            .iter()
            .flat_map(|(dir, entries)| entries.entries.keys().map(move |name| dir.join(name)))
            .collect();
        paths.sort();
        paths
    }

    fn writable(&self, id: FileId, generation: u64, path: PathBuf) -> FaultWritableFile {
        FaultWritableFile {
            state: Arc::clone(&self.state),
            stats: Arc::clone(&self.stats),
            id,
            generation,
            path,
            len: 0,
        }
    }
}

impl Fs for FaultFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let path = normalise(path);
        let mut state = self.state.lock();
        state.begin_mutation("create", &path)?;
        let id = state.create_or_truncate("create", &path, true)?;
        let generation = state.generation;
        drop(state);
        Ok(Box::new(self.writable(id, generation, path)))
    }

    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let path = normalise(path);
        let mut state = self.state.lock();
        state.begin_read("open", &path)?;
        let id = state
            .lookup(&path)
            .ok_or_else(|| Error::io("open", &path, not_found("no such file")))?;
        let len = state.node(id, "open", &path)?.data.len() as u64;
        Ok(Arc::new(FaultRandomAccessFile {
            state: Arc::clone(&self.state),
            stats: Arc::clone(&self.stats),
            id,
            generation: state.generation,
            path,
            len,
        }))
    }

    fn open_paged(&self, path: &Path, create: bool) -> Result<Arc<dyn PagedFile>> {
        let path = normalise(path);
        let mut state = self.state.lock();
        let id = match state.lookup(&path) {
            Some(id) => {
                state.begin_read("open", &path)?;
                id
            }
            None if create => {
                state.begin_mutation("create", &path)?;
                state.create_or_truncate("create", &path, false)?
            }
            None => return Err(Error::io("open", &path, not_found("no such file"))),
        };
        Ok(Arc::new(FaultPagedFile {
            state: Arc::clone(&self.state),
            stats: Arc::clone(&self.stats),
            id,
            generation: state.generation,
            path,
        }))
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        let from = normalise(from);
        let to = normalise(to);
        let mut state = self.state.lock();
        state.begin_mutation("rename", &from)?;
        let id = state
            .lookup(&from)
            .ok_or_else(|| Error::io("rename", &from, not_found("no such file")))?;
        if from == to {
            return Ok(());
        }
        if state.dirs.contains_key(&to) {
            return Err(Error::io(
                "rename",
                &to,
                io::Error::new(io::ErrorKind::IsADirectory, "target is a directory"),
            ));
        }
        let (from_parent, from_name) = state.split("rename", &from)?;
        let (to_parent, to_name) = state.split("rename", &to)?;
        if !state.dirs.contains_key(to_parent) {
            return Err(Error::io(
                "rename",
                &to,
                not_found("target directory does not exist"),
            ));
        }
        // Checked above: both directories exist.
        if let Some(dir) = state.dirs.get_mut(from_parent) {
            dir.entries.remove(&from_name);
        }
        if let Some(dir) = state.dirs.get_mut(to_parent) {
            dir.entries.insert(to_name.clone(), id);
        }
        let op = state.mutating_ops;
        state.entry_changed(from_parent, &from_name, None, op);
        state.entry_changed(to_parent, &to_name, Some(id), op);
        Ok(())
    }

    fn remove(&self, path: &Path) -> Result<()> {
        let path = normalise(path);
        let mut state = self.state.lock();
        state.begin_mutation("remove", &path)?;
        if state.lookup(&path).is_none() {
            return Err(Error::io("remove", &path, not_found("no such file")));
        }
        let (parent, name) = state.split("remove", &path)?;
        // The node stays: a durable entry may still name it, and open
        // handles keep working on it, as on a POSIX file system.
        if let Some(dir) = state.dirs.get_mut(parent) {
            dir.entries.remove(&name);
        }
        let op = state.mutating_ops;
        state.entry_changed(parent, &name, None, op);
        Ok(())
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        let dir = normalise(dir);
        let state = self.state.lock();
        state.check_up("list", &dir)?;
        let entries = state
            .dirs
            .get(&dir)
            .ok_or_else(|| Error::io("list", &dir, not_found("no such directory")))?;
        let files = entries.entries.keys().map(OsString::as_os_str);
        let subdirs = state
            .dirs
            .keys()
            .filter(|sub| sub.parent() == Some(dir.as_path()))
            .filter_map(|sub| sub.file_name());
        let mut names: Vec<String> = files
            .chain(subdirs)
            .filter_map(|name| name.to_str().map(str::to_string))
            .collect();
        names.sort();
        names.dedup();
        Ok(names)
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        let dir = normalise(dir);
        let mut state = self.state.lock();
        state.begin_mutation("mkdir", &dir)?;
        let mut missing: Vec<PathBuf> = Vec::new();
        for ancestor in dir.ancestors() {
            if state.dirs.contains_key(ancestor) {
                break;
            }
            if state.lookup(ancestor).is_some() {
                return Err(Error::io(
                    "mkdir",
                    ancestor,
                    io::Error::new(io::ErrorKind::NotADirectory, "a file has this name"),
                ));
            }
            missing.push(ancestor.to_path_buf());
        }
        for path in missing {
            state.dirs.insert(path, Dir::default());
        }
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        let dir = normalise(dir);
        let mut state = self.state.lock();
        state.begin_mutation("sync directory", &dir)?;
        let entries = state
            .dirs
            .get_mut(&dir)
            .ok_or_else(|| Error::io("open directory", &dir, not_found("no such directory")))?;
        entries.durable.clone_from(&entries.entries);
        state.entry_changes.retain(|c| c.dir != dir);
        self.stats.record_sync();
        Ok(())
    }

    fn exists(&self, path: &Path) -> Result<bool> {
        let path = normalise(path);
        let state = self.state.lock();
        state.check_up("stat", &path)?;
        Ok(state.dirs.contains_key(&path) || state.lookup(&path).is_some())
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        let path = normalise(path);
        let mut state = self.state.lock();
        state.check_up("lock", &path)?;
        if state.locks.contains_key(&path) {
            return Err(Error::Locked { path });
        }
        // Like OsFs, taking the lock creates the (empty) lock file.
        state.create_or_truncate("open lock file", &path, false)?;
        let token = state.next_lock_token;
        state.next_lock_token += 1;
        state.locks.insert(path.clone(), Held::Exclusive(token));
        Ok(Box::new(FaultLock {
            state: Arc::clone(&self.state),
            path,
            token,
        }))
    }

    fn lock_shared(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        let path = normalise(path);
        let mut state = self.state.lock();
        state.check_up("lock", &path)?;
        if matches!(state.locks.get(&path), Some(Held::Exclusive(_))) {
            return Err(Error::Locked { path });
        }
        // Like OsFs, the lock file is made only when it is missing.
        if state.lookup(&path).is_none() {
            state.create_or_truncate("open lock file", &path, false)?;
        }
        let token = state.next_lock_token;
        state.next_lock_token += 1;
        match state
            .locks
            .entry(path.clone())
            .or_insert_with(|| Held::Shared(BTreeSet::new()))
        {
            Held::Shared(tokens) => {
                tokens.insert(token);
            }
            Held::Exclusive(_) => return Err(Error::Locked { path }),
        }
        Ok(Box::new(FaultLock {
            state: Arc::clone(&self.state),
            path,
            token,
        }))
    }

    fn io_stats(&self) -> &IoStats {
        &self.stats
    }
}

/// Who holds a lock: one exclusive guard, or shared guards.
#[derive(Debug)]
enum Held {
    Exclusive(u64),
    Shared(BTreeSet<u64>),
}

/// Releases its lock on drop, unless a crash already did (and someone else
/// may hold the path since).
struct FaultLock {
    state: Arc<Mutex<State>>,
    path: PathBuf,
    token: u64,
}

impl fmt::Debug for FaultLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FaultLock")
            .field("path", &self.path)
            .field("token", &self.token)
            .finish()
    }
}

impl FileLock for FaultLock {}

impl Drop for FaultLock {
    fn drop(&mut self) {
        let mut state = self.state.lock();
        let released = match state.locks.get_mut(&self.path) {
            Some(Held::Exclusive(token)) => *token == self.token,
            Some(Held::Shared(tokens)) => {
                tokens.remove(&self.token);
                tokens.is_empty()
            }
            None => false,
        };
        if released {
            state.locks.remove(&self.path);
        }
    }
}

/// Appends go straight into the node's current bytes: there is no
/// user-space buffer, so `flush` only counts as an operation.
struct FaultWritableFile {
    state: Arc<Mutex<State>>,
    stats: Arc<IoStats>,
    id: FileId,
    generation: u64,
    path: PathBuf,
    len: u64,
}

impl WritableFile for FaultWritableFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        let mut state = self.state.lock();
        state.begin_mutation("write", &self.path)?;
        state.check_generation(self.generation, "write", &self.path)?;
        let node = state.node_mut(self.id, "write", &self.path)?;
        node.pending
            .push(Pending::Appended(node.data.len(), data.len()));
        node.data.extend_from_slice(data);
        self.len += data.len() as u64;
        self.stats.record_write(data.len());
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        let mut state = self.state.lock();
        state.begin_mutation("write", &self.path)?;
        state.check_generation(self.generation, "write", &self.path)
    }

    fn sync(&mut self) -> Result<()> {
        let mut state = self.state.lock();
        state.begin_mutation("sync", &self.path)?;
        state.check_generation(self.generation, "sync", &self.path)?;
        let node = state.node_mut(self.id, "sync", &self.path)?;
        if node.durable_is_prefix {
            // Append-only since the last sync: copy only the new tail, so
            // that a log synced after every write costs linear time.
            let synced = node.durable.len();
            if let Some(tail) = node.data.get(synced..) {
                node.durable.extend_from_slice(tail);
            }
            node.pending.clear();
            node.cut_to = None;
        } else {
            node.sync_whole();
        }
        self.stats.record_sync();
        Ok(())
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

/// Reads the node's current bytes, so a reader of a file still being
/// appended sees the appends. `len` stays the length at open.
struct FaultRandomAccessFile {
    state: Arc<Mutex<State>>,
    stats: Arc<IoStats>,
    id: FileId,
    generation: u64,
    path: PathBuf,
    len: u64,
}

impl RandomAccessFile for FaultRandomAccessFile {
    fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        let mut state = self.state.lock();
        state.begin_read("read", &self.path)?;
        state.check_generation(self.generation, "read", &self.path)?;
        let data = &state.node(self.id, "read", &self.path)?.data;
        let bytes = usize::try_from(offset)
            .ok()
            .and_then(|start| Some(start..start.checked_add(len)?))
            .and_then(|range| data.get(range));
        let Some(bytes) = bytes else {
            return Err(Error::io(
                "read",
                &self.path,
                io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!(
                        "read of {len} bytes at offset {offset} past the end ({} bytes)",
                        data.len()
                    ),
                ),
            ));
        };
        let bytes = bytes.to_vec();
        self.stats.record_read(len);
        Ok(bytes)
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

/// Positional reads and writes of a node's current bytes; writes are
/// remembered until `sync` so that a crash can reorder and tear them.
struct FaultPagedFile {
    state: Arc<Mutex<State>>,
    stats: Arc<IoStats>,
    id: FileId,
    generation: u64,
    path: PathBuf,
}

impl PagedFile for FaultPagedFile {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let mut state = self.state.lock();
        state.begin_read("read", &self.path)?;
        state.check_generation(self.generation, "read", &self.path)?;
        let data = &state.node(self.id, "read", &self.path)?.data;
        let start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(data.len());
        let end = start.saturating_add(buf.len()).min(data.len());
        let n = end - start;
        if let (Some(dst), Some(src)) = (buf.get_mut(..n), data.get(start..end)) {
            dst.copy_from_slice(src);
        }
        self.stats.record_read(n);
        Ok(n)
    }

    fn write_at(&self, offset: u64, data: &[u8]) -> Result<()> {
        let mut state = self.state.lock();
        state.begin_mutation("write", &self.path)?;
        state.check_generation(self.generation, "write", &self.path)?;
        let start = usize::try_from(offset).map_err(|_| {
            Error::io(
                "write",
                &self.path,
                io::Error::new(io::ErrorKind::InvalidInput, "offset too large"),
            )
        })?;
        let end = start + data.len();
        let node = state.node_mut(self.id, "write", &self.path)?;
        if node.data.len() < end {
            node.data.resize(end, 0);
        }
        if let Some(dst) = node.data.get_mut(start..end) {
            dst.copy_from_slice(data);
        }
        node.durable_is_prefix = false;
        node.pending.push(Pending::At(start, data.to_vec()));
        self.stats.record_write(data.len());
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        let mut state = self.state.lock();
        state.begin_mutation("sync", &self.path)?;
        state.check_generation(self.generation, "sync", &self.path)?;
        state.node_mut(self.id, "sync", &self.path)?.sync_whole();
        self.stats.record_sync();
        Ok(())
    }

    /// Reads see the new length at once; the durable length changes only
    /// at the next sync, so a crash before it keeps the old length (with
    /// whatever pending writes it keeps below it).
    fn set_len(&self, len: u64) -> Result<()> {
        let mut state = self.state.lock();
        state.begin_mutation("truncate", &self.path)?;
        state.check_generation(self.generation, "truncate", &self.path)?;
        let len = usize::try_from(len).map_err(|_| {
            Error::io(
                "truncate",
                &self.path,
                io::Error::new(io::ErrorKind::InvalidInput, "length too large"),
            )
        })?;
        let node = state.node_mut(self.id, "truncate", &self.path)?;
        if node.data.len() > len {
            node.cut(len);
        }
        node.data.resize(len, 0);
        if node.durable.len() > len {
            node.durable_is_prefix = false;
        }
        Ok(())
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io_kind(result: Result<impl Sized>) -> io::ErrorKind {
        match result {
            Err(Error::Io { source, .. }) => source.kind(),
            Err(other) => panic!("expected an I/O error, got {other}"),
            Ok(_) => panic!("expected an I/O error, got success"),
        }
    }

    fn io_message(result: Result<impl Sized>) -> String {
        match result {
            Err(Error::Io { source, .. }) => source.to_string(),
            Err(other) => panic!("expected an I/O error, got {other}"),
            Ok(_) => panic!("expected an I/O error, got success"),
        }
    }

    /// A file system with the directory "db", made durable.
    fn fs_with_db() -> Arc<FaultFs> {
        let fs = FaultFs::new();
        fs.create_dir_all(Path::new("db")).expect("mkdir");
        fs
    }

    /// Creates `path` holding `data`, synced, and its entry synced.
    fn write_durable(fs: &FaultFs, path: &str, data: &[u8]) {
        let path = Path::new(path);
        let mut file = fs.create(path).expect("create");
        file.append(data).expect("append");
        file.sync().expect("sync");
        fs.sync_dir(path.parent().expect("parent"))
            .expect("sync_dir");
    }

    fn read(fs: &FaultFs, path: &str) -> Vec<u8> {
        fs.read_all(Path::new(path)).expect("read_all")
    }

    #[test]
    fn unsynced_appends_are_lost_on_crash() {
        // Goal: bytes appended after the last sync do not survive a crash.
        let fs = fs_with_db();
        write_durable(&fs, "db/f", b"synced");
        let mut file = fs.create(Path::new("db/f")).expect("create");
        file.append(b"synced").expect("append");
        file.sync().expect("sync");
        file.append(b"+lost").expect("append");
        file.flush().expect("flush");
        assert_eq!(read(&fs, "db/f"), b"synced+lost");
        fs.crash(None);
        assert_eq!(read(&fs, "db/f"), b"synced");
    }

    #[test]
    fn synced_data_and_entries_survive_crash() {
        let fs = fs_with_db();
        write_durable(&fs, "db/f", b"hello");
        fs.crash(None);
        assert_eq!(read(&fs, "db/f"), b"hello");
        assert_eq!(fs.list(Path::new("db")).expect("list"), vec!["f"]);
    }

    #[test]
    fn create_without_sync_dir_is_lost_on_crash() {
        // Goal: a synced file whose directory entry was never synced is gone.
        let fs = fs_with_db();
        let mut file = fs.create(Path::new("db/new")).expect("create");
        file.append(b"data").expect("append");
        file.sync().expect("sync");
        fs.crash(None);
        assert!(!fs.exists(Path::new("db/new")).expect("exists"));
        assert_eq!(fs.files(), Vec::<PathBuf>::new());
    }

    #[test]
    fn rename_without_sync_dir_is_undone_by_crash() {
        // Goal: after a crash the old name is back with its durable bytes and
        // a replaced target has its old contents again.
        let fs = fs_with_db();
        write_durable(&fs, "db/CURRENT", b"old");
        write_durable(&fs, "db/tmp", b"new");
        fs.rename(Path::new("db/tmp"), Path::new("db/CURRENT"))
            .expect("rename");
        assert_eq!(read(&fs, "db/CURRENT"), b"new");
        assert!(!fs.exists(Path::new("db/tmp")).expect("exists"));
        fs.crash(None);
        assert_eq!(read(&fs, "db/CURRENT"), b"old");
        assert_eq!(read(&fs, "db/tmp"), b"new");

        // With the directory synced the rename sticks.
        fs.rename(Path::new("db/tmp"), Path::new("db/CURRENT"))
            .expect("rename");
        fs.sync_dir(Path::new("db")).expect("sync_dir");
        fs.crash(None);
        assert_eq!(read(&fs, "db/CURRENT"), b"new");
        assert_eq!(fs.list(Path::new("db")).expect("list"), vec!["CURRENT"]);
    }

    #[test]
    fn remove_without_sync_dir_is_undone_by_crash() {
        let fs = fs_with_db();
        write_durable(&fs, "db/f", b"kept");
        fs.remove(Path::new("db/f")).expect("remove");
        assert!(!fs.exists(Path::new("db/f")).expect("exists"));
        fs.crash(None);
        assert_eq!(read(&fs, "db/f"), b"kept");
    }

    #[test]
    fn truncating_create_without_sync_restores_old_bytes() {
        // Goal: `create` of an existing name truncates the same node; until
        // synced, a crash brings the old bytes back, and no tear applies.
        let fs = fs_with_db();
        write_durable(&fs, "db/f", b"old contents");
        let mut file = fs.create(Path::new("db/f")).expect("create");
        file.append(b"new contents, longer").expect("append");
        fs.crash(Some(7));
        assert_eq!(read(&fs, "db/f"), b"old contents");
    }

    #[test]
    fn torn_tail_keeps_a_prefix_of_unsynced_bytes_and_never_more() {
        // Goal: across many seeds, the file after a torn crash is the synced
        // bytes plus a prefix of the unsynced ones, and the prefix length
        // varies from none to all.
        let synced = b"synced:".to_vec();
        let unsynced: Vec<u8> = (0u8..32).collect();
        let mut lengths = BTreeSet::new();
        for seed in 0..200 {
            let fs = fs_with_db();
            let mut file = fs.create(Path::new("db/log")).expect("create");
            file.append(&synced).expect("append");
            file.sync().expect("sync");
            fs.sync_dir(Path::new("db")).expect("sync_dir");
            file.append(&unsynced).expect("append");
            fs.crash(Some(seed));
            let after = read(&fs, "db/log");
            assert!(after.len() <= synced.len() + unsynced.len(), "seed {seed}");
            let (head, tail) = after.split_at(synced.len());
            assert_eq!(head, synced.as_slice(), "seed {seed}");
            assert_eq!(tail, &unsynced[..tail.len()], "seed {seed}");
            lengths.insert(tail.len());
            // What the tear kept is now durable.
            fs.crash(None);
            assert_eq!(read(&fs, "db/log"), after, "seed {seed}");
        }
        assert!(lengths.len() > 10, "tear lengths barely vary: {lengths:?}");
    }

    #[test]
    fn eio_fails_exactly_the_chosen_op() {
        // Goal: inject(2, Eio) fails the third mutating call and no other.
        let fs = fs_with_db();
        let mut file = fs.create(Path::new("db/f")).expect("create");
        let start = fs.mutating_ops();
        fs.inject(2, FaultKind::Eio);
        file.append(b"a").expect("op 0");
        file.append(b"b").expect("op 1");
        match file.append(b"c") {
            Err(Error::Io { source, .. }) => {
                assert_eq!(source.kind(), io::ErrorKind::Other);
                assert_eq!(source.to_string(), "injected EIO");
            }
            other => panic!("expected EIO, got {:?}", other.map(|_| ())),
        }
        assert_eq!(fs.mutating_ops(), start + 3);
        // The failed append wrote nothing; the op after it is unharmed.
        file.append(b"d").expect("op 3");
        assert_eq!(read(&fs, "db/f"), b"abd");
        // Reads do not count.
        fs.inject(0, FaultKind::Eio);
        fs.list(Path::new("db")).expect("list");
        fs.open(Path::new("db/f")).expect("open");
        assert!(fs.sync_dir(Path::new("db")).is_err());
        fs.sync_dir(Path::new("db")).expect("second sync_dir");
    }

    #[test]
    fn no_space_is_enospc_and_writes_nothing() {
        let fs = fs_with_db();
        let mut file = fs.create(Path::new("db/f")).expect("create");
        file.append(b"kept").expect("append");
        fs.inject(0, FaultKind::NoSpace);
        match file.append(b"refused") {
            Err(Error::Io { source, op, .. }) => {
                assert_eq!(source.raw_os_error(), Some(ENOSPC));
                assert_eq!(op, "write");
            }
            other => panic!("expected ENOSPC, got {:?}", other.map(|_| ())),
        }
        assert_eq!(read(&fs, "db/f"), b"kept");
        assert_eq!(file.len(), 4);
    }

    #[test]
    fn several_faults_fire_in_turn_and_clear_faults_drops_them() {
        let fs = fs_with_db();
        fs.inject(0, FaultKind::Eio);
        fs.inject(1, FaultKind::NoSpace);
        fs.inject(5, FaultKind::Eio);
        assert!(fs.sync_dir(Path::new("db")).is_err());
        assert!(fs.sync_dir(Path::new("db")).is_err());
        fs.clear_faults();
        for _ in 0..10 {
            fs.sync_dir(Path::new("db")).expect("sync_dir");
        }
    }

    #[test]
    fn crash_fault_fails_everything_until_crash() {
        // Goal: once a Crash fault fires, every call fails, reads included,
        // and `crash` ends it and rolls back to what was durable.
        let fs = fs_with_db();
        write_durable(&fs, "db/f", b"durable");
        let reader = fs.open(Path::new("db/f")).expect("open");
        let mut file = fs.create(Path::new("db/g")).expect("create");
        fs.inject(1, FaultKind::Crash);
        file.append(b"x").expect("op 0");
        assert!(io_message(file.sync()).contains("crashed"));
        assert!(fs.is_crashed());
        assert!(file.append(b"y").is_err());
        assert!(fs.open(Path::new("db/f")).is_err());
        assert!(reader.read_at(0, 1).is_err());
        assert!(fs.list(Path::new("db")).is_err());
        assert!(fs.exists(Path::new("db/f")).is_err());
        assert!(fs.lock(Path::new("db/LOCK")).is_err());
        assert!(fs.create(Path::new("db/h")).is_err());
        fs.crash(None);
        assert!(!fs.is_crashed());
        assert_eq!(read(&fs, "db/f"), b"durable");
        assert!(!fs.exists(Path::new("db/g")).expect("exists"));
    }

    #[test]
    fn handles_from_before_a_crash_are_dead() {
        let fs = fs_with_db();
        write_durable(&fs, "db/f", b"abc");
        let mut file = fs.create(Path::new("db/g")).expect("create");
        fs.sync_dir(Path::new("db")).expect("sync_dir");
        let reader = fs.open(Path::new("db/f")).expect("open");
        fs.crash(None);
        assert!(io_message(file.append(b"late")).contains("crashed"));
        assert!(file.sync().is_err());
        assert!(reader.read_at(0, 1).is_err());
        // New handles on the same files work.
        let reader = fs.open(Path::new("db/f")).expect("open");
        assert_eq!(reader.read_at(1, 2).expect("read"), b"bc");
        assert_eq!(fs.file_len(Path::new("db/g")), Some(0));
    }

    #[test]
    fn lock_conflicts_until_guard_drops() {
        let fs = fs_with_db();
        let lock_path = Path::new("db/LOCK");
        let guard = fs.lock(lock_path).expect("lock");
        match fs.lock(lock_path) {
            Err(Error::Locked { path }) => assert_eq!(path, lock_path),
            other => panic!("expected Locked, got {:?}", other.map(|_| ())),
        }
        drop(guard);
        let guard = fs.lock(lock_path).expect("relock after drop");
        // A crash releases it; the stale guard must not release the new one.
        fs.crash(None);
        let fresh = fs.lock(lock_path).expect("lock after crash");
        drop(guard);
        assert!(matches!(fs.lock(lock_path), Err(Error::Locked { .. })));
        drop(fresh);
        fs.lock(lock_path).expect("lock after release");
    }

    #[test]
    fn reads_see_appends_and_fail_past_the_end() {
        let fs = fs_with_db();
        let mut file = fs.create(Path::new("db/f")).expect("create");
        file.append(b"abc").expect("append");
        let reader = fs.open(Path::new("db/f")).expect("open");
        file.append(b"def").expect("append");
        assert_eq!(reader.len(), 3);
        assert_eq!(reader.read_at(2, 3).expect("read"), b"cde");
        assert_eq!(io_kind(reader.read_at(4, 3)), io::ErrorKind::UnexpectedEof);
        assert_eq!(
            io_kind(reader.read_at(u64::MAX, 1)),
            io::ErrorKind::UnexpectedEof
        );
        assert_eq!(fs.io_stats().snapshot().bytes_read, 3);
        assert_eq!(fs.io_stats().snapshot().bytes_written, 6);
    }

    #[test]
    fn missing_files_and_directories_are_not_found() {
        let fs = fs_with_db();
        assert_eq!(
            io_kind(fs.open(Path::new("db/nope"))),
            io::ErrorKind::NotFound
        );
        assert_eq!(
            io_kind(fs.remove(Path::new("db/nope"))),
            io::ErrorKind::NotFound
        );
        assert_eq!(
            io_kind(fs.rename(Path::new("db/nope"), Path::new("db/x"))),
            io::ErrorKind::NotFound
        );
        assert_eq!(
            io_kind(fs.create(Path::new("other/f"))),
            io::ErrorKind::NotFound
        );
        assert_eq!(
            io_kind(fs.list(Path::new("other"))),
            io::ErrorKind::NotFound
        );
        assert_eq!(
            io_kind(fs.sync_dir(Path::new("other"))),
            io::ErrorKind::NotFound
        );
    }

    #[test]
    fn list_is_sorted_and_includes_subdirectories() {
        let fs = fs_with_db();
        fs.create_dir_all(Path::new("db/sub/deeper"))
            .expect("mkdir");
        for name in ["db/b", "db/a", "db/./c"] {
            fs.create(Path::new(name)).expect("create");
        }
        assert_eq!(
            fs.list(Path::new("db/")).expect("list"),
            vec!["a", "b", "c", "sub"]
        );
        assert!(fs.exists(Path::new("db/sub")).expect("exists"));
        assert_eq!(
            fs.files(),
            vec![
                PathBuf::from("db/a"),
                PathBuf::from("db/b"),
                PathBuf::from("db/c")
            ]
        );
        // Directories are durable at once; their entries are not.
        fs.crash(None);
        assert_eq!(fs.list(Path::new("db")).expect("list"), vec!["sub"]);
    }

    #[test]
    fn corrupt_byte_flips_current_and_durable_bytes() {
        let fs = fs_with_db();
        write_durable(&fs, "db/f", b"\x00\x01");
        assert!(fs.corrupt_byte(Path::new("db/f"), 1, 0xff));
        assert!(!fs.corrupt_byte(Path::new("db/f"), 2, 0xff));
        assert!(!fs.corrupt_byte(Path::new("db/nope"), 0, 0xff));
        fs.crash(None);
        assert_eq!(read(&fs, "db/f"), b"\x00\xfe");
        assert_eq!(fs.file_len(Path::new("db/f")), Some(2));
    }

    #[test]
    fn unsynced_page_writes_are_kept_whole_torn_or_lost_on_crash() {
        // Goal: a crash keeps synced page bytes exactly, and each unsynced
        // positional write is either fully there, a sector prefix, or absent.
        for seed in 0..40u64 {
            let fs = fs_with_db();
            let path = Path::new("db/f.btree");
            let f = fs.open_paged(path, true).expect("open");
            fs.sync_dir(Path::new("db")).expect("sync dir");
            f.write_at(0, &[1u8; 4096]).expect("write");
            f.sync().expect("sync");
            f.write_at(0, &[2u8; 4096]).expect("write");
            f.write_at(4096, &[3u8; 4096]).expect("write");
            fs.crash(Some(seed));
            let f = fs.open_paged(path, false).expect("reopen");
            let mut buf = vec![0u8; 8192];
            let n = f.read_at(0, &mut buf).expect("read");
            assert!(n >= 4096 && n.is_multiple_of(512), "length {n}");
            let first = buf.get(..4096).expect("first page");
            let switch = first.iter().position(|&b| b != 2).unwrap_or(4096);
            assert!(first.iter().skip(switch).all(|&b| b == 1), "seed {seed}");
            assert_eq!(switch % 512, 0);
            assert!(buf.get(4096..n).expect("tail").iter().all(|&b| b == 3));
        }
    }

    /// What one append's region holds after a pessimistic crash.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
    enum Fate {
        Kept,
        Lost,
        Torn,
        Garbage,
    }

    /// Names the fate of `expected` in `file` at `offset`: whole, zeros
    /// (or past the end), whole sectors of it then zeros, or neither
    /// (garbage). Garbage is told by a byte that is neither its nor zero.
    fn fate(file: &[u8], offset: usize, expected: &[u8]) -> Fate {
        let region = file.get(offset..).unwrap_or(&[]);
        let region = region.get(..expected.len()).unwrap_or(region);
        if region == expected {
            return Fate::Kept;
        }
        if region.iter().all(|&b| b == 0) {
            return Fate::Lost;
        }
        let same = region
            .iter()
            .zip(expected)
            .take_while(|(a, b)| a == b)
            .count();
        let rest_zero = region.get(same..).unwrap_or(&[]).iter().all(|&b| b == 0);
        if rest_zero && (offset + same).is_multiple_of(512) {
            Fate::Torn
        } else {
            Fate::Garbage
        }
    }

    #[test]
    fn a_pessimistic_crash_decides_each_append_on_its_own() {
        // Goal: under `PendingWrites::Any` every unsynced append is kept,
        // lost, torn at a sector or filled with garbage, each on its own
        // (a later one may outlive an earlier one), and synced bytes stay.
        // Method: three unsynced appends of 1,000 bytes after a synced
        // one, 200 seeds; every region must be one of the four, and every
        // combination of "first lost, a later one kept" must be seen.
        let appends: Vec<Vec<u8>> = (1..=3u8).map(|i| vec![i; 1000]).collect();
        let mut seen = BTreeSet::new();
        let mut later_outlived_earlier = false;
        for seed in 0..200u64 {
            let fs = fs_with_db();
            write_durable(&fs, "db/log", &[9u8; 100]);
            let mut file = fs.create(Path::new("db/log")).expect("create");
            file.append(&[9u8; 100]).expect("append");
            file.sync().expect("sync");
            for bytes in &appends {
                file.append(bytes).expect("append");
            }
            fs.crash_with(PendingWrites::Any(seed));
            let after = read(&fs, "db/log");
            assert!(after.len() <= 3100, "seed {seed}: {} bytes", after.len());
            assert_eq!(after.get(..100), Some(&[9u8; 100][..]), "seed {seed}");
            let fates: Vec<Fate> = appends
                .iter()
                .enumerate()
                .map(|(i, bytes)| fate(&after, 100 + i * 1000, bytes))
                .collect();
            later_outlived_earlier |= fates[0] == Fate::Lost && fates[2] == Fate::Kept;
            seen.extend(fates);
        }
        assert_eq!(seen.len(), 4, "fates seen: {seen:?}");
        assert!(later_outlived_earlier);
    }

    #[test]
    fn a_pessimistic_crash_keeps_a_prefix_of_the_directory_changes() {
        // Goal: under `PendingWrites::Any` a directory keeps the changes
        // made since its last sync up to some point, in order, and a rename
        // whole: never a later change without an earlier one.
        let prefixes: [&[&str]; 5] = [&[], &["a"], &["a", "b"], &["b", "c"], &["c"]];
        let mut seen = BTreeSet::new();
        for seed in 0..100u64 {
            let fs = fs_with_db();
            for name in ["db/a", "db/b"] {
                let mut f = fs.create(Path::new(name)).expect("create");
                f.append(b"x").expect("append");
                f.sync().expect("sync");
            }
            fs.rename(Path::new("db/a"), Path::new("db/c"))
                .expect("rename");
            fs.remove(Path::new("db/b")).expect("remove");
            fs.crash_with(PendingWrites::Any(seed));
            let names = fs.list(Path::new("db")).expect("list");
            let at = prefixes
                .iter()
                .position(|p| names == *p)
                .unwrap_or_else(|| panic!("seed {seed}: {names:?} is no prefix of the changes"));
            seen.insert(at);
        }
        assert_eq!(seen.len(), prefixes.len(), "prefixes seen: {seen:?}");
    }

    #[test]
    fn a_pessimistic_crash_keeps_an_unsynced_cut_or_not() {
        // Goal: a truncating create not yet synced is, after a crash under
        // `PendingWrites::Any`, either undone (the old bytes) or done (what
        // was appended since, each append with its own fate).
        let mut old = 0;
        let mut cut = 0;
        for seed in 0..60u64 {
            let fs = fs_with_db();
            write_durable(&fs, "db/CURRENT", b"MANIFEST-000001\n");
            let mut file = fs.create(Path::new("db/CURRENT")).expect("create");
            file.append(b"MANIFEST-000002\n").expect("append");
            fs.crash_with(PendingWrites::Any(seed));
            let after = read(&fs, "db/CURRENT");
            if after == b"MANIFEST-000001\n" {
                old += 1;
            } else {
                assert!(after.len() <= 16, "seed {seed}: {after:?}");
                cut += 1;
            }
        }
        assert!(old > 0 && cut > 0, "old {old}, cut {cut}");
    }

    #[test]
    fn fault_fs_is_send_sync_debug() {
        fn assert_traits<T: Send + Sync + fmt::Debug>() {}
        assert_traits::<FaultFs>();
        let fs: Arc<dyn Fs> = FaultFs::new();
        assert!(format!("{fs:?}").contains("FaultFs"));
    }
}
