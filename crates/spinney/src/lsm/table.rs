//! One LSM table: its memtables, its version, and the work that moves data
//! down (flush, compaction).
//!
//! Readers take the table's `SuperVersion` (active memtable, immutable
//! memtables, version) under a short lock and then read without locks. The
//! commit leader is the only writer of the active memtable. Flushes and
//! compactions run on the database's background worker and publish their
//! result by swapping in a new `SuperVersion`.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use super::compaction::{self, Busy, OutputRange};
use super::memtable::{self, MemTable};
use super::sst::{SstBuilder, SstInfo, SstOptions};
use super::version::Version;
use crate::counter::Striped;
use crate::error::{Error, Result};
use crate::file_names::sst_name;
use crate::fs::WritableFile;
use crate::limits::LSM_LEVELS;
use crate::manifest::{FileRecord, VersionEdit};
use crate::mvcc::iter::InternalIterator;
use crate::mvcc::key::{Kind, ParsedKey};
use crate::mvcc::merge::MergingIter;
use crate::mvcc::range_del::{self, Fragments, RangeTombstone, Skipping};
use crate::mvcc::Horizon;
use crate::options::{CompactionStyle, TableOptions};
use crate::read_context::{self, ReadContext};

/// A memtable and the seqnos it holds.
pub(crate) struct Mem {
    pub table: Arc<MemTable>,
    /// Seqno of the first entry added; `u64::MAX` while empty.
    pub first_seqno: AtomicU64,
    /// Seqno of the last entry added.
    pub last_seqno: AtomicU64,
    /// The range tombstones added, oldest first (`mvcc::range_del`), and
    /// their fragments once a reader asked (dropped by the next add).
    range_dels: RwLock<(Vec<RangeTombstone>, Option<Arc<Fragments>>)>,
    /// Their bytes, counted in the memtable's size; 0 while none.
    range_del_bytes: AtomicUsize,
}

impl Mem {
    /// An empty memtable for a table with `options` (a key filter if its
    /// SSTs have bloom filters).
    pub(crate) fn new(options: &TableOptions) -> Mem {
        let filter_bytes = if options.bloom_bits_per_key > 0 {
            options.write_buffer_size / memtable::FILTER_DIVISOR
        } else {
            0
        };
        Mem {
            table: Arc::new(MemTable::new(filter_bytes)),
            first_seqno: AtomicU64::new(u64::MAX),
            last_seqno: AtomicU64::new(0),
            range_dels: RwLock::new((Vec::new(), None)),
            range_del_bytes: AtomicUsize::new(0),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.first_seqno.load(Ordering::Acquire) == u64::MAX
    }

    /// Adds an entry. Callers serialise adds (the commit leader, recovery).
    pub(crate) fn add(&self, seqno: u64, kind: Kind, user_key: &[u8], value: &[u8]) {
        if kind == Kind::RangeDelete {
            let t = RangeTombstone {
                seqno,
                start: user_key.to_vec(),
                end: value.to_vec(),
            };
            let charge = t.charge();
            let mut r = self.range_dels.write();
            r.0.push(t);
            r.1 = None;
            drop(r);
            self.range_del_bytes.fetch_add(charge, Ordering::Release);
        } else {
            self.table.add(seqno, kind, user_key, value);
        }
        self.last_seqno.store(seqno, Ordering::Release);
        if self.first_seqno.load(Ordering::Relaxed) == u64::MAX {
            self.first_seqno.store(seqno, Ordering::Release);
        }
    }

    /// Bytes held: the entries' arena and the range tombstones.
    pub(crate) fn approximate_bytes(&self) -> usize {
        self.table.approximate_bytes() + self.range_del_bytes.load(Ordering::Relaxed)
    }

    fn has_range_dels(&self) -> bool {
        self.range_del_bytes.load(Ordering::Acquire) > 0
    }

    /// The range tombstones added so far.
    pub(crate) fn range_dels(&self) -> Vec<RangeTombstone> {
        if !self.has_range_dels() {
            return Vec::new();
        }
        self.range_dels.read().0.clone()
    }

    /// The range tombstones as fragments (of every seqno; readers pick
    /// theirs), cut once after each add; None while there are none.
    fn fragments(&self) -> Option<Arc<Fragments>> {
        if !self.has_range_dels() {
            return None;
        }
        if let Some(f) = &self.range_dels.read().1 {
            return Some(Arc::clone(f));
        }
        let mut r = self.range_dels.write();
        let f = match &r.1 {
            Some(f) => Arc::clone(f),
            None => {
                let f = Arc::new(Fragments::build(&r.0, u64::MAX));
                r.1 = Some(Arc::clone(&f));
                f
            }
        };
        Some(f)
    }
}

/// What a reader needs to read a table at one moment.
pub(crate) struct SuperVersion {
    pub mem: Arc<Mem>,
    /// Frozen memtables waiting for flush, oldest first.
    pub imms: Vec<Arc<Mem>>,
    pub version: Arc<Version>,
    /// L0 runs and estimated pending compaction bytes of `version`, for backpressure.
    pub pressure: Pressure,
}

/// The figures of a version that writers are throttled by.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Pressure {
    pub l0_runs: usize,
    pub pending_compaction_bytes: u64,
}

