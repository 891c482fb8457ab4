//! `Core`: a table of either kind, as the catalog holds it. What every
//! table has (id, name, options, its dropped flag, its catalog record) and
//! the operations whose work differs by kind (creating and dropping it,
//! opening it at recovery and persisting what the log replayed into it
//! (the LSM's half in `lsm/recover.rs`), what a writer does before its
//! commit and what the leader does to make room for it,
//! applying entries and what follows publication (`Applier`), point reads,
//! the log it still needs, its files, whether work is due, flush, manual
//! compaction, shape, statistics, verify, the whole-state record) are
//! methods here, so that the rest of `db/` branches on the kind in one
//! place. The scheduler (`work.rs`) still knows the kinds of job (flush,
//! compaction, checkpoint): ranking them across tables is its policy.
//!
//! Thread-safety: a `Core` is two `Arc`s' worth of handle; the tables
//! behind it are `Send + Sync` and guard their own state.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use parking_lot::MutexGuard;

use super::open::TableState;
use super::snapshot::Snapshot;
use super::stats::{self, Shape, TableStats};
use super::{work, DbInner};
use crate::btree::iter::BtreeIter;
use crate::btree::{BtreeTable, Lookup, TreeState};
use crate::cache::Cache;
use crate::error::Result;
use crate::file_names::{btree_name, sst_name};
use crate::fs::Fs;
use crate::lsm::recover;
use crate::lsm::table::{LsmTable, Mem};
use crate::lsm::version::Version;
use crate::manifest::{TableRecord, VersionEdit};
use crate::mvcc::key::Kind;
use crate::mvcc::Horizon;
use crate::options::{TableKind, TableOptions};

/// A table of either kind.
#[derive(Clone)]
pub(crate) enum Core {
    Lsm(Arc<LsmTable>),
    Btree(Arc<BtreeTable>),
}

impl Core {
    /// Makes what a new table needs on disk before the manifest names it:
    /// a B-tree table's file, synced, and its directory entry (a crash
    /// before the manifest names it leaves an orphan that open removes).
    /// After a failure nothing names what was made, which goes now (or at
    /// the next open): the database is as it was. An LSM table needs
    /// nothing until its first flush.
    pub(super) fn create_files(
        db: &DbInner,
        id: u32,
        options: &TableOptions,
        flushed: u64,
    ) -> Result<()> {
        if options.kind == TableKind::Lsm {
            return Ok(());
        }
        BtreeTable::create_file(&*db.fs, &db.dir, id, options, flushed)
            .and_then(|()| db.fs.sync_dir(&db.dir))
            .inspect_err(|_| {
                let _ = db.fs.remove(&db.path(&btree_name(id)));
            })
    }

    /// A new table, once the manifest names it (its files made by
    /// `create_files`), whose entries are all newer than `flushed`.
    pub(super) fn create(
        db: &DbInner,
        id: u32,
        name: &str,
        options: TableOptions,
        flushed: u64,
    ) -> Result<Core> {
        if options.kind == TableKind::Lsm {
            let version = Version::empty();
            return Ok(Core::Lsm(Arc::new(LsmTable::new(
                id,
                name.to_string(),
                options,
                version,
                flushed,
            ))));
        }
        let owner = db.next_file_number.fetch_add(1, Ordering::AcqRel);
        let cache = Arc::clone(&db.cache);
        let t = BtreeTable::open(
            &*db.fs,
            &db.dir,
            id,
            name.to_string(),
            options,
            cache,
            owner,
            1,
            0,
            false,
        )?;
        // The log a new table needs starts now.
        let wal_bytes = db.counters.wal_bytes.load(Ordering::Relaxed);
        t.wal_bytes_at_checkpoint
            .store(wal_bytes, Ordering::Release);
        Ok(Core::Btree(Arc::new(t)))
    }

    /// Drops the table: the manifest records it, and its files go.
    pub(super) fn drop_table(&self, db: &DbInner) -> Result<()> {
        match self {
            Core::Lsm(t) => work::drop_lsm(db, t),
            Core::Btree(t) => work::drop_btree(db, t),
        }
    }

    /// What a writer does for the table before its commit joins the queue
    /// (the commit leader makes room for the whole group later: see
    /// `make_room`). A B-tree table whose checkpoint is far behind (the
    /// log it keeps is four times `checkpoint_wal_bytes`) is checkpointed
    /// by the writer, so the log stays bounded even when no thread has
    /// done it; counted as a stop.
    pub(super) fn before_commit(&self, db: &Arc<DbInner>) -> Result<()> {
        match self {
            Core::Lsm(_) => Ok(()),
            Core::Btree(t) => work::checkpoint_if_overdue(db, t),
        }
    }

    /// An LSM table's current version, for the file cleaner to track.
    pub(crate) fn live_version(&self) -> Option<Weak<Version>> {
        self.lsm()
            .map(|t| Arc::downgrade(&t.super_version().version))
    }

