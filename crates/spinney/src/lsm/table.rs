//! One LSM table: its memtables, its version, and the work that moves data
//! down (flush, compaction).
//!
//! Readers take the table's `SuperVersion` (active memtable, immutable
//! memtables, version) under a short lock and then read without locks. The
//! commit leader is the only writer of the active memtable. Flushes and
//! compactions run on the database's background worker and publish their
//! result by swapping in a new `SuperVersion`.

use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::cursor::LsmCursor;
use super::iter::InternalIterator;
use super::key::{Kind, ParsedKey};
use super::memtable::{MemGet, MemTable};
use super::merge::MergingIter;
use super::sst::{SstBuilder, SstInfo, SstOptions};
use super::version::{FileMeta, Lookup, Version};
use crate::error::{Error, Result};
use crate::fs::WritableFile;
use crate::limits::{L0_COMPACTION_TRIGGER, LSM_LEVELS};
use crate::manifest::FileRecord;
use crate::options::TableOptions;
use crate::read_context::{self, ReadContext};

/// A memtable and the seqnos it holds.
pub(crate) struct Mem {
    pub table: Arc<MemTable>,
    /// Seqno of the first entry added; `u64::MAX` while empty.
    pub first_seqno: AtomicU64,
    /// Seqno of the last entry added.
    pub last_seqno: AtomicU64,
}

impl Mem {
    pub(crate) fn new() -> Mem {
        Mem {
            table: Arc::new(MemTable::new()),
            first_seqno: AtomicU64::new(u64::MAX),
            last_seqno: AtomicU64::new(0),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.first_seqno.load(Ordering::Acquire) == u64::MAX
    }

    /// Adds an entry. Callers serialise adds (the commit leader, recovery).
    pub(crate) fn add(&self, seqno: u64, kind: Kind, user_key: &[u8], value: &[u8]) {
        self.table.add(seqno, kind, user_key, value);
        self.last_seqno.store(seqno, Ordering::Release);
        if self.first_seqno.load(Ordering::Relaxed) == u64::MAX {
            self.first_seqno.store(seqno, Ordering::Release);
        }
    }
}

/// What a reader needs to read a table at one moment.
pub(crate) struct SuperVersion {
    pub mem: Arc<Mem>,
    /// Frozen memtables waiting for flush, oldest first.
    pub imms: Vec<Arc<Mem>>,
    pub version: Arc<Version>,
}

impl SuperVersion {
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
    pub flushed_seqno: AtomicU64,
    /// Set while a flush or compaction of this table is running.
    pub busy: AtomicBool,
}

impl LsmTable {
    pub(crate) fn new(
        id: u32,
        name: String,
        options: TableOptions,
        version: Version,
        flushed_seqno: u64,
    ) -> LsmTable {
        let sv = SuperVersion {
            mem: Arc::new(Mem::new()),
            imms: Vec::new(),
            version: Arc::new(version),
        };
        LsmTable {
            id,
            name,
            options,
            dropped: AtomicBool::new(false),
            sv: Mutex::new(Arc::new(sv)),
            flushed_seqno: AtomicU64::new(flushed_seqno),
            busy: AtomicBool::new(false),
        }
    }

    pub(crate) fn super_version(&self) -> Arc<SuperVersion> {
        Arc::clone(&self.sv.lock())
    }

    /// The active memtable. Only the commit leader (and recovery) adds to it,
    /// and only the leader freezes it, so the leader may hold it for a group.
    pub(crate) fn active_mem(&self) -> Arc<Mem> {
        Arc::clone(&self.sv.lock().mem)
    }

    /// True when the active memtable has reached the write buffer size.
    pub(crate) fn memtable_full(&self) -> bool {
        self.sv.lock().mem.table.approximate_bytes() >= self.options.write_buffer_size
    }

    /// Freezes the active memtable (if it holds anything) and starts a new one.
    /// Only the commit leader (or a caller holding back all writers) calls it.
    pub(crate) fn freeze_memtable(&self) -> bool {
        let mut sv = self.sv.lock();
        if sv.mem.is_empty() {
            return false;
        }
        let mut imms = sv.imms.clone();
        imms.push(Arc::clone(&sv.mem));
        *sv = Arc::new(SuperVersion {
            mem: Arc::new(Mem::new()),
            imms,
            version: Arc::clone(&sv.version),
        });
        true
    }

    /// Installs `version` and drops the first `flushed` immutable memtables.
    pub(crate) fn install(&self, version: Version, flushed: usize) {
        let mut sv = self.sv.lock();
        let imms = sv.imms.get(flushed..).unwrap_or(&[]).to_vec();
        *sv = Arc::new(SuperVersion {
            mem: Arc::clone(&sv.mem),
            imms,
            version: Arc::new(version),
        });
    }

    pub(crate) fn get(&self, user_key: &[u8], snapshot: u64) -> Result<Option<Vec<u8>>> {
        // Each memtable and SST searched counts itself as a tree searched.
        read_context::add(&ReadContext {
            gets: 1,
            ..ReadContext::default()
        });
        let sv = self.super_version();
        for mem in std::iter::once(&sv.mem).chain(sv.imms.iter().rev()) {
            match mem.table.get(user_key, snapshot) {
                Some(MemGet::Value(v)) => return Ok(Some(v)),
                Some(MemGet::Deleted) => return Ok(None),
                None => {}
            }
        }
        Ok(match sv.version.get(user_key, snapshot)? {
            Some(Lookup::Value(v)) => Some(v),
            Some(Lookup::Deleted) | None => None,
        })
    }

