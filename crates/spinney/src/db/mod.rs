//! `Db`: the database. Open and close, the state its parts share
//! (`DbInner`, `VersionSet`), writes and the work behind them; the catalog
//! of tables (`catalog.rs`) and the handles users hold (`table.rs`,
//! `snapshot.rs`, `cursor.rs`) have files of their own.
//!
//! Thread-safety: `Db` is `Send + Sync`; share it by reference or in an
//! `Arc`. Writers go through one group-commit queue (`write.rs`); readers take
//! a table's `SuperVersion` and read without locks; background threads (or
//! writers, or the application) run flushes and compactions (`work.rs`).
//!
//! Lock order, to stay free of deadlocks: `writers` → `commit` → `bg` → `vs`
//! → `wal` → a table's super-version lock; a thread holding a later lock
//! never takes an earlier one. A table's `work` lock is taken only under
//! `bg`, and nothing is taken under it. `wal_removal` (only
//! `log::delete_obsolete` takes it) comes before `vs` and `wal`, and no
//! earlier lock is taken under it.

mod batch;
mod btree_work;
mod catalog;
mod cleaner;
mod core;
mod cursor;
mod log;
mod open;
mod recovered;
mod roll;
mod snapshot;
mod stats;
mod table;
mod transaction;
#[cfg(test)]
mod vacuum_tests;
mod work;
mod write;

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::Instant;

use parking_lot::{Condvar, Mutex};

pub use self::batch::WriteBatch;
pub use self::catalog::TableInfo;
pub(crate) use self::core::Core;
pub(crate) use self::log::Wal;
pub use cursor::{Cursor, Range};
pub use snapshot::Snapshot;
pub use stats::{BtreeStats, LevelStats, Shape, ShapeLevel, Stats, TableStats};
pub use table::{ReadOptions, Table};
pub use transaction::{Transaction, TxRange};
pub use work::WorkDone;

use crate::cache::Cache;
use crate::error::{Error, Result};
use crate::fs::{FileLock, Fs};
use crate::lsm::version::Version;
use crate::manifest::VersionEdit;
use crate::mvcc::Horizon;
use crate::options::{Options, WriteOptions};
use crate::wal::writer::LogWriter;

static NEXT_DB_ID: AtomicU64 = AtomicU64::new(1);

/// Why a database opened with `Options::read_only` refuses writes.
pub(crate) const READ_ONLY_OPEN: &str = "the database was opened read-only (Options::read_only)";

/// How many times `Db::transact` runs a transaction that keeps meeting
/// conflicts before it returns the conflict.
///
/// ```
/// # fn main() -> spinney::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
/// let t = db.create_table("t", spinney::TableOptions::lsm())?;
/// // A closure that always conflicts gives up after this many runs.
/// let mut runs = 0;
/// let e = db.transact(|tx| {
///     runs += 1;
///     tx.put(&t, b"k", b"mine")?;
///     t.put(b"k", b"theirs")?; // another commit after the snapshot
///     Ok(())
/// }).unwrap_err();
/// assert!(e.is_conflict());
/// assert_eq!(runs, spinney::TRANSACT_ATTEMPTS);
/// # Ok(()) }
/// ```
pub const TRANSACT_ATTEMPTS: u32 = 1000;

pub(crate) struct VersionSet {
    /// The live manifest's writer; None when the database was opened
    /// read-only.
    pub manifest: Option<LogWriter>,
    /// The file number of the live manifest.
    pub manifest_number: u64,
    /// Bytes of the live manifest's whole-state record (the roll policy
    /// weighs the manifest's size against it).
    pub snapshot_bytes: u64,
    /// Why the manifest takes no more edits: set when a write of it failed.
    pub manifest_failed: Option<String>,
    pub next_table_id: u32,
    /// The catalog: every live table of both kinds, by name.
    pub tables: BTreeMap<String, Core>,
    pub pending_outputs: HashSet<u64>,
    pub live_versions: Vec<Weak<Version>>,
}

