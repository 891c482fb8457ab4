//! Versions: the set of SSTs of one LSM table at one moment.
//!
//! A `Version` is immutable; flushes and compactions build a new one and swap
//! it in. Readers hold an `Arc<Version>` (through a `SuperVersion`), so the
//! files they read stay on disk until the last reader lets go: the file
//! cleaner deletes only SSTs that no live version references.
//!
//! Invariants: L0 holds runs that may overlap, newest (highest seqnos) first;
//! every deeper level holds files sorted by key whose ranges do not overlap,
//! and all versions of one user key sit in one file of a level.

use std::cmp::Ordering;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering as AtomicOrdering};
use std::sync::{Arc, OnceLock};

use super::level_iter::LevelIter;
use super::sst::Sst;
use crate::cache::Cache;
use crate::error::{Error, Result};
use crate::fs::Fs;
use crate::limits::LSM_LEVELS;
use crate::manifest::FileRecord;
use crate::mvcc::iter::InternalIterator;
use crate::mvcc::key::{self, compare, Kind, ParsedKey};
use crate::mvcc::range_del::{Fragments, RangeTombstone};
use crate::read_context::ReadContext;

/// One SST of a table, as the version knows it.
pub(crate) struct FileMeta {
    pub record: FileRecord,
    pub path: PathBuf,
    fs: Arc<dyn Fs>,
    cache: Arc<Cache>,
    /// How its blocks are read.
    reads: SstReads,
    sst: OnceLock<Arc<Sst>>,
    /// Set while a compaction has this file among its inputs (changed only
    /// under the database's `bg` lock).
    pub being_compacted: AtomicBool,
    /// Reads that looked into this file and went on to another
    /// (`charge_read`); not kept across opens.
    reads_charged: AtomicU64,
}

/// How SST files' blocks are read from storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SstReads {
    /// `pread` through the OS's page cache (`Fs::open`).
    Pread,
    /// Copied from a read-only memory map (`Options::mmap_reads`).
    Mapped,
    /// Around the OS's page cache (`Options::direct_reads`).
    Direct,
}

impl SstReads {
    /// What the database's options ask for (they refuse both at once).
    pub(crate) fn of(options: &crate::options::Options) -> SstReads {
        if options.direct_reads {
            SstReads::Direct
        } else if options.mmap_reads {
            SstReads::Mapped
        } else {
            SstReads::Pread
        }
    }
}

/// Where a table's SST files are: the file system and directory, the
/// cache their blocks go to, and how they are read.
pub(crate) struct SstFiles<'a> {
    pub fs: &'a Arc<dyn Fs>,
    pub dir: &'a std::path::Path,
    pub cache: &'a Arc<Cache>,
    pub reads: SstReads,
    /// New SSTs are written around the OS's page cache
    /// (`Options::direct_writes`).
    pub direct_writes: bool,
}

impl SstFiles<'_> {
    /// Creates the file of SST `number`, to be written whole and synced.
    pub(crate) fn create(&self, number: u64) -> Result<Box<dyn crate::fs::WritableFile>> {
        let path = self.dir.join(crate::file_names::sst_name(number));
        if self.direct_writes {
            self.fs.create_direct(&path)
        } else {
            self.fs.create(&path)
        }
    }

    /// The file of `record`, not opened yet.
    pub(crate) fn meta(&self, record: FileRecord) -> FileMeta {
        let path = self.dir.join(crate::file_names::sst_name(record.number));
        FileMeta::new(
            record,
            path,
            Arc::clone(self.fs),
            Arc::clone(self.cache),
            self.reads,
        )
    }
}

/// A read that had to look into a file besides the one that answered it
/// costs about as much as compacting this many bytes (LevelDB's estimate:
/// one 10 ms disk seek against 40 KB of compaction I/O, halved to be
/// conservative). `compaction::pick` compacts a file down once the reads
/// it cost outweigh the bytes that compaction would read.
pub(crate) const READ_COST_BYTES: u64 = 16 << 10;

