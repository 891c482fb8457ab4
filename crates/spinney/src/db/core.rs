//! `Core`: a table of either kind, as the catalog holds it. What every
//! table has (id, name, options, its dropped flag, its catalog record) and
//! the operations whose work differs by kind (point reads, making room for
//! a commit, the log it still needs, flush, manual compaction, shape,
//! statistics, verify, the whole-state record) are methods here, so that
//! the rest of `db/` branches on the kind in one place. (Still elsewhere:
//! applying a group and what follows its publication in `write.rs`, the
//! jobs in `work.rs`, recovery in `open.rs`.)
//!
//! Thread-safety: a `Core` is two `Arc`s' worth of handle; the tables
//! behind it are `Send + Sync` and guard their own state.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::snapshot::Snapshot;
use super::stats::{self, Shape, TableStats};
use super::{work, DbInner};
use crate::btree::{BtreeTable, Lookup};
use crate::error::Result;
use crate::lsm::table::LsmTable;
use crate::manifest::{TableRecord, VersionEdit};
use crate::options::TableOptions;

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

    /// The LSM table, if this is one.
    pub(crate) fn lsm(&self) -> Option<&Arc<LsmTable>> {
        match self {
            Core::Lsm(t) => Some(t),
            Core::Btree(_) => None,
        }
    }

    /// The B-tree table, if this is one.
    pub(crate) fn btree(&self) -> Option<&Arc<BtreeTable>> {
        match self {
            Core::Btree(t) => Some(t),
            Core::Lsm(_) => None,
        }
    }

    /// The catalog's record of the table.
    pub(crate) fn record(&self) -> TableRecord {
        TableRecord {
            id: self.id(),
            name: self.name().to_string(),
            options: self.options().clone(),
        }
    }

    /// Adds the table to a whole-state manifest record: its catalog record
    /// and its durable state (an LSM table's flushed seqno and files; a
    /// B-tree's checkpoint generation, its state being in its own file).
    pub(crate) fn add_to_whole_state(&self, edit: &mut VersionEdit) {
        edit.created.push(self.record());
        match self {
            Core::Lsm(t) => {
                edit.flushed
                    .push((t.id, t.persisted_seqno.load(Ordering::Acquire)));
                for (level, files) in t.super_version().version.levels.iter().enumerate() {
                    for f in files {
                        edit.added.push((t.id, level as u32, f.record.clone()));
                    }
                }
            }
            Core::Btree(t) => edit
                .checkpointed
                .push((t.id, t.durable_generation.load(Ordering::Acquire))),
        }
    }

    /// The value of `key` at `snapshot`'s seqno (`seqno` is it, checked),
    /// or at the visible seqno.
    pub(crate) fn get(
        &self,
        db: &Arc<DbInner>,
        key: &[u8],
        snapshot: Option<(&Snapshot, u64)>,
    ) -> Result<Option<Vec<u8>>> {
        let seqno = snapshot.map(|(_, seqno)| seqno);
        match self {
            Core::Lsm(t) => t.get(key, seqno, &db.visible_seqno),
            Core::Btree(t) => match t.get(key, seqno, &db.visible_seqno)? {
                Lookup::Value(v) => Ok(Some(v)),
                Lookup::Absent => Ok(None),
                Lookup::Continue(at) => {
                    // The key's versions span two leaves: read on under a
                    // registered snapshot, so that none is pruned meanwhile.
                    let (pin, at) = match snapshot {
                        Some((s, _)) => (s.clone(), at),
                        None => {
                            let pin = Snapshot::new(db);
                            let seqno = pin.seqno;
                            (pin, seqno)
                        }
                    };
                    let value = t.get_across_leaves(key, at);
                    drop(pin);
                    value
                }
            },
        }
    }

    /// Flushes the memtables (LSM) or checkpoints the table (B-tree), and
    /// waits for it.
    pub(crate) fn flush(&self, db: &Arc<DbInner>) -> Result<()> {
        match self {
            Core::Lsm(t) => work::flush_table_now(db, t),
            Core::Btree(t) => work::checkpoint_table(db, t).map(|_| ()),
        }
    }

    /// Runs a manual compaction and waits for it; a B-tree has no levels,
    /// so nothing is done.
    pub(crate) fn compact(&self, db: &DbInner, manual: work::Manual) -> Result<()> {
        match self {
            Core::Lsm(t) => work::compact_manual(db, t, manual),
            Core::Btree(_) => Ok(()),
        }
    }

    /// The table's shape now (a B-tree's reads every page).
    pub(crate) fn shape(&self) -> Result<Shape> {
        match self {
            Core::Lsm(t) => Ok(stats::shape(t)),
            Core::Btree(t) => Ok(Shape {
                btree: Some(t.shape()?),
                ..Shape::default()
            }),
        }
    }

    /// The table's figures for `Db::stats`.
    pub(crate) fn stats(&self) -> TableStats {
        match self {
            Core::Lsm(t) => stats::table_stats(t),
            Core::Btree(t) => stats::btree_stats(t),
        }
    }

    /// Gets the table ready for a commit group that writes to it: an LSM
    /// table makes room in its memtable (freezing a full one, and waiting
    /// under backpressure: `write::make_room`); a B-tree table checks that
    /// no earlier failure stopped it (which poisons the database).
    pub(crate) fn make_room(&self, db: &Arc<DbInner>) -> Result<()> {
        match self {
            Core::Lsm(t) => super::write::make_room(db, t),
            Core::Btree(t) => t.check_failed().inspect_err(|e| {
                db.poison(format!("table {:?}: {e}", t.name));
            }),
        }
    }

    /// The oldest seqno of the log the table still needs: every entry below
    /// it is in the table's files. `visible` is the visible seqno, read
    /// before: every entry up to it is in a memtable or the tree. A B-tree
    /// table also learns that its pages hold everything up to `visible`
    /// (`mark_clean_upto`).
    pub(crate) fn log_needed_from(&self, visible: u64) -> u64 {
        match self {
            Core::Lsm(t) => t
                .super_version()
                .oldest_unflushed_seqno()
                .unwrap_or(visible + 1),
            Core::Btree(t) => {
                t.mark_clean_upto(visible);
                t.persisted_seqno.load(Ordering::Acquire) + 1
            }
        }
    }

    /// Reads every file of the table and checks it; the entries checked.
    pub(crate) fn verify(&self, db: &DbInner) -> Result<u64> {
        match self {
            Core::Lsm(t) => work::verify_lsm(db, t),
            Core::Btree(t) => crate::btree::verify::verify(t),
        }
    }
}
