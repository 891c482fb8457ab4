//! Background work: flushes, compactions, deleting files no one needs, the
//! manual forms of each, and the three ways work gets done.
//!
//! The work model, after SQLite4's LSM library:
//! - `background_threads = N`: N worker threads run `background_loop`;
//! - `background_threads = 0` with `autowork`: a writer whose commit froze a
//!   memtable does the pending work before returning;
//! - `Db::work(budget)`: the application runs jobs in a thread of its own.
//!
//! In every mode a writer that must wait (backpressure) first tries to run
//! the job it waits for itself, so no writer ever waits for work that no
//! thread is doing.
//!
//! A job is claimed under the `bg` lock: a flush sets its table's `flushing`
//! flag (one flush per table at a time, so L0 stays in seqno order); a
//! compaction marks its input files `being_compacted` and registers its
//! output range, so compactions of disjoint files and ranges run in parallel,
//! across tables and within one. Each job writes its files, makes them
//! durable, logs a version edit to the manifest, and only then installs the
//! new version (built from the version current at install time, so jobs that
//! finish in any order compose).

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use parking_lot::MutexGuard;

use super::{sst_name, wal_name, BgState, Core, DbInner};
use crate::btree::BtreeTable;
use crate::error::{Error, Result};
use crate::fs::WritableFile;
use crate::lsm::compaction::{self, Busy, Compaction, OutputRange};
use crate::lsm::level_iter::LevelIter;
use crate::lsm::table::{
    file_record, write_memtable, write_merged, DropPolicy, LsmTable, MergeOutput,
};
use crate::lsm::version::{FileMeta, Version};
use crate::manifest::VersionEdit;
use crate::mvcc::iter::InternalIterator;
use crate::mvcc::merge::MergingIter;
use crate::read_context;

pub(crate) enum Job {
    Flush(Arc<LsmTable>),
    Compact(Arc<LsmTable>, Compaction),
    Checkpoint(Arc<BtreeTable>),
}

impl Job {
    fn table_name(&self) -> &str {
        match self {
            Job::Flush(t) | Job::Compact(t, _) => &t.name,
            Job::Checkpoint(t) => &t.name,
        }
    }
}

/// Whether a B-tree table is due for a background checkpoint: it changed,
/// and `checkpoint_wal_bytes` of log were written since its last one.
pub(crate) fn checkpoint_due(db: &DbInner, t: &BtreeTable) -> bool {
    checkpoint_behind(db, t, db.options.checkpoint_wal_bytes)
}

/// Whether a B-tree table changed and `bytes` of log were written since
/// its last checkpoint froze.
fn checkpoint_behind(db: &DbInner, t: &BtreeTable, bytes: u64) -> bool {
    let wal = db.counters.wal_bytes.load(Ordering::Relaxed);
    !t.dropped.load(Ordering::Acquire)
        && t.has_changes()
        && wal.saturating_sub(t.wal_bytes_at_checkpoint.load(Ordering::Acquire)) >= bytes
}

/// What `Db::work` did.
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
        Job::Compact(t, c) => run_compaction(db, t, c).map_err(|e| ("compaction", e)),
        Job::Checkpoint(t) => run_checkpoint(db, t).map_err(|e| ("checkpoint", e)),
    });
    let result = result.map_err(|(what, e)| {
        db.poison(format!(
            "{what} of table {:?} failed: {e}",
            job.table_name()
        ));
        e
    });
    finish(db, &job);
    delete_obsolete_files(db);
    result
}

