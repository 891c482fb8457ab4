//! The write-ahead log's segments and their life, in one place: the open
//! segment that commit groups append to, the closed ones (each synced when
//! it was closed, so that only the newest segment can ever have a torn
//! tail), rolling to a new segment, syncing up to a seqno, syncing at
//! close, and letting go of the segments whose every entry the tables have
//! persisted. Recovery reads the segments in `open.rs`; the record format
//! is `wal/`.
//!
//! Thread-safety: `Wal` lives under the database's `wal` lock; every
//! function here takes it or is handed it locked. Lock order: `wal` comes
//! after `vs` and before a table's super-version lock (see `db/mod.rs`).

use std::path::Path;
use std::sync::atomic::Ordering;

use super::{Core, DbInner};
use crate::error::{Error, Result};
use crate::file_names::wal_name;
use crate::fs::Fs;
use crate::manifest::{LogStart, VersionEdit, FORMAT_UNNUMBERED};
use crate::options::Options;
use crate::wal::batch::encode_sync_mark;
use crate::wal::segment;
use crate::wal::writer::LogWriter;

/// A closed WAL segment: the seqno its records follow and the last seqno
/// written to it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Segment {
    pub number: u64,
    pub after_seqno: u64,
    pub last_seqno: u64,
}

/// When the sync mark a sync appends is made durable (`Wal::sync_all`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MarkSync {
    /// By a second sync, before `sync_all` returns.
    Now,
    /// By the log's next sync.
    Next,
}

/// The log: the open segment and the closed ones.
pub(crate) struct Wal {
    /// The open segment's writer; None when the database was opened
    /// read-only (no segment is open).
    pub writer: Option<LogWriter>,
    pub number: u64,
    /// The seqno the open segment's records follow.
    pub after_seqno: u64,
    /// Closed segments (synced when closed), oldest first; the open one is `number`.
    pub closed: Vec<Segment>,
    pub last_seqno: u64,
    /// Every record up to this seqno has been synced.
    pub synced_seqno: u64,
    /// The seqno the open segment's last sync mark names (see
    /// `encode_sync_mark`): a sync that passes it appends a new mark.
    pub marked_seqno: u64,
}

impl Wal {
    /// Where recovery must start reading: the oldest closed segment, or the
    /// open one. (A segment leaves `closed` before it is deleted, only once
    /// every table has persisted its entries.)
    pub(crate) fn oldest_needed(&self) -> LogStart {
        let (segment, after_seqno) = self
            .closed
            .first()
            .map_or((self.number, self.after_seqno), |s| {
                (s.number, s.after_seqno)
            });
        LogStart {
            segment,
            after_seqno: Some(after_seqno),
        }
    }

    /// The open segment's writer, or why there is none.
    pub(crate) fn writer(&mut self) -> Result<&mut LogWriter> {
        self.writer.as_mut().ok_or_else(|| Error::ReadOnly {
            reason: super::READ_ONLY_OPEN.to_string(),
        })
    }

    /// Bytes of the open segment (0 when none is open).
    pub(crate) fn len(&self) -> u64 {
        self.writer.as_ref().map_or(0, LogWriter::len)
    }

    /// Syncs the open segment: every record appended is durable. A sync
    /// mark naming them follows; it claims only what this sync made
    /// durable, so a power loss before the mark is durable leaves a log
    /// that opens as the sync left it. With `MarkSync::Now` a second sync
    /// makes the mark durable before this returns, so that damage to any
    /// record this sync covered is `Corruption` at open; with
    /// `MarkSync::Next` the mark becomes durable with the log's next sync
    /// (in a `Full` database, the next commit's), and until then damage to
    /// those records after a power loss reads as a torn tail
    /// (docs/durability.md).
    pub(crate) fn sync_all(&mut self, mark_sync: MarkSync) -> Result<()> {
        let last = self.last_seqno;
        self.writer()?.sync()?;
        self.synced_seqno = last;
        if self.mark_synced()? && mark_sync == MarkSync::Now {
            self.writer()?.sync()?;
        }
        Ok(())
    }

    /// Appends a sync mark if a sync since the last mark made more records
    /// durable; says whether it did.
    fn mark_synced(&mut self) -> Result<bool> {
        if self.synced_seqno > self.marked_seqno {
            let mark = encode_sync_mark(self.synced_seqno);
            self.writer()?.add_record(&mark)?;
            self.marked_seqno = self.synced_seqno;
            return Ok(true);
        }
        Ok(false)
    }

    /// Closes the log at database close: synced, with a sync mark naming
    /// its last record (so that damage anywhere in it reads as corruption,
    /// never as an unsynced tail), then synced again and cut to its records.
    pub(crate) fn close(&mut self) -> Result<()> {
        // `finish` syncs again, with the mark.
        self.sync_all(MarkSync::Next)?;
        self.finish()
    }

