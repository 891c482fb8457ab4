//! `Db`: the database. Open and close, the table catalog, writes, reads,
//! snapshots, and the handles users hold (`Table`, `Snapshot`, `Cursor`).
//!
//! Thread-safety: `Db` is `Send + Sync`; share it by reference or in an
//! `Arc`. Writers go through one group-commit queue (`write.rs`); readers take
//! a table's `SuperVersion` and read without locks; background threads (or
//! writers, or the application) run flushes and compactions (`work.rs`).
//!
//! Lock order, to stay free of deadlocks: `writers` → `commit` → `bg` → `vs`
//! → `wal` → a table's super-version lock; a thread holding a later lock
//! never takes an earlier one. A table's `work` lock is taken only under
//! `bg`, and nothing is taken under it.

mod open;
mod roll;
mod stats;
mod work;
mod write;

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::ops::{Bound, RangeBounds};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex};

pub use stats::{BtreeStats, LevelStats, Shape, ShapeLevel, Stats, TableStats};
pub use work::WorkDone;

use crate::batch::WriteBatch;
use crate::btree::iter::BtreeIter;
use crate::btree::{BtreeTable, Lookup};
use crate::cache::Cache;
use crate::error::{Error, Result};
use crate::fs::{FileLock, Fs};
use crate::limits;
use crate::lsm::compaction;
use crate::lsm::cursor::LsmCursor;
use crate::lsm::iter::InternalIterator;
use crate::lsm::key::{internal_key, Kind, ParsedKey, KIND_SEEK};
use crate::lsm::merge::MergingIter;
use crate::lsm::table::LsmTable;
use crate::lsm::version::Version;
use crate::manifest::{TableRecord, VersionEdit};
use crate::options::{Options, TableKind, TableOptions, WriteOptions};
use crate::wal::writer::LogWriter;

static NEXT_DB_ID: AtomicU64 = AtomicU64::new(1);

pub(crate) fn sst_name(number: u64) -> String {
    format!("{number:06}.sst")
}

pub(crate) fn wal_name(number: u64) -> String {
    format!("{number:06}.wal")
}

/// The number in a file name of the form `NNNNNN.<ext>`.
pub(crate) fn parse_numbered(name: &str, ext: &str) -> Option<u64> {
    let stem = name.strip_suffix(ext)?.strip_suffix('.')?;
    if stem.is_empty() || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    stem.parse().ok()
}

/// A WAL segment and the last seqno written to it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Segment {
    pub number: u64,
    pub last_seqno: u64,
}

pub(crate) struct Wal {
    pub writer: LogWriter,
    pub number: u64,
    /// Closed segments (synced when closed), oldest first; the open one is `number`.
    pub closed: Vec<Segment>,
    pub last_seqno: u64,
    /// Every record up to this seqno has been synced.
    pub synced_seqno: u64,
}

pub(crate) struct VersionSet {
    pub manifest: LogWriter,
    /// The file number of the live manifest.
    pub manifest_number: u64,
    /// Bytes of the live manifest's whole-state record (the roll policy
    /// weighs the manifest's size against it).
    pub snapshot_bytes: u64,
    /// Why the manifest takes no more edits: set when a write of it failed.
    pub manifest_failed: Option<String>,
    pub next_table_id: u32,
    pub tables: BTreeMap<String, Arc<LsmTable>>,
    pub btrees: BTreeMap<String, Arc<BtreeTable>>,
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
        let result = if roll::should_roll(
            self.manifest.len(),
            self.snapshot_bytes,
            db.options.max_manifest_size,
        ) {
            roll::roll(self, db, edit)
        } else {
            self.manifest
                .add_record(&edit.encode())
                .and_then(|()| self.manifest.sync())
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
}

#[derive(Default)]
pub(crate) struct Counters {
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
    /// The last seqno whose batch is wholly in the memtables: reads see up to here.
    pub visible_seqno: AtomicU64,
    pub writers: Mutex<VecDeque<Arc<write::Writer>>>,
    /// Held by the commit leader for a whole group, and by anyone else who
    /// freezes a memtable: a memtable is never frozen while entries are
    /// being added to it.
    pub commit: Mutex<()>,
    pub wal: Mutex<Wal>,
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

