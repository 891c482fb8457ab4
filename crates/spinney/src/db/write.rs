//! Group commit: the write path from `WriteBatch` to log and memtables.
//!
//! Writers queue up; the writer at the head of the queue becomes the leader.
//! The leader takes the batches queued behind it (up to a size limit),
//! assigns their seqnos, appends each as one log record, syncs once if any of
//! them asked for `Full` durability, applies them to the memtables, and only
//! then makes their seqnos visible to readers, so no reader sees part of a
//! batch. It then hands each follower its result and wakes the next leader.
//!
//! A failed log append or sync poisons the database (read-only, with the
//! reason) because what reached the disk is then unknown.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};
use smallvec::SmallVec;

use super::batch::{KeyRange, WriteBatch};
use super::core::Applier;
use super::{log, work, Core, DbInner};
use crate::error::{Error, Result};
use crate::mvcc::key::Kind;
use crate::mvcc::range_del;
use crate::mvcc::Horizon;
use crate::options::{Durability, WriteOptions};
use crate::wal::batch::BatchEntry;

/// A group takes followers until it holds this many log bytes.
const GROUP_BYTES_MAX: usize = 1 << 20;

/// Writers (and the tables they write) a group holds without allocating
/// for its lists: most groups are one writer, into one or two tables.
const GROUP_INLINE: usize = 4;

/// A list of a commit group's: inline up to `GROUP_INLINE` items.
type GroupVec<T> = SmallVec<[T; GROUP_INLINE]>;

pub(crate) struct Writer {
    batch: Mutex<Option<WriteBatch>>,
    /// A transaction's conflict check, made by the leader before the batch
    /// is logged.
    check: Option<Check>,
    durability: Durability,
    bytes: usize,
    done: Mutex<Option<Result<()>>>,
    cv: Condvar,
}

/// What a transaction's commit checks before its batch is written: that no
/// commit after `seqno` (its snapshot) wrote any of `keys`.
pub(crate) struct Check {
    pub seqno: u64,
    /// Per table, the keys the transaction wrote or read for update.
    pub keys: Vec<(Core, Vec<Vec<u8>>)>,
    /// Per table, the ranges it deleted, `[start, end)` (an empty end: to
    /// the last key): a write of any key in one since is a conflict.
    pub ranges: Vec<(Core, Vec<KeyRange>)>,
}

impl Check {
    /// A conflict if a key was written after the snapshot: by a commit the
    /// tables hold (every group before this one is applied before the
    /// commit lock is let go, up to `last_seqno`), or by a batch ahead in
    /// this group (`written`). When nothing was committed since the
    /// snapshot, the tables are not read.
    fn verify(&self, written: &Written<'_>, last_seqno: u64) -> Result<()> {
        let committed_since = last_seqno > self.seqno;
        for (table, keys) in &self.keys {
            if table.is_dropped() {
                return Err(Error::NoSuchTable(table.name().to_string()));
            }
            for key in keys {
                let newer = written.holds(table.id(), key)
                    || (committed_since
                        && table.newest_seqno(key)?.is_some_and(|s| s > self.seqno));
                if newer {
                    return Err(Error::Conflict {
                        table: table.name().to_string(),
                        key: key.clone(),
                    });
                }
            }
        }
        for (table, ranges) in &self.ranges {
            for (start, end) in ranges {
                let newer = written.overlaps(table.id(), start, end)
                    || (committed_since && table.written_in_range(start, end, self.seqno)?);
                if newer {
                    return Err(Error::Conflict {
                        table: table.name().to_string(),
                        key: start.clone(),
                    });
                }
            }
        }
        Ok(())
    }
}

/// The writes of the batches ahead in a commit group, for the checks of
/// the transactions after them: keys, and the ranges of range deletes.
#[derive(Default)]
struct Written<'a> {
    keys: HashSet<(u32, &'a [u8])>,
    ranges: Vec<(u32, &'a [u8], &'a [u8])>,
}

impl<'a> Written<'a> {
    fn add(&mut self, entry: BatchEntry<'a>) {
        // (A range's end is its entry's value.)
        if entry.kind == Kind::RangeDelete {
            self.ranges.push((entry.table_id, entry.key, entry.value));
        } else {
            self.keys.insert((entry.table_id, entry.key));
        }
    }

