//! `Core`: a table of either kind, as the catalog holds it. What every
//! table has (id, name, options, its dropped flag, its catalog record) and
//! the operations whose work differs by kind (creating and dropping it,
//! opening it at recovery from what the manifest records of it
//! (`TableState`) and persisting what the log replayed into it, what a
//! writer does before its commit and what the leader does to make room
//! for it, applying entries and what follows publication (`Applier`),
//! point reads, the log it still needs, its files, whether work is due,
//! flush, manual compaction, shape, statistics, verify, the whole-state
//! record) are methods here, so that the rest of `db/` branches on the
//! kind in one place. Each branch is one call: to the kind's own folder
//! (`lsm/`, `btree/`), or, where the work needs the database, to the file
//! of `db/` whose concern it is (`work.rs`, `stats.rs`, `snapshot.rs`),
//! or to the helpers at the end of this file that hand a table of one
//! kind the database's parts to open with (`new_btree`; `TableState`'s
//! `open_lsm` and `open_btree`, from the recorded state). The scheduler (`work.rs`) still knows the kinds of job (flush,
//! compaction, checkpoint): ranking them across tables is its policy.
//!
//! Thread-safety: a `Core` is two `Arc`s' worth of handle; the tables
//! behind it are `Send + Sync` and guard their own state.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use super::snapshot::Snapshot;
use super::stats::{self, Shape, TableStats};
use super::{work, DbInner};
use crate::btree::{BtreeTable, TreeWriter};
use crate::cache::Cache;
use crate::error::Result;
use crate::file_names::btree_name;
use crate::fs::{DirectIo, Fs};
use crate::lsm::recover::{persist_replayed, recorded_version};
use crate::lsm::table::{LsmTable, MemWriter};
use crate::lsm::version::{SstFiles, SstReads, Version};
use crate::manifest::{FileRecord, TableRecord, VersionEdit};
use crate::mvcc::key::Kind;
use crate::mvcc::range_del::RangeTombstone;
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
    /// a B-tree table's file and its directory entry, synced
    /// (`BtreeTable::create_synced`: after a failure the database is as it
    /// was). An LSM table needs nothing until its first flush.
    pub(super) fn create_files(
        db: &DbInner,
        id: u32,
        options: &TableOptions,
        flushed: u64,
    ) -> Result<()> {
        match options.kind {
            TableKind::Lsm => Ok(()),
            TableKind::Btree => BtreeTable::create_synced(&*db.fs, &db.dir, id, options, flushed),
        }
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
        let name = name.to_string();
        Ok(match options.kind {
            TableKind::Lsm => Core::Lsm(Arc::new(LsmTable::new_empty(id, name, options, flushed))),
            TableKind::Btree => Core::Btree(Arc::new(new_btree(db, id, name, options)?)),
        })
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

    /// Opens a table the manifest records, at recovery (`TableState`'s
    /// `open_lsm`, `open_btree`). `next_file_number` hands out a B-tree's
    /// cache owner number.
    pub(super) fn open_recovered(
        t: &TableState,
        at: &Opening<'_>,
        next_file_number: &mut u64,
    ) -> Result<Core> {
        Ok(match t.record.options.kind {
            TableKind::Lsm => Core::Lsm(Arc::new(t.open_lsm(at)?)),
            TableKind::Btree => Core::Btree(Arc::new(t.open_btree(at, next_file_number)?)),
        })
    }

    /// Makes durable what recovery replayed into the table, which then
    /// holds everything up to `last_seqno` in its files: an LSM table
    /// writes its memtables to L0 SSTs (numbered from `next_file_number`,
    /// synced; the caller syncs the directory), a B-tree table checkpoints.
    pub(super) fn persist_recovered(
        &self,
        at: &Opening<'_>,
        last_seqno: u64,
        next_file_number: &mut u64,
    ) -> Result<()> {
        match self {
            Core::Lsm(t) => persist_replayed(t, &at.sst_files(), last_seqno, next_file_number),
            Core::Btree(t) => t.persist_recovered(last_seqno),
        }
    }

    /// The names of the table's files in the database directory now.
    pub(crate) fn file_names(&self) -> Vec<String> {
        match self {
            Core::Lsm(t) => t.file_names(),
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
        let writer = match self {
            Core::Lsm(t) => TableWriter::Lsm(t.mem_writer(recovering)),
            Core::Btree(t) => TableWriter::Btree(t.tree_writer()),
        };
        Applier { skip_upto, writer }
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
            Core::Lsm(t) => t.add_to_whole_state(edit),
            Core::Btree(t) => edit.checkpointed.push((t.id, t.checkpoint_generation())),
        }
    }

    /// The value of `key` at `snapshot`'s seqno (`seqno` is it, checked),
    /// or at the visible seqno: true if found, its value appended to
    /// `value`. A B-tree read that goes on past one leaf holds a
    /// registered snapshot meanwhile (`Snapshot::to_read_on`).
    pub(crate) fn get_into(
        &self,
        db: &Arc<DbInner>,
        key: &[u8],
        snapshot: Option<(&Snapshot, u64)>,
        value: &mut Vec<u8>,
    ) -> Result<bool> {
        let seqno = snapshot.map(|(_, seqno)| seqno);
        let visible = &db.visible_seqno;
        let hold = |at| Snapshot::to_read_on(db, snapshot, at);
        match self {
            Core::Lsm(t) => t.get_into(key, seqno, visible, value),
            Core::Btree(t) => t.get_into(key, seqno, visible, value, hold),
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
            Core::Btree(t) => t.written_in_range(start, end, after),
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
    /// so only compacting it all does anything (`work::compact_btree`).
    pub(crate) fn compact(&self, db: &DbInner, manual: work::Manual) -> Result<()> {
        match self {
            Core::Lsm(t) => work::compact_manual(db, t, manual),
            Core::Btree(t) => work::compact_btree(db, t, manual),
        }
    }

    /// The table's shape now (a B-tree's reads every page).
    pub(crate) fn shape(&self) -> Result<Shape> {
        match self {
            Core::Lsm(t) => Ok(stats::lsm_shape(t)),
            Core::Btree(t) => stats::btree_shape(t),
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
    /// under backpressure: `work::make_room`); a B-tree table checks that
    /// no earlier failure stopped it (which poisons the database).
    pub(crate) fn make_room(&self, db: &Arc<DbInner>) -> Result<()> {
        match self {
            Core::Lsm(t) => work::make_room(db, t),
            Core::Btree(t) => t.check_failed().inspect_err(|e| db.poison_for(&t.name, e)),
        }
    }

    /// The oldest seqno of the log the table still needs: every entry below
    /// it is in the table's files. `visible` is the visible seqno, read
    /// before: every entry up to it is in a memtable or the tree. A B-tree
    /// table also learns that its pages hold everything up to `visible`.
    pub(crate) fn log_needed_from(&self, visible: u64) -> u64 {
        match self {
            Core::Lsm(t) => t.log_needed_from(visible),
            Core::Btree(t) => t.log_needed_from(visible),
        }
    }

    /// Reads every file of the table and checks it; the entries checked.
    pub(crate) fn verify(&self, db: &DbInner) -> Result<u64> {
        match self {
            Core::Lsm(t) => t.verify(&db.dir),
            Core::Btree(t) => crate::btree::verify::verify(t),
        }
    }
}

/// Opens the file of a new B-tree table (`Core::create_files` made it):
/// the next file number is its cache owner, and the log it needs starts
/// now.
fn new_btree(db: &DbInner, id: u32, name: String, options: TableOptions) -> Result<BtreeTable> {
    let owner = db.next_file_number.fetch_add(1, Ordering::AcqRel);
    let cache = Arc::clone(&db.cache);
    let t = BtreeTable::open(
        &*db.fs,
        &db.dir,
        id,
        name,
        options,
        cache,
        owner,
        1,
        0,
        false,
        db.options.direct_io(),
        db.options.mmap_reads,
    )?;
    // The log a new table needs starts now.
    let wal_bytes = db.counters.wal_bytes.load(Ordering::Relaxed);
    t.wal_bytes_at_checkpoint
        .store(wal_bytes, Ordering::Release);
    Ok(t)
}

/// A table as the manifest records it (`Core::open_recovered` opens it):
/// recovery (`open.rs`) applies the manifest's edits to it.
pub(super) struct TableState {
    pub(super) record: TableRecord,
    /// An LSM table's files, by level and file number.
    pub(super) levels: Vec<BTreeMap<u64, FileRecord>>,
    /// An LSM table's flushed seqno.
    pub(super) persisted_seqno: u64,
    /// A B-tree table's newest durable checkpoint generation (0: none
    /// recorded).
    pub(super) checkpoint_generation: u64,
    /// An LSM table's flushed range tombstones, by seqno.
    pub(super) range_dels: BTreeMap<u64, RangeTombstone>,
}

/// What a recorded table is opened with at recovery: the database's
/// shared parts, and how it was opened.
pub(super) struct Opening<'a> {
    pub(super) fs: &'a Arc<dyn Fs>,
    pub(super) dir: &'a Path,
    pub(super) cache: &'a Arc<Cache>,
    /// The manifest read, named in a corruption report.
    pub(super) manifest: &'a Path,
    /// The seqno the log starts at: a B-tree checkpoint older than the
    /// manifest records is accepted only while the log covers the gap.
    pub(super) log_start: u64,
    /// Opened read-only: a B-tree table writes no page.
    pub(super) read_only: bool,
    /// How LSM tables read their SSTs.
    pub(super) sst_reads: SstReads,
    /// Which transfers go around the OS's page cache
    /// (`Options::direct_reads`, `direct_writes`).
    pub(super) direct: DirectIo,
    /// B-tree pages read through memory maps (`Options::mmap_reads`).
    pub(super) mapped_pages: bool,
}

impl Opening<'_> {
    /// Where LSM tables' SST files are.
    fn sst_files(&self) -> SstFiles<'_> {
        SstFiles {
            fs: self.fs,
            dir: self.dir,
            cache: self.cache,
            reads: self.sst_reads,
            direct_writes: self.direct.writes,
        }
    }
}

impl TableState {
    /// The LSM table over its recorded files (`lsm/recover.rs`).
    fn open_lsm(&self, at: &Opening<'_>) -> Result<LsmTable> {
        let r = &self.record;
        let version = recorded_version(
            &at.sst_files(),
            &self.levels,
            &self.range_dels,
            at.manifest,
            &r.name,
        )?;
        Ok(LsmTable::new(
            r.id,
            r.name.clone(),
            r.options.clone(),
            version,
            self.persisted_seqno,
        ))
    }

    /// The B-tree table at its file's newest valid checkpoint; its cache
    /// owner number is the next of `next_file_number`.
    fn open_btree(&self, at: &Opening<'_>, next_file_number: &mut u64) -> Result<BtreeTable> {
        let owner = *next_file_number;
        *next_file_number += 1;
        BtreeTable::open(
            &**at.fs,
            at.dir,
            self.record.id,
            self.record.name.clone(),
            self.record.options.clone(),
            Arc::clone(at.cache),
            owner,
            self.checkpoint_generation,
            at.log_start,
            at.read_only,
            at.direct,
            at.mapped_pages,
        )
    }
}

/// One table's side of applying entries (`Core::applier`): the memtable
/// they go into, or the tree's writer state, held until the applier is
/// dropped.
pub(crate) struct Applier<'a> {
    /// Recovery's: the entries up to this seqno are in the table's files
    /// already (0 for a commit group).
    skip_upto: u64,
    writer: TableWriter<'a>,
}

