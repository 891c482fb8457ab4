//! B-tree tables: a B+tree of slotted pages in one file per table, cached in
//! the database's one cache, made durable by the shared log plus
//! copy-on-write checkpoints.
//!
//! **Versions.** Leaves hold internal keys (user key + seqno + kind), as the
//! LSM tables do, so snapshots and cursors read a B-tree table exactly as
//! they read an LSM table (`mvcc::cursor` over `BtreeIter`). A write adds a
//! version; versions no reader can see are pruned whenever a leaf is copied
//! or fills up (`prune`): a version stays while it is the newest at or below
//! some live snapshot or the visible seqno, or is the newest not yet
//! visible (`mvcc::Horizon`, the rule LSM compaction drops versions by).
//! Leaves a commit group split to hold both versions of its keys
//! are pruned and packed again once it is published (`tidy`).
//!
//! **Concurrency.** One writer at a time (the commit leader, recovery, or a
//! checkpoint's freeze) holds `tree`; readers never take it. Readers read
//! the top of the tree from their thread's copies, checked against the
//! root's seqlock (`RootCell`) and the copied frames' versions, and descend
//! below it with latch coupling: a page's read latch is taken before its
//! parent's is released (`read.rs`). The writer changes a page only
//! under its write latch, and takes latches top-down, so readers and the
//! writer cannot deadlock; a split or merge holds the write latches of the
//! whole path while it moves cells, so readers see a page before or after,
//! never between.
//!
//! **Copy-on-write.** A page the last checkpoint wrote is never written
//! over. The first change to such a page after a checkpoint's freeze copies
//! it to a newly allocated page (and so its parent, up to the root); pages
//! allocated since the freeze (`fresh`) are changed in place and may be
//! written any number of times, by a write-back for the cache's budget
//! (`store::write_handed_back`) or by the checkpoint.
//!
//! **Checkpoint** (`checkpoint`): freeze (under the commit lock, so no batch
//! is half applied: record the root, the seqno, the fresh pages and the free
//! space, and start a new epoch), write the frozen dirty pages, write the
//! free map, sync, sync the log up to the seqno, write the header slot
//! (alternating, checksummed), sync. Pages the frozen image no longer uses
//! are reused once that header is durable. Recovery reads the newest valid
//! header and replays the log from its seqno.
//!
//! **Rooms.** Under the tree, the page store (`store/`): the file's pages
//! on disk and in the cache (`fetch`, `install_page`), runs of pages, free
//! space across checkpoint epochs and when freed pages are reused
//! (`reclaim`), the header slots and a checkpoint's writes. It knows pages,
//! not cells. The table (`BtreeTable`, below) is one struct whose methods
//! live beside the part of the design they carry out:
//! - `format.rs`: every byte layout (header slot, page framing, page
//!   header, free map, page constants, cell sizes), pure, with golden-byte
//!   tests; the store and the tree both read it;
//! - `page.rs`: the slotted page image, read and built in place;
//! - `read.rs`: the descent, point reads, the tree's shape;
//! - `write.rs`: the writer and `apply`, with the copy-on-write path;
//! - `reshape.rs`: split, merge, `tidy` and pruning (`versions_kept`);
//! - `checkpoint.rs`: checkpoints (the freeze, then the store's writes),
//!   creating a file, opening it at its newest header;
//! - `vacuum.rs`: moving pages from the end of the file, to give space back;
//! - `iter.rs`: the iterator, and the reads that walk leaves with it (a
//!   key whose versions run into the next leaf, a transaction's range
//!   check); `verify.rs`: checks and dumps of a file.

mod checkpoint;
pub(crate) mod format;
mod get;
pub(crate) mod iter;
pub(crate) mod page;
#[cfg(test)]
mod page_reuse;
mod read;
mod reshape;
pub(crate) mod store;
mod vacuum;
pub(crate) mod verify;
mod write;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use parking_lot::{Mutex, MutexGuard};

pub(crate) use self::checkpoint::CheckpointCounters;
pub(crate) use self::format::Checkpoint;
pub use self::read::BtreeShape;
pub(crate) use self::read::Target;
use self::store::{PageSet, PageStore, Space};
pub(crate) use self::write::TreeWriter;
use crate::error::{Error, Result};
use crate::fs::Fs;
use crate::options::TableOptions;

/// The name of the file of B-tree table `table_id`.
pub(crate) fn file_name(table_id: u32) -> String {
    crate::file_names::btree_name(table_id)
}

/// The tree's root: its page and the tree's height. Readers find the
/// root's frame through the frame table, as every other page's.
#[derive(Clone, Copy)]
struct Root {
    pgno: u64,
    height: u32,
}

impl Root {
    /// The root's page and the tree's height.
    fn place(&self) -> (u64, u32) {
        (self.pgno, self.height)
    }

    fn new(pgno: u64, height: u32) -> Root {
        Root { pgno, height }
    }
}