    fn holds(&self, table: u32, key: &[u8]) -> bool {
        self.keys.contains(&(table, key))
            || self
                .ranges
                .iter()
                .any(|&(t, start, end)| t == table && range_del::contains(start, end, key))
    }

    /// Whether a write ahead touched a key of `table` in `[start, end)`.
    fn overlaps(&self, table: u32, start: &[u8], end: &[u8]) -> bool {
        self.keys
            .iter()
            .any(|&(t, k)| t == table && range_del::contains(start, end, k))
            || self
                .ranges
                .iter()
                .any(|&(t, s, e)| t == table && range_del::meet(start, end, s, e))
    }
}

pub(crate) fn write(db: &Arc<DbInner>, batch: WriteBatch, options: WriteOptions) -> Result<()> {
    write_checked(db, batch, options, None)
}

/// `write`, with a transaction's conflict check made when the batch's turn
/// to commit comes.
pub(crate) fn write_checked(
    db: &Arc<DbInner>,
    batch: WriteBatch,
    options: WriteOptions,
    check: Option<Check>,
) -> Result<()> {
    db.check_writable()?;
    if let Some(e) = &batch.invalid {
        return Err(e.duplicate());
    }
    if batch.is_empty() {
        return Ok(());
    }
    if batch.db_id.is_some_and(|id| id != db.id) {
        return Err(Error::invalid("the batch holds tables of another database"));
    }
    for t in &batch.tables {
        t.before_commit(db)?;
    }
    let writer = Arc::new(Writer {
        bytes: batch.encoded_len(),
        batch: Mutex::new(Some(batch)),
        check,
        durability: options.durability.unwrap_or(db.options.durability),
        done: Mutex::new(None),
        cv: Condvar::new(),
    });

    let mut queue = db.writers.lock();
    db.check_open()?;
    queue.push_back(Arc::clone(&writer));
    loop {
        if let Some(result) = writer.done.lock().take() {
            return result;
        }
        if queue.front().is_some_and(|w| Arc::ptr_eq(w, &writer)) {
            break;
        }
        writer.cv.wait(&mut queue);
    }

    // This writer leads: take a group from the front of the queue.
    let mut group: GroupVec<Arc<Writer>> = SmallVec::new();
    let mut bytes = 0;
    for w in queue.iter() {
        if !group.is_empty() && bytes + w.bytes > GROUP_BYTES_MAX {
            break;
        }
        bytes += w.bytes;
        group.push(Arc::clone(w));
    }
    drop(queue);

    let (results, tables) = {
        let _commit = db.commit.lock();
        commit_group(db, &group)
    };

    let mut queue = db.writers.lock();
    let mut own = Ok(());
    for (w, result) in group.iter().zip(results) {
        queue.pop_front();
        if Arc::ptr_eq(w, &writer) {
            own = result;
        } else {
            *w.done.lock() = Some(result);
            w.cv.notify_one();
        }
    }
    if let Some(next) = queue.front() {
        next.cv.notify_one();
    }
    drop(queue);
    if own.is_ok() && db.options.background_threads == 0 && db.options.autowork {
        // Autowork: this commit is durable as promised; a failure of the
        // work poisons the database and reaches the next writer.
        let _ = work::autowork(db, &tables);
    }
    own
}

