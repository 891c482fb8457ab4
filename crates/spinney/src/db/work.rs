//! The scheduler of background work: which job runs next (flushes, then
//! due B-tree checkpoints, then compactions), claiming and finishing jobs,
//! the manual forms of each, and the three ways work gets done. Carrying a
//! flush or compaction out is `lsm::job`'s (this file is its `JobHost`: file
//! numbers, the manifest, the log); deleting files is `cleaner.rs`'s.
//!
//! The work model, after SQLite4's LSM library:
//! - `background_threads = N`: N worker threads run `background_loop`;
//! - `background_threads = 0` with `autowork`: a writer whose commit froze a
//!   memtable does the pending work before returning;
//! - `Db::work(budget)`: the application runs jobs in a thread of its own.
//!
//! In every mode a writer that must wait (backpressure) first tries to run
//! the job it waits for itself, so no writer ever waits for work that no
//! thread is doing: `lsm::backpressure` decides when a commit group waits,
//! and this file is its `Host` (`make_room`).
//!
//! A job is claimed under the `bg` lock: a flush sets its table's `flushing`
//! flag (one flush per table at a time, so L0 stays in seqno order); a
//! compaction marks its input files `being_compacted` and registers its
//! output range, so compactions of disjoint files and ranges run in parallel,
//! across tables and within one. Each LSM job writes its files, makes them
//! durable, logs a version edit to the manifest, and only then installs the
//! new version (built from the version current at install time, so jobs that
//! finish in any order compose).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use parking_lot::MutexGuard;

use super::{cleaner, log, BgState, Core, DbInner};
use crate::btree::BtreeTable;
use crate::error::{Error, Result};
use crate::fs::WritableFile;
use crate::lsm::backpressure::{self, Host};
use crate::lsm::compaction::{self, Busy, Compaction, OutputRange};
use crate::lsm::job::{self, JobCounts, JobHost};
use crate::lsm::table::LsmTable;
use crate::lsm::version::{FileMeta, Version};
use crate::manifest::{FileRecord, VersionEdit};
use crate::mvcc::Horizon;
use crate::read_context;

pub(crate) use super::btree_work::{
    checkpoint_due, checkpoint_if_overdue, checkpoint_table, drop_btree, vacuum_btree,
};
use super::btree_work::{idle_for, run_checkpoint, vacuum_due, vacuum_if_sparse};

pub(crate) enum Job {
    Flush(Arc<LsmTable>),
    Compact(Arc<LsmTable>, Compaction),
    Checkpoint(Arc<BtreeTable>),
    /// `Options::vacuum_after_idle`: `vacuum_btree` of an idle table.
    Vacuum(Arc<BtreeTable>),
}

impl Job {
    fn table_name(&self) -> &str {
        match self {
            Job::Flush(t) | Job::Compact(t, _) => &t.name,
            Job::Checkpoint(t) | Job::Vacuum(t) => &t.name,
        }
    }
}

/// What `Db::work` did.
///
/// ```
/// # fn main() -> spinney::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// let db = spinney::Db::open(dir.path(), spinney::Options { background_threads: 0, autowork: false, ..spinney::Options::default() })?;
/// let t = db.create_table("t", spinney::TableOptions::lsm())?;
/// t.put(b"k", b"v")?;
/// t.flush()?;
/// let done: spinney::WorkDone = db.work(u64::MAX)?;
/// assert_eq!(done.jobs, 0); // the flush ran in `flush`: nothing was waiting
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkDone {
    /// Flushes and compactions run.
    pub jobs: u64,
    /// Bytes of SSTs they wrote.
    pub bytes_written: u64,
}