    pub(crate) fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        Ok(())
    }

    pub(crate) fn check_writable(&self) -> Result<()> {
        self.check_open()?;
        if self.poisoned.load(Ordering::Acquire) {
            let reason = self.read_only.lock().clone().unwrap_or_default();
            return Err(Error::ReadOnly { reason });
        }
        Ok(())
    }

    /// Makes the database refuse writes from now on, keeping the first reason.
    pub(crate) fn poison(&self, reason: String) {
        let mut r = self.read_only.lock();
        if r.is_none() {
            *r = Some(reason);
        }
        self.poisoned.store(true, Ordering::Release);
        drop(r);
        let _bg = self.bg.lock();
        self.bg_done.notify_all();
    }

    /// The smallest seqno any live snapshot or reader may still read at.
    pub(crate) fn oldest_snapshot(&self) -> u64 {
        let snaps = self.snapshots.lock();
        let visible = self.visible_seqno.load(Ordering::Acquire);
        snaps.keys().next().copied().unwrap_or(visible).min(visible)
    }

    pub(crate) fn table(&self, name: &str) -> Result<Core> {
        let vs = self.vs.lock();
        if let Some(t) = vs.tables.get(name) {
            return Ok(Core::Lsm(Arc::clone(t)));
        }
        vs.btrees
            .get(name)
            .map(|t| Core::Btree(Arc::clone(t)))
            .ok_or_else(|| Error::NoSuchTable(name.to_string()))
    }

    /// Every B-tree table.
    pub(crate) fn btrees(&self) -> Vec<Arc<BtreeTable>> {
        self.vs.lock().btrees.values().cloned().collect()
    }
}

/// A table of either kind.
#[derive(Clone)]
pub(crate) enum Core {
    Lsm(Arc<LsmTable>),
    Btree(Arc<BtreeTable>),
}

impl Core {
    pub(crate) fn id(&self) -> u32 {
        match self {
            Core::Lsm(t) => t.id,
            Core::Btree(t) => t.id,
        }
    }

    pub(crate) fn name(&self) -> &str {
        match self {
            Core::Lsm(t) => &t.name,
            Core::Btree(t) => &t.name,
        }
    }

    pub(crate) fn options(&self) -> &TableOptions {
        match self {
            Core::Lsm(t) => &t.options,
            Core::Btree(t) => &t.options,
        }
    }

    pub(crate) fn is_dropped(&self) -> bool {
        match self {
            Core::Lsm(t) => t.dropped.load(Ordering::Acquire),
            Core::Btree(t) => t.dropped.load(Ordering::Acquire),
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
    workers: Vec<JoinHandle<()>>,
    shut: bool,
}

/// A table's name, kind and options, as the catalog records them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableInfo {
    /// The table's name.
    pub name: String,
    /// Its options (kind included).
    pub options: TableOptions,
}

impl Db {
    /// Opens the database in `path`, creating it if `options.create_if_missing`,
    /// and recovers what the log holds. `Error::Locked` if another `Db` has it
    /// open.
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        let threads = options.background_threads;
        let inner = Arc::new(open::open(path.as_ref(), options)?);
        let mut db = Db {
            inner,
            workers: Vec::new(),
            shut: false,
        };
        for i in 0..threads {
            let worker_inner = Arc::clone(&db.inner);
            let worker = std::thread::Builder::new()
                .name(format!("spinney-bg-{i}"))
                .spawn(move || work::background_loop(&worker_inner))
                .map_err(|e| Error::io("spawn background thread", path.as_ref(), e))?;
            db.workers.push(worker);
        }
        Ok(db)
    }