/// Where the root is, read by descents without taking a lock: a lock word
/// every descent of every thread wrote (a reader-writer lock's count) kept
/// two cores passing its cache line back and forth.
///
/// A writer that may change the root (a split, a merge, a copy of the root
/// page) holds `lock` for the whole change (`write`), and `seq` is odd
/// meanwhile. A descent reads `seq` and the place, reads the root (from
/// its thread's copy, or latched), latches a page below or the root
/// itself, and reads `seq` again (`read.rs`, `descend`): if it moved, the
/// descent lets the page go and starts over. So a descent either latched
/// its page before the change began (the writer then waits for that
/// latch, as it waits for every latch on its path) or after it ended,
/// never in between. `seq` never takes a value twice, so an unchanged
/// `seq` means no change.
struct RootCell {
    lock: Mutex<()>,
    seq: AtomicU64,
    pgno: AtomicU64,
    height: AtomicU32,
}

/// A writer's hold on the root (see `RootCell`): the place is published,
/// and `seq` made even again, when it is dropped.
struct RootGuard<'a> {
    cell: &'a RootCell,
    root: Root,
    _lock: MutexGuard<'a, ()>,
}

impl RootCell {
    fn new(root: Root) -> RootCell {
        RootCell {
            lock: Mutex::new(()),
            seq: AtomicU64::new(0),
            pgno: AtomicU64::new(root.pgno),
            height: AtomicU32::new(root.height),
        }
    }

    /// `seq` as a descent starts, once no change is under way (waiting for
    /// one to end on the writer's lock), and the place it names.
    fn begin_read(&self) -> (u64, Root) {
        loop {
            let seq = self.seq.load(Ordering::Acquire);
            if seq % 2 == 1 {
                drop(self.lock.lock());
                continue;
            }
            let root = Root::new(
                self.pgno.load(Ordering::Acquire),
                self.height.load(Ordering::Acquire),
            );
            return (seq, root);
        }
    }

    /// Whether no change began since `begin_read` returned `seq`. The
    /// caller latched the root's page since (an acquiring read-modify-write,
    /// so this load is not made before it).
    fn unchanged(&self, seq: u64) -> bool {
        self.seq.load(Ordering::Acquire) == seq
    }

    /// A consistent place, for the callers that do not descend.
    fn read(&self) -> Root {
        loop {
            let (seq, root) = self.begin_read();
            if self.unchanged(seq) {
                return root;
            }
        }
    }

    /// Holds off every other change and every new descent until dropped.
    fn write(&self) -> RootGuard<'_> {
        let lock = self.lock.lock();
        self.seq.fetch_add(1, Ordering::AcqRel);
        RootGuard {
            cell: self,
            root: Root::new(
                self.pgno.load(Ordering::Relaxed),
                self.height.load(Ordering::Relaxed),
            ),
            _lock: lock,
        }
    }
}

impl std::ops::Deref for RootGuard<'_> {
    type Target = Root;
    fn deref(&self) -> &Root {
        &self.root
    }
}

impl std::ops::DerefMut for RootGuard<'_> {
    fn deref_mut(&mut self) -> &mut Root {
        &mut self.root
    }
}

impl Drop for RootGuard<'_> {
    fn drop(&mut self) {
        self.cell.pgno.store(self.root.pgno, Ordering::Release);
        self.cell.height.store(self.root.height, Ordering::Release);
        self.cell.seq.fetch_add(1, Ordering::Release);
    }
}

/// What only the writer touches: the file's free space (`Space`), and the
/// leaves a commit group left to tidy.
#[derive(Debug, Default)]
pub(crate) struct TreeState {
    pub(crate) space: Space,
    /// Leaves split by the commit group being applied while they held
    /// versions that its publication makes invisible (see `tidy`), and a
    /// key in each.
    pub(crate) untidy: PageSet,
    pub(crate) untidy_keys: Vec<Vec<u8>>,
    /// Set while a range delete is applied: each leaf a delete goes into
    /// is marked untidy too, so that once the group is published `tidy`
    /// prunes the deleted keys away and packs the leaves.
    pub(crate) deleting_range: bool,
    /// A range delete marked leaves since the last `tidy`: that `tidy`
    /// packs every run, however little pruning drops (`UNTIDY_SHARE` is
    /// for splits), so that seeks do not step over the deleted keys.
    pub(crate) range_deleted: bool,
    /// A buffer the writer rebuilds pages from (`reshape`), kept between
    /// uses.
    pub(crate) scratch: Vec<u8>,
}

impl TreeState {
    /// Whether no leaf waits for `BtreeTable::tidy`.
    pub(crate) fn is_tidy(&self) -> bool {
        self.untidy_keys.is_empty()
    }
}