impl FileMeta {
    pub(crate) fn new(
        record: FileRecord,
        path: PathBuf,
        fs: Arc<dyn Fs>,
        cache: Arc<Cache>,
        reads: SstReads,
    ) -> FileMeta {
        FileMeta {
            record,
            path,
            fs,
            cache,
            reads,
            sst: OnceLock::new(),
            being_compacted: AtomicBool::new(false),
            reads_charged: AtomicU64::new(0),
        }
    }

    /// Counts a read that looked into this file and went on to another (a
    /// get that did not find its key here, a seek that positioned here
    /// beside other runs): the cost of the file staying where it is.
    pub(crate) fn charge_read(&self) {
        self.reads_charged.fetch_add(1, AtomicOrdering::Relaxed);
    }

    /// The reads charged so far.
    pub(crate) fn reads_charged(&self) -> u64 {
        self.reads_charged.load(AtomicOrdering::Relaxed)
    }

    /// The open SST, opened on first use and kept open while the file is live.
    pub(crate) fn sst(&self) -> Result<Arc<Sst>> {
        if let Some(s) = self.sst.get() {
            return Ok(Arc::clone(s));
        }
        let file = match self.reads {
            SstReads::Pread => self.fs.open(&self.path)?,
            SstReads::Mapped => self.fs.open_mapped(&self.path)?,
            SstReads::Direct => self.fs.open_direct(&self.path)?,
        };
        if file.len() != self.record.size {
            return Err(Error::corruption(
                &self.path,
                0,
                format!(
                    "file is {} bytes but the manifest records {}",
                    file.len(),
                    self.record.size
                ),
            ));
        }
        let sst = Sst::open(file, self.record.number, Arc::clone(&self.cache))?;
        Ok(Arc::clone(self.sst.get_or_init(|| sst)))
    }

    pub(crate) fn smallest_user_key(&self) -> &[u8] {
        key::user_key(&self.record.smallest)
    }

    pub(crate) fn largest_user_key(&self) -> &[u8] {
        key::user_key(&self.record.largest)
    }

    pub(crate) fn is_being_compacted(&self) -> bool {
        self.being_compacted.load(AtomicOrdering::Acquire)
    }

    /// True when the file's user-key range intersects `[lo, hi]`.
    pub(crate) fn overlaps(&self, lo: &[u8], hi: &[u8]) -> bool {
        self.largest_user_key() >= lo && self.smallest_user_key() <= hi
    }
}

#[derive(Clone, Default)]
pub(crate) struct Version {
    /// `levels[0]` is L0, newest run first; the others are sorted by key.
    pub levels: Vec<Vec<Arc<FileMeta>>>,
    /// The flushed range tombstones (`mvcc::range_del`).
    pub range_dels: Arc<RangeDels>,
}

/// A version's range tombstones: oldest first, and cut into fragments.
#[derive(Debug, Default)]
pub(crate) struct RangeDels {
    pub list: Vec<RangeTombstone>,
    pub fragments: Arc<Fragments>,
}