    /// Creates a table. `Error::TableExists` if the name is taken.
    pub fn create_table(&self, name: &str, options: TableOptions) -> Result<Table> {
        let inner = &self.inner;
        inner.check_writable()?;
        validate_table_name(name)?;
        options.validate()?;
        let mut vs = inner.vs.lock();
        if vs.tables.contains_key(name) || vs.btrees.contains_key(name) {
            return Err(Error::TableExists(name.to_string()));
        }
        if vs.tables.len() + vs.btrees.len() >= limits::TABLES_MAX {
            return Err(Error::invalid(format!(
                "a database holds at most {} tables",
                limits::TABLES_MAX
            )));
        }
        let id = vs.next_table_id;
        // Entries of a new table are all newer than now: none is persisted yet,
        // and none is older than the current last seqno.
        let flushed = inner.last_seqno.load(Ordering::Acquire);
        if options.kind == TableKind::Btree {
            // The file first (synced, and its directory entry): a crash
            // before the manifest names it leaves an orphan that open removes.
            BtreeTable::create_file(&*inner.fs, &inner.dir, id, &options, flushed)?;
            inner.fs.sync_dir(&inner.dir)?;
        }
        let edit = VersionEdit {
            next_table_id: Some(id + 1),
            created: vec![TableRecord {
                id,
                name: name.to_string(),
                options: options.clone(),
            }],
            flushed: vec![(id, flushed)],
            ..VersionEdit::default()
        };
        if let Err(e) = vs.log(inner, &edit) {
            drop(vs);
            inner.poison(format!("writing the manifest failed: {e}"));
            return Err(e);
        }
        vs.next_table_id = id + 1;
        if options.kind == TableKind::Btree {
            let owner = inner.next_file_number.fetch_add(1, Ordering::AcqRel);
            let opened = BtreeTable::open(
                &*inner.fs,
                &inner.dir,
                id,
                name.to_string(),
                options,
                Arc::clone(&inner.cache),
                owner,
                1,
                0,
            );
            let t = match opened {
                Ok(t) => Arc::new(t),
                Err(e) => {
                    drop(vs);
                    inner.poison(format!("opening a new B-tree table failed: {e}"));
                    return Err(e);
                }
            };
            t.wal_bytes_at_checkpoint.store(
                inner.counters.wal_bytes.load(Ordering::Relaxed),
                Ordering::Release,
            );
            vs.btrees.insert(name.to_string(), Arc::clone(&t));
            return Ok(Table {
                db: Arc::clone(inner),
                core: Core::Btree(t),
            });
        }
        let core = Arc::new(LsmTable::new(
            id,
            name.to_string(),
            options,
            Version::empty(),
            flushed,
        ));
        vs.live_versions
            .push(Arc::downgrade(&core.super_version().version));
        vs.tables.insert(name.to_string(), Arc::clone(&core));
        Ok(Table {
            db: Arc::clone(inner),
            core: Core::Lsm(core),
        })
    }

    /// The table named `name`.
    pub fn table(&self, name: &str) -> Result<Table> {
        self.inner.check_open()?;
        Ok(Table {
            db: Arc::clone(&self.inner),
            core: self.inner.table(name)?,
        })
    }

    /// The table named `name`, created with `options` if it does not exist.
    pub fn open_table(&self, name: &str, options: TableOptions) -> Result<Table> {
        match self.table(name) {
            Err(Error::NoSuchTable(_)) => self.create_table(name, options),
            other => other,
        }
    }

    /// Every table, by name.
    pub fn tables(&self) -> Vec<TableInfo> {
        let vs = self.inner.vs.lock();
        let mut all: Vec<TableInfo> = vs
            .tables
            .values()
            .map(|t| TableInfo {
                name: t.name.clone(),
                options: t.options.clone(),
            })
            .chain(vs.btrees.values().map(|t| TableInfo {
                name: t.name.clone(),
                options: t.options.clone(),
            }))
            .collect();
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all
    }