/// Where an applier's entries go, by kind.
enum TableWriter<'a> {
    Lsm(MemWriter<'a>),
    Btree(TreeWriter<'a>),
}

impl Applier<'_> {
    /// Whether `apply` skips the entry of `seqno`: recovery's, of an entry
    /// the table's files hold already.
    pub(crate) fn skips(&self, seqno: u64) -> bool {
        seqno <= self.skip_upto
    }

    /// The table's name, for errors.
    pub(crate) fn name(&self) -> &str {
        match &self.writer {
            TableWriter::Lsm(w) => &w.table.name,
            TableWriter::Btree(w) => &w.table.name,
        }
    }

    /// Whether `apply` needs the horizon (a B-tree prunes the versions no
    /// reader needs as it writes a leaf; a memtable keeps every version).
    pub(crate) fn needs_horizon(&self) -> bool {
        matches!(self.writer, TableWriter::Btree(_))
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
        if self.skips(seqno) {
            // Recovery: the table persisted this entry already.
            return Ok(());
        }
        match &mut self.writer {
            TableWriter::Lsm(w) => w.apply(seqno, kind, key, value),
            TableWriter::Btree(w) => w.apply(seqno, kind, key, value, horizon),
        }
    }

    /// Whether `tidy` has work: a B-tree leaf the group split to hold
    /// versions that publishing it hid.
    pub(crate) fn needs_tidy(&self) -> bool {
        match &self.writer {
            TableWriter::Lsm(_) => false,
            TableWriter::Btree(w) => !w.is_tidy(),
        }
    }

    /// After publication: packs what the group left untidy (B-tree), under
    /// `horizon`, taken after publishing.
    pub(crate) fn tidy(&mut self, horizon: &Horizon) -> Result<()> {
        match &mut self.writer {
            TableWriter::Lsm(_) => Ok(()),
            TableWriter::Btree(w) => w.tidy(horizon),
        }
    }

    /// Whether applying made background work due that nothing else
    /// announces: a B-tree checkpoint (an LSM flush is announced when
    /// `make_room` freezes the memtable).
    pub(crate) fn wakes_workers(&self, db: &DbInner) -> bool {
        match &self.writer {
            TableWriter::Lsm(_) => false,
            TableWriter::Btree(w) => work::checkpoint_due(db, w.table),
        }
    }
}