impl VersionSet {
    /// Appends `edit` to the manifest and syncs it: the edit is durable. When
    /// the manifest has reached `Options::max_manifest_size` (or twice its
    /// whole-state record, if larger: `roll::should_roll`), the edit goes to
    /// a new manifest instead, after a record of the whole state
    /// (`roll::roll`). Called with the `vs` lock held (this `VersionSet`); the
    /// caller installs the state the edit describes before releasing it.
    ///
    /// After a failed write, whether the edit (or, in a roll, the new
    /// manifest) reached the disk is unknown, and so is which manifest the
    /// next open reads: every later edit is refused, so that none is
    /// acknowledged and then lost. Callers poison the database on any error.
    pub(crate) fn log(&mut self, db: &DbInner, edit: &VersionEdit) -> Result<()> {
        if let Some(reason) = &self.manifest_failed {
            return Err(Error::ReadOnly {
                reason: reason.clone(),
            });
        }
        let Some(manifest) = self.manifest.as_mut() else {
            return Err(Error::ReadOnly {
                reason: READ_ONLY_OPEN.to_string(),
            });
        };
        let result = if roll::should_roll(
            manifest.len(),
            self.snapshot_bytes,
            db.options.max_manifest_size,
        ) {
            roll::roll(self, db, edit)
        } else {
            manifest
                .add_record(&edit.encode())
                .and_then(|()| crate::manifest::sync_and_mark(manifest))
        };
        if let Err(e) = &result {
            self.manifest_failed = Some(format!("writing the manifest failed: {e}"));
        }
        result
    }
}

#[derive(Default)]
pub(crate) struct BgState {
    pub shutdown: bool,
    /// Jobs running now, in any thread.
    pub running: usize,
    /// The database's activity (its log's bytes and its cache's lookups)
    /// when the scheduler last saw it change, and when: the database is
    /// idle while it stays (`work::idle_for`).
    pub idle: Option<((u64, u64), std::time::Instant)>,
}

#[derive(Default)]
pub(crate) struct Counters {
    /// Entries a read-only open replayed from the log that no table's
    /// files hold (0 for a writable open, which writes them to files).
    pub log_entries_replayed: AtomicU64,
    pub commits: AtomicU64,
    pub commit_groups: AtomicU64,
    pub wal_syncs: AtomicU64,
    pub wal_bytes: AtomicU64,
    pub flushes: AtomicU64,
    pub flush_bytes: AtomicU64,
    pub compactions: AtomicU64,
    pub compaction_bytes_read: AtomicU64,
    pub compaction_bytes_written: AtomicU64,
    pub trivial_moves: AtomicU64,
    pub slowdowns: AtomicU64,
    pub slowdown_micros: AtomicU64,
    pub stops: AtomicU64,
    pub stop_micros: AtomicU64,
    pub manifest_rolls: AtomicU64,
}

pub(crate) struct DbInner {
    pub id: u64,
    pub dir: PathBuf,
    pub fs: Arc<dyn Fs>,
    pub options: Options,
    pub cache: Arc<Cache>,
    /// The directory lock; released at close even while handles remain.
    lock: Mutex<Option<Box<dyn FileLock>>>,
    /// The last seqno assigned to a write (by the commit leader).
    pub last_seqno: AtomicU64,
    /// The next file number to hand out (SSTs, log segments, manifests).
    pub next_file_number: AtomicU64,
    /// The database's format (`manifest::FORMAT_VERSION`): what its new
    /// manifests and log segments are written in.
    pub format: u32,
    /// The last seqno whose batch is wholly in the memtables: reads see up to here.
    pub visible_seqno: AtomicU64,
    pub writers: Mutex<VecDeque<Arc<write::Writer>>>,
    /// Held by the commit leader for a whole group, and by anyone else who
    /// freezes a memtable: a memtable is never frozen while entries are
    /// being added to it.
    pub commit: Mutex<()>,
    pub wal: Mutex<Wal>,
    /// Held while obsolete log segments are removed (`log::delete_obsolete`),
    /// so that removals happen oldest first, one caller at a time.
    pub wal_removal: Mutex<()>,
    pub vs: Mutex<VersionSet>,
    pub bg: Mutex<BgState>,
    /// Signalled when there may be background work.
    pub bg_work: Condvar,
    /// Signalled when a background job ends (stalled writers and waiters recheck).
    pub bg_done: Condvar,
    pub read_only: Mutex<Option<String>>,
    pub poisoned: AtomicBool,
    pub closed: AtomicBool,
    pub snapshots: Mutex<BTreeMap<u64, usize>>,
    pub counters: Counters,
}