    pub(crate) fn cursor(
        &self,
        snapshot: u64,
        lower: Bound<Vec<u8>>,
        upper: Bound<Vec<u8>>,
    ) -> Result<LsmCursor> {
        self.cursor_from(&self.super_version(), snapshot, lower, upper)
    }

    /// A cursor over a given super version (so that two cursors can share one state).
    pub(crate) fn cursor_from(
        &self,
        sv: &SuperVersion,
        snapshot: u64,
        lower: Bound<Vec<u8>>,
        upper: Bound<Vec<u8>>,
    ) -> Result<LsmCursor> {
        let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
        children.push(Box::new(sv.mem.table.iter()));
        for imm in sv.imms.iter().rev() {
            children.push(Box::new(imm.table.iter()));
        }
        sv.version.add_iterators(&mut children)?;
        Ok(LsmCursor::new(
            MergingIter::new(children),
            snapshot,
            lower,
            upper,
        ))
    }

    pub(crate) fn sst_options(&self) -> SstOptions {
        SstOptions {
            compression: self.options.compression,
            bloom_bits_per_key: self.options.bloom_bits_per_key,
            block_size: self.options.block_size,
        }
    }

    /// Target size of L1; each deeper level is 10 times the one above.
    fn level_target_bytes(&self, level: usize) -> u64 {
        let base = (self.options.write_buffer_size as u64 * 4).max(1 << 20);
        base.saturating_mul(10u64.saturating_pow(level.saturating_sub(1) as u32))
    }

    /// Size at which compaction output files are cut.
    pub(crate) fn target_file_bytes(&self) -> u64 {
        (self.options.write_buffer_size as u64).max(1 << 20)
    }

    /// The compaction this table needs most, if any (the policy: L0 by run
    /// count, deeper levels by size against their target).
    pub(crate) fn pick_compaction(&self, version: &Version) -> Option<CompactionPick> {
        let l0 = version.level(0).len();
        let mut best: Option<(f64, usize)> = None;
        if l0 >= L0_COMPACTION_TRIGGER {
            best = Some((l0 as f64 / L0_COMPACTION_TRIGGER as f64, 0));
        }
        for level in 1..LSM_LEVELS - 1 {
            let score = version.level_bytes(level) as f64 / self.level_target_bytes(level) as f64;
            if score >= 1.0 && best.is_none_or(|(s, _)| score > s) {
                best = Some((score, level));
            }
        }
        let (_, level) = best?;
        Some(plan_compaction(version, level, None))
    }
}

/// Which files a compaction merges, and where the output goes.
pub(crate) struct CompactionPick {
    pub level: usize,
    pub inputs: Vec<Arc<FileMeta>>,
    pub next_inputs: Vec<Arc<FileMeta>>,
}

impl CompactionPick {
    pub(crate) fn output_level(&self) -> usize {
        self.level + 1
    }

    /// A single file with nothing to merge below moves down without a rewrite.
    pub(crate) fn is_trivial_move(&self) -> bool {
        self.inputs.len() == 1 && self.next_inputs.is_empty()
    }
}

/// Plans a compaction of `level` into the next: for L0 every run; for a
/// deeper level the file with the most bytes (or, with `all`, every file);
/// plus the files of the next level they overlap.
pub(crate) fn plan_compaction(version: &Version, level: usize, all: Option<()>) -> CompactionPick {
    let inputs: Vec<Arc<FileMeta>> = if level == 0 || all.is_some() {
        version.level(level).to_vec()
    } else {
        version
            .level(level)
            .iter()
            .max_by_key(|f| f.record.size)
            .cloned()
            .into_iter()
            .collect()
    };
    let lo = inputs
        .iter()
        .map(|f| f.smallest_user_key())
        .min()
        .unwrap_or_default()
        .to_vec();
    let hi = inputs
        .iter()
        .map(|f| f.largest_user_key())
        .max()
        .unwrap_or_default()
        .to_vec();
    let next_inputs = if inputs.is_empty() {
        Vec::new()
    } else {
        version.overlapping(level + 1, &lo, &hi)
    };
    CompactionPick {
        level,
        inputs,
        next_inputs,
    }
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
    /// Entries at or below this seqno are visible to every reader.
    pub oldest_snapshot: u64,
    /// True when no deeper level may hold `user_key`, so a tombstone can go.
    pub is_bottom: &'a dyn Fn(&[u8]) -> bool,
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
            if last_seqno_for_key <= policy.oldest_snapshot {
                // A newer version of this key is visible to every reader.
                drop = true;
            } else if parsed.kind == Kind::Delete
                && parsed.seqno <= policy.oldest_snapshot
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
        oldest_snapshot: 0,
        is_bottom: &never,
        drop_shadowed: false,
    };
    write_merged(&mut iter, options, u64::MAX, &keep_all, new_file)
}

/// The manifest record of a finished SST.
pub(crate) fn file_record(number: u64, info: &SstInfo) -> FileRecord {
    FileRecord {
        number,
        size: info.file_size,
        entries: info.entries,
        smallest: info.smallest.clone(),
        largest: info.largest.clone(),
        seqno_min: info.seqno_min,
        seqno_max: info.seqno_max,
    }
}