    /// Opens a table the manifest records, at recovery: an LSM table over
    /// its recorded files (`manifest` names the manifest, for a corruption
    /// report), a B-tree table at its file's newest valid checkpoint (one
    /// older than recorded is accepted only while the log from `log_start`
    /// covers the gap). `next_file_number` hands out the B-tree's cache
    /// owner number. With `read_only`, a B-tree table writes no page.
    #[expect(
        clippy::too_many_arguments,
        reason = "the table's catalog state, the database's shared parts and how it was opened; a struct would only rename them"
    )]
    pub(super) fn open_recovered(
        fs: &Arc<dyn Fs>,
        dir: &Path,
        cache: &Arc<Cache>,
        t: &TableState,
        next_file_number: &mut u64,
        log_start: u64,
        manifest: &Path,
        read_only: bool,
    ) -> Result<Core> {
        if t.record.options.kind == TableKind::Btree {
            let owner = *next_file_number;
            *next_file_number += 1;
            let table = BtreeTable::open(
                &**fs,
                dir,
                t.record.id,
                t.record.name.clone(),
                t.record.options.clone(),
                Arc::clone(cache),
                owner,
                t.checkpoint_generation,
                log_start,
                read_only,
            )?;
            return Ok(Core::Btree(Arc::new(table)));
        }
        let version = recover::recorded_version(
            fs,
            dir,
            cache,
            &t.levels,
            &t.range_dels,
            manifest,
            &t.record.name,
        )?;
        Ok(Core::Lsm(Arc::new(LsmTable::new(
            t.record.id,
            t.record.name.clone(),
            t.record.options.clone(),
            version,
            t.persisted_seqno,
        ))))
    }

    /// Makes durable what recovery replayed into the table, which then
    /// holds everything up to `last_seqno` in its files: an LSM table
    /// writes its memtables to L0 SSTs (numbered from `next_file_number`,
    /// synced; the caller syncs the directory), a B-tree table checkpoints.
    pub(crate) fn persist_recovered(
        &self,
        fs: &Arc<dyn Fs>,
        dir: &Path,
        cache: &Arc<Cache>,
        last_seqno: u64,
        next_file_number: &mut u64,
    ) -> Result<()> {
        match self {
            Core::Lsm(t) => {
                recover::persist_replayed(t, fs, dir, cache, last_seqno, next_file_number)
            }
            // The log being replayed is durable already; the manifest
            // started after recovery records the generation.
            Core::Btree(t) => t
                .checkpoint(|| ((), last_seqno, 0), |_| Ok(()), |_| Ok(()))
                .map(|_| ()),
        }
    }

    /// The names of the table's files in the database directory now.
    pub(crate) fn file_names(&self) -> Vec<String> {
        match self {
            Core::Lsm(t) => t
                .super_version()
                .version
                .files()
                .map(|f| sst_name(f.record.number))
                .collect(),
            Core::Btree(t) => vec![btree_name(t.id)],
        }
    }

    /// Starts applying entries to the table, in seqno order: for one commit
    /// group (room was made, and the caller holds the commit lock), or for
    /// the log at recovery (`recovering`: entries the table persisted
    /// already are skipped, and a full memtable is frozen on the way).
    pub(crate) fn applier(&self, recovering: bool) -> Applier<'_> {
        let skip_upto = if recovering {
            self.persisted_seqno()
        } else {
            0
        };
        match self {
            Core::Lsm(t) => Applier::Lsm {
                table: t,
                mem: t.active_mem(),
                skip_upto,
                recovering,
            },
            Core::Btree(t) => Applier::Btree {
                table: t,
                skip_upto,
                tree: t.writer(),
            },
        }
    }

    /// Whether the table has background work waiting to be picked: frozen
    /// memtables to flush (LSM), or a checkpoint that fell due (B-tree).
    /// Compactions are not counted: they are picked by score.
    pub(crate) fn work_due(&self, db: &DbInner) -> bool {
        match self {
            Core::Lsm(t) => !t.super_version().imms.is_empty(),
            Core::Btree(t) => work::checkpoint_due(db, t),
        }
    }

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

    /// The seqno up to which every entry of the table is in its files.
    pub(crate) fn persisted_seqno(&self) -> u64 {
        match self {
            Core::Lsm(t) => t.persisted_seqno.load(Ordering::Acquire),
            Core::Btree(t) => t.persisted_seqno.load(Ordering::Acquire),
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
                let version = Arc::clone(&t.super_version().version);
                for (level, files) in version.levels.iter().enumerate() {
                    for f in files {
                        edit.added.push((t.id, level as u32, f.record.clone()));
                    }
                }
                for r in &version.range_dels.list {
                    edit.range_dels_added.push((t.id, r.clone()));
                }
            }
            Core::Btree(t) => edit
                .checkpointed
                .push((t.id, t.durable_generation.load(Ordering::Acquire))),
        }
    }

    /// The value of `key` at `snapshot`'s seqno (`seqno` is it, checked),
    /// or at the visible seqno: true if found, its value appended to
    /// `value`.
    pub(crate) fn get_into(
        &self,
        db: &Arc<DbInner>,
        key: &[u8],
        snapshot: Option<(&Snapshot, u64)>,
        value: &mut Vec<u8>,
    ) -> Result<bool> {
        let seqno = snapshot.map(|(_, seqno)| seqno);
        match self {
            Core::Lsm(t) => t.get_into(key, seqno, &db.visible_seqno, value),
            Core::Btree(t) => match t.get(key, seqno, &db.visible_seqno, value)? {
                Lookup::Value => Ok(true),
                Lookup::Absent => Ok(false),
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
                    let found = t.get_across_leaves(key, at, value);
                    drop(pin);
                    found
                }
            },
        }
    }

    /// The seqno of the newest version of `key` (a put or a delete), if the
    /// table holds one.
    pub(crate) fn newest_seqno(&self, key: &[u8]) -> Result<Option<u64>> {
        match self {
            Core::Lsm(t) => t.newest_seqno(key),
            Core::Btree(t) => t.newest_seqno(key),
        }
    }

    /// Whether a version of a key in `[start, end)` (an empty `end`: to
    /// the last key) newer than `after` is there: a transaction's range
    /// delete conflicts with it.
    pub(crate) fn written_in_range(&self, start: &[u8], end: &[u8], after: u64) -> Result<bool> {
        match self {
            Core::Lsm(t) => t.written_in_range(start, end, after),
            Core::Btree(t) => {
                let it = BtreeIter::new(Arc::clone(t));
                crate::mvcc::iter::any_newer_in_range(it, start, end, after)
            }
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
            Core::Btree(t) => match manual {
                work::Manual::All => work::vacuum_btree(db, t),
                work::Manual::Level(_) => Ok(()),
            },
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

/// One table's side of applying entries (`Core::applier`): the memtable
/// they go into, or the tree's writer state, held until the applier is
/// dropped.
pub(crate) enum Applier<'a> {
    Lsm {
        table: &'a LsmTable,
        mem: Arc<Mem>,
        skip_upto: u64,
        recovering: bool,
    },
    Btree {
        table: &'a Arc<BtreeTable>,
        skip_upto: u64,
        tree: MutexGuard<'a, TreeState>,
    },
}

impl Applier<'_> {
    /// Whether `apply` skips the entry of `seqno`: recovery's, of an entry
    /// the table's files hold already.
    pub(crate) fn skips(&self, seqno: u64) -> bool {
        let (Applier::Lsm { skip_upto, .. } | Applier::Btree { skip_upto, .. }) = self;
        seqno <= *skip_upto
    }

    /// The table's name, for errors.
    pub(crate) fn name(&self) -> &str {
        match self {
            Applier::Lsm { table, .. } => &table.name,
            Applier::Btree { table, .. } => &table.name,
        }
    }

    /// Whether `apply` needs the horizon (a B-tree prunes the versions no
    /// reader needs as it writes a leaf; a memtable keeps every version).
    pub(crate) fn needs_horizon(&self) -> bool {
        matches!(self, Applier::Btree { .. })
    }

    /// Applies one entry. An LSM table cannot fail here; a B-tree table's
    /// failure marks it failed (see `BtreeTable::apply`).
    pub(crate) fn apply(
        &mut self,
        seqno: u64,
        kind: Kind,
        key: &[u8],
        value: &[u8],
        horizon: &Horizon,
    ) -> Result<()> {
        let (Applier::Lsm { skip_upto, .. } | Applier::Btree { skip_upto, .. }) = self;
        if seqno <= *skip_upto {
            // Recovery: the table persisted this entry already.
            return Ok(());
        }
        match self {
            Applier::Lsm {
                table,
                mem,
                recovering,
                ..
            } => {
                if *recovering && table.memtable_full(mem) {
                    table.freeze_memtable();
                    *mem = table.active_mem();
                }
                mem.add(seqno, kind, key, value);
                Ok(())
            }
            Applier::Btree { table, tree, .. } if kind == Kind::RangeDelete => {
                BtreeTable::delete_range(table, tree, seqno, key, value, horizon)
            }
            Applier::Btree { table, tree, .. } => {
                table.apply(tree, seqno, kind, key, value, horizon)
            }
        }
    }

    /// Whether `tidy` has work: a B-tree leaf the group split to hold
    /// versions that publishing it hid.
    pub(crate) fn needs_tidy(&self) -> bool {
        match self {
            Applier::Lsm { .. } => false,
            Applier::Btree { tree, .. } => !tree.is_tidy(),
        }
    }

    /// After publication: packs what the group left untidy (B-tree), under
    /// `horizon`, taken after publishing.
    pub(crate) fn tidy(&mut self, horizon: &Horizon) -> Result<()> {
        match self {
            Applier::Lsm { .. } => Ok(()),
            Applier::Btree { table, tree, .. } => table.tidy(tree, horizon),
        }
    }

    /// Whether applying made background work due that nothing else
    /// announces: a B-tree checkpoint (an LSM flush is announced when
    /// `make_room` freezes the memtable).
    pub(crate) fn wakes_workers(&self, db: &DbInner) -> bool {
        match self {
            Applier::Lsm { .. } => false,
            Applier::Btree { table, .. } => work::checkpoint_due(db, table),
        }
    }
}
