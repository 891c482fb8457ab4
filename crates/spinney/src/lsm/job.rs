//! Carrying out the LSM's two jobs on one table: a flush (the oldest frozen
//! memtable into an L0 run) and a compaction (a chosen set of files merged
//! into the output level, or moved there when nothing overlaps). What to do
//! is chosen elsewhere (`compaction.rs` picks, `db/work.rs` schedules and
//! claims); this file only does it.
//!
//! A job writes its files, makes them durable, then logs a version edit to
//! the manifest and installs the new version, built from the version current
//! at that moment (so that jobs that finish in any order compose). What it
//! needs of the database around the table (file numbers, the manifest, the
//! log, the horizon, the counters) it asks of a `JobHost`, which `db/`
//! implements; nothing here knows of `db/`.
//!
//! Thread-safety: a job runs in one thread; the caller has claimed it (one
//! flush per table at a time, so L0 stays newest first; a compaction's
//! input files are marked and its output range registered), so jobs that
//! run at once touch different files.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use super::compaction::Compaction;
use super::level_iter::LevelIter;
use super::table::{file_record, write_memtable, write_merged, DropPolicy, LsmTable, MergeOutput};
use super::version::{FileMeta, Version};
use crate::error::{Error, Result};
use crate::fs::WritableFile;
use crate::manifest::{FileRecord, VersionEdit};
use crate::mvcc::iter::InternalIterator;
use crate::mvcc::merge::MergingIter;
use crate::mvcc::Horizon;

/// What a job did, for the database's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct JobCounts {
    pub flushes: u64,
    pub flush_bytes: u64,
    pub compactions: u64,
    pub compaction_bytes_read: u64,
    pub compaction_bytes_written: u64,
    pub trivial_moves: u64,
}

/// What a job needs of the database its table lives in.
pub(crate) trait JobHost {
    /// Creates a new SST file, its number reserved against the file cleaner
    /// until `release`.
    fn create_sst(&self) -> Result<(u64, Box<dyn WritableFile>)>;
    /// Ends the reservations of `numbers`: their files are installed, or
    /// abandoned (and then the cleaner's).
    fn release(&self, numbers: &[u64]);
    /// The SST of `record`, as a file a version holds.
    fn sst(&self, record: FileRecord) -> FileMeta;
    /// Makes the directory entries of new files durable.
    fn sync_dir(&self) -> Result<()>;
    /// Makes the log durable up to `seqno`.
    fn sync_log_to(&self, seqno: u64) -> Result<()>;
    /// Who may still read old versions now.
    fn horizon(&self) -> Horizon;
    /// The next file number the database will hand out.
    fn next_file_number(&self) -> u64;
    /// The last seqno the database assigned.
    fn last_seqno(&self) -> u64;
    /// Under the manifest's lock: builds the table's next version from its
    /// current one (`build`), logs `edit` durably, installs the version
    /// (`LsmTable::install` with `flushed` memtables), and keeps track of it
    /// for the file cleaner. An error from `build` logs nothing.
    fn log_and_install(
        &self,
        table: &LsmTable,
        edit: &VersionEdit,
        flushed: usize,
        build: &mut dyn FnMut(&Version) -> Result<Version>,
    ) -> Result<()>;
    /// Adds a job's figures to the database's counters.
    fn count(&self, counts: JobCounts);
}

/// Writes the oldest frozen memtable of `table` to an L0 SST. Returns the
/// bytes written (0 when no memtable is frozen).
pub(crate) fn flush_one(host: &dyn JobHost, table: &LsmTable) -> Result<u64> {
    let start = Instant::now();
    let sv = table.super_version();
    let Some(imm) = sv.imms.first().cloned() else {
        return Ok(0);
    };
    let persisted_seqno = imm.last_seqno.load(Ordering::Acquire);
    let range_dels = imm.range_dels();
    let (output, numbers) = with_new_files(host, |new_file| {
        write_memtable(&imm, &table.sst_options(), new_file)
    })?;
    let written: u64 = output.files.iter().map(|(_, i)| i.file_size).sum();
    let result = (|| {
        host.sync_dir()?;
        // Entries of other tables committed in the same batches as these
        // must be durable before these stop being replayed from the log.
        host.sync_log_to(persisted_seqno)?;
        let mut edit = VersionEdit {
            next_file_number: Some(host.next_file_number()),
            last_seqno: Some(host.last_seqno()),
            flushed: vec![(table.id, persisted_seqno)],
            range_dels_added: range_dels.iter().map(|t| (table.id, t.clone())).collect(),
            ..VersionEdit::default()
        };
        let mut files = Vec::new();
        for (number, info) in &output.files {
            let record = file_record(*number, info, 0);
            edit.added.push((table.id, 0, record.clone()));
            files.push(Arc::new(host.sst(record)));
        }
        let with_files = |current: &Version| {
            let mut version = current.clone();
            if let Some(l0) = version.levels.get_mut(0) {
                for f in &files {
                    l0.insert(0, Arc::clone(f));
                }
            }
            version
        };
        // A tombstone over keys no file holds older versions of (a range
        // already empty) goes at once.
        edit.range_dels_dropped = with_files(&table.super_version().version)
            .obsolete_range_dels(&range_dels)
            .into_iter()
            .map(|s| (table.id, s))
            .collect();
        let dropped: Vec<u64> = edit.range_dels_dropped.iter().map(|&(_, s)| s).collect();
        host.log_and_install(table, &edit, 1, &mut |current| {
            let mut version = with_files(current);
            version.change_range_dels(&range_dels, &dropped);
            Ok(version)
        })?;
        table
            .persisted_seqno
            .store(persisted_seqno, Ordering::Release);
        Ok(())
    })();
    host.release(&numbers);
    result?;
    host.count(JobCounts {
        flushes: 1,
        flush_bytes: written,
        ..JobCounts::default()
    });
    let mut c = table.counters.lock();
    c.flushes += 1;
    c.flush_micros += start.elapsed().as_micros() as u64;
    c.levels[0].written += written;
    Ok(written)
}