impl DbInner {
    /// A new file number, reserved against the file cleaner until released.
    pub(crate) fn new_output_number(&self) -> u64 {
        let mut vs = self.vs.lock();
        let n = self.next_file_number.fetch_add(1, Ordering::AcqRel);
        vs.pending_outputs.insert(n);
        n
    }

    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Where LSM tables' SSTs are, and how they are read and written.
    pub(crate) fn sst_files(&self) -> crate::lsm::version::SstFiles<'_> {
        crate::lsm::version::SstFiles {
            fs: &self.fs,
            dir: &self.dir,
            cache: &self.cache,
            reads: crate::lsm::version::SstReads::of(&self.options),
            direct_writes: self.options.direct_writes,
        }
    }

    pub(crate) fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        Ok(())
    }

    pub(crate) fn check_writable(&self) -> Result<()> {
        self.check_open()?;
        if self.options.read_only {
            return Err(Error::ReadOnly {
                reason: READ_ONLY_OPEN.to_string(),
            });
        }
        if self.poisoned.load(Ordering::Acquire) {
            let reason = self.read_only.lock().clone().unwrap_or_default();
            return Err(Error::ReadOnly { reason });
        }
        Ok(())
    }

    /// Counts a stop: a writer that waited for background work (or did it
    /// itself) since `start`.
    pub(crate) fn count_stop(&self, start: Instant) {
        self.counters.stops.fetch_add(1, Ordering::Relaxed);
        let micros = start.elapsed().as_micros() as u64;
        self.counters
            .stop_micros
            .fetch_add(micros, Ordering::Relaxed);
    }

    /// Makes the database refuse writes from now on, keeping the first reason.
    pub(crate) fn poison(&self, reason: String) {
        let mut r = self.read_only.lock();
        if r.is_none() {
            *r = Some(format!("{reason} (reopen the database to recover)"));
        }
        self.poisoned.store(true, Ordering::Release);
        drop(r);
        let _bg = self.bg.lock();
        self.bg_done.notify_all();
    }

    /// Poisons the database for `table`'s failure `e`: the reason names
    /// the table.
    pub(crate) fn poison_for(&self, table: &str, e: &Error) {
        self.poison(format!("table {table:?}: {e}"));
    }

    /// Who may still read old versions now: the visible seqno and the
    /// live snapshots, taken together under the snapshots' lock.
    pub(crate) fn horizon(&self) -> Horizon {
        let snaps = self.snapshots.lock();
        Horizon {
            visible: self.visible_seqno.load(Ordering::Acquire),
            snapshots: snaps.keys().copied().collect(),
        }
    }
}

/// A spinney database: a directory of named tables sharing one log, one
/// cache and one set of background workers.
///
/// ```
/// # fn main() -> spinney::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// use spinney::{Db, Options, TableOptions};
/// let db = Db::open(dir.path(), Options::default())?;
/// let t = db.create_table("events", TableOptions::default())?;
/// t.put(b"2026-11-22T10:00", b"login")?;
/// assert_eq!(t.get(b"2026-11-22T10:00")?, Some(b"login".to_vec()));
/// for entry in t.range(&b"2026"[..]..&b"2027"[..])? {
///     let (key, value) = entry?;
///     println!("{:?} = {:?}", key, value);
/// }
/// db.close()?;
/// # Ok(()) }
/// ```
pub struct Db {
    inner: Arc<DbInner>,
    workers: Mutex<Vec<JoinHandle<()>>>,
    shut: AtomicBool,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db")
            .field("path", &self.inner.dir)
            .field("tables", &self.inner.vs.lock().tables.len())
            .field("background_threads", &self.workers.lock().len())
            .finish_non_exhaustive()
    }
}

impl Db {
    /// Writes a lost CURRENT file: it names the newest manifest in `path`
    /// that reads whole, and returns that manifest's name. `Db::open`
    /// refuses a directory that holds a database's files without a
    /// CURRENT (it would otherwise make a new, empty database over them);
    /// this is the way back. Refused if `path` has a CURRENT or no manifest
    /// reads; `Error::Locked` if a `Db` has it open. Run `verify` after.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// db.create_table("t", spinney::TableOptions::lsm())?;
    /// db.close()?;
    /// drop(db);
    /// std::fs::remove_file(dir.path().join("CURRENT")).unwrap(); // lost
    /// let manifest = spinney::Db::recover_current(dir.path(), &spinney::Options::default())?;
    /// assert!(manifest.starts_with("MANIFEST-"));
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// db.table("t")?;
    /// # Ok(()) }
    /// ```
    pub fn recover_current(path: impl AsRef<Path>, options: &Options) -> Result<String> {
        recovered::recover_current(path.as_ref(), options)
    }