/// Finds a job (of `only` if given) and claims it. Called with the `bg` lock
/// held; counts the job as running.
pub(crate) fn pick_job(
    db: &DbInner,
    bg: &mut BgState,
    only: Option<&Arc<LsmTable>>,
) -> Option<Job> {
    if bg.shutdown || db.poisoned.load(Ordering::Acquire) {
        return None;
    }
    let tables: Vec<Arc<LsmTable>> = match only {
        Some(t) => vec![Arc::clone(t)],
        None => db.lsm_tables(),
    };
    // Flushes first: they free memory and unblock writers.
    for t in &tables {
        if t.dropped.load(Ordering::Acquire) || t.super_version().imms.is_empty() {
            continue;
        }
        let mut work = t.work.lock();
        if !work.flushing && !work.dropping {
            work.flushing = true;
            bg.running += 1;
            return Some(Job::Flush(Arc::clone(t)));
        }
    }
    // Then checkpoints that are due (B-tree tables), which let the log go.
    if only.is_none() {
        for t in db.btrees() {
            if checkpoint_due(db, &t) && !t.checkpointing.swap(true, Ordering::AcqRel) {
                bg.running += 1;
                return Some(Job::Checkpoint(t));
            }
        }
    }
    // Then, in an idle database, a B-tree table whose free space is worth
    // giving back.
    if only.is_none() {
        if let Some(after) = db.options.vacuum_after_idle {
            if idle_for(db, bg) >= after {
                for t in db.btrees() {
                    if vacuum_due(db, &t) && !t.vacuuming.swap(true, Ordering::AcqRel) {
                        bg.running += 1;
                        return Some(Job::Vacuum(t));
                    }
                }
            }
        }
    }
    // Then the compaction with the highest score over all tables.
    let mut best: Option<(Arc<LsmTable>, Compaction)> = None;
    for t in &tables {
        if t.dropped.load(Ordering::Acquire) {
            continue;
        }
        let version = Arc::clone(&t.super_version().version);
        let work = t.work.lock();
        if work.manual_waiting > 0 || work.dropping {
            continue;
        }
        let busy = Busy {
            outputs: &work.running,
        };
        if let Some(c) = compaction::pick(&version, &t.options.compaction, &busy) {
            if best.as_ref().is_none_or(|(_, b)| c.score > b.score) {
                best = Some((Arc::clone(t), c));
            }
        }
    }
    let (t, c) = best?;
    claim(&t, &c);
    bg.running += 1;
    Some(Job::Compact(t, c))
}

/// Marks a compaction's inputs and output range. Under the `bg` lock.
fn claim(t: &LsmTable, c: &Compaction) {
    for f in c.files() {
        f.being_compacted.store(true, Ordering::Release);
    }
    let (lo, hi) = c.key_range();
    t.work.lock().running.push(OutputRange {
        level: c.output_level,
        lo,
        hi,
    });
}

/// Ends a job claimed by `pick_job` (or a manual operation): clears its
/// marks and wakes whoever waits. Takes the `bg` lock.
fn finish(db: &DbInner, job: &Job) {
    let mut bg = db.bg.lock();
    match job {
        Job::Flush(t) => t.work.lock().flushing = false,
        Job::Checkpoint(t) => t.checkpointing.store(false, Ordering::Release),
        Job::Vacuum(t) => {
            t.vacuumed_at_wal.store(
                db.counters.wal_bytes.load(Ordering::Relaxed),
                Ordering::Release,
            );
            t.vacuuming.store(false, Ordering::Release);
        }
        Job::Compact(t, c) => {
            for f in c.files() {
                f.being_compacted.store(false, Ordering::Release);
            }
            let (lo, hi) = c.key_range();
            let mut work = t.work.lock();
            if let Some(i) = work
                .running
                .iter()
                .position(|r| r.level == c.output_level && r.lo == lo && r.hi == hi)
            {
                work.running.swap_remove(i);
            }
        }
    }
    bg.running = bg.running.saturating_sub(1);
    db.bg_done.notify_all();
    db.bg_work.notify_all();
}

/// Runs a claimed job in this thread; a failure poisons the database.
/// Returns the bytes the job wrote.
pub(crate) fn run_claimed(db: &DbInner, job: Job) -> Result<u64> {
    let result = read_context::suspended(|| match &job {
        Job::Flush(t) => flush_one(db, t).map_err(|e| ("flush", e)),
        Job::Compact(t, c) => job::compact(db, t, c).map_err(|e| ("compaction", e)),
        Job::Checkpoint(t) => run_checkpoint(db, t).map_err(|e| ("checkpoint", e)),
        Job::Vacuum(t) => vacuum_if_sparse(db, t).map_err(|e| ("vacuum", e)),
    });
    let result = result.map_err(|(what, e)| {
        db.poison(format!(
            "{what} of table {:?} failed: {e}",
            job.table_name()
        ));
        e
    });
    finish(db, &job);
    cleaner::delete_obsolete_ssts(db);
    result
}