/// Runs `write` with a maker of new SST files whose numbers are reserved
/// against the file cleaner. On failure the reservations are released; on
/// success the caller releases them once the files are installed.
fn with_new_files(
    host: &dyn JobHost,
    write: impl FnOnce(&mut dyn FnMut() -> Result<(u64, Box<dyn WritableFile>)>) -> Result<MergeOutput>,
) -> Result<(MergeOutput, Vec<u64>)> {
    let mut numbers = Vec::new();
    let result = write(&mut || {
        let (n, file) = host.create_sst()?;
        numbers.push(n);
        Ok((n, file))
    });
    match result {
        Ok(output) => Ok((output, numbers)),
        Err(e) => {
            host.release(&numbers);
            Err(e)
        }
    }
}

/// Runs a claimed compaction of `table`. Returns the bytes written.
pub(crate) fn compact(host: &dyn JobHost, table: &LsmTable, c: &Compaction) -> Result<u64> {
    let start = Instant::now();
    let output_level = c.output_level;
    // Every range tombstone at or below this seqno is in `base` (a flush
    // installs its tombstones before it stores its seqno).
    let tombstones_through = table.persisted_seqno.load(Ordering::Acquire);
    let base = Arc::clone(&table.super_version().version);
    let mut edit = VersionEdit {
        next_file_number: Some(host.next_file_number()),
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
    let mut counts = JobCounts {
        compactions: 1,
        ..JobCounts::default()
    };
    let trivial = c.is_trivial_move();
    if trivial {
        for f in c.files() {
            edit.added
                .push((table.id, output_level as u32, f.record.clone()));
            outputs.push(Arc::clone(f));
        }
        counts.trivial_moves = 1;
    } else {
        let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
        for (level, files) in &c.inputs {
            if *level == 0 {
                for f in files {
                    children.push(Box::new(f.sst()?.scan_iter()));
                }
            } else {
                children.push(Box::new(LevelIter::scanning(files.clone())));
            }
        }
        let mut merge = MergingIter::new(children);
        merge.seek_to_first();
        let older = c.older_runs(&base);
        let is_bottom = |uk: &[u8]| !older.may_hold(uk);
        let horizon = host.horizon();
        let policy = DropPolicy {
            horizon: &horizon,
            is_bottom: &is_bottom,
            range_dels: &base.range_dels.fragments,
            drop_shadowed: true,
        };
        // Every reader is at or above this seqno: the outputs keep no
        // version that a tombstone of `base` at or below it hides.
        let applied = horizon.oldest().min(tombstones_through);
        let (output, reserved) = with_new_files(host, |new_file| {
            write_merged(
                &mut merge,
                &table.sst_options(),
                c.target_file_bytes,
                &policy,
                new_file,
            )
        })?;
        numbers = reserved;
        counts.compaction_bytes_read = output.bytes_read;
        for (number, info) in &output.files {
            counts.compaction_bytes_written += info.file_size;
            let record = file_record(*number, info, applied);
            edit.added
                .push((table.id, output_level as u32, record.clone()));
            outputs.push(Arc::new(host.sst(record)));
        }
    }
    let written = counts.compaction_bytes_written;
    // The tombstones that hide nothing once the outputs replace the inputs.
    // Deciding on the version of now is safe when it changes before the
    // install: a flush adds only versions newer than every flushed
    // tombstone, and another compaction only moves versions its inputs held.
    edit.range_dels_dropped = apply_compaction(&table.super_version().version, c, outputs.clone())
        .obsolete_range_dels(&[])
        .into_iter()
        .map(|s| (table.id, s))
        .collect();
    let dropped: Vec<u64> = edit.range_dels_dropped.iter().map(|&(_, s)| s).collect();
    let result = (|| {
        if !trivial {
            host.sync_dir()?;
        }
        host.log_and_install(table, &edit, 0, &mut |current| {
            let mut version = apply_compaction(current, c, outputs.clone());
            version.change_range_dels(&[], &dropped);
            if let Err(detail) = version.check() {
                return Err(Error::corruption(
                    "(version)",
                    0,
                    format!(
                        "table {:?}: compaction broke an invariant: {detail}",
                        table.name
                    ),
                ));
            }
            Ok(version)
        })
    })();
    host.release(&numbers);
    result?;
    host.count(counts);
    let (from_output, from_above) = c.input_bytes();
    let mut table_counters = table.counters.lock();
    if let Some(l) = table_counters.levels.get_mut(output_level) {
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
