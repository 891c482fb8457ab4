//! The B-tree tables' side of the work model: their checkpoints (due by
//! log bytes, overdue ones run by writers, `Db::checkpoint`), the vacuum
//! that gives a table's space back (`compact_all`, and the idle vacuum of
//! `Options::vacuum_after_idle`), and dropping a table. The scheduler
//! (`work.rs`) picks and runs these as jobs.
//!
//! Thread-safety: a checkpoint or a vacuum step holds the table's writer
//! and, while it freezes or moves pages, the commit lock; claims
//! (`checkpointing`, `vacuuming`) and the idleness (`BgState::idle`) are
//! under the `bg` lock.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use super::{log, BgState, DbInner};
use crate::btree::BtreeTable;
use crate::error::Result;
use crate::manifest::VersionEdit;
use crate::read_context;

/// A table whose file is smaller than this many pages is not vacuumed by
/// itself.
const VACUUM_FILE_PAGES_MIN: u64 = 64;

/// The idle vacuum packs a table whose live bytes are less than this
/// share (in percent) of its file's bytes (`BtreeTable::estimate_use`):
/// free pages, or leaves that deletes emptied. A tree of random inserts
/// holds about 70-80% (its leaves' fill) and is left alone; after an
/// overwrite and its checkpoint (two images) about 40%, after most keys
/// are deleted less.
const VACUUM_USED_PERCENT_MAX: u64 = 60;

/// And only if the tree's live bytes are less than this share (in
/// percent) of its pages' bytes (leaves deletes emptied: packing them
/// gives pages back for good), or the file is more than
/// `VACUUM_FILE_TREES_MAX_TENTHS` tenths of the tree. A tree whose leaves are full
/// and whose free pages are the durable image a rewrite left (about one
/// tree's worth: copy-on-write checkpoints keep two images of a tree that
/// changed everywhere) is left alone: the next rewrite takes those pages
/// again, and giving them back would cost a rewrite of the tree at every
/// idle time (80,000 keys overwritten: 5,612 pages written for a tree of
/// 2,083, before 2026-11-29).
const VACUUM_TREE_USED_PERCENT_MAX: u64 = 50;

/// See `VACUUM_TREE_USED_PERCENT_MAX`: a file of more than this many
/// trees (in tenths) holds free pages beyond the second image.
const VACUUM_FILE_TREES_MAX_TENTHS: u64 = 25;

/// How long the database has been idle: no write (its log has not grown)
/// and no read (its cache has counted no lookup), from what the scheduler
/// saw at its last looks. Under the `bg` lock.
pub(crate) fn idle_for(db: &DbInner, bg: &mut BgState) -> std::time::Duration {
    let cache = db.cache.stats();
    let activity = (
        db.counters.wal_bytes.load(Ordering::Relaxed),
        cache.hits + cache.misses,
    );
    let now = std::time::Instant::now();
    match bg.idle {
        Some((seen, since)) if seen == activity => now.saturating_duration_since(since),
        _ => {
            bg.idle = Some((activity, now));
            std::time::Duration::ZERO
        }
    }
}

/// Whether `t` may be looked at by the idle vacuum: the database was
/// written since its last look, and its file is large enough to bother.
pub(crate) fn vacuum_due(db: &DbInner, t: &BtreeTable) -> bool {
    let (_, file_pages, _, _) = t.quick_shape();
    !t.dropped.load(Ordering::Acquire)
        && t.vacuumed_at_wal.load(Ordering::Acquire)
            != db.counters.wal_bytes.load(Ordering::Relaxed)
        && file_pages >= VACUUM_FILE_PAGES_MIN
}

/// The idle vacuum of `t`: `vacuum_btree` if the tree holds less than
/// `VACUUM_USED_PERCENT_MAX` of its file, and its leaves are sparse or
/// its free pages more than a second image. Returns the bytes it wrote.
pub(crate) fn vacuum_if_sparse(db: &DbInner, t: &BtreeTable) -> Result<u64> {
    let u = t.estimate_use()?;
    let sparse = u.live * 100 < u.tree * VACUUM_TREE_USED_PERCENT_MAX;
    let surplus = u.file * 10 > u.tree * VACUUM_FILE_TREES_MAX_TENTHS;
    if u.live * 100 >= u.file * VACUUM_USED_PERCENT_MAX || !(sparse || surplus) {
        return Ok(0);
    }
    let written = || t.store.file.counters.bytes_written.load(Ordering::Relaxed);
    let before = written();
    vacuum_btree(db, t)?;
    t.counters.idle_vacuums.fetch_add(1, Ordering::Relaxed);
    Ok(written().saturating_sub(before))
}

/// Whether a B-tree table is due for a background checkpoint: it changed,
/// and `checkpoint_wal_bytes` of log were written since its last one.
pub(crate) fn checkpoint_due(db: &DbInner, t: &BtreeTable) -> bool {
    checkpoint_behind(db, t, db.options.checkpoint_wal_bytes)
}