/// Lowers the calling thread's CPU priority by `nice` (`Options::
/// background_nice`). On Linux the nice value belongs to each thread, so
/// only this one changes; elsewhere nothing is done. A failure (a limit
/// the process may not pass) leaves the priority as it was: the thread
/// still works, only without yielding to the foreground.
fn lower_priority(nice: i32) {
    #[cfg(target_os = "linux")]
    if nice > 0 {
        // SAFETY: nice(2) takes an integer and reads or writes no memory of
        // this process's.
        let _ = unsafe { libc::nice(nice) };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = nice;
}

/// How long an idle worker waits before it looks again for compactions
/// that reads alone made due.
const READS_RECHECK: std::time::Duration = std::time::Duration::from_secs(1);

/// A background thread: takes jobs until the database shuts down.
pub(crate) fn background_loop(db: &Arc<DbInner>) {
    lower_priority(db.options.background_nice);
    loop {
        let job = {
            let mut bg = db.bg.lock();
            loop {
                if bg.shutdown {
                    return;
                }
                if let Some(job) = pick_job(db, &mut bg, None) {
                    break job;
                }
                // Writers and jobs wake the workers when they leave work;
                // reads, which make compactions due by what they cost
                // (`compaction::pick_for_reads`), do not, so a worker looks
                // again after a while.
                db.bg_work.wait_for(&mut bg, READS_RECHECK);
            }
        };
        // The error has poisoned the database; the loop then only waits.
        let _ = run_claimed(db, job);
    }
}

/// Claims one job (of `only` if given) under the `bg` lock.
pub(crate) fn claim_job(db: &DbInner, only: Option<&Arc<LsmTable>>) -> Option<Job> {
    let mut bg = db.bg.lock();
    pick_job(db, &mut bg, only)
}

/// `Db::work`: runs jobs in this thread until `budget` bytes are written or
/// nothing is left to do. A job is never split, so the budget may be passed.
pub(crate) fn work(db: &DbInner, budget: u64) -> Result<WorkDone> {
    db.check_writable()?;
    let mut done = WorkDone::default();
    while done.bytes_written < budget {
        let Some(job) = claim_job(db, None) else {
            break;
        };
        done.bytes_written += run_claimed(db, job)?;
        done.jobs += 1;
    }
    db.check_writable()?;
    Ok(done)
}

/// Autowork: after a commit that froze a memtable, with no background
/// threads, the writer does the pending work — up to `AUTOWORK_BUDGET`
/// bytes, so that a writer is not kept working for as long as other
/// writers make more work; the rest is done after a later commit (and
/// backpressure makes sure it is).
pub(crate) fn autowork(db: &DbInner, written: &[Core]) -> Result<()> {
    // A flush falls due only in a table the commit wrote to; a checkpoint
    // in any B-tree table that changed, as the log grows.
    let due =
        written.iter().any(|t| t.work_due(db)) || db.btrees().iter().any(|t| checkpoint_due(db, t));
    if !due {
        return Ok(());
    }
    work(db, AUTOWORK_BUDGET).map(|_| ())
}

/// Bytes a writer writes in one round of autowork (jobs are not split, so
/// one large compaction may pass it).
const AUTOWORK_BUDGET: u64 = 64 << 20;

/// Blocks until no table has pending flushes or compactions. With no
/// background threads, the caller does the work.
pub(crate) fn wait_idle(db: &DbInner) -> Result<()> {
    let mut bg = db.bg.lock();
    loop {
        db.check_writable()?;
        if bg.shutdown {
            return Err(Error::Closed);
        }
        if db.options.background_threads == 0 {
            if let Some(job) = pick_job(db, &mut bg, None) {
                MutexGuard::unlocked(&mut bg, || run_claimed(db, job))?;
                continue;
            }
        }
        let tables = db.lsm_tables();
        let pending = bg.running > 0 || tables.iter().any(|t| t.needs_work());
        if !pending {
            return Ok(());
        }
        db.bg_work.notify_all();
        db.bg_done.wait(&mut bg);
    }
}

/// A manual compaction of a B-tree table: compacting it all packs its
/// leaves and gives space back (`vacuum_btree`); a B-tree has no levels to
/// compact one of.
pub(crate) fn compact_btree(db: &DbInner, t: &BtreeTable, manual: Manual) -> Result<()> {
    match manual {
        Manual::All => vacuum_btree(db, t),
        Manual::Level(_) => Ok(()),
    }
}

/// Makes room in an LSM table for a commit group: freezes a full memtable
/// and applies backpressure (`lsm::backpressure`), under the `bg` lock
/// unless the table needs nothing done. A writer that waited for
/// background work, or did it, is counted as a stop.
pub(crate) fn make_room(db: &DbInner, t: &Arc<LsmTable>) -> Result<()> {
    let bp = &db.options.backpressure;
    if backpressure::has_room(t, bp) {
        return db.check_writable();
    }
    let mut writer = StalledWriter {
        db,
        bg: db.bg.lock(),
        stopped: None,
    };
    let result = backpressure::make_room(t, bp, &mut writer);
    let StalledWriter { bg, stopped, .. } = writer;
    drop(bg);
    if let Some(start) = stopped {
        db.count_stop(start);
    }
    result
}

/// The scheduler as a commit leader under an LSM table's backpressure
/// sees it (`lsm::backpressure::Host`): it holds the `bg` lock, and runs a
/// job of the table in its own thread or waits for one.
struct StalledWriter<'a> {
    db: &'a DbInner,
    bg: MutexGuard<'a, BgState>,
    /// When the writer first waited for background work or ran it.
    stopped: Option<Instant>,
}