impl Pressure {
    fn of(version: &Version, options: &TableOptions) -> Pressure {
        Pressure {
            l0_runs: version.level(0).len(),
            pending_compaction_bytes: compaction::pending_compaction_bytes(
                version,
                &options.compaction,
            ),
        }
    }
}

impl SuperVersion {
    /// The range tombstones of the trees, a set of fragments for the
    /// version and for each memtable that holds any; empty (the common
    /// case) when there are none.
    pub(crate) fn range_del_sets(&self) -> Vec<Arc<Fragments>> {
        let mut sets = Vec::new();
        if !self.version.range_dels.is_empty() {
            sets.push(Arc::clone(&self.version.range_dels.fragments));
        }
        for mem in std::iter::once(&self.mem).chain(&self.imms) {
            sets.extend(mem.fragments());
        }
        sets
    }

    /// The seqno of the newest range tombstone at or below `snapshot` over
    /// `user_key`, in any of the trees, or 0: the versions older than it
    /// are deleted for a reader at `snapshot`.
    pub(crate) fn covering(&self, user_key: &[u8], snapshot: u64) -> u64 {
        let mut newest = self
            .version
            .range_dels
            .fragments
            .covering(user_key, snapshot);
        for mem in std::iter::once(&self.mem).chain(&self.imms) {
            if let Some(f) = mem.fragments() {
                newest = newest.max(f.covering(user_key, snapshot));
            }
        }
        newest
    }

    /// The smallest seqno held only in memory, if any.
    pub(crate) fn oldest_unflushed_seqno(&self) -> Option<u64> {
        let first = self
            .imms
            .first()
            .unwrap_or(&self.mem)
            .first_seqno
            .load(Ordering::Acquire);
        let mem_first = self.mem.first_seqno.load(Ordering::Acquire);
        let m = first.min(mem_first);
        (m != u64::MAX).then_some(m)
    }
}

pub(crate) struct LsmTable {
    pub id: u32,
    pub name: String,
    pub options: TableOptions,
    pub dropped: AtomicBool,
    sv: Mutex<Arc<SuperVersion>>,
    /// Every entry up to this seqno is in the table's SSTs.
    pub persisted_seqno: AtomicU64,
    /// What is running on this table; see `TableWork`.
    pub work: Mutex<TableWork>,
    /// Flush and compaction figures.
    pub counters: Mutex<TableCounters>,
    /// Bloom filter checks by point reads, and those that ruled a file out.
    /// (Striped: counted by every point read.)
    pub bloom_checks: Striped,
    pub bloom_negatives: Striped,
}

impl LsmTable {
    pub(crate) fn new(
        id: u32,
        name: String,
        options: TableOptions,
        version: Version,
        persisted_seqno: u64,
    ) -> LsmTable {
        let sv = SuperVersion {
            mem: Arc::new(Mem::new(&options)),
            imms: Vec::new(),
            pressure: Pressure::of(&version, &options),
            version: Arc::new(version),
        };
        LsmTable {
            id,
            name,
            options,
            dropped: AtomicBool::new(false),
            sv: Mutex::new(Arc::new(sv)),
            persisted_seqno: AtomicU64::new(persisted_seqno),
            work: Mutex::new(TableWork::default()),
            counters: Mutex::new(TableCounters::default()),
            bloom_checks: Striped::default(),
            bloom_negatives: Striped::default(),
        }
    }