    /// Drops a table and, once no reader needs them, its files.
    pub fn drop_table(&self, name: &str) -> Result<()> {
        let inner = &self.inner;
        inner.check_writable()?;
        let table = match inner.table(name)? {
            Core::Lsm(t) => t,
            Core::Btree(t) => return work::drop_btree(inner, &t),
        };
        work::begin_drop(inner, &table)?;
        let mut vs = inner.vs.lock();
        let edit = VersionEdit {
            dropped: vec![table.id],
            ..VersionEdit::default()
        };
        let logged = vs.log(inner, &edit);
        if logged.is_ok() {
            vs.tables.remove(name);
            table.dropped.store(true, Ordering::Release);
        }
        drop(vs);
        work::end_drop(inner, &table);
        if let Err(e) = logged {
            inner.poison(format!("writing the manifest failed: {e}"));
            return Err(e);
        }
        work::delete_obsolete_files(inner);
        Ok(())
    }

    /// Commits a batch with the database's durability.
    pub fn write(&self, batch: WriteBatch) -> Result<()> {
        write::write(&self.inner, batch, WriteOptions::default())
    }

    /// Commits a batch with per-write options.
    pub fn write_with(&self, batch: WriteBatch, options: WriteOptions) -> Result<()> {
        write::write(&self.inner, batch, options)
    }