    /// Opens the database in `path`, creating it if `options.create_if_missing`,
    /// and recovers what the log holds. `Error::Locked` if another `Db` has it
    /// open (for a read-only open, `Options::read_only`: if a writer has it;
    /// read-only openers share it).
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// use spinney::{Db, Options, TableOptions};
    ///
    /// let db = Db::open(dir.path(), Options::default())?;
    /// db.create_table("t", TableOptions::btree())?.put(b"k", b"v")?;
    /// db.close()?;
    ///
    /// // Two readers at once; neither writes a byte to the directory.
    /// let read_only = || Options { read_only: true, ..Options::default() };
    /// let a = Db::open(dir.path(), read_only())?;
    /// let b = Db::open(dir.path(), read_only())?;
    /// assert_eq!(a.table("t")?.get(b"k")?, Some(b"v".to_vec()));
    /// assert!(b.table("t")?.put(b"k", b"w").is_err());
    /// # Ok(()) }
    /// ```
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        // A read-only database has no background work to do.
        let threads = if options.read_only {
            0
        } else {
            options.background_threads
        };
        let inner = Arc::new(open::open(path.as_ref(), options)?);
        let db = Db {
            inner,
            workers: Mutex::new(Vec::new()),
            shut: AtomicBool::new(false),
        };
        for i in 0..threads {
            let worker_inner = Arc::clone(&db.inner);
            let worker = std::thread::Builder::new()
                .name(format!("spinney-bg-{i}"))
                .spawn(move || work::background_loop(&worker_inner))
                .map_err(|e| Error::io("spawn background thread", path.as_ref(), e))?;
            db.workers.lock().push(worker);
        }
        Ok(db)
    }

    /// Commits a batch with the database's durability.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// let mut batch = spinney::WriteBatch::new();
    /// batch.put(&t, b"a", b"1");
    /// batch.put(&t, b"b", b"2");
    /// db.write(batch)?; // both or neither
    /// assert_eq!(t.get(b"b")?, Some(b"2".to_vec()));
    /// # Ok(()) }
    /// ```
    pub fn write(&self, batch: WriteBatch) -> Result<()> {
        write::write(&self.inner, batch, WriteOptions::default())
    }

    /// Commits a batch with per-write options.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// use spinney::{Db, Durability, Options, TableOptions, WriteBatch, WriteOptions};
    ///
    /// let db = Db::open(dir.path(), Options::default())?;
    /// let t = db.create_table("t", TableOptions::lsm())?;
    /// let mut batch = WriteBatch::new();
    /// batch.put(&t, b"paid", b"yes");
    /// // This one commit is synced before it returns, whatever the
    /// // database's durability.
    /// db.write_with(batch, WriteOptions { durability: Some(Durability::Full) })?;
    /// # Ok(()) }
    /// ```
    pub fn write_with(&self, batch: WriteBatch, options: WriteOptions) -> Result<()> {
        write::write(&self.inner, batch, options)
    }

    /// A consistent view of every table as of now, kept until dropped.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::btree())?;
    /// t.put(b"k", b"before")?;
    /// let snapshot = db.snapshot();
    /// t.put(b"k", b"after")?;
    /// assert_eq!(snapshot.get(&t, b"k")?, Some(b"before".to_vec()));
    /// assert_eq!(t.get(b"k")?, Some(b"after".to_vec()));
    /// # Ok(()) }
    /// ```
    pub fn snapshot(&self) -> Snapshot {
        Snapshot::new(&self.inner)
    }

    /// Begins a transaction over any tables of this database: it reads as
    /// of now with its own writes over that, and commits them whole or
    /// not at all (`Transaction`).
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// t.put(b"n", b"1")?;
    /// let mut tx = db.begin();
    /// let n = tx.get_for_update(&t, b"n")?.unwrap_or_default();
    /// let next = (String::from_utf8_lossy(&n).parse::<u32>().unwrap_or(0) + 1).to_string();
    /// tx.put(&t, b"n", next.as_bytes())?;
    /// tx.commit()?;
    /// assert_eq!(t.get(b"n")?, Some(b"2".to_vec()));
    /// # Ok(()) }
    /// ```
    pub fn begin(&self) -> Transaction {
        Transaction::new(&self.inner)
    }

    /// Runs `body` in a transaction and commits it, running both again on
    /// a new transaction while the commit (or a read in `body`) reports a
    /// conflict, up to `TRANSACT_ATTEMPTS` times in all. Any other error
    /// of `body` or the commit is returned at once, with the transaction
    /// rolled back; after the last attempt, the conflict is returned.
    /// `body` may run more than once: effects outside the database should
    /// wait for the result.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let counters = db.create_table("counters", spinney::TableOptions::lsm())?;
    /// let next = db.transact(|tx| {
    ///     let n = match tx.get_for_update(&counters, b"orders")? {
    ///         Some(v) => u64::from_le_bytes(v.try_into().unwrap_or([0; 8])),
    ///         None => 0,
    ///     };
    ///     tx.put(&counters, b"orders", &(n + 1).to_le_bytes())?;
    ///     Ok(n + 1)
    /// })?;
    /// assert_eq!(next, 1);
    /// # Ok(()) }
    /// ```
    pub fn transact<T>(&self, mut body: impl FnMut(&mut Transaction) -> Result<T>) -> Result<T> {
        let mut attempt = 1;
        loop {
            let mut tx = self.begin();
            let result = body(&mut tx).and_then(|value| tx.commit().map(|()| value));
            match result {
                Err(e) if e.is_conflict() && attempt < TRANSACT_ATTEMPTS => {
                    // Another transaction committed: the next attempt
                    // reads what it wrote. Stand back a little longer each
                    // time, so that a hot key's writers spread out.
                    if attempt < 4 {
                        std::thread::yield_now();
                    } else {
                        let micros = 10 * u64::from(attempt.min(100));
                        std::thread::sleep(std::time::Duration::from_micros(micros));
                    }
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    /// Flushes every LSM table's memtables to SSTs and checkpoints every
    /// B-tree table, and waits for it: everything committed so far is then
    /// in the tables' files.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// t.put(b"k", b"v")?;
    /// db.flush()?;
    /// assert_eq!(t.shape()?.memtable_entries, 0);
    /// assert_eq!(t.shape()?.l0_runs, 1);
    /// # Ok(()) }
    /// ```
    pub fn flush(&self) -> Result<()> {
        self.inner.check_writable()?;
        for t in self.inner.lsm_tables() {
            work::flush_table_now(&self.inner, &t)?;
        }
        self.checkpoint()
    }

    /// Checkpoints every B-tree table: writes its changed pages
    /// copy-on-write and makes the new image durable, so that the log before
    /// it is no longer needed. Runs in the background every
    /// `Options::checkpoint_wal_bytes` of log too.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::btree())?;
    /// t.put(b"k", b"v")?;
    /// db.checkpoint()?;
    /// assert!(db.stats().tables[0].btree.as_ref().is_some_and(|b| b.checkpoints >= 1));
    /// # Ok(()) }
    /// ```
    pub fn checkpoint(&self) -> Result<()> {
        self.inner.check_writable()?;
        for t in self.inner.btrees() {
            work::checkpoint_table(&self.inner, &t)?;
        }
        Ok(())
    }

    /// Blocks until no flush or compaction is pending or running. With
    /// `background_threads = 0`, the calling thread does the work.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// for i in 0..1000u32 {
    ///     t.put(&i.to_be_bytes(), b"v")?;
    /// }
    /// db.flush()?;
    /// db.wait_for_compaction()?; // nothing pending or running now
    /// assert_eq!(t.iter()?.count(), 1000);
    /// # Ok(()) }
    /// ```
    pub fn wait_for_compaction(&self) -> Result<()> {
        work::wait_idle(&self.inner)
    }

    /// Runs pending flushes and compactions in the calling thread until
    /// about `budget` bytes are written or nothing is left to do (a job is
    /// never split, so one job may pass the budget). For applications that
    /// open with `background_threads = 0` and drive the work themselves,
    /// for instance from a thread of their own (SQLite4 LSM's `lsm_work`).
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// use spinney::{Db, Options, TableOptions};
    ///
    /// let options = Options { background_threads: 0, autowork: false, ..Options::default() };
    /// let db = Db::open(dir.path(), options)?;
    /// let t = db.create_table("t", TableOptions { write_buffer_size: 64 << 10, ..TableOptions::lsm() })?;
    /// for i in 0..5_000u32 {
    ///     t.put(&i.to_be_bytes(), &[0; 100])?;
    /// }
    /// // Frozen memtables wait for this thread to flush them.
    /// let done = db.work(u64::MAX)?;
    /// assert!(done.jobs > 0);
    /// # Ok(()) }
    /// ```
    pub fn work(&self, budget: u64) -> Result<WorkDone> {
        self.inner.check_open()?;
        work::work(&self.inner, budget)
    }

    /// Counters, per-table shapes, cache and I/O figures (`Display` prints
    /// them as a report; with the `serde` feature they serialize).
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// t.put(b"k", b"v")?;
    /// let stats = db.stats();
    /// assert_eq!(stats.commits, 1);
    /// assert!(stats.to_string().contains("commits"));
    /// db.flush()?;
    /// assert_eq!(db.verify()?, 1, "one entry, in one SST");
    /// # Ok(()) }
    /// ```
    pub fn stats(&self) -> Stats {
        stats::collect(&self.inner)
    }

    /// Reads every file of every table and checks checksums, key order and
    /// the level invariants; returns the number of entries checked. A
    /// read-only open counts too the log's entries it replayed that no
    /// file holds (their records were checked as they were replayed).
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// t.put(b"k", b"v")?;
    /// db.flush()?;
    /// assert_eq!(db.verify()?, 1);
    /// # Ok(()) }
    /// ```
    pub fn verify(&self) -> Result<u64> {
        work::verify(&self.inner)
    }

    /// The directory of the database.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// assert_eq!(db.path(), dir.path());
    /// # Ok(()) }
    /// ```
    pub fn path(&self) -> &Path {
        &self.inner.dir
    }

    /// The database's format version: what its manifest and log segments
    /// are written in. A new database has the newest this build writes
    /// (`spinney::FORMAT_VERSION`); an older one keeps its own until it is
    /// opened with `Options::upgrade_format`.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// assert_eq!(db.format_version(), spinney::FORMAT_VERSION);
    /// # Ok(()) }
    /// ```
    pub fn format_version(&self) -> u32 {
        self.inner.format
    }

    /// Closes the database: stops background work at a clean point and syncs
    /// the log (cut to its records: see `Fs::create_log`). Dropping a `Db`
    /// does the same but cannot report an error.
    /// Callable through a shared handle (an `Arc<Db>`): every later call on
    /// the database or its tables returns `Error::Closed`, and a second
    /// close returns `Ok`.
    ///
    /// ```
    /// # fn main() -> spinney::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
    /// let db = std::sync::Arc::new(db);
    /// let t = db.create_table("t", spinney::TableOptions::lsm())?;
    /// t.put(b"k", b"v")?;
    /// db.close()?; // through the shared handle
    /// assert!(t.get(b"k").is_err()); // closed
    /// db.close()?; // a second close is Ok
    /// # Ok(()) }
    /// ```
    pub fn close(&self) -> Result<()> {
        self.shutdown()
    }

    fn shutdown(&self) -> Result<()> {
        if self.shut.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        {
            let mut bg = self.inner.bg.lock();
            bg.shutdown = true;
            self.inner.bg_work.notify_all();
            self.inner.bg_done.notify_all();
        }
        let workers = std::mem::take(&mut *self.workers.lock());
        for worker in workers {
            let _ = worker.join();
        }
        // Jobs run by other threads (autowork, `work`) end at their next
        // boundary; wait for them before the lock is released.
        {
            let mut bg = self.inner.bg.lock();
            while bg.running > 0 {
                self.inner.bg_done.wait(&mut bg);
            }
        }
        // Let queued writers finish, then refuse new ones.
        let writers = self.inner.writers.lock();
        self.inner.closed.store(true, Ordering::Release);
        drop(writers);
        let mut wal = self.inner.wal.lock();
        if self.inner.poisoned.load(Ordering::Acquire) || self.inner.options.read_only {
            // Nothing to close: the log is not written (or no longer
            // trusted), and a read-only open has no segment open.
            drop(wal);
            self.inner.lock.lock().take();
            return Ok(());
        }
        if let Err(e) = wal.close() {
            drop(wal);
            self.inner.lock.lock().take();
            return Err(e);
        }
        drop(wal);
        self.inner.lock.lock().take();
        Ok(())
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}