impl Host for StalledWriter<'_> {
    fn check(&self) -> Result<()> {
        self.db.check_writable()?;
        if self.bg.shutdown {
            return Err(Error::Closed);
        }
        Ok(())
    }

    fn run_job(&mut self, table: &Arc<LsmTable>) -> bool {
        let Some(job) = pick_job(self.db, &mut self.bg, Some(table)) else {
            return false;
        };
        self.stopped.get_or_insert_with(Instant::now);
        // The job's failure poisons the database; `check` reports it.
        let _ = MutexGuard::unlocked(&mut self.bg, || run_claimed(self.db, job));
        true
    }

    fn wait_for_job(&mut self) {
        self.stopped.get_or_insert_with(Instant::now);
        self.db.bg_work.notify_all();
        self.db.bg_done.wait(&mut self.bg);
    }

    fn slow_down(&mut self, delay: std::time::Duration) {
        self.db.bg_work.notify_all();
        let start = Instant::now();
        MutexGuard::unlocked(&mut self.bg, || std::thread::sleep(delay));
        let c = &self.db.counters;
        c.slowdowns.fetch_add(1, Ordering::Relaxed);
        let micros = start.elapsed().as_micros() as u64;
        c.slowdown_micros.fetch_add(micros, Ordering::Relaxed);
    }

    fn wake_workers(&self) {
        self.db.bg_work.notify_all();
    }
}

/// Freezes the table's memtable and flushes every frozen memtable, in the
/// caller's thread.
pub(crate) fn flush_table_now(db: &Arc<DbInner>, table: &Arc<LsmTable>) -> Result<()> {
    // Freezing the active memtable must not race with the commit leader,
    // which adds to it while holding the commit lock.
    {
        let _commit = db.commit.lock();
        table.freeze_memtable();
    }
    {
        let mut bg = db.bg.lock();
        loop {
            if bg.shutdown {
                return Err(Error::Closed);
            }
            db.check_writable()?;
            let mut work = table.work.lock();
            if !work.flushing {
                work.flushing = true;
                bg.running += 1;
                break;
            }
            drop(work);
            db.bg_done.wait(&mut bg);
        }
    }
    let job = Job::Flush(Arc::clone(table));
    let mut result = Ok(());
    while !table.super_version().imms.is_empty() {
        if let Err(e) = read_context::suspended(|| flush_one(db, table)) {
            db.poison(format!("flush of table {:?} failed: {e}", table.name));
            result = Err(e);
            break;
        }
    }
    finish(db, &job);
    cleaner::delete_obsolete_ssts(db);
    result?;
    // The background worker may have failed on one of these memtables.
    db.check_writable()
}

/// Which manual compaction to run.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Manual {
    Level(usize),
    All,
}

/// Runs a manual compaction in the caller's thread, waiting first until its
/// files are free. The background leaves the table's compactions alone
/// while it waits, so it cannot be starved.
pub(crate) fn compact_manual(db: &DbInner, table: &Arc<LsmTable>, which: Manual) -> Result<()> {
    let claimed = {
        let mut bg = db.bg.lock();
        table.work.lock().manual_waiting += 1;
        let picked = loop {
            if bg.shutdown {
                break Err(Error::Closed);
            }
            if let Err(e) = db.check_writable() {
                break Err(e);
            }
            if table.dropped.load(Ordering::Acquire) {
                break Err(Error::NoSuchTable(table.name.clone()));
            }
            let version = Arc::clone(&table.super_version().version);
            let opts = &table.options.compaction;
            let work = table.work.lock();
            let busy = Busy {
                outputs: &work.running,
            };
            let pick = match which {
                Manual::Level(n) => compaction::manual_level(&version, opts, n, &busy),
                Manual::All => compaction::manual_all(&version, opts, &busy),
            };
            if let Ok(c) = pick {
                break Ok(c);
            }
            drop(work);
            db.bg_work.notify_all();
            db.bg_done.wait(&mut bg);
        };
        table.work.lock().manual_waiting -= 1;
        let picked = picked?;
        if let Some(c) = &picked {
            claim(table, c);
            bg.running += 1;
        }
        picked
    };
    if let Some(c) = claimed {
        run_claimed(db, Job::Compact(Arc::clone(table), c))?;
    }
    db.check_writable()
}