    /// A consistent view of every table as of now, kept until dropped.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot::new(&self.inner)
    }

    /// Flushes every LSM table's memtables to SSTs and checkpoints every
    /// B-tree table, and waits for it: everything committed so far is then
    /// in the tables' files.
    pub fn flush(&self) -> Result<()> {
        self.inner.check_writable()?;
        let tables: Vec<_> = self.inner.vs.lock().tables.values().cloned().collect();
        for t in tables {
            work::flush_table_now(&self.inner, &t)?;
        }
        self.checkpoint()
    }

    /// Checkpoints every B-tree table: writes its changed pages
    /// copy-on-write and makes the new image durable, so that the log before
    /// it is no longer needed. Runs in the background every
    /// `Options::checkpoint_wal_bytes` of log too.
    pub fn checkpoint(&self) -> Result<()> {
        self.inner.check_writable()?;
        for t in self.inner.btrees() {
            work::checkpoint_table(&self.inner, &t)?;
        }
        Ok(())
    }

    /// Blocks until no flush or compaction is pending or running. With
    /// `background_threads = 0`, the calling thread does the work.
    pub fn wait_for_compaction(&self) -> Result<()> {
        work::wait_idle(&self.inner)
    }

    /// Runs pending flushes and compactions in the calling thread until
    /// about `budget` bytes are written or nothing is left to do (a job is
    /// never split, so one job may pass the budget). For applications that
    /// open with `background_threads = 0` and drive the work themselves,
    /// for instance from a thread of their own (SQLite4 LSM's `lsm_work`).
    pub fn work(&self, budget: u64) -> Result<WorkDone> {
        self.inner.check_open()?;
        work::work(&self.inner, budget)
    }

    /// Counters, per-table shapes, cache and I/O figures.
    pub fn stats(&self) -> Stats {
        stats::collect(&self.inner)
    }

    /// Reads every file of every table and checks checksums, key order and
    /// the level invariants; returns the number of entries checked.
    pub fn verify(&self) -> Result<u64> {
        work::verify(&self.inner)
    }

    /// The directory of the database.
    pub fn path(&self) -> &Path {
        &self.inner.dir
    }

    /// Closes the database: stops background work at a clean point and syncs
    /// the log. Dropping a `Db` does the same but cannot report an error.
    pub fn close(mut self) -> Result<()> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> Result<()> {
        if std::mem::replace(&mut self.shut, true) {
            return Ok(());
        }
        {
            let mut bg = self.inner.bg.lock();
            bg.shutdown = true;
            self.inner.bg_work.notify_all();
            self.inner.bg_done.notify_all();
        }
        for worker in self.workers.drain(..) {
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
        if self.inner.poisoned.load(Ordering::Acquire) {
            drop(wal);
            self.inner.lock.lock().take();
            return Ok(());
        }
        let last = wal.last_seqno;
        if let Err(e) = wal.writer.sync() {
            drop(wal);
            self.inner.lock.lock().take();
            return Err(e);
        }
        wal.synced_seqno = last;
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

fn validate_table_name(name: &str) -> Result<()> {
    if name.is_empty() || name.len() > limits::TABLE_NAME_BYTES_MAX {
        return Err(Error::invalid(format!(
            "table name must be 1 to {} bytes long, got {}",
            limits::TABLE_NAME_BYTES_MAX,
            name.len()
        )));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    {
        return Err(Error::invalid(format!(
            "table name {name:?} may hold only letters, digits, '_', '-' and '.'"
        )));
    }
    Ok(())
}

/// A handle on one table. Cheap to clone; valid until the table is dropped
/// or the database closed.
#[derive(Clone)]
pub struct Table {
    pub(crate) db: Arc<DbInner>,
    pub(crate) core: Core,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("name", &self.core.name())
            .field("kind", &self.core.options().kind)
            .finish()
    }
}

impl Table {
    pub(crate) fn db_id(&self) -> u64 {
        self.db.id
    }

    fn check(&self) -> Result<()> {
        self.db.check_open()?;
        if self.core.is_dropped() {
            return Err(Error::NoSuchTable(self.core.name().to_string()));
        }
        Ok(())
    }

    /// The table's name.
    pub fn name(&self) -> &str {
        self.core.name()
    }

    /// The table's options.
    pub fn options(&self) -> &TableOptions {
        self.core.options()
    }

    fn get_at(&self, key: &[u8], snapshot: Option<&Snapshot>) -> Result<Option<Vec<u8>>> {
        self.check()?;
        check_key(key)?;
        let seqno = match snapshot {
            Some(s) => Some(self.read_seqno(Some(s))?),
            None => None,
        };
        match &self.core {
            Core::Lsm(t) => t.get(
                key,
                seqno.unwrap_or_else(|| self.db.visible_seqno.load(Ordering::Acquire)),
            ),
            Core::Btree(t) => match t.get(key, seqno, &self.db.visible_seqno)? {
                Lookup::Value(v) => Ok(Some(v)),
                Lookup::Absent => Ok(None),
                Lookup::Continue(at) => {
                    // The key's versions span two leaves: read them with an
                    // iterator, under a registered snapshot so that none is
                    // pruned meanwhile.
                    let pin = match snapshot {
                        Some(s) => s.clone(),
                        None => Snapshot::new(&self.db),
                    };
                    let at = if snapshot.is_some() { at } else { pin.seqno };
                    let mut it = BtreeIter::new(Arc::clone(t));
                    it.seek(&internal_key(key, at, KIND_SEEK));
                    if !it.valid() {
                        it.status()?;
                        return Ok(None);
                    }
                    match ParsedKey::parse(it.key()) {
                        Some(k) if k.user_key == key && k.kind == Kind::Put => {
                            Ok(Some(it.value().to_vec()))
                        }
                        _ => Ok(None),
                    }
                }
            },
        }
    }

    /// A cursor over this table at `seqno`, kept readable by `pin`.
    fn cursor_at(
        &self,
        pin: &Pin,
        seqno: u64,
        lower: Bound<Vec<u8>>,
        upper: Bound<Vec<u8>>,
    ) -> Result<LsmCursor> {
        match (&self.core, pin) {
            (Core::Lsm(t), Pin::Lsm(sv)) => t.cursor_from(sv, seqno, lower, upper),
            (Core::Btree(t), _) => {
                let children: Vec<Box<dyn InternalIterator>> =
                    vec![Box::new(BtreeIter::new(Arc::clone(t)))];
                Ok(LsmCursor::new(
                    MergingIter::new(children),
                    seqno,
                    lower,
                    upper,
                ))
            }
            (Core::Lsm(t), _) => t.cursor(seqno, lower, upper),
        }
    }

    /// What keeps a cursor's state readable: the LSM super version, or for a
    /// B-tree a registered snapshot (so the writer prunes nothing it sees).
    fn pin(&self, snapshot: Option<&Snapshot>) -> Result<(Pin, u64)> {
        let seqno = self.read_seqno(snapshot)?;
        Ok(match &self.core {
            Core::Lsm(t) => (Pin::Lsm(t.super_version()), seqno),
            Core::Btree(_) => {
                let snap = match snapshot {
                    Some(s) => s.clone(),
                    None => Snapshot::new(&self.db),
                };
                let seqno = snap.seqno;
                (Pin::Snapshot(snap), seqno)
            }
        })
    }

    /// Sets `key` to `value`.
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.put(self, key, value);
        write::write(&self.db, b, WriteOptions::default())
    }

    /// Deletes `key` (not an error if it is absent).
    pub fn delete(&self, key: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete(self, key);
        write::write(&self.db, b, WriteOptions::default())
    }

    /// The value of `key`, if present.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get_at(key, None)
    }

    /// A cursor over the whole table at the current state.
    pub fn cursor(&self) -> Result<Cursor> {
        self.cursor_with(&ReadOptions::default())
    }

    /// A cursor with bounds and, optionally, a snapshot.
    pub fn cursor_with(&self, options: &ReadOptions<'_>) -> Result<Cursor> {
        self.check()?;
        let (pin, seqno) = self.pin(options.snapshot)?;
        let inner = self.cursor_at(&pin, seqno, options.lower.clone(), options.upper.clone())?;
        Ok(Cursor { inner, _pin: pin })
    }

    fn read_seqno(&self, snapshot: Option<&Snapshot>) -> Result<u64> {
        match snapshot {
            Some(s) if s.db.id != self.db.id => {
                Err(Error::invalid("snapshot belongs to another database"))
            }
            Some(s) => Ok(s.seqno),
            None => Ok(self.db.visible_seqno.load(Ordering::Acquire)),
        }
    }

    /// The entries whose keys fall in `range`, in key order (reverse with `.rev()`).
    pub fn range<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> Result<Range> {
        let lower = owned_bound(range.start_bound());
        let upper = owned_bound(range.end_bound());
        Range::new(self, None, lower, upper)
    }

    /// Every entry, in key order.
    pub fn iter(&self) -> Result<Range> {
        Range::new(self, None, Bound::Unbounded, Bound::Unbounded)
    }

    /// Flushes this table's memtables to SSTs (LSM), or checkpoints it
    /// (B-tree), and waits for it.
    pub fn flush(&self) -> Result<()> {
        self.check()?;
        self.db.check_writable()?;
        match &self.core {
            Core::Lsm(t) => work::flush_table_now(&self.db, t),
            Core::Btree(t) => work::checkpoint_table(&self.db, t).map(|_| ()),
        }
    }

    /// Checkpoints this table (B-tree tables; the same as `flush`).
    pub fn checkpoint(&self) -> Result<()> {
        self.flush()
    }

    /// Flushes, then merges every file into one sorted run in the last
    /// level, dropping deleted and overwritten entries that no snapshot can
    /// see. A B-tree table has no levels: this checkpoints it.
    pub fn compact_all(&self) -> Result<()> {
        self.flush()?;
        match &self.core {
            Core::Lsm(t) => work::compact_manual(&self.db, t, work::Manual::All),
            Core::Btree(_) => Ok(()),
        }
    }

    /// Compacts every file of `level` into the level below it, and waits
    /// for it. For L0 of a leveled table that is the level L0 compacts into
    /// (L1, or with dynamic level sizing the highest level in use); for
    /// tiered tables and deeper levels, `level + 1`. Does nothing when the
    /// level is empty. The memtables are not flushed (see `flush`).
    pub fn compact_level(&self, level: usize) -> Result<()> {
        self.check()?;
        self.db.check_writable()?;
        if level >= compaction::LAST_LEVEL {
            return Err(Error::invalid(format!(
                "level {level} has no level below it (levels are 0..={})",
                compaction::LAST_LEVEL
            )));
        }
        match &self.core {
            Core::Lsm(t) => work::compact_manual(&self.db, t, work::Manual::Level(level)),
            // No levels: nothing to do.
            Core::Btree(_) => Ok(()),
        }
    }

    /// The table's shape now. LSM: memtables, L0 runs, and each deeper
    /// level. B-tree: `Shape::btree` (height, pages, fill; it reads every
    /// page of the tree).
    pub fn shape(&self) -> Result<Shape> {
        self.check()?;
        match &self.core {
            Core::Lsm(t) => Ok(stats::shape(t)),
            Core::Btree(t) => Ok(Shape {
                btree: Some(t.shape()?),
                ..Shape::default()
            }),
        }
    }
}