pub(crate) fn background_loop(db: &Arc<DbInner>) {
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
                db.bg_work.wait(&mut bg);
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
pub(crate) fn autowork(db: &DbInner, tables: &[Arc<LsmTable>]) -> Result<()> {
    if tables.iter().all(|t| t.super_version().imms.is_empty())
        && !db.btrees().iter().any(|t| checkpoint_due(db, t))
    {
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

/// Whether a B-tree table's checkpoint is so far behind (four times
/// `checkpoint_wal_bytes` of log) that writers to it do it themselves.
pub(crate) fn checkpoint_overdue(db: &DbInner, t: &BtreeTable) -> bool {
    checkpoint_behind(db, t, db.options.checkpoint_wal_bytes.saturating_mul(4))
}

/// Checkpoints a B-tree table in this thread (see `BtreeTable::checkpoint`);
/// returns the bytes written. Writers are held back by the commit lock only
/// while the checkpoint freezes the tree.
fn run_checkpoint(db: &DbInner, t: &BtreeTable) -> Result<u64> {
    let pages = t.checkpoint(
        || {
            let guard = db.commit.lock();
            (
                guard,
                db.last_seqno.load(Ordering::Acquire),
                db.counters.wal_bytes.load(Ordering::Relaxed),
            )
        },
        |seqno| sync_wal_to(db, seqno),
        |generation| {
            let edit = VersionEdit {
                checkpointed: vec![(t.id, generation)],
                ..VersionEdit::default()
            };
            db.vs.lock().log(db, &edit)
        },
    )?;
    delete_obsolete_wal(db);
    Ok(pages * t.file.page_size as u64)
}

/// `Db::checkpoint` and `Table::flush` of a B-tree table: a checkpoint in
/// the caller's thread (waiting for one running in the background). A
/// failure poisons the database.
pub(crate) fn checkpoint_table(db: &DbInner, t: &BtreeTable) -> Result<u64> {
    db.check_writable()?;
    read_context::suspended(|| run_checkpoint(db, t)).inspect_err(|e| {
        db.poison(format!("checkpoint of table {:?} failed: {e}", t.name));
    })
}

/// Drops a B-tree table: waits for its checkpoint, logs the drop, and
/// removes its file and cached pages.
pub(crate) fn drop_btree(db: &DbInner, t: &Arc<BtreeTable>) -> Result<()> {
    // Lock order: the table's checkpoint lock, then commit (as a checkpoint
    // takes them), then vs.
    let _checkpoints = t.lock_checkpoints();
    let _commit = db.commit.lock();
    let mut vs = db.vs.lock();
    let edit = VersionEdit {
        dropped: vec![t.id],
        ..VersionEdit::default()
    };
    if let Err(e) = vs.log(db, &edit) {
        drop(vs);
        db.poison(format!("writing the manifest failed: {e}"));
        return Err(e);
    }
    vs.tables.remove(&t.name);
    t.dropped.store(true, Ordering::Release);
    drop(vs);
    db.cache.erase_owner(t.file.owner);
    // A file left by a failed removal is an orphan the next open removes.
    let _ = db.fs.remove(&t.path);
    Ok(())
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
    delete_obsolete_files(db);
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

/// Waits until nothing runs on `table` and keeps new work off it, for
/// `drop_table`. Undo with `end_drop`.
pub(crate) fn begin_drop(db: &DbInner, table: &LsmTable) -> Result<()> {
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

pub(crate) fn end_drop(db: &DbInner, table: &LsmTable) {
    let _bg = db.bg.lock();
    table.work.lock().dropping = false;
    db.bg_done.notify_all();
}

/// Makes the log durable up to `seqno`.
fn sync_wal_to(db: &DbInner, seqno: u64) -> Result<()> {
    let mut wal = db.wal.lock();
    if wal.synced_seqno >= seqno {
        return Ok(());
    }
    let last = wal.last_seqno;
    if let Err(e) = wal.writer.sync() {
        drop(wal);
        db.poison(format!("syncing the write-ahead log failed: {e}"));
        return Err(e);
    }
    wal.synced_seqno = last;
    db.counters.wal_syncs.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

/// Writes the oldest frozen memtable of `table` to an L0 SST. Returns the
/// bytes written.
fn flush_one(db: &DbInner, table: &LsmTable) -> Result<u64> {
    let start = Instant::now();
    let sv = table.super_version();
    let Some(imm) = sv.imms.first().cloned() else {
        return Ok(0);
    };
    let flushed_seqno = imm.last_seqno.load(Ordering::Acquire);
    let (output, numbers) = with_new_files(db, |new_file| {
        write_memtable(&imm, &table.sst_options(), new_file)
    })?;
    let written: u64 = output.files.iter().map(|(_, i)| i.file_size).sum();
    let result = (|| {
        db.fs.sync_dir(&db.dir)?;
        // Entries of other tables committed in the same batches as these
        // must be durable before these stop being replayed from the log.
        sync_wal_to(db, flushed_seqno)?;
        let mut vs = db.vs.lock();
        let mut edit = VersionEdit {
            next_file_number: Some(db.next_file_number.load(Ordering::Acquire)),
            last_seqno: Some(db.last_seqno.load(Ordering::Acquire)),
            flushed: vec![(table.id, flushed_seqno)],
            ..VersionEdit::default()
        };
        let mut version = (*table.super_version().version).clone();
        for (number, info) in &output.files {
            let record = file_record(*number, info);
            edit.added.push((table.id, 0, record.clone()));
            let meta = FileMeta::new(
                record,
                db.path(&sst_name(*number)),
                Arc::clone(&db.fs),
                Arc::clone(&db.cache),
            );
            if let Some(l0) = version.levels.get_mut(0) {
                l0.insert(0, Arc::new(meta));
            }
        }
        vs.log(db, &edit)?;
        table.install(version, 1);
        vs.live_versions
            .push(Arc::downgrade(&table.super_version().version));
        table.flushed_seqno.store(flushed_seqno, Ordering::Release);
        Ok(())
    })();
    release_outputs(db, &numbers);
    result?;
    db.counters.flushes.fetch_add(1, Ordering::Relaxed);
    db.counters
        .flush_bytes
        .fetch_add(written, Ordering::Relaxed);
    {
        let mut c = table.counters.lock();
        c.flushes += 1;
        c.flush_micros += start.elapsed().as_micros() as u64;
        c.levels[0].written += written;
    }
    delete_obsolete_wal(db);
    Ok(written)
}

/// Runs `write` with a maker of new SST files whose numbers are reserved
/// against the file cleaner. On failure the reservations are released; on
/// success the caller releases them once the files are installed.
fn with_new_files(
    db: &DbInner,
    write: impl FnOnce(&mut dyn FnMut() -> Result<(u64, Box<dyn WritableFile>)>) -> Result<MergeOutput>,
) -> Result<(MergeOutput, Vec<u64>)> {
    let mut numbers = Vec::new();
    let result = write(&mut || {
        let n = db.new_output_number();
        numbers.push(n);
        Ok((n, db.fs.create(&db.path(&sst_name(n)))?))
    });
    match result {
        Ok(output) => Ok((output, numbers)),
        Err(e) => {
            release_outputs(db, &numbers);
            Err(e)
        }
    }
}

fn release_outputs(db: &DbInner, numbers: &[u64]) {
    let mut vs = db.vs.lock();
    for n in numbers {
        vs.pending_outputs.remove(n);
    }
}

/// Runs a claimed compaction. Returns the bytes written.
fn run_compaction(db: &DbInner, table: &LsmTable, c: &Compaction) -> Result<u64> {
    let start = Instant::now();
    let output_level = c.output_level;
    let base = Arc::clone(&table.super_version().version);
    let mut edit = VersionEdit {
        next_file_number: Some(db.next_file_number.load(Ordering::Acquire)),
        ..VersionEdit::default()
    };
    for (level, files) in &c.inputs {
        for f in files {
            edit.deleted
                .push((table.id, *level as u32, f.record.number));
        }
    }
    let mut numbers = Vec::new();
    let mut outputs: Vec<Arc<FileMeta>> = Vec::new();
    let mut written = 0;
    let trivial = c.is_trivial_move();
    if trivial {
        for f in c.files() {
            edit.added
                .push((table.id, output_level as u32, f.record.clone()));
            outputs.push(Arc::clone(f));
        }
        db.counters.trivial_moves.fetch_add(1, Ordering::Relaxed);
    } else {
        let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
        for (level, files) in &c.inputs {
            if *level == 0 {
                for f in files {
                    children.push(Box::new(f.sst()?.iter()));
                }
            } else {
                children.push(Box::new(LevelIter::new(files.clone())));
            }
        }
        let mut merge = MergingIter::new(children);
        merge.seek_to_first();
        let older = c.older_runs(&base);
        let is_bottom = |uk: &[u8]| !older.may_hold(uk);
        let policy = DropPolicy {
            horizon: &db.horizon(),
            is_bottom: &is_bottom,
            drop_shadowed: true,
        };
        let (output, reserved) = with_new_files(db, |new_file| {
            write_merged(
                &mut merge,
                &table.sst_options(),
                c.target_file_bytes,
                &policy,
                new_file,
            )
        })?;
        numbers = reserved;
        db.counters
            .compaction_bytes_read
            .fetch_add(output.bytes_read, Ordering::Relaxed);
        for (number, info) in &output.files {
            written += info.file_size;
            let record = file_record(*number, info);
            edit.added
                .push((table.id, output_level as u32, record.clone()));
            outputs.push(Arc::new(FileMeta::new(
                record,
                db.path(&sst_name(*number)),
                Arc::clone(&db.fs),
                Arc::clone(&db.cache),
            )));
        }
        db.counters
            .compaction_bytes_written
            .fetch_add(written, Ordering::Relaxed);
    }
    let result = (|| {
        if !trivial {
            db.fs.sync_dir(&db.dir)?;
        }
        let mut vs = db.vs.lock();
        let current = Arc::clone(&table.super_version().version);
        let version = apply_compaction(&current, c, outputs);
        if let Err(detail) = version.check() {
            return Err(Error::corruption(
                db.path("(version)"),
                0,
                format!("compaction broke an invariant: {detail}"),
            ));
        }
        vs.log(db, &edit)?;
        table.install(version, 0);
        vs.live_versions
            .push(Arc::downgrade(&table.super_version().version));
        Ok(())
    })();
    release_outputs(db, &numbers);
    result?;
    db.counters.compactions.fetch_add(1, Ordering::Relaxed);
    let (from_output, from_above) = c.input_bytes();
    let mut counters = table.counters.lock();
    if let Some(l) = counters.levels.get_mut(output_level) {
        l.compactions += 1;
        l.micros += start.elapsed().as_micros() as u64;
        if trivial {
            l.trivial_moves += 1;
        } else {
            l.read_here += from_output;
            l.read_above += from_above;
            l.written += written;
        }
    }
    Ok(written)
}

/// The version after `c`: its inputs removed from `current`, its outputs
/// added. An L0 output takes the place of its inputs, so that L0 stays
/// newest first.
fn apply_compaction(current: &Version, c: &Compaction, outputs: Vec<Arc<FileMeta>>) -> Version {
    let removed: HashSet<u64> = c.files().map(|f| f.record.number).collect();
    let mut version = current.clone();
    let l0_position = version
        .level(0)
        .iter()
        .position(|f| removed.contains(&f.record.number));
    for level in version.levels.iter_mut() {
        level.retain(|f| !removed.contains(&f.record.number));
    }
    if let Some(level) = version.levels.get_mut(c.output_level) {
        if c.output_level == 0 {
            let at = l0_position.unwrap_or(0).min(level.len());
            level.splice(at..at, outputs);
        } else {
            level.extend(outputs);
            level.sort_by(|a, b| a.smallest_user_key().cmp(b.smallest_user_key()));
        }
    }
    version
}

/// Deletes log segments whose every entry is persisted in SSTs.
fn delete_obsolete_wal(db: &DbInner) {
    if db.poisoned.load(Ordering::Acquire) {
        return;
    }
    // Read the visible seqno first: every entry up to it is in some memtable
    // (or already flushed), so the memtables' first seqnos below bound it.
    let visible = db.visible_seqno.load(Ordering::Acquire);
    let tables = db.lsm_tables();
    let mut keep_from = visible + 1;
    for t in &tables {
        if let Some(s) = t.super_version().oldest_unflushed_seqno() {
            keep_from = keep_from.min(s);
        }
    }
    for t in db.btrees() {
        t.mark_clean_upto(visible);
        keep_from = keep_from.min(t.persisted_seqno.load(Ordering::Acquire) + 1);
    }
    let obsolete: Vec<u64> = {
        let mut wal = db.wal.lock();
        let (gone, kept): (Vec<_>, Vec<_>) =
            wal.closed.iter().partition(|s| s.last_seqno < keep_from);
        wal.closed = kept;
        gone.iter().map(|s| s.number).collect()
    };
    for n in obsolete {
        // A segment left behind by a failed removal is skipped by recovery
        // (its entries are all persisted); the next open removes it.
        let _ = db.fs.remove(&db.path(&wal_name(n)));
    }
}

/// Deletes SSTs that no live version references.
///
/// Nothing is deleted once the database is poisoned: after a failed manifest
/// write it is unknown whether the edit naming a new file reached the disk,
/// so every file may still be referenced by the manifest the next open reads.
pub(crate) fn delete_obsolete_files(db: &DbInner) {
    if db.poisoned.load(Ordering::Acquire) {
        return;
    }
    // Numbers handed out after this snapshot belong to files being written
    // now: `next` (read under the same lock that allocates) fences them off.
    let (live, pending, next) = {
        let mut vs = db.vs.lock();
        // Checked under the lock that a failed manifest write is recorded
        // under: the failed job releases its outputs, which the manifest may
        // name, before its caller poisons the database.
        if vs.manifest_failed.is_some() {
            return;
        }
        let mut live = HashSet::new();
        vs.live_versions.retain(|w| match w.upgrade() {
            Some(v) => {
                live.extend(v.files().map(|f| f.record.number));
                true
            }
            None => false,
        });
        for t in vs.tables.values().filter_map(Core::lsm) {
            live.extend(t.super_version().version.files().map(|f| f.record.number));
        }
        (
            live,
            vs.pending_outputs.clone(),
            db.next_file_number.load(Ordering::Acquire),
        )
    };
    let Ok(names) = db.fs.list(&db.dir) else {
        return;
    };
    for name in names {
        if let Some(n) = super::parse_numbered(&name, "sst") {
            if n < next
                && !live.contains(&n)
                && !pending.contains(&n)
                && db.fs.remove(&db.path(&name)).is_ok()
            {
                db.cache.erase_owner(n);
            }
        }
    }
}

/// Checks every file of every table; the entries checked.
pub(crate) fn verify(db: &DbInner) -> Result<u64> {
    let tables: Vec<Core> = db.vs.lock().tables.values().cloned().collect();
    let mut entries = 0;
    for t in &tables {
        entries += t.verify(db)?;
    }
    Ok(entries)
}

/// Checks an LSM table's level invariants and every SST; the entries.
pub(crate) fn verify_lsm(db: &DbInner, t: &LsmTable) -> Result<u64> {
    let version = Arc::clone(&t.super_version().version);
    if let Err(detail) = version.check() {
        return Err(Error::corruption(
            db.path("MANIFEST"),
            0,
            format!("table {:?}: {detail}", t.name),
        ));
    }
    let mut entries = 0;
    for f in version.files() {
        let n = f.sst()?.verify()?;
        if n != f.record.entries {
            return Err(Error::corruption(
                &f.path,
                0,
                format!(
                    "holds {n} entries but the manifest records {}",
                    f.record.entries
                ),
            ));
        }
        entries += n;
    }
    Ok(entries)
}
