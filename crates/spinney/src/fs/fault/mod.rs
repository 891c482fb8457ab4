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
//!
//! The model of files and directories is in `state.rs`, what a crash makes
//! of it in `crash.rs`, and the handles (files, locks) in `handles.rs`.

mod crash;
mod handles;
mod state;
#[cfg(test)]
mod tests;

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use self::handles::{FaultLock, FaultPagedFile, FaultRandomAccessFile, FaultWritableFile, Held};
use self::state::{normalise, not_found, Dir, FileId, State};
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