/// Drops an LSM table: once its jobs are done and none can start, the
/// manifest records the drop; its files go once no reader needs them.
pub(crate) fn drop_lsm(db: &DbInner, table: &LsmTable) -> Result<()> {
    begin_drop(db, table)?;
    let mut vs = db.vs.lock();
    let edit = VersionEdit {
        dropped: vec![table.id],
        ..VersionEdit::default()
    };
    let logged = vs.log(db, &edit);
    if logged.is_ok() {
        vs.tables.remove(&table.name);
        table.dropped.store(true, Ordering::Release);
    }
    drop(vs);
    end_drop(db, table);
    if let Err(e) = logged {
        db.poison(format!("writing the manifest failed: {e}"));
        return Err(e);
    }
    cleaner::delete_obsolete_ssts(db);
    Ok(())
}

/// Waits until nothing runs on `table` and keeps new work off it, for
/// `drop_lsm`. Undo with `end_drop`.
fn begin_drop(db: &DbInner, table: &LsmTable) -> Result<()> {
    let mut bg = db.bg.lock();
    table.work.lock().dropping = true;
    loop {
        if bg.shutdown {
            table.work.lock().dropping = false;
            return Err(Error::Closed);
        }
        if table.work.lock().is_idle() {
            return Ok(());
        }
        db.bg_done.wait(&mut bg);
    }
}

fn end_drop(db: &DbInner, table: &LsmTable) {
    let _bg = db.bg.lock();
    table.work.lock().dropping = false;
    db.bg_done.notify_all();
}

/// Flushes the oldest frozen memtable of `table`, then lets go of the log
/// segments no table needs any more. Returns the bytes written.
fn flush_one(db: &DbInner, table: &LsmTable) -> Result<u64> {
    let written = job::flush_one(db, table)?;
    log::delete_obsolete(db);
    Ok(written)
}

/// The database as the LSM jobs see it (`lsm::job`).
impl JobHost for DbInner {
    fn create_sst(&self) -> Result<(u64, Box<dyn WritableFile>)> {
        let n = self.new_output_number();
        match self.sst_files().create(n) {
            Ok(file) => Ok((n, file)),
            Err(e) => {
                self.release(&[n]);
                Err(e)
            }
        }
    }

    fn release(&self, numbers: &[u64]) {
        let mut vs = self.vs.lock();
        for n in numbers {
            vs.pending_outputs.remove(n);
        }
    }

    fn sst(&self, record: FileRecord) -> FileMeta {
        self.sst_files().meta(record)
    }

    fn sync_dir(&self) -> Result<()> {
        self.fs.sync_dir(&self.dir)
    }

    fn sync_log_to(&self, seqno: u64) -> Result<()> {
        log::sync_to(self, seqno)
    }

    fn horizon(&self) -> Horizon {
        DbInner::horizon(self)
    }

    fn next_file_number(&self) -> u64 {
        self.next_file_number.load(Ordering::Acquire)
    }

    fn last_seqno(&self) -> u64 {
        self.last_seqno.load(Ordering::Acquire)
    }

    fn log_and_install(
        &self,
        table: &LsmTable,
        edit: &VersionEdit,
        flushed: usize,
        build: &mut dyn FnMut(&Version) -> Result<Version>,
    ) -> Result<()> {
        let mut vs = self.vs.lock();
        let current = Arc::clone(&table.super_version().version);
        let version = build(&current)?;
        vs.log(self, edit)?;
        table.install(version, flushed);
        vs.live_versions
            .push(Arc::downgrade(&table.super_version().version));
        Ok(())
    }

    fn count(&self, counts: JobCounts) {
        let c = &self.counters;
        for (counter, n) in [
            (&c.flushes, counts.flushes),
            (&c.flush_bytes, counts.flush_bytes),
            (&c.compactions, counts.compactions),
            (&c.compaction_bytes_read, counts.compaction_bytes_read),
            (&c.compaction_bytes_written, counts.compaction_bytes_written),
            (&c.trivial_moves, counts.trivial_moves),
        ] {
            if n > 0 {
                counter.fetch_add(n, Ordering::Relaxed);
            }
        }
    }
}

/// Checks every file of every table; the entries checked.
pub(crate) fn verify(db: &DbInner) -> Result<u64> {
    let tables: Vec<Core> = db.vs.lock().tables.values().cloned().collect();
    let mut entries = db.counters.log_entries_replayed.load(Ordering::Relaxed);
    for t in &tables {
        entries += t.verify(db)?;
    }
    Ok(entries)
}
