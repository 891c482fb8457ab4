//! Background work: flushes, compactions, deleting files no one needs, and
//! the manual forms of each.
//!
//! One worker thread runs `background_loop`. A table is worked on by one
//! thread at a time (its `busy` flag, taken under the `bg` lock), so a flush
//! and a compaction of one table never race; manual operations take the same
//! flag. Each job writes its files, makes them durable, logs a version edit
//! to the manifest, and only then installs the new version.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::{sst_name, wal_name, DbInner};
use crate::error::{Error, Result};
use crate::fs::WritableFile;
use crate::lsm::iter::InternalIterator;
use crate::lsm::level_iter::LevelIter;
use crate::lsm::merge::MergingIter;
use crate::lsm::table::{
    file_record, plan_compaction, write_memtable, write_merged, CompactionPick, DropPolicy,
    LsmTable, MergeOutput,
};
use crate::lsm::version::{FileMeta, Version};
use crate::manifest::VersionEdit;

enum Job {
    Flush(Arc<LsmTable>),
    Compact(Arc<LsmTable>, CompactionPick),
}

/// Finds a job and marks its table busy. Called with the `bg` lock held.
fn pick_job(db: &DbInner) -> Option<Job> {
    let tables: Vec<_> = db.vs.lock().tables.values().cloned().collect();
    // Flushes first: they free memory and unblock writers.
    for t in &tables {
        if !t.busy.load(Ordering::Acquire) && !t.super_version().imms.is_empty() {
            t.busy.store(true, Ordering::Release);
            return Some(Job::Flush(Arc::clone(t)));
        }
    }
    for t in &tables {
        if t.busy.load(Ordering::Acquire) {
            continue;
        }
        if let Some(pick) = t.pick_compaction(&t.super_version().version) {
            t.busy.store(true, Ordering::Release);
            return Some(Job::Compact(Arc::clone(t), pick));
        }
    }
    None
}

pub(crate) fn background_loop(db: &Arc<DbInner>) {
    loop {
        let job = {
            let mut bg = db.bg.lock();
            loop {
                if bg.shutdown {
                    return;
                }
                if !db.poisoned.load(Ordering::Acquire) {
                    if let Some(job) = pick_job(db) {
                        break job;
                    }
                }
                db.bg_work.wait(&mut bg);
            }
        };
        let (table, result) = match job {
            Job::Flush(t) => {
                let r = flush_one(db, &t);
                (t, r.map_err(|e| ("flush", e)))
            }
            Job::Compact(t, pick) => {
                let r = run_compaction(db, &t, &pick);
                (t, r.map_err(|e| ("compaction", e)))
            }
        };
        if let Err((what, e)) = result {
            db.poison(format!(
                "background {what} of table {:?} failed: {e}",
                table.name
            ));
        }
        release_table(db, &table);
        delete_obsolete_files(db);
    }
}

/// Waits until `table` is free, then marks it busy.
pub(crate) fn acquire_table(db: &DbInner, table: &LsmTable) -> Result<()> {
    let mut bg = db.bg.lock();
    loop {
        if bg.shutdown {
            return Err(Error::Closed);
        }
        if !table.busy.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        db.bg_done.wait(&mut bg);
    }
}

pub(crate) fn release_table(db: &DbInner, table: &LsmTable) {
    let _bg = db.bg.lock();
    table.busy.store(false, Ordering::Release);
    db.bg_done.notify_all();
    db.bg_work.notify_all();
}