    /// Syncs the open segment, which takes no more records, cut to its
    /// records (`WritableFile::finish`): at a roll and at close.
    pub(crate) fn finish(&mut self) -> Result<()> {
        let last = self.last_seqno;
        self.writer()?.finish()?;
        self.synced_seqno = last;
        Ok(())
    }
}

/// Creates the log segment at `path` for a database of `format`: one of
/// format 2 or later begins with its header (`wal::segment`), written with
/// the segment's first record, so that a segment nothing was appended to
/// holds no record (a mapped one only its reservation's zeros), as a
/// segment of format 1 does.
pub(crate) fn create_segment(
    fs: &dyn Fs,
    path: &Path,
    options: &Options,
    format: u32,
) -> Result<LogWriter> {
    let file = fs.create_log(path, options.wal_segment_size, options.log_writes)?;
    Ok(match format > FORMAT_UNNUMBERED {
        true => LogWriter::with_header(file, &segment::encode_header(segment::LOG_VERSION)),
        false => LogWriter::new(file),
    })
}

/// Closes the current segment (cut to its records and synced, so that only
/// the newest segment can ever have a torn tail) and starts the next.
pub(crate) fn roll_segment(db: &DbInner, wal: &mut Wal) -> Result<()> {
    wal.finish()?;
    let number = db.next_file_number.fetch_add(1, Ordering::AcqRel);
    let writer = create_segment(&*db.fs, &db.path(&wal_name(number)), &db.options, db.format)?;
    db.fs.sync_dir(&db.dir)?;
    let old = wal.writer.replace(writer);
    drop(old);
    wal.closed.push(Segment {
        number: wal.number,
        after_seqno: wal.after_seqno,
        last_seqno: wal.last_seqno,
    });
    wal.number = number;
    wal.after_seqno = wal.last_seqno;
    // Every record before the new segment is synced: nothing to mark.
    wal.marked_seqno = wal.synced_seqno;
    Ok(())
}

/// Makes the log durable up to `seqno`.
pub(crate) fn sync_to(db: &DbInner, seqno: u64) -> Result<()> {
    let mut wal = db.wal.lock();
    if wal.synced_seqno >= seqno {
        return Ok(());
    }
    // Syncs for flushes and checkpoints are off the commit path, and may
    // be the last for long: their marks are made durable at once.
    if let Err(e) = wal.sync_all(MarkSync::Now) {
        drop(wal);
        db.poison(format!("syncing the write-ahead log failed: {e}"));
        return Err(e);
    }
    db.counters.wal_syncs.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

/// Deletes log segments whose every entry is persisted in SSTs.
pub(crate) fn delete_obsolete(db: &DbInner) {
    if db.poisoned.load(Ordering::Acquire) {
        return;
    }
    // Read the visible seqno first: every entry up to it is in some memtable
    // (or already flushed), so the memtables' first seqnos below bound it.
    let visible = db.visible_seqno.load(Ordering::Acquire);
    let _removal = db.wal_removal.lock();
    let tables: Vec<Core> = db.vs.lock().tables.values().cloned().collect();
    let keep_from = tables
        .iter()
        .map(|t| t.log_needed_from(visible))
        .fold(visible + 1, u64::min);
    // The obsolete segments leave the closed list, and the log then starts
    // at the oldest segment left (or the open one).
    let (obsolete, start): (Vec<Segment>, LogStart) = {
        let mut wal = db.wal.lock();
        let n = wal
            .closed
            .iter()
            .take_while(|s| s.last_seqno < keep_from)
            .count();
        let obsolete = wal.closed.drain(..n).collect();
        (obsolete, wal.oldest_needed())
    };
    if obsolete.is_empty() {
        return;
    }
    // Segments not removed go back to the head of the closed list, to be
    // tried again before any newer one.
    let put_back = |rest: &[Segment]| {
        db.wal.lock().closed.splice(0..0, rest.iter().copied());
    };
    // The manifest learns where the log now starts before any segment goes,
    // so that an open can tell the first segment lost from one let go.
    let edit = VersionEdit {
        log_start: Some(start),
        ..VersionEdit::default()
    };
    if db.vs.lock().log(db, &edit).is_err() {
        put_back(&obsolete);
        return;
    }
    // Oldest first, each removal made durable before the next. A removal
    // that fails puts its segment and the newer ones back: what is left of the log never has a hole, so that
    // recovery can tell a segment lost from one let go (it checks that the
    // records' seqnos run on). A segment already gone counts as removed.
    for (i, segment) in obsolete.iter().enumerate() {
        let removed = match db.fs.remove(&db.path(&wal_name(segment.number))) {
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                Ok(())
            }
            other => other,
        }
        .and_then(|()| db.fs.sync_dir(&db.dir));
        if removed.is_err() {
            put_back(obsolete.get(i..).unwrap_or_default());
            break;
        }
    }
}