    /// A new table: no files yet, and every entry newer than `flushed`.
    pub(crate) fn new_empty(
        id: u32,
        name: String,
        options: TableOptions,
        flushed: u64,
    ) -> LsmTable {
        LsmTable::new(id, name, options, Version::empty(), flushed)
    }

    pub(crate) fn super_version(&self) -> Arc<SuperVersion> {
        Arc::clone(&self.sv.lock())
    }

    /// The active memtable. Only the commit leader (and recovery) adds to it,
    /// and only the leader freezes it, so the leader may hold it for a group.
    pub(crate) fn active_mem(&self) -> Arc<Mem> {
        Arc::clone(&self.sv.lock().mem)
    }

    /// Whether `mem` has reached the write buffer size (a commit group, or
    /// recovery, freezes it before adding more).
    pub(crate) fn memtable_full(&self, mem: &Mem) -> bool {
        mem.approximate_bytes() >= self.options.write_buffer_size
    }

    /// Freezes the active memtable (if it holds anything) and starts a new one.
    /// Only the commit leader (or a caller holding back all writers) calls it.
    pub(crate) fn freeze_memtable(&self) -> bool {
        if self.sv.lock().mem.is_empty() {
            return false;
        }
        // Made before the lock: readers and the jobs' installs take it.
        let fresh = Arc::new(Mem::new(&self.options));
        let mut sv = self.sv.lock();
        let mut imms = sv.imms.clone();
        imms.push(Arc::clone(&sv.mem));
        let next = Arc::new(SuperVersion {
            mem: fresh,
            imms,
            version: Arc::clone(&sv.version),
            pressure: sv.pressure,
        });
        let old = std::mem::replace(&mut *sv, next);
        drop(sv);
        drop(old);
        true
    }