pub(crate) fn check_key(key: &[u8]) -> Result<()> {
    if key.len() > limits::KEY_BYTES_MAX {
        return Err(Error::invalid(format!(
            "key of {} bytes is longer than the limit of {} bytes",
            key.len(),
            limits::KEY_BYTES_MAX
        )));
    }
    Ok(())
}

fn owned_bound<K: AsRef<[u8]>>(b: Bound<&K>) -> Bound<Vec<u8>> {
    match b {
        Bound::Included(k) => Bound::Included(k.as_ref().to_vec()),
        Bound::Excluded(k) => Bound::Excluded(k.as_ref().to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// Options of a read.
#[derive(Debug, Clone)]
pub struct ReadOptions<'a> {
    /// Read as of this snapshot instead of the current state.
    pub snapshot: Option<&'a Snapshot>,
    /// Smallest key a cursor shows.
    pub lower: Bound<Vec<u8>>,
    /// Largest key a cursor shows.
    pub upper: Bound<Vec<u8>>,
}

impl Default for ReadOptions<'_> {
    fn default() -> Self {
        ReadOptions {
            snapshot: None,
            lower: Bound::Unbounded,
            upper: Bound::Unbounded,
        }
    }
}

/// A frozen view of the whole database: reads through it see the state at
/// the moment it was taken, whatever is written after.
pub struct Snapshot {
    db: Arc<DbInner>,
    seqno: u64,
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("seqno", &self.seqno)
            .finish()
    }
}