/// Blocks until no table has pending flushes or compactions.
pub(crate) fn wait_idle(db: &DbInner) -> Result<()> {
    let mut bg = db.bg.lock();
    loop {
        db.check_writable()?;
        if bg.shutdown {
            return Err(Error::Closed);
        }
        let tables: Vec<_> = db.vs.lock().tables.values().cloned().collect();
        let pending = tables.iter().any(|t| {
            let sv = t.super_version();
            t.busy.load(Ordering::Acquire)
                || !sv.imms.is_empty()
                || t.pick_compaction(&sv.version).is_some()
        });
        if !pending {
            return Ok(());
        }
        db.bg_work.notify_all();
        db.bg_done.wait(&mut bg);
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
    acquire_table(db, table)?;
    let mut result = Ok(());
    while !table.super_version().imms.is_empty() {
        if let Err(e) = flush_one(db, table) {
            db.poison(format!("flush of table {:?} failed: {e}", table.name));
            result = Err(e);
            break;
        }
    }
    release_table(db, table);
    delete_obsolete_files(db);
    result?;
    // The background worker may have failed on one of these memtables.
    db.check_writable()
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

/// Writes the oldest frozen memtable of `table` to an L0 SST.
fn flush_one(db: &DbInner, table: &LsmTable) -> Result<()> {
    let sv = table.super_version();
    let Some(imm) = sv.imms.first().cloned() else {
        return Ok(());
    };
    let flushed_seqno = imm.last_seqno.load(Ordering::Acquire);
    let (output, numbers) = with_new_files(db, |new_file| {
        write_memtable(&imm, &table.sst_options(), new_file)
    })?;
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
            db.counters
                .flush_bytes
                .fetch_add(info.file_size, Ordering::Relaxed);
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
    delete_obsolete_wal(db);
    Ok(())
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

/// Runs a compaction chosen by `pick`.
pub(crate) fn run_compaction(db: &DbInner, table: &LsmTable, pick: &CompactionPick) -> Result<()> {
    let output_level = pick.output_level();
    let base = Arc::clone(&table.super_version().version);
    let mut edit = VersionEdit {
        next_file_number: Some(db.next_file_number.load(Ordering::Acquire)),
        ..VersionEdit::default()
    };
    for f in &pick.inputs {
        edit.deleted
            .push((table.id, pick.level as u32, f.record.number));
    }
    for f in &pick.next_inputs {
        edit.deleted
            .push((table.id, output_level as u32, f.record.number));
    }
    let mut numbers = Vec::new();
    let mut outputs: Vec<Arc<FileMeta>> = Vec::new();
    if pick.is_trivial_move() {
        for f in &pick.inputs {
            edit.added
                .push((table.id, output_level as u32, f.record.clone()));
            outputs.push(Arc::clone(f));
        }
        db.counters.trivial_moves.fetch_add(1, Ordering::Relaxed);
    } else {
        let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
        if pick.level == 0 {
            for f in &pick.inputs {
                children.push(Box::new(f.sst()?.iter()));
            }
        } else {
            children.push(Box::new(LevelIter::new(pick.inputs.clone())));
        }
        children.push(Box::new(LevelIter::new(pick.next_inputs.clone())));
        let mut merge = MergingIter::new(children);
        merge.seek_to_first();
        let deeper: Vec<Vec<Arc<FileMeta>>> =
            base.levels.iter().skip(output_level + 1).cloned().collect();
        let is_bottom = |uk: &[u8]| deeper.iter().flatten().all(|f| !f.overlaps(uk, uk));
        let policy = DropPolicy {
            oldest_snapshot: db.oldest_snapshot(),
            is_bottom: &is_bottom,
            drop_shadowed: true,
        };
        let (output, reserved) = with_new_files(db, |new_file| {
            write_merged(
                &mut merge,
                &table.sst_options(),
                table.target_file_bytes(),
                &policy,
                new_file,
            )
        })?;
        numbers = reserved;
        db.counters
            .compaction_bytes_read
            .fetch_add(output.bytes_read, Ordering::Relaxed);
        for (number, info) in &output.files {
            db.counters
                .compaction_bytes_written
                .fetch_add(info.file_size, Ordering::Relaxed);
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
    }
    let result = (|| {
        db.fs.sync_dir(&db.dir)?;
        let mut vs = db.vs.lock();
        let current = Arc::clone(&table.super_version().version);
        let version = apply_compaction(&current, pick, outputs);
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
    Ok(())
}

fn apply_compaction(
    current: &Version,
    pick: &CompactionPick,
    outputs: Vec<Arc<FileMeta>>,
) -> Version {
    let removed: HashSet<u64> = pick
        .inputs
        .iter()
        .chain(pick.next_inputs.iter())
        .map(|f| f.record.number)
        .collect();
    let mut version = current.clone();
    for level in version.levels.iter_mut() {
        level.retain(|f| !removed.contains(&f.record.number));
    }
    if let Some(level) = version.levels.get_mut(pick.output_level()) {
        level.extend(outputs);
        level.sort_by(|a, b| a.smallest_user_key().cmp(b.smallest_user_key()));
    }
    version
}

/// Merges every file of the table into its last level.
pub(crate) fn compact_all(db: &Arc<DbInner>, table: &Arc<LsmTable>) -> Result<()> {
    acquire_table(db, table)?;
    let result = (|| {
        let levels = table.super_version().version.levels.len();
        for level in 0..levels.saturating_sub(1) {
            let version = Arc::clone(&table.super_version().version);
            let pick = plan_compaction(&version, level, Some(()));
            if pick.inputs.is_empty() {
                continue;
            }
            run_compaction(db, table, &pick)?;
        }
        Ok(())
    })();
    if let Err(e) = &result {
        db.poison(format!("compaction of table {:?} failed: {e}", table.name));
    }
    release_table(db, table);
    delete_obsolete_files(db);
    result
}

/// Deletes log segments whose every entry is persisted in SSTs.
fn delete_obsolete_wal(db: &DbInner) {
    if db.poisoned.load(Ordering::Acquire) {
        return;
    }
    // Read the visible seqno first: every entry up to it is in some memtable
    // (or already flushed), so the memtables' first seqnos below bound it.
    let visible = db.visible_seqno.load(Ordering::Acquire);
    let tables: Vec<_> = db.vs.lock().tables.values().cloned().collect();
    let mut keep_from = visible + 1;
    for t in &tables {
        if let Some(s) = t.super_version().oldest_unflushed_seqno() {
            keep_from = keep_from.min(s);
        }
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
        for t in vs.tables.values() {
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

/// Checks every SST of every table.
pub(crate) fn verify(db: &DbInner) -> Result<u64> {
    let tables: Vec<_> = db.vs.lock().tables.values().cloned().collect();
    let mut entries = 0;
    for t in tables {
        let version = Arc::clone(&t.super_version().version);
        if let Err(detail) = version.check() {
            return Err(Error::corruption(
                db.path("MANIFEST"),
                0,
                format!("table {:?}: {detail}", t.name),
            ));
        }
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
    }
    Ok(entries)
}