/// Commits `group`; returns one result per writer, and the tables written.
fn commit_group(db: &Arc<DbInner>, group: &[Arc<Writer>]) -> (Vec<Result<()>>, GroupVec<Core>) {
    let mut batches: Vec<Option<WriteBatch>> =
        group.iter().map(|w| w.batch.lock().take()).collect();
    let mut results: Vec<Result<()>> = Vec::with_capacity(group.len());
    for b in &batches {
        let dropped = b
            .as_ref()
            .and_then(|b| b.tables.iter().find(|t| t.is_dropped()));
        results.push(match dropped {
            Some(t) => Err(Error::NoSuchTable(t.name().to_string())),
            None => Ok(()),
        });
    }
    let fail_all = |results: &mut Vec<Result<()>>, e: &Error| {
        for r in results.iter_mut().filter(|r| r.is_ok()) {
            *r = Err(e.duplicate());
        }
    };
    if let Err(e) = db.check_writable() {
        fail_all(&mut results, &e);
        return (results, SmallVec::new());
    }

    // Make room in every table the group writes to, B-tree tables first
    // (a failed one poisons the database before any writer waits for room).
    let mut cores: GroupVec<&Core> = SmallVec::new();
    for (b, r) in batches.iter().zip(&results) {
        if let (Some(b), Ok(())) = (b, r) {
            for t in &b.tables {
                if !cores.iter().any(|x| x.id() == t.id()) {
                    cores.push(t);
                }
            }
        }
    }
    cores.sort_by_key(|t| t.lsm().is_some());
    let tables: GroupVec<Core> = cores.iter().map(|&t| t.clone()).collect();
    for t in &cores {
        if let Err(e) = t.make_room(db) {
            fail_all(&mut results, &e);
            return (results, tables);
        }
    }
    // It borrows the batches, which the log's encoding changes below.
    drop(cores);

    check_conflicts(db, &batches, group, &mut results);

    // Assign seqnos and append to the log.
    let durability = group
        .iter()
        .zip(&results)
        .filter(|(_, r)| r.is_ok())
        .map(|(w, _)| w.durability)
        .max_by_key(|d| match d {
            Durability::Off => 0,
            Durability::Normal => 1,
            Durability::Full => 2,
        })
        .unwrap_or(Durability::Off);
    let mut seqno = db.last_seqno.load(Ordering::Acquire);
    let first_seqno = seqno + 1;
    {
        let mut wal = db.wal.lock();
        let mut appended = Ok(());
        for (b, r) in batches.iter_mut().zip(&results) {
            let (Some(b), Ok(())) = (b, r) else { continue };
            let record = b.rep.encode(seqno + 1);
            db.counters
                .wal_bytes
                .fetch_add(record.len() as u64, Ordering::Relaxed);
            appended = wal.writer().and_then(|w| w.add_record(record));
            if appended.is_err() {
                break;
            }
            seqno += u64::from(b.rep.count());
        }
        let outcome = appended.and_then(|()| {
            wal.last_seqno = seqno;
            match durability {
                Durability::Full => {
                    // In a `Full` database the next commit's sync makes
                    // this sync's mark durable: one sync per commit group.
                    // A `Full` commit in a weaker database may be the last
                    // sync for long, so its mark is synced before it
                    // returns (docs/durability.md says what each leaves).
                    let mark_sync = if db.options.durability == Durability::Full {
                        log::MarkSync::Next
                    } else {
                        log::MarkSync::Now
                    };
                    wal.sync_all(mark_sync)?;
                    db.counters.wal_syncs.fetch_add(1, Ordering::Relaxed);
                }
                Durability::Normal => {
                    wal.writer()?.flush()?;
                }
                Durability::Off => {}
            }
            if wal.len() >= db.options.wal_segment_size {
                log::roll_segment(db, &mut wal)?;
            }
            Ok(())
        });
        if let Err(e) = outcome {
            drop(wal);
            db.poison(format!("appending to the write-ahead log failed: {e}"));
            fail_all(&mut results, &e);
            return (results, tables);
        }
    }

    // Apply to the tables, then publish. Room was made above, so no
    // memtable is frozen while the group is applied.
    let mut appliers: GroupVec<(u32, Applier)> =
        tables.iter().map(|t| (t.id(), t.applier(false))).collect();
    let horizon = if appliers.iter().any(|(_, a)| a.needs_horizon()) {
        db.horizon()
    } else {
        Horizon::default()
    };
    let mut s = first_seqno;
    let mut applied = Ok(());
    'batches: for (b, r) in batches.iter().zip(&results) {
        let (Some(b), Ok(())) = (b, r) else { continue };
        for entry in b.rep.entries() {
            // The batch was encoded by this process; decoding it cannot fail.
            let Ok(entry) = entry else { break };
            if let Some((_, a)) = appliers.iter_mut().find(|(id, _)| *id == entry.table_id) {
                applied = a.apply(s, entry.kind, entry.key, entry.value, &horizon);
                if applied.is_err() {
                    break 'batches;
                }
            }
            s += 1;
        }
    }
    if let Err(e) = applied {
        drop(appliers);
        // The log holds the group; the tables may hold part of it. Reads
        // never see it (it is not published), and the next open replays it.
        db.poison(format!("applying a batch to a B-tree table failed: {e}"));
        fail_all(&mut results, &e);
        return (results, tables);
    }
    debug_assert_eq!(s, seqno + 1);
    db.last_seqno.store(seqno, Ordering::Release);
    db.visible_seqno.store(seqno, Ordering::Release);
    // Pack the leaves the group split to hold versions that publishing it
    // has hidden (a leaf rewritten whole in one group), with the tree locks
    // taken to apply it.
    if appliers.iter().any(|(_, a)| a.needs_tidy()) {
        // This leader published `seqno` and holds the commit lock: the
        // horizon's visible seqno is `seqno`.
        let horizon = db.horizon();
        for (_, a) in &mut appliers {
            if let Err(e) = a.tidy(&horizon) {
                // The group is published and in the log; the table is
                // marked failed, so later writes are refused and reopening
                // replays the log over its durable image.
                db.poison_for(a.name(), &e);
            }
        }
    }
    // Wake the workers for a checkpoint that fell due (nothing else wakes
    // them in a database of B-tree tables only). A wake-up lost to a worker
    // about to wait is repeated by the next commit while the checkpoint
    // stays due.
    if db.options.background_threads > 0 && appliers.iter().any(|(_, a)| a.wakes_workers(db)) {
        db.bg_work.notify_all();
    }
    drop(appliers);
    db.counters.commit_groups.fetch_add(1, Ordering::Relaxed);
    db.counters.commits.fetch_add(
        results.iter().filter(|r| r.is_ok()).count() as u64,
        Ordering::Relaxed,
    );
    (results, tables)
}