impl Snapshot {
    fn new(db: &Arc<DbInner>) -> Snapshot {
        let mut snaps = db.snapshots.lock();
        let seqno = db.visible_seqno.load(Ordering::Acquire);
        *snaps.entry(seqno).or_insert(0) += 1;
        Snapshot {
            db: Arc::clone(db),
            seqno,
        }
    }

    /// The value of `key` in `table` as of the snapshot.
    pub fn get(&self, table: &Table, key: &[u8]) -> Result<Option<Vec<u8>>> {
        table.get_at(key, Some(self))
    }

    /// The entries of `table` in `range` as of the snapshot.
    pub fn range<K: AsRef<[u8]>, R: RangeBounds<K>>(
        &self,
        table: &Table,
        range: R,
    ) -> Result<Range> {
        let lower = owned_bound(range.start_bound());
        let upper = owned_bound(range.end_bound());
        Range::new(table, Some(self), lower, upper)
    }

    /// The sequence number the snapshot reads at.
    pub fn seqno(&self) -> u64 {
        self.seqno
    }
}

impl Clone for Snapshot {
    fn clone(&self) -> Self {
        *self.db.snapshots.lock().entry(self.seqno).or_insert(0) += 1;
        Snapshot {
            db: Arc::clone(&self.db),
            seqno: self.seqno,
        }
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        let mut snaps = self.db.snapshots.lock();
        if let Some(n) = snaps.get_mut(&self.seqno) {
            *n -= 1;
            if *n == 0 {
                snaps.remove(&self.seqno);
            }
        }
    }
}

/// A movable position in a table: seek, step both ways, read the entry.
/// It sees one consistent state, the one of its creation (or its snapshot).
pub struct Cursor {
    inner: LsmCursor,
    _pin: Pin,
}

/// What keeps a cursor's state readable.
enum Pin {
    Lsm(Arc<crate::lsm::table::SuperVersion>),
    // Held for its registration, released when dropped.
    #[allow(dead_code)]
    Snapshot(Snapshot),
    /// Pinned by the `Range` that holds the cursor.
    None,
}