impl RangeDels {
    fn of(mut list: Vec<RangeTombstone>) -> RangeDels {
        list.sort_by_key(|t| t.seqno);
        list.dedup_by_key(|t| t.seqno);
        let fragments = Arc::new(Fragments::build(&list, u64::MAX));
        RangeDels { list, fragments }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

impl Version {
    pub(crate) fn empty() -> Version {
        Version {
            levels: vec![Vec::new(); LSM_LEVELS],
            range_dels: Arc::default(),
        }
    }

    /// Adds the tombstones `added` and takes away those of the seqnos in
    /// `dropped`, of both (a tombstone added twice or dropped when absent
    /// changes nothing: jobs decide on the version they started from).
    pub(crate) fn change_range_dels(&mut self, added: &[RangeTombstone], dropped: &[u64]) {
        if added.is_empty()
            && !self
                .range_dels
                .list
                .iter()
                .any(|t| dropped.contains(&t.seqno))
        {
            return;
        }
        let list = self
            .range_dels
            .list
            .iter()
            .chain(added)
            .filter(|t| !dropped.contains(&t.seqno))
            .cloned()
            .collect();
        self.range_dels = Arc::new(RangeDels::of(list));
    }

    /// The seqnos of the tombstones, the version's and `added`, that hide
    /// nothing any more: no file whose keys reach into the range holds a
    /// version older than the tombstone that it did not drop already
    /// (`range_dels_applied`). Versions in memtables are all newer than a
    /// flushed tombstone.
    pub(crate) fn obsolete_range_dels(&self, added: &[RangeTombstone]) -> Vec<u64> {
        self.range_dels
            .list
            .iter()
            .chain(added)
            .filter(|t| {
                self.files().all(|f| {
                    f.record.seqno_min > t.seqno
                        || f.record.range_dels_applied >= t.seqno
                        || !t.overlaps(f.smallest_user_key(), f.largest_user_key())
                })
            })
            .map(|t| t.seqno)
            .collect()
    }

    /// The largest seqno of each iterator `add_iterators` makes, in its
    /// order.
    pub(crate) fn run_newest(&self) -> Vec<u64> {
        let mut out: Vec<u64> = self.level(0).iter().map(|f| f.record.seqno_max).collect();
        for level in self.levels.iter().skip(1) {
            if !level.is_empty() {
                out.push(level.iter().map(|f| f.record.seqno_max).max().unwrap_or(0));
            }
        }
        out
    }

    pub(crate) fn level(&self, n: usize) -> &[Arc<FileMeta>] {
        self.levels.get(n).map_or(&[], |l| l.as_slice())
    }

    pub(crate) fn level_bytes(&self, n: usize) -> u64 {
        self.level(n).iter().map(|f| f.record.size).sum()
    }

    pub(crate) fn files(&self) -> impl Iterator<Item = &Arc<FileMeta>> {
        self.levels.iter().flatten()
    }

    /// The newest entry for `user_key` visible at `snapshot`: None if the
    /// files hold none, `Some(true)` for a put (its value appended to
    /// `value`), `Some(false)` for a delete or an entry older than `floor`
    /// (a range tombstone's seqno). The work done (files searched, bloom
    /// checks, blocks) is added to `counts`.
    pub(crate) fn get_into(
        &self,
        user_key: &[u8],
        snapshot: u64,
        floor: u64,
        counts: &mut ReadContext,
        value: &mut Vec<u8>,
    ) -> Result<Option<bool>> {
        let seek = key::internal_key(user_key, snapshot, key::KIND_SEEK);
        // The first file whose blocks the get read is charged if the get
        // reads another's (it did not hold the key: LevelDB's seek
        // compaction).
        let mut first_read: Option<&FileMeta> = None;
        let mut charged = false;
        for file in self.candidates(user_key, &seek) {
            let negatives = counts.bloom_negatives;
            let found = lookup_in_file(file, &seek, user_key, floor, counts, value)?;
            // A file its filter ruled out cost no block read.
            let read = counts.bloom_negatives == negatives;
            if read {
                match first_read {
                    None => first_read = Some(file),
                    Some(first) if !charged => {
                        first.charge_read();
                        charged = true;
                    }
                    Some(_) => {}
                }
            }
            if found.is_some() {
                return Ok(found);
            }
        }
        Ok(None)
    }

    /// The files that may hold an entry for `user_key` at or after `seek`
    /// (its internal key), newest first: the L0 runs that overlap it, then
    /// in each deeper level the one file whose range may hold it.
    fn candidates<'a>(
        &'a self,
        user_key: &'a [u8],
        seek: &'a [u8],
    ) -> impl Iterator<Item = &'a Arc<FileMeta>> + 'a {
        let l0 = self
            .level(0)
            .iter()
            .filter(move |f| f.overlaps(user_key, user_key));
        let deeper = self.levels.iter().skip(1).filter_map(move |level| {
            let index =
                level.partition_point(|f| compare(&f.record.largest, seek) == Ordering::Less);
            level
                .get(index)
                .filter(|file| file.smallest_user_key() <= user_key)
        });
        l0.chain(deeper)
    }

    /// The seqno of the newest entry for `user_key` in the version's files
    /// (a put or a delete), if any: a transaction's commit asks whether a
    /// key was written after its snapshot.
    pub(crate) fn newest_seqno(
        &self,
        user_key: &[u8],
        counts: &mut ReadContext,
    ) -> Result<Option<u64>> {
        let seek = key::internal_key(user_key, key::SEQNO_MAX, key::KIND_SEEK);
        for file in self.candidates(user_key, &seek) {
            let sst = file.sst()?;
            counts.trees_searched += 1;
            let found = sst.find_counted(&seek, user_key, counts, |ikey, _| {
                ParsedKey::parse(ikey).map(|k| k.seqno)
            })?;
            match found {
                Some(Some(seqno)) => return Ok(Some(seqno)),
                Some(None) => {
                    return Err(Error::corruption(
                        &file.path,
                        0,
                        "entry with a malformed internal key",
                    ))
                }
                None => {}
            }
        }
        Ok(None)
    }

    /// One iterator per L0 run and per deeper level, appended to `out`.
    /// With `charge_reads`, a seek charges the file it positions in when the
    /// version holds more than one run and the file is not in the last
    /// level (the cost of the runs above the last, paid by every seek).
    pub(crate) fn add_iterators(
        self: &Arc<Self>,
        out: &mut Vec<Box<dyn InternalIterator>>,
        charge_reads: bool,
    ) -> Result<()> {
        let runs =
            self.level(0).len() + self.levels.iter().skip(1).filter(|l| !l.is_empty()).count();
        let charge = charge_reads && runs > 1;
        for file in self.level(0) {
            if charge {
                out.push(Box::new(LevelIter::charging(vec![Arc::clone(file)])));
            } else {
                out.push(Box::new(file.sst()?.iter()));
            }
        }
        for (n, level) in self.levels.iter().enumerate().skip(1) {
            if !level.is_empty() {
                let charge = charge && n < LSM_LEVELS - 1;
                out.push(Box::new(LevelIter::of_level(Arc::clone(self), n, charge)));
            }
        }
        Ok(())
    }

    /// Files of level `n` whose user-key range intersects `[lo, hi]`.
    pub(crate) fn overlapping(&self, n: usize, lo: &[u8], hi: &[u8]) -> Vec<Arc<FileMeta>> {
        if n == 0 {
            return self
                .level(0)
                .iter()
                .filter(|f| f.overlaps(lo, hi))
                .cloned()
                .collect();
        }
        // Deeper levels are sorted and disjoint: binary search the first.
        let level = self.level(n);
        let start = level.partition_point(|f| f.largest_user_key() < lo);
        level
            .get(start..)
            .unwrap_or(&[])
            .iter()
            .take_while(|f| f.smallest_user_key() <= hi)
            .cloned()
            .collect()
    }

    /// True when some file of level `n` (n >= 1) holds keys around `user_key`.
    pub(crate) fn level_may_hold(&self, n: usize, user_key: &[u8]) -> bool {
        let level = self.level(n);
        let i = level.partition_point(|f| f.largest_user_key() < user_key);
        level
            .get(i)
            .is_some_and(|f| f.smallest_user_key() <= user_key)
    }

    /// Checks the level invariants; a violation means the manifest is wrong.
    pub(crate) fn check(&self) -> std::result::Result<(), String> {
        for (n, level) in self.levels.iter().enumerate().skip(1) {
            for pair in level.windows(2) {
                if let [a, b] = pair {
                    if a.largest_user_key() >= b.smallest_user_key() {
                        return Err(format!(
                            "level {n}: files {} and {} overlap or are out of order",
                            a.record.number, b.record.number
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

/// The newest entry for `user_key` at or after `seek` in `file`, as
/// `Version::get_into` answers.
fn lookup_in_file(
    file: &FileMeta,
    seek: &[u8],
    user_key: &[u8],
    floor: u64,
    counts: &mut ReadContext,
    value: &mut Vec<u8>,
) -> Result<Option<bool>> {
    let sst = file.sst()?;
    counts.trees_searched += 1;
    let found = sst.find_counted(seek, user_key, counts, |ikey, v| {
        let kind = ParsedKey::parse(ikey).map(|k| match k.kind {
            Kind::Put if k.seqno < floor => Kind::Delete,
            kind => kind,
        });
        if kind == Some(Kind::Put) {
            value.extend_from_slice(v);
        }
        kind
    })?;
    match found {
        None => Ok(None),
        Some(Some(kind)) => Ok(Some(kind == Kind::Put)),
        Some(None) => Err(Error::corruption(
            &file.path,
            0,
            "entry with a malformed internal key",
        )),
    }
}