/// Whether a B-tree table changed and `bytes` of log were written since
/// its last checkpoint froze.
pub(crate) fn checkpoint_behind(db: &DbInner, t: &BtreeTable, bytes: u64) -> bool {
    let wal = db.counters.wal_bytes.load(Ordering::Relaxed);
    !t.dropped.load(Ordering::Acquire)
        && t.has_changes()
        && wal.saturating_sub(t.wal_bytes_at_checkpoint.load(Ordering::Acquire)) >= bytes
}

/// Whether a B-tree table's checkpoint is so far behind (four times
/// `checkpoint_wal_bytes` of log) that writers to it do it themselves.
fn checkpoint_overdue(db: &DbInner, t: &BtreeTable) -> bool {
    checkpoint_behind(db, t, db.options.checkpoint_wal_bytes.saturating_mul(4))
}

/// Checkpoints a B-tree table in this thread (see `BtreeTable::checkpoint`);
/// returns the bytes written. Writers are held back by the commit lock only
/// while the checkpoint freezes the tree.
pub(crate) fn run_checkpoint(db: &DbInner, t: &BtreeTable) -> Result<u64> {
    let pages = t.checkpoint(
        || {
            let guard = db.commit.lock();
            (
                guard,
                db.last_seqno.load(Ordering::Acquire),
                db.counters.wal_bytes.load(Ordering::Relaxed),
            )
        },
        |seqno| log::sync_to(db, seqno),
        |generation| {
            let edit = VersionEdit {
                checkpointed: vec![(t.id, generation)],
                ..VersionEdit::default()
            };
            db.vs.lock().log(db, &edit)
        },
    )?;
    log::delete_obsolete(db);
    Ok(pages * t.store.file.page_size as u64)
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

/// `compact_all` of a B-tree table, after its checkpoint (see
/// `btree::vacuum`): prunes and packs every leaf, and checkpoints, so that
/// the pages the leaves left are free. Then moves the pages at the end of
/// the file to free pages before them, and checkpoints twice: the first
/// makes the moves durable; the second finds the pages they left free and
/// cuts the file before them. A move copies the pages above a moved page
/// too, which may land past the cut: the rounds of moves repeat (three at
/// most) while the file shrinks. The packing and the moves are done in
/// slices, each under the commit lock, which writers get between slices.
/// A failure poisons the database.
pub(crate) fn vacuum_btree(db: &DbInner, t: &BtreeTable) -> Result<()> {
    vacuum_btree_between(db, t, &|| ())
}

/// `vacuum_btree`, calling `between` before each slice takes the commit
/// lock (tests write there).
pub(crate) fn vacuum_btree_between(db: &DbInner, t: &BtreeTable, between: &dyn Fn()) -> Result<()> {
    let enter = || {
        between();
        let held = FairUnlock(Some(db.commit.lock()));
        db.check_writable()?;
        Ok((held, db.horizon()))
    };
    // A slice that failed poisons the database; a slice that found it
    // closed or refusing writes (`enter`) leaves it as it is.
    let poison = |what: &'static str| {
        move |e: &crate::Error| {
            if db.check_writable().is_ok() {
                db.poison(format!("{what} of table {:?} failed: {e}", t.name));
            }
        }
    };
    if t.pack_leaves(&enter)
        .inspect_err(poison("packing the leaves"))?
        > 0
    {
        checkpoint_table(db, t)?;
    }
    let mut pages = t.quick_shape().1;
    for _ in 0..3 {
        let moved = t.vacuum(&enter).inspect_err(poison("moving the pages"))?;
        if moved > 0 {
            checkpoint_table(db, t)?;
        }
        checkpoint_table(db, t)?;
        let now = t.quick_shape().1;
        if moved == 0 || now >= pages {
            break;
        }
        pages = now;
    }
    Ok(())
}

/// The commit lock held by a slice of a vacuum, handed on fairly when the
/// slice ends: to a writer that waits, if one does, rather than to the
/// vacuum's next slice.
struct FairUnlock<'a>(Option<parking_lot::MutexGuard<'a, ()>>);

impl Drop for FairUnlock<'_> {
    fn drop(&mut self) {
        if let Some(held) = self.0.take() {
            parking_lot::MutexGuard::unlock_fair(held);
        }
    }
}

/// Checkpoints `t` in the caller's thread if its checkpoint is overdue
/// (`checkpoint_overdue`), counted as a stop.
pub(crate) fn checkpoint_if_overdue(db: &Arc<DbInner>, t: &Arc<BtreeTable>) -> Result<()> {
    if checkpoint_overdue(db, t) {
        let start = Instant::now();
        checkpoint_table(db, t)?;
        db.count_stop(start);
    }
    Ok(())
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
    db.cache.erase_owner(t.store.file.owner);
    // A file left by a failed removal is an orphan the next open removes.
    let _ = db.fs.remove(&t.path);
    Ok(())
}