impl Cursor {
    /// True when on an entry.
    pub fn valid(&self) -> bool {
        self.inner.valid()
    }
    /// The current key. Empty when not valid.
    pub fn key(&self) -> &[u8] {
        self.inner.key()
    }
    /// The current value. Empty when not valid.
    pub fn value(&self) -> &[u8] {
        self.inner.value()
    }
    /// The first entry.
    pub fn seek_to_first(&mut self) {
        self.inner.seek_to_first()
    }
    /// The last entry.
    pub fn seek_to_last(&mut self) {
        self.inner.seek_to_last()
    }
    /// The first entry with a key `>= key`.
    pub fn seek(&mut self, key: &[u8]) {
        self.inner.seek(key)
    }
    /// The last entry with a key `<= key`.
    pub fn seek_for_prev(&mut self, key: &[u8]) {
        self.inner.seek_for_prev(key)
    }
    /// The next entry.
    pub fn next(&mut self) {
        self.inner.next()
    }
    /// The previous entry.
    pub fn prev(&mut self) {
        self.inner.prev()
    }
    /// The error that stopped the cursor, if any. Check it when `valid()`
    /// turns false: a corrupt block ends iteration with an error, not silently.
    pub fn status(&self) -> Result<()> {
        self.inner.status()
    }
}

/// The entries of a key range, as a double-ended iterator of
/// `Result<(key, value)>`. Forward and backward ends meet without overlap.
pub struct Range {
    front: Cursor,
    back: Option<Cursor>,
    table: Table,
    seqno: u64,
    started_front: bool,
    last_front: Option<Vec<u8>>,
    last_back: Option<Vec<u8>>,
    done: bool,
    pin: Pin,
    lower: Bound<Vec<u8>>,
    upper: Bound<Vec<u8>>,
}

impl Range {
    fn new(
        table: &Table,
        snapshot: Option<&Snapshot>,
        lower: Bound<Vec<u8>>,
        upper: Bound<Vec<u8>>,
    ) -> Result<Range> {
        table.check()?;
        let (pin, seqno) = table.pin(snapshot)?;
        let front = Cursor {
            inner: table.cursor_at(&pin, seqno, lower.clone(), upper.clone())?,
            _pin: Pin::None,
        };
        Ok(Range {
            front,
            back: None,
            table: table.clone(),
            seqno,
            started_front: false,
            last_front: None,
            last_back: None,
            done: false,
            pin,
            lower,
            upper,
        })
    }

    fn finish(&mut self, status: Result<()>) -> Option<Result<(Vec<u8>, Vec<u8>)>> {
        self.done = true;
        status.err().map(Err)
    }
}

impl Iterator for Range {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if self.started_front {
            self.front.next();
        } else {
            self.started_front = true;
            self.front.seek_to_first();
        }
        if !self.front.valid() {
            let status = self.front.status();
            return self.finish(status);
        }
        let key = self.front.key();
        if self.last_back.as_deref().is_some_and(|b| key >= b) {
            return self.finish(Ok(()));
        }
        self.last_front = Some(key.to_vec());
        Some(Ok((key.to_vec(), self.front.value().to_vec())))
    }
}

impl DoubleEndedIterator for Range {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let back = match &mut self.back {
            Some(b) => {
                b.prev();
                b
            }
            None => {
                let inner = match self.table.cursor_at(
                    &self.pin,
                    self.seqno,
                    self.lower.clone(),
                    self.upper.clone(),
                ) {
                    Ok(c) => c,
                    Err(e) => return self.finish(Err(e)),
                };
                let b = self.back.insert(Cursor {
                    inner,
                    _pin: Pin::None,
                });
                b.seek_to_last();
                b
            }
        };
        if !back.valid() {
            let status = back.status();
            return self.finish(status);
        }
        let key = back.key().to_vec();
        let value = back.value().to_vec();
        if self
            .last_front
            .as_deref()
            .is_some_and(|f| key.as_slice() <= f)
        {
            return self.finish(Ok(()));
        }
        self.last_back = Some(key.clone());
        Some(Ok((key, value)))
    }
}