/// Refuses each transaction of the group that a commit after its snapshot
/// wrote over: one the tables hold, or a batch ahead of it in this group.
/// A refused transaction's batch is not logged; the rest of the group goes
/// on.
fn check_conflicts(
    db: &DbInner,
    batches: &[Option<WriteBatch>],
    group: &[Arc<Writer>],
    results: &mut [Result<()>],
) {
    let last = group
        .iter()
        .zip(results.iter())
        .rposition(|(w, r)| w.check.is_some() && r.is_ok());
    let Some(last) = last else { return };
    // Every group before this one is applied: its seqnos are all in the
    // tables.
    let last_seqno = db.last_seqno.load(Ordering::Acquire);
    // The keys of the batches ahead, kept only while a check follows.
    let mut written = Written::default();
    for i in 0..=last {
        if results[i].is_err() {
            continue;
        }
        if let Some(check) = &group[i].check {
            if let Err(e) = check.verify(&written, last_seqno) {
                results[i] = Err(e);
                continue;
            }
        }
        if let (true, Some(b)) = (i < last, &batches[i]) {
            // The batch was encoded by this process; decoding it cannot fail.
            for entry in b.rep.entries().map_while(Result::ok) {
                written.add(entry);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry<'a>(kind: Kind, table_id: u32, key: &'a [u8], value: &'a [u8]) -> BatchEntry<'a> {
        BatchEntry {
            kind,
            table_id,
            key,
            value,
        }
    }

    #[test]
    fn the_writes_ahead_in_a_group_hold_keys_and_ranges() {
        let mut w = Written::default();
        w.add(entry(Kind::Put, 1, b"k", b"v"));
        w.add(entry(Kind::RangeDelete, 2, b"b", b"d"));
        w.add(entry(Kind::RangeDelete, 3, b"x", b""));
        assert!(w.holds(1, b"k"));
        assert!(!w.holds(1, b"j"));
        assert!(w.holds(2, b"b") && w.holds(2, b"c\xff"));
        assert!(!w.holds(2, b"d") && !w.holds(1, b"c"));
        assert!(w.holds(3, b"zzz") && !w.holds(3, b"w"));
        assert!(w.overlaps(1, b"a", b"l") && !w.overlaps(1, b"l", b""));
        assert!(w.overlaps(2, b"c", b"e") && w.overlaps(2, b"", b"") && !w.overlaps(2, b"d", b""));
        assert!(!w.overlaps(2, b"a", b"b"));
        assert!(w.overlaps(3, b"a", b"") && !w.overlaps(3, b"a", b"x"));
    }
}