    /// Starts adding entries to the active memtable, in seqno order: for
    /// one commit group (the leader made room, and holds the commit lock,
    /// so the memtable is not frozen meanwhile), or for the log at recovery
    /// (`recovering`: a full memtable is frozen on the way).
    pub(crate) fn mem_writer(&self, recovering: bool) -> MemWriter<'_> {
        MemWriter {
            table: self,
            mem: self.active_mem(),
            recovering,
        }
    }

    /// Installs `version` and drops the first `flushed` immutable memtables.
    /// The pressure is computed, and the old super version let go (perhaps
    /// the last hold on a flushed memtable, whose arena is then freed),
    /// outside the lock: the commit leader takes it for every group, and a
    /// background thread runs at a lower priority (`background_nice`), so
    /// nothing slow may happen while it holds it.
    pub(crate) fn install(&self, version: Version, flushed: usize) {
        let pressure = Pressure::of(&version, &self.options);
        let version = Arc::new(version);
        let mut sv = self.sv.lock();
        let imms = sv.imms.get(flushed..).unwrap_or(&[]).to_vec();
        let next = Arc::new(SuperVersion {
            mem: Arc::clone(&sv.mem),
            imms,
            pressure,
            version,
        });
        let old = std::mem::replace(&mut *sv, next);
        drop(sv);
        drop(old);
    }

    /// The value of `user_key` at `snapshot`, or, without one, at the
    /// visible seqno loaded once the super version is held (so that its
    /// trees hold every version at or below that seqno: `mvcc::horizon`).
    /// True if found, its value appended to `value`.
    pub(crate) fn get_into(
        &self,
        user_key: &[u8],
        snapshot: Option<u64>,
        visible: &AtomicU64,
        value: &mut Vec<u8>,
    ) -> Result<bool> {
        // Each memtable and SST searched counts itself as a tree searched.
        read_context::add(&ReadContext {
            gets: 1,
            ..ReadContext::default()
        });
        let sv = self.super_version();
        let snapshot = snapshot.unwrap_or_else(|| visible.load(Ordering::Acquire));
        let floor = sv.covering(user_key, snapshot);
        for mem in std::iter::once(&sv.mem).chain(sv.imms.iter().rev()) {
            if let Some(put) = mem.table.get_into(user_key, snapshot, floor, value) {
                return Ok(put);
            }
        }
        let mut counts = ReadContext::default();
        let found = sv
            .version
            .get_into(user_key, snapshot, floor, &mut counts, value);
        read_context::add(&counts);
        if counts.bloom_checks > 0 {
            self.bloom_checks.add(counts.bloom_checks);
            self.bloom_negatives.add(counts.bloom_negatives);
        }
        Ok(found? == Some(true))
    }

    /// The seqno of the newest write of `user_key` (a put, a delete or a
    /// range tombstone over it) in any of the table's trees, if one is
    /// there.
    pub(crate) fn newest_seqno(&self, user_key: &[u8]) -> Result<Option<u64>> {
        let sv = self.super_version();
        let range = sv.covering(user_key, u64::MAX);
        let newest = |s: u64| Ok(Some(s.max(range)));
        for mem in std::iter::once(&sv.mem).chain(sv.imms.iter().rev()) {
            if let Some(seqno) = mem.table.newest_seqno(user_key) {
                return newest(seqno);
            }
        }
        let mut counts = ReadContext::default();
        let found = sv.version.newest_seqno(user_key, &mut counts);
        read_context::add(&counts);
        match found? {
            Some(seqno) => newest(seqno),
            None => Ok((range > 0).then_some(range)),
        }
    }

    /// Whether a write newer than `after` touched a key in `[start, end)`
    /// (an empty `end`: to the last key): a version in a tree that holds
    /// any newer than `after` (the others are not read), or a range
    /// tombstone over part of the range.
    pub(crate) fn written_in_range(&self, start: &[u8], end: &[u8], after: u64) -> Result<bool> {
        let sv = self.super_version();
        let overlaps =
            |t: &RangeTombstone| t.seqno > after && range_del::meet(start, end, &t.start, &t.end);
        if sv.version.range_dels.list.iter().any(overlaps) {
            return Ok(true);
        }
        for mem in std::iter::once(&sv.mem).chain(&sv.imms) {
            if mem.range_dels().iter().any(overlaps) {
                return Ok(true);
            }
            if mem.last_seqno.load(Ordering::Acquire) > after
                && crate::mvcc::iter::any_newer_in_range(mem.table.iter(), start, end, after)?
            {
                return Ok(true);
            }
        }
        for file in sv.version.files() {
            let reaches = range_del::reaches(
                start,
                end,
                file.smallest_user_key(),
                file.largest_user_key(),
            );
            if file.record.seqno_max > after
                && reaches
                && crate::mvcc::iter::any_newer_in_range(file.sst()?.iter(), start, end, after)?
            {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The merge of every tree of `sv`: memtables (newest first), then the
    /// runs of its version; a user cursor at `snapshot` over it reads the
    /// table. When range tombstones are there, each tree leaves out what
    /// they hide from that snapshot.
    pub(crate) fn source(&self, sv: &SuperVersion, snapshot: u64) -> Result<MergingIter> {
        let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
        children.push(Box::new(sv.mem.table.iter()));
        for imm in sv.imms.iter().rev() {
            children.push(Box::new(imm.table.iter()));
        }
        // Reads move files down only in the leveled style, whose picker
        // looks at what they cost (`compaction::pick`).
        let charge_reads = self.options.compaction.style == CompactionStyle::Leveled;
        sv.version.add_iterators(&mut children, charge_reads)?;
        let sets = sv.range_del_sets();
        if !sets.is_empty() {
            let sets: Arc<[Arc<Fragments>]> = sets.into();
            let newest = std::iter::once(&sv.mem)
                .chain(sv.imms.iter().rev())
                .map(|m| m.last_seqno.load(Ordering::Acquire))
                .chain(sv.version.run_newest());
            children = children
                .into_iter()
                .zip(newest)
                .map(|(child, newest)| {
                    Box::new(Skipping::new(child, Arc::clone(&sets), snapshot, newest))
                        as Box<dyn InternalIterator>
                })
                .collect();
        }
        Ok(MergingIter::new(children))
    }

    /// The oldest seqno of the log the table still needs: the first held
    /// only in a memtable, or, when the memtables are empty, the one after
    /// `visible` (the visible seqno, read before: every entry up to it is
    /// in a memtable or a file).
    pub(crate) fn log_needed_from(&self, visible: u64) -> u64 {
        self.super_version()
            .oldest_unflushed_seqno()
            .unwrap_or(visible + 1)
    }

    /// The names of the table's SSTs now.
    pub(crate) fn file_names(&self) -> Vec<String> {
        self.super_version()
            .version
            .files()
            .map(|f| sst_name(f.record.number))
            .collect()
    }

    /// Adds the table's durable state to a whole-state manifest record:
    /// its flushed seqno, its files by level, its flushed range tombstones.
    pub(crate) fn add_to_whole_state(&self, edit: &mut VersionEdit) {
        edit.flushed
            .push((self.id, self.persisted_seqno.load(Ordering::Acquire)));
        let version = Arc::clone(&self.super_version().version);
        for (level, files) in version.levels.iter().enumerate() {
            for f in files {
                edit.added.push((self.id, level as u32, f.record.clone()));
            }
        }
        for r in &version.range_dels.list {
            edit.range_dels_added.push((self.id, r.clone()));
        }
    }

    pub(crate) fn sst_options(&self) -> SstOptions {
        SstOptions {
            compression: self.options.compression,
            bloom_bits_per_key: self.options.bloom_bits_per_key,
            block_size: self.options.block_size,
        }
    }

    /// Whether this table's state calls for flush or compaction work now
    /// (ignoring what is already running).
    pub(crate) fn needs_work(&self) -> bool {
        let sv = self.super_version();
        !sv.imms.is_empty() || self.has_compaction(&sv.version)
    }

    /// Checks the table's level invariants and reads every SST whole;
    /// the entries checked. A broken invariant is corruption of the
    /// manifest in `dir`.
    pub(crate) fn verify(&self, dir: &Path) -> Result<u64> {
        let version = Arc::clone(&self.super_version().version);
        if let Err(detail) = version.check() {
            return Err(Error::corruption(
                dir.join("MANIFEST"),
                0,
                format!("table {:?}: {detail}", self.name),
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

    /// True when a compaction could be picked from `version` now.
    pub(crate) fn has_compaction(&self, version: &Version) -> bool {
        let work = self.work.lock();
        let busy = Busy {
            outputs: &work.running,
        };
        compaction::pick(version, &self.options.compaction, &busy).is_some()
    }
}

/// Adds a run of entries to a table's active memtable (`LsmTable::mem_writer`).
pub(crate) struct MemWriter<'a> {
    pub table: &'a LsmTable,
    mem: Arc<Mem>,
    /// Recovery's: a full memtable is frozen before the next entry (a
    /// commit group's leader made room before it began).
    recovering: bool,
}

impl MemWriter<'_> {
    /// Adds one entry. A memtable takes every entry: this cannot fail.
    #[inline]
    pub(crate) fn apply(&mut self, seqno: u64, kind: Kind, key: &[u8], value: &[u8]) -> Result<()> {
        if self.recovering && self.table.memtable_full(&self.mem) {
            self.table.freeze_memtable();
            self.mem = self.table.active_mem();
        }
        self.mem.add(seqno, kind, key, value);
        Ok(())
    }
}

/// A table's flush and compaction activity. Changed only under the
/// database's `bg` lock (this mutex is taken after it).
#[derive(Default)]
pub(crate) struct TableWork {
    /// A flush of this table is running.
    pub flushing: bool,
    /// Output ranges of the running compactions.
    pub running: Vec<OutputRange>,
    /// Manual compactions and drops waiting for files to be free; the
    /// background leaves the table's compactions alone meanwhile.
    pub manual_waiting: usize,
    /// `drop_table` waits for the running work to end; nothing new starts.
    pub dropping: bool,
}

impl TableWork {
    pub(crate) fn is_idle(&self) -> bool {
        !self.flushing && self.running.is_empty()
    }
}

/// Compaction figures of one output level (RocksDB's per-level columns).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct LevelCounters {
    pub compactions: u64,
    pub trivial_moves: u64,
    pub micros: u64,
    /// Bytes read from the levels above this one (for L0: none).
    pub read_above: u64,
    /// Bytes read from this level.
    pub read_here: u64,
    /// Bytes written to this level (for L0: by flushes).
    pub written: u64,
}

/// Work figures of one table.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct TableCounters {
    pub levels: [LevelCounters; LSM_LEVELS],
    pub flushes: u64,
    pub flush_micros: u64,
}

/// Writes the entries of `iter` (already positioned at its first entry)
/// into SSTs, dropping what no snapshot can see. `new_file` makes the next
/// output file. Output files are cut at `target_bytes`, never between two
/// entries of the same user key.
pub(crate) struct MergeOutput {
    pub files: Vec<(u64, SstInfo)>,
    pub bytes_read: u64,
}

pub(crate) struct DropPolicy<'a> {
    /// Who may still read old versions: a version no reader needs is
    /// dropped (`Horizon::needed`), and so is a tombstone at the bottom
    /// below every reader (`Horizon::tombstone_droppable`).
    pub horizon: &'a Horizon,
    /// True when no deeper level may hold `user_key`, so a tombstone can go.
    pub is_bottom: &'a dyn Fn(&[u8]) -> bool,
    /// The range tombstones of the version the inputs are from: a version
    /// one of them hides from every reader goes.
    pub range_dels: &'a Fragments,
    /// False for flushes: every entry is written.
    pub drop_shadowed: bool,
}

pub(crate) fn write_merged(
    iter: &mut dyn InternalIterator,
    options: &SstOptions,
    target_bytes: u64,
    policy: &DropPolicy<'_>,
    new_file: &mut dyn FnMut() -> Result<(u64, Box<dyn WritableFile>)>,
) -> Result<MergeOutput> {
    let mut out = MergeOutput {
        files: Vec::new(),
        bytes_read: 0,
    };
    let mut builder: Option<(u64, SstBuilder)> = None;
    let mut current_user_key: Option<Vec<u8>> = None;
    // Seqno of the previous entry of the same user key (u64::MAX before the first).
    let mut last_seqno_for_key = u64::MAX;
    while iter.valid() {
        let ikey = iter.key();
        let parsed = ParsedKey::parse(ikey)
            .ok_or_else(|| Error::corruption("(compaction input)", 0, "malformed internal key"))?;
        out.bytes_read += (ikey.len() + iter.value().len()) as u64;
        let new_key = current_user_key.as_deref() != Some(parsed.user_key);
        if new_key {
            // Cut the output between user keys once it is large enough.
            if let Some((_, b)) = &builder {
                if b.estimated_size() >= target_bytes {
                    if let Some((number, b)) = builder.take() {
                        out.files.push((number, b.finish()?));
                    }
                }
            }
            current_user_key = Some(parsed.user_key.to_vec());
            last_seqno_for_key = u64::MAX;
        }
        let mut drop = false;
        if policy.drop_shadowed {
            // Readers from the next newer version of the key on, or from
            // the oldest range tombstone newer than this version, do not
            // see it.
            let hidden_from = if policy.range_dels.is_empty() {
                last_seqno_for_key
            } else {
                last_seqno_for_key.min(policy.range_dels.hidden_from(parsed.user_key, parsed.seqno))
            };
            if !policy.horizon.needed(parsed.seqno, hidden_from) {
                // No reader's seqno falls between this version and what
                // hides it.
                drop = true;
            } else if parsed.kind == Kind::Delete
                && policy.horizon.tombstone_droppable(parsed.seqno)
                && (policy.is_bottom)(parsed.user_key)
            {
                drop = true;
            }
        }
        last_seqno_for_key = parsed.seqno;
        if !drop {
            if builder.is_none() {
                let (number, file) = new_file()?;
                builder = Some((number, SstBuilder::new(file, options.clone())));
            }
            if let Some((_, b)) = &mut builder {
                b.add(ikey, iter.value())?;
            }
        }
        iter.next();
    }
    iter.status()?;
    // A builder exists only once an entry was added, so no output is empty.
    if let Some((number, b)) = builder.take() {
        out.files.push((number, b.finish()?));
    }
    Ok(out)
}

/// Writes every entry of a frozen memtable, all versions kept, to one SST.
pub(crate) fn write_memtable(
    mem: &Mem,
    options: &SstOptions,
    new_file: &mut dyn FnMut() -> Result<(u64, Box<dyn WritableFile>)>,
) -> Result<MergeOutput> {
    let mut iter = mem.table.iter();
    iter.seek_to_first();
    let never = |_: &[u8]| false;
    let keep_all = DropPolicy {
        horizon: &Horizon::default(),
        is_bottom: &never,
        range_dels: &Fragments::default(),
        drop_shadowed: false,
    };
    write_merged(&mut iter, options, u64::MAX, &keep_all, new_file)
}

/// The manifest record of a finished SST, which holds no version that a
/// range tombstone at or below `range_dels_applied` hides.
pub(crate) fn file_record(number: u64, info: &SstInfo, range_dels_applied: u64) -> FileRecord {
    FileRecord {
        number,
        size: info.file_size,
        entries: info.entries,
        smallest: info.smallest.clone(),
        largest: info.largest.clone(),
        seqno_min: info.seqno_min,
        seqno_max: info.seqno_max,
        range_dels_applied,
    }
}