pub(crate) struct BtreeTable {
    pub id: u32,
    pub name: String,
    pub options: TableOptions,
    pub dropped: AtomicBool,
    pub path: PathBuf,
    /// The file's pages, in the file and in the cache, and its free space.
    pub store: PageStore,
    root: RootCell,
    tree: Mutex<TreeState>,
    /// Held for a whole checkpoint; guards `durable`.
    ckpt: Mutex<Checkpoint>,
    /// The seqno of the durable checkpoint: the log before it is not needed.
    pub persisted_seqno: AtomicU64,
    /// The generation of the durable checkpoint.
    pub durable_generation: AtomicU64,
    /// Log bytes written when the last checkpoint froze.
    pub wal_bytes_at_checkpoint: AtomicU64,
    /// Entries applied since the last freeze (whether a checkpoint has work).
    pub changes: AtomicU64,
    /// A background checkpoint of this table is claimed (under `bg`).
    pub checkpointing: AtomicBool,
    /// A background vacuum of this table is claimed (under `bg`).
    pub vacuuming: AtomicBool,
    /// The database's log bytes (`Counters::wal_bytes`) when this table's
    /// last background vacuum ended (`u64::MAX` before the first): the idle
    /// vacuum runs again only once the database has been written since.
    pub vacuumed_at_wal: AtomicU64,
    pub counters: CheckpointCounters,
}

impl std::fmt::Debug for BtreeTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BtreeTable")
            .field("id", &self.id)
            .field("name", &self.name)
            .finish()
    }
}

/// A table dropped with pages still held (its last checkpoint failed, or it
/// is dropped while one runs) gives back the cache's pinned share they
/// took.
impl Drop for BtreeTable {
    fn drop(&mut self) {
        let held = self.tree.get_mut().space.held.len() as u64;
        self.store.cache.unpin(held * self.store.charge());
    }
}

impl BtreeTable {
    /// Makes what a new table needs on disk before the manifest names it:
    /// its file (`create_file`) and its directory entry, synced (a crash
    /// before the manifest names it leaves an orphan that open removes).
    /// After a failure nothing names the file, which goes now (or at the
    /// next open).
    pub(crate) fn create_synced(
        fs: &dyn Fs,
        dir: &Path,
        id: u32,
        options: &TableOptions,
        seqno: u64,
    ) -> Result<()> {
        BtreeTable::create_file(fs, dir, id, options, seqno)
            .and_then(|()| fs.sync_dir(dir))
            .inspect_err(|_| {
                let _ = fs.remove(&dir.join(file_name(id)));
            })
    }

    /// Whether a page write failed (in an eviction); the table takes no
    /// more writes then.
    pub(crate) fn check_failed(&self) -> Result<()> {
        match &*self.store.file.failed.lock() {
            Some(reason) => Err(Error::ReadOnly {
                reason: reason.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Makes durable what recovery replayed into the table, which then
    /// holds everything up to `last_seqno` in its file: a checkpoint. The
    /// log being replayed is durable already; the manifest started after
    /// recovery records the generation.
    pub(crate) fn persist_recovered(&self, last_seqno: u64) -> Result<()> {
        self.checkpoint(|| ((), last_seqno, 0), |_| Ok(()), |_| Ok(()))
            .map(|_| ())
    }

    /// The oldest seqno of the log the table still needs: the one after its
    /// durable checkpoint's. `visible` is the visible seqno, read before:
    /// every entry up to it is in the tree, whose pages the table learns
    /// hold everything up to it (`mark_clean_upto`).
    pub(crate) fn log_needed_from(&self, visible: u64) -> u64 {
        self.mark_clean_upto(visible);
        self.persisted_seqno.load(Ordering::Acquire) + 1
    }

    /// The generation of the durable checkpoint, which the manifest records.
    pub(crate) fn checkpoint_generation(&self) -> u64 {
        self.durable_generation.load(Ordering::Acquire)
    }
}

/// A table of its own for unit tests: a file in `dir`, a cache of 64 MiB,
/// nothing written yet, the log empty to `seqno`.
#[cfg(test)]
pub(crate) fn scratch_table(dir: &std::path::Path, page_size: usize, seqno: u64) -> BtreeTable {
    let fs = crate::fs::OsFs::new();
    BtreeTable::create_file(&fs, dir, 1, &scratch_options(page_size), seqno).expect("create");
    reopen_scratch_table(dir, page_size, 64 << 20)
}

#[cfg(test)]
fn scratch_options(page_size: usize) -> TableOptions {
    TableOptions {
        page_size,
        ..TableOptions::btree()
    }
}

/// The table of `scratch_table` opened again at its durable image, with a
/// cache of its own of `cache_bytes`.
#[cfg(test)]
pub(crate) fn reopen_scratch_table(
    dir: &std::path::Path,
    page_size: usize,
    cache_bytes: u64,
) -> BtreeTable {
    let fs = crate::fs::OsFs::new();
    let cache = std::sync::Arc::new(crate::cache::Cache::new(cache_bytes));
    let options = scratch_options(page_size);
    BtreeTable::open(
        &fs,
        dir,
        1,
        "t".into(),
        options,
        cache,
        1,
        1,
        0,
        false,
        crate::fs::DirectIo::default(),
        false,
    )
    .expect("open")
}
